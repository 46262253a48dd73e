"""From a statistic and its CI to a verdict, and the caveats that overrule one: the rules every finding shares.

A claim's verdict is decided by its 95% CI alone: "holds" when the CI excludes 0 in the claimed direction,
"does not hold" when it excludes 0 the other way, "inconclusive" otherwise. Before that, the conditions a
claim would decide on are checked for three caveats (:func:`caveats_of`), and a condition with one is left
out of the claim: a model that never beat the best constant predictor on held-out text (it never left the
unigram plateau), a condition that scores no better than filling every mask with one word or deleting the
masked words (the trivial baselines), and a model whose seen - control gap lies outside its CI after Holm's
adjustment over the run's memorisation tests (it recites its training set; :func:`memorisation_check`: without
control documents, seen - unseen only where the unseen documents are no other groups' texts). A result that rewards output shorter than the
reference (ROUGE, BERTScore F1) holds a condition to deletion on a main result that does not (:func:`deletion_bar`);
memorisation is judged on the gap of the quality above the filler (:func:`memorisation_gap`). The downstream claims
check their judge the same way: a downstream model that does not beat no training data when trained on the real
documents (beyond its CI) cannot tell useful synthetic text from useless, so those claims are "not comparable" on it.
When nothing is left, the finding is "not comparable" and says why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Sequence

from mlmh.config.declared import headline, headlines
from mlmh.results import main_metrics, model_record_of
from mlmh.stats import from_estimate, holm, se_from_ci
from mlmh.training.stopping import beats_constant
from mlmh.types.result_blocks import NO_GAP
from mlmh.types import (FAILS, HOLDS, INCONCLUSIVE, NOT_COMPARABLE, NOT_TESTED, ConditionResult, Finding, ModelRecord,
                        RoleQuality, RunResults, Score)

__all__ = ["FAILS", "HOLDS", "INCONCLUSIVE", "NOT_COMPARABLE", "NOT_TESTED", "Caveat", "DOWNSTREAM", "verdict",
           "correlation_verdict", "combined", "caveats_of", "memorised", "memorisation_gap", "memorisation_check",
           "memorisation_family", "memorisation_set", "MemorisationCheck", "MemorisationSet", "GROUP_GAP", "recall_clause",
           "deletion_bar", "never_learned", "summarise", "describe_ci", "number", "not_tested", "not_comparable"]


def verdict(ci_low: float | None, ci_high: float | None, direction: int) -> str:
    """holds / does not hold / inconclusive for a claimed sign ``direction`` (+1 rise, -1 fall)."""
    if ci_low is None or ci_high is None:
        return INCONCLUSIVE
    if (direction > 0 and ci_low > 0) or (direction < 0 and ci_high < 0):
        return HOLDS
    if (direction > 0 and ci_high < 0) or (direction < 0 and ci_low > 0):
        return FAILS
    return INCONCLUSIVE


def correlation_verdict(ci_low: float | None, ci_high: float | None, strong: float) -> str:
    """For "no strong correlation": holds when the whole CI lies within (-strong, strong), does not hold when
    it lies beyond one of them, inconclusive otherwise."""
    if ci_low is None or ci_high is None:
        return INCONCLUSIVE
    if -strong < ci_low and ci_high < strong:
        return HOLDS
    if ci_low >= strong or ci_high <= -strong:
        return FAILS
    return INCONCLUSIVE


def combined(verdicts: Sequence[str]) -> str:
    """A claim made of parts that must all hold ("best for CLM and worst for MLM")."""
    if not verdicts:
        return NOT_TESTED
    if any(v == NOT_COMPARABLE for v in verdicts):
        return NOT_COMPARABLE
    if any(v == FAILS for v in verdicts):
        return FAILS
    return HOLDS if all(v == HOLDS for v in verdicts) else INCONCLUSIVE


def number(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def describe_ci(low: float | None, high: float | None, digits: int = 2) -> str:
    if low is None or high is None:
        return "no CI (fewer than two documents)"
    return f"95% CI [{low:+.{digits}f}, {high:+.{digits}f}]"


# -- caveats ------------------------------------------------------------------------------------------
PLATEAU, BASELINE, MEMORISED = "plateau", "baseline", "memorised"
#: a downstream model that does not learn from the real documents cannot judge synthetic ones
DOWNSTREAM = "downstream"


@dataclass(frozen=True)
class Caveat:
    """Why one condition cannot decide a claim: ``kind`` (:data:`PLATEAU`, :data:`BASELINE`, :data:`MEMORISED`,
    :data:`DOWNSTREAM` for a downstream task whose model does not learn from the real documents),
    whom it is about, and the full sentence (kept in the finding's ``caveats``)."""

    kind: str
    subject: str
    text: str


def summarise(caveats: Sequence[Caveat]) -> str:
    """The caveats of a finding as one short clause per kind, for its statement."""
    caveats = list(dict.fromkeys(caveats))
    parts = []
    models = list(dict.fromkeys(c.subject for c in caveats if c.kind == PLATEAU))
    if models:
        parts.append(f"{', '.join(models)} never beat the best constant predictor on held-out text (still on the "
                     "unigram plateau)")
    low = list(dict.fromkeys(c.subject for c in caveats if c.kind == BASELINE))
    if low:
        parts.append(f"{len(low)} condition(s) score no better than the filler or deletion (e.g. {low[0]})")
    memorised = list(dict.fromkeys(c.subject for c in caveats if c.kind == MEMORISED))
    if memorised:
        parts.append(f"{len(memorised)} condition(s) memorised: their train documents scored above documents no model "
                     f"trained on beyond the gap's CI (e.g. {memorised[0]})")
    parts += [c.text for c in caveats if c.kind == DOWNSTREAM]
    return "; ".join(parts)


def never_learned(model: str, record: ModelRecord | None) -> str | None:
    """Why a trained model's card says it never left the unigram plateau on held-out text, or None.

    The card's ``beats_constant`` decides (:func:`mlmh.training.stopping.beats_constant`); a card written before it
    existed is judged by the same rule on the rates it has. Models mlmh did not train have no card: None."""
    training = record.training if record is not None else {}
    accuracy = training.get("heldout_accuracy")
    if accuracy is None:
        return None
    constant = training.get("best_constant_accuracy", training.get("unigram_baseline_accuracy"))
    beats = training.get("beats_constant")
    if beats is None:
        beats = beats_constant(accuracy, constant, int(training.get("heldout_targets") or 1000))
    if beats:
        return None
    return (f"{model} never beat the best constant predictor on held-out text (accuracy {accuracy:.3f}, "
            f"best single token {constant:.3f}): it is still on the unigram plateau" if constant is not None
            else f"{model} never beat the best constant predictor on held-out text")


def caveats_of(results: RunResults, row: ConditionResult, metric: str | None = None,
               role: str = "unseen") -> list[Caveat]:
    """Why ``row`` cannot decide a claim on ``metric`` (its ``role`` documents); [] when nothing stands in the
    way. ``metric`` None checks the model alone (for measures without baselines)."""
    found = []
    learned = never_learned(row.model, model_record_of(results, row.model))
    if learned:
        found.append(Caveat(PLATEAU, row.model, learned))
    if metric is None:
        return found
    block = getattr(row, role, None)
    if block is not None:
        for name, on, baselines in (("the filler", metric, block.filler),
                                    ("deletion", deletion_bar(block, metric, results), block.deletion)):
            score, baseline = block.metrics.get(on), baselines.get(on)
            if score is None or score.value is None or baseline is None or baseline.value is None:
                continue
            if (1 if score.higher_is_better else -1) * (score.value - baseline.value) <= 0:
                bar = "" if on == metric else f", the bar for {metric}, which {REWARDS_DELETION}"
                found.append(Caveat(BASELINE, f"{row.model} / {row.sampler} / {row.masking}",
                                    f"{row.model} with {row.sampler} under {row.masking} scores no better than {name} "
                                    f"on {on} ({score.value:.3g} vs {baseline.value:.3g}){bar}"))
    recited = memorised(results, row, metric)
    if recited:
        found.append(Caveat(MEMORISED, f"{row.model} / {row.masking}", recited))
    return found


#: why a result that rewards deletion is not where deletion bars a condition
REWARDS_DELETION = "rewards output shorter than the reference"


def deletion_bar(block: RoleQuality, metric: str, results: RunResults | None = None) -> str:
    """The result a condition is held to the deletion baseline on for ``metric``: ``metric`` itself, unless it
    rewards deletion (:attr:`mlmh.components.Headline.rewards_deletion`: ROUGE and BERTScore F1 score words merely
    dropped at precision 1, so deletion outscores every fill that is not mostly right, a learned model's too) and
    the document set was scored on a main result that does not, such as BLEU with its brevity penalty: a model that
    wins by deleting is caught there. The filler keeps the document's length, and bars it on ``metric`` itself.
    Which results reward deletion is read as ``results`` recorded it (:mod:`mlmh.config.declared`)."""
    declared = headline(metric, results)
    if declared is None or not declared.rewards_deletion:
        return metric
    fair = [h.result for h in headlines(results) if not h.rewards_deletion and h.result in block.metrics
            and h.result in block.deletion]
    return fair[0] if fair else metric


#: the memorisation rule's family-wise error rate over a run's tests (Holm 1979: :func:`memorisation_family`)
FAMILY_ALPHA = 0.05
#: a seen - unseen gap where the unseen documents are other groups' texts (new authors): reported, never judged
GROUP_GAP = "group gap"


class MemorisationSet(NamedTuple):
    """What a run's memorisation rule sets the seen documents against: ``against`` ("control" or "unseen"),
    whether the gap is of the quality above the filler, and whether it is ``judged`` (False: a group gap)."""

    against: str
    above_filler: bool
    judged: bool


def memorisation_set(results: RunResults) -> MemorisationSet:
    """One rule for a whole run (every condition has the same document sets): seen - control where the run holds
    control documents (the train groups' texts no model learned); seen - unseen where the dataset names no groups
    (its unseen documents are then drawn as the control ones would be); otherwise the seen - unseen gap compares
    the train authors' texts with new authors' and measures style as much as recall: a group gap, not judged. The gap
    is of the quality above the filler where the run kept one (results written before it was kept have the raw gap)."""
    above = bool(results.filler_word) and any(row.gap_above_filler or row.control_gap for row in results.conditions)
    if "control" in results.documents or any(row.control_gap for row in results.conditions):
        return MemorisationSet("control", above, True)
    return MemorisationSet("unseen", above, not results.dataset.grouped)


def memorisation_gap(results: RunResults, row: ConditionResult, metric: str) -> Score | None:
    """The gap of :func:`memorisation_set` for ``row`` on ``metric`` alone (of the quality above the filler per
    document where the run has a filler, so that a gap the filler shows too is not taken for recall), or None when
    the run has no such gap on that metric: no evidence, which the rule reads as "not tested", never as "no gap"."""
    against, above, _ = memorisation_set(results)
    if against == "control":
        return row.control_gap.get(metric)
    return (row.gap_above_filler if above else row.gap).get(metric)


def _p_value(gap: Score) -> float | None:
    """The gap's two-sided p-value (Welch's, :func:`mlmh.findings.memorization.gap`); from its CI by the normal
    approximation for files written before gaps kept one."""
    if gap.extra.get("p_value") is not None:
        return float(gap.extra["p_value"])
    if gap.value is None or gap.ci_low is None or gap.ci_high is None:
        return None
    return from_estimate(float(gap.value), se_from_ci(gap.ci_low, gap.ci_high), math.inf).p


def memorisation_family(results: RunResults) -> dict[tuple[str, str], float]:
    """(condition id, metric) -> Holm-adjusted p-value over the run's family of memorisation tests: every condition
    whose model learned (a model on the plateau is reported as that) on every main metric, against
    :func:`memorisation_set`; empty where the run judges none. A run of 24 conditions and 3 metrics makes 72 tests,
    and at 5% each about 4 would flag by chance: adjusted, the family flags any at all with 5% chance under the null."""
    if not memorisation_set(results).judged:
        return {}
    keys, p_values = [], []
    for row in results.conditions:
        if row.failed or never_learned(row.model, model_record_of(results, row.model)):
            continue
        for metric in main_metrics(results, "unseen"):
            found = memorisation_gap(results, row, metric)
            p = _p_value(found) if found is not None else None
            if p is not None:
                keys.append((row.id, metric))
                p_values.append(p)
    return {key: float(adjusted) for key, adjusted in zip(keys, holm(p_values)) if adjusted is not None}


@dataclass(frozen=True)
class MemorisationCheck:
    """The memorisation rule's reading of one condition on one metric: ``state`` (:data:`MEMORISED`, ``"no gap"``,
    :data:`GROUP_GAP`, :data:`PLATEAU`, or ``"not tested"`` with the ``reason``), the gap it read and its
    Holm-adjusted p-value within a family of ``family`` tests."""

    state: str
    against: str
    gap: Score | None
    adjusted_p: float | None = None
    family: int = 0
    reason: str = ""


def memorisation_check(results: RunResults, row: ConditionResult, metric: str) -> MemorisationCheck:
    """The one memorisation rule every face states (:func:`memorisation_set`, :func:`memorisation_family`)."""
    against, _, judged = memorisation_set(results)
    found = memorisation_gap(results, row, metric)
    if not judged:
        return MemorisationCheck(GROUP_GAP, against, found, reason="the run holds no control documents and the unseen "
                                 "documents are other groups' texts: their gap measures style as well as recall")
    if never_learned(row.model, model_record_of(results, row.model)):
        return MemorisationCheck(PLATEAU, against, found, reason="the model never beat the best constant predictor")
    family = memorisation_family(results)
    adjusted = family.get((row.id, metric))
    if found is None or found.value is None or adjusted is None:
        return MemorisationCheck(NOT_TESTED, against, found, reason=f"the run has no seen - {against} gap with a CI "
                                 f"on {metric}" + ("" if metric in main_metrics(results, "unseen") else
                                                   " among the main metrics the rule judges"))
    score = next((b.metrics[metric] for b in (row.unseen, row.seen) if b is not None and metric in b.metrics), None)
    better_on_seen = -found.value if score is not None and score.higher_is_better is False else found.value
    state = MEMORISED if adjusted < FAMILY_ALPHA and better_on_seen > 0 else NO_GAP
    return MemorisationCheck(state, against, found, adjusted, len(family))


def recall_clause(results: RunResults, row: ConditionResult, *, say_when_lower: bool = False) -> str:
    """"; masked words regenerated verbatim: A% seen, B% control" (or unseen: the set :func:`memorisation_set`
    reads), or "" without both recalls; ``say_when_lower`` adds that recall alone would not flag a seen recall not
    above."""
    other = memorisation_set(results).against
    against = row.control if other == "control" else row.unseen
    seen = row.seen.verbatim_recall if row.seen else None
    held = against.verbatim_recall if against else None
    if seen is None or held is None or seen.value is None or held.value is None:
        return ""
    lower = say_when_lower and not seen.value > held.value
    return (f"; masked words regenerated verbatim: {seen.value:.1%} seen, {held.value:.1%} {other}"
            + (" (recall alone would not flag it)" if lower else ""))


def memorised(results: RunResults, row: ConditionResult, metric: str) -> str | None:
    """The sentence of :func:`memorisation_check` where it flags ``row`` on ``metric``, else None: its seen -
    control gap (above the filler) lies outside its CI after Holm's adjustment over the run's family, and its model
    learned something; with the verbatim recall of masked words beside it where the run has it."""
    check = memorisation_check(results, row, metric)
    if check.state != MEMORISED or check.gap is None or check.gap.value is None:
        return None
    what = "above the filler " if memorisation_set(results).above_filler else ""
    return (f"{row.model} under {row.masking} memorised: its seen - {check.against} {metric} gap {what}"
            f"{check.gap.value:+.3g} lies outside its CI (Holm-adjusted p {check.adjusted_p:.2g} over the run's "
            f"{check.family} memorisation tests){recall_clause(results, row, say_when_lower=True)}")


# -- findings without a statistic -----------------------------------------------------------------
def not_tested(claim: str, source: str, text: str, reason: str) -> Finding:
    return Finding(claim, source, text, NOT_TESTED, f"{text}: not tested, {reason}.", extra={"reason": reason})


def not_comparable(claim: str, source: str, text: str, caveats: Sequence[Caveat], conditions: Sequence[str] = ()) -> Finding:
    return Finding(claim, source, text, NOT_COMPARABLE, f"{text}: not comparable, because {summarise(caveats)}.",
                   conditions=list(conditions), caveats=list(dict.fromkeys(c.text for c in caveats)))
