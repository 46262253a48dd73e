"""What the playground asks of the engine: mask one text once, then let each chosen model (with its
sampler) regenerate the same masked words, through :func:`mlmh.api.compare`; here are the playground's
own parts: the models kept loaded between runs, their training on first use (side by side where the cores allow,
shown as progress per pane), and a side regenerating as soon as its own model is ready. While a model trains, its
side regenerates with the training's previews as they come (its weights at a step of the training, saved once it has
left the unigram plateau and each time its steps have doubled: :mod:`mlmh.training.previews`), so a cold start shows
a refinement within seconds of the first model that has learned something, and the finished model replaces them.
The screen runs it in a worker thread and draws what it reports."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from mlmh.components import LoadContext
from mlmh.errors import MlmhError, SpecError
from mlmh.events import Progress, RunEvent, StageFinished, StageStarted
from mlmh.types import Generation

if TYPE_CHECKING:
    from mlmh.components import Model
    from mlmh.toolkit import Adapter

#: The text the playground opens with (overridable by picking an example or typing): the README's ``mlmh generate``
#: example continued, every word one token of the vocabulary the playground's trained-* models learn on the default
#: dataset (the rule tests/test_readme_generate.py checks), so each masked word is one the models can write
DEFAULT_TEXT = (
    "The bells rang out over the village in the rain. "
    "Niamh sat by the fire and waited, but Gwen was not back before dark."
)
#: the model kinds of the playground's two panes: a masked and a causal LM side by side
PANE_KINDS = ("mlm", "clm")


def default_models() -> tuple[str, ...]:
    """The playground's two models when none are named: for each pane's kind, the model that declares itself
    that kind's default (:mod:`mlmh.config.declared`)."""
    from mlmh.config.declared import default_models as declared

    defaults = declared()
    return tuple(defaults[kind] for kind in PANE_KINDS)


def default_dataset() -> str:
    """The dataset the playground's trained-* models learn from and its examples come from: the one that declares
    itself the default (:mod:`mlmh.config.declared`)."""
    from mlmh.config.declared import default_dataset as declared

    return declared()


class Cancelled(MlmhError):
    """The user stopped the playground run."""


@dataclass
class Side:
    """One column of the playground: a model spec and the sampler that generates with it."""

    model: str
    sampler: str


@dataclass
class PlaygroundRequest:
    text: str
    masking: str
    sides: list[Side]
    seed: int = 0
    dataset: str = field(default_factory=default_dataset)


@dataclass
class AdapterCache:
    """Models loaded in this session, by their spec: a second run reuses them (warm); and the trainings under
    way, by the dataset and spec they train (:class:`SideBySide`): a run started while they train (a new text, a new mask)
    waits for them instead of training again. They end when the session closes (:meth:`close`)."""

    adapters: dict[str, "Adapter"] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    trainings: dict[tuple[str, str], "SideBySide"] = field(default_factory=dict)  # by (dataset, spec)
    closing: threading.Event = field(default_factory=threading.Event)
    folder: Path | None = None  # the trainings' previews (made at the first training, removed at close)

    def previews(self) -> Path:
        """The session's folder of training previews, made on first use (a temporary one: they are kept by nobody)."""
        if self.folder is None:
            self.folder = Path(tempfile.mkdtemp(prefix="mlmh-previews-"))
        return self.folder

    def close(self, timeout: float = 120.0) -> None:
        """The session ends: the trainings under way stop at their next event, each one past its last step is
        saved into the model cache first (waited for, at most ``timeout`` seconds each); their previews are removed."""
        self.closing.set()
        for training in {id(t): t for t in self.trainings.values()}.values():
            training.thread.join(timeout)
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def model_kind_of(spec: str) -> str:
    """The model kind ("mlm", "clm", "seq2seq") a model spec names; SpecError when unknown."""
    from mlmh.params import parse_spec
    from mlmh.registry import get_registry

    name, _ = parse_spec(spec)
    return get_registry().get("model", name).model_kind


