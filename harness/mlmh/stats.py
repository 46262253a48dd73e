"""Confidence intervals and tests over per-document values: the one place every CI, gap and claim gets its interval.

Runs regenerate 16 to 64 documents per set, where a percentile bootstrap of a mean under-covers (at 16 documents a
nominal 95% interval of a paired difference covers about 90%, and a rule reading it says "holds" twice as often as
it should). So the mean of per-document values, a paired difference and the contrasts the claims test (differences,
means of differences and slopes, all linear in the documents' values) get **Student's t interval**
(:func:`t_interval`), exact for normal values and close for the bounded scores metrics give; two independent sets
(seen against control documents) get **Welch's** interval and test (:func:`welch`). Several contrasts over the same
documents tested as one family get simultaneous intervals from the maximum of their t statistics, whose critical
value respects how the contrasts correlate (:func:`simultaneous`: a selection among them keeps its coverage, and
correlated contrasts are not widened as if independent); contrasts on different documents get Bonferroni's
(``family``); p-values of separate tests get Holm's step-down adjustment (:func:`holm`). Calibration under a null
is checked by simulation (:mod:`mlmh.calibrate`).

Corpus-level statistics that are no mean of per-document values (corpus BLEU, distinct-n, a pooled rate) keep the
seeded percentile bootstrap of :func:`resample_ci` (Efron & Tibshirani 1993), the one interval they have.

``None`` values (a sample where the metric is undefined, e.g. no masked words) are left out.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Callable, NamedTuple, Sequence

import numpy as np

#: Resamples drawn unless the caller asks for another number.
DEFAULT_RESAMPLES = 1000
DEFAULT_CONFIDENCE = 0.95
#: how the mean of per-document values gets its interval (recorded next to a CI: :func:`method_info`)
T_METHOD = "Student t over per-document values"
BOOTSTRAP_METHOD = "seeded numpy resampling, percentile"


class Interval(NamedTuple):
    """A statistic with its interval, standard error, degrees of freedom and two-sided p-value against 0 (None
    where there are too few values for one)."""

    value: float | None
    low: float | None
    high: float | None
    se: float | None = None
    df: float | None = None
    p: float | None = None


NO_INTERVAL = Interval(None, None, None)


def defined(values: Sequence[float | None]) -> np.ndarray:
    """The values that are not None (nor NaN) as a float array."""
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    return arr[~np.isnan(arr)]


def critical(df: float, confidence: float = DEFAULT_CONFIDENCE, family: int = 1) -> float:
    """Student's t quantile of a two-sided ``confidence`` interval, Bonferroni-widened over ``family`` intervals."""
    from scipy.stats import t

    alpha = (1.0 - confidence) / max(1, family)
    return float(t.ppf(1.0 - alpha / 2.0, df))


def from_estimate(value: float, se: float, df: float, confidence: float = DEFAULT_CONFIDENCE,
                  family: int = 1) -> Interval:
    """The t interval and two-sided p-value of an estimate with standard error ``se`` on ``df`` degrees of freedom;
    zero spread gives a point interval (p 0 off zero, 1 at it)."""
    from scipy.stats import t

    if se <= 0 or not math.isfinite(se):
        return Interval(value, value, value, 0.0, df, 1.0 if value == 0 else 0.0)
    half = critical(df, confidence, family) * se
    return Interval(value, value - half, value + half, se, df, float(2.0 * t.sf(abs(value) / se, df)))


