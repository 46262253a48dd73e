"""Dataset loaders on small files in the official formats, their errors, and the bundled samples."""

from __future__ import annotations

import csv
import gzip
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mlmh.errors import DataError
from mlmh.registry import get_registry
from mlmh_builtins.dataset_support import BUNDLED_SOURCE
from mlmh_builtins.datasets_mimic import MimicDataset
from mlmh_builtins.datasets_mpst import MpstDataset, parse_tags
from mlmh_builtins.datasets_pan import PanDataset

ROOT = Path(__file__).resolve().parent.parent


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def pan_rows(n_authors: int = 6, pairs_per_kind: int = 6, linked: bool = False) -> tuple[list[dict], list[dict]]:
    """Pairs with newlines and unicode; different-author pairs stay inside author couples unless ``linked``."""
    pairs, truth = [], []
    authors = [f"au{i}" for i in range(n_authors)]
    for k in range(pairs_per_kind * n_authors // 2):
        a = authors[(k // 2 if linked else k) % n_authors]
        partner = authors[(k // 2 + 1) % n_authors] if linked else authors[k % n_authors ^ 1]
        same = k % 2 == 0
        b = a if same else partner
        pid = f"p{k:03d}"
        pairs.append({"id": pid, "fandoms": ["Fandom Ä", "Fandom B"], "pair": [f"Zoë said “hi” to {a}.\nThen she left — quickly {k}.", f"Søren wrote {b}…\n\nThe end {k}."]})
        truth.append({"id": pid, "same": same, "authors": [a, b]})
    return pairs, truth


def write_pan(directory: Path, pairs: list[dict], truth: list[dict], names: tuple[str, str] = ("pairs.jsonl", "truth.jsonl")) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_jsonl(directory / names[0], pairs)
    write_jsonl(directory / names[1], truth)
    return directory


# -- PAN ----------------------------------------------------------------------------------------


def test_pan_loads_official_format_with_newlines_and_unicode(tmp_path):
    pairs, truth = pan_rows()
    corpus = PanDataset().load(str(write_pan(tmp_path / "pan", pairs, truth)))
    assert corpus.dataset == "pan" and corpus.source == str(tmp_path / "pan")
    assert len(corpus.pairs) == len(pairs) and len(corpus.documents) == 2 * len(pairs)
    docs = corpus.by_id()
    first = next(p for p in corpus.pairs if p.id == "p000")
    assert docs[first.a].text == pairs[0]["pair"][0] and "\n" in docs[first.a].text and "Zoë" in docs[first.a].text
    assert docs[first.b].text == pairs[0]["pair"][1] and docs[first.b].meta["fandom"] == "Fandom B"
    assert first.same is True and docs[first.a].author == "au0"


def test_pan_open_protocol_keeps_every_author_on_one_side(tmp_path):
    pairs, truth = pan_rows(n_authors=8)
    corpus = PanDataset().load(str(write_pan(tmp_path, pairs, truth)))
    train_authors = {d.author for d in corpus.split("train")}
    test_authors = {d.author for d in corpus.split("test")}
    assert train_authors and test_authors and not train_authors & test_authors
    for pair in corpus.pairs:
        assert corpus.by_id()[pair.a].split == corpus.by_id()[pair.b].split == pair.split
    assert any("author groups" in note for note in corpus.notes)


def test_pan_open_protocol_excludes_and_counts_pairs_crossing_the_author_split(tmp_path):
    pairs, truth = pan_rows(n_authors=10, pairs_per_kind=8, linked=True)  # a chain: one author group
    corpus = PanDataset().load(str(write_pan(tmp_path, pairs, truth)))
    excluded = len(pairs) - len(corpus.pairs)
    assert excluded > 0
    assert any(f"{excluded} pair(s) cross the author split" in note for note in corpus.notes)
    assert not {d.author for d in corpus.split("train")} & {d.author for d in corpus.split("test")}


def test_pan_closed_protocol_is_stratified_and_deterministic(tmp_path):
    pairs, truth = pan_rows(n_authors=6, pairs_per_kind=10)
    path = str(write_pan(tmp_path, pairs, truth))
    dataset = PanDataset().configured(protocol="closed", test_fraction=0.3)
    corpus = dataset.load(path)
    test = [p for p in corpus.pairs if p.split == "test"]
    assert len(corpus.pairs) == len(pairs)
    assert sum(p.same for p in test) == sum(not p.same for p in test) == round(0.3 * len(pairs) / 2)
    assert [p.split for p in dataset.load(path).pairs] == [p.split for p in corpus.pairs]
    other = dataset.configured(seed=7).load(path)
    assert [p.split for p in other.pairs] != [p.split for p in corpus.pairs]


def test_pan_finds_pan_release_file_names_and_entity_extension(tmp_path):
    pairs, truth = pan_rows()
    write_pan(tmp_path, pairs, truth, ("pan20-authorship-verification-training-small.jsonl", "pan20-authorship-verification-training-small-truth.jsonl"))
    text = pairs[0]["pair"][0]
    write_jsonl(tmp_path / "entities.jsonl", [{"doc": "p000-1", "spans": [[0, 3, "PERSON"]]}, {"doc": "nope-1", "spans": []}])
    corpus = PanDataset().load(str(tmp_path))
    entity = corpus.by_id()["p000-1"].entities[0]
    assert (entity.label, entity.text, entity.fragments) == ("PERSON", text[:3], ((0, 3),))
    assert any("1 entity line(s)" in note for note in corpus.notes)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda p, t: t.__setitem__(2, {**t[2], "id": "ghost"}), r"truth\.jsonl:3: truth id 'ghost' matches no pair"),
        (lambda p, t: t.pop(), r"pairs\.jsonl:\d+: pair '\w+' has no truth"),
        (lambda p, t: [x.__setitem__("same", True) for x in t] and [x.__setitem__("authors", ["a", "a"]) for x in t], r"truth\.jsonl: every pair is same-author"),
        (lambda p, t: t[1].__setitem__("same", True), r"truth\.jsonl:2: 'same' is true but authors are"),
        (lambda p, t: p[0].__setitem__("pair", ["only one"]), r"pairs\.jsonl:1: 'pair' must be a list of two texts"),
        (lambda p, t: p[1].__setitem__("id", p[0]["id"]), r"pairs\.jsonl:2: duplicate pair id"),
        (lambda p, t: t[0].pop("authors"), r"truth\.jsonl:1: 'authors' must list the two authors .*protocol=closed"),
    ],
)
def test_pan_bad_input_names_file_and_line(tmp_path, mutate, message):
    pairs, truth = pan_rows()
    mutate(pairs, truth)
    with pytest.raises(DataError, match=message):
        PanDataset().load(str(write_pan(tmp_path, pairs, truth)))


def test_pan_bad_json_missing_files_and_entity_outside_text(tmp_path):
    with pytest.raises(DataError, match="PAN data not found"):
        PanDataset().load(str(tmp_path / "missing"))
    pairs, truth = pan_rows()
    write_pan(tmp_path, pairs, truth)
    (tmp_path / "truth.jsonl").unlink()
    with pytest.raises(DataError, match=r"truth\.jsonl: PAN truth file"):
        PanDataset().load(str(tmp_path))
    write_pan(tmp_path, pairs, truth)
    with (tmp_path / "pairs.jsonl").open("a", encoding="utf-8") as handle:
        handle.write("{not json\n")
    with pytest.raises(DataError, match=rf"pairs\.jsonl:{len(pairs) + 1}: invalid JSON"):
        PanDataset().load(str(tmp_path))
    write_pan(tmp_path, pairs, truth)
    write_jsonl(tmp_path / "entities.jsonl", [{"doc": "p000-1", "spans": [[0, 3, "PERSON"]]}, {"doc": "p001-2", "spans": [[5, 9999, "LOC"]]}])
    with pytest.raises(DataError, match=r"entities\.jsonl:2 \(document p001-2\): entity span 5-9999 is outside the text"):
        PanDataset().load(str(tmp_path))


def test_pan_empty_texts_are_dropped_and_counted(tmp_path):
    pairs, truth = pan_rows()
    pairs[3]["pair"][1] = "   "
    corpus = PanDataset().load(str(write_pan(tmp_path, pairs, truth)))
    assert "p003" not in {p.id for p in corpus.pairs}
    assert any("1 pair(s) with an empty text dropped (first: line 4)" in note for note in corpus.notes)


# -- MPST ---------------------------------------------------------------------------------------

MPST_HEADER = ["imdb_id", "title", "plot_synopsis", "tags", "split", "synopsis_source"]


def write_csv(path: Path, header: list[str], rows: list[list]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def mpst_rows() -> list[list]:
    return [
        ["tt0000001", "A", "A hero fights evil,\n\"again\".", "good versus evil, action ,  cult", "train", "imdb"],
        ["tt0000002", "B", "Two people fall in love.", "romantic", "val", "wikipedia"],
        ["tt0000003", "C", "A murder in Zürich.", "murder, good versus evil, murder", "test", "imdb"],
        ["tt0000004", "D", "   ", "murder", "train", "imdb"],
        ["tt0000005", "E", "Nothing happens.", "", "TRAIN", "imdb"],
    ]


def test_mpst_loads_tags_with_spaces_and_the_split_column(tmp_path):
    path = write_csv(tmp_path / "mpst_full_data.csv", MPST_HEADER, mpst_rows())
    corpus = MpstDataset().load(str(tmp_path))
    docs = corpus.by_id()
    assert docs["tt0000001"].labels == ["good versus evil", "action", "cult"]
    assert docs["tt0000001"].text == "A hero fights evil,\n\"again\"."
    assert docs["tt0000003"].labels == ["murder", "good versus evil"] and docs["tt0000003"].split == "test"
    assert docs["tt0000002"].split == "validation" and docs["tt0000002"].meta["original_split"] == "val"
    assert "tt0000004" not in docs and any("1 row(s) with an empty plot_synopsis dropped (first: row 5)" in n for n in corpus.notes)
    assert docs["tt0000005"].labels == [] and any("1 synopsis(es) have no tags" in n for n in corpus.notes)
    assert MpstDataset().load(str(path)).by_id().keys() == docs.keys()


def test_mpst_without_split_column_uses_a_seeded_split(tmp_path):
    rows = [[f"tt{i:07d}", f"plot number {i}", "murder, comedy" if i % 2 else "romantic"] for i in range(20)]
    write_csv(tmp_path / "mpst_full_data.csv", ["imdb_id", "plot_synopsis", "tags"], rows)
    corpus = MpstDataset().configured(test_fraction=0.25).load(str(tmp_path))
    assert len(corpus.split("test")) == 5
    again = MpstDataset().configured(test_fraction=0.25).load(str(tmp_path))
    assert [d.split for d in again.documents] == [d.split for d in corpus.documents]


def test_mpst_bad_input(tmp_path):
    with pytest.raises(DataError, match="MPST file"):
        MpstDataset().load(str(tmp_path))
    write_csv(tmp_path / "mpst_full_data.csv", ["imdb_id", "title", "synopsis", "tags"], [["tt1", "A", "x", "murder"]])
    with pytest.raises(DataError, match=r"mpst_full_data\.csv:1: missing column\(s\) plot_synopsis"):
        MpstDataset().load(str(tmp_path))
    rows = mpst_rows()
    rows[2][4] = "holdout"
    write_csv(tmp_path / "mpst_full_data.csv", MPST_HEADER, rows)
    with pytest.raises(DataError, match=r"mpst_full_data\.csv:\d+ \(row 4\): split 'holdout'"):
        MpstDataset().load(str(tmp_path))
    rows = mpst_rows()
    rows[1][0] = rows[0][0]
    write_csv(tmp_path / "mpst_full_data.csv", MPST_HEADER, rows)
    with pytest.raises(DataError, match=r"\(row 3\): duplicate imdb_id 'tt0000001' \(first in row 2\)"):
        MpstDataset().load(str(tmp_path))
    write_csv(tmp_path / "mpst_full_data.csv", MPST_HEADER, [["tt1", "A", "text", "murder", "train", "imdb"], ["tt2", "B", "more", "murder", "test", "imdb"]])
    with pytest.raises(DataError, match="only 1 distinct tag"):
        MpstDataset().load(str(tmp_path))


def test_parse_tags_keeps_inner_spaces():
    assert parse_tags(" good  versus evil,murder,, murder ") == ["good versus evil", "murder"]


# -- MIMIC --------------------------------------------------------------------------------------

NOTE_HEADER = ["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY", "DESCRIPTION", "CGID", "ISERROR", "TEXT"]
NOTE = "Pt given Vitamin D and B12.\nAspirin 81 mg PO daily for CAD.\n"


def note_row(row_id: int, text: str, category: str = "Discharge summary", error: str = "", subject: int | None = None) -> list:
    return [row_id, row_id if subject is None else subject, 2, "2150-01-01", "", "", category, "Report", "", error, text]


def write_brat(directory: Path, name: str, text: str, ann: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{name}.txt").write_text(text, encoding="utf-8")
    (directory / f"{name}.ann").write_text(ann, encoding="utf-8")


GOOD_ANN = "T1\tDrug 9 18\tVitamin D\nT2\tDrug 9 16;23 26\tVitamin B12\nT3\tDrug 28 35\tAspirin\nT4\tStrength 36 41\t81 mg\nR1\tStrength-Drug Arg1:T4 Arg2:T3\n#1\tAnnotatorNotes T1\tok\n"


def test_mimic_reads_noteevents_and_brat_with_discontinuous_spans(tmp_path):
    rows = [note_row(10, NOTE), note_row(11, "Chest x-ray: clear.", "Radiology"), note_row(12, "error note", error="1"), note_row(13, "Second summary, no annotations.")]
    write_csv(tmp_path / "NOTEEVENTS.csv", NOTE_HEADER, rows)
    write_brat(tmp_path / "ann", "10", NOTE, GOOD_ANN)
    corpus = MimicDataset().load(str(tmp_path))
    docs = corpus.by_id()
    assert set(docs) == {"10", "13"}
    b12 = docs["10"].entities[1]
    assert (b12.label, b12.start, b12.end, b12.fragments, b12.text) == ("Drug", 9, 26, ((9, 16), (23, 26)), "Vitamin B12")
    assert [e.label for e in docs["10"].entities] == ["Drug", "Drug", "Drug", "Strength"]
    assert docs["13"].entities == [] and docs["10"].meta["subject_id"] == "10" == docs["10"].group
    joined = " ".join(corpus.notes)
    assert "1 note(s) of other categories skipped" in joined and "1 discharge summary row(s) marked ISERROR=1 dropped" in joined
    assert "2 relation/attribute line(s) not used" in joined


def test_mimic_brat_only_and_gzipped_noteevents(tmp_path):
    write_brat(tmp_path / "brat", "100", NOTE, GOOD_ANN)
    corpus = MimicDataset().load(str(tmp_path / "brat"))
    assert [d.id for d in corpus.documents] == ["100"] and len(corpus.documents[0].entities) == 4
    gz = tmp_path / "gz" / "NOTEEVENTS.csv.gz"
    gz.parent.mkdir()
    with gzip.open(gz, "wt", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(NOTE_HEADER)
        writer.writerows([note_row(i, f"summary {i}") for i in range(1, 11)])
    corpus = MimicDataset().configured(test_fraction=0.3).load(str(gz))
    assert len(corpus.documents) == 10 and len(corpus.split("test")) == 3


@pytest.mark.parametrize(
    "ann, message",
    [
        ("T1\tDrug 9 18\tVitamin D\nT2\tDrug 28 400\tAspirin\n", r"10\.ann:2: entity span 28-400 is outside the text"),
        ("T1\tDrug 9 18\tVitamin E\n", r"10\.ann:1: entity text 'Vitamin E' does not match"),
        ("T1\tDrug 9 x\tVitamin D\n", r"10\.ann:1: bad offsets"),
    ],
)
def test_mimic_bad_brat_names_file_and_line(tmp_path, ann, message):
    write_brat(tmp_path, "10", NOTE, ann)
    with pytest.raises(DataError, match=message):
        MimicDataset().load(str(tmp_path))


def test_mimic_bad_input(tmp_path):
    with pytest.raises(DataError, match="MIMIC data not found"):
        MimicDataset().load(str(tmp_path / "nothing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no NOTEEVENTS.csv and no brat"):
        MimicDataset().load(str(tmp_path / "empty"))
    write_csv(tmp_path / "cols" / "NOTEEVENTS.csv", ["ROW_ID", "CATEGORY", "BODY"], [[1, "Discharge summary", "x"]])
    with pytest.raises(DataError, match=r"NOTEEVENTS\.csv:1: missing column\(s\) TEXT"):
        MimicDataset().load(str(tmp_path / "cols"))
    (tmp_path / "orphan").mkdir()
    (tmp_path / "orphan" / "5.ann").write_text("T1\tDrug 0 1\tx\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"5\.ann: brat annotation without its text file 5\.txt"):
        MimicDataset().load(str(tmp_path / "orphan"))


# -- bundled samples ----------------------------------------------------------------------------

WORD = re.compile(r"\w+(?:['’\-]\w+)*")


@pytest.fixture(scope="module")
def bundled():
    return {name: get_registry().build("dataset", name).load(None) for name in ("pan", "mpst", "mimic")}


def test_bundled_pan_sample(bundled):
    corpus = bundled["pan"]
    assert corpus.source == BUNDLED_SOURCE
    assert len(corpus.pairs) >= 150 and len({d.author for d in corpus.documents}) >= 12
    assert sum(p.same for p in corpus.pairs) * 2 == len(corpus.pairs)
    for split in ("train", "test"):
        pairs = [p for p in corpus.pairs if p.split == split]
        assert 0.4 <= sum(p.same for p in pairs) / len(pairs) <= 0.6
    counts = [len(WORD.findall(d.text)) for d in corpus.documents]
    assert min(counts) >= 80 and max(counts) <= 160
    assert sum("\n" in d.text for d in corpus.documents) > len(corpus.documents) / 2
    assert any(any(ord(c) > 127 for c in d.text) for d in corpus.documents)
    assert all(d.entities for d in corpus.documents)
    assert not {d.author for d in corpus.split("train")} & {d.author for d in corpus.split("test")}


def test_bundled_mpst_sample(bundled):
    corpus = bundled["mpst"]
    tags = Counter(t for d in corpus.documents for t in d.labels)
    assert len(corpus.documents) >= 150 and len(tags) >= 6 and min(tags.values()) >= 20
    assert any(" " in t for t in tags) and sum(len(d.labels) > 1 for d in corpus.documents) > 50
    counts = [len(WORD.findall(d.text)) for d in corpus.documents]
    assert min(counts) >= 80 and max(counts) <= 160
    assert corpus.split("test") and all(d.entities for d in corpus.documents)


def test_bundled_mimic_sample(bundled):
    corpus = bundled["mimic"]
    assert len(corpus.documents) >= 100
    assert all(d.text.startswith("SYNTHETIC") for d in corpus.documents)
    labels = Counter(e.label for d in corpus.documents for e in d.entities)
    assert {"Drug", "Strength", "Dosage", "Frequency", "Route", "Reason"} <= set(labels)
    assert len({e.text for d in corpus.documents for e in d.entities if e.label == "Drug"}) >= 20
    assert any(len(e.fragments) > 1 for d in corpus.documents for e in d.entities)
    counts = [len(WORD.findall(d.text)) for d in corpus.documents]
    assert min(counts) >= 80 and max(counts) <= 170


def test_bundled_samples_are_small_and_reproducible_by_the_generator(tmp_path):
    data = ROOT / "plugins" / "mlmh_builtins" / "data"
    assert sum(p.stat().st_size for p in data.rglob("*") if p.is_file()) < 2_000_000
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_samples.py"), "--check"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]


# -- faults: empty files, invalid UTF-8, wrong kinds of path, short documents ------------------------


def break_utf8(path: Path, line: int) -> Path:
    """Put an invalid UTF-8 byte (0xff) at the start of the 1-based physical ``line`` of ``path``."""
    lines = path.read_bytes().split(b"\n")
    lines[line - 1] = b"\xff" + lines[line - 1]
    path.write_bytes(b"\n".join(lines))
    return path


def test_pan_empty_pairs_file_says_it_has_no_pairs(tmp_path):
    write_pan(tmp_path, [], [])
    with pytest.raises(DataError, match=r"pairs\.jsonl: no pairs \(the file is empty"):
        PanDataset().load(str(tmp_path))
    (tmp_path / "pairs.jsonl").write_text("\n  \n", encoding="utf-8")
    with pytest.raises(DataError, match=r"pairs\.jsonl: no pairs"):
        PanDataset().load(str(tmp_path))
    pairs, truth = pan_rows(2, 2)
    for row in pairs:
        row["pair"][1] = " "
    write_pan(tmp_path, pairs, truth)
    with pytest.raises(DataError, match=r"pairs\.jsonl: every pair has an empty text; no pairs left"):
        PanDataset().load(str(tmp_path))


@pytest.mark.parametrize("name, line", [("pairs.jsonl", 3), ("truth.jsonl", 2), ("entities.jsonl", 1)])
def test_pan_invalid_utf8_names_file_and_line(tmp_path, name, line):
    pairs, truth = pan_rows()
    write_pan(tmp_path, pairs, truth)
    write_jsonl(tmp_path / "entities.jsonl", [{"doc": "p000-1", "spans": []}])
    path = break_utf8(tmp_path / name, line)
    with pytest.raises(DataError) as info:
        PanDataset().load(str(tmp_path))
    assert str(info.value) == f"{path}:{line}: not valid UTF-8 (byte 0xff at column 1)"  # mlmh.storage.jsonl's wording


def test_mpst_invalid_utf8_names_the_physical_line_and_a_bom_is_accepted(tmp_path):
    path = write_csv(tmp_path / "mpst_full_data.csv", MPST_HEADER, mpst_rows())
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())  # spreadsheets save a byte-order mark
    assert "tt0000001" in MpstDataset().load(str(tmp_path)).by_id()
    break_utf8(path, 5)  # row 3: the first synopsis spans lines 2-3
    with pytest.raises(DataError, match=r"mpst_full_data\.csv:5: not valid UTF-8 \(byte \d+: ff\)"):
        MpstDataset().load(str(tmp_path))


def test_mimic_invalid_utf8_in_csv_gz_brat_text_and_annotation(tmp_path):
    write_csv(tmp_path / "csv" / "NOTEEVENTS.csv", NOTE_HEADER, [note_row(10, NOTE), note_row(11, "second note here")])
    break_utf8(tmp_path / "csv" / "NOTEEVENTS.csv", 4)
    with pytest.raises(DataError, match=r"NOTEEVENTS\.csv:4: not valid UTF-8"):
        MimicDataset().load(str(tmp_path / "csv"))
    gz = tmp_path / "gz" / "NOTEEVENTS.csv.gz"
    gz.parent.mkdir()
    gz.write_bytes(gzip.compress((tmp_path / "csv" / "NOTEEVENTS.csv").read_bytes()))
    with pytest.raises(DataError, match=r"NOTEEVENTS\.csv\.gz:4: not valid UTF-8"):
        MimicDataset().load(str(gz))
    write_brat(tmp_path / "txt", "10", NOTE, GOOD_ANN)
    break_utf8(tmp_path / "txt" / "10.txt", 2)
    with pytest.raises(DataError, match=r"10\.txt:2: not valid UTF-8 \(byte 28: ff\)"):
        MimicDataset().load(str(tmp_path / "txt"))
    write_brat(tmp_path / "ann", "10", NOTE, GOOD_ANN)
    break_utf8(tmp_path / "ann" / "10.ann", 3)
    with pytest.raises(DataError, match=r"10\.ann:3: not valid UTF-8"):
        MimicDataset().load(str(tmp_path / "ann"))


def test_brat_offsets_refer_to_the_text_as_written(tmp_path):
    text = NOTE.replace("\n", "\r\n")  # brat offsets count the \r of Windows line ends
    start = text.index("Aspirin")
    write_brat(tmp_path, "10", text, f"T1\tDrug {start} {start + 7}\tAspirin\n")
    (tmp_path / "10.txt").write_bytes(text.encode("utf-8"))
    (document,) = MimicDataset().load(str(tmp_path)).documents
    assert document.text == text and document.entities[0].text == "Aspirin"


@pytest.mark.parametrize("dataset", [PanDataset, MpstDataset, MimicDataset])
def test_an_empty_path_is_refused_not_read_as_the_current_directory(dataset):
    with pytest.raises(DataError, match=r"^empty path given for the (PAN|MPST|MIMIC) data \(expected "):
        dataset().load("  ")


def test_a_directory_where_a_file_is_expected_is_named(tmp_path):
    pairs, _ = pan_rows()
    (tmp_path / "pan").mkdir()
    write_jsonl(tmp_path / "pan" / "pairs.jsonl", pairs)
    (tmp_path / "pan" / "truth.jsonl").mkdir()
    with pytest.raises(DataError, match=r"pan/truth\.jsonl: is a directory, expected the PAN truth file"):
        PanDataset().load(str(tmp_path / "pan"))
    (tmp_path / "mpst" / "mpst_full_data.csv").mkdir(parents=True)
    with pytest.raises(DataError, match=r"mpst_full_data\.csv: is a directory, expected the MPST file"):
        MpstDataset().load(str(tmp_path / "mpst"))
    (tmp_path / "brat").mkdir()
    (tmp_path / "brat" / "7.ann").write_text("T1\tDrug 0 1\tx\n", encoding="utf-8")
    (tmp_path / "brat" / "7.txt").mkdir()
    with pytest.raises(DataError, match=r"7\.txt: is a directory, expected the brat text file"):
        MimicDataset().load(str(tmp_path / "brat"))


def test_mimic_csv_without_discharge_summaries_is_named(tmp_path):
    write_csv(tmp_path / "NOTEEVENTS.csv", NOTE_HEADER, [note_row(1, "x-ray clear", "Radiology"), note_row(2, " ")])
    with pytest.raises(DataError, match=r"NOTEEVENTS\.csv: no usable discharge summaries"):
        MimicDataset().load(str(tmp_path))


def test_negative_split_seed_is_refused():
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match=r"dataset 'mpst': parameter 'seed' must be >= 0"):
        get_registry().build("dataset", "mpst:seed=-1")


def test_very_short_documents_are_noted(tmp_path):
    rows = [[f"tt{i}", "word" if i < 2 else f"a plot with several words {i}", "murder" if i % 2 else "comedy"] for i in range(6)]
    write_csv(tmp_path / "mpst_full_data.csv", ["imdb_id", "plot_synopsis", "tags"], rows)
    notes = MpstDataset().load(str(tmp_path)).notes
    assert any(n.startswith("mpst_full_data.csv: 2 document(s) have fewer than 4 words (first: tt0)") for n in notes)
    pairs, truth = pan_rows()
    assert not any("fewer than" in n for n in PanDataset().load(str(write_pan(tmp_path / "pan", pairs, truth))).notes)


def test_mimic_keeps_each_patient_on_one_side(tmp_path):
    """Copy-forward notes of one patient never sit in train and test at once (issue: split by note)."""
    import csv

    from mlmh.data.splits import with_validation
    from mlmh_builtins.datasets_mimic import MimicDataset

    path = tmp_path / "NOTEEVENTS.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["ROW_ID", "SUBJECT_ID", "HADM_ID", "CHARTDATE", "CHARTTIME", "STORETIME", "CATEGORY",
                         "DESCRIPTION", "CGID", "ISERROR", "TEXT"])
        writer.writerows([note_row(i, f"patient {i % 9} was seen again on day {i} and is doing well", subject=i % 9)
                          for i in range(1, 46)])
    corpus = with_validation(MimicDataset().configured(test_fraction=0.3).load(str(path)))
    patients = {split: {d.group for d in corpus.split(split)} for split in ("train", "validation", "test")}
    assert all(patients.values())
    assert not patients["train"] & patients["test"] and not patients["validation"] & (patients["train"] | patients["test"])
    assert len(corpus.split("test")) == 15 and any("whole patients (9 with SUBJECT_ID)" in n for n in corpus.notes)
