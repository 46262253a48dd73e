"""The models stage: every model of the plan loaded once (trained first on first use, several at a time)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from mlmh.config.plan import RunPlan, load_context
from mlmh.errors import RunCancelled
from mlmh.events import Progress, StageStarted
from mlmh.run.context import RunContext
from mlmh.training.jobs import train_missing
from mlmh.types import Corpus

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
    train_missing(models, lambda m: load_context(plan.config, corpus, _training_progress(m.short_spec, ctx)))
    loaded: dict[str, LoadedModel] = {}
    for done, model in enumerate(models):
        ctx.check_cancel()
        # weights are read in the generate stage, and only for a model with samples left to generate
        context = load_context(plan.config, corpus, _training_progress(model.short_spec, ctx), defer_weights=True)
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
        ctx.bus.emit(Progress(stage="models", completed=done + 1, total=len(models), info={"model": model.short_spec}))
    return loaded


def _training_progress(model: str, ctx: RunContext) -> Callable[[dict[str, Any]], None]:
    """A training's progress as the run's ``train`` events; a cancelled run stops the training."""
    def forward(info: dict[str, Any]) -> None:
        ctx.check_cancel()
        ctx.bus.emit(Progress(stage="train", completed=int(info.get("step", 0)), total=info.get("total"),
                              info={**info, "model": model}))

    return forward
