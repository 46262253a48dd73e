"""Two rules the papers' claims are gated by, on constructed results: memorisation is judged on the seen - control gap
(seen - unseen without control documents) of the quality above the filler (a gap the filler shows too is the texts'), and a result that rewards output
shorter than the reference (ROUGE, BERTScore F1) holds a condition to deletion on one that does not (BLEU)."""

from __future__ import annotations

import numpy as np

from mlmh.findings.comparisons import memorisation
from mlmh.findings.decide import run_findings
from mlmh.findings.memorization import above, gap
from mlmh.findings.verdicts import BASELINE, GROUP_GAP, caveats_of, deletion_bar, memorisation_check, memorisation_gap, memorised
from mlmh.types import (HOLDS, NOT_COMPARABLE, ConditionResult, ConfigRecord, DatasetInfo, ModelRecord, RoleQuality,
                        RunResults, Score)

LEARNED = {"heldout_accuracy": 0.30, "best_constant_accuracy": 0.05, "beats_constant": True}
DOCS = [f"d{i}" for i in range(30)]


def per_document(mean: float, spread: float, seed: int, metric: str = "bleu") -> dict[str, dict[str, float]]:
    rng = np.random.default_rng(seed)
    return {d: {metric: float(mean + rng.normal(0, spread))} for d in DOCS}


def shifted(values: dict[str, dict[str, float]], by: float, noise: float, seed: int) -> dict[str, dict[str, float]]:
    """``values`` plus ``by`` plus a little seeded noise per document: a condition that moves with the texts."""
    rng = np.random.default_rng(seed)
    return {d: {m: v + by + float(rng.normal(0, noise)) for m, v in scored.items()} for d, scored in values.items()}


def test_above_is_the_mean_paired_difference_with_its_ci():
    filler = per_document(40.0, 10.0, seed=1)
    model = shifted(filler, 5.0, 0.5, seed=2)
    found = above(model, filler, {"bleu": True})["bleu"]
    assert abs(found.value - 5.0) < 0.5 and found.ci_low < found.value < found.ci_high
    assert found.ci_high - found.ci_low < 1.0  # paired: the documents' own spread (10) cancels
    assert found.extra["documents"] == len(DOCS)
    model["d0"]["bleu"] = float("nan")
    del filler["d1"]
    assert above(model, filler, {"bleu": True})["bleu"].extra["documents"] == len(DOCS) - 2


def test_a_gap_the_filler_shows_too_is_not_memorisation():
    # the seen documents are easier texts: the filler scores 8 points more on them, and so does the model
    filler_seen, filler_unseen = per_document(48.0, 3.0, seed=3), per_document(40.0, 3.0, seed=4)
    model_seen, model_unseen = shifted(filler_seen, 10.0, 1.0, seed=5), shifted(filler_unseen, 10.0, 1.0, seed=6)
    higher = {"bleu": True}
    raw = gap(Score(*_mean_ci(model_seen)), Score(*_mean_ci(model_unseen)))
    beyond_filler = gap(above(model_seen, filler_seen, higher)["bleu"], above(model_unseen, filler_unseen, higher)["bleu"])
    assert raw is not None and raw.extra["significant"] and raw.value > 5
    assert beyond_filler is not None and not beyond_filler.extra["significant"]
    row = _row(raw, beyond_filler)
    results = _results([row])
    assert memorisation_gap(results, row, "bleu") is beyond_filler and memorised(results, row, "bleu") is None
    assert memorisation(results)[0].verdict == "no gap" and "gap of bleu above the filler" in memorisation(results)[0].statement
    # a model that recites beats its filler by more on the seen documents: flagged, and said so
    recited = gap(above(shifted(filler_seen, 16.0, 1.0, seed=7), filler_seen, higher)["bleu"],
                  above(model_unseen, filler_unseen, higher)["bleu"])
    row.gap_above_filler = {"bleu": recited}
    assert "gap above the filler +5" in memorised(results, row, "bleu")
    # a run that kept no gap above the filler (results written before it) is judged on the raw gap; where it kept
    # one, a metric without it is not tested: no evidence is never "no gap"
    old = _row(raw, None)
    assert memorisation_gap(_results([old]), old, "bleu") is raw and memorised(_results([old]), old, "bleu")
    old.gap_above_filler = {"rougeL": beyond_filler}
    assert memorisation_check(_results([old]), old, "bleu").state == "not tested"


