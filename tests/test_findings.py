"""The paper's claims as findings (mlmh.findings.paper_claims, mlmh.findings.decide): verdicts on constructed runs, and each
caveat (a model on the unigram plateau, no better than a baseline, memorising) turning a verdict into
"not comparable"; the plateau rule against the best constant predictor; the answer report.md opens with."""

from __future__ import annotations

import numpy as np
import pytest

from mlmh.findings.answer import answer_lines
from mlmh.findings.comparisons import judged, kind_verdict
from mlmh.findings.decide import run_findings
from mlmh.findings.paper_claims import baseline_arm
from mlmh.report.markdown import render_markdown
from mlmh.training.stopping import TargetTally, Validation, beats_constant
from mlmh.types import (FAILS, HOLDS, INCONCLUSIVE, NOT_COMPARABLE, NOT_TESTED, ConditionResult, ConfigRecord, Correlation,
                        DatasetInfo, DocumentSet, Finding,
                        ModelRecord, RoleQuality, RunResults, Score)

DOCS = [f"t{i}" for i in range(24)]
LEARNED = {"heldout_accuracy": 0.30, "best_constant_accuracy": 0.05, "beats_constant": True}
PLATEAU = {"heldout_accuracy": 0.05, "best_constant_accuracy": 0.05, "beats_constant": False}


def row(kind, masking, value, *, sampler=None, filler=5.0, deletion=4.0, ratio=None, gap_significant=False,
        metric="bleu", downstream=None):
    cid = f"{kind}|{masking}|{sampler or kind}"
    unseen = RoleQuality(documents=len(DOCS), scored=len(DOCS), metrics={metric: Score(value, value - 1, value + 1)},
                         filler={metric: Score(filler)}, deletion={metric: Score(deletion)})
    gap = {metric: Score(3.0, 2.0, 4.0) if gap_significant else Score(0.5, -0.5, 1.5)}
    if ratio is None and masking.startswith("random:ratio="):
        ratio = float(masking.split("=")[1])
    return ConditionResult(id=cid, model=f"trained-{kind}", model_kind=kind, masking=masking,
                           sampler=sampler or {"mlm": "mask-predict", "clm": "clm-infill"}[kind], seed=0,
                           masking_ratio=ratio, unseen=unseen, metrics=unseen.metrics, gap=gap, gap_above_filler=gap,
                           downstream=downstream or {})


def results_of(rows, cards=None, correlations=None):
    cards = cards or {}
    models = {f"trained-{k}:full": ModelRecord(identity=k, model_kind=k, label=f"trained-{k}",
                                               training=cards.get(k, LEARNED)) for k in ("mlm", "clm")}
    # documents without groups: the unseen ones are drawn as control documents would be, so memorisation is judged
    return RunResults(run_id="r", config=ConfigRecord(preset="test"), conditions=rows, models=models,
                      dataset=DatasetInfo(grouped=False),
                      correlations=[Correlation.from_dict(c) for c in correlations or []], headline="unseen",
                      filler_word="the")


def per_doc(rows, offsets, noise=0.5, seed=0):
    """Per-document values: each condition's value plus ``offsets[id]`` plus seeded noise."""
    rng = np.random.default_rng(seed)
    out = {}
    for r in rows:
        base = r.unseen.metrics["bleu"].value
        out[r.id] = {"bleu": {d: float(base + offsets.get(r.id, 0.0) + rng.normal(0, noise)) for d in DOCS}}
    return out


def findings_of(rows, cards=None, correlations=None, tasks=None, noise=0.5):
    results = results_of(rows, cards, correlations)
    found = run_findings(results, per_doc(rows, {}, noise), tasks or {}, [], seed=0)
    results.findings = found
    return results, {f.claim: f for f in found}


def kinds(mlm_value, clm_value, maskings=("random:ratio=0.15", "random:ratio=0.5")):
    return [row(k, m, v) for m in maskings for k, v in (("mlm", mlm_value), ("clm", clm_value))]


