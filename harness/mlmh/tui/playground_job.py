"""What the playground asks of the engine: mask one text once, then let each chosen model (with its
sampler) regenerate the same masked words, through :func:`mlmh.api.compare`; here are the playground's
own parts, the models kept loaded between runs and their training shown as progress. The screen runs it
in a worker thread and draws what it reports."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from mlmh.components import LoadContext
from mlmh.errors import MlmhError, SpecError
from mlmh.events import Progress, RunEvent, StageFinished, StageStarted
from mlmh.types import Generation

if TYPE_CHECKING:
    from mlmh.components import Model
    from mlmh.toolkit import Adapter

#: The text the playground opens with (overridable by picking an example or typing).
DEFAULT_TEXT = (
    "Everything is very fast in football, and the crowd loves it: the players run, "
    "the ball flies and nobody can stop to think."
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
    """Models loaded in this session, by their spec: a second run reuses them (warm)."""

    adapters: dict[str, "Adapter"] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


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


def load_model(model: Model, dataset: str, cache: AdapterCache, emit: Callable[[RunEvent], object],
               cancel: threading.Event | None = None) -> Adapter:
    """The adapter of a built ``model``, kept by its spec; a model that trains on first use reports its
    steps as progress, and a set ``cancel`` stops that training at its next step."""
    with cache.lock:
        if model.spec in cache.adapters:
            return cache.adapters[model.spec]
    stage = f"load {model.short_spec}"
    started = time.perf_counter()
    emit(StageStarted(stage=stage, total=None, description=model.short_spec))

    def progress(info: dict[str, Any]) -> None:
        if cancel is not None and cancel.is_set():
            raise Cancelled(f"loading {model.short_spec} cancelled")
        emit(Progress(stage=stage, completed=int(info.get("step", 0)), total=info.get("total"), info=info))

    adapter = model.load(LoadContext(dataset=dataset, progress=progress))
    emit(StageFinished(stage=stage, seconds=time.perf_counter() - started))
    with cache.lock:
        cache.adapters[model.spec] = adapter
    return adapter


def run_playground(
    request: PlaygroundRequest,
    cache: AdapterCache,
    emit: Callable[[RunEvent], object],
    on_generation: Callable[[int, Generation], object],
    cancel: threading.Event,
) -> list[Generation]:
    """Mask ``request.text`` once and generate with every side (:func:`mlmh.api.compare`), the models from
    ``cache``; ``on_generation(side_index, g)`` as each finishes."""
    from mlmh import api

    return api.compare(request.text, [(side.model, side.sampler) for side in request.sides], masking=request.masking,
                       seed=request.seed, dataset=request.dataset,
                       adapter_for=lambda model: load_model(model, request.dataset, cache, emit, cancel),
                       on_generation=on_generation, cancel=cancel)
