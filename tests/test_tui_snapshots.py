"""Snapshot tests (pytest-textual-snapshot) of the three screens at 80x24, with deterministic content:
fixed generations, fixed run events and a fixed results.json. Snapshots live in tests/snapshots/;
refresh them with ``pytest tests/test_tui_snapshots.py --snapshot-update`` after a deliberate change."""

from __future__ import annotations

from pathlib import Path

import pytest
import pytest_textual_snapshot
from test_tui_data import TOKENS_FINAL, mlm_generation, write_run, write_wide_run

from mlmh.events import Message, Progress, RunFinished, RunStarted, SampleGenerated, StageFinished, StageStarted
from mlmh.tui import create_app
from mlmh.tui.screens.run import RunEventPosted, RunEnded
from mlmh.tui.widgets.progress_panel import ProgressPanel
from mlmh.tui.widgets.trace_view import TraceView
from mlmh.types import Generation, Step


class SnapshotsDirectory(pytest_textual_snapshot.SVGImageExtension):
    """Keep the SVGs in tests/snapshots/ rather than syrupy's default __snapshots__."""

    @classmethod
    def dirname(cls, *, test_location) -> str:
        return str(Path(test_location.filepath).parent / "snapshots")


@pytest.fixture(autouse=True)
def _snapshot_directory(monkeypatch):
    monkeypatch.setattr(pytest_textual_snapshot, "SVGImageExtension", SnapshotsDirectory)


def clm_generation() -> Generation:
    """Left to right: one token per step into the masked positions 2, 6 and 7."""
    m = "[MASK]"
    tokens = list(TOKENS_FINAL)
    steps = []
    current = ["[CLS]", "everything", m, "very", "fast", "in", m, m, ".", "[SEP]"]
    for position, confidence in ((2, 0.55), (6, 0.35), (7, 0.95)):
        current = list(current)
        current[position] = tokens[position]
        masked = [p for p in (2, 6, 7) if current[p] == m]
        steps.append(Step(tokens=current, changed=[position], confidences={position: confidence}, masked=masked))
    return Generation(doc_id="playground", model="hf-clm", model_kind="clm", sampler="clm-infill", masking="random:ratio=0.3",
                      seed=0, original="Everything is very fast in football.", masked_text="Everything [MASK] very fast in [MASK].",
                      text="everything is very fast in football.", masked_words=[1, 5], output_words={1: "is", 5: "football"},
                      steps=steps, forward_passes=3, generated_tokens=3, seconds=0.25)


def test_playground_snapshot(snap_compare):
    app = create_app(models=["hf-mlm:path=models/mlm", "hf-clm:path=models/clm"], text="Everything is very fast in football.",
                     autorun=False)

    async def show_traces(pilot):
        screen = app.screen
        left, right = screen.query(TraceView)
        left.load(mlm_generation(model="hf-mlm"))
        right.load(clm_generation())
        await pilot.pause()
        await pilot.press("right", "right")

    assert snap_compare(app, terminal_size=(80, 24), run_before=show_traces)


def test_run_snapshot(snap_compare):
    app = create_app(autorun=False)

    async def feed_a_finished_run(pilot):
        await pilot.press("f2")
        screen = app.screen
        events = [RunStarted(run_id="r", n_conditions=2, output_path="runs/fixture")]
        for stage, total, seconds in (("data", 1, 0.4), ("models", 2, 3.1), ("mask", 2, 0.1), ("generate", 4, 2.5)):
            events += [StageStarted(stage=stage, total=total, description=f"{stage} stage"),
                       Progress(stage=stage, completed=total, total=total), StageFinished(stage=stage, seconds=seconds)]
        events.insert(-1, SampleGenerated(condition="hf-mlm | random:ratio=0.3 | mask-predict", generation=mlm_generation()))
        events.insert(-1, SampleGenerated(condition="hf-clm | random:ratio=0.3 | clm-infill", generation=clm_generation()))
        events += [Message(level="warning", text="dataset pan: using its bundled sample"),
                   RunFinished(output_path="runs/fixture", seconds=6.1)]
        for event in events:
            screen.post_message(RunEventPosted(event))
        screen.post_message(RunEnded(None, "runs/fixture"))
        panel = screen.query_one(ProgressPanel)
        for _ in range(200):  # until every row has drawn its finished state
            await pilot.pause(0.02)
            if len(panel.rows) == 4 and all(row.has_class("done") for row in panel.rows.values()) and not screen.running:
                break

    assert snap_compare(app, terminal_size=(80, 24), run_before=feed_a_finished_run)


def test_results_snapshot(snap_compare, tmp_path, monkeypatch):
    """A run opens on its findings: the answer's sentences, verdicts in colour."""
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(80, 24))


def test_results_table_snapshot(snap_compare, tmp_path, monkeypatch):
    """The table on unseen documents, sorted by its first metric, the filler and deletion baselines last."""
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(80, 24), press=["t", "s"])


def test_results_samples_snapshot(snap_compare, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(80, 24), press=["t", "enter", "left"])


def test_results_generations_snapshot(snap_compare, tmp_path, monkeypatch):
    """A run that logged no step traces shows its samples' texts from generations.jsonl, seen and unseen."""
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "run", samples=False)
    assert snap_compare(create_app(run_dir="run"), terminal_size=(80, 24), press=["t", "down", "down", "enter"])


def test_results_runs_snapshot(snap_compare, tmp_path, monkeypatch):
    """Without --run the results screen opens the newest run under runs/ and lists them all, newest first."""
    import os

    monkeypatch.chdir(tmp_path)
    for age, name in enumerate(["20240103-120000-pan", "20240102-090000-quick", "20240101-180000-gmlm"]):
        write_run(tmp_path / "runs" / name)
        os.utime(tmp_path / "runs" / name / "results.json", (1_700_000_000 - 60 * age,) * 2)
    assert snap_compare(create_app(autorun=False), terminal_size=(80, 24), press=["f3", "ctrl+o", "enter"])


# -- a real-sized run at the widths people use: the table reachable, no empty plot, sample ids whole --------
@pytest.mark.parametrize("width", [100, 140])
def test_wide_results_table_snapshot(snap_compare, tmp_path, monkeypatch, width):
    """More columns than fit: specs without the parameters every row shares, CIs as ± their wider half, so five
    metrics show at 140 columns (three at 100), the note says how many lie to the right; BLEU in one format
    (71.6 beside 4.9); the CLM, left out by the answer (never off the unigram plateau), dimmed and unstarred; the
    whole key bar at 100."""
    monkeypatch.chdir(tmp_path)
    write_wide_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(width, 24), press=["t"])


@pytest.mark.parametrize("width", [100, 140])
def test_wide_results_plots_snapshot(snap_compare, tmp_path, monkeypatch, width):
    """No masking swept over ratios: that plot is left out (one dim line says so), the other takes the width."""
    monkeypatch.chdir(tmp_path)
    write_wide_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(width, 24), press=["p"])


@pytest.mark.parametrize("width", [100, 140])
def test_wide_results_samples_snapshot(snap_compare, tmp_path, monkeypatch, width):
    """UUID-named samples, each id whole on its line, then its document set and scores; ↓ shows the second."""
    monkeypatch.chdir(tmp_path)
    write_wide_run(tmp_path / "run")
    assert snap_compare(create_app(run_dir="run"), terminal_size=(width, 24), press=["a", "down"])
