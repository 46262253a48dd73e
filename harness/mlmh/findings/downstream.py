"""What a run's downstream test can tell about synthetic training data, read from per-test-item scores.

The paper (arXiv 2405.12630) trains each dataset's downstream model on the regenerated documents instead of the real
ones (its claim 5); Kumar, Choudhary & Cho 2020 ("Data Augmentation using Pre-trained Transformer Models") and SSMBA
(Ng et al. 2020) add them to the real ones. A run does both (:mod:`mlmh.run.downstream`), and every model is tested on
the same real test items, so each synthetic set is compared with the model trained on the real documents alone and
with one that had no training data **per test item, paired**: Student's t interval over the per-item differences
(:func:`mlmh.stats.t_interval`), as every other finding of the run.

Such comparisons mean something only when the downstream model learns: trained on the real documents it must beat
no training data and the best constant predictor (the training class prior for every item) beyond their CIs, and it
must score differently on different training sets. A model that predicts one label whatever it is trained on gives
every synthetic set the real documents' score, and would make "synthetic text is as useful as real" hold for any
text (:func:`downstream_test`, the gate of claims 4 and 5). How small a difference the test can see is its minimum
detectable difference (:func:`mlmh.stats.detectable_difference`) at the run's test size.

Per-item scores come as ``items[who][task][score]``: ``who`` is ``"real"`` (the real documents), ``"chance"`` (no
training data), ``"constant"`` (the best constant predictor), a condition id (its synthetic set instead of the real
documents) or :func:`augmented` of one (the real documents and its synthetic set together).
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from mlmh.stats import detectable_difference, t_interval
from mlmh.types import Contrast, DownstreamTest

REAL, NO_DATA, CONSTANT = "real", "chance", "constant"
#: the words a test whose model does not learn from what it is trained on is set aside with
ONE_LABEL = "the downstream model predicts one label whatever it is trained on"
POWER = 0.8

Items = Mapping[str, Mapping[str, Mapping[str, Sequence[float]]]]  # who -> task -> score -> per test item


def augmented(condition: str) -> str:
    """The name a condition's augmented training set (real documents + its synthetic set) goes by in ``items``."""
    return f"real + {condition}"


def item_score(items: Items, task: str, preferred: str | None = None) -> str | None:
    """The score of ``task`` reported per item beside a no-training-data level: ``preferred`` where it is, else the
    first; None where there is none."""
    real, none = items.get(REAL, {}).get(task, {}), items.get(NO_DATA, {}).get(task, {})
    found = [s for s in real if s in none]
    return preferred if preferred in found else (found[0] if found else None)


def contrast(items: Items, who: str, against: str, task: str, score: str) -> Contrast | None:
    """``who``'s model minus ``against``'s, per test item of ``task`` on ``score``, with its t interval; None where
    either lacks the per-item scores (or they differ in length)."""
    a = items.get(who, {}).get(task, {}).get(score)
    b = items.get(against, {}).get(task, {}).get(score)
    if not a or not b or len(a) != len(b):
        return None
    found = t_interval(list(np.asarray(a, dtype=float) - np.asarray(b, dtype=float)))
    return Contrast(found.value, found.low, found.high, len(a))


def condition_contrasts(items: Items, condition: str) -> dict[str, dict[str, dict[str, dict[str, Contrast]]]]:
    """A condition's synthetic set used two ways ("synthetic": instead of the real documents; "augmented": added to
    them), each against the real documents alone ("vs_real") and no training data ("vs_none"), per task and score
    reported per item."""
    out: dict[str, dict[str, dict[str, dict[str, Contrast]]]] = {}
    for mode, who in (("synthetic", condition), ("augmented", augmented(condition))):
        for task, scores in items.get(who, {}).items():
            for score in scores:
                found = {name: c for name, against in (("vs_real", REAL), ("vs_none", NO_DATA))
                         if (c := contrast(items, who, against, task, score)) is not None}
                if found:
                    out.setdefault(mode, {}).setdefault(task, {})[score] = found
    return out


