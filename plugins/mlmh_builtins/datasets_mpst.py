"""The ``mpst`` dataset: MPST movie plot synopses with multi-label tags (Kar et al., LREC 2018).

File: ``mpst_full_data.csv`` with columns imdb_id, title, plot_synopsis, tags (comma-separated, tags may
contain spaces such as "good versus evil"), split, synopsis_source. Each row becomes one Document (id =
imdb_id, labels = tags). An ``entities.jsonl`` next to the CSV (a project extension, not part of MPST)
adds character/place spans for the ``ner`` masking; the bundled sample ships one.

Split rule: the file's ``split`` column when present (MPST's own train/val/test; its "val" rows are the
validation split that selects checkpoints, never trained on; the original value stays in ``meta``). Without
the column, a seeded ``test_fraction`` of the films is the test split (:func:`mlmh.data.splits.hold_out`, each
film its own group) and validation is carved from train by the same rule.
"""

from __future__ import annotations

import csv
from pathlib import Path

from mlmh import hookimpl
from mlmh.components import Dataset
from mlmh.data.splits import hold_out
from mlmh.errors import DataError
from mlmh.types import Corpus, Document
from mlmh_builtins.dataset_support import (
    ENTITIES_FILE,
    attach_entity_file,
    checked_columns,
    data_root,
    require_file,
    short_documents_note,
    split_params,
    text_lines,
)

MPST_FILE = "mpst_full_data.csv"
REQUIRED_COLUMNS = ("imdb_id", "plot_synopsis", "tags")
SPLIT_VALUES = {"train": "train", "val": "validation", "validation": "validation", "dev": "validation", "test": "test"}


def parse_tags(raw: str) -> list[str]:
    """MPST's comma-separated tags, stripped, de-duplicated in order; spaces inside a tag are kept."""
    seen: list[str] = []
    for tag in raw.split(","):
        tag = " ".join(tag.split())
        if tag and tag not in seen:
            seen.append(tag)
    return seen


class MpstDataset(Dataset):
    name = "mpst"
    tasks = ("text-classification",)  # the paper's downstream task on this dataset
    description = "MPST movie plot synopses with multi-label tags (mpst_full_data.csv); bundled sample of 180 project-written plots"
    parameters = (
        *split_params(0.2, " (only when the file has no split column)"),
    )

    def load(self, path: str | None) -> Corpus:
        target, source = data_root(path, "mpst", f"{MPST_FILE} or a directory holding it")
        csv_path = target / MPST_FILE if target.is_dir() else target
        require_file(csv_path, f"MPST file ({MPST_FILE})")
        documents, notes = self._read(csv_path)
        attach_entity_file(csv_path.with_name(ENTITIES_FILE), documents, notes)
        short = short_documents_note(documents, csv_path.name)
        if short:
            notes.append(short)
        return Corpus(dataset="mpst", documents=documents, source=source, notes=notes)

    def _read(self, csv_path: Path) -> tuple[list[Document], list[str]]:
        documents: list[Document] = []
        notes: list[str] = []
        first_row: dict[str, int] = {}
        empty_rows: list[int] = []
        untagged = 0
        reader = csv.DictReader(text_lines(csv_path))
        columns = checked_columns(reader, csv_path, REQUIRED_COLUMNS)
        has_split = "split" in columns
        for row_number, row in enumerate(reader, start=2):
            where = f"{csv_path}:{reader.line_num} (row {row_number})"
            if None in row:
                raise DataError(f"{where}: more fields than the header has columns")
            imdb_id = (row.get("imdb_id") or "").strip()
            text = row.get("plot_synopsis") or ""
            if not imdb_id:
                raise DataError(f"{where}: empty imdb_id")
            if imdb_id in first_row:
                raise DataError(f"{where}: duplicate imdb_id {imdb_id!r} (first in row {first_row[imdb_id]})")
            first_row[imdb_id] = row_number
            if not text.strip():
                empty_rows.append(row_number)
                continue
            split = "train"
            original = None
            if has_split:
                original = (row.get("split") or "").strip().lower()
                if original not in SPLIT_VALUES:
                    raise DataError(f"{where}: split {row.get('split')!r} is not one of train, val, test")
                split = SPLIT_VALUES[original]
            tags = parse_tags(row.get("tags") or "")
            untagged += not tags
            meta = {"title": (row.get("title") or "").strip(), "synopsis_source": (row.get("synopsis_source") or "").strip(), "original_split": original}
            documents.append(Document(id=imdb_id, text=text, split=split, labels=tags, meta=meta))
        if not documents:
            raise DataError(f"{csv_path}: no synopses")
        if empty_rows:
            notes.append(f"{csv_path.name}: {len(empty_rows)} row(s) with an empty plot_synopsis dropped (first: row {empty_rows[0]})")
        if untagged:
            notes.append(f"{csv_path.name}: {untagged} synopsis(es) have no tags")
        distinct = {tag for doc in documents for tag in doc.labels}
        if len(distinct) < 2:
            raise DataError(f"{csv_path}: only {len(distinct)} distinct tag(s) ({', '.join(distinct) or 'none'}); classification needs at least two")
        if has_split:
            notes.append("split: the file's split column (its val rows are the validation split)")
        else:
            test = hold_out(documents, self.params["test_fraction"], self.params["seed"], "mpst-films")
            for doc in documents:
                doc.split = "test" if doc.id in test else "train"
            notes.append(f"split: no split column, seeded {self.params['test_fraction']:.0%} of films held out")
        return documents, notes


@hookimpl
def register_datasets(register):
    register(MpstDataset())
