"""The ``ner`` task: token classification of the dataset's entity spans with a linear-chain CRF.

Words come from the shared pre-tokenization (:func:`mlmh.words.split_words`); a sequence ends at a line
break or after sentence-final punctuation followed by a space (so "12.5 mg" stays whole). Entities become
BIO tags word by word; each fragment of a discontinuous entity is tagged as its own chunk (BIO cannot
express gaps), the same way for training and test, and a span overlapping an already tagged word is
skipped and counted. The CRF (Lafferty et al. 2001, via sklearn-crfsuite) uses the classic word-shape and
context features of CoNLL taggers. Scores are entity-level precision/recall/F1 with exact span and type
match (seqeval, strict IOB2), and ``document_f1``, the mean over the test documents that have entities of each one's
own F1: its per-document values are what paired CIs across training sets are taken over.
"""

from __future__ import annotations

from typing import Any

from mlmh import hookimpl
from mlmh.components import InputsOnly, Task
from mlmh.params import Param
from mlmh.types import Corpus, Document, TaskResult
from mlmh.words import SENTENCE_ENDS, split_words


def bio_sequences(document: Document) -> tuple[list[list[str]], list[list[str]], int]:
    """(word sequences, BIO tag sequences, number of entity fragments skipped for overlapping)."""
    words = split_words(document.text)
    tags = ["O"] * len(words)
    overlapping = 0
    fragments = sorted(
        ((s, e, entity.label) for entity in document.entities for s, e in (entity.fragments or ((entity.start, entity.end),))),
        key=lambda f: (f[0], -(f[1] - f[0])),
    )
    for start, end, label in fragments:
        covered = [i for i, (ws, we) in enumerate(words.spans) if ws < end and we > start]
        if not covered:
            continue
        if any(tags[i] != "O" for i in covered):
            overlapping += 1
            continue
        tags[covered[0]] = f"B-{label}"
        for i in covered[1:]:
            tags[i] = f"I-{label}"
    sequences: list[list[str]] = []
    tag_sequences: list[list[str]] = []
    current: list[str] = []
    current_tags: list[str] = []
    text = document.text
    for i, (start, end) in enumerate(words.spans):
        current.append(text[start:end])
        current_tags.append(tags[i])
        following = words.spans[i + 1][0] if i + 1 < len(words) else len(text)
        gap = text[end:following]
        if i + 1 == len(words) or "\n" in gap or (text[start:end] in SENTENCE_ENDS and gap[:1].isspace()):
            sequences.append(current)
            tag_sequences.append(_repair(current_tags))
            current, current_tags = [], []
    return sequences, tag_sequences, overlapping


def _repair(tags: list[str]) -> list[str]:
    """A chunk cut by a sequence boundary restarts with B- in the next sequence."""
    fixed = list(tags)
    for i, tag in enumerate(fixed):
        if tag.startswith("I-") and (i == 0 or fixed[i - 1][2:] != tag[2:]):
            fixed[i] = "B-" + tag[2:]
    return fixed


def _shape(word: str) -> str:
    out: list[str] = []
    for ch in word:
        kind = "X" if ch.isupper() else "x" if ch.islower() else "d" if ch.isdigit() else ch
        if not out or out[-1] != kind:
            out.append(kind)
    return "".join(out)


def word_features(sentence: list[str], i: int) -> dict[str, Any]:
    word = sentence[i]
    features: dict[str, Any] = {
        "bias": 1.0,
        "lower": word.lower(),
        "suffix3": word[-3:].lower(),
        "suffix2": word[-2:].lower(),
        "prefix3": word[:3].lower(),
        "shape": _shape(word),
        "is_title": word.istitle(),
        "is_upper": word.isupper(),
        "is_digit": word.isdigit(),
        "has_digit": any(c.isdigit() for c in word),
        "length": min(len(word), 10),
    }
    for offset in (-2, -1, 1, 2):
        j = i + offset
        if 0 <= j < len(sentence):
            features[f"{offset}:lower"] = sentence[j].lower()
            features[f"{offset}:shape"] = _shape(sentence[j])
        else:
            features[f"{offset}:edge"] = True
    return features


