"""The ``mimic`` dataset: MIMIC-III discharge summaries with n2c2-2018-style brat annotations.

Input: a directory (or the ``NOTEEVENTS.csv``/``NOTEEVENTS.csv.gz`` file itself) holding MIMIC-III's
``NOTEEVENTS.csv``, of which rows with CATEGORY "Discharge summary" are kept, and/or brat standoff pairs
``<ROW_ID>.txt`` + ``<ROW_ID>.ann`` anywhere below it (as the n2c2 2018 medication-extraction release
names them). Entity lines ``T1<TAB>Drug 10 15;20 25<TAB>text`` become EntitySpans (discontinuous
fragments kept); relation, attribute and note lines are counted and skipped. When a note has brat files
the ``.txt`` is its text (the offsets refer to it); a brat pair without a CSV row is a document too.
MIMIC data cannot be redistributed: the bundled sample is synthetic, every note says so in its first line.

Split rule: a note's group is its patient (SUBJECT_ID; a brat-only note is a group of its own), and a seeded
``test_fraction`` of the notes, in whole patients, is the test split (:func:`mlmh.data.splits.hold_out`), so one
patient's copy-forward notes never sit in train and test at once; validation is carved by patient too.
"""

from __future__ import annotations

import csv
import sys
from pathlib import Path

from mlmh import hookimpl
from mlmh.components import Dataset
from mlmh.data.splits import hold_out
from mlmh.errors import DataError
from mlmh.types import Corpus, Document, EntitySpan
from mlmh_builtins.dataset_support import (
    check_span,
    checked_columns,
    data_root,
    read_text,
    require_file,
    short_documents_note,
    split_params,
    text_lines,
)

NOTES_FILES = ("NOTEEVENTS.csv", "NOTEEVENTS.csv.gz")
REQUIRED_COLUMNS = ("ROW_ID", "CATEGORY", "TEXT")
DISCHARGE = "discharge summary"


def read_brat(ann_path: Path, text: str) -> tuple[list[EntitySpan], int]:
    """Entities of a brat ``.ann`` over ``text`` and the number of non-entity lines skipped."""
    entities: list[EntitySpan] = []
    skipped = 0
    for number, line in enumerate(text_lines(ann_path), start=1):
        line = line.rstrip("\n").rstrip("\r")
        if not line.strip():
            continue
        if not line.startswith("T"):
            skipped += 1  # relations (R), events (E), attributes (A/M), normalizations (N), notes (#)
            continue
        where = f"{ann_path}:{number}"
        parts = line.split("\t")
        if len(parts) < 2:
            raise DataError(f"{where}: expected 'T<id><TAB><label> <start> <end>[;<start> <end>]<TAB><text>'")
        label, _, offsets = parts[1].partition(" ")
        if not label.strip():
            raise DataError(f"{where}: entity {parts[0]!r} has no label before its offsets")
        fragments = []
        for piece in offsets.split(";"):
            bounds = piece.split()
            if len(bounds) != 2 or not all(b.isdigit() for b in bounds):
                raise DataError(f"{where}: bad offsets {offsets!r}")
            fragments.append(check_span(text, int(bounds[0]), int(bounds[1]), where))
        fragments.sort()
        covered = " ".join(text[s:e] for s, e in fragments)
        stated = parts[2] if len(parts) > 2 else None
        if stated is not None and " ".join(stated.split()) != " ".join(covered.split()):
            raise DataError(f"{where}: entity text {stated!r} does not match the text at its offsets ({covered!r})")
        entities.append(EntitySpan(fragments[0][0], fragments[-1][1], label, covered, tuple(fragments)))
    entities.sort(key=lambda e: (e.start, e.end, e.label))
    return entities, skipped