# -- claim 1 --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mlm, clm, expected", [(30.0, 20.0, HOLDS), (20.0, 30.0, FAILS), (25.0, 25.0, INCONCLUSIVE)])
def test_mlm_beats_clm_reads_the_paired_ci(mlm, clm, expected):
    _, found = findings_of(kinds(mlm, clm), noise=3.0)
    finding = found["paper-1:bleu"]
    assert finding.verdict == expected
    assert finding.source == "arXiv 2405.12630" and len(finding.parts) == 1 and finding.documents == len(DOCS)
    assert len(finding.conditions) == 4 and finding.extra["family"] == 1  # both maskings; one MLM x CLM pair, one metric
    assert finding.ci_low is not None and finding.ci_low <= finding.statistic <= finding.ci_high
    assert expected in finding.statement or (expected == INCONCLUSIVE and "inconclusive" in finding.statement)


def test_lower_is_better_metrics_are_turned_once():
    rows = kinds(30.0, 20.0)
    for r in rows:
        r.unseen.metrics["bleu"].higher_is_better = False  # pretend bleu were an error rate: the CLM now leads
        r.unseen.filler["bleu"], r.unseen.deletion["bleu"] = Score(60.0), Score(70.0)  # worse than both models
    _, found = findings_of(rows)
    assert found["paper-1:bleu"].verdict == FAILS and "lower is better" in found["paper-1:bleu"].statement


# -- caveats --------------------------------------------------------------------------------------------
def test_an_mlm_on_the_plateau_never_wins():
    results, found = findings_of(kinds(30.0, 20.0), cards={"mlm": PLATEAU})
    finding = found["paper-1:bleu"]
    assert finding.verdict == NOT_COMPARABLE
    assert "never beat the best constant predictor" in finding.statement and finding.caveats
    found_kind = kind_verdict(results, "bleu", "mlm", "clm", "unseen")
    assert found_kind is not None and found_kind.caveats  # the per-metric count carries it too
    assert "not comparable" in found_kind.verdict and "unigram plateau" in found_kind.detail
    report = render_markdown(judged(results), [])
    answer = report[report.index("## Answer"):report.index("## Findings")]
    assert "**not comparable**" in answer and "MLM beats CLM" not in answer.replace("(1) MLM beats CLM on", "")


def test_a_condition_no_better_than_deletion_is_left_out():
    rows = kinds(30.0, 20.0)
    rows[0].unseen.deletion["bleu"] = Score(31.0)  # the MLM at 0.15 scores below deleting the masked words
    _, found = findings_of(rows)
    finding = found["paper-1:bleu"]
    assert finding.verdict == HOLDS and len(finding.conditions) == 2  # decided on the other masking alone
    assert any("no better than deletion" in c for c in finding.caveats) and "Left out:" in finding.statement
    for r in rows:
        if r.model_kind == "mlm":
            r.unseen.filler["bleu"] = Score(40.0)  # now no MLM beats the filler anywhere
    _, found = findings_of(rows)
    assert found["paper-1:bleu"].verdict == NOT_COMPARABLE and "no better than the filler" in found["paper-1:bleu"].statement


def test_a_memorising_model_is_left_out():
    rows = [row("mlm", "random:ratio=0.5", 30.0, gap_significant=True), row("clm", "random:ratio=0.5", 20.0)]
    _, found = findings_of(rows)
    assert found["paper-1:bleu"].verdict == NOT_COMPARABLE and "memorised" in found["paper-1:bleu"].statement


def test_a_card_without_the_new_fact_is_judged_by_the_same_rule():
    old = {"heldout_accuracy": 0.052, "unigram_baseline_accuracy": 0.052}  # written before beats_constant existed
    _, found = findings_of(kinds(30.0, 20.0), cards={"mlm": old})
    assert found["paper-1:bleu"].verdict == NOT_COMPARABLE


