"""Corrupt files name the file (issue 31, item 2): sample-cache entries that fail validation are treated as
missing and computed again, with a note naming the cache; run files read back and brat annotations
give one DataError line with file:line; a broken user model directory gives one ModelError line
naming the path and what is wrong with it, on every loading path."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from mlmh.errors import DataError, MlmhError, ModelError
from mlmh.storage.cache import SampleCache
from mlmh.testing import build_tiny_model
from mlmh.types import Generation, MetricResult, TaskResult, to_dict


def _generation(doc: str = "d1") -> Generation:
    return Generation(doc_id=doc, model="m", model_kind="mlm", sampler="s", masking="k", seed=0, original="a b",
                      masked_text="a [MASK]", text="a c", masked_words=[1], output_words={1: "c"})


# -- the sample cache: one rule for every reader -------------------------------------------------------
#: stored payloads that must count as missing: not JSON, not an object, missing fields, wrong types
BAD_GENERATIONS = {
    "invalid JSON": "{not json",
    "not an object": "[1, 2]",
    "missing fields": json.dumps({"doc_id": "d1"}),
    "wrong type": json.dumps({**to_dict(_generation()), "masked_words": "1"}),
    "wrong nested type": json.dumps({**to_dict(_generation()), "steps": [{"step": "x"}]}),
    "unknown field": json.dumps({**to_dict(_generation()), "extra": 1}),
}
BAD_RESULTS = {
    "invalid JSON": "[{",
    "not a list": json.dumps({"name": "m"}),
    "missing fields": json.dumps([{"name": "m"}]),
    "wrong type": json.dumps([{"name": "m", "value": "high", "higher_is_better": True}]),
}


def _corrupt(path: Path, table: str, column: str, key: str, payload: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE {table} SET {column} = ? WHERE key = ?", (payload, key))


@pytest.mark.parametrize("kind", list(BAD_GENERATIONS))
def test_a_corrupt_generation_entry_is_missing_with_a_note(tmp_path, kind):
    path = tmp_path / "samples.sqlite"
    cache = SampleCache(path)
    cache.put_many({"good": _generation("d1"), "bad": _generation("d2")})
    cache.close()
    _corrupt(path, "samples", "generation", "bad", BAD_GENERATIONS[kind])
    cache = SampleCache(path)
    found = cache.get_many(["good", "bad"])
    assert set(found) == {"good"} and found["good"] == _generation("d1")
    [note] = cache.notes
    assert note.startswith(f"sample cache {path}: entry bad") and "computed again" in note
    cache.put_many({"bad": _generation("d2")})  # recomputed: the entry is overwritten
    assert set(cache.get_many(["good", "bad"])) == {"good", "bad"}


@pytest.mark.parametrize("cls", [MetricResult, TaskResult])
@pytest.mark.parametrize("kind", list(BAD_RESULTS))
def test_a_corrupt_result_entry_is_missing_with_a_note(tmp_path, kind, cls):
    path = tmp_path / "samples.sqlite"
    cache = SampleCache(path)
    cache.put_results("k", [MetricResult(name="m", value=0.5, higher_is_better=True, per_sample=[0.5])])
    _corrupt(path, "results", "payload", "k", BAD_RESULTS[kind])
    assert cache.get_results("k", cls) is None
    assert cache.notes and cache.notes[0].startswith(f"sample cache {path}: entry k")


def test_a_result_of_another_class_is_missing(tmp_path):
    """A stored MetricResult read as a TaskResult (a key recipe mixed up) fails the shape check."""
    cache = SampleCache(tmp_path / "c.sqlite")
    cache.put_results("k", [MetricResult(name="m", value=0.5, higher_is_better=True)])
    assert cache.get_results("k", TaskResult) is None
    assert cache.get_results("k", MetricResult)[0].value == 0.5


@pytest.mark.parametrize("table", ["samples", "results"])
def test_a_table_with_foreign_columns_is_set_aside(tmp_path, table):
    path = tmp_path / "samples.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"CREATE TABLE {table} (key TEXT, blob BLOB)")
        db.execute(f"INSERT INTO {table} VALUES ('x', 'y')")
    cache = SampleCache(path)
    assert any(f"table '{table}' had columns (key, blob)" in n and str(path) in n for n in cache.notes)
    cache.put_many({"k": _generation()})
    cache.put_results("r", [MetricResult(name="m", value=1.0, higher_is_better=True)])
    assert set(cache.get_many(["k", "x"])) == {"k"} and cache.get_results("r", MetricResult)


def test_a_run_over_a_corrupt_cache_regenerates_and_says_so(tmp_path):
    import runner_fakes
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import from_table
    from mlmh.run.results import strip_timings
    from mlmh.run.runner import run_experiment

    runner_fakes.install()
    config = lambda: from_table({**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"],  # noqa: E731
                                 "samplers": ["fake-fill", "fake-clm-fill"], "tasks": []}, name="f", source="f.toml")
    cache = tmp_path / "cache.sqlite"
    first = run_experiment(build_plan(config()), output_path=tmp_path / "a", cache_path=cache).to_dict()
    with sqlite3.connect(cache) as db:
        db.execute("UPDATE samples SET generation = '{\"doc_id\": 1}' WHERE rowid IN (SELECT rowid FROM samples LIMIT 3)")
    second = run_experiment(build_plan(config()), output_path=tmp_path / "b", cache_path=cache).to_dict()
    note = next(n for n in second["notes"] if n.startswith(f"sample cache {cache}: entry "))
    assert "computed again" in note
    same = lambda r: [(c["id"], c["metrics"]) for c in strip_timings(r)["conditions"]]  # noqa: E731
    assert same(first) == same(second)


# -- run files read back and brat annotations ---------------------------------------------------------
def test_invalid_utf8_in_samples_jsonl_names_the_file_and_line(tmp_path):
    from mlmh.api import load

    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps({"schema_version": 2, "run_id": "r", "config": {}, "conditions": []}))
    line = json.dumps({"condition": "c", "generation": to_dict(_generation()), "metrics": {}})
    (run / "samples.jsonl").write_bytes(line.encode() + b"\n" + b'{"condition": "\xff"}\n')
    with pytest.raises(DataError, match=rf"^{run / 'samples.jsonl'}:2: not valid UTF-8 \(byte 0xff at column 16\)$"):
        load(run).samples  # noqa: B018


def _generations_readers():
    from mlmh.human import export_sheet
    from mlmh.run.reproduce import recorded_sample

    return {"generate --run": lambda run: recorded_sample(run, "0:nope"),
            "human export": lambda run: export_sheet(run, 2)}


@pytest.mark.parametrize("reader", ["generate --run", "human export"])
@pytest.mark.parametrize("content, error", [
    (b'{"sample": "0:d1"}\n\xfe\n', ":2: not valid UTF-8"),
    (b'{"sample": "0:d1"}\n{"sample": \n', ":2: invalid JSON"),
    (b'[1]\n', ":1: expected a JSON object, got list"),
])
def test_every_jsonl_reader_names_the_file_and_line(tmp_path, content, error, reader):
    """Every reader of a run's JSON Lines files goes through mlmh.storage.jsonl (samples.jsonl above,
    generations.jsonl here for generate --run and human export)."""
    if reader == "human export" and error.startswith(":2"):  # its first line must be a whole generation
        content = content.replace(b'{"sample": "0:d1"}', json.dumps(
            {"sample": "0:d1", "condition": "c", "doc_id": "d1", "original": "a", "masked_text": "[M]",
             "text": "b"}).encode())
    (tmp_path / "generations.jsonl").write_bytes(content)
    with pytest.raises(DataError) as info:
        _generations_readers()[reader](tmp_path)
    assert str(info.value).startswith(f"{tmp_path / 'generations.jsonl'}{error}")


@pytest.mark.parametrize("line, error", [
    ("T1", "expected 'T<id><TAB><label>"),
    ("T1\tPROBLEM", "bad offsets ''"),
    ("T1\tPROBLEM 4", "bad offsets '4'"),
    ("T1\tPROBLEM 4 x\tpatient", "bad offsets '4 x'"),
    ("T1\tPROBLEM 4 11;\tpatient", "bad offsets '4 11;'"),
    ("T1\t 4 11\tpatient", "entity 'T1' has no label"),
    ("T1\tPROBLEM 4 99\tx", "entity span 4-99 is outside the text"),
])
def test_a_malformed_brat_line_is_one_data_error_with_file_and_line(tmp_path, line, error):
    from mlmh_builtins.datasets_mimic import read_brat

    ann = tmp_path / "1.ann"
    ann.write_text("T0\tPROBLEM 0 3\tThe\n" + line + "\n")
    with pytest.raises(DataError) as info:
        read_brat(ann, "The patient has a cough and fever.")
    assert str(info.value).startswith(f"{ann}:2: {error}") and "\n" not in str(info.value)


# -- user model directories: one rule for every loading path ------------------------------------------
@pytest.fixture(scope="module")
def broken_models(tmp_path_factory):
    base = tmp_path_factory.mktemp("broken-models")
    good = build_tiny_model("clm", base / "good")

    def variant(name, change):
        target = base / name
        shutil.copytree(good, target)
        change(target)
        return target

    def truncate(d):
        weights = d / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])

    def drop_tokenizer(d):
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (d / name).unlink()

    def mismatch(d):
        config = json.loads((d / "config.json").read_text())
        config["n_embd"] = 64
        (d / "config.json").write_text(json.dumps(config))

    return {
        "missing": (base / "no-such-model", "does not exist"),
        "truncated": (variant("truncated", truncate), "a weights file is truncated or corrupt"),
        "no tokenizer": (variant("no-tokenizer", drop_tokenizer), "holds no tokenizer files"),
        "config mismatch": (variant("mismatch", mismatch), "config.json does not match the weights"),
    }


def _routes():
    from mlmh.adapters import load_adapter
    from mlmh.training.models import init_source, load_init
    from mlmh_builtins import metrics_bertscore, metrics_ppl

    return {
        "hf-clm": lambda p: load_adapter("clm", p),
        "gen-ppl:path=": lambda p: metrics_ppl.load_reference_lm(str(p)),
        "bertscore:model=": lambda p: metrics_bertscore.get_encoder(str(p), 1),
        "train --init": lambda p: (init_source(str(p)), load_init(str(p), "clm")),
    }


@pytest.mark.parametrize("route", ["hf-clm", "gen-ppl:path=", "bertscore:model=", "train --init"])
@pytest.mark.parametrize("fault", ["missing", "truncated", "no tokenizer", "config mismatch"])
def test_a_broken_model_directory_is_one_line_naming_it(broken_models, route, fault):
    path, what = broken_models[fault]
    if route == "bertscore:model=" and fault == "config mismatch":
        pytest.skip("bert-score loads an AutoModel: a GPT-2 with a wider config is read, not matched")
    with pytest.raises(MlmhError) as info:
        _routes()[route](path)
    message = str(info.value)
    assert str(path) in message and "\n" not in message
    if not (route == "train --init" and fault == "missing"):  # --init's own wording: "no such directory"
        assert isinstance(info.value, ModelError) and what in message, message
    assert "rjieba" not in message and "Repo id" not in message and "ignore_mismatched_sizes" not in message


def test_a_device_this_machine_lacks_is_named(broken_models):
    import torch

    from mlmh.adapters import load_adapter

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    good = broken_models["truncated"][0].with_name("good")
    with pytest.raises(ModelError, match=r"device=cuda:0, but CUDA is not available on this machine; use device=cpu$"):
        load_adapter("clm", good, device="cuda:0")


def test_gen_ppl_names_a_path_that_does_not_exist_from_its_env_var_too(tmp_path, monkeypatch):
    from mlmh.components import ScoringItem
    from mlmh.plugins.contracts import score_metric
    from mlmh.registry import get_registry

    monkeypatch.setenv("MLMH_GENPPL_MODEL", str(tmp_path / "gone"))
    items = [ScoringItem(prediction="a b", reference="a b")] * 2
    [result] = score_metric(get_registry().build("metric", "gen-ppl"), items, seed=0)
    assert result.error and f"model directory {tmp_path / 'gone'} does not exist" in result.error


# -- taggers ------------------------------------------------------------------------------------------
def test_a_legacy_nltk_tagger_falls_back_to_the_offline_tagger(tmp_path, monkeypatch):
    """Only the old pickled averaged_perceptron_tagger on the machine: current NLTK cannot read it, so
    pos masking uses the offline tagger instead of failing with a LookupError."""
    nltk = pytest.importorskip("nltk")
    from mlmh.data import wordnet
    from mlmh_builtins import maskings

    if wordnet.wordnet_unavailable():
        pytest.skip("the offline tagger needs WordNet")
    legacy = tmp_path / "nltk_data" / "taggers" / "averaged_perceptron_tagger"
    legacy.mkdir(parents=True)
    (legacy / "averaged_perceptron_tagger.pickle").write_bytes(b"legacy")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "nltk_data")])
    monkeypatch.setattr(maskings, "spacy_pipeline", lambda: None)
    maskings.nltk_tagger.cache_clear()
    try:
        from mlmh.words import split_words
        from mlmh_builtins.offline_taggers import POS_TAGGER_NOTE

        words = split_words("The quick dog runs home.")
        tags, note = maskings.pos_tags(words)
        assert note == POS_TAGGER_NOTE and len(tags) == len(words)
    finally:
        maskings.nltk_tagger.cache_clear()


# -- every input format's errors are one line naming file and line (issue 41, item 4) ------------------------
def _gzip_bytes(text: str) -> bytes:
    import gzip

    return gzip.compress(text.encode("utf-8"))


_ROWS = "".join(json.dumps({"text": f"Document number {n} is long enough to count here.", "author": f"a{n % 3}"}) + "\n"
                for n in range(40))
#: a damaged or fake compressed corpus, by how it is broken -> (file name, bytes, what the line says)
BAD_COMPRESSED = {
    "truncated": ("corpus.jsonl.gz", _gzip_bytes(_ROWS)[:-30], "the compressed data ends early"),
    "fake": ("corpus.jsonl.gz", _ROWS.encode("utf-8"), "not gzip-compressed data, or damaged"),
    "damaged": ("corpus.jsonl.gz", _gzip_bytes(_ROWS)[:40] + b"\xff" * 60 + _gzip_bytes(_ROWS)[100:],
                "not gzip-compressed data, or damaged"),
    "fake csv": ("corpus.csv.gz", b"text,author\nplain,text\n", "not gzip-compressed data, or damaged"),
}


@pytest.mark.parametrize("case", sorted(BAD_COMPRESSED))
def test_a_damaged_or_fake_gz_corpus_is_one_line_naming_file_and_line(case, tmp_path):
    from mlmh.registry import get_registry

    name, data, says = BAD_COMPRESSED[case]
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(DataError) as caught:
        get_registry().build("dataset", "text:group_field=author").load(str(path))
    message = str(caught.value)
    assert message.startswith(f"{path}:") and message.split(":")[1].isdigit(), message
    assert says in message and "\n" not in message
    assert not any(word in message for word in ("EOFError", "BadGzipFile", "zlib", "Error"))


@pytest.mark.parametrize("content, error", [
    ('text,author\n"A first text that never closes its quote,Ann\nsecond text,Bob\n',
     ":2: a quoted field opened in this row is never closed (not valid CSV)"),
    ('text,author\nA fine first row of text,Ann\n"broken,Bob\n', ":3: a quoted field opened in this row is never closed"),
    ("text,text,author\nA,B,Ann\n", ":1: column(s) text appear more than once in the header"),
    ("text, author,author\nA,B,Ann\n", ":1: column(s) author appear more than once in the header"),
])
def test_csv_quoting_and_duplicate_headers_are_named_not_substituted(content, error, tmp_path):
    from mlmh.registry import get_registry

    path = tmp_path / "corpus.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError) as caught:
        get_registry().build("dataset", "text:group_field=author").load(str(path))
    assert str(caught.value) == f"{path}{error}" or str(caught.value).startswith(f"{path}{error}"), caught.value


@pytest.mark.parametrize("spec, message", [
    ("trained-mlm:seq_len=1", "trained-mlm:seq_len must be 0 (the size's) or at least 16"),
    ("trained-clm:seq_len=3", "trained-clm:seq_len must be 0 (the size's) or at least 16"),
    ("trained-mlm:max_steps=5,epochs=2", "give either trained-mlm:max_steps or trained-mlm:epochs, not both"),
    ("trained-mlm:mask_schedule=mdlm,mask_ratio=0.3", "trained-mlm: mask_ratio applies to mask_schedule=fixed"),
])
def test_a_training_parameter_that_cannot_work_is_named_as_the_users_parameter(spec, message):
    from mlmh.errors import SpecError
    from mlmh.registry import get_registry

    with pytest.raises(SpecError) as caught:
        get_registry().build("model", spec)
    assert message in str(caught.value) and "--" not in str(caught.value) and "DataError" not in str(caught.value)


def test_an_init_error_names_no_flag_the_user_never_gave(tmp_path):
    from mlmh.errors import SpecError
    from mlmh.training.models import init_source

    with pytest.raises(SpecError) as caught:
        init_source(str(tmp_path))
    assert str(caught.value).startswith(f"init checkpoint {tmp_path}: not a model directory") and "--init" not in str(caught.value)


def test_a_component_failure_that_is_an_mlmh_error_names_no_exception_type():
    from mlmh.plugins.contracts import describe_error

    assert describe_error(DataError("dataset 'x': no blocks")) == "dataset 'x': no blocks"
    assert describe_error(KeyError("logits")) == "KeyError: 'logits'"  # a plugin's bug keeps its type
