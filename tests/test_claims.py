"""Seed-002 claims (mlmh.findings.claims): verdicts on constructed per-document counts, pairing, skipping, and the
gmlm preset end to end on a tiny budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from mlmh.findings.claims import ACCURACY, CLAIMS, STUTTER, Cell, evaluate, paired, slope_per_tenth
from mlmh.findings.verdicts import verdict
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE, NOT_COMPARABLE
from mlmh.types import NOT_TESTED as SKIPPED

DOCS = [f"d{i}" for i in range(30)]


def cell(model_params, sampler="mask-predict", sampler_params=None, ratio=0.5, accuracy=None, stutter=None,
         passes=10, name=None):
    """A cell with per-document (hits, positions): ``accuracy``/``stutter`` give each document's hit count
    out of 20 positions."""
    params = {"steps": 10} if sampler == "mask-predict" and sampler_params is None else dict(sampler_params or {})
    counts = {}
    for measure, hits in ((ACCURACY, accuracy), (STUTTER, stutter)):
        if hits is not None:
            counts[measure] = {d: (float(h), 20.0) for d, h in zip(DOCS, hits)}
    per_doc = passes if isinstance(passes, dict) else {d: passes for d in DOCS}
    label = name or f"{model_params}|{ratio}|{sampler}{params}"
    return Cell([label], "trained-mlm", dict(model_params), "random", {"ratio": ratio}, sampler, params, counts, per_doc)


def fixed(ratio):
    return {"mask_schedule": "fixed", "mask_ratio": ratio}


def noise(seed, low=0, high=4):
    return np.random.default_rng(seed).integers(low, high, size=len(DOCS))


def by_claim(findings):
    """Findings by claim id, each a flat dict (its ``extra`` beside its fields), as results.json's readers see them."""
    out = {}
    for f in findings:
        flat = f.to_dict() if hasattr(f, "to_dict") else dict(f)
        out[flat["claim"]] = {**flat, **flat.get("extra", {})}
    return out


# -- verdict rule -----------------------------------------------------------------------------------
@pytest.mark.parametrize("low, high, direction, expected", [
    (0.5, 2.0, +1, HOLDS), (-2.0, -0.5, +1, FAILS), (-0.5, 2.0, +1, INCONCLUSIVE),
    (-2.0, -0.5, -1, HOLDS), (0.5, 2.0, -1, FAILS), (-1.0, 1.0, -1, INCONCLUSIVE), (None, None, +1, INCONCLUSIVE),
])
def test_verdict_reads_the_ci_against_the_claimed_direction(low, high, direction, expected):
    assert verdict(low, high, direction) == expected


# -- (a) more masking -------------------------------------------------------------------------------
def masking_grid(step, ratio=0.5):
    base = noise(1, 2, 8)
    grid = [cell(fixed(r), ratio=ratio, accuracy=base + k * step) for k, r in enumerate((0.15, 0.3, 0.5))]
    grid.append(cell({"mask_schedule": "uniform"}, ratio=ratio, accuracy=base + 1))
    grid.append(cell({"mask_schedule": "mdlm"}, ratio=ratio, accuracy=base + 2))
    return grid


def test_more_masking_holds_fails_or_is_inconclusive_with_its_slope():
    rises = by_claim(evaluate(masking_grid(2)))["a@0.5"]
    assert rises["verdict"] == HOLDS
    rates = [100 * (noise(1, 2, 8) + k * 2).sum() / (20 * len(DOCS)) for k in range(3)]
    assert rises["statistic"] == pytest.approx(0.1 * np.polyfit([0.15, 0.3, 0.5], rates, 1)[0])
    assert set(rises["beside"]) == {"uniform", "mdlm"} and "uniform" in rises["statement"]
    assert "holds" in rises["statement"] and "CI" in rises["statement"]
    assert len(rises["conditions"]) == 5
    assert by_claim(evaluate(masking_grid(-2)))["a@0.5"]["verdict"] == FAILS
    flat = by_claim(evaluate(masking_grid(0)))["a@0.5"]
    assert flat["verdict"] == INCONCLUSIVE and flat["statistic"] == pytest.approx(0.0)
    # the other inference ratio is not in this grid: that claim is skipped, with its reason
    assert by_claim(evaluate(masking_grid(2)))["a@0.8"]["verdict"] == SKIPPED


def test_the_bootstrap_is_paired_over_documents():
    """Documents differ a lot, models by a constant 1 hit each: paired resampling sees the constant gain."""
    spread = np.arange(len(DOCS)) % 15  # 0..14 hits of 20: huge between-document variance
    grid = [cell(fixed(r), accuracy=spread + k) for k, r in enumerate((0.15, 0.3, 0.5))]
    found = by_claim(evaluate(grid))["a@0.5"]
    assert found["verdict"] == HOLDS and found["ci_high"] - found["ci_low"] < 0.5
    # an unpaired bootstrap (each model's documents drawn independently) could not separate them
    rng = np.random.default_rng(0)
    slopes = []
    for _ in range(300):
        rates = [100 * (spread + k)[rng.integers(0, len(DOCS), len(DOCS))].mean() / 20 for k in range(3)]
        slopes.append(slope_per_tenth([0.15, 0.3, 0.5])(np.asarray(rates)))
    assert np.quantile(slopes, 0.025) < 0 < found["ci_low"]


# -- (b) stutter over refinement steps ----------------------------------------------------------------
def stutter_series(drop, family="mask-predict"):
    base = noise(2, 4, 10)
    if family == "mask-predict":
        return [cell({}, sampler_params={"steps": t}, stutter=np.maximum(base - k * drop, 0), passes=t)
                for k, t in enumerate((1, 2, 4, 10))]
    start = [cell({}, sampler="one-shot", sampler_params={}, stutter=base, passes=1)]
    return start + [cell({}, sampler="gibbs", sampler_params={"init": "one-shot", "steps": t - 1},
                         stutter=np.maximum(base - (k + 1) * drop, 0), passes=t) for k, t in enumerate((2, 4, 10))]