def compatible_samplers(model_kind: str) -> list[str]:
    """Names of registered samplers (third-party ones included) that can drive ``model_kind`` (the rule:
    :func:`mlmh.config.plan.fits`)."""
    from mlmh.config.plan import fits
    from mlmh.registry import get_registry

    return [s.name for s in get_registry().all("sampler") if fits(s, model_kind)]


def preferred_sampler(model_kind: str) -> str | None:
    """The name of the sampler a run gives ``model_kind`` when none is named (:func:`mlmh.config.plan.default_sampler`),
    or None for a kind without one."""
    from mlmh.config.plan import default_sampler
    from mlmh.params import parse_spec

    try:
        return parse_spec(default_sampler(model_kind))[0]
    except SpecError:
        return None


@dataclass(frozen=True)
class SideEvent:
    """A run event (loading or training progress) of the model of the playground's ``sides``."""

    sides: tuple[int, ...]
    event: RunEvent


def load_stage(model: Model) -> str:
    """The progress stage of loading (and, on first use, training) ``model``."""
    return f"load {model.short_spec}"


def _finishing(info: dict[str, Any]) -> bool:
    """Whether a training event is its budget's last step: what is left (the final scores, the save) is kept."""
    return bool(info.get("total")) and info.get("step") == info.get("total")


def load_model(model: Model, dataset: str, cache: AdapterCache, emit: Callable[[RunEvent], object],
               cancel: threading.Event | None = None) -> Adapter:
    """The adapter of a built ``model``, kept by its spec; a model that trains on first use reports its
    steps as progress, and a set ``cancel`` stops that training at its next step, unless that was its last
    (a finished training is saved into the model cache, so the next start is warm)."""
    with cache.lock:
        if model.spec in cache.adapters:
            return cache.adapters[model.spec]
    stage = load_stage(model)
    started = time.perf_counter()
    emit(StageStarted(stage=stage, total=None, description=model.short_spec))

    def progress(info: dict[str, Any]) -> None:
        if cancel is not None and cancel.is_set() and not _finishing(info):
            raise Cancelled(f"loading {model.short_spec} cancelled")
        emit(Progress(stage=stage, completed=int(info.get("step", 0)), total=info.get("total"), info=info))

    adapter = model.load(LoadContext(dataset=dataset, progress=progress))
    emit(StageFinished(stage=stage, seconds=time.perf_counter() - started))
    with cache.lock:
        cache.adapters[model.spec] = adapter
    return adapter


def start_resource_tracker() -> None:
    """multiprocessing's resource tracker (which the children's queue needs), started on the process's own
    stderr: a running Textual app replaces ``sys.stderr`` by an object whose ``fileno()`` is -1, which the
    tracker's launch cannot pass on (``ValueError: bad value(s) in fds_to_keep``)."""
    import sys
    from multiprocessing import resource_tracker

    replaced = sys.stderr
    try:
        if sys.__stderr__ is not None:
            sys.stderr = sys.__stderr__
        resource_tracker.ensure_running()
    finally:
        sys.stderr = replaced


@dataclass(frozen=True)
class Preview:
    """A training's model saved at one of its steps (:class:`mlmh.training.previews.Previews`): where, at which step of
    how many, and its validation accuracy beside the best constant predictor's there."""

    path: str
    step: int
    total: int
    validation_loss: float | None = None
    validation_accuracy: float | None = None
    constant_accuracy: float | None = None

    def adapter(self, model: Model) -> Adapter:
        """The preview loaded as ``model``'s adapter (on the CPU: it shows the training, the finished model is the
        one that runs on the model's device)."""
        from mlmh.adapters import load_adapter

        return load_adapter(model.model_kind, self.path, identity=f"{model.spec}@step-{self.step}")

    def discard_older(self) -> None:
        """Remove the previews of the same training saved before this one (loaded, this one replaces them)."""
        here = Path(self.path)
        for older in here.parent.glob("step-*"):
            if older.name < here.name:
                shutil.rmtree(older, ignore_errors=True)


