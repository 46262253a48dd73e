"""From a statistic and its CI to a verdict, and the caveats that overrule one: the rules every finding shares.

A claim's verdict is decided by its 95% CI alone: "holds" when the CI excludes 0 in the claimed direction,
"does not hold" when it excludes 0 the other way, "inconclusive" otherwise. Before that, the conditions a
claim would decide on are checked for three caveats (:func:`caveats_of`), and a condition with one is left
out of the claim: a model that never beat the best constant predictor on held-out text (it never left the
unigram plateau), a condition that scores no better than filling every mask with one word or deleting the
masked words (the trivial baselines), and a model whose seen - control gap (seen - unseen where the run holds no
control documents) lies outside its CI (it recites its training set). A result that rewards output shorter than the
reference (ROUGE, BERTScore F1) holds a condition to deletion on a main result that does not (:func:`deletion_bar`);
memorisation is judged on the gap of the quality above the filler (:func:`memorisation_gap`). The downstream claims
check their judge the same way: a downstream model that does not beat no training data when trained on the real
documents (beyond its CI) cannot tell useful synthetic text from useless, so those claims are "not comparable" on it.
When nothing is left, the finding is "not comparable" and says why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from mlmh.config.declared import headline, headlines
from mlmh.results import model_record_of
from mlmh.training.stopping import beats_constant
from mlmh.types import (FAILS, HOLDS, INCONCLUSIVE, NOT_COMPARABLE, NOT_TESTED, ConditionResult, Finding, ModelRecord,
                        RoleQuality, RunResults, Score)

__all__ = ["FAILS", "HOLDS", "INCONCLUSIVE", "NOT_COMPARABLE", "NOT_TESTED", "Caveat", "DOWNSTREAM", "verdict",
           "correlation_verdict", "combined", "caveats_of", "memorised", "memorisation_gap", "memorisation_control",
           "memorisation_set", "recall_clause",
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
                                    ("deletion", deletion_bar(block, metric), block.deletion)):
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


def deletion_bar(block: RoleQuality, metric: str) -> str:
    """The result a condition is held to the deletion baseline on for ``metric``: ``metric`` itself, unless it
    rewards deletion (:attr:`mlmh.components.Headline.rewards_deletion`: ROUGE and BERTScore F1 score words merely
    dropped at precision 1, so deletion outscores every fill that is not mostly right, a learned model's too) and
    the document set was scored on a main result that does not, such as BLEU with its brevity penalty: a model that
    wins by deleting is caught there. The filler keeps the document's length, and bars it on ``metric`` itself."""
    declared = headline(metric)
    if declared is None or not declared.rewards_deletion:
        return metric
    fair = [h.result for h in headlines() if not h.rewards_deletion and h.result in block.metrics
            and h.result in block.deletion]
    return fair[0] if fair else metric


def memorisation_gap(row: ConditionResult, metric: str) -> Score | None:
    """The gap memorisation is judged on, of ``row``'s quality above the filler per document (so that a gap the
    filler shows too, one set of texts being easier than the other, is not taken for recall): seen - control where
    the run holds control documents (:attr:`ConditionResult.control_gap`: the train authors' texts no model learned,
    so that a model that learned how the train authors write is not taken for one that recites their texts), else
    seen - unseen (:attr:`ConditionResult.gap_above_filler`); the raw quality's seen - unseen gap where the run has
    neither (files written before)."""
    for gaps in (row.control_gap, row.gap_above_filler, row.gap):
        if gaps:
            return gaps.get(metric)
    return None


def memorisation_control(row: ConditionResult) -> tuple[str, bool]:
    """(the document set :func:`memorisation_gap` sets the seen documents against: "control" or "unseen", whether
    the gap is of the quality above the filler)."""
    if row.control_gap:
        return "control", True
    return "unseen", bool(row.gap_above_filler)


def memorisation_set(results: RunResults) -> tuple[str, bool]:
    """:func:`memorisation_control` for a whole run, as the faces head their gap columns and sections: every
    condition of a run has the same document sets, so the first with a gap speaks for all."""
    return next((memorisation_control(row) for row in results.conditions if row.gap), ("unseen", False))


def recall_clause(row: ConditionResult, *, say_when_lower: bool = False) -> str:
    """"; masked words regenerated verbatim: A% seen, B% control" (or unseen: the set :func:`memorisation_gap` reads),
    or "" without both recalls; ``say_when_lower`` adds that recall alone would not flag a seen recall not above."""
    other = memorisation_control(row)[0]
    against = row.control if other == "control" else row.unseen
    seen = row.seen.verbatim_recall if row.seen else None
    held = against.verbatim_recall if against else None
    if seen is None or held is None or seen.value is None or held.value is None:
        return ""
    lower = say_when_lower and not seen.value > held.value
    return (f"; masked words regenerated verbatim: {seen.value:.1%} seen, {held.value:.1%} {other}"
            + (" (recall alone would not flag it)" if lower else ""))


def memorised(results: RunResults, row: ConditionResult, metric: str) -> str | None:
    """The one memorisation rule, as every face states it: ``row`` scores ``metric`` better on the documents its
    model trained on than on the control documents (unseen ones where the run holds none), beyond the gap's CI
    (:func:`memorisation_gap`: above the filler), and its model learned something (a model still on the unigram
    plateau is reported as that: its gap is noise about a constant, not recall). The sentence says which evidence
    fired: the quality gap, and the verbatim recall of masked words beside it when the run has it."""
    gap = memorisation_gap(row, metric)
    if gap is None or gap.value is None or not gap.extra.get("significant"):
        return None
    score = next((b.metrics[metric] for b in (row.unseen, row.seen) if b is not None and metric in b.metrics), None)
    better_on_seen = -gap.value if score is not None and score.higher_is_better is False else gap.value
    if better_on_seen <= 0 or never_learned(row.model, model_record_of(results, row.model)):
        return None
    other, above = memorisation_control(row)
    recall = recall_clause(row, say_when_lower=True)
    what = "above the filler " if above else ""
    return (f"{row.model} under {row.masking} memorised: its seen - {other} {metric} gap {what}{gap.value:+.3g} lies "
            f"outside its CI (quality gap){recall}")


# -- findings without a statistic -----------------------------------------------------------------
def not_tested(claim: str, source: str, text: str, reason: str) -> Finding:
    return Finding(claim, source, text, NOT_TESTED, f"{text}: not tested, {reason}.", extra={"reason": reason})


def not_comparable(claim: str, source: str, text: str, caveats: Sequence[Caveat], conditions: Sequence[str] = ()) -> Finding:
    return Finding(claim, source, text, NOT_COMPARABLE, f"{text}: not comparable, because {summarise(caveats)}.",
                   conditions=list(conditions), caveats=list(dict.fromkeys(c.text for c in caveats)))
