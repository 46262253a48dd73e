"""Plugin faults are contained everywhere (issue 31, item 3): a model, masking, sampler, metric or task
that raises, or returns what breaks its contract (NaN, infinities, fewer per-sample values than items,
generations for other documents), is reported by name and plugin, the conditions it leaves without
results are marked failed, and the rest of the run completes, in this process and in worker
processes; in ``mlmh score`` the other metrics keep their results; results.json is strict JSON."""

from __future__ import annotations

import json
import math

import pytest

import fault_fakes
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.errors import MlmhError
from mlmh.plugins.contracts import finite_only, metric_problem, score_metric, strict_json
from mlmh.run.runner import run_experiment
from mlmh.types import MetricResult


@pytest.fixture(autouse=True)
def fakes():
    fault_fakes.install()


def _run(tmp_path, fault, monkeypatch, executor=None, **preset):
    monkeypatch.setenv("MLMH_TEST_FAULT", fault)
    config = from_table({**fault_fakes.PRESET, **preset}, name="faults", source="faults.toml")
    out = tmp_path / "run"
    run_experiment(build_plan(config), output_path=out, cache_path=tmp_path / "cache.sqlite", executor=executor)
    text = (out / "results.json").read_text(encoding="utf-8")
    return json.loads(text, parse_constant=lambda name: pytest.fail(f"results.json holds {name}"))


def _named(results, component):
    """The errors entries of ``component`` ("sampler 'faulty-fill'"), checked to name the plugin."""
    entries = [e for e in results["errors"] if e["component"].startswith(component)]
    assert entries, results["errors"]
    assert all(e["component"] == f"{component} (plugin fault-fakes)" for e in entries), entries
    return entries


#: kind -> (the component that fails, the error it reports, the conditions it leaves without results)
CONDITION_FAULTS = {
    "model": ("model 'faulty-mlm'", "AssertionError: Torch not compiled with CUDA enabled", "faulty-mlm"),
    "masking": ("masking 'faulty-masking'", "IndexError: list index out of range", "faulty-masking"),
    "sampler": ("sampler 'faulty-fill'", "KeyError: 'logits'", "faulty-fill"),
    "sampler-output": ("sampler 'faulty-fill'", "sampler 'faulty-fill' returned 1 generations for 2",
                       "faulty-fill"),
}


@pytest.mark.parametrize("fault", list(CONDITION_FAULTS))
def test_a_failing_component_fails_its_conditions_and_the_rest_completes(tmp_path, monkeypatch, fault):
    component, error, marker = CONDITION_FAULTS[fault]
    results = _run(tmp_path, fault, monkeypatch)
    entry = _named(results, component)[0]
    assert entry["error"].startswith(error)
    rows = results["conditions"]
    failed = [r for r in rows if r.get("failed")]
    assert failed and all(marker in r["id"] for r in failed)
    assert all(component in r["failed"] and error.split(":")[0] in r["failed"] for r in failed)
    done = [r for r in rows if not r.get("failed")]
    assert done and all(r["metrics"]["word-match"]["value"] is not None for r in done)
    assert all(r["downstream"].get("label-task") for r in done)


@pytest.mark.slow
def test_a_sampler_fault_is_contained_in_worker_processes(tmp_path, monkeypatch):
    from mlmh.run.executors import LocalWorkersExecutor

    monkeypatch.setenv("MLMH_TEST_FAULT", "sampler")
    config = from_table(dict(fault_fakes.PRESET), name="faults", source="faults.toml")
    with LocalWorkersExecutor(build_plan(config), 2) as executor:
        results = _run(tmp_path, "sampler", monkeypatch, executor=executor)
    assert _named(results, "sampler 'faulty-fill'")[0]["error"] == "KeyError: 'logits'"
    assert {r["id"] for r in results["conditions"] if r.get("failed")} == {
        r["id"] for r in results["conditions"] if "faulty-fill" in r["id"]}


