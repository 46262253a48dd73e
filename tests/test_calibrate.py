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
    rules = {rule.name: rule for rule in sim.rules_for(shape)}
    assert set(rules) >= {"claim (1) MLM beats CLM", "claim (2) as the paper states it",
                          "claim (2) beyond the baselines", "claim (5) useful at high masking",
                          "claim (4) no strong correlation", "Li (b) stutter falls with mask-predict steps"}
    # claim (4) and Li et al.'s claims have their own simulations below; the paper's claims are simulated here
    rates = [rate for i, name in enumerate(("claim (1) MLM beats CLM", "claim (2) as the paper states it",
                                             "claim (2) beyond the baselines", "claim (5) useful at high masking"))
             for rate in (sim.rate(rules[name], shape, rules[name].null, 100, 3 + 2 * i, null=True),
                          sim.rate(rules[name], shape, rules[name].effect, 100, 4 + 2 * i, null=False))]
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


def _preset(name: str) -> sim.Structure:
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve

    return sim.of_plan(build_plan(resolve(name)), label=name)


def test_claim_four_calls_a_strong_correlation_weak_at_most_its_nominal_rate():
    # "no strong correlation" holds when Spearman's CI lies inside (-0.4, 0.4): a rho of 0.4 is its least favourable
    # null; on the pan demo's 42 conditions a rho of 0 is found weak in about half the runs
    shape = _preset("pan")
    rule = _rule(shape, "paper-4")
    null = sim.rate(rule, shape, rule.null, 100, seed=41, null=True)
    assert null.positive <= 0.05 and not null.exceeds, null
    assert sim.rate(rule, shape, rule.effect, 100, seed=42, null=False).positive >= 0.25


@pytest.mark.parametrize("claim, power", [("li-a@0.5", 0.5), ("li-a@0.8", 0.6), ("li-b:gibbs", 0.9),
                                          ("li-b:mask-predict", 0.9), ("li-c", 0.8)])
def test_li_et_al_claims_hold_their_rate_under_a_null_and_find_their_effect(claim, power):
    # the percentile bootstrap they had said "holds" in 5.5% of null runs at 16 documents; t over the pooled rates'
    # linearisation: 1.8-3.0% in 1,000 runs, power 70% (a@0.5), 81% (a@0.8), 100% (b), 96% (c) in 200
    shape = _preset("gmlm")
    rule = _rule(shape, claim)
    null = sim.rate(rule, shape, rule.null, 100, seed=43, null=True)
    assert null.positive <= 0.05 and not null.exceeds, null
    assert sim.rate(rule, shape, rule.effect, 100, seed=44, null=False).positive >= power


def test_li_et_al_claims_are_simulated_where_their_rule_tests_the_arms():
    assert {r.claim for r in sim.rules_for(_preset("gmlm")) if r.claim.startswith("li-")} == {
        "li-a@0.5", "li-a@0.8", "li-b:gibbs", "li-b:mask-predict", "li-c"}
    assert {r.claim for r in sim.rules_for(_preset("pan")) if r.claim.startswith("li-")} == {"li-b:mask-predict"}
    assert not [r for r in sim.rules_for(_preset("paper")) if r.claim.startswith("li-")]


@pytest.mark.parametrize("measure", ["validation_loss", "bleu"])
def test_the_crossover_is_stated_at_most_its_nominal_rate_where_there_is_none(measure):
    # the point estimates' crossover, which the finding used to state, appears in about half of these null sweeps
    shape = _preset("crossover")
    assert shape.blocks == sim.VALIDATION_BLOCKS and shape.documents == 24
    rule = _rule(shape, f"crossover:{measure}")
    null = sim.rate(rule, shape, rule.null, 100, seed=45, null=True)
    assert null.positive <= 0.05 and not null.exceeds, null
    assert sim.rate(rule, shape, rule.effect, 100, seed=46, null=False).positive >= 0.8


def test_calibrate_command_covers_a_sweep():
    result = CliRunner().invoke(cli, ["calibrate", "--preset", "crossover", "--runs", "20"])
    assert result.exit_code == 0, result.output
    assert result.output.count("crossover epoch") >= 4 and "a sweep paired over 32 validation blocks" in " ".join(
        result.output.split())  # both measures, under the null and the effect


def test_a_runs_null_rates_are_simulated_once_per_structure_and_code(tmp_path, monkeypatch):
    # on the paper preset's 30 conditions the simulations took about 120 CPU-s, most of a warm rerun: the run cache
    # keeps each rate under the run's structure and the identity of the rules' code
    import json
    import types
    from pathlib import Path

    from mlmh import implementation
    from mlmh.storage.cache import SampleCache
    from mlmh.types import HOLDS, RunResults

    results = RunResults.from_dict(json.loads((Path(__file__).parent / "fixtures" / "results_fixture_run.json").read_text(encoding="utf-8")))
    simulated = []
    real_rate = sim.rate
    monkeypatch.setattr(sim, "rate", lambda *a, **k: simulated.append(a[0].claim) or real_rate(*a, **k))

    def annotate(cache):
        sim._null_rate.cache_clear()  # another process: only the run cache remembers
        finding = types.SimpleNamespace(claim="paper-1:bleu", verdict=HOLDS, extra={})
        sim.annotate_null_rates(results, [finding], runs=20, seed=5, cache=cache)
        return finding.extra["false_holds"]

    cache = SampleCache(tmp_path / "samples.sqlite")
    first = annotate(cache)
    assert simulated == ["paper-1:quality"] and first["runs"] == 20
    assert annotate(cache) == first and simulated == ["paper-1:quality"]  # read back, not simulated again
    code = implementation.modules_id
    monkeypatch.setattr(implementation, "modules_id", lambda names: code(names) + "-changed")
    assert annotate(cache) == first and len(simulated) == 2  # changed rules simulate again
    assert annotate(None) == first and len(simulated) == 3  # without a cache, every process simulates