def test_with_control_documents_memorisation_is_judged_against_the_train_authors_texts():
    # the train authors' texts are easier for a model that learned how they write: it beats the filler by 6 more on
    # them, seen or held out, than on a new author's; only a model that recites its train texts beats it by more on
    # those than on the held-out ones
    filler_seen, filler_control, filler_unseen = (per_document(40.0, 3.0, seed=s) for s in (8, 9, 10))
    higher = {"bleu": True}
    learned_style = {role: above(shifted(f, by, 1.0, seed=s), f, higher)["bleu"] for role, f, by, s in
                     (("seen", filler_seen, 16.0, 11), ("control", filler_control, 16.0, 12),
                      ("unseen", filler_unseen, 10.0, 13))}
    against_unseen = gap(learned_style["seen"], learned_style["unseen"])
    against_control = gap(learned_style["seen"], learned_style["control"])
    assert against_unseen is not None and against_unseen.extra["significant"]
    assert against_control is not None and not against_control.extra["significant"]
    row = _row(against_unseen, against_unseen)
    results = _results([row], grouped=True)
    # no control and new authors' texts as the unseen ones: a group gap, reported and never judged
    assert memorised(results, row, "bleu") is None and memorisation_check(results, row, "bleu").state == GROUP_GAP
    assert memorisation(results)[0].verdict == "group gap, not judged" and "style" in memorisation(results)[0].statement
    row.control_gap = {"bleu": against_control}
    row.control = RoleQuality(documents=30, scored=30, metrics={"bleu": Score(1.0)})
    assert memorisation_gap(results, row, "bleu") is against_control and memorised(results, row, "bleu") is None
    assert "no seen - control gap of bleu above the filler" in memorisation(results)[0].statement
    recites = above(shifted(filler_seen, 22.0, 1.0, seed=14), filler_seen, higher)["bleu"]
    row.control_gap = {"bleu": gap(recites, learned_style["control"])}
    said = memorised(results, row, "bleu")
    assert said is not None and "its seen - control bleu gap above the filler +5.9" in said


def test_deletion_bars_rouge_and_bertscore_on_bleu_when_the_run_scored_it():
    block = RoleQuality(documents=3, scored=3, metrics={"bleu": Score(66.0), "rougeL": Score(0.85)},
                        filler={"bleu": Score(64.0), "rougeL": Score(0.83)},
                        deletion={"bleu": Score(65.0), "rougeL": Score(0.92)})
    assert deletion_bar(block, "rougeL") == "bleu" and deletion_bar(block, "bleu") == "bleu"
    assert deletion_bar(block, "bertscore_f1") == "bleu"
    only_rouge = RoleQuality(documents=3, scored=3, metrics={"rougeL": Score(0.85)}, deletion={"rougeL": Score(0.92)})
    assert deletion_bar(only_rouge, "rougeL") == "rougeL"  # nothing else to hold it to: ROUGE-L itself
    row = ConditionResult(id="c", model="trained-mlm", model_kind="mlm", masking="random:ratio=0.15", sampler="s",
                          seed=0, unseen=block)
    results = _results([row])
    assert caveats_of(results, row, "rougeL") == []  # below deletion on ROUGE-L, above it on BLEU
    block.metrics["bleu"] = Score(64.5)  # now below deletion on BLEU too: the ROUGE-L caveat says where
    said = [c for c in caveats_of(results, row, "rougeL") if c.kind == BASELINE]
    assert len(said) == 1 and "no better than deletion on bleu" in said[0].text and "the bar for rougeL" in said[0].text
    block.metrics["rougeL"] = Score(0.80)  # and below the filler on ROUGE-L itself
    assert any("the filler on rougeL" in c.text for c in caveats_of(results, row, "rougeL"))


