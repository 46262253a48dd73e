"""A run's typed results, built from what its stages made: each condition's quality, gap, downstream scores and
costs, the findings and the crossover. :func:`build_results` is a pure function of its arguments: what it finds
to say (a failed findings or crossover step, values that were not finite numbers) it returns beside the
results, for the runner to say in order."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from mlmh import __version__
from mlmh.calibrate import annotate_null_rates
from mlmh.config.declared import record
from mlmh.config.plan import Condition, RunPlan
from mlmh.data.splits import group_key
from mlmh.events import EventBus, RunEvent
from mlmh.findings.claims import run_cells
from mlmh.findings.comparisons import compare
from mlmh.findings.crossover import summarise
from mlmh.findings.decide import run_findings
from mlmh.findings.downstream import condition_contrasts
from mlmh.findings.downstream import tests as downstream_tests
from mlmh.findings.memorization import gap
from mlmh.findings.paper_claims import baseline_arm
from mlmh.implementation import library_versions
from mlmh.plugins.contracts import finite_only
from mlmh.plugins.plugin_manager import describe_plugins
from mlmh.run.context import RunContext, RunLog
from mlmh.run.data import ROLES, SPLIT_OF_ROLE, RunData
from mlmh.run.downstream import TaskScores
from mlmh.run.mask import Masked
from mlmh.run.models import LoadedModel
from mlmh.run.score import Scores, per_sample
from mlmh.storage.cache import SampleCache
from mlmh.types import (RESULTS_SCHEMA, ConditionResult, ConfigRecord, Correlation, Crossover, DatasetInfo, DocumentSet,
                        Finding, Generation, GenerationCosts, ModelRecord, RoleQuality, RunResults, Score, Versions)

#: result fields that measure time, not outcome: resume and batch-size checks ignore them
TIMING_KEYS = frozenset({"seconds", "tokens_per_s", "started_at", "finished_at", "timings"})


@dataclass(frozen=True)
class BuiltResults:
    """The run's results, and the messages building them said (to emit after, in this order)."""

    results: RunResults
    said: tuple[RunEvent, ...]


def build_results(plan: RunPlan, *, run_id: str, data: RunData, models: Mapping[str, LoadedModel], masked: Masked,
                  generations: Mapping[str, list[Generation]], scores: Scores, tasks: TaskScores,
                  correlations: Sequence[Correlation], log: RunLog, started: float,
                  versions: Versions, cache: SampleCache | None = None) -> BuiltResults:
    """The run's typed results (results.json is their ``to_dict``); ``log`` is read, not changed; the run ``cache``
    keeps the claims' simulated null rates (:func:`mlmh.calibrate.annotate_null_rates`)."""
    said: list[RunEvent] = []
    ctx = RunContext(EventBus(said.append, plugins=False), threading.Event(), log=log.copy())
    headline = data.headline
    conditions = []
    for condition in plan.conditions:
        row = _condition_result(condition, headline, scores, tasks, generations, ctx.log)
        conditions.append(row)
        truncated = row.generation.truncated_documents
        if truncated:  # a tokenizer that takes more tokens for words joined than apart outgrows fit_to_windows' cut
            ctx.log.add_note(f"{condition.id}: {truncated} document(s) still exceeded the model window by a few "
                             "tokens; no masked word was among them (generation.truncated_tokens)")
    corpus = data.corpus
    results = RunResults(
        run_id=run_id,
        config=ConfigRecord.of(plan.config),
        conditions=conditions,
        schema_version=RESULTS_SCHEMA,
        versions=versions,
        dataset=DatasetInfo(name=plan.config.dataset, source=corpus.source,
                            train_documents=len(corpus.split("train")),
                            validation_documents=len(corpus.split("validation")),
                            test_documents=len(data.test.documents),
                            validation_groups=len({group_key(d) for d in corpus.split("validation")}),
                            grouped=any(d.group is not None for d in corpus.documents)),
        documents={role: DocumentSet(split=SPLIT_OF_ROLE[role], documents=len(masked.documents.get(role, [])),
                                     ids=[d.id for d in masked.documents.get(role, [])],
                                     groups=len({group_key(d) for d in masked.documents.get(role, [])}),
                                     cut=masked.cut.get(role, 0))
                   for role in ROLES if role != "control" or masked.documents.get(role)},
        headline=headline,
        filler_word=scores.filler_word,
        n_samples=sum(len(docs) for docs in masked.documents.values()),  # per condition, every set
        baseline=dict(tasks.baseline),
        correlations=list(correlations),
        downstream_tests=downstream_tests(tasks.items, [c.id for c in plan.conditions]),
        models={spec: ModelRecord.of(m.identity, m.component.model_kind, m.training, m.component.short_spec)
                for spec, m in models.items()},
        notes=list(ctx.log.notes),
        errors=list(ctx.log.errors),
        started_at=datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
        timings=dict(ctx.log.timings),  # as written: the report stage that writes it is timed after
        declared=record(),  # what the verdicts read of the components' declarations, so a later reading agrees
    )
    per_document = _unseen_per_document(plan.conditions, scores, generations, data) if headline == "unseen" else {}
    results.findings = _findings(plan, results, per_document, generations, data, tasks, ctx, cache)
    results = _finite(results, ctx)
    results.comparisons = compare(results)  # on the finite results, as report.md states them
    results.crossover = _crossover(results, per_document, plan.config.seeds[0], ctx)
    return BuiltResults(results, tuple(said))


