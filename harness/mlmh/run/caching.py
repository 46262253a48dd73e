"""How the stages that read the run cache (generate, metrics, downstream) say what it did: entries it set
aside as unreadable, results that came from it, and components whose cache identity could not be named."""

from __future__ import annotations

from typing import Any

from mlmh.config.plan import RunPlan
from mlmh.events import Message
from mlmh.run.context import RunContext
from mlmh.storage.cache import ResultLookup, SampleCache


def say_cache_notes(cache: SampleCache, ctx: RunContext) -> None:
    """What the sample cache set aside as unreadable (it is computed again), said once each."""
    for note in cache.notes:
        ctx.note(note, "warning")


def say_cached(lookup: ResultLookup, stage: str, ctx: RunContext) -> None:
    """The cache's notes, then how many of ``stage``'s results came from it."""
    say_cache_notes(lookup.cache, ctx)
    summary = lookup.summary(stage)
    if summary:
        ctx.bus.emit(Message(level="info", text=summary))


def result_key(lookup: ResultLookup, plan: RunPlan, component: Any, seed: int, digest: str,
               ctx: RunContext) -> str | None:
    """The cache key of a metric's or task's result; a plugin whose cache_identity() fails is named
    and computes its results, uncached."""
    try:
        return lookup.key(component, seed, digest)
    except Exception as exc:
        ctx.error(plan.describe(component), "naming its cache identity (its results are not cached)", exc)
        return None
