"""The ``authorship-verification`` task: PAN's pair task (same author or not?).

A verifier in the spirit of the PAN 2020 baseline (Kestemont et al., "Overview of the Cross-Domain
Authorship Verification Task at PAN 2020"): TF-IDF profiles of character n-grams (and a few word and
punctuation views) are fitted on the training texts; each pair becomes the cosine similarities of its two
texts under every view, and a logistic regression turns those similarities into a probability.

Scores follow PAN's evaluator: AUC; c@1 (Peñas & Rodrigo 2011), where a probability within ``margin`` of
0.5 counts as a non-answer and is rewarded by the accuracy of the answered pairs; F1 over the answered
pairs; F0.5u (Bevendorff et al. 2019), which counts non-answers as false negatives; Brier (as PAN's
complement, 1 - Brier score); and ``overall``, their mean.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlmh import hookimpl
from mlmh.components import InputsOnly, Task
from mlmh.params import Param
from mlmh.types import Corpus, Pair, TaskResult

#: (name, TfidfVectorizer keyword arguments): every view yields one cosine similarity per pair.
VIEWS: tuple[tuple[str, dict[str, Any]], ...] = (
    *((f"char{n}", {"analyzer": "char", "ngram_range": (n, n)}) for n in (1, 2, 3, 4, 5)),
    ("word1", {"analyzer": "word", "ngram_range": (1, 1), "token_pattern": r"(?u)\b\w+\b", "lowercase": False}),
    ("word2", {"analyzer": "word", "ngram_range": (2, 2), "token_pattern": r"(?u)\b\w+\b"}),
    ("punct", {"analyzer": "char", "ngram_range": (1, 3), "preprocessor": lambda t: "".join(c if not c.isalnum() else "x" for c in t)}),
)


def pan_scores(truth: np.ndarray, probability: np.ndarray, margin: float) -> dict[str, float]:
    """PAN's verification measures for binary ``truth`` and predicted probabilities of "same"."""
    from sklearn.metrics import brier_score_loss, f1_score, roc_auc_score

    answers = np.where(np.abs(probability - 0.5) <= margin, 0.5, probability)
    answered = answers != 0.5
    predicted = answers > 0.5
    n = len(truth)
    correct = int(np.sum(predicted[answered] == truth[answered]))
    unanswered = int(n - answered.sum())
    c_at_1 = (correct + unanswered * correct / n) / n
    f1 = float(f1_score(truth[answered], predicted[answered], zero_division=0)) if answered.any() else 0.0
    tp = int(np.sum(predicted & answered & truth))
    fn = int(np.sum(~predicted & answered & truth))
    fp = int(np.sum(predicted & answered & ~truth))
    denominator = 1.25 * tp + 0.25 * (fn + unanswered) + fp
    f05u = 1.25 * tp / denominator if denominator else 0.0
    scores = {
        "auc": float(roc_auc_score(truth, answers)),
        "c@1": float(c_at_1),
        "f1": f1,
        "f_05_u": float(f05u),
        "brier": float(1.0 - brier_score_loss(truth, answers)),
    }
    scores["overall"] = float(np.mean(list(scores.values())))
    return scores


class PairFeatures:
    """Cosine similarities of a pair's texts under each TF-IDF view fitted on the training texts.

    The training texts' rows come from the fit itself (``fit_transform``), and every other text is
    transformed once however many pairs it is in: analysing the texts is the task's whole cost.
    """

    def __init__(self, texts: dict[str, str]) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.texts = dict(texts)
        self.row_of = {doc: row for row, doc in enumerate(self.texts)}
        self.views = []
        for _, kwargs in VIEWS:
            vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=1, **kwargs)
            self.views.append((vectorizer, vectorizer.fit_transform(list(self.texts.values())).tocsr()))

    def __call__(self, pairs: list[Pair], texts: dict[str, str]) -> np.ndarray:
        from scipy.sparse import vstack

        docs = list(dict.fromkeys(d for p in pairs for d in (p.a, p.b)))
        fitted = [d for d in docs if self.texts.get(d) == texts[d]]  # the same text under the same id
        other = [d for d in docs if self.texts.get(d) != texts[d]]
        position = {d: n for n, d in enumerate(fitted + other)}
        a = [position[p.a] for p in pairs]
        b = [position[p.b] for p in pairs]
        columns = []
        for vectorizer, rows in self.views:
            parts = [rows[[self.row_of[d] for d in fitted]]] if fitted else []
            if other:
                parts.append(vectorizer.transform([texts[d] for d in other]))
            matrix = vstack(parts).tocsr()
            columns.append(np.asarray(matrix[a].multiply(matrix[b]).sum(axis=1)).ravel())  # rows are L2-normalised
        return np.column_stack(columns)


