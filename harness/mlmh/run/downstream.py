"""The downstream stage: each task trained on the real train documents (the baseline) and on each condition's
synthetic corpus (its regenerations of those documents), and tested on the real test split; every task's results
per input are cached."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from mlmh.config.plan import RunPlan
from mlmh.data.synthetic import synthetic_corpus
from mlmh.events import Progress, StageStarted
from mlmh.plugins.contracts import task_problem
from mlmh.run.caching import result_key, say_cached
from mlmh.run.context import RunContext
from mlmh.run.data import RunData
from mlmh.storage.cache import ResultLookup, SampleCache, content_digest
from mlmh.types import Corpus, Generation, TaskResult

REAL_TRAIN = "real train split"  # what the downstream baseline trains on


@dataclass(frozen=True)
class TaskScores:
    """What the downstream stage makes."""

    conditions: Mapping[str, dict[str, dict[str, float]]]  # condition -> task -> score -> value
    baseline: Mapping[str, dict[str, float | None]]  # task -> its scores on the real train split
    # "real" | "chance" | "constant" | condition -> task -> score -> per-test-item values (of the tasks that report them)
    items: Mapping[str, dict[str, dict[str, list[float]]]]


def run_tasks(plan: RunPlan, data: RunData, train: Corpus, generations: Mapping[str, list[Generation]],
              cache: SampleCache, ctx: RunContext) -> TaskScores:
    """Run the plan's tasks on ``train`` (the real train documents) and on each running condition's synthetic
    corpus, testing on the data's test split; a task that fails is named and the others go on."""
    lookup = ResultLookup(cache, TaskResult)
    tasks = plan.tasks
    running = ctx.running(plan.conditions)
    total = len(tasks) * (len(running) + 1)
    out = TaskScores(conditions={}, baseline={}, items={})
    ctx.bus.emit(StageStarted(stage="downstream", total=total, description="downstream tasks"))
    if not tasks:
        return out
    if not data.test.documents:
        ctx.note(f"downstream skipped: dataset {data.corpus.dataset} has no test split", "warning")
        return out
    items: dict[str, dict[str, dict[str, list[float]]]] = {}
    baseline: dict[str, dict[str, float | None]] = {}
    done = 0
    seed = plan.config.seeds[0]
    for task in tasks:
        ctx.check_cancel()
        baseline[task.name] = dict(_task_scores(plan, task, train, data.test, seed, REAL_TRAIN, lookup, items, ctx))
        done += 1
        ctx.bus.emit(Progress(stage="downstream", completed=done, total=total, info={"task": task.name}))
    scores: dict[str, dict[str, dict[str, float]]] = {}
    for condition in running:
        # only regenerations of seen (train) documents become training data; never a test document
        gens = {g.doc_id: g for g in generations[condition.id] if data.role_of.get(g.doc_id) == "seen"}
        synthetic = synthetic_corpus(train, gens)
        by_task = {}
        for task in tasks:
            ctx.check_cancel()
            by_task[task.name] = _task_scores(plan, task, synthetic, data.test, condition.seed, condition.id, lookup,
                                              items, ctx)
            done += 1
            ctx.bus.emit(Progress(stage="downstream", completed=done, total=total,
                                  info={"task": task.name, "condition": condition.id}))
        scores[condition.id] = by_task
    say_cached(lookup, "downstream", ctx)
    return TaskScores(conditions=scores, baseline=baseline, items=items)


def _task_scores(plan: RunPlan, task: Any, train: Corpus, test: Corpus, seed: int, what: str, lookup: ResultLookup,
                 items: dict[str, dict[str, dict[str, list[float]]]], ctx: RunContext) -> dict[str, float]:
    """One task's scores trained on ``train`` (``what``: the real split or a condition); its per-item scores
    go into ``items``."""
    name = plan.describe(task)
    key = result_key(lookup, plan, task, seed, content_digest([train, test]), ctx)
    kept = lookup.get(key)
    if kept is not None:
        result: TaskResult = kept[0]
    else:
        try:
            result = task.run(train, test, seed=seed)
        except Exception as exc:  # a failing task is reported by name; the rest of the run completes
            ctx.error(name, f"on {what}", exc)
            return {}
        problem = task_problem(result)
        if problem:
            ctx.error(name, f"on {what}", f"ContractError: {problem}")
            return {}
        lookup.put(key, [result])
    if result.error:
        ctx.error(name, f"on {what}", result.error)
        return {}
    _keep_items(task.name, what, result, items)
    return {k: float(v) for k, v in result.scores.items()}


def _keep_items(task: str, what: str, result: TaskResult, items: dict[str, dict[str, dict[str, list[float]]]]) -> None:
    """Per-test-item scores a task reports (``info["per_item"]``, each averaging to its score) and, for the
    real-data baseline, the chance level of each (``info["chance"]``) as per-item values, and the best constant
    predictor's per-item scores (``info["constant"]``): claim 5's CI and the gate of claims 4 and 5."""
    per_item = result.info.get("per_item") or {}
    if not per_item:
        return
    who = "real" if what == REAL_TRAIN else what
    items.setdefault(who, {})[task] = {k: [float(x) for x in v] for k, v in per_item.items()}
    chance = result.info.get("chance") or {}
    if who == "real":
        items.setdefault("chance", {})[task] = {
            k: [float(chance[k])] * len(v) for k, v in per_item.items() if isinstance(chance.get(k), (int, float))}
        constant = result.info.get("constant") or {}
        items.setdefault("constant", {})[task] = {
            k: [float(x) for x in constant[k]] for k, v in per_item.items() if len(constant.get(k) or ()) == len(v)}
