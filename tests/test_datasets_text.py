"""The ``text`` dataset on real prose (tests/realdata.py) in every format it reads: the same documents,
groups and labels from each; no group in two splits; one DataError line naming the file, the row and the
field for each kind of bad input; and ``mlmh eval --preset quick`` end to end on each format."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from realdata import TEXT_FORMATS, folder_name, text_corpus, text_records
from mlmh.cli import cli
from mlmh.data.splits import check_roles, group_key, with_validation
from mlmh.errors import DataError, SpecError
from mlmh.registry import get_registry
from mlmh.testing import check_dataset

N = 48


def text_dataset(spec: str = "text:group_field=author"):
    return get_registry().build("dataset", spec)


@pytest.fixture(scope="module")
def corpora(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("text-corpora")
    return {fmt: text_corpus(root, fmt, N) for fmt in TEXT_FORMATS}


def groups_by_split(corpus) -> dict[str, set[str]]:
    return {split: {group_key(d) for d in corpus.split(split)} for split in ("train", "validation", "test")}


def assert_groups_disjoint(corpus) -> None:
    by_split = groups_by_split(corpus)
    assert all(by_split.values()), {k: len(v) for k, v in by_split.items()}
    assert not by_split["train"] & by_split["test"]
    assert not by_split["train"] & by_split["validation"]
    assert not by_split["validation"] & by_split["test"]


# -- every format ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_every_format_gives_the_same_documents_groups_and_labels(fmt, corpora):
    records = text_records(N)
    spec = "text:group_field=author" if fmt == "txt" else "text:group_field=author,label_field=section"
    corpus = text_dataset(spec).load(str(corpora[fmt]))
    assert corpus.dataset == "text" and corpus.source == str(corpora[fmt])
    assert sorted(d.text.strip() for d in corpus.documents) == sorted(r["text"] for r in records)
    author_of = {r["text"]: r["author"] for r in records}
    section_of = {r["text"]: r["section"] for r in records}
    for document in corpus.documents:
        if fmt == "txt":  # the subfolder is the group: the author's name as a folder name
            assert document.group == folder_name(author_of[document.text.strip()])
            assert document.labels == []
        else:
            assert document.group == author_of[document.text]
            assert document.labels == [section_of[document.text]]
    assert_groups_disjoint(with_validation(corpus))
    assert any("no group is in two splits" in note for note in corpus.notes)


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_the_split_never_puts_a_group_on_two_sides_whatever_the_seed(fmt, corpora):
    for seed in range(5):
        corpus = with_validation(text_dataset(f"text:group_field=author,seed={seed},test_fraction=0.3").load(str(corpora[fmt])))
        check_roles(corpus)
        assert_groups_disjoint(corpus)
        test = corpus.split("test")
        assert 0.15 * N <= len(test) <= 0.45 * N


def test_the_text_dataset_keeps_the_dataset_contract(corpora):
    corpus = check_dataset(text_dataset(), str(corpora["jsonl"]))
    assert corpus.dataset == "text"


def test_without_a_group_field_each_document_is_its_own_group(corpora):
    corpus = text_dataset("text").load(str(corpora["csv"]))
    assert all(d.group is None for d in corpus.documents)
    assert len(corpus.split("test")) == round(0.2 * N)
    assert any(note.startswith("split: by document (no group_field)") for note in corpus.notes)


def test_a_txt_file_at_the_top_of_the_folder_is_a_group_of_its_own_and_other_files_are_counted(tmp_path, corpora):
    import shutil

    folder = tmp_path / "txt"
    shutil.copytree(corpora["txt"], folder)
    (folder / "loose.txt").write_text("A text that sits at the top of the folder, with no subfolder.\n", encoding="utf-8")
    (folder / "README.md").write_text("not a document\n", encoding="utf-8")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "x.txt").write_text("hidden\n", encoding="utf-8")
    corpus = text_dataset().load(str(folder))
    loose = corpus.by_id()["loose"]
    assert loose.group is None and loose.meta["file"] == "loose.txt"
    assert len(corpus.documents) == N + 1
    assert any("1 file(s) that are not .txt left out (first: README.md)" in note for note in corpus.notes)


def test_a_saved_dataset_dict_is_merged_and_class_labels_read_as_names(tmp_path):
    from datasets import ClassLabel, Dataset, DatasetDict

    records = text_records(24)
    sections = sorted({r["section"] for r in records})
    rows = [{"text": r["text"], "author": r["author"], "section": sections.index(r["section"])} for r in records]
    features = Dataset.from_list(rows).features.copy()
    features["section"] = ClassLabel(names=sections)
    saved = DatasetDict({"train": Dataset.from_list(rows[:16], features=features),
                         "test": Dataset.from_list(rows[16:], features=features)})
    saved.save_to_disk(str(tmp_path / "dict"))
    corpus = text_dataset("text:group_field=author,label_field=section").load(str(tmp_path / "dict"))
    assert [d.id for d in corpus.documents][:2] == ["train-1", "train-2"] and corpus.documents[-1].id == "test-8"
    assert [d.labels for d in corpus.documents] == [[r["section"]] for r in records]
    assert {d.meta["original_split"] for d in corpus.documents} == {"train", "test"}
    assert any("saved splits train, test merged" in note for note in corpus.notes)
    assert_groups_disjoint(with_validation(corpus))


def test_labels_may_be_lists_and_numbers_and_enable_text_classification(tmp_path):
    records = text_records(N)
    path = tmp_path / "tags.jsonl"
    path.write_text("".join(json.dumps({"body": r["text"], "tags": [r["section"], "debian"], "source": i % 7}) + "\n"
                            for i, r in enumerate(records)), encoding="utf-8")
    corpus = text_dataset("text:text_field=body,label_field=tags,group_field=source").load(str(path))
    assert corpus.documents[0].labels == [records[0]["section"], "debian"]
    assert {d.group for d in corpus.documents} == {str(i) for i in range(7)}
    task = get_registry().build("task", "text-classification")
    assert task.applies_to(corpus)
    assert not get_registry().build("task", "authorship-verification").applies_to(corpus)
    result = task.run(corpus, corpus)
    assert result.error is None and 0 <= result.scores["micro_f1"] <= 1 and result.n_test == len(corpus.split("test"))


# -- bad input: one line naming the file, the row and the field --------------------------------
def write(path: Path, text: str | bytes) -> str:
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


def jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


GOOD = {"text": "A package description that is long enough to be a document.", "author": "Ann"}


def load_error(spec: str, path: str) -> str:
    with pytest.raises(DataError) as caught:
        text_dataset(spec).load(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_a_missing_field_names_file_row_and_field(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl([GOOD, GOOD, {"text": "no author here"}]))
    assert load_error("text:group_field=author", path) == (
        f"{path}:3: no field 'author' (the group_field; fields here: text)")
    csv_path = write(tmp_path / "a.csv", "body,author\nhello there,Ann\n")
    message = load_error("text", csv_path)
    assert message.startswith(f"{csv_path}:1: missing column(s) text")


def test_a_missing_column_of_parquet_and_a_saved_dataset_is_named(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from datasets import Dataset

    pq.write_table(pa.Table.from_pylist([GOOD, GOOD]), tmp_path / "a.parquet")
    assert load_error("text:group_field=writer", str(tmp_path / "a.parquet")) == (
        f"{tmp_path / 'a.parquet'}: no column 'writer' (columns: text, author)")
    Dataset.from_list([GOOD, GOOD]).save_to_disk(str(tmp_path / "saved"))
    assert load_error("text:label_field=label", str(tmp_path / "saved")) == (
        f"{tmp_path / 'saved'}: no column 'label' (columns: text, author)")


def test_an_empty_text_names_file_row_and_field(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl([GOOD, {"text": "  ", "author": "Bo"}]))
    assert load_error("text", path) == f"{path}:2: field 'text' is empty (every row needs its text)"
    csv_path = write(tmp_path / "a.tsv", "text\tauthor\nfine text\tAnn\n\tBo\n")
    assert load_error("text:group_field=author", csv_path) == (
        f"{csv_path}:3 (row 2): field 'text' is empty (every row needs its text)")
    folder = tmp_path / "folder" / "ann"
    folder.mkdir(parents=True)
    write(folder / "one.txt", "a text\n")
    write(folder / "two.txt", "\n\n")
    assert load_error("text", str(tmp_path / "folder")) == f"{folder / 'two.txt'}: the file is empty (every document needs a text)"


def test_a_field_that_changes_type_names_both_rows(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl([{**GOOD, "author": 7}, GOOD]))
    assert load_error("text:group_field=author", path) == (
        f"{path}:2: field 'author' is a string here but a number at {path}:1; a field holds one type")
    path = write(tmp_path / "b.jsonl", jsonl([{**GOOD, "text": 12}]))
    assert load_error("text", path) == f"{path}:1: field 'text' is a number, expected the text as a string"
    path = write(tmp_path / "c.jsonl", jsonl([{**GOOD, "tags": {"a": 1}}]))
    assert "field 'tags' is an object, expected a label or a list of labels" in load_error("text:label_field=tags", path)


def test_a_file_that_is_not_what_its_extension_says(tmp_path):
    csv_text = "text,author\nhello,Ann\n"
    path = write(tmp_path / "a.parquet", csv_text)
    assert load_error("text", path).startswith(f"{path}: not a parquet file (")
    path = write(tmp_path / "b.jsonl", csv_text)
    assert load_error("text", path) == f"{path}:1: invalid JSON: Expecting value at column 1"
    path = write(tmp_path / "c.csv", b"PAR1\x15\x04\x15\x80\xff\x00binary")
    assert load_error("text", path).startswith(f"{path}:1: not valid UTF-8")
    (tmp_path / "saved").mkdir()
    write(tmp_path / "saved" / "state.json", "{}")
    assert load_error("text", str(tmp_path / "saved")).startswith(f"{tmp_path / 'saved'}: not a dataset saved with save_to_disk (")


def test_unknown_extensions_missing_paths_and_no_path_are_one_line(tmp_path):
    path = write(tmp_path / "a.xlsx", "whatever")
    assert load_error("text", path) == (
        f"{path}: unknown extension (the text dataset reads a .jsonl, .csv, .tsv or .parquet file, a folder of .txt "
        "files, or a folder saved by datasets' save_to_disk)")
    assert str(tmp_path / "nope.jsonl") in load_error("text", str(tmp_path / "nope.jsonl"))
    assert load_error("text", str(tmp_path)).startswith(f"{tmp_path}: no .txt files in this folder")
    assert "pass --data PATH" in load_error("text", None)
    write(tmp_path / "sub.txt", "x y z w")
    assert "label_field 'tag' cannot be read" in load_error("text:label_field=tag", str(tmp_path))


def test_a_missing_reader_library_names_the_extra(tmp_path, monkeypatch, corpora):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    monkeypatch.setitem(sys.modules, "datasets", None)
    assert load_error("text", str(corpora["parquet"])) == (
        f"{corpora['parquet']}: reading parquet needs pyarrow: pip install 'mlmh[text]'")
    assert load_error("text", str(corpora["save_to_disk"])) == (
        f"{corpora['save_to_disk']}: reading a save_to_disk folder needs the datasets library: pip install 'mlmh[text]'")


def test_dataset_parameters_are_checked_where_they_are_typed():
    result = CliRunner().invoke(cli, ["eval", "--preset", "quick", "--dataset", "text:group=author", "--show-config"])
    assert isinstance(result.exception, SpecError)
    assert str(result.exception).startswith("--dataset text:group=author: unknown parameter") and "group_field" in str(result.exception)
    result = CliRunner().invoke(cli, ["eval", "--preset", "quick", "--dataset", "text:group_field=author",
                                      "--data", "x.jsonl", "--show-config"])
    assert result.exit_code == 0 and 'dataset = "text:group_field=author"' in result.output
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import from_table

    with pytest.raises(SpecError, match="key 'dataset'"):  # a preset file's spec is checked where it is planned
        build_plan(from_table({"dataset": "text:nope=1", "models": ["trained-mlm"], "maskings": ["random"],
                               "samplers": ["one-shot"]}, name="t", source="t.toml"))


# -- end to end --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def shared_model_cache(tmp_path_factory):
    """One cache for the five runs: the formats give the same train split, so the models train once."""
    return tmp_path_factory.mktemp("text-e2e-cache")


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "txt", "parquet", "save_to_disk"])
def test_quick_preset_runs_on_each_format_and_keeps_groups_apart(fmt, corpora, shared_model_cache, tmp_path, monkeypatch):
    monkeypatch.setenv("MLMH_CACHE_DIR", str(shared_model_cache))
    out = tmp_path / "run"
    args = ["eval", "--preset", "quick", "--dataset", "text:group_field=author", "--data", str(corpora[fmt]),
            "--limit", "4", "--output-path", str(out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.exception)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["conditions"] and not results["errors"]
    assert all(row["unseen"]["scored"] == 4 and row["seen"]["scored"] == 4 for row in results["conditions"])
    notes = "\n".join(results["notes"])
    assert "no group is in two splits" in notes
    assert "task authorship-verification skipped: dataset text lacks pairs" in notes  # the quick preset's task
    corpus = with_validation(text_dataset().load(str(corpora[fmt])))
    group_of = {d.id: d.group for d in corpus.documents}
    seen = {group_of[i] for i in results["documents"]["seen"]["ids"]}
    unseen = {group_of[i] for i in results["documents"]["unseen"]["ids"]}
    assert seen and unseen and not seen & unseen
    assert not {d.group for d in corpus.split("test")} & {d.group for d in corpus.split("train") + corpus.split("validation")}


# -- your ids, kept --------------------------------------------------------------------------------
def _strings(value) -> set[str]:
    if isinstance(value, dict):
        return {s for v in value.values() for s in _strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in _strings(v)}
    return {value} if isinstance(value, str) else set()


def test_id_field_keeps_your_ids_in_results_generations_and_frames(tmp_path):
    """--dataset text:id_field=id: a JSONL corpus's own ids, not row-N, in results.json, generations.jsonl and
    a DataFrame of the generations, on a run of fake models (the same runner as a real eval)."""
    import runner_fakes
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import from_table
    from mlmh.run.runner import run_experiment

    runner_fakes.install()
    rows = [{"id": f"doc:{i:03d}/A", "author": f"a{i % 4}", "text": f"{GOOD['text']} Number {i} of sixteen."}
            for i in range(16)]
    ids = {row["id"] for row in rows}
    data = write(tmp_path / "mine.jsonl", jsonl(rows))
    corpus = text_dataset("text:id_field=id,group_field=author").load(data)
    assert {d.id for d in corpus.documents} == ids
    config = from_table({**runner_fakes.FAKE_PRESET, "dataset": "text:id_field=id,group_field=author", "data": data,
                         "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"], "tasks": [], "limit": 3},
                        name="fake", source="fake.toml")
    out = tmp_path / "out"
    run_experiment(build_plan(config), None, output_path=out, use_cache=False)
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    kept = _strings(results) & ids
    assert len(kept) == 6 and not any(s.startswith("row-") for s in _strings(results))  # 3 seen + 3 unseen
    generated = [json.loads(line) for line in (out / "generations.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {g["doc_id"] for g in generated} == kept
    pandas = pytest.importorskip("pandas")
    frame = pandas.read_json(out / "generations.jsonl", lines=True, dtype={"doc_id": str})
    assert set(frame["doc_id"]) == kept


def test_duplicate_and_empty_ids_are_refused_naming_the_line(tmp_path):
    path = write(tmp_path / "a.jsonl", jsonl([{**GOOD, "id": "x1"}, {**GOOD, "id": "x2"}, {**GOOD, "id": "x1"}]))
    assert load_error("text:id_field=id", path) == (
        f"{path}:3: id 'x1' (field 'id') is also the id at {path}:1; every document needs its own")
    path = write(tmp_path / "b.jsonl", jsonl([{**GOOD, "id": "x1"}, {**GOOD, "id": " "}]))
    assert load_error("text:id_field=id", path) == f"{path}:2: field 'id' is empty (every row needs its id)"
    path = write(tmp_path / "c.jsonl", jsonl([{**GOOD, "id": 7}, {**GOOD, "id": "7"}]))  # the same id, once a number
    assert "field 'id' is a string here but a number" in load_error("text:id_field=id", path)
    csv_path = write(tmp_path / "a.csv", "id,text\nq1,first text here\nq1,second text here\n")
    assert load_error("text:id_field=id", csv_path) == (
        f"{csv_path}:3 (row 2): id 'q1' (field 'id') is also the id at {csv_path}:2 (row 1); every document needs its own")
    folder = tmp_path / "folder"
    folder.mkdir()
    write(folder / "one.txt", "a text\n")
    assert "id_field 'id' cannot be read" in load_error("text:id_field=id", str(folder))
