"""The ``text-classification`` task: multi-label tags (MPST) from the text.

TF-IDF of character n-grams within words (2 to 5 characters: "lib", "librar", "python" and their inflections count
as evidence from a handful of texts) with one class-weighted logistic regression per tag (one-vs-rest), the
bag-of-features baseline of the MPST paper (Kar et al., LREC 2018). Each regression weighs a tag's few positive texts
as much as its many negative ones (``class_weight=balanced``): unweighted, a tag seen on 2 of 32 training texts never
outranks the prior's most frequent tags, and the model answers the majority tags for every text.

Scores, per test text and averaged:

- ``lrap``: label ranking average precision (the ranking measure of multi-label learning, Tsoumakas et al. 2010;
  :func:`sklearn.metrics.label_ranking_average_precision_score`) of the text's tags in the model's ranking of every
  training tag: it reads what the model learned about every tag, not only the ones past a cut-off, so it tells a
  learner from the prior on a few dozen test texts where a thresholded F1 cannot. A text none of whose tags were seen
  in training scores 0 (nothing to rank right). It is the first per-item score: the one the downstream findings read.
- ``samples_f1``: each text's own F1 of the tags predicted, its ``tags`` most probable (default: as many as a
  training text carries on average, rounded, as MPST's top-k evaluation), and over all texts micro and macro F1
  over the tags seen in training.

``info["chance"]`` holds the same scores for a model with no training data (a random ranking's expected
``lrap`` per text; a seeded stratified random guesser's F1s) and ``info["constant"]`` the per-text scores of the
best constant predictor (the training tags' prior for every text, ranked and cut the same way): the bar a model that
learned anything clears.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlmh import hookimpl
from mlmh.components import InputsOnly, Task
from mlmh.params import Param
from mlmh.types import Corpus, Document, TaskResult


def f1_scores(truth: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    from sklearn.metrics import f1_score

    return {
        "micro_f1": float(f1_score(truth, predicted, average="micro", zero_division=0)),
        "macro_f1": float(f1_score(truth, predicted, average="macro", zero_division=0)),
        "samples_f1": float(f1_score(truth, predicted, average="samples", zero_division=0)),
    }


def labelled(documents: list[Document]) -> list[Document]:
    return [d for d in documents if d.labels]


class TextClassification(InputsOnly, Task):
    name = "text-classification"
    description = ("multi-label tags (MPST): character n-gram TF-IDF + class-weighted one-vs-rest logistic regression; "
                   "label ranking average precision, micro/macro/samples F1")
    requires = frozenset({"labels"})
    parameters = (
        Param("C", float, 10.0, "inverse regularisation strength of each logistic regression", min=1e-6),
        Param("class_weight", str, "balanced", "weights of each tag's positive and negative training texts: balanced "
              "(as many in total) or none", choices=("balanced", "none")),
        Param("tags", int, 0, "tags predicted per text, its most probable (0: as many as a training text carries on "
              "average, rounded, at least 1)", min=0),
        Param("max_features", int, 50000, "TF-IDF vocabulary size cap", min=10),
    )

    def run(self, train: Corpus, test: Corpus, *, seed: int = 0) -> TaskResult:
        from sklearn.dummy import DummyClassifier
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.multiclass import OneVsRestClassifier
        from sklearn.preprocessing import MultiLabelBinarizer

        train_docs = labelled(train.split("train"))
        test_docs = labelled(test.split("test"))
        info: dict[str, Any] = {
            "unlabelled_skipped": {"train": len(train.split("train")) - len(train_docs), "test": len(test.split("test")) - len(test_docs)}
        }
        tags = sorted({t for d in train_docs for t in d.labels})
        if len(tags) < 2:
            return TaskResult(self.name, {}, len(train_docs), len(test_docs), info, error=f"training texts carry {len(tags)} distinct tag(s); classification needs at least two")
        if not test_docs:
            return TaskResult(self.name, {}, len(train_docs), 0, info, error="no labelled test texts")
        binarizer = MultiLabelBinarizer(classes=tags)
        y_train = binarizer.fit_transform([d.labels for d in train_docs])
        unseen = sorted({t for d in test_docs for t in d.labels} - set(tags))
        if unseen:
            info["test_tags_unseen_in_training"] = unseen
        y_test = binarizer.transform([[t for t in d.labels if t in set(tags)] for d in test_docs])
        constant = [tag for tag, column in zip(tags, y_train.T) if column.min() == column.max()]
        if constant:
            info["tags_on_every_training_text"] = constant
        vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True,
                                     max_features=self.params["max_features"])
        x_train = vectorizer.fit_transform([d.text for d in train_docs])
        x_test = vectorizer.transform([d.text for d in test_docs])
        weight = None if self.params["class_weight"] == "none" else self.params["class_weight"]
        # liblinear: a few hundred short texts and tens of tags train in about a second on one core
        model = OneVsRestClassifier(LogisticRegression(C=self.params["C"], class_weight=weight, solver="liblinear",
                                                       max_iter=2000, random_state=seed))
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Label .* is present in all training examples")
            model.fit(x_train, y_train)
        probability = model.predict_proba(x_test)
        count = self.params["tags"] or max(1, int(np.round(y_train.sum(axis=1).mean())))
        info["tags_per_text"] = count
        predicted = _top(probability, count)
        scores = {"lrap": float(np.mean(lrap := _ranking_precision(y_test, probability))), **f1_scores(y_test, predicted)}
        # per test text, its own scores (their means are the scores): paired CIs across training sets; beside them
        # the best constant predictor's, the training tags' prior for every text ranked and cut the same way: a model
        # that does not beat it predicts one tag set whatever it is trained on
        info["per_item"] = {"lrap": lrap, "samples_f1": _samples_f1(y_test, predicted)}
        prior = np.tile(y_train.mean(axis=0), (len(test_docs), 1))
        info["constant"] = {"lrap": _ranking_precision(y_test, prior), "samples_f1": _samples_f1(y_test, _top(prior, count))}
        guesser = DummyClassifier(strategy="stratified", random_state=seed).fit(x_train, y_train)
        info["chance"] = {"lrap": float(np.mean(_random_ranking_precision(y_test))),
                          **f1_scores(y_test, np.asarray(guesser.predict(x_test)))}
        info["tags"] = tags
        return TaskResult(self.name, scores, len(train_docs), len(test_docs), info)


def _top(probability: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` most probable tags of each text (ties: the first in tag order)."""
    predicted = np.zeros(probability.shape, dtype=int)
    top = np.argsort(-probability, axis=1, kind="stable")[:, :count]
    np.put_along_axis(predicted, top, 1, axis=1)
    return predicted


