"""Run screen driven with Pilot: a preset run on tiny models with per-stage progress and a live sample
feed, opening its results, and cancelling a run."""

from __future__ import annotations

import time

import pytest

from mlmh.events import Progress, StageFinished, StageStarted
from mlmh.tui import create_app
from mlmh.tui.screens.results import ResultsScreen
from mlmh.tui.screens.run import RunScreen
from mlmh.tui.widgets.progress_panel import ProgressPanel, StageRow
from mlmh.tui.widgets.results_table import ResultsTable

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def preset(tmp_path, tiny_mlm, tiny_clm, monkeypatch):
    """A two-document preset on the tiny models; runs land under tmp_path/runs."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "tiny.toml"
    path.write_text(
        f'''dataset = "pan"
models = ["hf-mlm:path={tiny_mlm}", "hf-clm:path={tiny_clm}"]
maskings = ["random:ratio=0.3"]
samplers = ["mask-predict:steps=2", "clm-infill"]
metrics = ["bleu"]
limit = 1
''', encoding="utf-8")
    return str(path)


async def wait_until(pilot, condition, timeout: float = 120.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if condition():
            return
    raise AssertionError(f"timed out waiting for {what}")


async def test_progress_panel_draws_a_bar_per_stage():
    from textual.app import App

    class Host(App):
        def compose(self):
            yield ProgressPanel()

    app = Host()
    async with app.run_test() as pilot:
        panel = app.query_one(ProgressPanel)
        panel.handle(StageStarted(stage="generate", total=4, description="generating"))
        panel.handle(Progress(stage="generate", completed=1, total=4))  # before the row has mounted
        panel.handle(Progress(stage="train", completed=5, total=10, info={"loss": 3.25, "eta": 12.0, "step": 5}))  # no StageStarted
        generate, train = panel.row("generate"), panel.row("train")

        def bar(row):
            return row.query_one("ProgressBar") if row.is_mounted and row.query("ProgressBar") else None

        # rows mount over a few refreshes (more on a loaded machine): wait for the drawn state, not one pause
        await wait_until(pilot, lambda: bar(generate) is not None and bar(generate).progress == 1, 10, "the generate bar at 1")
        assert bar(generate).total == 4
        await wait_until(pilot, lambda: bar(train) is not None and str(train.query_one(".stage-info").render()) == "loss 3.25",
                         10, "the train row's loss")
        panel.handle(StageFinished(stage="generate", seconds=2.0))
        await wait_until(pilot, lambda: bar(generate).progress == 4, 10, "the finished generate bar")
        assert generate.has_class("done")
        assert not panel.all_done
        assert len(panel.query(StageRow)) == 2
        # two models training side by side: a row each, so each row's ETA is measured on its own steps
        for step in range(1, 6):
            for model in ("trained-mlm", "trained-clm"):
                panel.handle(Progress(stage="train", completed=step, total=50, info={"model": model, "step": step}))
        mlm, clm = panel.row("train:trained-mlm"), panel.row("train:trained-clm")
        assert mlm is not None and clm is not None and mlm.description == "training trained-mlm"
        assert mlm.completed == clm.completed == 5 and mlm.eta.base == 1  # never reset by the other's counts


@pytest.mark.slow
async def test_run_a_preset_watch_it_and_open_its_results(preset):
    app = create_app(preset=preset)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: screen.running, 10, "the run to start")
        await wait_until(pilot, lambda: not screen.running, 240, "the run to finish")
        status = str(screen.query_one("#run-status").render())
        assert status.startswith("finished"), status
        panel = screen.query_one(ProgressPanel)
        for stage in ("data", "models", "mask", "generate", "metrics"):
            assert panel.row(stage) is not None and panel.row(stage).finished is not None, stage
        feed = screen.query_one("#run-feed")
        fed = "\n".join(line.text for line in feed.lines)
        assert "hf-mlm" in fed and "hf-clm" in fed  # SampleGenerated lines of both models
        await pilot.press("o")
        await pilot.pause()
        results = app.screen
        assert isinstance(results, ResultsScreen)
        table = results.query_one(ResultsTable)
        assert len(table.conditions) == 2 and any(c.key == "metric:bleu" for c in table.table_columns)
        assert table.row_count == 2 + len(table.baselines) and table.baselines  # the filler and deletion rows
        assert results.run_files.samples  # TUI runs log samples with their traces
        assert all(s.generation.steps for s in results.run_files.samples)


@pytest.mark.slow
async def test_cancel_a_running_preset(preset):
    app = create_app(preset=preset)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: screen.running and screen.output_path, 30, "the run to start")
        await pilot.press("c")
        await wait_until(pilot, lambda: not screen.running, 120, "the run to stop")
        assert "cancelled" in str(screen.query_one("#run-status").render())
        assert not screen.query_one("#run-start").disabled and screen.query_one("#run-cancel").disabled


async def test_the_run_screen_refuses_a_missing_checkpoint_before_any_folder_is_made(monkeypatch, tmp_path):
    """mlmh eval's checks (mlmh.api.place_run): a preset whose hub checkpoints the offline cache lacks is refused
    at Start in one notice naming them, and no run or model folder is made."""
    monkeypatch.chdir(tmp_path)
    said: list[str] = []
    monkeypatch.setattr(RunScreen, "notify", lambda self, message, **kwargs: said.append(str(message)))
    app = create_app(preset="paper-hub")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, RunScreen)
        await wait_until(pilot, lambda: bool(said), 60, "the refusal")
        assert len(said) == 1 and "checkpoints are not cached" in said[0], said
        assert all(name in said[0] for name in ("bert-base-uncased", "roberta-base", "gpt2", "facebook/bart-base"))
        assert not screen.running
    assert not (tmp_path / "runs").exists() and not (tmp_path / "models").exists()


async def test_the_run_screen_runs_through_mlmh_api(preset, monkeypatch, tmp_path):
    """The screen plans, places and runs through mlmh.api, the path of mlmh eval: swapped out, the API
    is what the screen reaches, with the TUI's overrides, the plan it checked and its listener."""
    from mlmh import api
    from mlmh.events import RunFinished, RunStarted

    calls: list[tuple] = []
    planned = []
    real_plan = api.plan

    def plan(preset_name, overrides=None, **kwargs):
        calls.append(("plan", preset_name, dict(overrides or {})))
        planned.append(real_plan(preset_name, overrides, **kwargs))
        return planned[-1]

    def run_directory(config, output_path, **kwargs):
        calls.append(("run_directory", config.preset, output_path))
        return tmp_path / "placed-by-api"

    def run(checked, out, *, progress=None, cancel=None, **kwargs):
        calls.append(("run", out, checked is planned[-1], cancel is not None))
        progress(RunStarted(output_path=str(out), n_conditions=len(checked.conditions)))
        progress(RunFinished(output_path=str(out)))

    monkeypatch.setattr(api, "plan", plan)
    monkeypatch.setattr(api, "run_directory", run_directory)
    monkeypatch.setattr(api, "run", run)
    app = create_app(preset=preset)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        await wait_until(pilot, lambda: calls and calls[-1][0] == "run" and not screen.running, 30, "the API's run")
        assert calls == [("plan", preset, {"log_samples": True}), ("run_directory", "tiny", None),
                         ("run", tmp_path / "placed-by-api", True, True)]
        assert screen.output_path == str(tmp_path / "placed-by-api")
        assert str(screen.query_one("#run-status").render()).startswith("finished")