# -- claims 2 to 5 --------------------------------------------------------------------------------------
def test_lower_ratios_better_is_a_paired_slope():
    rows = [row(k, f"random:ratio={r}", 40.0 - 40 * r) for r in (0.15, 0.3, 0.5) for k in ("mlm", "clm")]
    _, found = findings_of(rows, noise=1.0)
    finding = found["paper-2:raw"]
    assert finding.verdict == HOLDS and finding.statistic == pytest.approx(-4.0, abs=0.5) and len(finding.parts) == 2
    assert not finding.extra["above_baseline"] and "raw quality" in finding.statement
    assert found["paper-2"].verdict == NOT_TESTED and "no per-document scores of the filler" in found["paper-2"].statement


def _with_baselines(rows, filler_of, noise=0.5):
    """``findings_of`` with per-document filler and deletion scores of each masking (deletion 1 below the filler)."""
    results = results_of(rows)
    docs = per_doc(rows, {}, noise)
    rng = np.random.default_rng(7)
    for r in rows:
        for name, value in (("filler", filler_of(r.masking_ratio)), ("deletion", filler_of(r.masking_ratio) - 1)):
            getattr(r.unseen, name)["bleu"] = Score(value)
            docs[baseline_arm(name, r.masking, 0)] = {"bleu": {d: float(value + rng.normal(0, noise)) for d in DOCS}}
    return {f.claim: f for f in run_findings(results, docs, {}, [], seed=0)}


def test_lower_ratios_better_is_measured_above_the_trivial_baselines():
    rows = [row(k, f"random:ratio={r}", 40.0 - 40 * r) for r in (0.15, 0.3, 0.5) for k in ("mlm", "clm")]
    parallel = _with_baselines(rows, lambda r: 30.0 - 40 * r)["paper-2"]  # the filler falls as fast as the models
    assert parallel.extra["above_baseline"] and parallel.verdict != HOLDS
    assert parallel.statistic == pytest.approx(0.0, abs=0.3) and "above the stronger of the filler" in parallel.statement
    assert all("baseline|" not in c for c in parallel.conditions)
    flat = _with_baselines(rows, lambda r: 10.0)["paper-2"]  # a flat baseline: the models' own fall is theirs
    assert flat.verdict == HOLDS and flat.statistic == pytest.approx(-4.0, abs=0.5)


@pytest.mark.parametrize("mlm_punct, expected", [(10.0, HOLDS), (40.0, FAILS)])
def test_punctuation_best_for_clm_worst_for_mlm_needs_both_parts(mlm_punct, expected):
    rows = [row("clm", "punctuation", 40.0), row("clm", "stopwords", 30.0), row("clm", "random:ratio=0.3", 25.0),
            row("mlm", "punctuation", mlm_punct), row("mlm", "stopwords", 30.0), row("mlm", "random:ratio=0.3", 25.0)]
    _, found = findings_of(rows)
    finding = found["paper-3"]
    assert finding.verdict == expected and [p["verdict"] for p in finding.parts][0] == HOLDS


@pytest.mark.parametrize("ci, expected", [((-0.2, 0.3), HOLDS), ((0.6, 0.9), FAILS), ((-0.2, 0.5), INCONCLUSIVE),
                                          ((-0.2, 0.8), NOT_COMPARABLE)])  # a CI as wide as the band can decide nothing
def test_no_strong_correlation_reads_the_ci_against_strong(ci, expected):
    correlations = [{"metric": "bleu", "task": "authorship-verification", "score": "overall", "n": 12,
                     "spearman": sum(ci) / 2, "spearman_ci": list(ci)}]
    learns = {"real": {"authorship-verification": {"brier": [0.9] * 30}},
              "chance": {"authorship-verification": {"brier": [0.75] * 30}}}
    _, found = findings_of(kinds(30.0, 20.0), correlations=correlations, tasks=learns)
    assert found["paper-4"].verdict == expected


