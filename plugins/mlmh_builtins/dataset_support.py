"""What the dataset loaders share: where the data lives (bundled samples or a user path), UTF-8 text read
with the file and line of any bad byte, line-numbered JSONL reading, the project's ``entities.jsonl``
extension, seeded split helpers and the note on very short documents.

Not a plugin module itself (it registers nothing); the loaders import it.
"""

from __future__ import annotations

import codecs
import csv
import gzip
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import numpy as np

from mlmh import bounds
from mlmh.errors import DataError
from mlmh.params import Param
from mlmh.storage.inputs import check_input_file
from mlmh.storage.jsonl import numbered_lines, read_jsonl
from mlmh.types import Document, EntitySpan

if TYPE_CHECKING:
    from mlmh.doctor import CheckResult

#: What ``Corpus.source`` says when no path was given, so the runner can print one honest line.
BUNDLED_SOURCE = "bundled sample (synthetic, written by the project)"

#: The project's extension file holding entity spans for formats that have none (PAN, MPST).
ENTITIES_FILE = "entities.jsonl"


def bundled_dir(dataset: str) -> Path:
    """Directory of the bundled sample of ``dataset`` (package data of ``mlmh_builtins``)."""
    root = resources.files("mlmh_builtins").joinpath("data", dataset)
    path = Path(str(root))
    if not path.is_dir():
        raise DataError(f"bundled sample of '{dataset}' is missing at {path}; reinstall mlmh (package data not installed)")
    return path


def data_root(path: str | Path | None, dataset: str, expected: str) -> tuple[Path, str]:
    """(where to read, ``Corpus.source``) for a loader's ``path``: the bundled sample when None.

    An empty path or one that does not exist is a DataError naming it and what was ``expected``.
    """
    if path is None:
        return bundled_dir(dataset), BUNDLED_SOURCE
    if not str(path).strip():
        raise DataError(f"empty path given for the {dataset.upper()} data (expected {expected})")
    root = Path(path).expanduser()
    if not root.exists():
        raise DataError(f"{root}: {dataset.upper()} data not found (expected {expected})")
    return root, str(path)


def require_file(path: Path, what: str) -> Path:
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected the {what}")
    if path.exists():
        check_input_file(path, what)  # a device or a FIFO is named as one (mlmh.storage.inputs), never read
    if not path.is_file():
        raise DataError(f"{path}: {what} not found")
    return path


def text_lines(path: Path) -> Iterator[str]:
    """The lines of a UTF-8 file (``.gz`` too), line endings kept, as ``csv`` wants them (``newline=""``).

    A leading byte-order mark is dropped (spreadsheets write one); invalid UTF-8 is a DataError naming
    the file, the line and the byte offset, rather than a bare UnicodeDecodeError.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    offset = 0
    with opener(path, "rb") as handle:
        for number, raw in numbered_lines(path, handle):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _decode_error(path, number, offset + exc.start, exc) from None
            if number == 1:
                line = line.removeprefix("\ufeff")
            offset += len(raw)
            yield line


def read_text(path: Path) -> str:
    """A whole UTF-8 file exactly as written (no newline translation, so character offsets into it hold)."""
    raw = path.read_bytes()
    try:
        return raw.removeprefix(codecs.BOM_UTF8).decode("utf-8")
    except UnicodeDecodeError as exc:
        start = exc.start + (len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0)
        raise _decode_error(path, raw.count(b"\n", 0, start) + 1, start, exc) from None


def _decode_error(path: Path, line: int, offset: int, exc: UnicodeDecodeError) -> DataError:
    bad = exc.object[exc.start:exc.end].hex(" ")
    return DataError(f"{path}:{line}: not valid UTF-8 (byte {offset}: {bad}); re-save the file as UTF-8")


def check_span(text: str, start: Any, end: Any, where: str) -> tuple[int, int]:
    """A (start, end) pair of ints inside ``text``; anything else is a DataError at ``where``."""
    if not isinstance(start, int) or not isinstance(end, int) or isinstance(start, bool) or isinstance(end, bool):
        raise DataError(f"{where}: span offsets must be integers, got {start!r} {end!r}")
    if not 0 <= start < end <= len(text):
        raise DataError(f"{where}: entity span {start}-{end} is outside the text (length {len(text)})")
    return start, end


def attach_entity_file(path: Path, documents: list[Document], notes: list[str]) -> None:
    """Read the ``entities.jsonl`` extension next to a dataset, if present, into ``documents``.

    Each line is ``{"doc": id, "spans": [[start, end, label], ...]}`` over the document's text. Lines
    naming documents that the loader did not keep (e.g. dropped rows) are counted in ``notes``.
    """
    if not path.is_file():
        return
    by_id = {d.id: d for d in documents}
    unknown = 0
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        doc_id, spans = row.get("doc"), row.get("spans")
        if not isinstance(doc_id, str) or not isinstance(spans, list):
            raise DataError(f"{where}: expected {{\"doc\": id, \"spans\": [[start, end, label], ...]}}")
        document = by_id.get(doc_id)
        if document is None:
            unknown += 1
            continue
        entities = []
        for span in spans:
            if not isinstance(span, list) or len(span) != 3 or not isinstance(span[2], str):
                raise DataError(f"{where}: span {span!r} is not [start, end, label]")
            start, end = check_span(document.text, span[0], span[1], f"{where} (document {doc_id})")
            entities.append(EntitySpan(start, end, span[2], document.text[start:end], ((start, end),)))
        document.entities = sorted(entities, key=lambda e: (e.start, e.end, e.label))
    if unknown:
        notes.append(f"{path.name}: {unknown} entity line(s) name documents that were not loaded")


def seeded_permutation(keys: list[str], seed: int, salt: str) -> list[str]:
    """``keys`` in a seeded order that depends only on the sorted keys, the seed and ``salt``."""
    from mlmh.machine.seeding import sample_seed

    ordered = sorted(keys)
    rng = np.random.default_rng(sample_seed(seed, salt, "split"))
    return [ordered[i] for i in rng.permutation(len(ordered))]


def seeded_test_set(keys: list[str], seed: int, fraction: float, salt: str) -> set[str]:
    """The keys in the test split: a seeded ``fraction`` of them (at least one, never all)."""
    if len(keys) < 2:
        return set()
    count = min(len(keys) - 1, max(1, round(fraction * len(keys))))
    return set(seeded_permutation(keys, seed, salt)[:count])


def split_params(test_fraction: float, when: str = "") -> tuple[Param, Param]:
    """The ``seed`` and ``test_fraction`` parameters every loader's seeded split takes."""
    return (
        Param("seed", int, 0, "seed of the train/test split (the split depends on nothing else)" + when, min=0, max=bounds.SEED),
        Param("test_fraction", float, test_fraction, "share of the data held out as the test split" + when, min=0.05, max=0.95),
    )


