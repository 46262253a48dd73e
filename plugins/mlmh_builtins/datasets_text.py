"""The ``text`` dataset: a corpus of your own, in the formats researchers already have.

``--data`` names one of:

- a ``.jsonl`` file (``.jsonl.gz`` too): one JSON object per line;
- a ``.csv`` or ``.tsv`` file (``.gz`` too) with a header row;
- a ``.parquet`` file (needs ``pip install 'mlmh[text]'``: pyarrow);
- a Hugging Face ``datasets`` directory written by ``save_to_disk``, a ``Dataset`` or a ``DatasetDict``
  (needs ``mlmh[text]``: datasets); the saved splits are merged and split again by the rule below;
- a directory of ``.txt`` files, one document each; the subfolder a file sits in is its group (files at
  the top are groups of their own), and no row fields apply.

Each row's ``text_field`` is the document; ``group_field`` (optional) names who or what it belongs to (an
author, a patient, a source), ``label_field`` (optional) its label or list of labels, which the
``text-classification`` task predicts, and ``id_field`` (optional) its id, kept as given in every result
(without it a row is ``row-N``); ids must be unique and non-empty. Split rule: a seeded ``test_fraction`` of whole groups is the test
split (:func:`mlmh.data.splits.hold_out`), so no group sits in train and test, and validation is carved out of
train by whole groups too; without a group field each document is its own group.

Bad input stops the load with one DataError naming the file, the row and the field: a missing field, an
empty text, a field whose values change type from row to row, a file that is not what its extension says,
an extension this dataset does not read. Nothing is half-loaded.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any, Callable, Iterator

from mlmh import hookimpl
from mlmh.components import Dataset
from mlmh.data.splits import hold_out
from mlmh.errors import DataError
from mlmh.params import Param
from mlmh.storage.jsonl import read_jsonl
from mlmh.types import Corpus, Document
from mlmh_builtins.dataset_support import (checked_columns, data_root, read_text, short_documents_note,
                                          split_params, text_lines)

EXPECTED = "a .jsonl, .csv, .tsv or .parquet file, a folder of .txt files, or a folder saved by datasets' save_to_disk"
#: what ``pip install`` adds the readers of parquet files and save_to_disk folders
EXTRA = "pip install 'mlmh[text]'"
#: files that mark a folder written by ``datasets.Dataset.save_to_disk`` / ``DatasetDict.save_to_disk``
SAVED_DATASET_MARKERS = ("state.json", "dataset_dict.json")

#: (where a row is, for messages; the row's fields)
Row = tuple[str, dict[str, Any]]


class TextDataset(Dataset):
    name = "text"
    description = ("your own corpus (--data): .jsonl, .csv/.tsv, .parquet, a folder of .txt files or a save_to_disk "
                   "folder; split by group_field, labels for text-classification from label_field")
    parameters = (
        Param("text_field", str, "text", "the field holding each document's text", headline=True),
        Param("group_field", str, "", "the field naming each document's group (author, patient, source), kept in one "
              "split; empty: each document is a group (in a folder of .txt files, the subfolder is the group)", headline=True),
        Param("label_field", str, "", "the field holding each document's label or list of labels, for text-classification"),
        Param("id_field", str, "", "the field holding each document's id, kept in results.json, generations.jsonl and "
              "the DataFrames; unique and non-empty; empty: row-N"),
        *split_params(0.2),
    )

    def load(self, path: str | None) -> Corpus:
        if path is None:
            raise DataError(f"the text dataset reads your own corpus: pass --data PATH ({EXPECTED})")
        root, source = data_root(path, "text", EXPECTED)
        notes: list[str] = []
        if root.is_dir() and not any((root / marker).is_file() for marker in SAVED_DATASET_MARKERS):
            documents = self._text_folder(root, notes)
            grouped_by = "the subfolder of each .txt file"
        else:
            documents = self._documents(root, _rows(root, self._fields(), notes))
            grouped_by = f"field '{self.params['group_field']}'"
        documents = self._split(documents, notes, grouped_by)
        where = root.name or str(root)
        short = short_documents_note(documents, where)
        if short:
            notes.append(short)
        return Corpus(dataset=self.name, documents=documents, source=source, notes=notes)

    # -- rows of a file ----------------------------------------------------------------------------
    def _fields(self) -> dict[str, str]:
        """role -> field name, for the roles in use ("text", and "group"/"label"/"id" when given)."""
        named = {"text": self.params["text_field"], "group": self.params["group_field"], "label": self.params["label_field"],
                 "id": self.params["id_field"]}
        return {role: field for role, field in named.items() if field}

    def _documents(self, path: Path, rows: Iterator[tuple[str, Row]]) -> list[Document]:
        """Documents of ``rows`` (id, (where, fields)); every field checked as it is read."""
        fields = self._fields()
        kinds: dict[str, tuple[str, str]] = {}  # field -> (type seen first, where)
        id_seen: dict[str, str] = {}  # the user's id -> where it first was
        documents = []
        for doc_id, (where, row) in rows:
            values = {}
            for role, field in fields.items():
                if field not in row:
                    present = ", ".join(map(str, row)) or "none"
                    raise DataError(f"{where}: no field '{field}' (the {role}_field; fields here: {present})")
                value = row[field]
                _same_type(field, value, where, kinds)
                values[role] = _checked(role, field, value, where)
            if "id" in values:
                doc_id = values["id"]
                first = id_seen.setdefault(doc_id, where)
                if first != where:
                    raise DataError(f"{where}: id '{doc_id}' (field '{fields['id']}') is also the id at {first}; "
                                    "every document needs its own")
            meta = {k: row[k] for k in ("original_split",) if k in row}
            group = values.get("group")
            documents.append(Document(id=doc_id, text=values["text"], labels=values.get("label", []), group=group,
                                      meta=meta))
        if not documents:
            raise DataError(f"{path}: no documents (the file holds no rows)")
        return documents

    def _text_folder(self, root: Path, notes: list[str]) -> list[Document]:
        """One document per ``.txt`` file under ``root``; its subfolder (relative to ``root``) is its group."""
        for param in ("label_field", "id_field"):
            if self.params[param]:
                raise DataError(f"{root}: a folder of .txt files has no fields, so {param} '{self.params[param]}' "
                                "cannot be read (each file's id is its path); use a .jsonl, .csv or .parquet file")
        files = sorted(p for p in root.rglob("*") if p.is_file() and not _hidden(p.relative_to(root)))
        texts = [p for p in files if p.suffix.lower() == ".txt"]
        if not texts:
            raise DataError(f"{root}: no .txt files in this folder (expected {EXPECTED})")
        if len(texts) < len(files):
            others = [p for p in files if p not in set(texts)]
            notes.append(f"{len(others)} file(s) that are not .txt left out (first: {others[0].relative_to(root)})")
        documents = []
        for path in texts:
            relative = path.relative_to(root)
            text = read_text(path)
            if not text.strip():
                raise DataError(f"{path}: the file is empty (every document needs a text)")
            group = relative.parent.as_posix() if relative.parent != Path(".") else None
            documents.append(Document(id=relative.with_suffix("").as_posix(), text=text, group=group,
                                      meta={"file": relative.as_posix()}))
        grouped = sum(d.group is not None for d in documents)
        if grouped and grouped < len(documents):
            notes.append(f"{len(documents) - grouped} .txt file(s) at the top of {root.name} are groups of their own")
        return documents

    # -- the split ---------------------------------------------------------------------------------
    def _split(self, documents: list[Document], notes: list[str], grouped_by: str) -> list[Document]:
        seed, fraction = self.params["seed"], self.params["test_fraction"]
        held = hold_out(documents, fraction, seed, "text-groups")
        for document in documents:
            document.split = "test" if document.id in held else "train"
        groups = {d.group for d in documents if d.group is not None}
        test_groups = {d.group for d in documents if d.group is not None and d.id in held}
        if groups:
            notes.append(f"split: by group ({grouped_by}): {len(test_groups)} of {len(groups)} groups, {len(held)} of "
                         f"{len(documents)} documents held out as test; no group is in two splits")
            if len(groups) < 2:
                notes.append("warning: one group only, so nothing can be held out by group: quality is measured on "
                             "seen documents only")
        else:
            notes.append(f"split: by document (no group_field): a seeded {len(held)} of {len(documents)} documents "
                         "held out as test")
        return documents


def _rows(path: Path, fields: dict[str, str], notes: list[str]) -> Iterator[tuple[str, Row]]:
    """(document id, (where, fields)) for each row of the file or saved dataset at ``path``."""
    if path.is_dir():
        return _saved_dataset_rows(path, list(fields.values()), notes)
    reader = _reader_of(path)
    return reader(path, list(fields.values()))


def _reader_of(path: Path) -> Callable[[Path, list[str]], Iterator[tuple[str, Row]]]:
    name = path.name.lower().removesuffix(".gz")
    for suffix, reader in READERS.items():
        if name.endswith(suffix) and not (suffix == ".parquet" and path.name.lower().endswith(".gz")):
            return reader
    raise DataError(f"{path}: unknown extension (the text dataset reads {EXPECTED})")


def _jsonl_rows(path: Path, fields: list[str]) -> Iterator[tuple[str, Row]]:
    for number, row in read_jsonl(path):
        yield f"row-{number}", (f"{path}:{number}", row)


def _csv_rows(path: Path, fields: list[str]) -> Iterator[tuple[str, Row]]:
    delimiter = "\t" if path.name.lower().removesuffix(".gz").endswith(".tsv") else ","
    # strict: a quote never closed is an error at the row it opens, not the rest of the file read as one field
    reader = csv.DictReader(text_lines(path), delimiter=delimiter, strict=True)
    started = 1
    try:
        checked_columns(reader, path, tuple(fields))
        started = reader.line_num + 1
        for number, row in enumerate(reader, start=1):
            where = f"{path}:{reader.line_num} (row {number})"
            if None in row:
                raise DataError(f"{where}: more fields than the header has columns")
            started = reader.line_num + 1
            yield f"row-{number}", (where, {k: ("" if v is None else v) for k, v in row.items()})
    except csv.Error as exc:
        kind = "TSV" if delimiter == chr(9) else "CSV"
        if "unexpected end of data" in str(exc):
            raise DataError(f"{path}:{started}: a quoted field opened in this row is never closed (not valid {kind})") \
                from None
        raise DataError(f"{path}:{max(started, reader.line_num)}: not valid {kind} ({exc})") from None


def _parquet_rows(path: Path, fields: list[str]) -> Iterator[tuple[str, Row]]:
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise DataError(f"{path}: reading parquet needs pyarrow: {EXTRA}") from None
    try:
        schema = parquet.read_schema(path)
    except Exception as exc:  # pyarrow's ArrowInvalid and OSError for files that are not parquet
        raise DataError(f"{path}: not a parquet file ({_first_line(exc)})") from None
    missing = [f for f in fields if f not in schema.names]
    if missing:
        raise DataError(f"{path}: no column {', '.join(repr(f) for f in missing)} (columns: {', '.join(schema.names)})")
    try:
        table = parquet.read_table(path, columns=fields)
    except Exception as exc:
        raise DataError(f"{path}: the parquet data cannot be read ({_first_line(exc)})") from None
    for number, row in enumerate(table.to_pylist(), start=1):
        yield f"row-{number}", (f"{path}: row {number}", row)


def _saved_dataset_rows(path: Path, fields: list[str], notes: list[str]) -> Iterator[tuple[str, Row]]:
    """Rows of a ``save_to_disk`` folder; a DatasetDict's splits in their saved order, ids prefixed by split."""
    try:
        from datasets import ClassLabel, Dataset as HFDataset, load_from_disk
    except ImportError:
        raise DataError(f"{path}: reading a save_to_disk folder needs the datasets library: {EXTRA}") from None
    try:
        saved = load_from_disk(str(path))
    except Exception as exc:
        raise DataError(f"{path}: not a dataset saved with save_to_disk ({_first_line(exc)})") from None
    parts = [("", saved)] if isinstance(saved, HFDataset) else list(saved.items())
    if len(parts) > 1:
        notes.append(f"saved splits {', '.join(name for name, _ in parts)} merged, then split by the rule of this "
                     "dataset (each document's saved split is in its meta)")
    for split, part in parts:
        where_split = f" (split {split})" if split else ""
        missing = [f for f in fields if f not in part.column_names]
        if missing:
            raise DataError(f"{path}{where_split}: no column {', '.join(repr(f) for f in missing)} "
                            f"(columns: {', '.join(part.column_names)})")
        names = {f: part.features[f] for f in fields if isinstance(part.features[f], ClassLabel)}
        for number, row in enumerate(part.select_columns(fields), start=1):
            row = {f: (names[f].int2str(v) if f in names and isinstance(v, int) and v >= 0 else v) for f, v in row.items()}
            if split:
                row["original_split"] = split
            yield (f"{split}-{number}" if split else f"row-{number}"), (f"{path}{where_split}: row {number}", row)