class SideBySide:
    """The models of a playground run that train on first use, trained in child processes
    (:func:`mlmh.training.jobs.train_missing`: side by side where the cores allow) in a thread of its own, so that
    each side may load and regenerate as soon as its own model is cached, and with its training's latest preview
    (:attr:`previews`) before that; the thread outlives the run, so a run started meanwhile finds them training. What
    it does not train (one core, a child that failed) trains as the side loads it (:func:`load_model`).

    With ``closing`` set, it stops its children at their next event, but never while one is past its last step:
    that training is finished, and is saved into the model cache first. ``emit_for(model)`` is where a model's
    progress goes: the run that waits for it now."""

    def __init__(self, models: list[Model], dataset: str, emit_for: Callable[[Model], Callable[[RunEvent], object]],
                 closing: threading.Event, folder: Path | None = None) -> None:
        self.models = [model for model in models if hasattr(model, "training_job")]
        self.dataset, self.emit_for, self.closing, self.folder = dataset, emit_for, closing, folder
        self.ready = {model.spec: threading.Event() for model in self.models}
        self.finishing: set[str] = set()
        self.previews: dict[str, Preview] = {}  # by spec: its training's latest preview (saved into ``folder``)
        self.trained: list[str] = []  # the models its children trained (train_missing's answer)
        self.error: Exception | None = None  # why it trained none, when it failed (their loads train them)
        self.thread = threading.Thread(target=self._train, name="mlmh-playground-training", daemon=True)

    def start(self) -> "SideBySide":
        self.thread.start()
        return self

    def is_ready(self, model: Model) -> bool:
        """Whether ``model`` may load now: it trains on no first use, is cached, or is left to its load."""
        return model.spec not in self.ready or self.ready[model.spec].is_set()

    def _train(self) -> None:
        from mlmh.training.jobs import train_missing

        try:
            start_resource_tracker()
            self.trained = train_missing(self.models, lambda model: LoadContext(
                dataset=self.dataset, progress=lambda info: self.progress(model, info)), previews=self.folder)
        except Exception as exc:  # cancelled, or a failure the side's own load meets again and reports
            self.error = exc
        finally:
            for event in self.ready.values():
                event.set()

    def progress(self, model: Model, info: dict[str, Any]) -> None:
        """One event of ``model``'s child: progress for its pane; finished (or failed), its side may load it."""
        stage, state, emit = load_stage(model), info.get("state"), self.emit_for(model)
        if state == "started":  # a child trains it: say so before its first step (imports take seconds)
            emit(StageStarted(stage=stage, total=None, description=model.short_spec))
            emit(Progress(stage=stage, completed=0, total=None, info=info))
        elif state in ("finished", "cached", "failed"):
            self.finishing.discard(model.spec)
            self.ready[model.spec].set()
        else:
            if _finishing(info):
                self.finishing.add(model.spec)
            if "preview" in info:
                self.previews[model.spec] = Preview(**info["preview"])
            emit(Progress(stage=stage, completed=int(info.get("step", 0)), total=info.get("total"), info=info))
        if self.closing.is_set() and not self.finishing:
            raise Cancelled("training cancelled")  # the children still training stop; the finished are cached


class _Accepted(Exception):
    """:func:`mlmh.api.compare` asked for its first model: it accepted the request."""


def check_request(request: PlaygroundRequest) -> None:
    """Every check :func:`mlmh.api.compare` makes of ``request`` (its text, specs, masking hiding a word), before
    any model loads or trains: it is asked to compare, and stopped where it asks for its first model."""
    from mlmh import api

    def accepted(model: Model) -> Adapter:
        raise _Accepted

    try:
        api.compare(request.text, [(side.model, side.sampler) for side in request.sides], masking=request.masking,
                    seed=request.seed, dataset=request.dataset, adapter_for=accepted)
    except _Accepted:
        return


