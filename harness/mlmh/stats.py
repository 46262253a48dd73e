"""Seeded bootstrap confidence intervals for corpus statistics over per-sample items.

Two entry points, both deterministic for a given seed:

* :func:`mean_ci` — the mean of per-sample values (ROUGE, METEOR, BERTScore, stutter...), through
  :func:`scipy.stats.bootstrap` with the **percentile** method (BCa is undefined when every value is
  equal, which happens on identical texts).
* :func:`resample_ci` — any corpus-level function of a subset of items (corpus BLEU, distinct-n), by
  seeded numpy resampling of item indices and the percentile interval (Efron & Tibshirani 1993).

``None`` values (a sample where the metric is undefined, e.g. no masked words) are left out.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

#: Resamples drawn unless the caller asks for another number.
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95


def defined(values: Sequence[float | None]) -> np.ndarray:
    """The values that are not None (nor NaN) as a float array."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[~np.isnan(arr)]


def mean_ci(
    values: Sequence[float | None],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float | None, float | None, float | None]:
    """(mean, ci_low, ci_high) of ``values``; the CI is None with fewer than two values."""
    from scipy.stats import bootstrap

    data = defined(values)
    if data.size == 0:
        return None, None, None
    mean = float(data.mean())
    if data.size < 2:
        return mean, None, None
    if np.all(data == data[0]):  # no spread: every resample has the same mean
        return mean, mean, mean
    result = bootstrap(
        (data,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    return mean, float(result.confidence_interval.low), float(result.confidence_interval.high)


def resample_ci(
    n_items: int,
    statistic: Callable[[np.ndarray], float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float | None, float | None]:
    """Percentile CI of ``statistic(indices)`` over ``n_resamples`` seeded resamples of ``range(n_items)``.

    ``statistic`` receives an int array of item indices (with repeats) and returns the corpus value of
    that resampled corpus; for speed it should work on precomputed per-item sufficient statistics.
    """
    if n_items < 2:
        return None, None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n_items, size=(n_resamples, n_items))
    return percentile_interval([statistic(row) for row in draws], confidence)


def percentile_interval(values: Sequence[float | None], confidence: float = DEFAULT_CONFIDENCE) -> tuple[float | None, float | None]:
    """The central ``confidence`` interval of resampled statistics (None and NaN left out), or (None, None)."""
    kept = defined(values)
    if kept.size == 0:
        return None, None
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(kept, [alpha, 1.0 - alpha])
    return float(low), float(high)


def method_info(kind: str = "mean", n_resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> dict[str, object]:
    """What to record next to a CI so readers know how it was computed."""
    how = "scipy.stats.bootstrap percentile" if kind == "mean" else "seeded numpy resampling, percentile"
    return {"ci_method": how, "ci_resamples": n_resamples, "ci_confidence": DEFAULT_CONFIDENCE, "ci_seed": seed}
