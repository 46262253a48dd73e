"""Results screen: load any results.json; compare conditions in a sortable table, plot a metric
against masking ratio and quality against downstream score, and drill into samples and their traces."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import (Button, DataTable, Footer, Header, Input, Label, OptionList, Select, TabbedContent,
                             TabPane)
from textual.widgets.option_list import Option

from mlmh.errors import MlmhError
from mlmh.rundir import RESULTS
from mlmh.tui.labels import short_condition, short_spec
from mlmh.tui.run_files import RunFiles, load_run
from mlmh.tui.widgets.plots import CrossoverPlot, MetricByRatioPlot, QualityDownstreamPlot, downstream_keys
from mlmh.tui.widgets.results_table import ResultsTable
from mlmh.tui.widgets.trace_view import TraceView


def sample_label(index: int, sample) -> Text:
    text = Text(f"{sample.generation.doc_id}", style="bold")
    scores = [f"{k} {v:.2f}" for k, v in list(sample.metrics.items())[:2] if isinstance(v, (int, float))]
    if scores:
        text.append("  " + " ".join(scores), style="dim")
    return text


class ResultsScreen(Screen):
    """Table, Plots and Samples tabs over one loaded run."""

    BINDINGS = [
        Binding("ctrl+o", "focus_path", "Open file"),
        Binding("t", "tab('tab-table')", "Table"),
        Binding("p", "tab('tab-plots')", "Plots"),
        Binding("a", "tab('tab-samples')", "Samples"),
        Binding("left", "step(-1)", "Step back", show=False),
        Binding("right", "step(1)", "Step forward", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.run_files: RunFiles | None = None
        self.condition: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(classes="form-row", id="res-open"):
            yield Input(self.app.options.run_dir or "", placeholder=f"run directory or {RESULTS}",  # type: ignore[attr-defined]
                        compact=True, id="res-path")
            yield Button("Load", id="res-load", compact=True, variant="primary")
        yield Label("", id="res-status")
        with TabbedContent(initial="tab-table", id="res-tabs"):
            with TabPane("Table", id="tab-table"):
                yield ResultsTable(id="res-table")
            with TabPane("Plots", id="tab-plots"):
                with Horizontal(classes="form-row"):
                    yield Select([], prompt="metric", compact=True, id="res-metric")
                    yield Select([], prompt="downstream", compact=True, id="res-downstream")
                with Horizontal(id="res-plots"):
                    yield MetricByRatioPlot(id="res-plot-ratio")
                    yield QualityDownstreamPlot(id="res-plot-downstream")
                # a data-constrained sweep's answer and curves (mlmh.crossover); shown only for such a run
                yield Label("", id="res-crossover")
                yield CrossoverPlot(id="res-plot-crossover")
            with TabPane("Samples", id="tab-samples"):
                yield Label("pick a condition in the table (enter)", id="res-condition")
                with Horizontal(id="res-samples"):
                    yield OptionList(id="res-sample-list")
                    yield TraceView("", id="res-trace")
        yield Footer()

    def on_mount(self) -> None:
        path = self.app.options.run_dir  # type: ignore[attr-defined]
        if path:
            self.load(path)
        else:
            self.query_one("#res-status", Label).update("type a run directory (runs/…) and press enter")
            self.query_one("#res-path", Input).focus()

    # -- loading ----------------------------------------------------------------------------------
    @on(Input.Submitted, "#res-path")
    @on(Button.Pressed, "#res-load")
    def _load_pressed(self) -> None:
        self.load(self.query_one("#res-path", Input).value.strip())

    def load(self, path: str) -> None:
        status = self.query_one("#res-status", Label)
        try:
            run = load_run(path)
        except MlmhError as exc:
            status.update(Text(str(exc), style="bold red"))
            return
        self.run_files = run
        self.query_one("#res-path", Input).value = str(path)
        conditions = run.conditions
        status.update(f"{run.results.config.get('preset', '?')}: {len(conditions)} conditions, {run.results.n_samples} "
                      f"samples each, {len(run.samples)} with traces  ({run.path})")
        self.query_one(ResultsTable).show_conditions(conditions)
        metrics = [c.label for c in self.query_one(ResultsTable).table_columns if c.key.startswith("metric:")]
        metric_select = self.query_one("#res-metric", Select)
        metric_select.set_options([(m, m) for m in metrics])
        if metrics:
            metric_select.value = metrics[0]
        downstream = downstream_keys(conditions)
        downstream_select = self.query_one("#res-downstream", Select)
        downstream_select.set_options([(d, d) for d in downstream])
        if downstream:
            downstream_select.value = downstream[0]
        self._plot()
        self._show_crossover()
        self.show_condition(conditions[0].id if conditions else None)
        self.query_one(ResultsTable).focus()

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
        self.query_one(MetricByRatioPlot).show(self.run_files.results, metric)
        self.query_one(QualityDownstreamPlot).show(self.run_files.results, metric,
                                                   downstream if isinstance(downstream, str) else "")

    def _show_crossover(self) -> None:
        block = self.run_files.results.crossover if self.run_files else None
        label, plot = self.query_one("#res-crossover", Label), self.query_one(CrossoverPlot)
        label.display = plot.display = bool(block)
        if block:
            label.update(Text(block["answer"], style="bold"))
            plot.show(self.run_files.results)  # type: ignore[union-attr]

    # -- drill-down -------------------------------------------------------------------------------
    @on(DataTable.RowSelected, "#res-table")
    def _row_selected(self, event: DataTable.RowSelected) -> None:
        self.show_condition(str(event.row_key.value))
        self.action_tab("tab-samples")
        self.query_one("#res-sample-list", OptionList).focus()  # so left/right step the trace at once

    def show_condition(self, condition: str | None) -> None:
        self.condition = condition
        samples = self.run_files.samples_of(condition) if (self.run_files and condition) else []
        label = self.query_one("#res-condition", Label)
        if condition is None:
            label.update("no conditions in this run")
        else:
            hint = "" if samples else "  (no samples.jsonl lines: run with log_samples = true)"
            label.update(Text(f"{short_condition(condition)}: {len(samples)} samples{hint}", style="bold"))
        options = self.query_one("#res-sample-list", OptionList)
        options.clear_options()
        options.add_options([Option(sample_label(i, s), id=str(i)) for i, s in enumerate(samples)])
        trace = self.query_one("#res-trace", TraceView)
        trace.load(samples[0].generation if samples else None, at_end=True)
        if samples:
            trace.title = short_spec(samples[0].generation.model)
            options.highlighted = 0

    @on(OptionList.OptionHighlighted, "#res-sample-list")
    def _sample_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        if self.run_files is None or self.condition is None or event.option.id is None:
            return
        sample = self.run_files.samples_of(self.condition)[int(event.option.id)]
        trace = self.query_one("#res-trace", TraceView)
        if trace.generation is sample.generation:  # already shown (and maybe stepped back already)
            return
        trace.title = short_spec(sample.generation.model)
        trace.load(sample.generation, at_end=True)

    def action_step(self, delta: int) -> None:
        self.query_one("#res-trace", TraceView).step(delta)

    def action_tab(self, tab: str) -> None:
        self.query_one("#res-tabs", TabbedContent).active = tab

    def action_focus_path(self) -> None:
        self.query_one("#res-path", Input).focus()