def _samples_f1(truth: np.ndarray, predicted: np.ndarray) -> list[float]:
    """Each test text's own F1 (their mean is samples_f1)."""
    overlap, sizes = (truth & predicted).sum(axis=1), truth.sum(axis=1) + predicted.sum(axis=1)
    return [float(x) for x in np.where(sizes > 0, 2 * overlap / np.maximum(sizes, 1), 0.0)]


def _ranking_precision(truth: np.ndarray, score: np.ndarray) -> list[float]:
    """Each test text's label ranking average precision (sklearn's, tied tags ranked below one another: a constant
    earns nothing from ties), 0 for a text without a tag seen in training."""
    truth = truth.astype(bool)
    above = score[:, None, :] >= score[:, :, None]  # [i, j, k]: tag k ranked at or above tag j for text i
    rank = above.sum(axis=2)
    relevant_above = (above & truth[:, None, :]).sum(axis=2)
    precision = np.where(truth, relevant_above / rank, 0.0).sum(axis=1)
    return [float(x) for x in np.where(truth.any(axis=1), precision / np.maximum(truth.sum(axis=1), 1), 0.0)]


def _random_ranking_precision(truth: np.ndarray) -> list[float]:
    """Each text's expected label ranking average precision under a random ranking of the ``n`` tags, ``r`` of them
    its own: (H_n + (r - 1)(n - H_n)/(n - 1)) / n, H_n the n-th harmonic number (a relevant tag at rank p has on
    average (p - 1)(r - 1)/(n - 1) other relevant tags above it); 0 without a tag seen in training."""
    n = truth.shape[1]
    harmonic = float(np.sum(1.0 / np.arange(1, n + 1)))
    r = truth.sum(axis=1)
    expected = (harmonic + (r - 1) * (n - harmonic) / max(n - 1, 1)) / n
    return [float(x) for x in np.where(r > 0, expected, 0.0)]


@hookimpl
def register_tasks(register):
    register(TextClassification())
