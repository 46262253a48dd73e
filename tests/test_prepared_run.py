"""A run is prepared, then run, on every face: ``mlmh eval``, ``mlmh.evaluate`` and the TUI (its run screen, and
``mlmh tui --preset``) call ``mlmh.api.prepare`` and then ``mlmh.api.run`` with what it returned, and nothing else
composes a run. Every check is in ``prepare``, so a missing checkpoint is refused before any folder is made, on
every face."""

from __future__ import annotations

import pytest
from cli_helpers import run_cli
from test_plan_once import fake_preset  # noqa: F401  # the fixture: a second-long preset of the runner's fakes
from test_tui_run import wait_until

import mlmh
from mlmh import api
from mlmh.errors import SpecError
from mlmh.tui import create_app
from mlmh.tui.screens.run import RunScreen

STOPPED = "stopped in the swapped mlmh.api.run"
#: the hub checkpoints of the paper-hub preset, none cached in the tests' offline hub
HUB_CHECKPOINTS = ("bert-base-uncased", "roberta-base", "gpt2", "facebook/bart-base")


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def swapped(monkeypatch):
    """mlmh.api.prepare and mlmh.api.run swapped for recorders: prepare still prepares (its result is what run
    must be handed), run stops with STOPPED instead of running."""
    calls: list[tuple] = []
    real_prepare = api.prepare

    def prepare(preset, overrides=None, **kwargs):
        prepared = real_prepare(preset, overrides, **kwargs)
        calls.append(("prepare", {k: v for k, v in (overrides or {}).items() if v is not None}, kwargs, prepared))
        return prepared

    def run(prepared, *, progress=None, cancel=None):
        calls.append(("run", prepared, progress is not None, cancel is not None))
        raise SpecError(STOPPED)

    monkeypatch.setattr(api, "prepare", prepare)
    monkeypatch.setattr(api, "run", run)
    monkeypatch.setattr("mlmh.run.runner.run_experiment", lambda *a, **k: pytest.fail("a face ran past mlmh.api.run"))
    return calls


@pytest.mark.parametrize("face", ["eval", "evaluate"])
def test_mlmh_eval_and_evaluate_prepare_then_run(face, fake_preset, swapped, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "run"
    if face == "eval":
        code, _, err = run_cli(capsys, "eval", "--preset", fake_preset, "--limit", "2", "--no-cache",
                               "--output-path", str(out))
        assert code == 2 and STOPPED in err
    else:
        with pytest.raises(SpecError, match=STOPPED):
            mlmh.evaluate(fake_preset, limit=2, use_cache=False, output_path=out)
    (_, overrides, kwargs, prepared), (name, ran, listened, _) = swapped
    assert overrides == {"limit": 2} and kwargs["use_cache"] is False and kwargs["output_path"] in (out, str(out))
    assert name == "run" and ran is prepared and listened == (face == "eval")  # the command's progress bars
    assert prepared.out == out and prepared.plan.config.limit == 2 and not prepared.use_cache
    assert not out.exists()


@pytest.mark.anyio
@pytest.mark.parametrize("started_by", ["screen", "command"])
async def test_the_tui_prepares_then_runs(started_by, fake_preset, swapped, monkeypatch, capsys):  # noqa: F811
    """The run screen's start (or ``mlmh tui --preset``, whose prepared run the first start runs) prepares with the
    TUI's overrides and runs what it prepared, with its listener and a cancel event."""
    if started_by == "command":
        apps = []
        monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", lambda self: apps.append(self))
        code, _, err = run_cli(capsys, "tui", "--preset", fake_preset)
        assert code == 0, err
        app = apps[0]
        assert len(swapped) == 1 and app.options.prepared is swapped[0][3]  # prepared before the screen opens
    else:
        app = create_app(preset=fake_preset)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: swapped and swapped[-1][0] == "run" and not screen.running, 30, "the run")
        assert "failed: " + STOPPED in str(screen.query_one("#run-status").render())
    (name, overrides, kwargs, prepared), ran = swapped
    assert name == "prepare" and overrides == {"log_samples": True} and kwargs == {}
    assert ran == ("run", prepared, True, True)


# -- a missing checkpoint, on every face ----------------------------------------------------------------------
@pytest.mark.anyio
@pytest.mark.parametrize("face", ["eval", "evaluate", "tui", "tui-screen"])
async def test_a_missing_checkpoint_is_refused_before_any_folder_on_every_face(face, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("mlmh.run.runner.run_experiment", lambda *a, **k: pytest.fail("the run started"))
    if face == "evaluate":
        with pytest.raises(SpecError) as info:
            mlmh.evaluate("paper-hub")
        said = str(info.value)
    elif face == "tui-screen":  # a start on the screen, not through the command
        notices: list[str] = []
        monkeypatch.setattr(RunScreen, "notify", lambda self, message, **kwargs: notices.append(str(message)))
        app = create_app(preset="paper-hub")
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_until(pilot, lambda: bool(notices), 60, "the refusal")
            assert len(notices) == 1 and not app.screen.running
        said = notices[0]
    else:
        monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", lambda self: pytest.fail("the app opened"))
        code, _, err = run_cli(capsys, face, "--preset", "paper-hub")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        said = err
    assert "the hub is offline and these checkpoints are not cached" in said
    assert all(name in said for name in HUB_CHECKPOINTS), said
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no runs/, no models/, nothing
