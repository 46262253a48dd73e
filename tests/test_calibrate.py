"""The verdict rules under a null and under a real effect (mlmh.calibrate): each says "holds" (or flags) no more often
than its nominal rate when nothing is there, and still finds a stated effect; `mlmh calibrate` says so, and fails when
a rule does not hold its rate."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from mlmh import calibrate as sim
from mlmh.cli import cli

RUNS = 200


def _rule(shape: sim.Structure, claim: str) -> sim.Rule:
    return next(r for r in sim.rules_for(shape) if r.claim == claim)


@pytest.mark.parametrize("mlm", [1, 2, 4])
@pytest.mark.parametrize("documents", [16, 32])
def test_claim_one_says_holds_at_most_five_percent_of_null_runs_whatever_the_arms(mlm, documents):
    # the old rule picked the best of 4 MLM samplers on the documents it then bootstrapped: 18-20 % at 16 documents
    shape = sim.structure(mlm=mlm, clm=1, documents=documents)
    rule = _rule(shape, "paper-1:quality")
    found = sim.rate(rule, shape, rule.null, RUNS, seed=mlm * 100 + documents, null=True)
    assert found.positive <= 0.05, found
    assert not found.exceeds


def test_claim_one_still_finds_a_three_point_lead():
    shape = sim.structure(mlm=4, clm=1, documents=32)
    rule = _rule(shape, "paper-1:quality")
    assert sim.rate(rule, shape, rule.effect, RUNS, seed=7, null=False).positive >= 0.80


def test_claim_three_holds_its_rate_where_one_comparison_ties_and_finds_a_three_point_effect():
    # an arm "beats every other" when each of its comparisons clears a bound Bonferroni-widened over the arms alone
    # (intersection-union): its least favourable null is an arm far ahead of every other but one, which it ties
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve

    shape = sim.of_plan(build_plan(resolve("pan")))
    rule = _rule(shape, "paper-3")
    tie = sim.rate(rule, shape, rule.nulls[1], 100, seed=5, null=True)
    assert tie.positive <= 0.05 and not tie.exceeds, tie
    # 18.2% in 1,000 runs; intervals simultaneous over all 30 comparisons (Bonferroni or max-T) found 0.9%
    assert sim.rate(rule, shape, rule.effect, 100, seed=6, null=False).positive >= 0.08


@pytest.mark.parametrize("seen, control", [(32, 16), (16, 16), (32, 8)])
def test_the_memorisation_rule_flags_at_most_seven_and_a_half_percent_of_null_runs(seen, control):
    # the old rule (percentile bootstrap CIs combined at z) flagged 13 % at 16 / 16
    shape = sim.structure(mlm=1, clm=1, maskings=("random:ratio=0.5",), seen=seen, control=control)
    rule = _rule(shape, "memorisation")
    found = sim.rate(rule, shape, rule.null, RUNS, seed=seen + control, null=True)
    assert found.positive <= 0.075, found
    assert sim.rate(rule, shape, rule.effect, 100, seed=1, null=False).positive >= 0.4  # and it still finds recall


def test_every_rule_of_the_pan_demo_holds_its_nominal_rate_and_finds_its_effect():
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve

    shape = sim.of_plan(build_plan(resolve("pan")), label="pan")
    assert (shape.kinds("mlm"), shape.kinds("clm"), shape.documents) == (4, 1, 16)
    rates = sim.calibrate(shape, runs=100, seed=3)
    assert {r.rule for r in rates} >= {"claim (1) MLM beats CLM", "claim (2) as the paper states it",
                                       "claim (2) beyond the baselines", "claim (5) useful at high masking"}
    assert not [r for r in rates if r.exceeds]
    power = {r.rule: r.positive for r in rates if r.nominal is None}
    assert power["claim (1) MLM beats CLM"] >= 0.8 and power["claim (2) beyond the baselines"] >= 0.8


def test_calibrate_command_prints_every_rule_and_exits_zero():
    result = CliRunner().invoke(cli, ["calibrate", "--preset", "pan", "--runs", "40"])
    assert result.exit_code == 0, result.output
    for said in ("claim (1) MLM beats CLM", "null", "MLM +3", "power", "2.5%"):
        assert said in result.output


def test_calibrate_command_fails_when_a_rule_says_holds_too_often(monkeypatch):
    from mlmh import stats

    monkeypatch.setattr(stats, "critical", lambda df, confidence=0.95, family=1: 0.5)  # intervals far too narrow
    result = CliRunner().invoke(cli, ["calibrate", "--preset", "pan", "--runs", "40"])
    assert result.exit_code == 1 and "EXCEEDED" in result.output and "above its nominal" in result.output


def test_calibrate_needs_one_structure():
    result = CliRunner().invoke(cli, ["calibrate"])
    assert result.exit_code == 2 and "--preset NAME or --run RUN_DIR" in result.output