#: Documents with fewer words than this are noted: a masking that rounds ``ratio × words`` masks nothing
#: in them at the usual ratio 0.15 (round(0.15 × 3) = 0), so their generations equal the original.
SHORT_DOCUMENT_WORDS = 4


def short_documents_note(documents: list[Document], where: str) -> str | None:
    """A ``Corpus.notes`` line counting documents under :data:`SHORT_DOCUMENT_WORDS` words, or None."""
    from mlmh.words import is_punctuation, split_words

    short = [d.id for d in documents if sum(not is_punctuation(w) for w in split_words(d.text)) < SHORT_DOCUMENT_WORDS]
    if not short:
        return None
    return (f"{where}: {len(short)} document(s) have fewer than {SHORT_DOCUMENT_WORDS} words (first: {short[0]}); "
            f"a masking at ratio 0.15 masks nothing in them, so they add no signal to the scores")


def checked_columns(reader: csv.DictReader, path: Path, required: tuple[str, ...]) -> list[str]:
    """The header of a CSV (names stripped, set back on ``reader``); missing columns name file and line 1."""
    columns = [c.strip() for c in reader.fieldnames or []]
    repeated = sorted({c for c in columns if c and columns.count(c) > 1})
    if repeated:  # csv keeps the last column of a name silently: which one the user meant is unknowable
        raise DataError(f"{path}:1: column(s) {', '.join(repeated)} appear more than once in the header; "
                        "give each column its own name")
    missing = [c for c in required if c not in columns]
    if missing:
        raise DataError(f"{path}:1: missing column(s) {', '.join(missing)} (found: {', '.join(columns) or 'no header'})")
    reader.fieldnames = columns
    return columns


#: The files each bundled sample must ship (checked by ``mlmh doctor``).
BUNDLED_FILES = {
    "pan": ("pairs.jsonl", "truth.jsonl", ENTITIES_FILE),
    "mpst": ("mpst_full_data.csv", ENTITIES_FILE),
    "mimic": ("NOTEEVENTS.csv", "brat"),
}


def bundled_samples_check() -> "CheckResult":
    """Doctor check: every bundled sample ships its files (registered by :mod:`mlmh_builtins.datasets_pan`)."""
    from mlmh.doctor import CheckResult

    root = Path(str(resources.files("mlmh_builtins").joinpath("data")))
    missing = [f"{name}/{item}" for name, items in BUNDLED_FILES.items() for item in items if not (root / name / item).exists()]
    if missing:
        return CheckResult("bundled samples", False, "missing: " + ", ".join(missing), "reinstall mlmh: pip install -e . (package data mlmh_builtins/data)")
    return CheckResult("bundled samples", True, f"{', '.join(BUNDLED_FILES)} under {root}")
