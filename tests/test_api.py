"""The Python API (mlmh.api): its docstring examples run; ``mlmh.evaluate`` returns what ``mlmh eval`` writes
for the same configuration (timings aside); the commands go through it; ``import mlmh`` stays light."""

from __future__ import annotations

import doctest
import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

import mlmh
from mlmh import api
from mlmh.cli import cli
from mlmh.errors import SpecError
from mlmh.run.results import strip_timings
from mlmh.types import RunResults

#: one small grid for both faces: the quick preset with models trained for three steps, one masking, two
#: documents per condition, no downstream task
MODELS = ["trained-mlm:size=tiny,max_steps=3", "trained-clm:size=tiny,max_steps=3"]
MASKING = "random:ratio=0.3"
LIMIT = 2


@pytest.mark.slow
def test_the_docstring_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    tests = [t for t in finder.find(api) if t.examples]
    assert {t.name.rsplit(".", 1)[1] for t in tests} == {"evaluate", "generate", "generate_from_dataset", "compare"}
    for test in tests:
        runner.run(test)
    summary = runner.summarize(verbose=False)
    assert summary.failed == 0 and summary.attempted >= 10, summary


@pytest.mark.slow
def test_evaluate_returns_what_the_command_writes(tmp_path, monkeypatch):
    """The same configuration from Python and from the command line: equal results, timings aside (both in
    a directory named ``run``, so the run ids match; both without the shared cache, so both generate)."""
    monkeypatch.chdir(tmp_path)
    cli_out, api_out = tmp_path / "cli" / "run", tmp_path / "api" / "run"
    args = ["eval", "--preset", "quick", "--model", ",".join(MODELS), "--masking", MASKING, "--limit", str(LIMIT),
            "--task", "none", "--no-cache", "--output-path", str(cli_out)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, (result.output, result.exception)
    events = []
    results = mlmh.evaluate("quick", models=MODELS, maskings=MASKING, limit=LIMIT, tasks=[], use_cache=False,
                            output_path=api_out, progress=events.append)
    assert isinstance(results, RunResults)
    written = json.loads((cli_out / "results.json").read_text(encoding="utf-8"))
    returned = json.loads(json.dumps(results.to_dict(), default=str))
    assert strip_timings(returned) == strip_timings(written)
    assert returned["conditions"] and returned["timings"]  # there was something to compare
    assert json.loads((api_out / "results.json").read_text(encoding="utf-8")) == returned  # written as it was returned
    kinds = [event.kind for event in events]
    assert kinds[0] == "run_started" and kinds[-1] == "run_finished" and "sample_generated" in kinds
    assert events[-1].results is results


def test_the_commands_go_through_the_api(monkeypatch, tmp_path):
    """``mlmh eval`` runs through mlmh.api.run and ``mlmh generate`` through mlmh.api's regeneration."""
    calls = []

    def fake_run(prepared, **kwargs):
        calls.append(("run", prepared.plan.config.preset, prepared.out, prepared.use_cache))
        raise SpecError("stopped in mlmh.api.run")

    monkeypatch.setattr(api, "run", fake_run)
    result = CliRunner().invoke(cli, ["eval", "--preset", "quick", "--no-cache", "--output-path", str(tmp_path / "r")])
    assert str(result.exception) == "stopped in mlmh.api.run"
    assert calls == [("run", "quick", tmp_path / "r", False)]

    def fake_regenerate(components, documents, **kwargs):
        calls.append(("regenerate", [d.text for d in documents], kwargs["seed"]))
        raise SpecError("stopped in mlmh.api._load_and_regenerate")

    monkeypatch.setattr(api, "_load_and_regenerate", fake_regenerate)
    result = CliRunner().invoke(cli, ["generate", "--model", "trained-mlm", "--text", "a b c d", "--seed", "3"])
    assert str(result.exception) == "stopped in mlmh.api._load_and_regenerate"
    assert calls[-1] == ("regenerate", ["a b c d"], 3)


def test_evaluate_checks_its_keys_before_running(tmp_path):
    with pytest.raises(SpecError, match="unknown override 'modles'.*did you mean 'models'"):
        mlmh.evaluate("quick", modles=["trained-mlm"], output_path=tmp_path / "x")
    with pytest.raises(SpecError, match="unknown masking 'nope'"):
        mlmh.evaluate("quick", maskings=["nope"], output_path=tmp_path / "x")
    with pytest.raises(SpecError, match="drop limit"):
        mlmh.evaluate(None, resume=True, output_path=tmp_path / "x", limit=3)
    with pytest.raises(SpecError, match="pass --preset NAME"):
        mlmh.evaluate(None)
    assert not (tmp_path / "x").exists()


def test_generate_checks_its_specs_before_loading_anything():
    with pytest.raises(SpecError, match="--model nope"):
        mlmh.generate("a text", model="nope")
    with pytest.raises(SpecError, match="clm-infill"):
        mlmh.generate("a text", model="trained-mlm", sampler="clm-infill")
    with pytest.raises(SpecError, match="sampler 'one-shot' works with mlm models, not a clm model"):
        mlmh.generate_from_dataset("no-such-dataset", model="trained-clm", sampler="one-shot")


def test_mlmh_exports_the_api_lazily():
    assert mlmh.evaluate is api.evaluate and mlmh.generate is api.generate
    assert mlmh.generate_from_dataset is api.generate_from_dataset and mlmh.load is api.load
    assert set(mlmh.API) <= set(mlmh.__all__)
    with pytest.raises(AttributeError, match="no attribute 'evaluat'"):
        mlmh.evaluat  # noqa: B018
    code = "import sys, mlmh; print(sorted(m for m in ('mlmh.api', 'torch', 'mlmh.run.runner') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
