"""Results screen: pick a finished run under ``runs/`` (newest first; ``mlmh tui --run PATH`` opens any other),
read its findings first, then compare its conditions on unseen or seen documents beside the filler and deletion
baselines, plot a metric against masking ratio and quality against downstream score, and read its samples
(their step traces when the run logged them)."""

from __future__ import annotations

from pathlib import Path

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Footer, Header, Label, OptionList, Select, Static, TabbedContent, TabPane

from mlmh import api
from mlmh.api import LoadedRun
from mlmh.errors import MlmhError
from mlmh.findings.answer import answer_lines, comparison_lines
from mlmh.machine.escape import terminal
from mlmh.report.study import study_lines
from mlmh.results import document_counts, roles
from mlmh.storage.rundir import RUNS_ROOT, RunDir, finished_runs
from mlmh.storage.study import first_run, study_of, study_runs
from mlmh.tui.host import TuiScreen
from mlmh.tui.labels import short_condition, short_spec
from mlmh.tui.widgets.plots import CrossoverPlot, MetricByRatioPlot, QualityDownstreamPlot, downstream_keys
from mlmh.tui.widgets.results_table import ResultsTable, baseline_rows, left_out
from mlmh.tui.widgets.sample_list import SampleList
from mlmh.tui.widgets.trace_view import TraceView
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE, NOT_COMPARABLE, RunResults, SampleRow
from mlmh.types.study import StudyResults

VERDICT_STYLES = {HOLDS: "bold green", FAILS: "bold red", INCONCLUSIVE: "bold yellow", NOT_COMPARABLE: "bold magenta"}
ROLE_WORDS = {"unseen": "unseen documents (never trained on)", "seen": "seen documents (trained on)"}
#: the widget each tab gives the keys to, so arrows and enter work as soon as a tab shows
TAB_FOCUS = {"tab-findings": "#res-findings-box", "tab-table": "#res-table", "tab-plots": "#res-metric",
             "tab-samples": "#res-sample-list"}


def tab_title(key: str, name: str) -> str:
    """A tab's title with the key that opens it: ``t Table``."""
    return f"[b]{key}[/b] {name}"


def study_text(study: StudyResults, label: str) -> Text:
    """For a run that is one dataset of a study: the study's answer across its datasets, one line per claim
    (:func:`mlmh.report.study.study_lines`), above the run's own."""
    text = Text(f"This run is dataset {terminal(label, line=True)} of a study of preset "
                f"{terminal(study.preset, line=True)} on {len(study.datasets)} datasets; across them:\n", style="bold")
    for line in study_lines(study):
        text.append(f"- {terminal(line)}\n")
    text.append("\n")
    return text


def findings_text(results: RunResults, study: tuple[StudyResults, str] | None = None) -> Text:
    """The run's answer as report.md opens with it (:func:`mlmh.findings.answer.answer_lines`), each verdict in its
    colour and what it rests on dimmed, then its comparisons as report.md's Findings state them
    (:func:`mlmh.findings.answer.comparison_lines`), headings in bold; first the answer across datasets of the study
    the run belongs to, if it does."""
    text = study_text(*study) if study is not None else Text()
    if not results.findings:
        text.append("This run tested no claims: results.json has no findings.\n\n", style="dim")
    else:
        styles = {verdict.upper(): style for verdict, style in VERDICT_STYLES.items()}
        for line in map(terminal, answer_lines(results.findings, markdown=False, results=results)):
            verdict, _, statement = line.partition(": ")
            if verdict in styles:
                text.append(verdict, style=styles[verdict])
                text.append(f": {statement}\n")
            else:
                text.append(line + "\n\n", style="dim")
    for line in map(terminal, comparison_lines(results)):
        if line.startswith("- "):
            text.append(line + "\n")
        else:  # a heading, after a blank line
            text.append(("" if text.plain.endswith("\n\n") else "\n") + line + "\n", style="bold")
    return text