def _condition_result(condition: Condition, headline: str, scores: Scores, tasks: TaskScores,
                      generations: Mapping[str, list[Generation]], log: RunLog) -> ConditionResult:
    """One condition's quality per document set, its seen - unseen gaps (and seen - control of the quality above the
    filler, where the run holds control documents), downstream scores and generation costs; a failed one says why
    it has none."""
    quality = scores.quality.get(condition.id, {})
    gaps: dict[str, Score] = {}
    above_filler: dict[str, Score] = {}
    seen = quality.get("seen")
    if seen is not None and "unseen" in quality:
        unseen = quality["unseen"]
        pairs: list[tuple[str, Score | None, Score | None]] = [
            (name, score, unseen.metrics.get(name)) for name, score in seen.metrics.items()]
        pairs.append(("verbatim_recall", seen.verbatim_recall, unseen.verbatim_recall))
        gaps = _gaps(pairs)
        above_filler = _gaps([(name, score, unseen.above_filler.get(name)) for name, score in seen.above_filler.items()])
    control = quality.get("control")
    return ConditionResult(
        **condition.row(), seen=seen, unseen=quality.get("unseen"), control=control, gap=gaps,
        gap_above_filler=above_filler,
        control_gap=_control_gaps(seen, control) if seen is not None and control is not None else {},
        metrics=quality[headline].metrics if headline in quality else {},
        downstream=tasks.conditions.get(condition.id, {}),
        downstream_augmented=tasks.augmented.get(condition.id, {}),
        downstream_contrasts=condition_contrasts(tasks.items, condition.id),
        generation=GenerationCosts.of(generations.get(condition.id, [])),
        failed=log.failed.get(condition.id))


def _control_gaps(seen: RoleQuality, control: RoleQuality) -> dict[str, Score]:
    """seen - control of each metric's quality above the filler, and of the verbatim recall."""
    pairs = [(name, score, control.above_filler.get(name)) for name, score in seen.above_filler.items()]
    return _gaps(pairs + [("verbatim_recall", seen.verbatim_recall, control.verbatim_recall)])


def _gaps(pairs: Sequence[tuple[str, Score | None, Score | None]]) -> dict[str, Score]:
    """name -> seen - unseen of each (name, seen, unseen) pair that has both."""
    found = {name: gap(seen, unseen) for name, seen, unseen in pairs}
    return {name: score for name, score in found.items() if score is not None}