@pytest.mark.parametrize("fault, error", [
    ("metric", "ZeroDivisionError: division by zero"),
    ("metric-nan", "ContractError: result 'faulty-metric' has value = nan (not a finite number)"),
    ("metric-short", "ContractError: result 'faulty-metric' has 3 per-sample values for 4 items"),
])
def test_a_failing_metric_is_an_error_result_and_the_others_score(tmp_path, monkeypatch, fault, error):
    results = _run(tmp_path, fault, monkeypatch)
    entries = _named(results, "metric 'faulty-metric'")
    assert any(e["error"].startswith(error.split(" for ")[0]) for e in entries), entries
    for row in results["conditions"]:
        assert row["metrics"]["faulty-metric"]["value"] is None and row["metrics"]["faulty-metric"]["error"]
        assert row["metrics"]["word-match"]["value"] is not None


@pytest.mark.parametrize("fault, error", [
    ("task", "ValueError: could not convert string to float"),
    ("task-nan", "ContractError: score(s) accuracy = inf are not finite numbers"),
])
def test_a_failing_task_is_named_and_the_other_task_runs(tmp_path, monkeypatch, fault, error):
    results = _run(tmp_path, fault, monkeypatch)
    assert _named(results, "task 'faulty-task'")[0]["error"] == error
    assert results["baseline"]["label-task"] and not results["baseline"]["faulty-task"]
    assert all(row["downstream"]["label-task"] for row in results["conditions"])


def test_a_failing_dataset_stops_the_run_naming_it_and_its_plugin(tmp_path, monkeypatch):
    with pytest.raises(MlmhError) as info:
        _run(tmp_path, "dataset", monkeypatch)
    assert str(info.value).startswith("dataset 'faulty-data' (plugin fault-fakes) failed to load its bundled sample: "
                                      "KeyError: 'split'")


def test_when_every_condition_fails_the_run_stops_with_the_errors(tmp_path, monkeypatch):
    with pytest.raises(MlmhError, match=r"^every condition failed: model 'faulty-mlm' \(plugin fault-fakes\) "
                                        r"\(loading\): AssertionError"):
        _run(tmp_path, "model", monkeypatch, models=["faulty-mlm"], samplers=["faulty-fill"])


# -- mlmh score ------------------------------------------------------------------------------------
def _score(tmp_path, specs, *extra, failed=()):
    from click.testing import CliRunner

    from mlmh.cli import cli

    pred, ref = tmp_path / "p.txt", tmp_path / "r.txt"
    pred.write_text("a b c\nd e f\ng h i\n")
    ref.write_text("a b x\nd e f\ng x i\n")
    out = CliRunner().invoke(cli, ["score", "-m", specs, "--pred", str(pred), "--ref", str(ref), "--json", *extra])
    assert out.exit_code == (1 if failed else 0), out.output  # a failed metric fails the command (issue 41)
    if failed:
        assert f"metric(s) failed: {', '.join(failed)}" in str(out.exception)
    data = json.loads(out.stdout, parse_constant=lambda name: pytest.fail(f"score --json printed {name}"))
    return {r["name"]: r for r in data["results"]}


@pytest.mark.parametrize("fault", ["metric", "metric-nan", "metric-short"])
def test_score_keeps_the_other_metrics_when_one_fails(tmp_path, monkeypatch, fault):
    monkeypatch.setenv("MLMH_TEST_FAULT", fault)
    by_name = _score(tmp_path, "faulty-metric,bleu,rouge", "--workers", "1", failed=["faulty-metric"])
    assert by_name["faulty-metric"]["value"] is None and by_name["faulty-metric"]["error"]
    assert by_name["bleu"]["value"] is not None and by_name["rougeL"]["value"] is not None


def test_score_exits_non_zero_when_every_requested_metric_failed(tmp_path, monkeypatch):
    monkeypatch.setenv("MLMH_TEST_FAULT", "metric")
    by_name = _score(tmp_path, "faulty-metric", failed=["faulty-metric"])
    assert by_name["faulty-metric"]["value"] is None