def trace_title(sample: SampleRow) -> Text:
    """The trace pane's title: the sample's whole document id, then its model (a narrow pane cuts the model); a Text,
    so Textual reads no markup in it."""
    return Text(f"{terminal(sample.generation.doc_id, line=True)} · {terminal(short_spec(sample.generation.model), line=True)}")


class ResultsScreen(TuiScreen):
    """Findings, Table, Plots and Samples tabs over one loaded run."""

    BINDINGS = [
        Binding("ctrl+o", "focus_runs", "Runs"),
        # the tabs' keys are written on the tabs, so the footer keeps room for the rest at 100 columns
        Binding("f", "tab('tab-findings')", "Findings", show=False),
        Binding("t", "tab('tab-table')", "Table", show=False),
        Binding("p", "tab('tab-plots')", "Plots", show=False),
        Binding("a", "tab('tab-samples')", "Samples", show=False),
        Binding("u", "switch_role", "Seen/unseen"),
        Binding("left", "step(-1)", "Step back", show=False),
        Binding("right", "step(1)", "Step forward", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.run_files: LoadedRun | None = None
        self.condition: str | None = None
        self.role: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(classes="form-row", id="res-open"):
            yield Label("run", classes="form-label")
            yield Select([], prompt=f"pick a finished run ({RUNS_ROOT}/, newest first)", compact=True, id="res-runs")
        yield Label("", id="res-status")
        with TabbedContent(initial="tab-findings", id="res-tabs"):
            with TabPane(tab_title("f", "Findings"), id="tab-findings"):
                with VerticalScroll(id="res-findings-box"):
                    yield Static("", id="res-findings")
            with TabPane(tab_title("t", "Table"), id="tab-table"):
                yield Label("", id="res-table-note")
                yield ResultsTable(id="res-table")
            with TabPane(tab_title("p", "Plots"), id="tab-plots"):
                with Horizontal(classes="form-row"):
                    yield Select([], prompt="metric", compact=True, id="res-metric")
                    yield Select([], prompt="downstream", compact=True, id="res-downstream")
                yield Label("", id="res-plots-note")  # what is not plotted, and why
                with Horizontal(id="res-plots"):
                    yield MetricByRatioPlot(id="res-plot-ratio")
                    yield QualityDownstreamPlot(id="res-plot-downstream")
                # a data-constrained sweep's answer and curves (mlmh.findings.crossover); shown only for such a run
                yield Label("", id="res-crossover")
                yield CrossoverPlot(id="res-plot-crossover")
            with TabPane(tab_title("a", "Samples"), id="tab-samples"):
                yield Label("pick a condition in the table (enter)", id="res-condition")
                with Horizontal(id="res-samples"):
                    yield SampleList(id="res-sample-list")
                    yield TraceView("", id="res-trace")
        yield Footer()

    def on_mount(self) -> None:
        runs = self.refresh_runs()
        path = self.app.options.run_dir
        if path:
            self.load(path)
        elif runs:
            self.load(runs[0])
        else:
            self.query_one("#res-status", Label).update(
                f"no finished run under {RUNS_ROOT}/ yet: run one (F2, or mlmh eval), or start with mlmh tui --run DIR")

    def on_screen_resume(self) -> None:
        self.refresh_runs()  # a run finished on the run screen shows up

    # -- picking and loading ----------------------------------------------------------------------
    def refresh_runs(self) -> list[Path]:
        """The runs under runs/, newest first, then the runs of the studies under studies/, as the picker's options
        (with the loaded run when it is elsewhere)."""
        runs = finished_runs(RUNS_ROOT)
        shown = list(runs) + study_runs()
        if self.run_files is not None and self.run_files.path.parent not in shown:
            shown.insert(0, self.run_files.path.parent)
        picker = self.query_one("#res-runs", Select)
        with picker.prevent(Select.Changed):
            picker.set_options([(str(p) if p not in runs else p.name, str(p)) for p in shown])
            if self.run_files is not None:
                picker.value = str(self.run_files.path.parent)
        return runs

    @on(Select.Changed, "#res-runs")
    def _run_picked(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and (self.run_files is None or RunDir.of(event.value).results != self.run_files.path):
            self.load(event.value)

    def load(self, path: str | Path) -> None:
        status = self.query_one("#res-status", Label)
        try:
            run = api.load(first_run(path))  # a study folder opens on its first dataset's run
            samples = run.samples  # read here, so a bad file is said in the status line
        except MlmhError as exc:
            status.update(Text(str(exc), style="bold red"))
            return
        self.run_files = run
        self.refresh_runs()
        results = run.results
        self.role = results.headline if results.headline in roles(results) else next(iter(roles(results)), None)
        counts = document_counts(results)
        status.update(f"{results.config.preset or '?'}: {len(run.conditions)} conditions × "
                      f"{counts or results.n_samples} documents; {len(samples)} samples"
                      + (" with step traces" if run.traced else " (texts only)"))
        self.query_one("#res-findings", Static).update(findings_text(results, study_of(run.path)))
        self._show_table()
        metrics = [c.label for c in self.query_one(ResultsTable).table_columns if c.key.startswith("metric:")]
        metric_select = self.query_one("#res-metric", Select)
        metric_select.set_options([(m, m) for m in metrics])
        if metrics:
            metric_select.value = metrics[0]
        downstream = downstream_keys(run.conditions)
        downstream_select = self.query_one("#res-downstream", Select)
        downstream_select.set_options([(d, d) for d in downstream])
        if downstream:
            downstream_select.value = downstream[0]
        self._plot()
        self._show_crossover()
        self.show_condition(run.conditions[0].id if run.conditions else None)
        self.action_tab("tab-findings")
        self.query_one("#res-findings-box").focus()  # the answer first; t, p, a and u reach the other tabs

    @property
    def shown_run(self) -> LoadedRun:
        """The loaded run, for the methods that run only once one is."""
        assert self.run_files is not None, "no run loaded"
        return self.run_files

    # -- table ------------------------------------------------------------------------------------
    def _show_table(self) -> None:
        results = self.shown_run.results
        baselines = baseline_rows(results.conditions, self.role, results.filler_word)
        self.query_one(ResultsTable).show_conditions(results.conditions, self.role, baselines,
                                                     left_out(results, self.role))
        self._note_hidden_columns()

    @on(ResultsTable.ColumnsMoved)
    def _note_hidden_columns(self) -> None:
        """The table's note: how many columns lie beyond its right edge and how to reach them, then what the
        table shows and the keys that change it, the most needed first (a narrow screen cuts the end)."""
        table = self.query_one(ResultsTable)
        hidden, moves = table.columns_out_of_view(), []
        if hidden:
            moves.append(f"→ {hidden} more column{'s' if hidden > 1 else ''}")
        if table.scroll_x > 0:
            moves.append("← back")
        note = Text(" · ".join(moves) + " · " if moves else "", style="bold yellow")
        note.append(ROLE_WORDS.get(self.role or "", "the scored documents"), style="bold")
        if any(table.left_out.values()):
            note.append(" · dim: left out by the answer", style="dim")
        others = [r for r in roles(self.run_files.results) if r != self.role] if self.run_files else []
        if others:
            note.append(f" · u: {others[0]}", style="dim")
        note.append(" · c: CIs as ±" if table.whole_cis else " · c: whole CIs", style="dim")
        if table.baselines:
            note.append(" · baselines last", style="dim")
        self.query_one("#res-table-note", Label).update(note)

    def action_switch_role(self) -> None:
        """Show the table on the other document set (unseen ↔ seen)."""
        if self.run_files is None:
            return
        others = [r for r in roles(self.run_files.results) if r != self.role]
        if others:
            self.role = others[0]
            self._show_table()

    # -- plots ------------------------------------------------------------------------------------
    @on(Select.Changed, "#res-metric")
    @on(Select.Changed, "#res-downstream")
    def _plot(self) -> None:
        if self.run_files is None:
            return
        metric = self.query_one("#res-metric", Select).value
        downstream = self.query_one("#res-downstream", Select).value
        if not isinstance(metric, str):
            return
        ratio, quality = self.query_one(MetricByRatioPlot), self.query_one(QualityDownstreamPlot)
        ratio.display = ratio.show(self.run_files.results, metric)  # an empty plot is left out, its reason noted
        quality.display = quality.show(self.run_files.results, metric, downstream if isinstance(downstream, str) else "")
        missing = []
        if not ratio.display:
            missing.append(f"no masking swept over two or more ratios, so no {metric}-by-ratio curve")
        if not quality.display:
            missing.append(f"no condition with both {metric} and a downstream score")
        note = self.query_one("#res-plots-note", Label)
        note.display = bool(missing)
        note.update(Text("not plotted: " + "; ".join(missing), style="dim"))

    def _show_crossover(self) -> None:
        block = self.run_files.results.crossover if self.run_files else None
        label, plot = self.query_one("#res-crossover", Label), self.query_one(CrossoverPlot)
        label.display = plot.display = bool(block)
        if block:
            label.update(Text(block.answer, style="bold"))
            plot.show(self.shown_run.results)

    # -- drill-down -------------------------------------------------------------------------------
    @on(DataTable.RowSelected, "#res-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        key = str(event.row_key.value)
        if key.startswith("baseline:"):
            return  # a baseline has no samples of its own
        self.show_condition(key)
        self.action_tab("tab-samples")
        self.query_one("#res-sample-list", OptionList).focus()  # so left/right step the trace at once

    def show_condition(self, condition: str | None) -> None:
        self.condition = condition
        samples = self.run_files.samples_of(condition) if (self.run_files and condition) else []
        label = self.query_one("#res-condition", Label)
        if condition is None:
            label.update("no conditions in this run")
        else:
            by_role = ", ".join(f"{sum(s.role == r for s in samples)} {r}" for r in ("unseen", "seen")
                                if any(s.role == r for s in samples))
            text = Text(f"{terminal(short_condition(condition), line=True)}: {len(samples)} samples" + (f" ({by_role})" if by_role else ""),
                        style="bold")
            if not samples:
                text.append("  (the run wrote no generations.jsonl or samples.jsonl)", style="dim")
            elif not self.shown_run.traced:
                text.append("  texts only: step traces need log_samples = true", style="dim")
            label.update(text)
        trace = self.query_one("#res-trace", TraceView)
        trace.title = trace_title(samples[0]) if samples else ""
        trace.load(samples[0].generation if samples else None, at_end=True)
        self.query_one("#res-sample-list", SampleList).show(samples)

    @on(OptionList.OptionHighlighted, "#res-sample-list")
    @on(OptionList.OptionSelected, "#res-sample-list")
    def _sample_picked(self, event: OptionList.OptionHighlighted | OptionList.OptionSelected) -> None:
        """The sample under the cursor is the one shown: arrows move through them, enter picks one."""
        if self.run_files is None or self.condition is None or event.option.id is None:
            return
        sample = self.run_files.samples_of(self.condition)[int(event.option.id)]
        trace = self.query_one("#res-trace", TraceView)
        if trace.generation is sample.generation:  # already shown (and maybe stepped back already)
            return
        trace.title = trace_title(sample)
        trace.load(sample.generation, at_end=True)

    def action_step(self, delta: int) -> None:
        self.query_one("#res-trace", TraceView).step(delta)

    def action_tab(self, tab: str) -> None:
        self.query_one("#res-tabs", TabbedContent).active = tab
        self._focus_tab(tab)

    @on(TabbedContent.TabActivated, "#res-tabs")
    def _tab_clicked(self, event: TabbedContent.TabActivated) -> None:
        self._focus_tab(event.pane.id or "")

    def _focus_tab(self, tab: str) -> None:
        if tab in TAB_FOCUS:
            self.query_one(TAB_FOCUS[tab]).focus()

    def action_focus_runs(self) -> None:
        self.query_one("#res-runs", Select).focus()