def test_no_correlation_is_judged_with_a_downstream_model_that_does_not_learn():
    correlations = [{"metric": "bleu", "task": "text-classification", "score": "micro_f1", "n": 12,
                     "spearman": -0.9, "spearman_ci": [-0.97, -0.7]}]
    rng = np.random.default_rng(3)
    below = {"real": {"text-classification": {"samples_f1": list(rng.uniform(0.0, 0.2, 30))}},
             "chance": {"text-classification": {"samples_f1": [0.167] * 30}}}
    _, found = findings_of(kinds(30.0, 20.0), correlations=correlations, tasks=below)
    finding = found["paper-4"]
    assert finding.verdict == NOT_COMPARABLE and "cannot tell useful synthetic text from useless" in finding.statement
    assert "text-classification model trained on the real documents scores" in finding.statement
    _, found = findings_of(kinds(30.0, 20.0), correlations=correlations)  # no per-item scores: nothing to tell by
    assert found["paper-4"].verdict == NOT_COMPARABLE and "no per-item scores" in found["paper-4"].statement


def test_useful_at_high_masking_against_chance_and_real_data():
    rows = kinds(30.0, 20.0, maskings=("random:ratio=0.8",))
    for r in rows:
        r.downstream = {"av": {"brier": 0.8}}
    rng = np.random.default_rng(1)
    real = list(0.9 + rng.normal(0, 0.02, 40))
    tasks = {"real": {"av": {"brier": real}}, "chance": {"av": {"brier": [0.75] * 40}},
             **{r.id: {"av": {"brier": list(0.82 + rng.normal(0, 0.02, 40))}} for r in rows}}
    stopwords = row("mlm", "stopwords", 30.0, ratio=1.0, downstream={"av": {"brier": 0.8}})  # ratio: share of stopwords
    tasks[stopwords.id] = {"av": {"brier": [0.75] * 40}}
    _, found = findings_of(rows + [stopwords], tasks=tasks)
    finding = found["paper-5"]
    assert finding.extra["ratio"] == 0.8 and stopwords.id not in finding.conditions  # random masking's ratio only
    assert finding.verdict == HOLDS and finding.statistic == pytest.approx(0.07, abs=0.02)
    assert finding.parts[0]["statistic"] == pytest.approx(0.07 / 0.15, abs=0.1)  # share of the real data's gain
    _, found = findings_of(rows, tasks=tasks, cards={"mlm": PLATEAU, "clm": PLATEAU})
    assert found["paper-5"].verdict == NOT_COMPARABLE
    tasks["real"] = {"av": {"brier": [0.7] * 40}}  # the real documents themselves below no training data
    _, found = findings_of(rows, tasks=tasks)
    assert found["paper-5"].verdict == NOT_COMPARABLE and "does not" not in found["paper-5"].text
    assert "av model trained on the real documents scores -0.050" in found["paper-5"].statement
    tasks["real"] = {"av": list(0.76 + rng.normal(0, 0.2, 40))}  # a gain whose CI spans 0 judges nothing either
    tasks["real"] = {"av": {"brier": tasks["real"]["av"]}}
    _, found = findings_of(rows, tasks=tasks)
    assert found["paper-5"].verdict == NOT_COMPARABLE and found["paper-5"].parts == []


def test_a_run_without_their_conditions_says_why_each_claim_is_not_tested():
    rows = [row("mlm", "stopwords", 30.0)]
    results, found = findings_of(rows)
    assert {f.verdict for f in found.values()} == {NOT_TESTED}
    assert all(f.extra["reason"] for f in found.values())
    lines = answer_lines(results.findings)
    assert len(lines) == 1 and lines[0].startswith("Not tested in this run: (1) MLM beats CLM on bleu (the run has no")


def test_findings_round_trip_through_results_json():
    results, _ = findings_of(kinds(30.0, 20.0))
    again = RunResults.from_dict(results.to_dict())
    assert again.findings == results.findings and isinstance(again.findings[0], Finding)
    old = {"claim": "a@0.5", "statement": "s", "verdict": "holds", "measure": "x"}  # a schema-2 finding
    assert Finding.from_dict(old).extra == {"measure": "x"}


# -- the plateau, judged right -------------------------------------------------------------------------
def _tally(predict_from_gold):
    import torch

    rng = np.random.default_rng(0)
    gold = torch.tensor(rng.choice([1, 2, 3, 4, 5, 6], size=4000, p=[0.3, 0.2, 0.2, 0.1, 0.1, 0.1]))
    tally = TargetTally(train_commonest=2)  # the train split's commonest token is not the held-out one
    tally.add(predict_from_gold(gold), gold)
    return tally


