"""One refinement frame drawn as text: masked positions, tokens changed at this step, and each
token's confidence as colour. Pure rendering from a :class:`Frame`, so the trace widget, the
results drill-down and the tests all draw the same thing."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from mlmh.types import Step

#: Markers that are structure, not text: never drawn.
_SPECIAL = re.compile(r"^(\[(CLS|SEP|PAD|BOS|EOS)\]|<s>|</s>|<pad>|<\|endoftext\|>|<\|im_(start|end)\|>)$")
#: Markers a model uses for a hidden token; drawn as a mask block.
_MASK = re.compile(r"^(\[MASK\]|<mask>|<extra_id_\d+>|<\|mask\|>)$")
MASK_GLYPH = "▒▒▒"

MASKED_STYLE = Style(color="grey50", bgcolor="grey19")
CHANGED_STYLE = Style(bold=True, underline=True, bgcolor="dark_blue")


@dataclass
class Frame:
    """What is on screen at one point of a trace: tokens, which are masked / just changed, confidences."""

    tokens: list[str]
    changed: set[int] = field(default_factory=set)
    masked: set[int] = field(default_factory=set)
    confidences: dict[int, float] = field(default_factory=dict)


def frames_of(steps: Sequence[Step]) -> list[Frame]:
    """Frame 0 is the masked input (what step 1 starts from); frame *i* is the state after step *i*.

    Confidences carry over until a position is masked again, so colour shows how sure the model
    was when it last wrote each token.
    """
    if not steps:
        return []
    first = steps[0]
    start_masked = set(first.masked) | set(first.changed)
    frames = [Frame(tokens=list(first.tokens), masked=start_masked)]
    confidences: dict[int, float] = {}
    for step in steps:
        masked = set(step.masked)
        confidences = {p: c for p, c in confidences.items() if p not in masked}
        confidences.update({int(p): float(c) for p, c in step.confidences.items() if int(p) not in masked})
        frames.append(Frame(tokens=list(step.tokens), changed=set(step.changed), masked=masked, confidences=dict(confidences)))
    return frames


def confidence_color(probability: float) -> str:
    """Red (unsure) through yellow to green (sure): a colour a 256-colour terminal can show."""
    p = min(1.0, max(0.0, probability))
    if p < 0.5:
        red, green = 220, int(60 + 320 * p)
    else:
        red, green = int(220 - 360 * (p - 0.5)), 220
    return f"rgb({red},{green},60)"


def _piece(token: str, byte_level: bool) -> tuple[str, bool]:
    """Display text of a subword and whether it joins the previous token without a space."""
    if token.startswith("##"):
        return token[2:], True
    if token.startswith(("Ġ", "▁")):
        return token[1:], False
    if token.startswith("Ċ"):
        return " ", True
    return token, byte_level


def render_frame(frame: Frame) -> Text:
    """The frame as styled text; subwords are joined the way their tokenizer marks them."""
    text = Text()
    byte_level = any(t.startswith("Ġ") for t in frame.tokens)
    first = True
    for position, token in enumerate(frame.tokens):
        if _SPECIAL.match(token) and position not in frame.masked:
            continue
        if position in frame.masked or _MASK.match(token):
            piece, glued = MASK_GLYPH, False
            style: Style | str = MASKED_STYLE
        else:
            piece, glued = _piece(token, byte_level)
            style = Style()
            if position in frame.confidences:
                style = Style(color=confidence_color(frame.confidences[position]))
            if position in frame.changed:
                style = style + CHANGED_STYLE
        if not first and not glued:
            text.append(" ")
        text.append(piece, style=style)
        first = False
    return text


class TokenView(Static):
    """Shows one :class:`Frame`."""

    DEFAULT_CLASSES = "token-view"

    def show(self, frame: Frame | None, placeholder: str = "") -> None:
        self.update(render_frame(frame) if frame is not None else Text(placeholder, style="dim italic"))
