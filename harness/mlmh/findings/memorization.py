"""What a regeneration owes to memorization and to the visible context alone.

Three measurements sit beside every quality figure of a run:

- **verbatim recall**: the share of masked words regenerated exactly as they were. On documents the
  model trained on (``seen``) a high value beside a low one on ``unseen`` documents is recitation.
- **the seen - unseen gap** (and seen - control) of each metric, with a CI. The two sets are independent samples,
  so the gap gets Welch's interval and test from each set's standard error and degrees of freedom
  (:func:`mlmh.stats.welch`; a metric's own CI gives its standard error as the half-width / 1.96).
- **quality above each baseline**, per document (the condition's score minus the baseline's on the same masked
  document, averaged, with a bootstrap CI): a paired measure, so what makes one document harder than another for
  every fill of its masks cancels. Its seen - unseen gap is what memorisation is judged on: the seen and unseen
  documents are different texts (on PAN, different authors), and a gap the filler shows too is the texts', not
  recall. On the bundled PAN sample at masking 0.5, the filler's own BERTScore is 0.018 higher on the seen
  documents, as high as the gap of every pretrained model there.
- **two trivial baselines**, scored with the same metrics on the same masks: the *filler* puts the most
  frequent word of the training split in every mask (what the unmasked context alone earns), and
  *deletion* drops the masked words (what a model earns by emitting punctuation or nothing: ROUGE and
  BERTScore reward it, so a model that beats the filler only by deleting is no better than deletion).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from mlmh.stats import Interval, resample_ci, se_from_ci, t_interval, welch
from mlmh.types import Document, Generation, MaskedItem, Score

def verbatim_recall(generations: Sequence[Generation], *, seed: int = 0) -> Score:
    """Share of masked words regenerated exactly (case-sensitive), with a CI over documents; the counts
    (``matched``, ``masked``) in ``extra``."""
    from mlmh.words import split_words

    matched, masked = [], []
    for g in generations:
        words = split_words(g.original)
        indices = [i for i in g.masked_words if i in g.output_words]
        matched.append(sum(g.output_words[i].strip() == words[i] for i in indices))
        masked.append(len(indices))
    hits, total = np.asarray(matched, dtype=float), np.asarray(masked, dtype=float)
    if total.sum() == 0:
        return Score(value=None, extra={"matched": 0, "masked": 0})

    def share(rows: np.ndarray) -> float:
        denominator = total[rows].sum()
        return float(hits[rows].sum() / denominator) if denominator else math.nan

    low, high = resample_ci(len(generations), share, seed=seed)
    return Score(value=float(hits.sum() / total.sum()), ci_low=low, ci_high=high,
                 extra={"matched": int(hits.sum()), "masked": int(total.sum())})


def gap(seen: Score | None, unseen: Score | None) -> Score | None:
    """seen - unseen (or seen - control) of one metric's scores of two independent document sets, with Welch's
    interval (:func:`mlmh.stats.welch`); its two-sided ``p_value``, degrees of freedom (``df``) and whether the CI
    excludes 0 on its own (``significant``: one test; the memorisation rule adjusts a run's family of them,
    :func:`mlmh.findings.verdicts.memorisation_family`) in ``extra``; None when either side has no value."""
    if seen is None or unseen is None or seen.value is None or unseen.value is None:
        return None
    found = welch(_summary(seen), _summary(unseen))
    if found.low is None or found.high is None:
        return Score(value=found.value, extra={"significant": None})
    return Score(value=found.value, ci_low=found.low, ci_high=found.high,
                 extra={"significant": bool(found.low > 0 or found.high < 0), "p_value": found.p, "df": found.df})


def above(values: Mapping[str, Mapping[str, Any]], baseline: Mapping[str, Mapping[str, Any]],
          higher_is_better: Mapping[str, bool]) -> dict[str, Score]:
    """Per metric, the mean over documents of a condition's score minus a baseline's on the same document, with
    its t CI, the number of ``documents``, the standard error ``se`` and degrees of freedom ``df`` (in ``extra``); both arguments map document -> metric -> value,
    and a document either lacks (or scores as not a number) is left out."""
    out: dict[str, Score] = {}
    for metric in dict.fromkeys(m for scored in values.values() for m in scored):
        differences = [float(v[metric]) - float(baseline[doc][metric]) for doc, v in values.items()
                       if v.get(metric) is not None and baseline.get(doc, {}).get(metric) is not None]
        kept = [d for d in differences if math.isfinite(d)]
        if not kept:
            continue
        found = t_interval(kept)
        out[metric] = Score(value=found.value, ci_low=found.low, ci_high=found.high,
                            higher_is_better=higher_is_better.get(metric, True),
                            extra={"documents": len(kept), "se": found.se, "df": found.df})
    return out


def _summary(score: Score) -> Interval:
    """A set's mean as :func:`mlmh.stats.welch` reads it: the standard error and degrees of freedom :func:`above`
    records, else (a metric's own CI) the CI's half-width over the normal quantile and the documents it was on."""
    if score.extra.get("se") is not None and score.extra.get("df"):
        return Interval(score.value, score.ci_low, score.ci_high, float(score.extra["se"]), float(score.extra["df"]))
    if score.ci_low is None or score.ci_high is None:
        return Interval(score.value, None, None)
    documents = score.extra.get("documents")
    df = float(documents) - 1 if documents and documents > 1 else 1e6
    return Interval(score.value, score.ci_low, score.ci_high, se_from_ci(score.ci_low, score.ci_high), df)


def filler_word(documents: Sequence[Document]) -> str:
    """The most frequent word of ``documents``, punctuation left out (a "." filler would score as deleting
    the masked words, not as guessing one); ties broken alphabetically, so it is reproducible."""
    from mlmh.words import is_punctuation, split_words

    counts = Counter(word for d in documents for word in split_words(d.text) if not is_punctuation(word))
    if not counts:
        return "the"
    best = max(counts.values())
    return min(word for word, n in counts.items() if n == best)


def baseline_words(filler: str) -> dict[str, str]:
    """The baselines of every run and the word each puts in every mask (deletion: none)."""
    return {"filler": filler, "deletion": ""}


def filler_generations(items: Sequence[MaskedItem], word: str) -> list[Generation]:
    """Generations that fill every masked word of ``items`` with ``word``: the context-only baseline."""
    out = []
    for item in items:
        outputs = {i: word for i in item.plan.word_indices}
        out.append(Generation(
            doc_id=item.doc_id, model="filler", model_kind="filler", sampler=f"filler:{word}",
            masking=item.plan.masking, seed=item.seed, original=item.words.text,
            masked_text=item.words.replace({i: "[MASK]" for i in item.plan.word_indices}),
            text=item.words.replace(outputs), masked_words=list(item.plan.word_indices), output_words=outputs,
        ))
    return out