def test_a_model_that_always_predicts_another_frequent_token_stays_on_the_plateau():
    import torch

    tally = _tally(lambda gold: torch.full_like(gold, 2))  # always token 2: exactly the train-commonest baseline
    facts = tally.facts()
    assert facts["heldout_accuracy"] == pytest.approx(facts["unigram_baseline_accuracy"])
    assert facts["best_constant_accuracy"] == pytest.approx(0.3, abs=0.02) and facts["beats_constant"] is False
    assert not tally.validation(1.0).off_plateau
    tally = _tally(lambda gold: torch.full_like(gold, 1))  # always the best constant itself
    assert not tally.validation(1.0).off_plateau and tally.facts()["beats_constant"] is False


def test_a_model_that_learned_context_is_off_the_plateau():
    import torch

    def guess(gold):
        right = torch.from_numpy(np.random.default_rng(3).random(len(gold)) < 0.5)
        return torch.where(right, gold, torch.full_like(gold, 1))  # half right, otherwise the commonest token

    tally = _tally(guess)
    assert tally.facts()["beats_constant"] is True and tally.validation(1.0).off_plateau


def test_the_paired_rule_needs_more_than_noise():
    assert not beats_constant(0.31, 0.30, 1000, model_only=8, constant_only=2)  # 6 > 2 * sqrt(10) fails
    assert beats_constant(0.31, 0.30, 1000, model_only=30, constant_only=5)
    assert not Validation(1.0, 0.33, 0.30, 1000, 0, 0).off_plateau


# -- what the answer rests on --------------------------------------------------------------------------
def test_the_answer_names_the_models_and_documents_it_rests_on():
    card = {**LEARNED, "steps": 500, "steps_run": 212, "epochs": 1.5, "tokens_seen": 54_000,
            "supervised_targets": 21_000, "budget": "targets", "stopped_early": True}
    results, found = findings_of(kinds(30.0, 20.0), cards={"mlm": card})
    results.documents = {"unseen": DocumentSet(split="test", documents=16, groups=1, cut=13),
                         "seen": DocumentSet(split="train", documents=16, groups=4)}
    results.dataset = DatasetInfo(validation_documents=31, validation_groups=1)
    grounds = found["paper-1:bleu"].extra["rests_on"]
    assert grounds[0] == ("trained-mlm: held-out accuracy 0.300 against 0.050 for the best constant (6.00x; beats it); "
                          "trained 212 of 500 steps, 1.5 epochs, 54,000 tokens, 21,000 targets, budget: targets, "
                          "stopped early")
    lines = answer_lines(results.findings, markdown=False, results=results)
    assert sum(line.startswith("Rests on: mlm (scratch)") for line in lines) == 1  # said once, by kind and start
    assert ("Measured on unseen: 16 documents from 1 group(s), 13 cut to the model window; seen: 16 documents from "
            "4 group(s); validation: 31 documents from 1 group(s).") in lines
    assert not any(line.startswith("Next step") for line in lines)  # every claim was compared


def test_a_not_comparable_answer_names_the_next_command():
    results, found = findings_of(kinds(30.0, 20.0), cards={"mlm": PLATEAU})
    results.config = ConfigRecord(preset="pan", dataset="text", data="reviews.jsonl")
    found = run_findings(results, per_doc(results.conditions, {}), {}, [], seed=0)
    step = next(f.extra["next_step"] for f in found if f.extra.get("next_step"))
    assert step["command"] == "mlmh eval --preset paper --dataset text --data reviews.jsonl"
    assert "from scratch stayed on the unigram plateau on this corpus" in step["why"]  # what happened, no more
    results.findings = found
    assert answer_lines(found, results=results)[-1].startswith(
        "Next step: `mlmh eval --preset paper --dataset text --data reviews.jsonl`: models trained from scratch")
    results.config = ConfigRecord(preset="paper")  # already the pretrained start: no preset to send the reader to
    found = run_findings(results, per_doc(results.conditions, {}), {}, [], seed=0)
    step = next(f.extra["next_step"] for f in found if f.extra.get("next_step"))
    assert step["command"] == "" and "longer training" in step["why"]


