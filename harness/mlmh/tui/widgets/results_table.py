"""Conditions × metrics on one document set (unseen or seen) with confidence intervals, the best value of
each column starred, and below them the baselines of each masking (every mask filled with the filler word;
the masked words deleted), as report.md's quality table has them. A click on a column header (or ``s``)
sorts the conditions by it, again to reverse; the baselines stay last. Which cells are best and whether a
metric is better high or low are :mod:`mlmh.results`' answers; a condition the answer leaves out of a metric's
claims (:func:`mlmh.findings.verdicts.caveats_of`: a model on the unigram plateau, no better than a baseline,
memorised) is dimmed there and never starred. Each column prints one number format; a CI shows as ± its wider
half, so that as many metrics as fit show at once, ``c`` shows the whole CIs. Wider than the screen, it scrolls
sideways (→ and ←) with the model, masking and sampler columns kept in view."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Collection, Mapping

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from mlmh.findings.verdicts import caveats_of
from mlmh.machine.escape import terminal
from mlmh.results import best_keys, higher_is_better
from mlmh.tui.labels import distinct_specs, number, short_spec
from mlmh.tui.widgets.plots import downstream_keys
from mlmh.types import ConditionResult, RunResults, Score

LABEL_COLUMNS = ("model", "masking", "sampler")


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    higher_is_better: bool | None  # None: a label column, never starred


def _value(cell: Any) -> float | None:
    if isinstance(cell, Score):
        cell = cell.value
    return float(cell) if isinstance(cell, (int, float)) and not isinstance(cell, bool) else None


def columns_of(conditions: list[ConditionResult], role: str | None = None) -> list[Column]:
    """Label columns, then every metric scored on ``role``, then every downstream ``task:metric``, in first-seen order."""
    columns = [Column(k, k, None) for k in LABEL_COLUMNS]
    names: dict[str, None] = {}
    for condition in conditions:
        names.update(dict.fromkeys(condition.quality(role)))
    columns += [Column(f"metric:{name}", name, higher_is_better(conditions, name)) for name in names]
    columns += [Column(f"downstream:{key}", key, True) for key in downstream_keys(conditions)]
    return columns


@dataclass(frozen=True)
class BaselineRow:
    """A baseline of one masking on the table's document set: its label and its metric scores."""

    key: str
    label: str
    masking: str
    scores: dict[str, Score]


def baseline_rows(conditions: list[ConditionResult], role: str | None, filler_word: str | None) -> list[BaselineRow]:
    """The filler's and the deletion's scores per masking, from the first condition of each masking that has
    them (every condition of a masking shares its masks, so their baselines are the same)."""
    rows: dict[str, BaselineRow] = {}
    for condition in conditions:
        block = getattr(condition, role or "", None)
        if block is None:
            continue
        for kind, label, scores in (("filler", f'filler "{filler_word or "?"}"', block.filler),
                                    ("deletion", "deletion", block.deletion)):
            key = f"baseline:{kind}:{condition.masking}"
            if scores and key not in rows:
                rows[key] = BaselineRow(key, label, condition.masking, scores)
    return sorted(rows.values(), key=lambda r: r.masking)  # per masking, the filler first (a stable sort)


def left_out(results: RunResults, role: str | None) -> dict[str, set[str]]:
    """Per column of the table on ``role``, the ids of the conditions the answer leaves out of that column's claims,
    by the answer's own rule (:meth:`mlmh.findings.paper_claims.Evidence.usable`: a failed condition, or any caveat
    of :func:`mlmh.findings.verdicts.caveats_of` on the unseen documents; on a downstream score, the model's)."""
    out: dict[str, set[str]] = {}
    for column in columns_of(results.conditions, role):
        kind, _, name = column.key.partition(":")
        if kind in ("metric", "downstream"):
            metric = name if kind == "metric" else None
            out[column.key] = {row.id for row in results.conditions if row.failed or caveats_of(results, row, metric)}
    return out


def cell_of(condition: ConditionResult, column: Column, role: str | None = None) -> Any:
    """The value of ``column`` for ``condition`` on ``role``: a label, a :class:`~mlmh.types.Score` or a number."""
    if column.higher_is_better is None:
        return short_spec(str(getattr(condition, column.key, "") or ""))
    kind, _, rest = column.key.partition(":")
    if kind == "metric":
        return condition.quality(role).get(rest)
    task, _, metric = rest.partition(":")
    return (condition.downstream.get(task) or {}).get(metric)