def downstream_test(items: Items, task: str, score: str, conditions: Sequence[str], *,
                    power: float = POWER) -> DownstreamTest:
    """Whether ``task``'s model learns from the real documents (see the module), and its minimum detectable
    difference: from the standard deviation of the paired per-item differences between each synthetic training set
    (of ``conditions``, both ways) and the real documents, pooled (root mean square), or, without any, between the
    real documents and no training data."""
    real_vs_none = contrast(items, REAL, NO_DATA, task, score)
    real_vs_constant = contrast(items, REAL, CONSTANT, task, score)
    n = real_vs_none.items if real_vs_none else len(items.get(REAL, {}).get(task, {}).get(score) or ())
    real = items.get(REAL, {}).get(task, {}).get(score)
    sets = [np.asarray(vector, dtype=float) for who in [REAL, *conditions]
            if len(vector := items.get(who, {}).get(task, {}).get(score) or ()) == n and n]
    varies = None if len(sets) < 2 else any(not np.array_equal(sets[0], other) for other in sets[1:])
    sds = [float(np.std(np.asarray(vector, dtype=float) - np.asarray(real, dtype=float), ddof=1))
           for who in [*conditions, *map(augmented, conditions)]
           if real and n > 1 and len(vector := items.get(who, {}).get(task, {}).get(score) or ()) == n]
    if sds:
        sd, sd_of = float(np.sqrt(np.mean(np.square(sds)))), "each synthetic set minus the real documents"
    elif real_vs_none and n > 1:
        sd = float(np.std(np.asarray(real, dtype=float) - np.asarray(items[NO_DATA][task][score], dtype=float), ddof=1))
        sd_of = "the real documents minus no training data"
    else:
        sd, sd_of = None, ""
    found = DownstreamTest(task=task, score=score, items=n, real_vs_none=real_vs_none,
                           real_vs_constant=real_vs_constant, training_sets=len(sets), varies=varies, sd=sd,
                           sd_of=sd_of, mdd=detectable_difference(sd, n, power=power) if sd is not None else None,
                           power=power)
    found.reason = _why_not(found)
    found.learns = not found.reason if real_vs_none is not None else None
    return found


def _why_not(test: DownstreamTest) -> str:
    """Why the model trained on the real documents cannot judge synthetic text, in words; "" where it can."""
    from mlmh.findings.verdicts import describe_ci, number

    def against(found: Contrast, what: str) -> str:
        return (f"it scores {number(found.value, 3)} {test.score} against {what} ({describe_ci(found.ci_low, found.ci_high, 3)}, "
                f"{found.items} test items)")

    none, constant = test.real_vs_none, test.real_vs_constant
    if none is None:
        return (f"the {test.task} model trained on the real documents has no per-item scores beside a chance level "
                "to tell")
    if test.varies is False:
        return (f"{ONE_LABEL}: trained on the real documents and on each of {test.training_sets - 1} synthetic set(s) "
                f"it gives every test item the same {test.score}")
    if none.ci_low is None or none.ci_low <= 0:
        return f"the {test.task} model trained on the real documents {against(none, 'no training data')[3:]}"
    if constant is not None and (constant.ci_low is None or constant.ci_low <= 0):
        return (f"the {test.task} model trained on the real documents does no better than one that predicts one label "
                f"whatever it is trained on: {against(constant, 'a constant predictor of the class prior')}")
    return ""


def tests(items: Items, conditions: Sequence[str]) -> list[DownstreamTest]:
    """:func:`downstream_test` of every task with per-item scores beside a no-training-data level, on its first such
    score."""
    return [downstream_test(items, task, score, conditions) for task in items.get(REAL, {})
            if (score := item_score(items, task)) is not None]


__all__ = ["CONSTANT", "NO_DATA", "ONE_LABEL", "REAL", "augmented", "condition_contrasts", "contrast",
           "downstream_test", "item_score", "tests"]
