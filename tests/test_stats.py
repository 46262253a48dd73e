"""The intervals every CI, gap and claim reads (mlmh.stats): Student's t for means of per-document values, Welch's for
two independent sets, Holm's adjustment, the seeded percentile bootstrap for corpus statistics; and the coverage
they keep at the 16 to 32 documents a run has, where the percentile bootstrap they replace did not."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as scipy_stats

from mlmh.stats import Interval, holm, mean_ci, resample_ci, t_interval, welch


def test_mean_ci_is_students_t_interval():
    values = np.random.default_rng(3).normal(size=20)
    mean, low, high = mean_ci(values)
    expected = scipy_stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=scipy_stats.sem(values))
    assert mean == pytest.approx(values.mean(), abs=1e-12)
    assert (low, high) == pytest.approx(expected, abs=1e-12)


def test_mean_ci_skips_none_and_handles_degenerate_inputs():
    assert mean_ci([None, 1.0, None, 3.0])[0] == 2.0
    assert mean_ci([]) == (None, None, None)
    assert mean_ci([None]) == (None, None, None)
    assert mean_ci([0.5]) == (0.5, None, None)
    assert mean_ci([1.0, 1.0, 1.0]) == (1.0, 1.0, 1.0)


def test_a_family_widens_each_interval_as_bonferroni_does():
    values = list(np.random.default_rng(0).normal(size=16))
    one, four = t_interval(values), t_interval(values, family=4)
    assert four.low < one.low and four.high > one.high
    assert four.high - four.value == pytest.approx(scipy_stats.t.ppf(1 - 0.05 / 8, 15) * one.se, rel=1e-9)


def test_the_t_interval_covers_at_sixteen_documents_where_the_percentile_bootstrap_did_not():
    rng = np.random.default_rng(11)
    t_covers = boot_covers = 0
    trials = 400
    for _ in range(trials):
        values = rng.normal(0.0, 1.0, 16)
        found = t_interval(list(values))
        t_covers += found.low <= 0.0 <= found.high
        low, high = resample_ci(16, lambda rows: float(values[rows].mean()), seed=int(rng.integers(1 << 30)),
                                n_resamples=400)
        boot_covers += low <= 0.0 <= high
    assert t_covers / trials >= 0.925  # nominal 95%, Monte-Carlo error about 1%
    assert boot_covers / trials < t_covers / trials  # what the bootstrap of a mean gave up at this size


def test_welch_matches_scipys_test_on_two_independent_sets():
    rng = np.random.default_rng(5)
    a, b = rng.normal(1.0, 2.0, 32), rng.normal(0.0, 1.0, 8)
    found = welch(t_interval(list(a)), t_interval(list(b)))
    expected = scipy_stats.ttest_ind(a, b, equal_var=False)
    assert found.value == pytest.approx(a.mean() - b.mean())
    assert found.p == pytest.approx(expected.pvalue, rel=1e-9)
    assert found.low < found.value < found.high
    assert welch(Interval(1.0, None, None), t_interval(list(b))).low is None  # no standard error: no interval


def test_holm_steps_down_and_keeps_none():
    assert holm([0.01, 0.04, None, 0.03]) == pytest.approx([0.03, 0.06, None, 0.06])
    assert holm([]) == []


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


def test_the_max_t_critical_value_lies_between_students_and_bonferronis_and_matches_dunnetts():
    from mlmh.stats import critical, max_t_critical

    equicorrelated = np.full((4, 4), 0.5) + 0.5 * np.eye(4)  # four arms against one shared control
    found = max_t_critical(equicorrelated, 30)
    assert critical(30) < found < critical(30, family=4)
    # Dunnett's two-sided 95% value for 4 comparisons on 30 df is 2.59 with one pooled variance; each contrast
    # studentised by its own variance needs a little more
    assert 2.58 < found < 2.72
    assert max_t_critical(np.ones((3, 3)), 15) == pytest.approx(critical(15), abs=0.03)  # one contrast three times
    assert max_t_critical(np.eye(1), 15) == critical(15)  # one contrast: Student's exactly
    assert max_t_critical(equicorrelated, 30) == found  # seeded


def test_simultaneous_intervals_cover_every_contrast_at_once_at_sixteen_documents():
    from mlmh.stats import simultaneous

    rng = np.random.default_rng(2)
    trials, covered, single = 400, 0, 0
    for _ in range(trials):
        arms = rng.normal(size=(5, 16)) + rng.normal(0.0, 2.0, 16)  # four arms and a control, documents shared
        found = simultaneous(arms[:4] - arms[4])
        covered += all(f.low <= 0.0 <= f.high for f in found)
        single += all(f.low <= 0.0 <= f.high for f in (t_interval(list(arms[i] - arms[4])) for i in range(4)))
    assert covered / trials >= 0.925  # nominal 95% for all four at once, Monte-Carlo error about 1.3%
    assert single / trials < 0.9  # four unadjusted intervals do not cover all at once
    point = simultaneous([[1.0, 1.0, 1.0], [0.0, 1.0, 2.0]])
    assert (point[0].low, point[0].high) == (1.0, 1.0) and point[1].low < 1.0 < point[1].high
