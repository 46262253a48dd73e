"""Verbatim recall, the seen - unseen gap and the filler baseline (mlmh.findings.memorization)."""

from __future__ import annotations

import math

import pytest

from mlmh.findings.memorization import filler_generations, filler_word, gap, verbatim_recall
from mlmh.types import Document, Generation, MaskedItem, MaskPlan, Score
from mlmh.words import split_words


def generation(original: str, outputs: dict[int, str]) -> Generation:
    words = split_words(original)
    return Generation(doc_id=original[:8], model="m", model_kind="mlm", sampler="s", masking="random", seed=0,
                      original=original, masked_text="", text=words.replace(outputs), masked_words=sorted(outputs),
                      output_words=outputs)


def test_verbatim_recall_counts_exact_masked_words_only():
    gens = [generation("the cat sat on the mat", {1: "cat", 2: "ran"}),  # 1 of 2
            generation("a dog barked at night", {0: "A", 4: "night"})]    # case-sensitive: 1 of 2
    recall = verbatim_recall(gens, seed=0)
    assert recall.value == pytest.approx(0.5) and recall.extra == {"matched": 2, "masked": 4}
    assert recall.ci_low <= 0.5 <= recall.ci_high
    assert verbatim_recall([generation("one two", {})]).value is None


def test_gap_ci_combines_both_cis_and_says_when_it_excludes_zero():
    seen = Score(value=60.0, ci_low=58.04, ci_high=61.96)      # se 1.0
    unseen = Score(value=50.0, ci_low=48.04, ci_high=51.96)    # se 1.0
    g = gap(seen, unseen)
    half = 1.959963984540054 * math.sqrt(2)
    assert g.value == pytest.approx(10.0) and g.ci_low == pytest.approx(10 - half, abs=1e-3)
    assert g.extra["significant"] is True
    close = gap(seen, Score(value=59.0, ci_low=57.04, ci_high=60.96))
    assert close.extra["significant"] is False
    assert gap(seen, Score(value=None)) is None and gap(None, seen) is None
    assert gap(Score(value=1.0), Score(value=0.5)).to_dict() == {
        "value": 0.5, "ci_low": None, "ci_high": None, "higher_is_better": True, "significant": None}


def test_filler_word_is_the_most_frequent_word_not_punctuation():
    docs = [Document(id="a", text="x , y , z , the . the", split="train"),
            Document(id="b", text="the end , .", split="train")]
    assert filler_word(docs) == "the"
    assert filler_word([Document(id="c", text="b a", split="train")]) == "a"  # tie: alphabetical


def test_filler_generations_put_the_word_in_every_mask_and_nowhere_else():
    words = split_words("the cat sat on the mat")
    item = MaskedItem(doc_id="d", words=words, plan=MaskPlan(masking="random", word_indices=(1, 5)), seed=3)
    (g,) = filler_generations([item], "the")
    assert g.text == "the the sat on the the" and g.masked_text == "the [MASK] sat on the [MASK]"
    assert g.masked_words == [1, 5] and g.output_words == {1: "the", 5: "the"}
