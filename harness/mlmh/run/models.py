"""The models stage: every model of the plan loaded once (trained first on first use, several at a time), each
counted as it is ready (its training ended, or it loaded), and named in progress by a label of a few words."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mlmh.config.options import plain_number
from mlmh.config.plan import RunPlan, load_context
from mlmh.errors import RunCancelled
from mlmh.events import Progress, StageStarted
from mlmh.run.context import RunContext
from mlmh.training.jobs import train_missing
from mlmh.types import Corpus
from mlmh.types.result_blocks import brief_model_name

if TYPE_CHECKING:
    from mlmh.components import Model
    from mlmh.toolkit import Adapter


@dataclass(frozen=True)
class LoadedModel:
    """One model of the run as loaded: its component, the identity of its weights, its adapter (whose weights
    the generate stage reads, and only for a model with samples left to generate) and its training card."""

    component: Model
    identity: str
    adapter: Adapter | None = None
    training: dict[str, Any] = field(default_factory=dict)  # the card of a model mlmh trained


def load_models(plan: RunPlan, corpus: Corpus, ctx: RunContext) -> dict[str, LoadedModel]:
    """Each model of ``plan`` by spec; a model that fails to load fails its conditions, and the others go on."""
    models = plan.models
    ctx.bus.emit(StageStarted(stage="models", total=len(models), description="loading models (training on first use)"))
    labels = model_labels(models)
    ready: dict[str, None] = {}  # the models counted so far, in the order they were ready

    def count(model: Model) -> None:
        if model.spec not in ready:
            ready[model.spec] = None
            ctx.bus.emit(Progress(stage="models", completed=len(ready), total=len(models),
                                  info={"model": model.short_spec, "label": labels[model.spec]}))

    train_missing(models, lambda m: load_context(plan.config, corpus, _Training(m, labels[m.spec], ctx, count)))
    loaded: dict[str, LoadedModel] = {}
    for model in models:
        ctx.check_cancel()
        # weights are read in the generate stage, and only for a model with samples left to generate
        training = _Training(model, labels[model.spec], ctx, count)
        context = load_context(plan.config, corpus, training, defer_weights=True)
        try:
            identity = model.identity(context)
            adapter = model.load(context)
            card = model.training_card(context)
        except (RunCancelled, KeyboardInterrupt):
            raise
        except Exception as exc:  # this model's conditions fail; the other models still run
            ctx.fail(plan, [c for c in plan.conditions if c.model.spec == model.spec], model, "loading", exc)
            continue
        for note in getattr(adapter, "notes", ()):
            ctx.note(f"{model.short_spec}: {note}", "warning")
        loaded[model.spec] = LoadedModel(model, identity, adapter, card)
        training.end()
        count(model)
    return loaded


def model_label(model: Model) -> str:
    """A model in a few words (:func:`mlmh.types.result_blocks.brief_model_name`): ``mlm (minilm)``, ``clm (gpt2)``,
    ``mlm (scratch)`` (a trained-* model's random init), or its name when it has no start parameter."""
    params = model.params
    start = params.get("init") or params.get("path") or ("" if "init" in params else model.name)
    return brief_model_name(model.model_kind or model.name, start)


def model_labels(models: Sequence[Model]) -> dict[str, str]:
    """Each model's :func:`model_label` by spec; models that share one are told apart by the parameters in which
    they differ (``mlm (scratch) epochs=4``: a sweep)."""
    base = {m.spec: model_label(m) for m in models}
    out = {}
    for model in models:
        alike = [m for m in models if base[m.spec] == base[model.spec]]
        differ = sorted(k for k in model.params if len({str(m.params.get(k)) for m in alike}) > 1)
        out[model.spec] = " ".join([base[model.spec], *(f"{k}={_shown(model.params[k])}" for k in differ)])
    return out


def _shown(value: Any) -> str:
    """A parameter's value as a user writes it in a spec: ``4``, not the parsed float's ``4.0``."""
    return plain_number(value) if isinstance(value, float) else str(value)


class _Training:
    """A training's progress as the run's ``train`` events (named by the model's ``label``); a training that ended
    (trained, or found in the cache) calls ``ended``; a cancelled run stops the training. A training in this
    process says no end of its own: :meth:`end` says it, with the steps it ran, so a training that stopped early
    reads as such (as one in a spawned process does, mlmh.training.jobs)."""

    def __init__(self, model: Model, label: str, ctx: RunContext, ended: Callable[[Model], None]) -> None:
        self.model, self.label, self.ctx, self.ended = model, label, ctx, ended
        self.last: dict[str, Any] | None = None  # the last step event, while no end was said

    def __call__(self, info: dict[str, Any]) -> None:
        self.ctx.check_cancel()
        self._emit(info)
        ended = info.get("state") in ("finished", "cached")
        self.last = None if ended or info.get("state") == "failed" else info
        if ended:
            self.ended(self.model)

    def end(self) -> None:
        """The model loaded: a training it ran here ended at its last step (its budget, or early)."""
        if self.last is not None and self.last.get("step"):
            step = int(self.last["step"])
            self._emit({**self.last, "state": "finished", "step": step, "total": step})
            self.last = None

    def _emit(self, info: dict[str, Any]) -> None:
        self.ctx.bus.emit(Progress(stage="train", completed=int(info.get("step", 0)), total=info.get("total"),
                                   info={**info, "model": self.model.short_spec, "label": self.label}))
