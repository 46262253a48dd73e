"""Results screen driven with Pilot: the findings first, the runs under runs/ to pick from, the table on unseen
or seen documents with its baselines, sorting, best marks, plots and drill-down into a trace or a text."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from test_tui_data import CONDITIONS, UUIDS, write_run, write_wide_run

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
    """The conditions' rows in their order (the baselines' rows, always last, left out)."""
    return [str(row.key.value) for row in table.ordered_rows if not str(row.key.value).startswith("baseline:")]


def typed(conditions):
    return RunResults.from_dict({"schema_version": 2, "conditions": conditions})


def test_ratio_series_groups_by_model_and_sampler():
    series = ratio_series(typed(CONDITIONS), "bleu")
    assert series == {"hf-mlm mask-predict": [(0.15, 0.61), (0.3, 0.52)], "hf-clm clm-infill": [(0.15, 0.40), (0.3, 0.33)]}


def test_ratio_series_leaves_fixed_ratio_maskings_off_the_ratio_axis():
    """The rule of mlmh.report.plots.plot_data: stopwords at its own ratio (here 1.0) and a family run at one ratio
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
        await pilot.press("t")
        table = app.screen.query_one(ResultsTable)
        assert row_ids(table) == [c["id"] for c in CONDITIONS]
        bleu_best = table.get_cell(CONDITIONS[0]["id"], "metric:bleu")
        assert "★" in bleu_best.plain and "0.610 ±0.050" in bleu_best.plain  # the CI's wider half
        await pilot.press("c")  # the whole CIs
        assert "0.610 [0.560,0.660] ★" in table.get_cell(CONDITIONS[0]["id"], "metric:bleu").plain
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


