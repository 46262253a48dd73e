"""Reading JSON Lines: the files a run writes (``samples.jsonl``, ``generations.jsonl``) and the datasets'
(PAN's pairs and truth, ``entities.jsonl``, a ``text`` corpus), by one rule, so a damaged file is one
DataError line naming the file, the line and what is wrong (bytes that are not UTF-8, text that is not
JSON, a line that is not an object), never a Python error."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path
from typing import Any, Iterable, Iterator

from mlmh.errors import DataError
from mlmh.storage.inputs import check_input_file


def read_jsonl(path: str | Path, *, finite: bool = False) -> Iterator[tuple[int, dict[str, Any]]]:
    """``(line number, object)`` of each non-blank line of ``path`` (``.gz`` too; a leading byte-order mark,
    which spreadsheets write, is dropped); ``finite``: a NaN or infinite number is an error naming its key (a run's
    own files, which mlmh writes strict)."""
    path = Path(path)
    for number, line in text_lines(path):
        if line.strip():
            yield number, parse_object(path, number, line, finite=finite)


def text_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of every line of ``path``, blank ones too, without its line ending (``.gz`` too;
    a leading byte-order mark is dropped); bytes that are not UTF-8 are one DataError naming the line."""
    path = check_input_file(path)
    try:
        handle = gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb")
    except OSError as exc:
        raise DataError(f"{path}: cannot read: {exc.strerror or exc}") from None
    with handle:
        for number, raw in numbered_lines(path, handle):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise DataError(f"{path}:{number}: not valid UTF-8 (byte 0x{raw[exc.start]:02x} at column "
                                f"{exc.start + 1})") from None
            if number == 1:
                line = line.removeprefix("\ufeff")
            yield number, line.removesuffix("\n").rstrip("\r")


def parse_object(path: Path, number: int, line: str, *, finite: bool = False) -> dict[str, Any]:
    """Line ``number`` of ``path`` as the JSON object it must hold (nested at most :data:`mlmh.storage.schema.MAX_DEPTH`
    levels; every number finite where ``finite``); a DataError naming the line when it is not."""
    from mlmh.storage.schema import parse_json

    try:
        row = parse_json(line, finite=finite)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path}:{number}: invalid JSON: {exc.msg} at column {exc.colno}") from None
    except ValueError as exc:  # NaN, an overflowing number, nesting too deep (mlmh.storage.schema)
        raise DataError(f"{path}:{number}: {exc}") from None
    if not isinstance(row, dict):
        raise DataError(f"{path}:{number}: expected a JSON object, got {type(row).__name__}")
    return row


def numbered_lines(path: Path, handle: Iterable[bytes]) -> Iterator[tuple[int, bytes]]:
    """``(line number, raw line)`` of an open file; a damaged or fake ``.gz`` stops with one DataError naming the
    file and the line the data stops being readable at, never a Python error (the one rule of every reader)."""
    lines, number = iter(handle), 0
    while True:
        try:
            raw = next(lines)
        except StopIteration:
            return
        except (EOFError, OSError, zlib.error) as exc:  # gzip.BadGzipFile is an OSError
            raise _compressed_error(path, number + 1, exc) from None
        number += 1
        yield number, raw


def _compressed_error(path: Path, line: int, exc: BaseException) -> DataError:
    if isinstance(exc, EOFError):
        why = "the compressed data ends early (a truncated .gz file)"
    elif isinstance(exc, (gzip.BadGzipFile, zlib.error)):
        why = "not gzip-compressed data, or damaged (gunzip cannot read it)"
    else:
        why = f"cannot be read ({getattr(exc, 'strerror', None) or exc})"
    return DataError(f"{path}:{line}: {why}")
