"""Downstream tasks: PAN's measures on known inputs, baselines on the bundled samples, failure modes."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlmh_builtins.tasks_av import VIEWS, AuthorshipVerification, PairFeatures, pan_scores, usable_pairs
from mlmh_builtins.tasks_classification import TextClassification
from mlmh_builtins.tasks_ner import NamedEntityRecognition, bio_sequences
from mlmh.registry import get_registry
from mlmh.types import Corpus, Document, EntitySpan, Pair


@pytest.fixture(scope="module")
def samples():
    return {name: get_registry().build("dataset", name).load(None) for name in ("pan", "mpst", "mimic")}


# -- PAN measures -------------------------------------------------------------------------------


def test_pan_scores_on_known_inputs():
    truth = np.array([True, True, False, False, True])
    probability = np.array([0.9, 0.52, 0.2, 0.7, 0.3])  # one non-answer (0.52), one FP, one FN, two right
    scores = pan_scores(truth, probability, margin=0.05)
    # c@1 = (nc + nu * nc / n) / n = (2 + 1 * 2 / 5) / 5
    assert scores["c@1"] == pytest.approx((2 + 2 / 5) / 5)
    # F1 over answered pairs: tp=1, fp=1, fn=1
    assert scores["f1"] == pytest.approx(0.5)
    # F0.5u = 1.25 tp / (1.25 tp + 0.25 (fn + nu) + fp)
    assert scores["f_05_u"] == pytest.approx(1.25 / (1.25 + 0.25 * 2 + 1))
    answers = np.array([0.9, 0.5, 0.2, 0.7, 0.3])
    assert scores["brier"] == pytest.approx(1 - np.mean((answers - truth) ** 2))
    assert scores["overall"] == pytest.approx(np.mean([scores[k] for k in ("auc", "c@1", "f1", "f_05_u", "brier")]))
    assert pan_scores(truth, truth.astype(float), margin=0.0)["c@1"] == 1.0


# -- baselines on the bundled samples (numbers in the docs come from these runs) ------------------


def test_authorship_verification_baseline_beats_chance(samples):
    corpus = samples["pan"]
    result = AuthorshipVerification().run(corpus, corpus, seed=0)
    assert result.error is None and result.n_test >= 50
    assert result.scores["auc"] > 0.85 and result.scores["c@1"] > 0.75, result.scores
    assert result.info["chance"]["auc"] == 0.5
    # per test pair, the Brier complement: its mean is the score, and a verifier with no data scores 0.75
    items = result.info["per_item"]["brier"]
    assert len(items) == result.n_test and np.mean(items) == pytest.approx(result.scores["brier"])
    assert result.info["chance"]["brier"] == 0.75
    constant = result.info["constant"]["brier"]  # the training pairs' prior for every pair: the bar a learner clears
    assert len(constant) == len(items) and np.mean(items) > np.mean(constant) + 0.1


def test_text_classification_baseline_beats_chance(samples):
    corpus = samples["mpst"]
    task = TextClassification()
    result = task.run(corpus, corpus, seed=0)
    assert result.error is None
    chance = result.info["chance"]
    assert result.scores["micro_f1"] > chance["micro_f1"] + 0.3 and result.scores["macro_f1"] > chance["macro_f1"] + 0.3, (result.scores, chance)
    assert task.run(corpus, corpus, seed=0).scores == result.scores
    items = result.info["per_item"]["samples_f1"]  # per test text, its own F1: their mean is samples F1
    assert len(items) == result.n_test and np.mean(items) == pytest.approx(result.scores["samples_f1"])
    constant = result.info["constant"]["samples_f1"]  # the training tags' prior for every text, through the same rule
    assert len(constant) == len(items) and np.mean(items) > np.mean(constant) + 0.1
    assert list(result.info["per_item"]) == ["lrap", "samples_f1"]  # the ranking first: what the findings read
    lrap = result.info["per_item"]["lrap"]
    assert np.mean(lrap) == pytest.approx(result.scores["lrap"]) and np.mean(lrap) > np.mean(result.info["constant"]["lrap"]) + 0.1
    # a model that learned nothing (every training text the same) does no better than the constant on the ranking the
    # findings read: class-weighted, every tag is as likely as every other and its ranking arbitrary (far below the
    # prior's); unweighted, it ranks and predicts exactly what the constant does
    same = dataclasses.replace(corpus, documents=[dataclasses.replace(d, text="one text for all") if d.split == "train"
                                                  else d for d in corpus.documents])
    blind = task.run(same, corpus, seed=0)
    assert blind.error is None
    assert np.mean(blind.info["per_item"]["lrap"]) < np.mean(blind.info["constant"]["lrap"])
    unweighted = TextClassification()
    unweighted.params = {**unweighted.params, "class_weight": "none"}
    blind = unweighted.run(same, corpus, seed=0)
    assert blind.error is None and blind.info["per_item"] == blind.info["constant"]


def test_ner_baseline_on_discharge_summaries(samples):
    corpus = samples["mimic"]
    result = NamedEntityRecognition().run(corpus, corpus, seed=0)
    assert result.error is None
    assert result.scores["f1"] > 0.8, result.scores
    assert {"Drug", "Strength", "Route", "Frequency"} <= set(result.info["per_label_f1"])


def test_tasks_declare_what_they_need(samples):
    registry = get_registry()
    applies = {t.name: {n for n, c in samples.items() if t.applies_to(c)} for t in registry.all("task")}
    assert applies["authorship-verification"] == {"pan"}
    assert applies["text-classification"] == {"mpst"}
    assert applies["ner"] == {"pan", "mpst", "mimic"}


# -- failure modes and details ------------------------------------------------------------------


def _pair_corpus(same_values: list[bool], split: str) -> Corpus:
    docs, pairs = [], []
    for i, same in enumerate(same_values):
        docs += [Document(f"{i}a", f"text number {i} one", split), Document(f"{i}b", f"text number {i} two", split)]
        pairs.append(Pair(str(i), f"{i}a", f"{i}b", same, split))
    return Corpus("pan", docs, "test", pairs)


def test_one_class_training_data_gives_a_clear_error():
    test = _pair_corpus([True, False, True, False], "test")
    result = AuthorshipVerification().run(_pair_corpus([True] * 4, "train"), test)
    assert result.error and "all same-author" in result.error
    train = Corpus("mpst", [Document(str(i), "plot", "train", ["murder"]) for i in range(4)], "x")
    result = TextClassification().run(train, Corpus("mpst", [Document("t", "plot", "test", ["murder"])], "x"))
    assert result.error and "1 distinct tag" in result.error
    result = NamedEntityRecognition().run(Corpus("m", [Document("a", "no entities here", "train")], "x"), Corpus("m", [], "x"))
    assert result.error and "no entities" in result.error


def test_bio_sequences_handle_discontinuous_overlap_and_decimals():
    text = "Vitamin D and B12 given.\nTake 12.5 mg PO."
    doc = Document("d", text, entities=[
        EntitySpan(0, 9, "Drug", "Vitamin D", ((0, 9),)),
        EntitySpan(0, 17, "Drug", "Vitamin B12", ((0, 7), (14, 17))),
        EntitySpan(30, 37, "Strength", "12.5 mg", ((30, 37),)),
    ])
    words, tags, overlapping = bio_sequences(doc)
    assert words == [["Vitamin", "D", "and", "B12", "given", "."], ["Take", "12", ".", "5", "mg", "PO", "."]]
    assert tags == [["B-Drug", "I-Drug", "O", "B-Drug", "O", "O"], ["O", "B-Strength", "I-Strength", "I-Strength", "I-Strength", "O", "O"]]
    assert overlapping == 1  # "Vitamin" of the discontinuous entity was already tagged


def test_pair_features_equal_fitting_then_transforming_every_pair_text(samples):
    """The fit's own rows stand in for the training texts; a text that differs under a known id is
    transformed, never confused with the fitted one."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    corpus = samples["pan"]
    train, texts, _ = usable_pairs(corpus, "train")
    test, _, _ = usable_pairs(corpus, "test")
    train, test = train[:30], test[:20]
    used = sorted({d for p in train for d in (p.a, p.b)})
    changed = {**texts, train[0].a: texts[train[0].a] + " An added sentence, written here."}
    features = PairFeatures({d: texts[d] for d in used})
    vectorizers = [TfidfVectorizer(sublinear_tf=True, min_df=1, **kwargs).fit([texts[d] for d in used]) for _, kwargs in VIEWS]

    def fit_then_transform(pairs, texts):
        return np.column_stack([np.asarray(v.transform([texts[p.a] for p in pairs]).multiply(
            v.transform([texts[p.b] for p in pairs])).sum(axis=1)).ravel() for v in vectorizers])

    for pairs, source in ((train, texts), (test, texts), (train, changed)):
        np.testing.assert_allclose(features(pairs, source), fit_then_transform(pairs, source), rtol=0, atol=1e-12)
    assert not np.allclose(features(train[:1], changed), features(train[:1], texts))