def test_a_pretrained_start_that_memorised_is_sent_to_fewer_passes():
    rows = kinds(30.0, 20.0)
    for r in rows:
        r.gap["bleu"] = Score(6.0, 4.0, 8.0, extra={"significant": True})  # every condition: seen above unseen
    cards = {"mlm": {**LEARNED, "init": "minilm"}, "clm": {**LEARNED, "init": "minilm"}}
    results, found = findings_of(rows, cards=cards)
    results.config = ConfigRecord(preset="paper")
    found = run_findings(results, per_doc(results.conditions, {}), {}, [], seed=0)
    step = next(f.extra["next_step"] for f in found if f.extra.get("next_step"))
    assert step["command"] == "" and "max_passes" in step["why"]

def test_a_model_on_the_plateau_is_not_called_memorising():
    rows = kinds(30.0, 20.0)
    for r in rows:
        r.gap["bleu"] = Score(6.0, 4.0, 8.0, extra={"significant": True})
    results, found = findings_of(rows, cards={"mlm": PLATEAU})
    from mlmh.findings.comparisons import memorisation
    from mlmh.findings.verdicts import memorised

    mlm = next(r for r in rows if r.model_kind == "mlm")
    clm = next(r for r in rows if r.model_kind == "clm")
    assert memorised(results, mlm, "bleu") is None and "Holm-adjusted" in memorised(results, clm, "bleu")
    lines = [m.statement for m in memorisation(results)]
    assert any("trained-mlm never beat the best constant" in line and "not as memorization" in line for line in lines)
    assert any("trained-clm scores bleu above the filler higher on seen" in line for line in lines)
    assert [m.verdict for m in memorisation(results)] == ["on the unigram plateau", "memorised"]
    assert "memorised" not in " ".join(found["paper-1:bleu"].caveats[:1])  # the plateau is the MLM's caveat
    unseen_better = Score(-6.0, -8.0, -4.0, extra={"significant": True})  # better on unseen: not recall
    clm.gap["bleu"] = unseen_better
    assert memorised(results, clm, "bleu") is None


def test_report_md_says_each_models_card_once_however_many_claims_rest_on_it():
    """A paper run's claims rest on the same models with each metric's margins: the card once, then the short name."""
    from mlmh.findings.grounds import model_line
    from mlmh.results import model_record_of

    results, found = findings_of(kinds(30.0, 20.0), cards={"mlm": LEARNED})
    card = model_line("trained-mlm", model_record_of(results, "trained-mlm"))
    tested = [f for f in results.findings if f.tested][:2]
    assert len(tested) == 2
    for finding, metric in zip(tested, ("bleu", "rougeL")):
        finding.extra["rests_on"] = [f"{card}; unseen {metric} per document over the filler +1 to +2 (every CI clear of 0)"]
    lines = answer_lines(results.findings, markdown=True, results=results)
    rests = [line for line in lines if line.startswith("Rests on: ")]
    assert sum(line.count(card) for line in lines) == 1
    assert rests[0].startswith(f"Rests on: {card}; unseen bleu per document")
    assert rests[1] == "Rests on: mlm (scratch): unseen rougeL per document over the filler +1 to +2 (every CI clear of 0)."


def test_the_plain_answer_fits_a_screen_one_line_per_claim_and_each_model_once():
    from mlmh.findings.answer import LINE, precise

    rows = kinds(30.0, 20.0) + [row("mlm", m, 28.0, sampler="gibbs") for m in ("random:ratio=0.15", "random:ratio=0.5")]
    results, found = findings_of(rows, noise=3.0)
    lines = answer_lines(results.findings, markdown=False, results=results)
    assert all(len(line) <= LINE for line in lines) and len(lines) <= 30
    assert sum(line.startswith("Rests on: mlm (scratch)") for line in lines) == 1  # once, however many claims rest on it
    claim = next(line for line in lines if line.startswith("HOLDS: (1) MLM beats CLM on bleu"))
    assert "documents" in claim and "[" in claim
    assert any(line.startswith("Not tested: ") for line in lines)
    report = render_markdown(judged(results), [])
    assert found["paper-1:bleu"].statement in report  # report.md keeps the whole sentence
    assert precise(-0.004, -0.012, 0.004) == "-0.004 [-0.012, +0.004]"  # never "[-0.01, +0.00]"
    assert precise(1.18, -0.03, 2.34) == "+1.18 [-0.03, +2.34]"


