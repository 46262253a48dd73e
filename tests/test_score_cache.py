"""The run cache of results: a run over cached samples scores and trains nothing again, and anything
that decides a result (the samples, the metric's or task's code, its libraries, its scoring model)
computes it again."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

import runner_fakes
from mlmh.components import ScoringItem
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.events import Message
from mlmh.registry import get_registry
from mlmh.run.results import strip_timings
from mlmh.run.runner import run_experiment
from mlmh.storage.cache import SampleCache, content_digest, result_key
from mlmh.types import Generation, MetricResult, Step

KEY = dict(kind="metric", spec="bleu:tokenize=13a", code="mlmh==0.1+abc", libraries=(("sacrebleu", "2.6.0"),),
           inputs="", seed=0, content="d1")


@pytest.fixture(autouse=True)
def fakes(monkeypatch):
    runner_fakes.install()
    monkeypatch.setattr(runner_fakes.KeptWordMatch, "calls", 0)
    monkeypatch.setattr(runner_fakes.KeptWordMatch, "identity", "")
    monkeypatch.setattr(runner_fakes.AlwaysFails, "calls", 0)
    monkeypatch.setattr(runner_fakes.BrokenIdentity, "calls", 0)
    monkeypatch.setattr(runner_fakes.KeptLabelTask, "calls", 0)
    plain_calls = []
    original = runner_fakes.WordMatch.score

    def counted(self, items, *, seed=0):
        plain_calls.append(1)
        return original(self, items, seed=seed)

    monkeypatch.setattr(runner_fakes.WordMatch, "score", counted)
    return plain_calls


def run(tmp_path, name, metrics=("kept-word-match",), listener=None, tasks=(), seeds=(0,)):
    config = from_table({**runner_fakes.FAKE_PRESET, "metrics": list(metrics), "tasks": list(tasks),
                         "seeds": list(seeds)}, name="fake", source="fake.toml")
    return run_experiment(build_plan(config), listener, output_path=tmp_path / name, cache_path=tmp_path / "cache.sqlite").to_dict()


def same(a, b):
    return strip_timings(a) | {"run_id": 0} == strip_timings(b) | {"run_id": 0}


@pytest.mark.slow
def test_a_second_run_scores_nothing_again_and_reports_the_same(tmp_path):
    first = run(tmp_path, "a")
    scored = runner_fakes.KeptWordMatch.calls
    assert scored > 0
    events = []
    second = run(tmp_path, "b", listener=events.append)
    assert runner_fakes.KeptWordMatch.calls == scored  # not called again
    assert same(first, second)
    assert any(isinstance(e, Message) and f"metrics: {scored} of {scored} results came from the run cache" in e.text
               for e in events)


def test_a_metric_that_names_no_identity_is_scored_every_time(tmp_path, fakes):
    run(tmp_path, "a", metrics=("word-match",))
    once = len(fakes)
    run(tmp_path, "b", metrics=("word-match",))
    assert once > 0 and len(fakes) == 2 * once


@pytest.mark.parametrize("change", ["scoring model", "library", "metric code"])
def test_what_decides_a_score_scores_it_again(tmp_path, monkeypatch, change):
    first = run(tmp_path, "a")
    scored = runner_fakes.KeptWordMatch.calls
    if change == "scoring model":
        monkeypatch.setattr(runner_fakes.KeptWordMatch, "identity", "other weights")
    elif change == "library":
        import mlmh.implementation

        versions = mlmh.implementation.library_versions()
        monkeypatch.setattr(mlmh.implementation, "library_versions", lambda: (*versions, ("numpy-next", "3.0")))
    else:
        import mlmh.implementation

        real = mlmh.implementation.implementation_id
        monkeypatch.setattr(mlmh.implementation, "implementation_id", lambda c: real(c) + "-edited")
    second = run(tmp_path, "b")
    assert runner_fakes.KeptWordMatch.calls == 2 * scored
    # the fakes score the same; what matters is that they were asked
    assert strip_timings(first["conditions"]) == strip_timings(second["conditions"])


def test_changed_samples_are_scored_again(tmp_path):
    run(tmp_path, "a")
    scored = runner_fakes.KeptWordMatch.calls
    run(tmp_path, "b", seeds=(1,))
    assert runner_fakes.KeptWordMatch.calls == 2 * scored


def test_a_second_run_trains_no_task_again(tmp_path):
    first = run(tmp_path, "a", tasks=("kept-label-task",))
    trained = runner_fakes.KeptLabelTask.calls
    # every synthetic corpus instead of and added to the real documents, and the real train split
    assert trained == 2 * len(first["conditions"]) + 1
    events = []
    second = run(tmp_path, "b", tasks=("kept-label-task",), listener=events.append)
    assert runner_fakes.KeptLabelTask.calls == trained and same(first, second)
    assert any(isinstance(e, Message) and f"downstream: {trained} of {trained} results came from the run cache"
               in e.text for e in events)
    run(tmp_path, "c", tasks=("kept-label-task",), seeds=(1,))  # other samples, other synthetic corpora
    assert runner_fakes.KeptLabelTask.calls == 2 * trained


def test_a_task_that_names_no_identity_is_trained_every_time(tmp_path, monkeypatch):
    runs = []
    original = runner_fakes.LabelTask.run
    monkeypatch.setattr(runner_fakes.LabelTask, "run", lambda self, *a, **k: runs.append(1) or original(self, *a, **k))
    run(tmp_path, "a", tasks=("label-task",))
    once = len(runs)
    run(tmp_path, "b", tasks=("label-task",))
    assert once > 0 and len(runs) == 2 * once


def test_results_with_an_error_are_not_kept(tmp_path):
    run(tmp_path, "a", metrics=("always-fails", "kept-word-match"))
    failed = runner_fakes.AlwaysFails.calls
    run(tmp_path, "b", metrics=("always-fails", "kept-word-match"))
    assert failed > 0 and runner_fakes.AlwaysFails.calls == 2 * failed


def test_a_failing_cache_identity_is_reported_by_name_and_the_metric_still_scores(tmp_path):
    first = run(tmp_path, "a", metrics=("broken-identity", "kept-word-match"))
    calls = runner_fakes.BrokenIdentity.calls
    run(tmp_path, "b", metrics=("broken-identity", "kept-word-match"))
    assert calls > 0 and runner_fakes.BrokenIdentity.calls == 2 * calls
    assert [e["component"] for e in first["errors"]] == ["metric 'broken-identity' (plugin runner-fakes)"]
    assert "identity file unreadable" in first["errors"][0]["error"]
    assert all(c["metrics"]["broken-identity"]["value"] is not None for c in first["conditions"])


def generation(**changes):
    base = dict(doc_id="d1", model="m", model_kind="mlm", sampler="s", masking="random", seed=7,
                original="The cat sat.", masked_text="The [MASK] sat.", text="The dog sat.", masked_words=[1],
                output_words={1: "dog"}, steps=[Step(tokens=["the", "dog"], changed=[1], confidences={1: 0.5}, masked=[])])
    return Generation(**{**base, **changes})


def test_the_content_digest_covers_prediction_reference_and_the_whole_generation():
    def digest(prediction="The dog sat.", reference="The cat sat.", gen=None):
        return content_digest([ScoringItem(prediction, reference, gen if gen is not None else generation())])

    base = digest()
    assert digest() == base
    assert digest(prediction="The dog sat!") != base
    assert digest(reference="The cow sat.") != base
    other_trace = generation(steps=[Step(tokens=["the", "dog"], changed=[1], confidences={1: 0.25}, masked=[])])
    assert digest(gen=other_trace) != base  # stutter reads the traces
    assert content_digest([ScoringItem("a", "b")]) != content_digest([ScoringItem("a", "b"), ScoringItem("a", "b")])


@pytest.mark.parametrize("field, value", [
    ("kind", "task"), ("spec", "bleu:tokenize=intl"), ("code", "mlmh==0.1+abd"),
    ("libraries", (("sacrebleu", "2.6.1"),)), ("inputs", "roberta-large@main#1234"), ("seed", 1), ("content", "d2"),
])
def test_the_result_key_changes_with_every_ingredient(field, value):
    assert result_key(**KEY) == result_key(**KEY)
    assert result_key(**{**KEY, field: value}) != result_key(**KEY)


def test_stored_results_come_back_equal(tmp_path):
    result = MetricResult(name="bleu", value=12.5, higher_is_better=True, per_sample=[1.0, None, float("nan")],
                          ci_low=10.0, ci_high=15.0, info={"signature": "nrefs:1|case:mixed", "n": 2})
    SampleCache(tmp_path / "c.sqlite").put_results("k", [result])
    cache = SampleCache(tmp_path / "c.sqlite")
    (again,) = cache.get_results("k", MetricResult)
    assert cache.get_results("missing", MetricResult) is None
    assert again.per_sample[:2] == [1.0, None] and math.isnan(again.per_sample[2])
    assert (again.name, again.value, again.ci_low, again.ci_high, again.info) == ("bleu", 12.5, 10.0, 15.0, result.info)


# -- what the builtins say their scores depend on -------------------------------------------------


@pytest.mark.parametrize("kind, spec", [
    *(("metric", m) for m in ("bleu", "rouge", "stutter", "seq-rep-n", "distinct-n", "self-bleu", "novelty")),
    *(("task", t) for t in ("authorship-verification", "text-classification", "ner")),
])
def test_builtins_of_their_inputs_alone_are_cacheable(kind, spec):
    assert get_registry().build(kind, spec).cache_identity() == ""


def model_dir(root: Path) -> Path:
    root.mkdir()
    for name, text in (("config.json", "{}"), ("vocab.txt", "a\nb\n"), ("model.safetensors", "weights")):
        (root / name).write_text(text, encoding="utf-8")
    return root


def test_bertscore_names_its_model_files_and_layer(tmp_path):
    path = model_dir(tmp_path / "encoder")
    metric = get_registry().build("metric", f"bertscore:model={path},layer=2")
    first = metric.cache_identity()
    assert first and str(path.resolve()) in first and first.endswith("|layer=2")
    assert get_registry().build("metric", f"bertscore:model={path},layer=3").cache_identity() != first
    (path / "vocab.txt").write_text("a\nb\nc\n", encoding="utf-8")  # the tokenizer decides a score too
    assert metric.cache_identity() != first


def test_bertscore_default_names_the_model_it_resolves():
    from mlmh_builtins.metrics_bertscore import default_model, minilm_path

    metric = get_registry().build("metric", "bertscore")
    if minilm_path() is None:
        pytest.skip("no offline BERTScore model here")
    model, layer, _ = default_model()
    assert model in metric.cache_identity() and metric.cache_identity().endswith(f"|layer={layer}")


def test_gen_ppl_names_the_model_its_environment_gives(tmp_path, monkeypatch):
    path = model_dir(tmp_path / "lm")
    metric = get_registry().build("metric", "gen-ppl")
    monkeypatch.delenv("MLMH_GENPPL_MODEL", raising=False)
    assert metric.cache_identity() is None  # no model: never cached
    monkeypatch.setenv("MLMH_GENPPL_MODEL", os.fspath(path))
    assert str(path.resolve()) in metric.cache_identity()


def test_meteor_names_the_wordnet_it_reads(monkeypatch, tmp_path):
    import mlmh.data.wordnet

    metric = get_registry().build("metric", "meteor")
    monkeypatch.setattr(mlmh.data.wordnet, "find_wordnet", lambda: None)
    assert metric.cache_identity() is None
    corpus = model_dir(tmp_path / "wordnet")
    monkeypatch.setattr(mlmh.data.wordnet, "find_wordnet", lambda: str(corpus))
    first = metric.cache_identity()
    (corpus / "vocab.txt").write_text("changed", encoding="utf-8")
    assert first.startswith("wordnet:") and metric.cache_identity() != first


def test_a_hub_model_that_is_not_cached_names_nothing():
    from mlmh.adapters import model_files_identity

    assert model_files_identity("no-such-org/no-such-model-here") is None
