"""Run screen: start a preset run in a worker, a progress bar per stage with ETA, a live feed of the
generated samples, and cancel. The run takes the CLI's path, :mod:`mlmh.api` (:func:`~mlmh.api.prepare`, then
:func:`~mlmh.api.run`); this screen only listens to its events."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message as TextualMessage
from textual.widgets import Button, Footer, Header, Label, RichLog, Select

from mlmh.errors import MlmhError
from mlmh.events import Message, RunEvent, RunFinished, RunStarted, SampleGenerated
from mlmh.machine.escape import terminal
from mlmh.storage.rundir import RunDir
from mlmh.tui.host import TuiScreen
from mlmh.tui.labels import short_condition
from mlmh.tui.widgets.progress_panel import ProgressPanel

if TYPE_CHECKING:
    from mlmh.api import PreparedRun

#: samples.jsonl (with step traces) is what the results drill-down reads, so TUI runs always log it
TUI_OVERRIDES = {"log_samples": True}
LEVEL_STYLE = {"info": "dim", "warning": "yellow", "error": "bold red"}


class RunEventPosted(TextualMessage):
    def __init__(self, event: RunEvent) -> None:
        super().__init__()
        self.event = event


class RunEnded(TextualMessage):
    """The worker returned: ``error`` is None on success, "cancelled" when the user stopped it."""

    def __init__(self, error: str | None, output_path: str | None) -> None:
        super().__init__()
        self.error = error
        self.output_path = output_path


def prepare_run(preset: str) -> "PreparedRun":
    """A TUI run of ``preset``, checked and placed as ``mlmh eval``'s is (:func:`mlmh.api.prepare`: nothing is made
    for a run refused), with the TUI's overrides."""
    from mlmh import api

    return api.prepare(preset, dict(TUI_OVERRIDES))


def sample_line(event: SampleGenerated) -> Text:
    """One line of the live feed: condition, document and the generated text."""
    generation = event.generation
    text = Text()
    text.append(terminal(short_condition(event.condition), line=True), style="cyan")
    if generation is None:
        return text
    text.append(f" {terminal(generation.doc_id, line=True)} ", style="dim")
    text.append(terminal(" ".join(generation.text.split())[:160], line=True))
    return text


