"""Results screen driven with Pilot: table, sorting, best marks, plots and drill-down into a trace."""

from __future__ import annotations

import re

import pytest
from test_tui_data import CONDITIONS, write_run

from mlmh.tui import create_app
from mlmh.tui.screens.results import ResultsScreen
from mlmh.tui.widgets.plots import ratio_series
from mlmh.tui.widgets.results_table import ResultsTable
from mlmh.tui.widgets.trace_view import TraceView
from mlmh.types import RunResults


pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


def plain(ansi: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", ansi)


def row_ids(table: ResultsTable) -> list[str]:
    return [str(row.key.value) for row in table.ordered_rows]


def typed(conditions):
    return RunResults.from_dict({"schema_version": 2, "conditions": conditions})


def test_ratio_series_groups_by_model_and_sampler():
    series = ratio_series(typed(CONDITIONS), "bleu")
    assert series == {"hf-mlm mask-predict": [(0.15, 0.61), (0.3, 0.52)], "hf-clm clm-infill": [(0.15, 0.40), (0.3, 0.33)]}


def test_ratio_series_leaves_fixed_ratio_maskings_off_the_ratio_axis():
    """The rule of mlmh.plots.plot_data: stopwords at its own ratio (here 1.0) and a family run at one ratio
    only are not ratio points."""
    stopwords = {**CONDITIONS[0], "id": "sw", "masking": "stopwords", "masking_ratio": 1.0}
    span = {**CONDITIONS[0], "id": "span", "masking": "span:ratio=0.5", "masking_ratio": 0.5}
    series = ratio_series(typed([*CONDITIONS, stopwords, span]), "bleu")
    assert series == ratio_series(typed(CONDITIONS), "bleu")
    assert ratio_series(typed([stopwords, span]), "bleu") == {}


async def test_results_table_sorts_and_marks_best(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ResultsScreen)
        table = app.screen.query_one(ResultsTable)
        assert row_ids(table) == [c["id"] for c in CONDITIONS]
        bleu_best = table.get_cell(CONDITIONS[0]["id"], "metric:bleu")
        assert "★" in bleu_best.plain and "[0.560,0.660]" in bleu_best.plain
        # stutter: lower is better, so the best is the condition with the highest rouge (the first)
        assert "★" in table.get_cell(CONDITIONS[0]["id"], "metric:stutter").plain
        assert "★" not in table.get_cell(CONDITIONS[3]["id"], "metric:bleu").plain

        await pilot.press("s")  # first metric column, best first
        assert table.sort_key == "metric:bleu"
        assert row_ids(table) == [CONDITIONS[i]["id"] for i in (0, 1, 2, 3)]
        await pilot.press("r")  # reversed
        assert row_ids(table) == [CONDITIONS[i]["id"] for i in (3, 2, 1, 0)]
        await pilot.press("s")  # stutter: lower is better comes first
        assert table.sort_key == "metric:stutter"
        assert row_ids(table)[0] == CONDITIONS[0]["id"]
        await pilot.press("s")  # downstream accuracy
        assert table.sort_key == "downstream:authorship-verification:accuracy"
        assert row_ids(table) == [CONDITIONS[i]["id"] for i in (0, 1, 2, 3)]


async def test_header_click_sorts(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test(size=(160, 30)) as pilot:
        await pilot.pause()
        table = app.screen.query_one(ResultsTable)
        table.sort_by("model")
        assert row_ids(table)[0].startswith("hf-clm")
        table.sort_by("model")
        assert row_ids(table)[0].startswith("hf-mlm")


async def test_drill_down_into_a_condition_and_step_its_trace(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test() as pilot:
        await pilot.pause()
        table = app.screen.query_one(ResultsTable)
        table.focus()
        await pilot.press("down", "down", "enter")  # third condition: hf-clm 0.15
        await pilot.pause()
        screen = app.screen
        assert screen.condition == CONDITIONS[2]["id"]
        assert screen.query_one("#res-tabs").active == "tab-samples"
        trace = screen.query_one("#res-trace", TraceView)
        assert trace.generation.model == "hf-clm" and trace.index == trace.last == 3
        screen.query_one("#res-sample-list").focus()
        await pilot.press("left", "left")
        assert trace.index == 1
        await pilot.press("down")  # the second sample
        await pilot.pause()
        assert trace.generation.doc_id == "d2"


async def test_plots_follow_the_chosen_metric(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test() as pilot:
        await pilot.pause()
        await pilot.press("p")
        screen = app.screen
        assert screen.query_one("#res-tabs").active == "tab-plots"
        screen.query_one("#res-metric").value = "stutter"
        await pilot.pause()
        drawn = plain(screen.query_one("#res-plot-ratio").plt.build())
        assert "stutter vs masking ratio" in drawn and "hf-mlm mask-predict" in drawn
        drawn = plain(screen.query_one("#res-plot-downstream").plt.build())
        assert "accuracy vs stutter · base 0.700" in drawn


async def test_a_bad_path_is_one_line_in_the_status(tmp_path):
    app = create_app()
    app.options.autorun = False
    async with app.run_test() as pilot:
        await pilot.press("f3")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        screen.query_one("#res-path").value = str(tmp_path / "nope")
        screen.query_one("#res-path").focus()
        await pilot.press("enter")
        assert "nope does not exist" in str(screen.query_one("#res-status").render())


@pytest.mark.parametrize("samples", [False])
async def test_runs_without_samples_say_how_to_get_them(tmp_path, samples):
    app = create_app(run_dir=str(write_run(tmp_path / "run", samples=samples)))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "log_samples" in str(app.screen.query_one("#res-condition").render())


async def test_a_finished_sweep_shows_its_answer_and_curves(tmp_path):
    import json

    from test_crossover import sweep

    from mlmh.crossover import summarise

    directory = write_run(tmp_path / "run")
    data = json.loads((directory / "results.json").read_text(encoding="utf-8"))
    typed, docs = sweep([5.0, 4.6, 4.2, 4.0], [4.5, 4.4, 4.5, 4.7], [0.6] * 4, [0.6] * 4)
    data["crossover"] = summarise(typed, docs, n_resamples=50)
    (directory / "results.json").write_text(json.dumps(data), encoding="utf-8")
    app = create_app(run_dir=str(directory))
    async with app.run_test(size=(160, 60)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        label = screen.query_one("#res-crossover")
        assert label.display and "from 4 epochs" in str(label.render())
        drawn = plain(screen.query_one("#res-plot-crossover").plt.build())
        assert "validation loss (nats/token) vs epochs" in drawn and "MLM U=1,000" in drawn and "CLM U=1,000" in drawn


async def test_a_run_that_is_no_sweep_hides_the_crossover_panel(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert not app.screen.query_one("#res-plot-crossover").display
