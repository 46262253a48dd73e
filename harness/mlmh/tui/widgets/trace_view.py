"""A generation's step trace that can be stepped through: the playground's two sides and the
results drill-down use the same widget."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static

from mlmh.tui.widgets.token_view import Frame, TokenView, frames_of
from mlmh.types import Generation


def generation_stats(generation: Generation) -> str:
    """Cost of one generation: forward passes, wall time and generated tokens per second (nothing when the
    run kept only its texts, generations.jsonl)."""
    if not generation.forward_passes and not generation.seconds:
        return ""
    rate = generation.generated_tokens / generation.seconds if generation.seconds > 0 else 0.0
    return f"{generation.forward_passes} passes · {generation.seconds:.2f} s · {rate:.0f} tok/s"


class TraceView(Widget):
    """Title, ``step i/n`` and the frame at ``index`` of one generation; ``index`` 0 is the masked input."""

    DEFAULT_CLASSES = "trace-view"
    index: reactive[int] = reactive(0)

    def __init__(self, title: str | Text = "", *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title
        self.generation: Generation | None = None
        self.frames: list[Frame] = []
        self.status = "no generation yet"

    def compose(self) -> ComposeResult:
        yield Static(self._header(), classes="trace-header")
        with VerticalScroll(classes="trace-body"):
            yield TokenView()
        yield Static("", classes="trace-stats")

    @property
    def last(self) -> int:
        return max(0, len(self.frames) - 1)

    @property
    def at_end(self) -> bool:
        return self.index >= self.last

    def load(self, generation: Generation | None, *, at_end: bool = False) -> None:
        """Show ``generation`` from its masked input (or from its final state when ``at_end``)."""
        self.generation = generation
        self.frames = frames_of(generation.steps) if generation is not None else []
        self.index = self.last if at_end else 0
        self.mutate_reactive(TraceView.index)

    def set_status(self, status: str) -> None:
        """A line shown instead of tokens while there is nothing to show (loading, training, error)."""
        self.status = status
        if not self.frames:
            self._refresh()

    def step(self, delta: int) -> bool:
        """Move ``delta`` frames; False when already at that end."""
        target = min(self.last, max(0, self.index + delta))
        moved = target != self.index
        self.index = target
        return moved

    def watch_index(self, _index: int) -> None:
        self._refresh()

    def on_mount(self) -> None:
        self._refresh()

    def _header(self) -> Text:
        """``step i/n`` first (it must survive a narrow pane), then the sampler's name."""
        text = Text()
        if self.frames:
            text.append("masked input" if self.index == 0 else f"step {self.index}/{self.last}", style="bold yellow")
        if self.generation is not None:
            text.append(f"  {self.generation.sampler.partition(':')[0]}", style="cyan")
        return text

    def _refresh(self) -> None:
        if not self.is_mounted:
            return
        self.border_title = self.title
        self.query_one(".trace-header", Static).update(self._header())
        view = self.query_one(TokenView)
        if self.frames:
            view.show(self.frames[self.index])
        elif self.generation is not None:  # a generation saved without its step trace
            view.update(Text.assemble((self.generation.masked_text, "dim"), "\n→ ", self.generation.text))
        else:
            view.show(None, self.status)
        stats = generation_stats(self.generation) if self.generation is not None else ""
        self.query_one(".trace-stats", Static).update(Text(stats, style="dim"))