@pytest.mark.parametrize("family", ["mask-predict", "gibbs"])
def test_stutter_claim_reads_the_change_from_the_fewest_to_the_most_passes(family):
    claim = f"b:{family}"
    falls = by_claim(evaluate(stutter_series(1, family)))[claim]
    assert falls["verdict"] == HOLDS and falls["statistic"] < 0 and falls["steps"] == [1, 2, 4, 10]
    assert "T=1 to T=10" in falls["statement"]
    assert by_claim(evaluate(stutter_series(-1, family)))[claim]["verdict"] == FAILS
    assert by_claim(evaluate(stutter_series(0, family)))[claim]["verdict"] == INCONCLUSIVE


def test_a_stutter_remasking_variant_is_not_part_of_the_series():
    grid = [cell({}, sampler_params={"steps": 1, "stutter": True}, stutter=noise(3), passes=1),
            cell({}, sampler_params={"steps": 10}, stutter=noise(3), passes=10)]
    assert by_claim(evaluate(grid))["b:mask-predict"]["verdict"] == SKIPPED


# -- (c) adaptive Gibbs at equal passes -------------------------------------------------------------
def gibbs_pair(gain, adaptive_passes=10):
    base = noise(4, 3, 9)
    params = {"init": "one-shot", "steps": 9}
    return [cell({}, sampler="gibbs", sampler_params=params, accuracy=base, stutter=base, passes=10),
            cell({}, sampler="adaptive-gibbs", sampler_params=params, accuracy=base + gain, stutter=base,
                 passes=adaptive_passes)]


def test_adaptive_gibbs_claim_needs_equal_forward_passes():
    assert by_claim(evaluate(gibbs_pair(1)))["c"]["verdict"] == HOLDS
    assert by_claim(evaluate(gibbs_pair(-1)))["c"]["verdict"] == FAILS
    unequal = by_claim(evaluate(gibbs_pair(1, adaptive_passes=11)))["c"]
    assert unequal["verdict"] == INCONCLUSIVE and unequal["passes_equal"] is False
    assert "forward passes differ" in unequal["statement"] and unequal["statistic"] > 0


# -- skipping -------------------------------------------------------------------------------------
def test_every_claim_is_skipped_with_a_reason_when_the_run_lacks_its_conditions():
    findings = list(by_claim(evaluate([cell({}, sampler="one-shot", sampler_params={}, accuracy=noise(5),
                                              stutter=noise(5))])).values())
    assert [f["claim"] for f in findings] == [c.id for c in CLAIMS]
    assert all(f["verdict"] == SKIPPED and f["reason"] and f["statistic"] is None for f in findings)


def test_a_claim_with_too_few_documents_is_inconclusive():
    grid = [cell(fixed(r), accuracy=[5 + k]) for k, r in enumerate((0.15, 0.3, 0.5))]  # one document
    found = by_claim(evaluate(grid))["a@0.5"]
    assert found["verdict"] == INCONCLUSIVE and found["ci_low"] is None and found["documents"] == 1
    assert paired(grid, STUTTER, float)[0] is None  # no stutter counts at all


# -- the preset end to end --------------------------------------------------------------------------
TINY_MODELS = ",".join(f"trained-mlm:size=tiny,max_steps=2{extra}" for extra in (
    "", ",mask_ratio=0.3", ",mask_ratio=0.5", ",mask_schedule=uniform", ",mask_schedule=mdlm"))


@pytest.mark.slow
def test_gmlm_preset_writes_one_finding_per_claim_and_states_them(tmp_path):
    """Five tiny models trained 2 steps, 2 documents per set, no metric plugins (the claims count from the
    generations): the preset's whole sampler and masking grid, findings and report. Two steps teach a model
    nothing, so every claim is "not comparable" and says that its models never left the unigram plateau."""
    env = {**os.environ, "MLMH_CACHE_DIR": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "mlmh", "eval", "--preset", "gmlm", "--model", TINY_MODELS,
                           "--limit", "2", "--metric", "none", "--output-path", str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    findings = [f for f in results["findings"] if f["source"] == "Li et al., ICML 2024"]
    assert [f["claim"] for f in findings] == [c.id for c in CLAIMS]
    for f in findings:
        assert f["verdict"] == NOT_COMPARABLE, f
        assert "unigram plateau" in f["statement"] and f["caveats"]
        assert f["conditions"] and all(cid in {c["id"] for c in results["conditions"]} for cid in f["conditions"])
    report = (out / "report.md").read_text(encoding="utf-8")
    answer = report[report.index("## Answer"):report.index("## Findings")]
    for f in findings:
        assert f["statement"] in answer


def test_gibbs_series_keep_their_other_settings_apart():
    """burnin=0 (the preset's greedy Gibbs) forms its own series with the one-shot start; two burn-ins never mix."""
    greedy = [c for c in stutter_series(1, "gibbs")]
    for c in greedy[1:]:
        c.sampler_params["burnin"] = 0
    finding = by_claim(evaluate(greedy))["b:gibbs"]
    assert finding["verdict"] == HOLDS and finding["steps"] == [1, 2, 4, 10] and len(finding["series"]) == 1
    mixed = greedy[:2] + [c for c in stutter_series(1, "gibbs")[2:]]  # T=2 greedy, T=4/10 default burn-in
    assert len(by_claim(evaluate(mixed))["b:gibbs"]["series"]) == 2
