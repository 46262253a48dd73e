"""One progress bar (with ETA) per stage of a run, fed by the runner's events."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Label, ProgressBar

from mlmh.events import Progress, RunEvent, StageFinished, StageStarted
from mlmh.run.eta import Eta, eta_text
from mlmh.run.progress import progress_key


#: progress info the bar itself already shows (or that is noise in one line)
_SHOWN_BY_BAR = {"step", "total", "completed", "eta", "tokens", "seconds"}


def _info_text(info: dict) -> str:
    """One short line from a progress info dict, e.g. ``train · loss 5.38``."""
    parts = []
    for key, value in info.items():
        if key in _SHOWN_BY_BAR or isinstance(value, bool):
            continue
        if key == "stage":
            parts.append(str(value))
        elif isinstance(value, float):
            parts.append(f"{key} {value:.3g}")
        elif isinstance(value, (int, str)):
            parts.append(f"{key} {value}")
    return " · ".join(parts)


class StageRow(Horizontal):
    """Label, bar, ETA (:class:`mlmh.run.eta.Eta`, the rule of every face) and the latest progress info
    (e.g. training loss) of one stage."""

    DEFAULT_CLASSES = "stage-row"

    def __init__(self, stage: str, description: str, total: int | None) -> None:
        super().__init__()
        self.eta = Eta()
        self.stage = stage
        self.description = description or stage
        self.total = total
        self.completed = 0
        self.info: dict = {}
        self.finished: float | None = None

    def compose(self) -> ComposeResult:
        yield Label(self.description, classes="stage-label")
        yield ProgressBar(total=self.total, show_eta=False, show_percentage=True)
        yield Label("", classes="stage-eta")
        yield Label("", classes="stage-info")

    def on_mount(self) -> None:
        self.call_after_refresh(self._apply)  # after the bar's own mount, which resets it

    def advance_to(self, completed: int, total: int | None, info: dict) -> None:
        self.completed = completed
        self.total = total if total is not None else self.total
        self.info = info
        self.eta.observe(completed, self.total, time.monotonic(), restart=bool(info.get("cached")))
        self._apply()

    def finish(self, seconds: float) -> None:
        self.finished = seconds
        self._apply()

    def _apply(self) -> None:
        """Events may arrive before the row is mounted: state is kept and drawn when it is (and none once its parts
        are gone: a row removed, or the app closing, before a call made after a refresh)."""
        if not self.is_mounted or len(self.query(".stage-eta, .stage-info, ProgressBar")) < 3:
            return
        bar = self.query_one(ProgressBar)
        if self.finished is not None:
            total = self.total or bar.total or 1
            bar.update(total=total, progress=total)
            self.query_one(".stage-eta", Label).update("")
            self.query_one(".stage-info", Label).update(Text(f"done {self.finished:.1f} s", style="green"))
            self.add_class("done")
            return
        bar.update(total=self.total, progress=self.completed)
        self.query_one(".stage-eta", Label).update(eta_text(self.eta.remaining()) if self.total else "")
        self.query_one(".stage-info", Label).update(_info_text(self.info))


class ProgressPanel(VerticalScroll):
    """Stages appear as the runner starts them; each keeps its bar when finished."""

    DEFAULT_CLASSES = "progress-panel"

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.rows: dict[str, StageRow] = {}  # by stage; a row may still be mounting when its next event arrives

    def clear(self) -> None:
        self.rows.clear()
        self.remove_children()

    def row(self, stage: str) -> StageRow | None:
        return self.rows.get(stage)

    def _add(self, stage: str, description: str, total: int | None) -> StageRow:
        row = StageRow(stage, description, total)
        self.rows[stage] = row
        self.mount(row)
        self.scroll_end(animate=False)
        return row

    @property
    def all_done(self) -> bool:
        return all(row.finished is not None for row in self.rows.values())

    def handle(self, event: RunEvent) -> None:
        """Update from one event; other event kinds are ignored."""
        if isinstance(event, StageStarted):
            existing = self.rows.pop(event.stage, None)
            if existing is not None:
                existing.remove()
            self._add(event.stage, event.description, event.total)
        elif isinstance(event, Progress):
            key, label = progress_key(event)  # a row per model while training, as the other faces have
            row = self.row(key) or self._add(key, label, event.total)
            row.advance_to(event.completed, event.total, dict(event.info))
        elif isinstance(event, StageFinished):
            finished = self.row(event.stage)
            if finished is not None:
                finished.finish(event.seconds)
