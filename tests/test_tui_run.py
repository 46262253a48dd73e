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