@pytest.mark.parametrize("workers", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_score_keeps_the_other_metrics_in_worker_processes_too(tmp_path, workers):
    """A builtin metric that cannot load its model (a gen-ppl path that does not exist), in this process
    or a worker: its error names the path, the other metrics keep their results."""
    missing = tmp_path / "no-such-model"
    by_name = _score(tmp_path, f"gen-ppl:path={missing},bleu,rouge", "--workers", workers, failed=["gen-ppl"])
    assert by_name["gen-ppl"]["value"] is None and str(missing) in by_name["gen-ppl"]["error"]
    assert "does not exist" in by_name["gen-ppl"]["error"] and "Repo id" not in by_name["gen-ppl"]["error"]
    assert by_name["bleu"]["value"] is not None and by_name["rougeL"]["value"] is not None


# -- the contract rules ----------------------------------------------------------------------------
def test_metric_contract_rules():
    ok = MetricResult(name="m", value=0.5, higher_is_better=True, per_sample=[0.5, None], ci_low=0.1, ci_high=0.9)
    assert metric_problem(ok, 2) is None
    assert "per-sample" in metric_problem(ok, 3)
    for field, bad in (("value", math.nan), ("ci_low", -math.inf), ("ci_high", math.inf)):
        broken = MetricResult(**{**ok.__dict__, field: bad})
        assert field in metric_problem(broken, 2)
    assert "per-sample value nan" in metric_problem(MetricResult(**{**ok.__dict__, "per_sample": [math.nan, 1.0]}), 2)
    assert metric_problem(MetricResult(name="m", value=None, higher_is_better=True, error="no model"), 5) is None
    assert "not a MetricResult" in metric_problem({"value": 1}, 1)


def test_score_metric_turns_a_wrong_return_type_into_the_metrics_error():
    class Odd:
        name, higher_is_better = "odd", True

        def score(self, items, *, seed=0):
            return {"odd": 1.0}

    [result] = score_metric(Odd(), [object()], seed=0)
    assert result.name == "odd" and result.value is None and result.error.startswith("ContractError: returned dict")


def test_results_are_written_as_strict_json():
    with pytest.raises(ValueError):
        strict_json({"v": math.nan})
    data, where = finite_only({"a": [1.0, math.inf], "b": {"c": math.nan}, "d": "nan"})
    assert data == {"a": [1.0, None], "b": {"c": None}, "d": "nan"} and where == ["a[1]", "b.c"]
    assert json.loads(strict_json(data)) == data


def test_typed_results_are_cleaned_where_their_json_would_be():
    """The runner cleans its typed results in place of their JSON: the same nulls, named by the same keys
    (a Score's extra and a version's libraries sit in their owner's object), the values it was given untouched."""
    from mlmh.types import (ConditionResult, ConfigRecord, Correlation, ModelRecord, RoleQuality, RunResults, Score,
                            Versions)

    unseen = RoleQuality(documents=2, scored=2, metrics={"bleu": Score(math.nan, 1.0, 2.0)},
                         verbatim_recall=Score(0.5, extra={"matched": math.inf}))
    row = ConditionResult(id="c", model="m", model_kind="mlm", masking="k", sampler="s", seed=0, unseen=unseen,
                          gap={"bleu": Score(1.0, extra={"significant": None, "spread": -math.inf})},
                          downstream={"ner": {"f1": math.nan}})
    results = RunResults(run_id="r", config=ConfigRecord(extra={"limit": math.inf}), conditions=[row], versions=Versions({"odd": math.nan}),
                         correlations=[Correlation(metric="bleu", spearman_ci=[math.nan, 0.5])],
                         models={"m": ModelRecord(identity="m", training={"validation_loss": math.inf}, extra={"x": math.nan})},
                         baseline={"ner": {"f1": 0.5}})
    cleaned, where = finite_only(results)
    assert where == finite_only(results.to_dict())[1] and len(where) == 9
    assert "conditions[0].gap.bleu.spread" in where and "versions.odd" in where and "models.m.x" in where
    assert cleaned.to_dict() == finite_only(results.to_dict())[0]
    assert math.isnan(results.conditions[0].unseen.metrics["bleu"].value)  # what was given stays as it was
    assert finite_only(cleaned) == (cleaned, [])


def test_a_value_a_metric_says_it_cannot_give_is_a_note_not_a_failure(tmp_path):
    """stutter without a tokenizer reports its sub-word rate as not computable; the metric itself ran,
    so ``mlmh score`` exits 0 (only a metric that failed as a whole fails the command)."""
    by_name = _score(tmp_path, "stutter,bleu")
    assert by_name["stutter_subword"]["error"] and by_name["stutter_word"]["value"] is not None