def run_playground(
    request: PlaygroundRequest,
    cache: AdapterCache,
    emit: Callable[[SideEvent], object],
    on_generation: Callable[[int, Generation, Preview | None], object],
    cancel: threading.Event,
) -> list[Generation]:
    """Mask ``request.text`` once and generate with every side (:func:`mlmh.api.compare`), the models from
    ``cache``, each side as soon as its own model is ready (the models that train on first use train side by
    side: :class:`SideBySide`), and before that with each preview of its model's training as it comes;
    ``on_generation(side_index, g, preview)`` as each finishes (``preview`` None: the model itself), ``emit`` hears
    the loading and training of each side's model. A text that one model's window cuts shorter than another's is
    regenerated by every side at the end, so that all of them regenerate the same masked words. Returns the
    generations of the models themselves."""
    from mlmh import api
    from mlmh.errors import RunCancelled
    from mlmh.registry import get_registry

    check_request(request)
    models = [get_registry().build("model", side.model) for side in request.sides]

    def emit_for(model: Model) -> Callable[[RunEvent], object]:
        sides = tuple(i for i, m in enumerate(models) if m.spec == model.spec)
        return lambda event: emit(SideEvent(sides, event))

    def adapter_for(model: Model) -> Adapter:
        return load_model(model, request.dataset, cache, emit_for(model), cancel)

    def compare(sides: list[Side], adapter: Callable[[Model], Adapter] = adapter_for, **kwargs: Any) -> list[Generation]:
        return api.compare(request.text, [(side.model, side.sampler) for side in sides], masking=request.masking,
                           seed=request.seed, dataset=request.dataset, adapter_for=adapter, cancel=cancel, **kwargs)

    def key(model: Model) -> tuple[str, str]:
        return request.dataset, model.spec

    with cache.lock:  # the models no run trains yet start training; those under way report to this run now
        under_way = {k: t for k, t in cache.trainings.items() if t.thread.is_alive()}
        for training in under_way.values():
            training.emit_for = emit_for
        cold = {m.spec: m for m in models if m.spec not in cache.adapters and key(m) not in under_way}
        started = SideBySide(list(cold.values()), request.dataset, emit_for, cache.closing,
                             cache.previews() if any(hasattr(m, "training_job") for m in cold.values()) else None)
        if started.models:
            cache.trainings.update({key(model): started for model in started.start().models})

    def ready(model: Model) -> bool:
        training = cache.trainings.get(key(model))
        return training is None or training.is_ready(model)

    def preview_of(model: Model) -> Preview | None:
        training = cache.trainings.get(key(model))
        return training.previews.get(model.spec) if training is not None else None

    def preview_generation(index: int, preview: Preview) -> Generation | None:
        """Side ``index`` regenerated with ``preview``; None where the preview cannot be read (its training goes on)."""
        try:
            (generation,) = compare([request.sides[index]], adapter=preview.adapter)
        except (Cancelled, RunCancelled):
            raise
        except Exception:  # a preview is only a look at a training under way: the finished model is what counts
            return None
        preview.discard_older()
        return generation

    generations: dict[int, Generation] = {}
    previewed: dict[int, int] = {}  # by side: the step of the preview it showed last
    while len(generations) < len(models):
        index = next((i for i, model in enumerate(models) if i not in generations and ready(model)), None)
        if index is not None:
            (generations[index],) = compare([request.sides[index]])
            on_generation(index, generations[index], None)
            continue
        newer = [(i, p) for i, p in ((i, preview_of(m)) for i, m in enumerate(models) if i not in generations)
                 if p is not None and p.step > previewed.get(i, 0)]
        if newer:
            index, preview = newer[0]
            previewed[index] = preview.step
            generation = preview_generation(index, preview)
            if generation is not None:
                on_generation(index, generation, preview)
            continue
        if cancel.wait(0.1):
            raise Cancelled("cancelled")
    if len({(g.original, tuple(g.masked_words)) for g in generations.values()}) > 1:  # windows cut the text apart
        return compare(request.sides, on_generation=lambda index, generation: on_generation(index, generation, None))
    return [generations[i] for i in range(len(models))]