def featurize(sentences: list[list[str]]) -> list[list[dict[str, Any]]]:
    return [[word_features(s, i) for i in range(len(s))] for s in sentences]


def corpus_sequences(documents: list[Document]) -> tuple[list[list[str]], list[list[str]], int]:
    words: list[list[str]] = []
    tags: list[list[str]] = []
    overlapping = 0
    for document in documents:
        w, t, o = bio_sequences(document)
        words += w
        tags += t
        overlapping += o
    return words, tags, overlapping


class NamedEntityRecognition(InputsOnly, Task):
    name = "ner"
    description = "token classification of entity spans: CRF on word features (BIO); entity-level P/R/F1 (seqeval strict)"
    requires = frozenset({"entities"})
    parameters = (
        Param("c1", float, 0.05, "L1 regularisation of the CRF", min=0.0),
        Param("c2", float, 0.05, "L2 regularisation of the CRF", min=0.0),
        Param("max_iterations", int, 60, "L-BFGS iterations of the CRF", min=1),
    )

    def run(self, train: Corpus, test: Corpus, *, seed: int = 0) -> TaskResult:
        import sklearn_crfsuite
        from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
        from seqeval.scheme import IOB2

        train_docs, test_docs = train.split("train"), test.split("test")
        x_words, y_train, overlap_train = corpus_sequences(train_docs)
        t_words, y_test, overlap_test = corpus_sequences(test_docs)
        info: dict[str, Any] = {"overlapping_fragments_skipped": {"train": overlap_train, "test": overlap_test}}
        train_labels = sorted({tag[2:] for seq in y_train for tag in seq if tag != "O"})
        if not train_labels:
            return TaskResult(self.name, {}, len(train_docs), len(test_docs), info, error="training texts carry no entities")
        if not any(tag != "O" for seq in y_test for tag in seq):
            return TaskResult(self.name, {}, len(train_docs), len(test_docs), info, error="test texts carry no entities")
        crf = sklearn_crfsuite.CRF(algorithm="lbfgs", c1=self.params["c1"], c2=self.params["c2"], max_iterations=self.params["max_iterations"], all_possible_transitions=True)
        crf.fit(featurize(x_words), y_train)
        predicted = crf.predict(featurize(t_words))
        strict = {"mode": "strict", "scheme": IOB2, "zero_division": 0}
        scores = {
            "precision": float(precision_score(y_test, predicted, **strict)),
            "recall": float(recall_score(y_test, predicted, **strict)),
            "f1": float(f1_score(y_test, predicted, **strict)),
        }
        # per test document that has entities, its own strict entity F1 (their mean is document_f1): paired CIs across
        # training sets; with no training data, as with the best constant predictor (every word O), a tagger finds no
        # entity and scores 0 on each
        per_document, start = [], 0
        for document in test_docs:
            count = len(bio_sequences(document)[0])
            gold, guess = y_test[start:start + count], predicted[start:start + count]
            start += count
            if any(tag != "O" for seq in gold for tag in seq):
                per_document.append(float(f1_score(gold, guess, **strict)))
        scores["document_f1"] = float(sum(per_document) / len(per_document))
        info["per_item"] = {"document_f1": per_document}
        info["chance"] = {"f1": 0.0, "document_f1": 0.0}
        info["constant"] = {"document_f1": [0.0] * len(per_document)}
        report = classification_report(y_test, predicted, output_dict=True, **strict)
        info["per_label_f1"] = {label: float(v["f1-score"]) for label, v in report.items() if "avg" not in label}
        info["labels"] = train_labels
        info["sequences"] = {"train": len(x_words), "test": len(t_words)}
        return TaskResult(self.name, scores, len(train_docs), len(test_docs), info)


@hookimpl
def register_tasks(register):
    register(NamedEntityRecognition())