def baseline_cell(row: BaselineRow, column: Column) -> Any:
    if column.key == "model":
        return row.label
    if column.key == "masking":
        return short_spec(row.masking)
    kind, _, rest = column.key.partition(":")
    return row.scores.get(rest) if kind == "metric" else None


def best_of(conditions: list[ConditionResult], column: Column, role: str | None = None,
            excluded: Collection[str] = ()) -> set[str]:
    """Ids of the conditions best in ``column`` (none for a label column), among those not ``excluded``."""
    if column.higher_is_better is None:
        return set()
    return best_keys({c.id: _value(cell_of(c, column, role)) for c in conditions if c.id not in excluded},
                     column.higher_is_better)


@dataclass(frozen=True)
class CellFormat:
    """How one column prints its numbers: the digits of its largest magnitude (``like``), and its CIs whole
    (``[0.580,0.620]``) or as their wider half (``±0.020``)."""

    like: float | None = None
    whole_cis: bool = False

    def ci(self, cell: Score, value: float) -> str:
        if cell.ci_low is None or cell.ci_high is None:
            return ""
        if self.whole_cis:
            return f" [{number(cell.ci_low, self.like)},{number(cell.ci_high, self.like)}]"
        return f" ±{number(max(cell.ci_high - value, value - cell.ci_low), self.like)}"


def format_cell(cell: Any, best: bool, form: CellFormat = CellFormat(), dim: bool = False) -> Text:
    """A label, or a number in ``form`` with its CI dimmed; ``best`` stars it, ``dim`` (left out) greys it."""
    if not isinstance(cell, (Score, int, float)) or isinstance(cell, bool):
        return Text(str(cell) if cell is not None else "–", style="" if cell is not None else "dim")
    value = _value(cell)
    if value is None:
        return Text("–", style="dim")
    text = Text(number(value, form.like))
    if isinstance(cell, Score):
        text.append(form.ci(cell, value), style="dim")
    if dim:
        text.stylize("dim")
    elif best:
        text.stylize("bold green")
        text.append(" ★", style="bold yellow")
    return text


