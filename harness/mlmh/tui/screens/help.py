"""``?``: the keys of the screen underneath, read from its live bindings so the list never goes stale."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.dom import DOMNode
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Static


def declared_by_mlmh(node: DOMNode, binding: Binding) -> bool:
    """Whether ``binding`` is one of mlmh's own (declared by an mlmh class of ``node``), not one Textual gives
    every widget of its kind (scrolling, copying, focus)."""
    for cls in type(node).__mro__:
        if cls.__module__.startswith("mlmh") and "BINDINGS" in vars(cls):
            if any(isinstance(b, Binding) and binding.key in b.key.split(",")
                   and (b.action, b.description) == (binding.action, binding.description) for b in vars(cls)["BINDINGS"]):
                return True
    return False


def binding_rows(screen: Screen) -> list[tuple[str, str]]:
    """(key, description) of every binding with a description active on ``screen``, app bindings included:
    mlmh's own first (the focused widget's, the screen's, the app's), then Textual's generic ones."""
    own: list[tuple[str, str]] = []
    generic: list[tuple[str, str]] = []
    for active in screen.active_bindings.values():
        binding = active.binding
        if binding.description:
            row = (binding.key_display or screen.app.get_key_display(binding), binding.description)
            rows = own if declared_by_mlmh(active.node, binding) else generic
            if row not in own and row not in generic:
                rows.append(row)
    return own + generic


class HelpScreen(ModalScreen[None]):
    """A table of keys; any of escape, q or ? closes it."""

    BINDINGS = [
        Binding("escape", "dismiss", "Close", show=False),
        Binding("q", "dismiss", "Close", show=False),
        Binding("question_mark", "dismiss", "Close", show=False),
    ]

    def __init__(self, under: Screen) -> None:
        super().__init__()
        self.rows = binding_rows(under)
        self.under_title = type(under).__name__.replace("Screen", "")

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Static(f"Keys — {self.under_title}   (esc closes)", id="help-title")
            table: DataTable = DataTable(cursor_type="none", show_header=False)
            table.add_columns("key", "action")
            for key, description in self.rows:
                table.add_row(key, description)
            yield table
