"""The downstream stage: each task trained on the real train documents (the baseline), on each condition's synthetic
corpus (its regenerations of those documents, instead of them: the paper's protocol) and on the real documents and
the synthetic together (augmentation, as Kumar et al. 2020 and SSMBA measure it), and tested on the whole real test
split; every task's results per input are cached."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from mlmh.config.plan import RunPlan
from mlmh.data.synthetic import augmented_corpus, synthetic_corpus
from mlmh.events import Progress, StageStarted
from mlmh.findings.downstream import augmented
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

    conditions: Mapping[str, dict[str, dict[str, float]]]  # condition -> task -> score -> value (synthetic instead of real)
    baseline: Mapping[str, dict[str, float | None]]  # task -> its scores on the real train split
    # "real" | "chance" | "constant" | condition | augmented(condition) -> task -> score -> per-test-item values (of the
    # tasks that report them: mlmh.findings.downstream)
    items: Mapping[str, dict[str, dict[str, list[float]]]]
    augmented: Mapping[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # real + synthetic


def run_tasks(plan: RunPlan, data: RunData, train: Corpus, generations: Mapping[str, list[Generation]],
              cache: SampleCache, ctx: RunContext) -> TaskScores:
    """Run the plan's tasks on ``train`` (the real train documents), on each running condition's synthetic corpus and
    on both together, testing on the data's whole test split; a task that fails is named and the others go on."""
    lookup = ResultLookup(cache, TaskResult)
    tasks = plan.tasks
    running = ctx.running(plan.conditions)
    total = len(tasks) * (2 * len(running) + 1)
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
    added: dict[str, dict[str, dict[str, float]]] = {}
    for condition in running:
        # only regenerations of seen (train) documents become training data; never a test document
        gens = {g.doc_id: g for g in generations[condition.id] if data.role_of.get(g.doc_id) == "seen"}
        for who, corpus, into in ((condition.id, synthetic_corpus(train, gens), scores),
                                  (augmented(condition.id), augmented_corpus(train, gens), added)):
            by_task = {}
            for task in tasks:
                ctx.check_cancel()
                by_task[task.name] = _task_scores(plan, task, corpus, data.test, condition.seed, who, lookup, items, ctx)
                done += 1
                ctx.bus.emit(Progress(stage="downstream", completed=done, total=total,
                                      info={"task": task.name, "condition": who}))
            into[condition.id] = by_task
    say_cached(lookup, "downstream", ctx)
    return TaskScores(conditions=scores, baseline=baseline, items=items, augmented=added)


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