def _findings(plan: RunPlan, results: RunResults, per_document: dict[str, dict[str, dict[str, Any]]],
              generations: Mapping[str, list[Generation]], data: RunData, tasks: TaskScores,
              ctx: RunContext, cache: SampleCache | None = None) -> list[Finding]:
    """Both papers' claims tested on this run (:mod:`mlmh.findings`), each with its rule's false-"holds" rate under a
    null of this run's structure (:func:`mlmh.calibrate.annotate_null_rates`); a failure is reported by name and
    the rest of the results stand."""
    try:
        cells = run_cells(ctx.running(plan.conditions), dict(generations), dict(data.role_of))
        found = run_findings(results, per_document, dict(tasks.items), cells, plan.config.seeds[0])
    except Exception as exc:  # noqa: BLE001 - the run's other results are written regardless
        _step_failed("findings", results, ctx, exc)
        return []
    try:
        annotate_null_rates(results, found, seed=plan.config.seeds[0], cache=cache)
    except Exception as exc:  # noqa: BLE001 - the findings stand without their simulated error rates
        _step_failed("calibration", results, ctx, exc)
    return found


def _crossover(results: RunResults, per_document: dict[str, dict[str, dict[str, Any]]], seed: int,
               ctx: RunContext) -> Crossover | None:
    """The data-constrained crossover when the run is a sweep (:mod:`mlmh.findings.crossover`), paired over the unseen
    documents' per-document scores; a failure is reported by name and the rest of the results stand."""
    try:
        return finite_only(summarise(results, per_document, seed=seed))[0]  # results.json is strict JSON
    except Exception as exc:  # noqa: BLE001 - the run's other results are written regardless
        _step_failed("crossover", results, ctx, exc)
        return None


def _step_failed(step: str, results: RunResults, ctx: RunContext, exc: Exception) -> None:
    """A step of building the results that raised: said by name (:meth:`RunContext.error`) and kept in the
    results' errors and notes, as a component that fails in an earlier stage is, so the terminal, results.json and
    report.md's Failed components and Notes all name it."""
    ctx.error(step, "results", exc)
    results.errors = list(ctx.log.errors)
    results.notes = list(ctx.log.notes)


def _unseen_per_document(conditions: Sequence[Condition], scores: Scores, generations: Mapping[str, list[Generation]],
                         data: RunData) -> dict[str, dict[str, dict[str, Any]]]:
    """condition -> metric -> unseen document -> its score (the metrics' per-sample values); the filler and
    deletion baselines of each masking and seed under :func:`mlmh.findings.paper_claims.baseline_arm`'s names."""
    arms = [(c.id, scores.headline.get(c.id, []), generations.get(c.id, [])) for c in conditions]
    arms += [(baseline_arm(name, masking, seed), results, gens)
             for (name, masking, seed), (results, gens) in scores.baselines.items()]
    per_document: dict[str, dict[str, dict[str, Any]]] = {}
    for arm, results, gens in arms:
        scored = [g for g in gens if g.masked_words and data.role_of.get(g.doc_id) == "unseen"]
        per_document[arm] = {}
        for doc, values in per_sample(results, scored).items():
            for metric, value in values.items():
                per_document[arm].setdefault(metric, {})[doc] = value
    return per_document


def _finite(results: RunResults, ctx: RunContext) -> RunResults:
    """``results`` with any NaN or infinity that slipped past the components' checks written as null,
    and a note saying where (results.json is strict JSON); as built when every number is finite."""
    cleaned, where = finite_only(results)
    if not where:
        return results
    ctx.note(f"results: {len(where)} value(s) were not finite numbers and are written as null: "
             f"{', '.join(where[:5])}{' ...' if len(where) > 5 else ''}", "warning")
    cleaned.notes = list(ctx.log.notes)
    return cleaned


def versions() -> Versions:
    """Versions of mlmh, the model and metric libraries, and every loaded plugin."""
    return Versions(libraries={"mlmh": __version__, **dict(library_versions())},
                    plugins={p["name"]: p.get("version") for p in describe_plugins()})


def strip_timings(results: Any) -> Any:
    """``results`` without the fields that measure time (for comparing two runs of one configuration)."""
    if isinstance(results, dict):
        return {k: strip_timings(v) for k, v in results.items() if k not in TIMING_KEYS}
    if isinstance(results, list):
        return [strip_timings(v) for v in results]
    return results