def test_a_downstream_model_that_predicts_one_label_passes_no_gate():
    # a classifier that always answers the majority tags: above a random guesser, equal to the constant predictor,
    # and so are all its synthetic training sets; the claims it would judge are not comparable, and say why
    rows = kinds(30.0, 20.0, maskings=("random:ratio=0.5",))
    rng = np.random.default_rng(5)
    majority = list(rng.choice([0.0, 1.0], size=60, p=[0.3, 0.7]))
    for r in rows:
        r.downstream = {"text-classification": {"samples_f1": float(np.mean(majority))}}
    tasks = {"real": {"text-classification": {"samples_f1": majority}},
             "chance": {"text-classification": {"samples_f1": [0.4] * 60}},
             "constant": {"text-classification": {"samples_f1": majority}},
             **{r.id: {"text-classification": {"samples_f1": majority}} for r in rows}}
    correlations = [{"metric": "bleu", "task": "text-classification", "score": "samples_f1", "n": 42,
                     "spearman": 0.1, "spearman_ci": [-0.2, 0.3]}]
    _, found = findings_of(rows, tasks=tasks, correlations=correlations)
    for claim in ("paper-4", "paper-5"):
        assert found[claim].verdict == NOT_COMPARABLE, found[claim].statement
        assert "predicts one label whatever it is trained on" in found[claim].statement
    tasks["real"] = {"text-classification": {"samples_f1": [min(1.0, v + 0.2) for v in majority]}}  # it learns
    _, found = findings_of(rows, tasks=tasks, correlations=correlations)
    assert found["paper-5"].verdict != NOT_COMPARABLE and found["paper-4"].verdict == HOLDS


def test_no_correlation_needs_enough_conditions_and_scores_that_vary():
    learns = {"real": {"t": {"f1": [0.9] * 20}}, "chance": {"t": {"f1": [0.5] * 20}}}
    wide = [{"metric": "bleu", "task": "t", "score": "f1", "n": 4, "spearman": 0.2, "spearman_ci": [-0.8, 0.95]}]
    _, found = findings_of(kinds(30.0, 20.0), correlations=wide, tasks=learns)
    assert found["paper-4"].verdict == NOT_COMPARABLE and "too few conditions" in found["paper-4"].statement
    flat = [{"metric": "bleu", "task": "t", "score": "f1", "n": 42, "spearman": None}]
    _, found = findings_of(kinds(30.0, 20.0), correlations=flat, tasks=learns)
    assert found["paper-4"].verdict == NOT_TESTED and "do not vary across the 42 conditions" in found["paper-4"].statement


def test_report_md_names_documents_by_the_corpus_own_ids():
    results, found = findings_of(kinds(30.0, 20.0))
    results.documents = {"unseen": DocumentSet(split="test", documents=3, groups=2, ids=["rev-17", "a|b`c\nd", "x"]),
                         "seen": DocumentSet(split="train", documents=3, groups=1, ids=["rev-2", "rev-5", "rev-9"])}
    markdown = answer_lines(results.findings, results=results)
    measured = next(line for line in markdown if line.startswith("Measured on"))
    assert "unseen: 3 documents from 2 group(s) (e.g. `rev-17`, `a\\|b'c\\nd`)" in measured  # one line, one cell
    assert "(e.g. `rev-2`, `rev-5`)" in measured and "rev-9" not in measured
    plain = answer_lines(results.findings, markdown=False, results=results)
    assert not any("rev-17" in line for line in plain)  # the screen keeps its one line per set
