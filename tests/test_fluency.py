"""The fluency check beside claim (1): the judge's perplexity of the overlap-winning MLM against the CLM's, per unseen
document, with the originals', the baselines' and distinct-n beside (mlmh.findings.fluency)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlmh.findings.comparisons import judged
from mlmh.findings.decide import run_findings
from mlmh.report.markdown import render_markdown
from mlmh.types import FAILS, HOLDS, NOT_COMPARABLE, Score
from test_findings import DOCS, PLATEAU, results_of, row

ORIGINAL = 20.0


def judged_rows(mlm_ppl, clm_ppl, *, mlm_bleu=30.0, clm_bleu=20.0, maskings=("random:ratio=0.15", "random:ratio=0.5")):
    rows = []
    for masking in maskings:
        for kind, bleu, ppl in (("mlm", mlm_bleu, mlm_ppl), ("clm", clm_bleu, clm_ppl)):
            r = row(kind, masking, bleu)
            r.unseen.metrics.update({"gen-ppl": Score(ppl, ppl - 1, ppl + 1, higher_is_better=False),
                                     "gen-ppl_original": Score(ORIGINAL, 19.0, 21.0, higher_is_better=False),
                                     "distinct-2": Score(0.9 if kind == "clm" else 0.8)})
            r.unseen.filler["gen-ppl"], r.unseen.deletion["gen-ppl"] = Score(90.0, higher_is_better=False), Score(40.0)
            rows.append(r)
    return rows


def judged_findings(rows, cards=None, noise=0.2, seed=0):
    rng = np.random.default_rng(seed)
    per_document = {}
    for r in rows:
        per_document[r.id] = {
            "bleu": {d: r.unseen.metrics["bleu"].value + rng.normal(0, 0.5) for d in DOCS},
            "gen-ppl": {d: r.unseen.metrics["gen-ppl"].value * math.exp(rng.normal(0, noise)) for d in DOCS},
            "gen-ppl_original": {d: ORIGINAL for d in DOCS}}
    results = results_of(rows, cards)
    results.findings = run_findings(results, per_document, {}, [], seed=0)
    return results, {f.claim: f for f in results.findings}


@pytest.mark.parametrize("mlm_ppl, clm_ppl, expected", [(30.0, 45.0, HOLDS), (45.0, 30.0, FAILS)])
def test_the_overlap_winner_s_fluency_against_the_clm_s_paired_per_document(mlm_ppl, clm_ppl, expected):
    results, found = judged_findings(judged_rows(mlm_ppl, clm_ppl))
    finding = found["paper-1-fluency:bleu"]
    assert finding.verdict == expected and finding.unit == "nats per token" and finding.documents == len(DOCS)
    assert finding.statistic == pytest.approx(math.log(clm_ppl / mlm_ppl), abs=0.1)
    assert finding.ci_low <= finding.statistic <= finding.ci_high and len(finding.parts) == 2
    part = finding.parts[0]
    assert part["mlm_x_original"] == pytest.approx(mlm_ppl / ORIGINAL) and part["filler_x_original"] == 4.5
    assert f"MLM {mlm_ppl / ORIGINAL:.2f}x, CLM {clm_ppl / ORIGINAL:.2f}x, filler 4.50x, deletion 2.00x" in finding.statement
    assert "(MLM distinct-2 0.800; CLM distinct-2 0.900)" in finding.statement and "repetition" in finding.statement
    assert "paper-1:bleu" in found  # beside claim (1), which it does not replace
    assert "(1) fluency check" in render_markdown(judged(results), [])


def test_the_mlm_that_wins_on_overlap_is_the_one_judged():
    rows = judged_rows(30.0, 45.0)
    loser = row("mlm", "random:ratio=0.15", 10.0, sampler="one-shot")  # a worse MLM on BLEU, more fluent
    loser.unseen.metrics.update({"gen-ppl": Score(5.0, higher_is_better=False), "gen-ppl_original": Score(ORIGINAL)})
    _, found = judged_findings(rows + [loser])
    assert found["paper-1-fluency:bleu"].parts[0]["mlm"] == rows[0].id


def test_the_same_caveats_decide_it():
    _, found = judged_findings(judged_rows(30.0, 45.0), cards={"mlm": PLATEAU})
    finding = found["paper-1-fluency:bleu"]
    assert finding.verdict == NOT_COMPARABLE and "never beat the best constant predictor" in finding.statement


def test_a_run_without_gen_ppl_has_no_fluency_finding():
    rows = [row(k, "random:ratio=0.5", v) for k, v in (("mlm", 30.0), ("clm", 20.0))]
    results = results_of(rows)
    found = run_findings(results, {r.id: {"bleu": {d: 1.0 for d in DOCS}} for r in rows}, {}, [], seed=0)
    assert not any(f.claim.startswith("paper-1-fluency") for f in found)
