"""The bench's arithmetic: medians of runs, the ratios the goals judge, and their bootstrap intervals."""

from __future__ import annotations

import statistics
from typing import Any, Callable, Sequence


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence (robust to one slow outlier run)."""
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def safe_ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def overhead_ratio(harness_seconds: float, bare_seconds: float) -> float | None:
    """Harness time over bare forward-pass time for the same work (1.0 = no overhead)."""
    return safe_ratio(harness_seconds, bare_seconds)


def speedup_ratio(causal_seconds: float, masked_seconds: float) -> float | None:
    """How many times faster the masked LM fills the same masks than the cached causal LM."""
    return safe_ratio(causal_seconds, masked_seconds)


def batching_ratio(harness_small: float, harness_large: float, bare_small: float, bare_large: float,
                   small_batch: int, large_batch: int) -> float | None:
    """Share of the model's own batching gain that the harness keeps (1.0 = all of it).

    Gain = samples/s at the large batch over samples/s at the small batch; inputs are seconds per batch.
    """
    harness_gain = safe_ratio(large_batch / harness_large, small_batch / harness_small) if harness_large > 0 and harness_small > 0 else None
    bare_gain = safe_ratio(large_batch / bare_large, small_batch / bare_small) if bare_large > 0 and bare_small > 0 else None
    return safe_ratio(harness_gain, bare_gain)


def timing_ci(statistic: Callable[..., float | None], *cells: Sequence[Sequence[float]],
              seed: int = 0) -> tuple[float | None, float | None]:
    """95 % percentile bootstrap interval of a ratio of median timings (``statistic`` of every side's median).

    ``cells``: one sequence of run lists per cell, e.g. ``(harness_runs, bare_runs)``; ``statistic`` gets
    the medians of every list, cell by cell, in that order. The runs of one cell were interleaved, so its
    rounds are resampled whole (each harness run stays with the bare run beside it); cells are
    resampled independently. (None, None) when a cell has fewer than 2 rounds.
    """
    import numpy as np

    from mlmh.stats import DEFAULT_RESAMPLES, percentile_interval

    rng = np.random.default_rng(seed)
    medians: list[Any] = []
    for sides in cells:
        rounds = min((len(runs) for runs in sides), default=0)
        if rounds < 2:
            return None, None
        draws = rng.integers(0, rounds, size=(DEFAULT_RESAMPLES, rounds))
        medians += [np.median(np.asarray(runs[:rounds], dtype=float)[draws], axis=1) for runs in sides]
    return percentile_interval([statistic(*(float(m) for m in row)) for row in zip(*medians)])


def cell_ci(statistic: Callable[..., float | None], *sides: tuple[dict | None, str]) -> list[float | None]:
    """:func:`timing_ci` of ``statistic`` over the ``(cell, side)`` run lists (side: "harness", "bare",
    "lean"), grouped by cell in the order given; [None, None] where a cell or its runs are missing."""
    groups: dict[int, list[Sequence[float]]] = {}
    for cell, side in sides:
        runs = (cell or {}).get(f"{side}_runs")
        if not runs:
            return [None, None]
        groups.setdefault(id(cell), []).append(runs)
    return list(timing_ci(statistic, *groups.values()))


def crossover_batch(causal_rate: dict[int, float], masked_rate: dict[int, float]) -> int | None:
    """The smallest batch size at which the causal LM's samples/s exceeds the masked LM's (None if never)."""
    for batch in sorted(set(causal_rate) & set(masked_rate)):
        if causal_rate[batch] > masked_rate[batch]:
            return batch
    return None
