"""The three roles of a corpus's documents, and the one rule that gives every corpus a validation split.

Models learn from ``train``, checkpoints are selected on ``validation``, and ``test`` holds the unseen
documents: never trained on, never selected on. Datasets ship train and test; :func:`with_validation`
carves validation out of train by a hash of the document ids, so it does not depend on run seeds and
every model, run and machine selects on the same documents.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict

from mlmh.errors import DataError
from mlmh.types import Corpus

ROLES: dict[str, str] = {
    "train": "models learn from it; its regenerations become the synthetic training corpus",
    "validation": "checkpoint selection (early stopping); never trained on",
    "test": "unseen documents: downstream evaluation and memorization-free quality; never trained or selected on",
}
VALIDATION_FRACTION = 0.1


def with_validation(corpus: Corpus, fraction: float = VALIDATION_FRACTION) -> Corpus:
    """``corpus`` with its ``validation`` split set; the same object when it already has one.

    Otherwise the train documents whose id hash ranks lowest move to ``validation`` until they are
    ``fraction`` of the train documents (at least one when there are two or more). Documents joined by
    a train verification pair move together, and such pairs become validation pairs, so no train pair
    loses a document. Test documents never move.
    """
    if not 0 < fraction < 1:
        raise DataError(f"validation fraction must be between 0 and 1; got {fraction}")
    if corpus.split("validation"):
        return corpus
    train_ids = [d.id for d in corpus.split("train")]
    if len(train_ids) < 2:
        return corpus
    wanted = max(1, round(fraction * len(train_ids)))
    moved: set[str] = set()
    for group in sorted(_pair_groups(corpus, set(train_ids)), key=_group_rank):
        if len(moved) >= wanted:
            break
        if len(moved) + len(group) >= len(train_ids):
            continue  # keep at least one train document
        moved.update(group)
    if not moved:
        return corpus
    documents = [dataclasses.replace(d, split="validation") if d.id in moved else d for d in corpus.documents]
    pairs = [dataclasses.replace(p, split="validation") if p.split == "train" and p.a in moved else p
             for p in corpus.pairs]
    note = (f"validation split: {len(moved)} of {len(train_ids)} train documents, chosen by a hash of their ids "
            "(checkpoint selection only)")
    return dataclasses.replace(corpus, documents=documents, pairs=pairs, notes=[*corpus.notes, note])


def check_roles(corpus: Corpus) -> None:
    """Raise :class:`DataError` naming the first document id that sits in two splits or a split
    outside :data:`ROLES`, or a pair whose documents are in different splits."""
    seen: dict[str, str] = {}
    for document in corpus.documents:
        if document.split not in ROLES:
            raise DataError(f"{corpus.dataset}: document {document.id!r} has split {document.split!r} "
                            f"(valid: {', '.join(ROLES)})")
        if seen.setdefault(document.id, document.split) != document.split:
            raise DataError(f"{corpus.dataset}: document {document.id!r} is in both {seen[document.id]!r} "
                            f"and {document.split!r}")
    for pair in corpus.pairs:
        if pair.split in ROLES and {seen.get(pair.a), seen.get(pair.b)} != {pair.split}:
            raise DataError(f"{corpus.dataset}: pair {pair.id!r} ({pair.split}) joins documents of splits "
                            f"{seen.get(pair.a)!r} and {seen.get(pair.b)!r}")


def _pair_groups(corpus: Corpus, train_ids: set[str]) -> list[tuple[str, ...]]:
    """Train documents grouped by the train pairs that join them (a lone document is its own group)."""
    parent = {doc_id: doc_id for doc_id in train_ids}

    def find(doc_id: str) -> str:
        while parent[doc_id] != doc_id:
            parent[doc_id] = parent[parent[doc_id]]
            doc_id = parent[doc_id]
        return doc_id

    for pair in corpus.pairs:
        if pair.split == "train" and pair.a in train_ids and pair.b in train_ids:
            parent[find(pair.a)] = find(pair.b)
    groups: dict[str, list[str]] = defaultdict(list)
    for doc_id in train_ids:
        groups[find(doc_id)].append(doc_id)
    return [tuple(sorted(members)) for members in groups.values()]


def _group_rank(group: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """A seed-free order of groups: the SHA-256 of their ids (ties, impossible in practice, by id)."""
    return hashlib.sha256("\x1f".join(("validation", *group)).encode("utf-8")).hexdigest(), group
