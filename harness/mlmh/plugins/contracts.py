"""What a plugin's output must be, checked where the harness receives it: one rule for the runner, the
executors' workers and ``mlmh score``.

A component that raises, or returns something that breaks its contract (a metric value that is NaN or
infinite, fewer per-sample values than scored items, a task score that is not a number; a sampler's
output is checked by :func:`mlmh.generation.check_filled`), has failed: the failure is that component's, reported by name, and never reaches
results.json, which stays strict JSON (:func:`strict_json`).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any, Sequence

from mlmh.errors import MlmhError
from mlmh.types import MetricResult, TaskResult


def _finite(value: Any) -> bool:
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value))


def metric_problem(result: Any, n_items: int) -> str | None:
    """Why ``result`` breaks a metric's contract on ``n_items`` scored items (None when it keeps it)."""
    if not isinstance(result, MetricResult):
        return f"returned {type(result).__name__}, not a MetricResult"
    if result.error:
        return None
    for field in ("value", "ci_low", "ci_high"):
        if not _finite(getattr(result, field)):
            return f"result '{result.name}' has {field} = {getattr(result, field)!r} (not a finite number)"
    if len(result.per_sample) != n_items:
        return f"result '{result.name}' has {len(result.per_sample)} per-sample values for {n_items} items"
    bad = next((v for v in result.per_sample if not _finite(v)), "ok")
    if bad != "ok":
        return f"result '{result.name}' has a per-sample value {bad!r} (not a finite number)"
    return None


def score_metric(metric: Any, items: Sequence[Any], *, seed: int) -> list[MetricResult]:
    """``metric.score(items)``, its failure or contract breach turned into one error result under its name
    (the others' results are unaffected): how every caller runs a metric."""
    try:
        results = metric.score(items, seed=seed)
        if not isinstance(results, list) or not results:
            raise ContractError(f"returned {type(results).__name__} {results!r:.60}, not a list of MetricResult")
        problem = next((p for r in results if (p := metric_problem(r, len(items)))), None)
        if problem:
            raise ContractError(problem)
    except Exception as exc:
        return [MetricResult(name=metric.name, value=None, higher_is_better=metric.higher_is_better,
                             error=describe_error(exc))]
    return results


def task_problem(result: Any) -> str | None:
    """Why a task's ``result`` breaks its contract (None when it keeps it)."""
    if not isinstance(result, TaskResult):
        return f"returned {type(result).__name__}, not a TaskResult"
    if result.error:
        return None
    bad = {k: v for k, v in result.scores.items() if not (_finite(v) and v is not None)}
    if bad:
        return f"score(s) {', '.join(f'{k} = {v!r}' for k, v in bad.items())} are not finite numbers"
    return None


class ContractError(Exception):
    """A component's output that breaks its contract (see the module docstring)."""


def describe_error(exc: BaseException) -> str:
    """How a component's failure reads in results.json and messages: its first line; an mlmh error's says
    what is wrong in the user's words, so only another exception (a plugin's bug) is prefixed by its type."""
    text = str(exc).strip()
    first = text.splitlines()[0] if text else "(no message)"
    return first if isinstance(exc, MlmhError) else f"{type(exc).__name__}: {first}"


def strict_json(data: Any, **kwargs: Any) -> str:
    """``json.dumps`` that refuses NaN and infinities (strict JSON parsers reject them): results files
    are written through here after :func:`finite_only`."""
    return json.dumps(data, allow_nan=False, **kwargs)


def finite_only(value: Any, path: str = "") -> tuple[Any, list[str]]:
    """``value`` (JSON data, or typed values of :mod:`mlmh.types`) with every NaN or infinite float replaced by
    None, and where each was (``a.b[2]``, a field named by its results.json key: a field whose metadata says
    ``flat`` holds keys of its owner's object), so the writer can say so: results.json stays readable by strict
    parsers and nothing is silently changed. The same object when all is finite, else a changed copy (a
    dataclass through ``dataclasses.replace``); the given values are left as they were."""
    if isinstance(value, float) and not math.isfinite(value):
        return None, [path or "(top)"]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changed, where = {}, []
        for f in dataclasses.fields(value):
            inner = path if f.metadata.get("flat") else (f"{path}.{f.name}" if path else f.name)
            item, found = finite_only(getattr(value, f.name), inner)
            if found:
                changed[f.name] = item
                where += found
        return (dataclasses.replace(value, **changed) if changed else value), where
    if isinstance(value, dict):
        pairs = [(key, finite_only(item, f"{path}.{key}" if path else str(key))) for key, item in value.items()]
        where = [w for _, (_, found) in pairs for w in found]
        return ({key: item for key, (item, _) in pairs} if where else value), where
    if isinstance(value, (list, tuple)):
        items = [finite_only(item, f"{path}[{index}]") for index, item in enumerate(value)]
        where = [w for _, found in items for w in found]
        return (type(value)(item for item, _ in items) if where else value), where
    return value, []


