"""What the playground asks of the engine: mask one text once, then let each chosen model (with its
sampler) regenerate the same masked words. Only calls the registry and the generation engine; the
screen runs it in a worker thread and draws what it reports."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from mlmh.components import LoadContext
from mlmh.errors import MlmhError, SpecError
from mlmh.events import Progress, RunEvent, StageFinished, StageStarted
from mlmh.types import Document, Generation

#: The text the playground opens with (overridable by picking an example or typing).
DEFAULT_TEXT = (
    "Everything is very fast in football, and the crowd loves it: the players run, "
    "the ball flies and nobody can stop to think."
)
DEFAULT_MODELS = ("trained-mlm", "trained-clm")
DEFAULT_DATASET = "pan"


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
    dataset: str = DEFAULT_DATASET


@dataclass
class AdapterCache:
    """Models loaded in this session, by their spec: a second run reuses them (warm)."""

    adapters: dict[str, Any] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)


def model_kind_of(spec: str) -> str:
    """The model kind ("mlm", "clm", "seq2seq") a model spec names; SpecError when unknown."""
    from mlmh.params import parse_spec
    from mlmh.registry import get_registry

    name, _ = parse_spec(spec)
    return get_registry().get("model", name).model_kind


def compatible_samplers(model_kind: str) -> list[str]:
    """Names of registered samplers (third-party ones included) that can drive ``model_kind`` (the rule:
    :func:`mlmh.plan.fits`)."""
    from mlmh.plan import fits
    from mlmh.registry import get_registry

    return [s.name for s in get_registry().all("sampler") if fits(s, model_kind)]


def preferred_sampler(model_kind: str) -> str | None:
    """The name of the sampler a run gives ``model_kind`` when none is named (:func:`mlmh.plan.default_sampler`),
    or None for a kind without one."""
    from mlmh.params import parse_spec
    from mlmh.plan import default_sampler

    try:
        return parse_spec(default_sampler(model_kind))[0]
    except SpecError:
        return None


def load_model(spec: str, dataset: str, cache: AdapterCache, emit: Callable[[RunEvent], None],
               cancel: threading.Event | None = None) -> Any:
    """The adapter of model ``spec``; a model that trains on first use reports its steps as progress,
    and a set ``cancel`` stops that training at its next step."""
    from mlmh.registry import get_registry

    with cache.lock:
        if spec in cache.adapters:
            return cache.adapters[spec]
    model = get_registry().build("model", spec)
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
        cache.adapters[spec] = adapter
    return adapter


def run_playground(
    request: PlaygroundRequest,
    cache: AdapterCache,
    emit: Callable[[RunEvent], None],
    on_generation: Callable[[int, Generation], None],
    cancel: threading.Event,
) -> list[Generation]:
    """Mask ``request.text`` once and generate with every side; ``on_generation(side_index, g)`` as each finishes."""
    from mlmh.generation import generate, prepare_items
    from mlmh.registry import get_registry

    if not request.text.strip():
        raise SpecError("playground text is empty: type or pick a text first")
    registry = get_registry()
    masking = registry.build("masking", request.masking)
    samplers = [registry.build("sampler", side.sampler) for side in request.sides]
    document = Document(id="playground", text=request.text, split="test")
    items = prepare_items([document], masking, seed=request.seed)
    if not items or not items[0].plan.word_indices:
        raise SpecError(f"masking '{masking.short_spec}' hid no word of this text; raise the ratio or pick another masking")
    results: list[Generation] = []
    for index, (side, sampler) in enumerate(zip(request.sides, samplers)):
        if cancel.is_set():
            raise Cancelled("playground run cancelled")
        adapter = load_model(side.model, request.dataset, cache, emit, cancel)
        if cancel.is_set():
            raise Cancelled("playground run cancelled")
        generation = generate(adapter, sampler, items)[0]
        results.append(generation)
        on_generation(index, generation)
    return results
