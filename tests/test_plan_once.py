"""Every path of a run builds its plan once (:func:`mlmh.config.plan.build_plan`) and runs the plan it built:
``mlmh eval`` and ``mlmh.evaluate``, a sweep, Ray, and ``mlmh tui --preset``; ``run_experiment`` takes a plan
only, and ``mlmh.api.run`` only the run ``mlmh.api.prepare`` made of one."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli
from test_tui_run import wait_until

import mlmh
import runner_fakes
from mlmh import api
from mlmh.config import plan as plan_module
from mlmh.config.presets import from_table
from mlmh.errors import SpecError
from mlmh.run import runner
from mlmh.run.runner import run_experiment

SMALL = {**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill", "fake-clm-fill"],
         "tasks": [], "limit": 3}
STOPPED = "stopped where the run starts"


@pytest.fixture
def fake_preset(tmp_path, monkeypatch):
    """A preset file of the runner's fakes (a second-long run); runs without a path land under tmp_path."""
    runner_fakes.install()
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "fake.toml"
    path.write_text("".join(f"{key} = {json.dumps(value)}\n" for key, value in SMALL.items()), encoding="utf-8")
    return str(path)


@pytest.fixture
def builds(monkeypatch):
    """Every plan built in this process, in order."""
    built = []
    real = plan_module.build_plan

    def counted(config):
        built.append(real(config))
        return built[-1]

    monkeypatch.setattr(plan_module, "build_plan", counted)
    return built


@pytest.fixture
def ran(monkeypatch):
    """The plans handed to run_experiment, which stops there: what the stages do is not these tests' concern."""
    got = []

    def stopped(plan, *args, **kwargs):
        got.append(plan)
        raise SpecError(STOPPED)

    monkeypatch.setattr(runner, "run_experiment", stopped)
    return got


@pytest.mark.parametrize("face", ["cli", "api"])
def test_a_run_builds_its_plan_once(face, fake_preset, builds, tmp_path, capsys):
    out = tmp_path / "run"
    if face == "cli":
        code, _, err = run_cli(capsys, "eval", "--preset", fake_preset, "--output-path", str(out))
        assert code == 0, err
    else:
        mlmh.evaluate(fake_preset, output_path=out)
    assert len(builds) == 1
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["conditions"]


def test_a_sweep_builds_the_expanded_plan_only(builds, ran, tmp_path, capsys):
    """The preset's own models are checked before the sweep expands them, without a plan of their own."""
    code, _, err = run_cli(capsys, "eval", "--preset", "crossover", "--sweep-epochs", "1,4", "--sweep-tokens", "8000",
                           "--output-path", str(tmp_path / "run"))
    assert code == 2 and STOPPED in err
    assert len(builds) == 1 and ran == builds
    assert sorted((m.name, m.params["epochs"], m.params["unique_tokens"]) for m in builds[0].models) == [
        ("trained-clm", 1.0, 8000), ("trained-clm", 4.0, 8000), ("trained-mlm", 1.0, 8000), ("trained-mlm", 4.0, 8000)]
    with pytest.raises(SpecError, match="^--model: model 'trained-mlm': parameter 'size'"):  # named as given
        api.plan("crossover", {"models": ["trained-mlm:size=huge"]}, sweep_epochs="1,2")
    assert len(builds) == 1


@pytest.mark.slow
def test_a_ray_run_builds_its_plan_once_in_the_driver(fake_preset, builds, ran, tmp_path, capsys):
    """RayExecutor takes the driver's plan (its GPU models) rather than building one more; Ray's workers
    build theirs in their own processes."""
    pytest.importorskip("ray")
    code, _, err = run_cli(capsys, "eval", "--preset", fake_preset, "--backend", "ray", "--workers", "2",
                           "--output-path", str(tmp_path / "run"))
    assert code == 2 and STOPPED in err
    assert len(builds) == 1 and ran == builds


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_mlmh_tui_runs_the_plan_it_checked(fake_preset, builds, ran, monkeypatch, capsys):
    """``mlmh tui --preset`` checks the preset by building its plan, and the run screen's start runs that
    plan; a second start plans again (a plan is run once)."""
    apps = []
    monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", lambda self: apps.append(self))
    code, _, err = run_cli(capsys, "tui", "--preset", fake_preset)
    assert code == 0, err
    assert len(builds) == 1 and builds[0].config.log_samples  # the TUI's overrides
    app = apps[0]
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: ran and not screen.running, 30, "the first run")
        assert ran == builds
        await pilot.press("ctrl+r")
        await wait_until(pilot, lambda: len(ran) == 2 and not screen.running, 30, "the second run")
    assert len(builds) == 2 and ran == builds


def test_run_experiment_takes_only_a_plan_and_api_run_only_a_prepared_run(fake_preset, tmp_path):
    config = from_table(SMALL, name="fake", source="fake.toml")
    with pytest.raises(SpecError, match=r"^run_experiment runs a plan, not a RunConfig: pass "
                                        r"mlmh\.config\.plan\.build_plan\(config\)$"):
        run_experiment(config, output_path=tmp_path / "run")
    for given in (config, plan_module.build_plan(config)):
        with pytest.raises(SpecError, match=r"^prepared .*: expected a prepared run \(mlmh\.api\.prepare\), not a "
                                            + type(given).__name__):
            api.run(given)
    assert not (tmp_path / "run").exists()