class RunScreen(TuiScreen):
    """Pick a preset, start, watch, cancel; when it finishes, open its results."""

    BINDINGS = [
        Binding("ctrl+r", "start", "Start"),
        Binding("c", "cancel", "Cancel run"),
        Binding("o", "open_results", "Open results"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.cancel_event = threading.Event()
        self.output_path: str | None = None
        self.running = False

    def compose(self) -> ComposeResult:
        from mlmh.registry import get_registry

        presets = get_registry().names("preset")
        chosen = self.app.options.preset
        if chosen and chosen not in presets:  # a preset file given by path
            presets.append(chosen)
        default = chosen or ("quick" if "quick" in presets else Select.NULL)
        yield Header()
        with Horizontal(id="run-controls", classes="form-row"):
            yield Label("preset", classes="form-label")
            yield Select([(p, p) for p in presets], value=default, compact=True, id="run-preset")
            yield Button("Start", id="run-start", variant="primary", compact=True)
            yield Button("Cancel", id="run-cancel", variant="error", compact=True, disabled=True)
            yield Button("Results", id="run-open", compact=True, disabled=True)
        yield Label("", id="run-status")
        with Vertical(id="run-body"):
            yield ProgressPanel(id="run-progress")
            feed = RichLog(id="run-feed", max_lines=500, wrap=True, markup=False, min_width=20)
            feed.border_title = "samples and messages"
            yield feed
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#run-status", Label).update("pick a preset and press Start (ctrl+r)")
        self.query_one("#run-start", Button).focus()
        if self.app.options.preset:
            self.call_after_refresh(self.action_start)

    # -- actions ------------------------------------------------------------------------------
    @on(Button.Pressed, "#run-start")
    def action_start(self) -> None:
        if self.running:
            return
        preset = self.query_one("#run-preset", Select).value
        if not isinstance(preset, str):
            self.notify("pick a preset first", severity="error")
            return
        options = self.app.options
        prepared, options.prepared = options.prepared, None  # mlmh tui --preset's run, for the first start only
        try:
            if prepared is None or preset != options.preset:  # checked here (or by mlmh tui --preset), run as checked
                prepared = prepare_run(preset)
        except MlmhError as exc:
            self.notify(str(exc), severity="error", title="Cannot start")
            return
        self.query_one("#run-progress", ProgressPanel).clear()
        self.query_one("#run-feed", RichLog).clear()
        self.cancel_event = self.app.job_event()
        self.running = True
        self.output_path = None
        self._set_buttons()
        self.query_one("#run-status", Label).update(f"running preset {preset} …")
        self._run(prepared, self.cancel_event)

    @on(Button.Pressed, "#run-cancel")
    def action_cancel(self) -> None:
        if self.running and not self.cancel_event.is_set():
            self.cancel_event.set()
            self.query_one("#run-status", Label).update("cancelling after the current batch …")

    @on(Button.Pressed, "#run-open")
    def action_open_results(self) -> None:
        if self.output_path and not self.running and RunDir(self.output_path).finished:
            self.app.open_results(self.output_path)

    def _set_buttons(self) -> None:
        self.query_one("#run-start", Button).disabled = self.running
        self.query_one("#run-cancel", Button).disabled = not self.running
        self.query_one("#run-open", Button).disabled = self.running or not self.output_path

    # -- the worker -----------------------------------------------------------------------------
    @work(thread=True, exclusive=True, group="run")
    def _run(self, prepared: PreparedRun, cancel: threading.Event) -> None:
        from mlmh import api
        from mlmh.errors import RunCancelled

        output: list[str] = []

        def listen(event: RunEvent) -> None:
            if isinstance(event, RunStarted):
                output.append(event.output_path)
            self.post_message(RunEventPosted(event))

        try:
            api.run(prepared, progress=listen, cancel=cancel)
        except RunCancelled:
            self.post_message(RunEnded("cancelled", output[0] if output else None))
        except MlmhError as exc:
            self.post_message(RunEnded(str(exc), output[0] if output else None))
        except Exception as exc:  # a plugin's bug must not take the UI down
            self.post_message(RunEnded(f"{type(exc).__name__}: {exc}", output[0] if output else None))
        else:
            self.post_message(RunEnded(None, output[0] if output else None))

    def on_run_event_posted(self, message: RunEventPosted) -> None:
        event = message.event
        self.query_one("#run-progress", ProgressPanel).handle(event)
        feed = self.query_one("#run-feed", RichLog)
        if isinstance(event, SampleGenerated):
            feed.write(sample_line(event))
        elif isinstance(event, Message):
            feed.write(Text(f"[{event.level}] {terminal(event.text)}", style=LEVEL_STYLE.get(event.level, "")))
        elif isinstance(event, RunStarted):
            self.output_path = event.output_path
            self.query_one("#run-status", Label).update(
                f"running {event.n_conditions} conditions → {event.output_path}")
        elif isinstance(event, RunFinished):
            self.output_path = event.output_path

    def on_run_ended(self, message: RunEnded) -> None:
        self.running = False
        self.output_path = message.output_path or self.output_path
        status = self.query_one("#run-status", Label)
        if message.error is None:
            status.update(Text(f"finished → {self.output_path}  (o: open results)", style="green"))
        elif message.error == "cancelled":
            status.update(Text("cancelled; finished batches are cached (mlmh eval --resume continues)", style="yellow"))
        else:
            status.update(Text(f"failed: {message.error}", style="bold red"))
            self.notify(message.error, severity="error", title="Run failed")
        self._set_buttons()
