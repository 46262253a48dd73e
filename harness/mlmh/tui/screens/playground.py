"""Playground: mask one text, let two models regenerate the same masked words, and watch each
refinement step by step (masked positions, changed tokens, confidence as colour). Each pane animates as soon
as its own model is ready; until then it says what its model is doing: loading, or on first use training (on
what, how far, how long is left), and animates the training's previews as they come (its title says the step of the
training it shows, its bottom line that step's validation accuracy), until the finished model replaces them. A pane
playing a trace plays it to its end before a newer one replaces it."""

from __future__ import annotations

import threading
import time
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.suggester import SuggestFromList
from textual.widgets import Button, Footer, Header, Input, Label, Select

from mlmh.errors import MlmhError
from mlmh.events import Progress, RunEvent, StageFinished, StageStarted
from mlmh.run.eta import Eta, eta_text
from mlmh.tui.host import TuiScreen
from mlmh.tui.labels import short_spec
from mlmh.tui.playground_job import (DEFAULT_TEXT, Cancelled, PlaygroundRequest, Preview, Side, SideEvent,
                                     compatible_samplers, default_dataset, model_kind_of, preferred_sampler,
                                     run_playground)
from mlmh.tui.widgets.progress_panel import ProgressPanel
from mlmh.tui.widgets.trace_view import TraceView
from mlmh.types import Generation

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0, 16.0)  # steps per second
DEFAULT_SPEED = 3  # index into SPEEDS
EXAMPLES = (
    DEFAULT_TEXT,
    "The patient was given aspirin 81 mg by mouth daily and discharged home in stable condition.",
    "In the film, a retired detective hunts a thief across the old city while the police watch.",
)


EXAMPLE_CHARS = 400  # dataset examples are cut at a sentence end near here: the panes show ~15 lines


def example_excerpt(text: str, limit: int = EXAMPLE_CHARS) -> str:
    """The start of a document, ended at a sentence boundary when there is one."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = max(text.rfind(mark, 0, limit) for mark in (". ", "! ", "? "))
    return text[: cut + 1] if cut > limit // 3 else text[:limit]


class ExamplesLoaded(Message):
    def __init__(self, examples: list[tuple[str, str]]) -> None:
        super().__init__()
        self.examples = examples


class PlaygroundEvent(Message):
    """A run event (model loading / training progress) of some sides' model, from the playground worker."""

    def __init__(self, event: SideEvent) -> None:
        super().__init__()
        self.event = event


def loading_status(model: str, dataset: str, event: RunEvent, eta: Eta, now: float | None = None) -> str | None:
    """What a pane says while its ``model`` is not ready, after ``event`` (at ``now``; ``eta`` observes the steps):
    loading, or training on first use, on what, how far and how long is left; None for an event that changes
    nothing."""
    if isinstance(event, StageStarted):
        return f"loading {model} …"
    if isinstance(event, StageFinished):
        return f"{model} ready: generating …"
    if isinstance(event, Progress):
        training = f"training {model} on {dataset}: first use only, then kept in the model cache · "
        if not event.total:
            return training + "starting"
        eta.observe(event.completed, event.total, time.monotonic() if now is None else now)
        return training + f"step {event.completed}/{event.total} · {eta_text(eta.remaining())}"
    return None


def preview_title(model: str, preview: Preview | None) -> str:
    """A pane's title: its model, and for a training's preview the step of the training it shows."""
    return model if preview is None else f"{model} · preview at step {preview.step}/{preview.total}"


def preview_subtitle(preview: Preview | None) -> str:
    """A pane's bottom line under a training's preview: its validation accuracy beside the best constant's, and
    that the training goes on; nothing under the model itself."""
    if preview is None:
        return ""
    if preview.validation_accuracy is None:
        return "training goes on"
    constant = f" (constant {preview.constant_accuracy:.2f})" if preview.constant_accuracy is not None else ""
    return f"validation accuracy {preview.validation_accuracy:.2f}{constant} · training goes on"


class GenerationReady(Message):
    """A side's generation: by its model, or by a preview of its model's training (``preview``)."""

    def __init__(self, side: int, generation: Generation, preview: Preview | None = None) -> None:
        super().__init__()
        self.side = side
        self.generation = generation
        self.preview = preview


class PlaygroundFailed(Message):
    def __init__(self, error: str) -> None:
        super().__init__()
        self.error = error


