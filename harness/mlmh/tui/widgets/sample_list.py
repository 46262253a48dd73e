"""The samples of one condition as a list, two lines each: the document id, cut at its end to the list's width
(read from its start, so ``py:selectors.register`` and ``py:selectors.unregister`` stay apart), then its document
set and its first scores, each metric in one number format. The labels are drawn again when the list changes
width, so an id is cut only where the list has no room for it."""

from __future__ import annotations

from rich.text import Text
from textual import events
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from mlmh.machine.escape import terminal
from mlmh.tui.labels import number, short_id
from mlmh.types import SampleRow

#: the per-sample scores a label shows
SCORES = 2


def score_scales(samples: list[SampleRow]) -> dict[str, float]:
    """Per metric, the largest magnitude over ``samples``: the digits every sample's score of it is written with."""
    scales: dict[str, float] = {}
    for sample in samples:
        for name, value in sample.metrics.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                scales[name] = max(scales.get(name, 0.0), abs(float(value)))
    return scales


def sample_label(sample: SampleRow, width: int, scales: dict[str, float] | None = None) -> Text:
    """Two lines: the id cut at ``width``, then the document set and the first scores (in ``scales``' digits)."""
    text = Text(short_id(terminal(sample.generation.doc_id, line=True), max(width, 4)), style="bold")
    details = Text("  ")
    if sample.role:
        details.append(sample.role, style="cyan" if sample.role == "unseen" else "magenta")
    scores = [f"{name} {number(value, (scales or {}).get(name))}" for name, value in list(sample.metrics.items())[:SCORES]
              if isinstance(value, (int, float)) and not isinstance(value, bool)]
    if scores:
        details.append(("  " if sample.role else "") + " ".join(scores), style="dim")
    if details.plain.strip():
        text.append("\n")
        text.append_text(details)
    return text


class SampleList(OptionList):
    """One condition's samples; an option's id is the sample's index in :attr:`samples`."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.samples: list[SampleRow] = []

    def show(self, samples: list[SampleRow]) -> None:
        """List ``samples``, the first highlighted."""
        self.samples = list(samples)
        self._draw(0 if self.samples else None)

    def on_resize(self, event: events.Resize) -> None:
        self._draw(self.highlighted)

    def _draw(self, highlighted: int | None) -> None:
        width = self.scrollable_content_region.width or 40
        scales = score_scales(self.samples)
        self.clear_options()
        self.add_options([Option(sample_label(sample, width, scales), id=str(index))
                          for index, sample in enumerate(self.samples)])
        if highlighted is not None and self.samples:
            self.highlighted = highlighted