async def test_a_bad_path_is_one_line_in_the_status(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no runs/ here
    app = create_app()
    app.options.autorun = False
    async with app.run_test() as pilot:
        await pilot.press("f3")
        screen = app.screen
        assert isinstance(screen, ResultsScreen)
        assert "no finished run under runs/ yet" in str(screen.query_one("#res-status").render())
        screen.load(tmp_path / "nope")
        assert "nope does not exist" in str(screen.query_one("#res-status").render())


async def test_a_run_without_samples_jsonl_shows_the_texts_of_generations_jsonl(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run", samples=False)))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert "4 conditions × 1 unseen, 1 seen documents; 8 samples (texts only)" in str(screen.query_one("#res-status").render())
        await pilot.press("a")
        label = str(screen.query_one("#res-condition").render())
        assert "2 samples (1 unseen, 1 seen)" in label and "step traces need log_samples = true" in label
        trace = screen.query_one("#res-trace", TraceView)
        assert trace.generation.text == "everything is very fast in football." and trace.frames == []
        assert str(trace.title) == "d1 · hf-mlm" and str(trace.border_title) == "d1 · hf-mlm"  # the whole id, then the model
        assert screen.query_one("#res-sample-list").option_count == 2


async def test_a_run_without_any_samples_says_so(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run", samples=False, generations=False)))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert "no generations.jsonl or samples.jsonl" in str(app.screen.query_one("#res-condition").render())


async def test_the_findings_come_first_in_the_words_of_the_answer(tmp_path):
    from mlmh.api import load
    from mlmh.findings.answer import answer_lines

    directory = write_run(tmp_path / "run")
    app = create_app(run_dir=str(directory))
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert screen.query_one("#res-tabs").active == "tab-findings"
        shown = str(screen.query_one("#res-findings").render())
        lines = answer_lines(load(directory).results.findings, markdown=False)
        assert lines[0].startswith("HOLDS: MLM beats CLM on generation quality: +0.20 [+0.15, +0.25]")
        assert lines[1].startswith("NOT COMPARABLE: ")
        assert all(" ".join(line.split()) in " ".join(shown.split()) for line in lines)
        assert "Not tested: Punctuation (report.md says why)" in shown


async def test_the_table_labels_its_document_set_and_shows_the_baselines(tmp_path):
    app = create_app(run_dir=str(write_run(tmp_path / "run")))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        await pilot.press("t")
        screen = app.screen
        table = screen.query_one(ResultsTable)
        note = str(screen.query_one("#res-table-note").render())
        assert note.startswith("unseen documents (never trained on)") and "u: seen" in note
        assert table.get_cell(CONDITIONS[0]["id"], "metric:bleu").plain.startswith("0.610")
        keys = [str(row.key.value) for row in table.ordered_rows]
        assert keys[4:] == ["baseline:filler:random:ratio=0.15", "baseline:deletion:random:ratio=0.15",
                            "baseline:filler:random:ratio=0.3", "baseline:deletion:random:ratio=0.3"]
        assert table.get_cell("baseline:filler:random:ratio=0.3", "model").plain == 'filler "the"'
        assert table.get_cell("baseline:filler:random:ratio=0.3", "metric:bleu").plain == "0.170"
        assert "★" not in table.get_cell("baseline:deletion:random:ratio=0.15", "metric:bleu").plain
        await pilot.press("s")  # sorting moves the conditions only
        assert [str(row.key.value) for row in table.ordered_rows][4:] == keys[4:]
        await pilot.press("u")
        assert screen.role == "seen" and "seen documents (trained on)" in str(screen.query_one("#res-table-note").render())
        assert table.get_cell(CONDITIONS[0]["id"], "metric:bleu").plain.startswith("0.660")
        table.move_cursor(row=table.get_row_index("baseline:filler:random:ratio=0.3"))
        await pilot.press("enter")  # a baseline has no samples: nothing to drill into
        assert screen.query_one("#res-tabs").active == "tab-table"


def make_runs(root, names):
    """Finished runs under ``root``, the first named the newest (each a minute older than the one before)."""
    import os

    for age, name in enumerate(names):
        directory = write_run(root / name, samples=False)
        os.utime(directory / "results.json", (1_700_000_000 - 60 * age,) * 2)
    return [root / name for name in names]


async def test_the_runs_under_runs_are_listed_newest_first_and_picked(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_runs(tmp_path / "runs", ["20240103-pan", "20240101-quick", "20240102-gmlm"])
    (tmp_path / "runs" / "unfinished").mkdir()
    app = create_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("f3")
        await pilot.pause()
        screen = app.screen
        picker = screen.query_one("#res-runs")
        assert [str(label) for label, _ in picker._options[1:]] == ["20240103-pan", "20240101-quick", "20240102-gmlm"]
        assert screen.run_files.path == Path("runs") / "20240103-pan" / "results.json"  # the newest, loaded
        picker.value = str(Path("runs") / "20240102-gmlm")
        await pilot.pause()
        assert screen.run_files.path == Path("runs") / "20240102-gmlm" / "results.json"


async def test_a_run_given_by_path_is_listed_beside_the_runs_under_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_runs(tmp_path / "runs", ["20240101-quick"])
    elsewhere = write_run(tmp_path / "elsewhere" / "run")
    app = create_app(run_dir=str(elsewhere))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        picker = app.screen.query_one("#res-runs")
        assert [value for _, value in picker._options[1:]] == [str(elsewhere), str(Path("runs") / "20240101-quick")]
        assert picker.value == str(elsewhere)


async def test_a_finished_sweep_shows_its_answer_and_curves(tmp_path):
    import json

    from test_crossover import sweep

    from mlmh.findings.crossover import summarise

    directory = write_run(tmp_path / "run")
    data = json.loads((directory / "results.json").read_text(encoding="utf-8"))
    typed, docs = sweep([5.0, 4.6, 4.2, 4.0], [4.5, 4.4, 4.5, 4.7], [0.6] * 4, [0.6] * 4)
    data["crossover"] = summarise(typed, docs, n_resamples=50).to_dict()
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


async def test_the_sample_list_takes_the_arrows_and_enter_as_soon_as_its_tab_shows(tmp_path):
    """a (the Samples tab), ↓, enter: the second sample is shown; the list had the keys without a click."""
    app = create_app(run_dir=str(write_wide_run(tmp_path / "run")))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        trace = app.screen.query_one("#res-trace", TraceView)
        assert trace.generation.doc_id == UUIDS[0]
        await pilot.press("a", "down", "enter")
        await pilot.pause()
        assert app.focused is app.screen.query_one("#res-sample-list")
        assert trace.generation.doc_id == UUIDS[1] and UUIDS[1] in trace.title
        await pilot.press("up", "enter")
        await pilot.pause()
        assert trace.generation.doc_id == UUIDS[0]


async def test_every_column_of_a_wide_table_is_reachable_and_the_note_says_how(tmp_path):
    app = create_app(run_dir=str(write_wide_run(tmp_path / "run")))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        await pilot.press("t")
        await pilot.pause()
        table, note = app.screen.query_one(ResultsTable), app.screen.query_one("#res-table-note")
        hidden = table.columns_out_of_view()
        assert hidden > 5 and f"→ {hidden} more columns" in str(note.render())
        await pilot.press("end")  # DataTable: the last row; sideways, → until nothing is left
        for _ in range(200):
            if not table.columns_out_of_view():
                break
            await pilot.press("right")
        await pilot.pause()
        assert table.columns_out_of_view() == 0 and "← back" in str(note.render())
        assert table.fixed_columns == 3  # the model, masking and sampler of each row stayed in view


async def test_an_empty_plot_is_left_out_and_said_in_one_line(tmp_path):
    app = create_app(run_dir=str(write_wide_run(tmp_path / "run")))
    async with app.run_test(size=(100, 24)) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        screen = app.screen
        assert not screen.query_one("#res-plot-ratio").display and screen.query_one("#res-plot-downstream").display
        assert "no masking swept over two or more ratios" in str(screen.query_one("#res-plots-note").render())
        legend = plain(screen.query_one("#res-plot-downstream").plt.build())
        assert "trained-mlm mask-predict:steps=4" in legend and "max_steps=40" not in legend  # shared params left out


# -- a real-sized run at 100 and 140 columns ------------------------------------------------------------------
@contextlib.asynccontextmanager
async def wide_run_at(tmp_path, width: int, *keys: str, height: int = 24, ids: list[str] = UUIDS):
    """The app's pilot on the wide run at ``width`` columns, after ``keys``."""
    app = create_app(run_dir=str(write_wide_run(tmp_path / f"run{width}", ids=ids)))
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        yield pilot


def whole_metric_columns(table: ResultsTable) -> int:
    """Metric columns drawn whole at the table's current width (the label columns and the partly drawn last
    one left out)."""
    metrics = [c for c in table.table_columns if c.key.startswith("metric:")]  # after the labels, before downstream
    return min(len(metrics), len(table.table_columns) - table.columns_out_of_view() - table.fixed_columns)


async def test_five_metric_columns_fit_at_140_and_three_at_100(tmp_path):
    """The shared parameters of the model specs are left out and a CI shows as ± its wider half: at 140 columns
    five metrics of the quick preset's width show at once (two did at 100, with their whole CIs)."""
    for width, fitting in ((140, 5), (100, 3)):
        async with wide_run_at(tmp_path, width, "t") as pilot:
            table = pilot.app.screen.query_one(ResultsTable)
            assert whole_metric_columns(table) >= fitting, width
            model = table.get_cell(table.ordered_rows[0].key, "model").plain
            assert model == "trained-mlm"  # size=tiny,max_steps=40 is every model's: it tells no row apart


async def test_the_whole_key_bar_shows_at_100_columns_on_every_tab(tmp_path):
    from textual.widgets._footer import FooterKey

    async with wide_run_at(tmp_path, 100) as pilot:
        for tab in ("f", "t", "p", "a"):
            await pilot.press(tab)
            await pilot.pause()
            keys = list(pilot.app.screen.query(FooterKey))
            assert {"f1", "f2", "f3", "q", "question_mark", "u", "ctrl+o"} <= {key.key for key in keys}, tab
            assert all(key.region.right <= 100 for key in keys), [(k.key, k.region) for k in keys]


async def test_the_keys_list_puts_the_apps_keys_before_textuals(tmp_path):
    from mlmh.tui.screens.help import HelpScreen

    async with wide_run_at(tmp_path, 100, "question_mark", height=40) as pilot:
        assert isinstance(pilot.app.screen, HelpScreen)
        described = [description for _, description in pilot.app.screen.rows]
        generic = described.index("Scroll Up")  # the findings box scrolls: Textual's binding
        assert {"Runs", "Seen/unseen", "Quit", "Keys", "Playground", "Run", "Results"} <= set(described[:generic])


async def test_one_number_format_per_metric_and_no_star_on_a_condition_the_answer_left_out(tmp_path):
    """BLEU on its 0-100 scale prints 71.6 beside 4.9 (not 4.882), in the table and in the sample list; the
    CLM never left the unigram plateau, so the answer leaves it out: it scores the best stutter, unstarred."""
    async with wide_run_at(tmp_path, 140, "t") as pilot:
        screen = pilot.app.screen
        table = screen.query_one(ResultsTable)
        mlm, clm = (str(row.key.value) for row in table.ordered_rows[::2][:2])
        assert table.get_cell(mlm, "metric:bleu").plain == "71.6 ±2.1 ★"
        assert table.get_cell(clm, "metric:bleu").plain == "4.9 ±0.9"
        assert table.get_cell("baseline:deletion:stopwords", "metric:bleu").plain == "0.4"
        assert "★" not in table.get_cell(clm, "metric:stutter").plain  # the lowest, but left out
        assert "★" in table.get_cell(mlm, "metric:stutter").plain  # the best of those the answer kept
        assert "dim: left out by the answer" in str(screen.query_one("#res-table-note").render())
        await pilot.press("a")
        await pilot.pause()
        labels = [str(option.prompt) for option in screen.query_one("#res-sample-list").options]
        assert "bleu 71.6" in labels[0] and "bleu 4.9 " in labels[1] + " "


async def test_ids_are_cut_at_their_end_and_whole_where_they_fit(tmp_path):
    ids = ["py:selectors.DefaultSelector.register", "py:selectors.DefaultSelector.unregister"]
    async with wide_run_at(tmp_path, 100, "a", ids=ids) as pilot:
        assert [str(o.prompt).splitlines()[0] for o in pilot.app.screen.query_one("#res-sample-list").options] == ids
    async with wide_run_at(tmp_path, 80, "a", ids=ids) as pilot:  # 36 columns: cut at the end, still apart
        first_lines = [str(o.prompt).splitlines()[0] for o in pilot.app.screen.query_one("#res-sample-list").options]
        assert first_lines[0] != first_lines[1] and all(line.endswith("…") for line in first_lines)
        assert all(i.startswith(line[:-1]) for i, line in zip(ids, first_lines))


async def test_a_study_folder_opens_on_its_first_run_with_the_answer_across_datasets(tmp_path, monkeypatch):
    from mlmh import api
    from mlmh.findings.study import summarise
    from mlmh.report.study import render_study
    from mlmh.storage.study import write_study
    from mlmh.types.study import StudyDataset

    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "studies" / "20260101-000000-paper"
    runs = {label: api.load(write_run(folder / label)).results for label in ("pan", "mpst")}
    study = summarise("paper", [StudyDataset(label, label, None, label) for label in runs], runs)
    write_study(folder, study, render_study(study))
    app = create_app(run_dir=str(folder))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.pause()
        screen = app.screen
        findings = str(screen.query_one("#res-findings").render())
        assert "This run is dataset pan of a study of preset paper on 2 datasets" in findings
        assert study.claims and all(claim.text in findings for claim in study.claims)
        options = [str(prompt) for prompt, _ in screen.query_one("#res-runs")._options]
        assert any(o.endswith("20260101-000000-paper/mpst") for o in options)  # the picker lists the study's runs
