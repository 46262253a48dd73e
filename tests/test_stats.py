"""Bootstrap confidence intervals: seeded, deterministic, and what scipy computes."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import bootstrap

from mlmh.stats import mean_ci, resample_ci


def test_mean_ci_equals_scipy_percentile_bootstrap():
    values = np.random.default_rng(3).normal(size=50)
    mean, low, high = mean_ci(values, seed=11, n_resamples=500)
    expected = bootstrap((values,), np.mean, n_resamples=500, method="percentile", vectorized=True, rng=np.random.default_rng(11))
    assert mean == pytest.approx(values.mean(), abs=1e-12)
    assert low == pytest.approx(expected.confidence_interval.low, abs=1e-12)
    assert high == pytest.approx(expected.confidence_interval.high, abs=1e-12)
    assert low < mean < high


def test_mean_ci_is_deterministic_per_seed():
    values = list(np.random.default_rng(0).random(40))
    assert mean_ci(values, seed=5) == mean_ci(values, seed=5)
    assert mean_ci(values, seed=5) != mean_ci(values, seed=6)


def test_mean_ci_skips_none_and_handles_degenerate_inputs():
    assert mean_ci([None, 1.0, None, 3.0], seed=0)[0] == 2.0
    assert mean_ci([], seed=0) == (None, None, None)
    assert mean_ci([None], seed=0) == (None, None, None)
    assert mean_ci([0.5], seed=0) == (0.5, None, None)
    assert mean_ci([1.0, 1.0, 1.0], seed=0) == (1.0, 1.0, 1.0)


def test_resample_ci_is_seeded_and_brackets_a_ratio_statistic():
    rng = np.random.default_rng(1)
    hits, totals = rng.integers(0, 10, 60), rng.integers(10, 20, 60)

    def ratio(idx):
        return hits[idx].sum() / totals[idx].sum()

    first = resample_ci(60, ratio, seed=4, n_resamples=300)
    assert first == resample_ci(60, ratio, seed=4, n_resamples=300)
    assert first != resample_ci(60, ratio, seed=5, n_resamples=300)
    low, high = first
    assert low < hits.sum() / totals.sum() < high


def test_resample_ci_needs_two_items():
    assert resample_ci(1, lambda idx: 1.0, seed=0) == (None, None)
