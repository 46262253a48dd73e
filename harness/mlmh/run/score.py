"""The metrics stage: each condition's quality on each document set, with the filler and deletion baselines of
its masking and seed beside it and its quality above each, per document; every metric's results per input are
cached, so a resumed run scores only what is new."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from mlmh.components import ScoringItem
from mlmh.config.plan import RunPlan
from mlmh.events import Progress, StageStarted
from mlmh.findings.memorization import above, baseline_words, filler_generations, filler_word, verbatim_recall
from mlmh.plugins.contracts import score_metric
from mlmh.run.caching import result_key, say_cached
from mlmh.run.context import RunContext
from mlmh.run.data import ROLES, RunData
from mlmh.run.mask import Masked
from mlmh.storage.cache import ResultLookup, SampleCache, content_digest
from mlmh.types import Generation, MetricResult, RoleQuality, Score


@dataclass(frozen=True)
class Scores:
    """What the metrics stage makes."""

    filler_word: str  # the word the filler baseline puts in every mask
    quality: Mapping[str, Mapping[str, RoleQuality]]  # condition -> role -> quality, its baselines beside it
    headline: Mapping[str, list[MetricResult]]  # condition -> the headline set's raw results
    # (baseline name, masking, seed) -> the headline set's raw results and the generations they score, in order
    baselines: Mapping[tuple[str, str, int], tuple[list[MetricResult], list[Generation]]]


@dataclass
class _Progress:
    """What each scoring call of the stage shares: the result cache and the stage's progress count."""

    lookup: ResultLookup
    total: int
    done: int = 0


def score(plan: RunPlan, data: RunData, masked: Masked, generations: Mapping[str, list[Generation]],
          cache: SampleCache, ctx: RunContext) -> Scores:
    """Score the baselines of every masking and seed, then each running condition's ``generations``."""
    filler = filler_word(data.corpus.split("train"))
    baselines = baseline_words(filler)
    keys = list(masked.items)
    roles = sum(1 for role in ROLES if masked.documents.get(role))
    scoring = _Progress(ResultLookup(cache, MetricResult),
                        (len(plan.conditions) + len(keys) * len(baselines)) * len(plan.metrics) * roles)
    ctx.bus.emit(StageStarted(stage="metrics", total=scoring.total, description="scoring"))
    # baseline name ("filler", "deletion": RoleQuality's fields) -> (masking, seed) -> role -> its scores
    scored_baselines: dict[str, dict[tuple[str, int], dict[str, _Scored]]] = {}
    raw_baselines: dict[tuple[str, str, int], tuple[list[MetricResult], list[Generation]]] = {}
    for name, word in baselines.items():
        for key in keys:
            filled = filler_generations(masked.items[key], word)
            scored = _score_roles(plan, data, filled, key[1], f"{name} baseline", scoring, ctx, filler=True)
            scored_baselines.setdefault(name, {})[key] = scored
            raw_baselines[(name, *key)] = (scored[data.headline].raw if data.headline in scored else [], filled)
    quality: dict[str, dict[str, RoleQuality]] = {}
    headline: dict[str, list[MetricResult]] = {}
    for condition in ctx.running(plan.conditions):
        by_role = _score_roles(plan, data, generations[condition.id], condition.seed, condition.id, scoring, ctx)
        key = (condition.masking.spec, condition.seed)  # each set's quality beside its baselines
        quality[condition.id] = {role: _beside(scored, {name: by_key.get(key, {}).get(role) for name, by_key
                                                        in scored_baselines.items()})
                                 for role, scored in by_role.items()}
        headline[condition.id] = by_role[data.headline].raw if data.headline in by_role else []
    say_cached(scoring.lookup, "metrics", ctx)
    return Scores(filler_word=filler, quality=quality, headline=headline, baselines=raw_baselines)


@dataclass(frozen=True)
class _Scored:
    """One document set's quality, the raw results it came from and their per-document values."""

    quality: RoleQuality
    raw: list[MetricResult]
    per_document: dict[str, dict[str, Any]]  # document -> metric -> value


def _beside(scored: _Scored, baselines: Mapping[str, _Scored | None]) -> RoleQuality:
    """A condition's quality on one document set with each baseline's beside it, and its quality above each."""
    higher = {name: score.higher_is_better for name, score in scored.quality.metrics.items()}
    fields: dict[str, Any] = {}
    for name, baseline in baselines.items():
        fields[name] = baseline.quality.metrics if baseline is not None else {}
        fields[f"above_{name}"] = (above(scored.per_document, baseline.per_document, higher)
                                   if baseline is not None else {})
    return dataclasses.replace(scored.quality, **fields)


def _score_roles(plan: RunPlan, data: RunData, generations: list[Generation], seed: int, what: str,
                 scoring: _Progress, ctx: RunContext, *, filler: bool = False) -> dict[str, _Scored]:
    """Quality of ``generations`` on each document set, with the raw results and per-document values.

    The ``filler`` baseline has no step traces, so metrics that need one are left out of it quietly.
    """
    out: dict[str, _Scored] = {}
    for role in ROLES:
        gens = [g for g in generations if data.role_of.get(g.doc_id) == role]
        if not gens:
            continue
        scorable = [g for g in gens if g.masked_words]
        results = _metrics_of(plan, scorable, seed, what, scoring, ctx, quiet=filler) if scorable else []
        if filler:
            results = [r for r in results if not r.error]
        quality = RoleQuality(
            documents=len(gens), scored=len(scorable), metrics={r.name: Score.of(r) for r in results},
            verbatim_recall=None if filler else verbatim_recall(scorable, seed=seed),
            nothing_masked=len(gens) - len(scorable), truncated_documents=sum(1 for g in gens if g.truncated_tokens))
        out[role] = _Scored(quality, results, per_sample(results, scorable))
        if not scorable and not filler:
            ctx.note(f"{what}: nothing was masked in any {role} document, so its {role} quality is not "
                     "scored", "warning")
    return out


def _metrics_of(plan: RunPlan, gens: list[Generation], seed: int, what: str, scoring: _Progress, ctx: RunContext,
                quiet: bool = False) -> list[MetricResult]:
    items = [ScoringItem(prediction=g.text, reference=g.original, generation=g) for g in gens]
    digest = content_digest(items)
    results: list[MetricResult] = []
    for metric in plan.metrics:
        ctx.check_cancel()
        name = plan.describe(metric)
        key = result_key(scoring.lookup, plan, metric, seed, digest, ctx)
        scored = scoring.lookup.get(key)
        if scored is None:
            # a failing metric, or one breaking its contract, is an error result; the others still score
            scored = score_metric(metric, items, seed=seed)
            scoring.lookup.put(key, scored)
        for result in scored:
            result.name = plan.metric_label(metric, result.name)
            if result.error and not quiet:
                ctx.error(name, f"scoring {what}", result.error)
        results.extend(scored)
        scoring.done += 1
        ctx.bus.emit(Progress(stage="metrics", completed=scoring.done, total=scoring.total,
                              info={"condition": what, "metric": metric.short_spec}))
    return results


def per_sample(results: Sequence[MetricResult], gens: Sequence[Generation]) -> dict[str, dict[str, Any]]:
    """Per-document metric values of the scored generations (the metrics' per-sample lists follow their order)."""
    out: dict[str, dict[str, Any]] = {}
    for n, g in enumerate(gens):
        out[g.doc_id] = {r.name: (r.per_sample[n] if n < len(r.per_sample) else None) for r in results}
    return out
