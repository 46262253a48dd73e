"""Does better generated text make a better downstream model? Correlations over a run's conditions.

The paper (arXiv 2405.12630, section 5) reports no strong correlation between generation quality and
downstream usefulness. :func:`correlate` measures it for a run: for every quality metric and every
downstream score, Spearman's rho and Pearson's r across conditions (scipy.stats), each with a seeded
percentile-bootstrap 95% CI over conditions, n, and a one-line verdict.

Row format (one per condition)::

    {"condition": "mlm|random:ratio=0.3|...",
     "metrics": {"bleu": 31.2, "rougeL": 0.52, ...},            # quality metric -> value (None = missing)
     "downstream": {"ner": {"f1": 0.81, ...}, ...}}             # task -> score -> value

A pair (metric, score) uses the conditions where both values exist. Fewer than 3 such conditions, or a
constant column, gives "not enough conditions" / "no variation" instead of a number.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Iterable

import numpy as np

from mlmh.types.result_blocks import Correlation

#: |rho| below this, or a CI that spans 0, reads as "no strong correlation".
STRONG = 0.4
MIN_CONDITIONS = 3
BOOTSTRAP_RESAMPLES = 2000


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def _statistics(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    from scipy import stats

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spearman = stats.spearmanr(x, y)
        pearson = stats.pearsonr(x, y)
    return float(spearman.statistic), float(spearman.pvalue), float(pearson.statistic), float(pearson.pvalue)


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a - a.mean(axis=1, keepdims=True)
    b = b - b.mean(axis=1, keepdims=True)
    return (a * b).sum(axis=1) / np.sqrt((a * a).sum(axis=1) * (b * b).sum(axis=1))


def bootstrap_ci(x: np.ndarray, y: np.ndarray, seed: int, resamples: int = BOOTSTRAP_RESAMPLES) -> dict[str, list[float] | None]:
    """Percentile 95% CIs of Spearman and Pearson from resampling conditions with replacement.

    Resamples whose x or y is constant have no correlation and are left out; when fewer than half of the
    resamples are usable the CI is None. Spearman is Pearson on (average) ranks, computed for all
    resamples at once.
    """
    from scipy.stats import rankdata

    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(x), (resamples, len(x)))
    xs, ys = x[index], y[index]
    usable = (np.ptp(xs, axis=1) > 0) & (np.ptp(ys, axis=1) > 0)
    xs, ys = xs[usable], ys[usable]
    out: dict[str, list[float] | None] = {"spearman": None, "pearson": None}
    if len(xs) < resamples / 2:
        return out
    for name, values in (("spearman", _rowwise_pearson(rankdata(xs, axis=1), rankdata(ys, axis=1))), ("pearson", _rowwise_pearson(xs, ys))):
        out[name] = [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]
    return out


def verdict(rho: float | None, ci: list[float] | None, n: int) -> str:
    """Plain words for a Spearman rho with its CI."""
    if rho is None:
        return f"not enough conditions (n={n}; need {MIN_CONDITIONS})"
    span = f"rho={rho:+.2f}, 95% CI {ci[0]:+.2f}..{ci[1]:+.2f}, n={n}" if ci else f"rho={rho:+.2f}, no CI, n={n}"
    spans_zero = ci is None or ci[0] <= 0 <= ci[1]
    if abs(rho) < STRONG or spans_zero:
        return f"no strong correlation ({span})"
    strength = "strong" if abs(rho) >= 0.7 else "moderate"
    direction = "positive" if rho > 0 else "negative"
    return f"{strength} {direction} correlation ({span})"


def _columns(rows: list[dict[str, Any]]) -> tuple[list[str], list[tuple[str, str]]]:
    metrics: list[str] = []
    scores: list[tuple[str, str]] = []
    for row in rows:
        for name in row.get("metrics", {}) or {}:
            if name not in metrics:
                metrics.append(name)
        for task, values in (row.get("downstream", {}) or {}).items():
            for score in values or {}:
                if (task, score) not in scores:
                    scores.append((task, score))
    return metrics, scores


def correlate(rows: Iterable[dict[str, Any]], *, seed: int = 0) -> list[Correlation]:
    """One entry per (quality metric, task, score): n, spearman (+p, CI), pearson (+p, CI), summary.

    Entries without enough data carry None statistics and say why in ``summary``; nothing raises on
    small or constant inputs.
    """
    rows = list(rows)
    metrics, scores = _columns(rows)
    out: list[Correlation] = []
    for metric in metrics:
        for task, score in scores:
            x_values, y_values = [], []
            for row in rows:
                x = _number((row.get("metrics") or {}).get(metric))
                y = _number(((row.get("downstream") or {}).get(task) or {}).get(score))
                if x is not None and y is not None:
                    x_values.append(x)
                    y_values.append(y)
            entry = Correlation(metric=metric, task=task, score=score, n=len(x_values))
            xs, ys = np.array(x_values), np.array(y_values)
            if len(xs) < MIN_CONDITIONS:
                entry.summary = verdict(None, None, len(xs))
            elif np.ptp(xs) == 0 or np.ptp(ys) == 0:
                which = metric if np.ptp(xs) == 0 else f"{task} {score}"
                entry.summary = f"not enough conditions: {which} is the same in all {len(xs)}"
            else:
                from mlmh.machine.seeding import sample_seed

                entry.spearman, entry.spearman_p, entry.pearson, entry.pearson_p = _statistics(xs, ys)
                cis = bootstrap_ci(xs, ys, sample_seed(seed, "correlate", f"{metric}|{task}|{score}"))
                entry.spearman_ci, entry.pearson_ci = cis["spearman"], cis["pearson"]
                entry.summary = verdict(entry.spearman, cis["spearman"], len(xs))
            out.append(entry)
    return out