def test_claim_one_is_decided_on_rouge_where_deletion_wins_it_and_says_so():
    rows, per_doc = [], {}
    rng = np.random.default_rng(0)
    for kind, value in (("mlm", 0.86), ("clm", 0.84)):
        cid = f"{kind}|random:ratio=0.15"
        unseen = RoleQuality(documents=len(DOCS), scored=len(DOCS),
                             metrics={"bleu": Score(67.0), "rougeL": Score(value, value - 0.01, value + 0.01)},
                             filler={"bleu": Score(64.0), "rougeL": Score(0.83)},
                             deletion={"bleu": Score(65.0), "rougeL": Score(0.92)},
                             above_filler={"rougeL": Score(value - 0.83, 0.0, 0.05)},
                             above_deletion={"bleu": Score(2.0, 1.0, 3.0), "rougeL": Score(value - 0.92)})
        rows.append(ConditionResult(id=cid, model=f"trained-{kind}", model_kind=kind, masking="random:ratio=0.15",
                                    sampler="s", seed=0, masking_ratio=0.15, unseen=unseen, metrics=unseen.metrics))
        per_doc[cid] = {"rougeL": {d: value + float(rng.normal(0, 0.005)) for d in DOCS},
                        "bleu": {d: 67.0 + float(rng.normal(0, 1)) for d in DOCS}}
    found = {f.claim: f for f in run_findings(_results(rows), per_doc, {}, [], seed=0)}
    rouge = found["paper-1:rougeL"]
    assert rouge.verdict == HOLDS, rouge.statement
    assert "Deletion scores above 2 of the compared conditions on rougeL" in rouge.statement
    assert "held to deletion on bleu" in rouge.statement
    grounds = rouge.extra["rests_on"]
    assert len(grounds) == 2 and ("unseen rougeL per document over the filler +0.03 (1 of 1 CIs reach 0, e.g. "
                                  "random:ratio=0.15: +0.03 [+0, +0.05]); over deletion, on bleu, +2 (every CI clear of 0)"
                                  in grounds[0]), grounds[0]
    for r in rows:  # below deletion on BLEU as well: no longer comparable
        r.unseen.metrics["bleu"] = Score(64.5)
    found = {f.claim: f for f in run_findings(_results(rows), per_doc, {}, [], seed=0)}
    assert found["paper-1:rougeL"].verdict == NOT_COMPARABLE


def _mean_ci(values: dict[str, dict[str, float]]) -> tuple[float, float, float]:
    from mlmh.stats import mean_ci

    mean, low, high = mean_ci([v["bleu"] for v in values.values()])
    assert mean is not None and low is not None and high is not None
    return mean, low, high


def _row(raw: Score, beyond_filler: Score | None) -> ConditionResult:
    return ConditionResult(id="c", model="trained-clm", model_kind="clm", masking="random:ratio=0.15", sampler="s",
                           seed=0, gap={"bleu": raw}, gap_above_filler={"bleu": beyond_filler} if beyond_filler else {},
                           unseen=RoleQuality(documents=1, scored=1, metrics={"bleu": Score(1.0)}))


def _results(rows: list[ConditionResult], *, grouped: bool = False, filler: str | None = "the") -> RunResults:
    """A run of ``rows``; its documents without groups unless ``grouped`` (then the unseen ones are new authors')."""
    models = {f"trained-{k}": ModelRecord(identity=k, model_kind=k, label=f"trained-{k}", training=LEARNED)
              for k in ("mlm", "clm")}
    return RunResults(run_id="r", config=ConfigRecord(preset="test"), conditions=rows, models=models, headline="unseen",
                      filler_word=filler, dataset=DatasetInfo(grouped=grouped))


def test_the_grounds_give_a_models_margins_as_a_range_and_name_the_weakest():
    from mlmh.findings.grounds import above_baselines

    def condition(masking: str, filler: Score, deletion: Score) -> ConditionResult:
        block = RoleQuality(documents=9, scored=9, metrics={"bleu": Score(60.0)}, filler={"bleu": Score(50.0)},
                            deletion={"bleu": Score(55.0)}, above_filler={"bleu": filler},
                            above_deletion={"bleu": deletion})
        return ConditionResult(id=masking, model="m", model_kind="mlm", masking=masking, sampler="s", seed=0,
                               unseen=block)

    rows = [condition("random:ratio=0.15", Score(1.5, -0.3, 3.1), Score(0.7, -0.9, 2.1)),
            condition("random:ratio=0.5", Score(5.7, 3.8, 7.7), Score(9.6, 7.3, 11.6))]
    assert above_baselines(rows, "bleu") == (
        "unseen bleu per document over the filler +1.5 to +5.7 (1 of 2 CIs reach 0, e.g. random:ratio=0.15: +1.5 [-0.3, "
        "+3.1]); over deletion +0.7 to +9.6 (1 of 2 CIs reach 0, e.g. random:ratio=0.15: +0.7 [-0.9, +2.1])")
    lower = [condition("random:ratio=0.5", Score(-4.0, -6.0, -2.0, higher_is_better=False),
                       Score(-1.0, -3.0, 0.5, higher_is_better=False))]  # e.g. perplexity: below the baseline is better
    assert above_baselines(lower, "bleu") == ("unseen bleu per document over the filler -4 (every CI clear of 0); over "
                                              "deletion -1 (1 of 1 CIs reach 0, e.g. random:ratio=0.5: -1 [-3, +0.5])")
    assert above_baselines([ConditionResult(id="c", model="m", model_kind="mlm", masking="x", sampler="s", seed=0)],
                           "bleu") == ""