def usable_pairs(corpus: Corpus, split: str) -> tuple[list[Pair], dict[str, str], int]:
    """Pairs of ``split`` whose two documents exist, the texts they need, and how many were missing."""
    texts = {d.id: d.text for d in corpus.documents}
    pairs = [p for p in corpus.pairs if p.split == split]
    kept = [p for p in pairs if p.a in texts and p.b in texts]
    return kept, texts, len(pairs) - len(kept)


class AuthorshipVerification(InputsOnly, Task):
    name = "authorship-verification"
    description = "PAN pair task: char n-gram TF-IDF similarities + logistic regression; AUC, c@1, F1, F0.5u, Brier"
    requires = frozenset({"pairs"})
    parameters = (
        Param("C", float, 1.0, "inverse regularisation strength of the logistic regression", min=1e-6),
        Param("margin", float, 0.05, "probabilities within this distance of 0.5 are non-answers (PAN's c@1)", min=0.0, max=0.5),
    )

    def run(self, train: Corpus, test: Corpus, *, seed: int = 0) -> TaskResult:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        train_pairs, train_texts, train_missing = usable_pairs(train, "train")
        test_pairs, test_texts, test_missing = usable_pairs(test, "test")
        info: dict[str, Any] = {"views": [name for name, _ in VIEWS], "margin": self.params["margin"]}
        if train_missing or test_missing:
            info["pairs_without_documents"] = {"train": train_missing, "test": test_missing}
        failure = _class_problem(train_pairs, "training") or _class_problem(test_pairs, "test")
        if failure:
            return TaskResult(self.name, {}, len(train_pairs), len(test_pairs), info, error=failure)
        used = sorted({d for p in train_pairs for d in (p.a, p.b)})
        features = PairFeatures({d: train_texts[d] for d in used})
        model = make_pipeline(StandardScaler(), LogisticRegression(C=self.params["C"], max_iter=2000, random_state=seed))
        model.fit(features(train_pairs, train_texts), np.array([p.same for p in train_pairs]))
        probability = model.predict_proba(features(test_pairs, test_texts))[:, 1]
        truth = np.array([p.same for p in test_pairs])
        scores = pan_scores(truth, probability, self.params["margin"])
        info["non_answers"] = int(np.sum(np.abs(probability - 0.5) <= self.params["margin"]))
        # per test pair, PAN's Brier complement (its mean is the "brier" score): paired CIs across training sets;
        # a verifier with no training data answers 0.5 everywhere, which scores 0.75
        answers = np.where(np.abs(probability - 0.5) <= self.params["margin"], 0.5, probability)
        info["per_item"] = {"brier": [float(x) for x in 1.0 - (answers - truth) ** 2]}
        info["chance"] = {"auc": 0.5, "c@1": float(max(truth.mean(), 1 - truth.mean())), "brier": 0.75}
        # the best constant predictor: the training pairs' share of same-author pairs for every test pair
        prior = float(np.mean([p.same for p in train_pairs]))
        constant = 0.5 if abs(prior - 0.5) <= self.params["margin"] else prior
        info["constant"] = {"brier": [float(x) for x in 1.0 - (constant - truth) ** 2]}
        return TaskResult(self.name, scores, len(train_pairs), len(test_pairs), info)


def _class_problem(pairs: list[Pair], what: str) -> str | None:
    if not pairs:
        return f"no {what} pairs"
    classes = {p.same for p in pairs}
    if len(classes) < 2:
        return f"{what} pairs are all {'same' if True in classes else 'different'}-author; verification needs both classes"
    return None


@hookimpl
def register_tasks(register):
    register(AuthorshipVerification())
