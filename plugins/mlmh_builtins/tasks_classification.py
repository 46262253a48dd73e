"""The ``text-classification`` task: multi-label tags (MPST) from the text.

TF-IDF word uni- and bigrams with one logistic regression per tag (one-vs-rest), as the MPST paper's
bag-of-words baselines (Kar et al., LREC 2018). A tag is predicted when its probability reaches
``threshold``; each text gets at least ``min_tags`` tags (its most probable ones), because every MPST film
carries at least one. Scores: micro and macro F1 over the tags seen in training, plus samples F1.
``info["chance"]`` holds the same scores for a seeded stratified random guesser, for comparison, and
``info["constant"]`` the per-text samples F1 of the best constant predictor (the training tags' prior for every text):
the bar a model that learned anything clears.
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
    description = "multi-label tags (MPST): TF-IDF + one-vs-rest logistic regression; micro/macro F1"
    requires = frozenset({"labels"})
    parameters = (
        Param("C", float, 4.0, "inverse regularisation strength of each logistic regression", min=1e-6),
        Param("threshold", float, 0.5, "probability at which a tag is predicted", min=0.0, max=1.0),
        Param("min_tags", int, 1, "every text gets at least this many tags (its most probable)", min=0),
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
        vectorizer = TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, max_features=self.params["max_features"])
        x_train = vectorizer.fit_transform([d.text for d in train_docs])
        x_test = vectorizer.transform([d.text for d in test_docs])
        model = OneVsRestClassifier(LogisticRegression(C=self.params["C"], max_iter=2000, random_state=seed))
        import warnings

        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Label .* is present in all training examples")
            model.fit(x_train, y_train)
        predicted = self._tags(model.predict_proba(x_test))
        scores = f1_scores(y_test, predicted)
        # per test text, its own F1 (their mean is samples_f1): paired CIs across training sets; beside it the best
        # constant predictor's, the training tags' prior for every text through the same rule: a model that does not
        # beat it predicts one tag set whatever it is trained on
        info["per_item"] = {"samples_f1": _samples_f1(y_test, predicted)}
        prior = np.tile(y_train.mean(axis=0), (len(test_docs), 1))
        info["constant"] = {"samples_f1": _samples_f1(y_test, self._tags(prior))}
        guesser = DummyClassifier(strategy="stratified", random_state=seed).fit(x_train, y_train)
        info["chance"] = f1_scores(y_test, np.asarray(guesser.predict(x_test)))
        info["tags"] = tags
        return TaskResult(self.name, scores, len(train_docs), len(test_docs), info)


    def _tags(self, probability: np.ndarray) -> np.ndarray:
        """The tags predicted from per-tag probabilities: those at ``threshold`` or above, and the ``min_tags`` most
        probable of each text."""
        predicted = (probability >= self.params["threshold"]).astype(int)
        top = np.argsort(-probability, axis=1, kind="stable")[:, : self.params["min_tags"]]
        for row, columns in enumerate(top):
            predicted[row, columns] = 1
        return predicted


def _samples_f1(truth: np.ndarray, predicted: np.ndarray) -> list[float]:
    """Each test text's own F1 (their mean is samples_f1)."""
    overlap, sizes = (truth & predicted).sum(axis=1), truth.sum(axis=1) + predicted.sum(axis=1)
    return [float(x) for x in np.where(sizes > 0, 2 * overlap / np.maximum(sizes, 1), 0.0)]


@hookimpl
def register_tasks(register):
    register(TextClassification())
