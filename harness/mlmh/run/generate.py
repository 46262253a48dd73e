"""The generate stage: every condition's masked documents regenerated, each batch cached as it finishes, so a
killed run resumes where it stopped; an executor (:mod:`mlmh.run.executors`) decides where the batches run."""

from __future__ import annotations

from typing import Mapping

from mlmh.config.plan import RunPlan, WorkUnit
from mlmh.errors import RunCancelled
from mlmh.events import Progress, SampleGenerated, StageStarted
from mlmh.implementation import engine_id, implementation_id
from mlmh.run.caching import say_cache_notes
from mlmh.run.context import RunContext
from mlmh.run.executors import Executor, InProcessExecutor
from mlmh.run.models import LoadedModel
from mlmh.storage.cache import SampleCache, sample_key
from mlmh.types import Generation, MaskedItem


def generate(plan: RunPlan, items: Mapping[tuple[str, int], list[MaskedItem]], models: Mapping[str, LoadedModel],
             cache: SampleCache, executor: Executor | None, ctx: RunContext) -> dict[str, list[Generation]]:
    """Each running condition's generations, in the order of its items (``items[(masking spec, seed)]``): the
    cached ones from ``cache``, the others made by ``executor`` (default: ``models`` in this process)."""
    engine = engine_id()
    keys: dict[tuple[str, str], str] = {}
    for condition in ctx.running(plan.conditions):
        loaded = models[condition.model.spec]
        code = f"{implementation_id(condition.sampler)}|{engine}"
        for item in items[(condition.masking.spec, condition.seed)]:
            keys[(condition.id, item.doc_id)] = sample_key(
                model=f"{condition.model.spec}@{loaded.identity}", tokenizer=_tokenizer_identity(loaded),
                doc_id=item.doc_id, text=item.words.text, masked_words=item.plan.word_indices,
                masking=condition.masking.spec, sampler=condition.sampler.spec, code=code, seed=item.seed)
    total = len(keys)
    ctx.bus.emit(StageStarted(stage="generate", total=total, description="generating"))
    cached = cache.get_many(keys.values())
    say_cache_notes(cache, ctx)
    found: dict[tuple[str, str], Generation] = {k: cached[key] for k, key in keys.items() if key in cached}
    completed = len(found)
    if found:
        ctx.bus.emit(Progress(stage="generate", completed=completed, total=total, info={"cached": len(found)}))
    running = {c.id for c in ctx.running(plan.conditions)}
    units = _with_weights(plan, models, [u for u in plan.units(items, plan.config.batch_size, skip=found)
                                         if u.condition in running], ctx)

    def done(unit: WorkUnit, batch: list[Generation]) -> None:
        nonlocal completed
        if unit.condition in ctx.log.failed:
            return
        cache.put_many({keys[(unit.condition, g.doc_id)]: g for g in batch})
        ctx.log.generated = True
        for g in batch:
            found[(unit.condition, g.doc_id)] = g
            ctx.bus.emit(SampleGenerated(condition=unit.condition, generation=g))
        completed += len(batch)
        ctx.bus.emit(Progress(stage="generate", completed=completed, total=total,
                              info={"condition": unit.condition, "model": unit.model}))  # a model's first: one-off
        ctx.check_cancel()

    def failed(unit: WorkUnit, exc: BaseException | str) -> None:
        """A unit that raised (in this process, a worker or on Ray) or broke the contract: its
        condition fails under its sampler's name; the other conditions go on."""
        condition = plan.condition(unit.condition)
        ctx.fail(plan, [condition], condition.sampler, f"generating with model {condition.model.short_spec}", exc)

    if executor is None:
        executor = InProcessExecutor({spec: m.adapter for spec, m in models.items()},
                                     {s.spec: s for s in plan.samplers})
    if units:
        executor.run(units, done, ctx.cancel, on_failed=failed)
    ctx.check_cancel()
    return {condition.id: [found[(condition.id, item.doc_id)] for item in items[(condition.masking.spec, condition.seed)]]
            for condition in ctx.running(plan.conditions)}


def _with_weights(plan: RunPlan, models: Mapping[str, LoadedModel], units: list[WorkUnit],
                  ctx: RunContext) -> list[WorkUnit]:
    """Read the deferred weights of each model with ``units`` to generate (the models stage read their
    tokenizers and configs only); a model whose weights fail to load fails its conditions as at loading,
    and their units are dropped."""
    for spec in dict.fromkeys(u.model for u in units):
        loaded = models[spec]
        load_weights = getattr(loaded.adapter, "load_weights", None)  # a plugin's own adapter may load eagerly
        if load_weights is None:
            continue
        try:
            load_weights()
        except (RunCancelled, KeyboardInterrupt):
            raise
        except Exception as exc:
            ctx.fail(plan, [c for c in plan.conditions if c.model.spec == spec], loaded.component, "loading", exc)
    return [u for u in units if u.condition not in ctx.log.failed]


def _tokenizer_identity(loaded: LoadedModel) -> str:
    tokenizer = getattr(loaded.adapter, "tokenizer", None)
    if tokenizer is None:
        return ""
    return f"{type(tokenizer).__name__}:{len(tokenizer)}:{getattr(tokenizer, 'name_or_path', '')}"