class ResultsTable(DataTable):
    """The comparison table of a results.json; rows are keyed by condition id, baselines by ``baseline:KIND:MASKING``."""

    BINDINGS = [
        Binding("s", "sort_next", "Sort"),
        Binding("r", "sort_reverse", "Reverse sort", show=False),
        Binding("c", "toggle_cis", "CIs"),
    ]

    class ColumnsMoved(Message):
        """The table was laid out, resized or scrolled sideways: :meth:`columns_out_of_view` may have changed."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.ColumnsMoved())

    def watch_scroll_x(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_x(old_value, new_value)
        self.post_message(self.ColumnsMoved())

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.fixed_columns = len(LABEL_COLUMNS)  # which condition a row is stays in view while scrolling sideways
        self.conditions: list[ConditionResult] = []
        self.baselines: list[BaselineRow] = []
        self.role: str | None = None
        self.table_columns: list[Column] = []
        self.left_out: Mapping[str, set[str]] = {}
        self.sort_key: str | None = None
        self.sort_reverse = False
        self.whole_cis = False

    def show_conditions(self, conditions: list[ConditionResult], role: str | None = None,
                        baselines: list[BaselineRow] | None = None, left_out: Mapping[str, set[str]] | None = None) -> None:
        """The conditions' scores on ``role`` (the headline set's when None), then ``baselines``; ``left_out``
        (:func:`left_out`) dims the cells of the conditions the answer leaves out."""
        self.conditions, self.role, self.baselines = list(conditions), role, list(baselines or [])
        self.left_out = dict(left_out or {})
        self.table_columns = columns_of(self.conditions, role)
        self.sort_key, self.sort_reverse = None, False
        self._fill()

    def sort_by(self, key: str) -> None:
        """Sort by column ``key``; sorting by the same column again reverses. Missing values go last."""
        if key == self.sort_key:
            self.sort_reverse = not self.sort_reverse
        else:
            column = next(c for c in self.table_columns if c.key == key)
            self.sort_key, self.sort_reverse = key, bool(column.higher_is_better)
        self._fill()

    def ordered(self) -> list[ConditionResult]:
        if self.sort_key is None:
            return list(self.conditions)
        column = next(c for c in self.table_columns if c.key == self.sort_key)
        if column.higher_is_better is None:
            return sorted(self.conditions, key=lambda c: str(cell_of(c, column)), reverse=self.sort_reverse)
        present = [c for c in self.conditions if _value(cell_of(c, column, self.role)) is not None]
        missing = [c for c in self.conditions if _value(cell_of(c, column, self.role)) is None]
        present.sort(key=lambda c: _value(cell_of(c, column, self.role)) or 0.0, reverse=self.sort_reverse)
        return present + missing

    def _labels(self) -> dict[str, dict[str, str]]:
        """Per label column, each condition's spec without the parameters every row shares."""
        return {c.key: distinct_specs([str(getattr(row, c.key, "") or "") for row in self.conditions])
                for c in self.table_columns if c.higher_is_better is None}

    def _formats(self) -> dict[str, CellFormat]:
        """Per column, one number format: the digits of its largest magnitude over conditions and baselines."""
        formats = {}
        for column in self.table_columns:
            values = [_value(cell_of(c, column, self.role)) for c in self.conditions]
            values += [_value(baseline_cell(row, column)) for row in self.baselines]
            magnitudes = [abs(v) for v in values if v is not None]
            formats[column.key] = CellFormat(max(magnitudes, default=None), self.whole_cis)
        return formats

    def _fill(self) -> None:
        """Rebuild columns and rows; widths are set from the content, so a refill never truncates."""
        self.clear(columns=True)
        left_out = {c.key: self.left_out.get(c.key, set()) for c in self.table_columns}
        bests = {c.key: best_of(self.conditions, c, self.role, left_out[c.key]) for c in self.table_columns}
        labels, formats = self._labels(), self._formats()

        def cell(condition: ConditionResult, column: Column) -> Text:
            if column.key in labels:
                return Text(terminal(labels[column.key].get(str(getattr(condition, column.key, "") or ""), ""), line=True))
            return format_cell(cell_of(condition, column, self.role), condition.id in bests[column.key],
                               formats[column.key], dim=condition.id in left_out[column.key])

        rows = [(condition.id, [cell(condition, c) for c in self.table_columns]) for condition in self.ordered()]
        for row in self.baselines:  # last whatever the sort, in italics: no condition, never starred
            cells = [format_cell(baseline_cell(row, c), False, formats[c.key]) for c in self.table_columns]
            if "masking" in labels:  # as the conditions of its masking name it
                cells[[c.key for c in self.table_columns].index("masking")] = Text(labels["masking"].get(row.masking, short_spec(row.masking)))
            for text in cells:
                text.stylize("italic")
            rows.append((row.key, cells))
        for index, column in enumerate(self.table_columns):
            arrow = ""
            if column.key == self.sort_key:
                arrow = " ▼" if self.sort_reverse else " ▲"
            label = column.label + arrow
            width = max([len(label)] + [cells[index].cell_len for _, cells in rows])
            self.add_column(label, key=column.key, width=width)
        for key, cells in rows:
            self.add_row(*cells, key=key)

    def columns_out_of_view(self) -> int:
        """How many columns end beyond the right edge at the current sideways scroll (0 before layout)."""
        view = self.scrollable_content_region.width
        if not view:
            return 0
        edge, hidden = 0, 0
        for index, column in enumerate(self.ordered_columns):
            edge += column.get_render_width(self)
            shift = self.scroll_x if index >= self.fixed_columns else 0  # the label columns never scroll
            hidden += edge - shift > view
        return hidden

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(str(event.column_key.value))

    def action_sort_next(self) -> None:
        """Sort by the next column (metrics first, best first); wraps around to the labels."""
        keys = [c.key for c in self.table_columns]
        if not keys:
            return
        start = keys.index(self.sort_key) + 1 if self.sort_key in keys else len(LABEL_COLUMNS)
        self.sort_by(keys[start % len(keys)])

    def action_sort_reverse(self) -> None:
        if self.sort_key is not None:
            self.sort_by(self.sort_key)

    def action_toggle_cis(self) -> None:
        """Whole CIs, or back to ± their wider half."""
        self.whole_cis = not self.whole_cis
        self._fill()
        self.post_message(self.ColumnsMoved())