class PlaygroundFinished(Message):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds


def _registry_names(kind: str) -> list[str]:
    from mlmh.registry import get_registry

    return [component.name for component in get_registry().all(kind)]


def _has_ratio(masking: str) -> bool:
    from mlmh.registry import get_registry

    try:
        return any(p.name == "ratio" for p in get_registry().get("masking", masking).parameters)
    except MlmhError:
        return False


class PlaygroundScreen(TuiScreen):
    """Left and right: the same masked input regenerated by two models (MLM vs CLM by default)."""

    BINDINGS = [
        Binding("ctrl+r", "run", "Run"),
        Binding("space", "toggle_play", "Play/pause"),
        Binding("left", "step(-1)", "Back"),
        Binding("right", "step(1)", "Forward"),
        Binding("home", "jump(0)", "First", show=False),
        Binding("end", "jump(1)", "Last", show=False),
        Binding("plus,equals_sign", "speed(1)", "Faster", key_display="+", show=False),
        Binding("minus", "speed(-1)", "Slower", key_display="-", show=False),
        Binding("m", "remask", "New mask", show=False),
        Binding("escape", "cancel", "Cancel", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.speed_index = DEFAULT_SPEED
        self.playing = False
        self.seed = 0
        self.cancel_event = threading.Event()
        self._timer: Any = None
        self.etas: dict[int, Eta] = {}  # per pane, of its model's training
        self.running: PlaygroundRequest | None = None
        self.waiting: dict[int, GenerationReady] = {}  # per pane, a newer generation waiting for its trace's end
        self.shown: dict[int, Preview | None] = {}  # per pane showing a generation: the preview it is by, or None

    # -- layout --------------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        options = self.app.options
        text = options.text or DEFAULT_TEXT
        maskings = _registry_names("masking")
        models = _registry_names("model")
        yield Header()
        with Vertical(id="pg-form"):
            with Horizontal(classes="form-row"):
                yield Select([(f"example {i + 1}", t) for i, t in enumerate(EXAMPLES)], prompt="example",
                             compact=True, id="pg-example")
                yield Input(text, placeholder="type a text to mask", compact=True, id="pg-text")
            with Horizontal(classes="form-row"):
                yield Label("mask", classes="form-label")
                yield Select([(m, m) for m in maskings], value="random" if "random" in maskings else Select.NULL,
                             allow_blank=not maskings, compact=True, id="pg-masking")
                yield Label("ratio", classes="form-label")
                yield Input("0.3", compact=True, id="pg-ratio", restrict=r"[0-9.]*")
                yield Button("Run", id="pg-run", variant="primary", compact=True)
                yield Label("", id="pg-speed")
            with Horizontal(classes="form-row"):
                for side, spec in enumerate(options.models[:2]):
                    yield Input(spec, compact=True, id=f"pg-model-{side}", classes="pg-model",
                                suggester=SuggestFromList(models, case_sensitive=False))
                    yield Select([], prompt="sampler", compact=True, id=f"pg-sampler-{side}", classes="pg-sampler")
        yield ProgressPanel(id="pg-progress")
        with Horizontal(id="pg-traces"):
            for side, spec in enumerate(options.models[:2]):
                yield TraceView(short_spec(spec), id=f"pg-trace-{side}")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#pg-progress").display = False
        for side in range(2):
            self._refresh_samplers(side)
        self._update_ratio_enabled()
        self._show_speed()
        self.query_one("#pg-traces").can_focus = True
        self.query_one("#pg-run", Button).focus()
        if self.app.options.autorun:
            self.call_after_refresh(self.action_run)
        self._load_examples()

    @work(thread=True, group="examples")
    def _load_examples(self) -> None:
        """Test documents of the default dataset join the built-in examples (when the dataset loads)."""
        from mlmh.registry import get_registry

        try:
            dataset = default_dataset()
            corpus = get_registry().build("dataset", dataset).load(None)
        except Exception:  # the built-in examples are enough; the dataset's own command reports its errors
            return
        documents = corpus.split("test")[:5] or corpus.documents[:5]
        self.post_message(ExamplesLoaded([(f"{dataset} {d.id}"[:24], example_excerpt(d.text)) for d in documents]))

    def on_examples_loaded(self, message: ExamplesLoaded) -> None:
        builtin = [(f"example {i + 1}", t) for i, t in enumerate(EXAMPLES)]
        self.query_one("#pg-example", Select).set_options(builtin + message.examples)

    # -- form ------------------------------------------------------------------------------------
    def _refresh_samplers(self, side: int) -> None:
        spec = self.query_one(f"#pg-model-{side}", Input).value.strip()
        select = self.query_one(f"#pg-sampler-{side}", Select)
        try:
            kind = model_kind_of(spec)
        except MlmhError:
            select.set_options([])
            return
        names = compatible_samplers(kind)
        current = select.value
        select.set_options([(n, n) for n in names])
        if current in names:
            select.value = current
        elif preferred_sampler(kind) in names:
            select.value = preferred_sampler(kind)
        elif names:
            select.value = names[0]

    def _update_ratio_enabled(self) -> None:
        masking = self.query_one("#pg-masking", Select).value
        self.query_one("#pg-ratio", Input).disabled = not (isinstance(masking, str) and _has_ratio(masking))

    @on(Input.Changed, ".pg-model")
    def _model_changed(self, event: Input.Changed) -> None:
        side = int(str(event.input.id).rsplit("-", 1)[1])
        self._refresh_samplers(side)
        self.query_one(f"#pg-trace-{side}", TraceView).title = short_spec(event.value.strip())

    @on(Select.Changed, "#pg-masking")
    def _masking_changed(self) -> None:
        self._update_ratio_enabled()

    @on(Select.Changed, "#pg-example")
    def _example_picked(self, event: Select.Changed) -> None:
        if isinstance(event.value, str):
            self.query_one("#pg-text", Input).value = event.value

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_run()

    @on(Button.Pressed, "#pg-run")
    def _run_pressed(self) -> None:
        self.action_run()

    def masking_spec(self) -> str:
        masking = self.query_one("#pg-masking", Select).value
        if not isinstance(masking, str):
            raise MlmhError("pick a masking first")
        ratio = self.query_one("#pg-ratio", Input)
        if not ratio.disabled and ratio.value.strip():
            return f"{masking}:ratio={ratio.value.strip()}"
        return masking

    def request(self) -> PlaygroundRequest:
        sides = []
        for side in range(2):
            model = self.query_one(f"#pg-model-{side}", Input).value.strip()
            sampler = self.query_one(f"#pg-sampler-{side}", Select).value
            if not model:
                raise MlmhError(f"model {side + 1} is empty: type a model spec (e.g. trained-mlm)")
            try:
                model_kind_of(model)
            except MlmhError as exc:
                raise MlmhError(f"model {side + 1}: {exc}") from None
            if not isinstance(sampler, str):
                raise MlmhError(f"model {side + 1} '{model}': no sampler can drive it (unknown model?)")
            sides.append(Side(model=model, sampler=sampler))
        text = self.query_one("#pg-text", Input).value
        return PlaygroundRequest(text=text, masking=self.masking_spec(), sides=sides, seed=self.seed)

    # -- running ----------------------------------------------------------------------------------
    def action_run(self) -> None:
        try:
            request = self.request()
        except MlmhError as exc:
            self.notify(str(exc), severity="error", title="Cannot run")
            for trace in self.query(TraceView):
                trace.load(None)
                trace.set_status(str(exc))
            return
        self.pause()
        self.cancel_event.set()
        self.cancel_event = self.app.job_event()
        self.running, self.etas, self.waiting, self.shown = request, {}, {}, {}
        for side, entry in enumerate(request.sides):
            trace = self.query_one(f"#pg-trace-{side}", TraceView)
            trace.title = short_spec(entry.model)
            trace.border_subtitle = ""
            trace.load(None)
            trace.set_status(f"loading {short_spec(entry.model)} …")
        self.query_one("#pg-run", Button).disabled = True
        self._generate(request, self.cancel_event)

    @work(thread=True, exclusive=True, group="playground")
    def _generate(self, request: PlaygroundRequest, cancel: threading.Event) -> None:
        from mlmh.errors import RunCancelled

        started = time.perf_counter()
        try:
            run_playground(
                request,
                self.app.adapters,
                emit=lambda event: self.post_message(PlaygroundEvent(event)),
                on_generation=lambda side, generation, preview: self.post_message(
                    GenerationReady(side, generation, preview)),
                cancel=cancel,
            )
        except (Cancelled, RunCancelled):
            self.post_message(PlaygroundFailed("cancelled"))
            return
        except MlmhError as exc:
            self.post_message(PlaygroundFailed(str(exc)))
            return
        except Exception as exc:  # a plugin's bug must not take the UI down
            self.post_message(PlaygroundFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(PlaygroundFinished(time.perf_counter() - started))

    def on_playground_event(self, message: PlaygroundEvent) -> None:
        panel = self.query_one("#pg-progress", ProgressPanel)
        panel.display = True
        panel.handle(message.event.event)
        for side in message.event.sides:  # only the panes of the model the event is about
            trace = self.query_one(f"#pg-trace-{side}", TraceView)
            if trace.generation is not None or self.running is None or side >= len(self.running.sides):
                continue
            if isinstance(message.event.event, StageStarted):
                self.etas[side] = Eta()
            status = loading_status(short_spec(self.running.sides[side].model), self.running.dataset,
                                    message.event.event, self.etas.setdefault(side, Eta()))
            if status:
                trace.set_status(status)

    def on_generation_ready(self, message: GenerationReady) -> None:
        trace = self.query_one(f"#pg-trace-{message.side}", TraceView)
        if self.playing and trace.generation is not None and not trace.at_end:
            self.waiting[message.side] = message  # it plays its trace to the end first (_tick)
            return
        self._show(message)

    def _show(self, message: GenerationReady) -> None:
        """Load a side's generation into its pane, from its masked input, and play."""
        self.waiting.pop(message.side, None)
        trace = self.query_one(f"#pg-trace-{message.side}", TraceView)
        if self.running is not None and message.side < len(self.running.sides):
            trace.title = preview_title(short_spec(self.running.sides[message.side].model), message.preview)
        trace.border_subtitle = preview_subtitle(message.preview)
        trace.load(message.generation)
        self.shown[message.side] = message.preview
        self.query_one("#pg-traces").focus()
        self.play()

    def on_playground_failed(self, message: PlaygroundFailed) -> None:
        self.query_one("#pg-run", Button).disabled = False
        for trace in self.query(TraceView):
            if not trace.frames:
                trace.set_status(message.error)
        if message.error != "cancelled":
            self.notify(message.error, severity="error", title="Playground")

    def on_playground_finished(self, message: PlaygroundFinished) -> None:
        self.query_one("#pg-run", Button).disabled = False
        panel = self.query_one("#pg-progress", ProgressPanel)
        if panel.all_done:
            panel.display = False

    def action_cancel(self) -> None:
        if not self.cancel_event.is_set():
            self.cancel_event.set()
            self.notify("cancelling after the current model…")
        self.pause()

    def action_remask(self) -> None:
        self.seed += 1
        self.action_run()

    # -- playback ---------------------------------------------------------------------------------
    def traces(self) -> list[TraceView]:
        return list(self.query(TraceView))

    def play(self) -> None:
        if self._timer is None:
            self._timer = self.set_interval(1 / SPEEDS[self.speed_index], self._tick)
        self.playing = True
        self._show_speed()

    def pause(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        self.playing = False
        self._show_speed()

    def _tick(self) -> None:
        moved = [trace.step(1) for trace in self.traces()]
        for side, trace in enumerate(self.traces()):
            if trace.at_end and side in self.waiting:
                self._show(self.waiting[side])
                moved.append(True)
        if not any(moved):
            self.pause()

    def action_toggle_play(self) -> None:
        if self.playing:
            self.pause()
            return
        for side, trace in enumerate(self.traces()):  # a newer generation waited for this trace's end
            if trace.at_end and side in self.waiting:
                self._show(self.waiting[side])
        if all(trace.at_end for trace in self.traces()):
            for trace in self.traces():
                trace.index = 0
        self.play()

    def action_step(self, delta: int) -> None:
        self.pause()
        for trace in self.traces():
            trace.step(delta)

    def action_jump(self, to_end: int) -> None:
        self.pause()
        for trace in self.traces():
            trace.index = trace.last if to_end else 0

    def action_speed(self, delta: int) -> None:
        self.speed_index = min(len(SPEEDS) - 1, max(0, self.speed_index + delta))
        if self.playing:
            self.pause()
            self.play()
        self._show_speed()

    def _show_speed(self) -> None:
        if not self.is_mounted:
            return
        state = "▶" if self.playing else "❚❚"
        self.query_one("#pg-speed", Label).update(f"{state} {SPEEDS[self.speed_index]:g} steps/s")