def read_noteevents(path: Path, notes: list[str]) -> dict[str, tuple[str, dict]]:
    """ROW_ID -> (text, meta) for the discharge summaries of a NOTEEVENTS file."""
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    kept: dict[str, tuple[str, dict]] = {}
    other = errors = empty = 0
    reader = csv.DictReader(text_lines(path))
    columns = checked_columns(reader, path, REQUIRED_COLUMNS)
    for row_number, row in enumerate(reader, start=2):
        if (row.get("CATEGORY") or "").strip().lower() != DISCHARGE:
            other += 1
            continue
        where = f"{path}:{reader.line_num} (row {row_number})"
        row_id = (row.get("ROW_ID") or "").strip()
        if not row_id:
            raise DataError(f"{where}: empty ROW_ID")
        if row_id in kept:
            raise DataError(f"{where}: duplicate ROW_ID {row_id}")
        if (row.get("ISERROR") or "").strip() == "1":
            errors += 1
            continue
        text = row.get("TEXT") or ""
        if not text.strip():
            empty += 1
            continue
        meta = {k.lower(): (row.get(k) or "").strip() for k in ("SUBJECT_ID", "HADM_ID", "CHARTDATE", "DESCRIPTION") if k in columns}
        kept[row_id] = (text, meta)
    notes.append(f"{path.name}: {len(kept)} discharge summaries kept; {other} note(s) of other categories skipped")
    if errors:
        notes.append(f"{path.name}: {errors} discharge summary row(s) marked ISERROR=1 dropped")
    if empty:
        notes.append(f"{path.name}: {empty} discharge summary row(s) with empty TEXT dropped")
    return kept


class MimicDataset(Dataset):
    name = "mimic"
    tasks = ("ner",)  # the paper's downstream task on this dataset
    description = "MIMIC-III discharge summaries (NOTEEVENTS.csv) + brat medication entities (n2c2 2018); bundled synthetic sample"
    parameters = (
        *split_params(0.3),
    )

    def load(self, path: str | None) -> Corpus:
        root, source = data_root(path, "mimic", "NOTEEVENTS.csv and/or brat .txt/.ann files")
        notes: list[str] = []
        csv_path = root if root.is_file() else next((root / n for n in NOTES_FILES if (root / n).is_file()), None)
        records = read_noteevents(csv_path, notes) if csv_path else {}
        brat_root = root.parent if root.is_file() else root
        ann_files = sorted(p for p in brat_root.rglob("*.ann") if p.is_file())
        if not records and not ann_files:
            if csv_path:
                raise DataError(f"{csv_path}: no usable discharge summaries (CATEGORY 'Discharge summary' with a TEXT) and no brat .ann files")
            raise DataError(f"{root}: no NOTEEVENTS.csv and no brat .ann files found")
        documents: dict[str, Document] = {}
        for row_id, (text, meta) in records.items():
            documents[row_id] = Document(id=row_id, text=text, meta=meta, group=meta.get("subject_id") or None)
        skipped = brat_only = 0
        for ann_path in ann_files:
            txt_path = ann_path.with_suffix(".txt")
            if not txt_path.exists():
                raise DataError(f"{ann_path}: brat annotation without its text file {txt_path.name}")
            text = read_text(require_file(txt_path, "brat text file"))
            entities, lines_skipped = read_brat(ann_path, text)
            skipped += lines_skipped
            doc_id = ann_path.stem
            if doc_id not in documents:
                brat_only += 1
                documents[doc_id] = Document(id=doc_id, text=text, meta={})
            document = documents[doc_id]
            document.text = text
            document.entities = entities
            document.meta["annotations"] = ann_path.name
        if ann_files:
            notes.append(f"brat: {len(ann_files)} annotated note(s), {sum(len(d.entities) for d in documents.values())} entities; {skipped} relation/attribute line(s) not used")
        if brat_only:
            where = f"without a row in {csv_path.name}" if csv_path else "(no NOTEEVENTS.csv)"
            notes.append(f"brat: {brat_only} note(s) read from their brat text files {where}")
        ordered = [documents[k] for k in sorted(documents, key=lambda k: (len(k), k))]
        test = hold_out(ordered, self.params["test_fraction"], self.params["seed"], "mimic-notes")
        for doc in ordered:
            doc.split = "test" if doc.id in test else "train"
        patients = len({d.group for d in ordered if d.group})
        by = f"whole patients ({patients} with SUBJECT_ID)" if patients else "notes (no SUBJECT_ID column)"
        notes.append(f"split: seeded {self.params['test_fraction']:.0%} of notes held out, by {by}")
        short = short_documents_note(ordered, "notes")
        if short:
            notes.append(short)
        return Corpus(dataset="mimic", documents=ordered, source=source, notes=notes)


@hookimpl
def register_datasets(register):
    register(MimicDataset())