def se_from_ci(low: float, high: float, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The standard error a normal-approximation CI implies, its half-width over the normal quantile: for an interval
    known only by its ends (a metric's own CI, or a gap in a file written before gaps kept their standard error)."""
    return (float(high) - float(low)) / (2 * critical(math.inf, confidence))


def t_interval(values: Sequence[float | None], *, confidence: float = DEFAULT_CONFIDENCE,
               family: int = 1) -> Interval:
    """The mean of ``values`` with Student's t interval (one of ``family`` simultaneous ones); no interval under two
    values."""
    data = defined(values)
    if data.size == 0:
        return NO_INTERVAL
    mean = float(data.mean())
    if data.size < 2:
        return Interval(mean, None, None)
    return from_estimate(mean, float(data.std(ddof=1) / math.sqrt(data.size)), data.size - 1, confidence, family)


def detectable_difference(sd: float, n: int, *, power: float = 0.8,
                          confidence: float = DEFAULT_CONFIDENCE) -> float | None:
    """The minimum detectable difference of a paired test over ``n`` items whose per-item differences have standard
    deviation ``sd``: the true mean difference that a two-sided Student's t test at 1 - ``confidence`` finds
    ``power`` of the time, ``(t(1 - alpha/2, n-1) + t(power, n-1)) * sd / sqrt(n)`` (the usual closed form, e.g.
    Cohen 1988, with t quantiles in place of normal ones for small ``n``); None under two items."""
    from scipy.stats import t

    if n < 2 or not math.isfinite(sd):
        return None
    return float((critical(n - 1, confidence) + t.ppf(power, n - 1)) * sd / math.sqrt(n))


#: simulated samples behind :func:`max_t_critical` (its 95% quantile to about +-0.03 at 16-32 documents)
MAX_T_DRAWS = 10_000
#: how a family of contrasts over the same documents gets its simultaneous intervals (recorded beside a claim)
MAX_T_METHOD = "max-T over the contrasts' estimated correlation, simultaneous"


def max_t_critical(correlation: np.ndarray, df: int, confidence: float = DEFAULT_CONFIDENCE, *,
                   draws: int = MAX_T_DRAWS, seed: int = 0) -> float:
    """The critical value ``c`` with P(max_k |t_k| <= c) = ``confidence`` for the Student t statistics of k contrasts
    with correlation matrix ``correlation``, each studentised by its own standard deviation over the same ``df`` + 1
    documents, by seeded simulation of normal documents (single-step max-T simultaneous intervals, Hothorn, Bretz &
    Westfall 2008, with each contrast's own variance in place of their common one: the multivariate t of a common
    denominator covered 92.6% for a nominal 95% in 1,000 simulations of 4 contrasts of correlation 0.5 at 16
    documents). Between Student's ``critical(df)`` (one contrast, or all perfectly
    correlated) and Bonferroni's ``critical(df, family=k)``, never above it; one contrast gets Student's exactly."""
    matrix = np.atleast_2d(np.asarray(correlation, dtype=float))
    k = matrix.shape[0]
    if k <= 1:
        return critical(df, confidence)
    largest = _max_t_draws(matrix, int(df) + 1, seed, draws)
    return float(min(np.quantile(largest, confidence), critical(df, confidence, family=k)))


def _max_t_draws(correlation: np.ndarray, documents: int, seed: int, draws: int = MAX_T_DRAWS) -> np.ndarray:
    """max_k |t_k| of ``draws`` seeded samples of ``documents`` normal documents with ``correlation`` between the k
    contrasts (which may be singular, as one estimated from fewer documents than contrasts is), each t_k its
    contrast's mean over its own standard error."""
    values, vectors = np.linalg.eigh((correlation + correlation.T) / 2.0)
    root = (vectors * np.sqrt(np.clip(values, 0.0, None))).astype(np.float32)
    base = _base_draws(correlation.shape[0], documents, seed, draws)
    sample = (base.reshape(-1, base.shape[-1]) @ root.T).reshape(base.shape)
    total = sample.sum(axis=1)
    variance = (np.einsum("dnk,dnk->dk", sample, sample) - total * total / documents) / (documents - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.abs(total) / np.sqrt(documents * np.clip(variance, 0.0, None))
    return np.nan_to_num(t, nan=0.0, posinf=np.inf).max(axis=1)


@lru_cache(maxsize=3)
def _base_draws(k: int, documents: int, seed: int, draws: int) -> np.ndarray:
    """The independent normals behind :func:`_max_t_draws` (draws x documents x k, float32), once per shape: they do
    not depend on the correlation, so families of one size reuse them (mlmh.calibrate decides thousands)."""
    found = np.random.default_rng(seed).standard_normal((draws, documents, k), dtype=np.float32)
    found.flags.writeable = False
    return found


def simultaneous(samples: np.ndarray | Sequence[Sequence[float]], *, confidence: float = DEFAULT_CONFIDENCE,
                 family: int = 1, seed: int = 0) -> list[Interval]:
    """The mean of each row of ``samples`` (k contrasts x n documents: each contrast's per-document values, the same
    documents in every row), with intervals simultaneous over the k rows at ``confidence`` (the set also one of
    ``family`` such sets, Bonferroni between sets): the rows' Student t statistics, whose maximum gets its critical
    value from the rows' estimated correlation (:func:`max_t_critical`), so that with 95% confidence every interval
    covers its mean whichever the data favour, and correlated contrasts are not widened as if independent. A row
    without spread keeps a point interval. p-values are single-step adjusted, P(max |T| >= |t_k|) under that law
    (times ``family``)."""
    data = np.atleast_2d(np.asarray(samples, dtype=float))
    k, n = data.shape
    if n < 2:
        return [Interval(float(row.mean()), None, None) if n else NO_INTERVAL for row in data]
    means, sds = data.mean(axis=1), data.std(axis=1, ddof=1)
    spread = [i for i in range(k) if math.isfinite(sds[i]) and sds[i] > 0]
    level = 1.0 - (1.0 - confidence) / max(1, family)
    df = float(n - 1)
    largest: np.ndarray | None = None
    c = critical(df, level)
    if len(spread) > 1:
        # sample correlations spread the eigenvalues (more apparent dependence, a smaller c): shrunk toward
        # independence by k / (n + k), the direction that widens (coverage 94.6-96.3% for a nominal 95% with 4-24
        # contrasts at 16-32 documents in 400-1,000 simulations, against 94.0-95.0% unshrunk)
        shrink = len(spread) / (n + len(spread))
        correlation = (1.0 - shrink) * np.corrcoef(data[spread]) + shrink * np.eye(len(spread))
        largest = _max_t_draws(correlation, n, seed)
        c = float(min(np.quantile(largest, level), critical(df, level, family=len(spread))))
    out = []
    for i in range(k):
        mean = float(means[i])
        if i not in spread:
            out.append(Interval(mean, mean, mean, 0.0, df, 1.0 if mean == 0 else 0.0))
            continue
        se = float(sds[i] / math.sqrt(n))
        if largest is None:  # one contrast: Student's p-value
            from scipy.stats import t

            p = float(2.0 * t.sf(abs(mean) / se, df))
        else:
            p = float(np.mean(largest >= abs(mean) / se))
        out.append(Interval(mean, mean - c * se, mean + c * se, se, df, min(1.0, p * max(1, family))))
    return out


def mean_ci(values: Sequence[float | None], *,
            confidence: float = DEFAULT_CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """(mean, ci_low, ci_high) of ``values`` by :func:`t_interval`; the CI is None with fewer than two values."""
    found = t_interval(values, confidence=confidence)
    return found.value, found.low, found.high


def welch(a: Interval, b: Interval, *, confidence: float = DEFAULT_CONFIDENCE, family: int = 1) -> Interval:
    """a - b of two means of independent sets (each an :class:`Interval` with its ``se`` and ``df``), with Welch's
    interval and test (Welch-Satterthwaite degrees of freedom); no interval where either lacks a standard error."""
    if a.value is None or b.value is None:
        return NO_INTERVAL
    value = float(a.value) - float(b.value)
    if a.se is None or b.se is None or not a.df or not b.df:
        return Interval(value, None, None)
    va, vb = a.se ** 2, b.se ** 2
    se = math.sqrt(va + vb)
    if se == 0:
        return from_estimate(value, 0.0, a.df + b.df, confidence, family)
    df = (va + vb) ** 2 / (va ** 2 / a.df + vb ** 2 / b.df)
    return from_estimate(value, se, df, confidence, family)


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm's (1979) step-down adjustment of a family of p-values (None left out and kept None): a test is
    rejected at family-wise level alpha when its adjusted p-value is below alpha."""
    order = sorted((p, i) for i, p in enumerate(p_values) if p is not None)
    m = len(order)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, (p, i) in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p))
        out[i] = running
    return out


def resample_ci(
    n_items: int,
    statistic: Callable[[np.ndarray], float],
    *,
    seed: int = 0,
    n_resamples: int = DEFAULT_RESAMPLES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> tuple[float | None, float | None]:
    """Percentile CI of ``statistic(indices)`` over ``n_resamples`` seeded resamples of ``range(n_items)``: for
    corpus-level statistics that are no mean of per-item values.

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
    if kind == "mean":
        return {"ci_method": T_METHOD, "ci_confidence": DEFAULT_CONFIDENCE}
    return {"ci_method": BOOTSTRAP_METHOD, "ci_resamples": n_resamples, "ci_confidence": DEFAULT_CONFIDENCE,
            "ci_seed": seed}
