"""Quality-vs-downstream correlations on inputs whose answer is known."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats

from mlmh.findings.correlation import correlate, verdict
from mlmh.types import Correlation


def rows_from(metric: list, score: list, name: str = "bleu") -> list[dict]:
    return [{"condition": f"c{i}", "metrics": {name: m}, "downstream": {"ner": {"f1": s}}} for i, (m, s) in enumerate(zip(metric, score))]


def test_monotone_relation_is_a_strong_positive_correlation():
    metric = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]
    score = [0.10, 0.12, 0.30, 0.31, 0.50, 0.55, 0.70, 0.90]
    (entry,) = correlate(rows_from(metric, score))
    assert entry.n == 8 and entry.spearman == pytest.approx(1.0)
    assert entry.pearson == pytest.approx(stats.pearsonr(metric, score).statistic)
    assert entry.spearman_ci[0] > 0.4
    assert entry.summary.startswith("strong positive correlation")


def test_inverse_relation_is_negative_and_noise_is_no_strong_correlation():
    (negative,) = correlate(rows_from(list(range(10)), [10 - x + 0.1 * (x % 3) for x in range(10)]))
    assert negative.spearman < -0.9 and "negative correlation" in negative.summary
    rng = np.random.default_rng(3)
    (noise,) = correlate(rows_from(list(rng.normal(size=8)), list(rng.normal(size=8))))
    assert noise.summary.startswith("no strong correlation")
    assert noise.spearman_ci[0] < 0 < noise.spearman_ci[1]


def test_too_few_conditions_missing_values_and_constant_inputs_do_not_crash():
    (few,) = correlate(rows_from([1.0, 2.0], [0.1, 0.2]))
    assert few.spearman is None and few.summary == "not enough conditions (n=2; need 3)"
    (gaps,) = correlate(rows_from([1.0, None, 3.0, float("nan"), 5.0], [0.1, 0.2, None, 0.4, 0.5]))
    assert gaps.n == 2 and gaps.spearman is None
    (flat,) = correlate(rows_from([1.0, 1.0, 1.0, 1.0], [0.1, 0.2, 0.3, 0.4]))
    assert flat.spearman is None and "the same in all 4" in flat.summary
    assert correlate([]) == []


def test_every_metric_meets_every_score_and_results_are_seeded_json():
    rows = [{"condition": str(i), "metrics": {"bleu": float(i), "rougeL": float(i % 3)},
             "downstream": {"ner": {"f1": i * 0.1, "precision": 1 - i * 0.05}, "text-classification": {"micro_f1": (i * 7 % 5) / 5}}}
            for i in range(6)]
    entries = correlate(rows, seed=1)
    assert {(e.metric, e.task, e.score) for e in entries} == {
        (m, t, s) for m in ("bleu", "rougeL") for t, s in (("ner", "f1"), ("ner", "precision"), ("text-classification", "micro_f1"))}
    assert correlate(rows, seed=1) == entries
    data = [e.to_dict() for e in entries]
    assert json.loads(json.dumps(data)) == data and [Correlation.from_dict(d) for d in data] == entries


def test_verdict_wording():
    assert verdict(0.9, [0.5, 0.99], 10).startswith("strong positive")
    assert verdict(-0.5, [-0.8, -0.1], 10).startswith("moderate negative")
    assert verdict(0.8, [-0.2, 0.95], 5).startswith("no strong correlation")
    assert verdict(0.3, [0.1, 0.5], 30).startswith("no strong correlation")
