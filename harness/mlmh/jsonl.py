"""Reading JSON Lines: the files a run writes (``samples.jsonl``, ``generations.jsonl``) and the datasets'
(PAN's pairs and truth, ``entities.jsonl``, a ``text`` corpus), by one rule, so a damaged file is one
DataError line naming the file, the line and what is wrong (bytes that are not UTF-8, text that is not
JSON, a line that is not an object), never a Python error."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any, Iterator

from mlmh.errors import DataError


def read_jsonl(path: str | Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line of ``path`` (``.gz`` too; a leading byte-order mark,
    which spreadsheets write, is dropped)."""
    path = Path(path)
    try:
        handle = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{number}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                f"{exc.start + 1})") from None
            if number == 1:
                line = line.removeprefix("\ufeff")
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}:{number}: invalid JSON: {exc.msg} at column {exc.colno}") from None
            if not isinstance(row, dict):
                raise DataError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
            yield number, row
