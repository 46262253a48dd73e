"""Conditions × metrics with confidence intervals, the best value of each column starred; a click
on a column header (or ``s``) sorts by it, again to reverse. Which cells are best and whether a metric
is better high or low are :mod:`mlmh.results`' answers, so the table stars what report.md puts in bold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable

from mlmh.results import best_keys, higher_is_better
from mlmh.tui.labels import number, short_spec
from mlmh.tui.widgets.plots import downstream_keys
from mlmh.types import ConditionResult, Score

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


def columns_of(conditions: list[ConditionResult]) -> list[Column]:
    """Label columns, then every metric, then every downstream ``task:metric``, in first-seen order."""
    columns = [Column(k, k, None) for k in LABEL_COLUMNS]
    names: dict[str, None] = {}
    for condition in conditions:
        names.update(dict.fromkeys(condition.metrics))
    columns += [Column(f"metric:{name}", name, higher_is_better(conditions, name)) for name in names]
    columns += [Column(f"downstream:{key}", key, True) for key in downstream_keys(conditions)]
    return columns


def cell_of(condition: ConditionResult, column: Column) -> Any:
    """The value of ``column`` for ``condition``: a label, a :class:`~mlmh.types.Score` or a number."""
    if column.higher_is_better is None:
        return short_spec(str(getattr(condition, column.key, "") or ""))
    kind, _, rest = column.key.partition(":")
    if kind == "metric":
        return condition.metrics.get(rest)
    task, _, metric = rest.partition(":")
    return (condition.downstream.get(task) or {}).get(metric)


def best_of(conditions: list[ConditionResult], column: Column) -> set[str]:
    """Ids of the conditions best in ``column`` (none for a label column)."""
    if column.higher_is_better is None:
        return set()
    return best_keys({c.id: _value(cell_of(c, column)) for c in conditions}, column.higher_is_better)


def format_cell(cell: Any, best: bool) -> Text:
    if not isinstance(cell, (Score, int, float)) or isinstance(cell, bool):
        return Text(str(cell) if cell is not None else "–", style="" if cell is not None else "dim")
    value = _value(cell)
    if value is None:
        return Text("–", style="dim")
    text = Text(number(value))
    if isinstance(cell, Score) and cell.has_ci:
        text.append(f" [{number(cell.ci_low)},{number(cell.ci_high)}]", style="dim")  # type: ignore[arg-type]
    if best:
        text.stylize("bold green")
        text.append(" ★", style="bold yellow")
    return text


class ResultsTable(DataTable):
    """The comparison table of a results.json; rows are keyed by condition id."""

    BINDINGS = [
        Binding("s", "sort_next", "Sort next column"),
        Binding("r", "sort_reverse", "Reverse sort"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.conditions: list[ConditionResult] = []
        self.table_columns: list[Column] = []
        self.sort_key: str | None = None
        self.sort_reverse = False

    def show_conditions(self, conditions: list[ConditionResult]) -> None:
        self.conditions = list(conditions)
        self.table_columns = columns_of(self.conditions)
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
        present = [c for c in self.conditions if _value(cell_of(c, column)) is not None]
        missing = [c for c in self.conditions if _value(cell_of(c, column)) is None]
        present.sort(key=lambda c: _value(cell_of(c, column)) or 0.0, reverse=self.sort_reverse)
        return present + missing

    def _fill(self) -> None:
        """Rebuild columns and rows; widths are set from the content, so a refill never truncates."""
        self.clear(columns=True)
        bests = {c.key: best_of(self.conditions, c) for c in self.table_columns}
        rows = [(condition.id, [format_cell(cell_of(condition, c), condition.id in bests[c.key]) for c in self.table_columns])
                for condition in self.ordered()]
        for index, column in enumerate(self.table_columns):
            arrow = ""
            if column.key == self.sort_key:
                arrow = " ▼" if self.sort_reverse else " ▲"
            label = column.label + arrow
            width = max([len(label)] + [cells[index].cell_len for _, cells in rows])
            self.add_column(label, key=column.key, width=width)
        for key, cells in rows:
            self.add_row(*cells, key=key)

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