READERS: dict[str, Callable[[Path, list[str]], Iterator[tuple[str, Row]]]] = {
    ".jsonl": _jsonl_rows,
    ".csv": _csv_rows,
    ".tsv": _csv_rows,
    ".parquet": _parquet_rows,
}


def _checked(role: str, field: str, value: Any, where: str) -> Any:
    """A field's value as a Document holds it: text a non-empty str, group a str, labels a list of str."""
    if value is None or (isinstance(value, str) and not value.strip()):
        raise DataError(f"{where}: field '{field}' is empty (every row needs its {role})")
    if role == "text":
        if not isinstance(value, str):
            raise DataError(f"{where}: field '{field}' is {_kind(value)}, expected the text as a string")
        return value
    if role in ("group", "id"):
        if not _scalar(value):
            raise DataError(f"{where}: field '{field}' is {_kind(value)}, expected a string or a number naming the {role}")
        return str(value).strip()
    items = value if isinstance(value, list) else [value]
    if not all(_scalar(item) for item in items):
        raise DataError(f"{where}: field '{field}' is {_kind(value)}, expected a label or a list of labels")
    labels: list[str] = []
    for item in items:
        label = str(item).strip()
        if label and label not in labels:
            labels.append(label)
    return labels


def _same_type(field: str, value: Any, where: str, kinds: dict[str, tuple[str, str]]) -> None:
    """A DataError when ``field`` holds another type here than in the first row that had it."""
    if value is None:
        return
    kind = _kind(value)
    first = kinds.setdefault(field, (kind, where))
    if first[0] != kind:
        raise DataError(f"{where}: field '{field}' is {kind} here but {first[0]} at {first[1]}; a field holds one type")


def _kind(value: Any) -> str:
    if isinstance(value, list):
        inner = sorted({_kind(v) for v in value})
        return f"a list of {' and '.join(inner)}" if inner else "an empty list"
    return {str: "a string", bool: "a boolean", int: "a number", float: "a number", dict: "an object"}.get(
        type(value), type(value).__name__)


def _scalar(value: Any) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@hookimpl
def register_datasets(register):
    register(TextDataset())
