"""The roles of a corpus's documents, and the rules that give a corpus its validation and control splits.

Models learn from ``train``, checkpoints are selected on ``validation``, and ``test`` holds the unseen
documents: never trained on, never selected on. A run may also hold ``control`` documents out of train
(:func:`with_control`): texts of the train groups that no model learns, so that memorisation is judged against
documents of the same authors rather than of new ones. A dataset declares each document's group (``Document.group``:
an author, a patient, a source) and no group ever sits in two splits: datasets hold out test by
:func:`hold_out`, and :func:`with_validation` carves validation out of train the same way, by a hash of the
group keys, so it does not depend on run seeds and every model, run and machine selects on the same documents.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import Counter, defaultdict
from typing import Iterable, Sequence

import numpy as np

from mlmh.errors import DataError
from mlmh.machine.seeding import sample_seed
from mlmh.types import Corpus, Document

ROLES: dict[str, str] = {
    "train": "models learn from it; its regenerations become the synthetic training corpus",
    "validation": "checkpoint selection (early stopping); never trained on",
    "test": "unseen documents: downstream evaluation and memorization-free quality; never trained or selected on",
    "control": "texts of train groups that no model trains or selects on: what memorisation is judged against",
}
VALIDATION_FRACTION = 0.1
#: the fewest control documents a run holds out: two give a standard error. A small control set is kept rather than
#: traded for the seen - unseen comparison across groups: Welch's interval widens with it (so a gap on a few documents
#: reads as no evidence, not as memorisation) and holds its error rate at 8 documents (``mlmh calibrate``, tests/
#: test_calibrate.py), where the percentile bootstrap it replaced did not
CONTROL_MIN = 2


def group_key(document: Document) -> str:
    """The unit a split never cuts: the document's ``group`` (author, patient, source), else itself."""
    return f"group:{document.group}" if document.group is not None else f"document:{document.id}"


def hold_out(documents: Sequence[Document], fraction: float, seed: int, salt: str) -> set[str]:
    """Ids of the documents a dataset holds out as ``test``: whole groups (:func:`group_key`) in a seeded
    order, each taken while the held-out count is below ``round(fraction x documents)`` and it brings the
    count closer to that; at least one group, never all of them (none when there is only one). Where every
    document is its own group, this is a seeded ``fraction`` of the documents."""
    members: dict[str, list[str]] = defaultdict(list)
    for document in documents:
        members[group_key(document)].append(document.id)
    if len(members) < 2:
        return set()
    total = len(documents)
    ordered = sorted(members)
    rng = np.random.default_rng(sample_seed(seed, salt, "split"))
    return _fill((members[ordered[i]] for i in rng.permutation(len(ordered))),
                 min(total - 1, max(1, round(fraction * total))), total)


def with_validation(corpus: Corpus, fraction: float = VALIDATION_FRACTION) -> Corpus:
    """``corpus`` with its ``validation`` split set; the same object when it already has one.

    Validation is drawn the way test is: whole groups (:func:`group_key`: PAN's authors, MIMIC's patients)
    that no model trains on, so early stopping measures generalisation to new authors, not to the train
    authors' other texts. Groups are ranked by a hash of their key (no run seed: every model, run and
    machine selects on the same documents) and move until they hold ``fraction`` of the train documents
    (at least one group when there are two or more). Train verification pairs keep their documents
    together where the groups allow it; where pairs link (almost) every group into one, as in real PAN
    releases, the groups are taken alone and the train pairs that would cross are left out (counted in
    the notes). Test documents never move.
    """
    if not 0 < fraction < 1:
        raise DataError(f"validation fraction must be between 0 and 1; got {fraction}")
    if corpus.split("validation"):
        return corpus
    train = corpus.split("train")
    if len(train) < 2:
        return corpus
    wanted = max(1, round(fraction * len(train)))
    moved = _take_groups(_groups(corpus, train, link_pairs=True), wanted, len(train))
    crossing = 0
    if not moved or abs(len(moved) - wanted) > max(1, wanted // 2):
        moved = _take_groups(_groups(corpus, train, link_pairs=False), wanted, len(train))
    if not moved:
        return corpus
    documents = [dataclasses.replace(d, split="validation") if d.id in moved else d for d in corpus.documents]
    pairs = []
    for pair in corpus.pairs:
        if pair.split == "train" and (pair.a in moved) != (pair.b in moved):
            crossing += 1
            continue
        pairs.append(dataclasses.replace(pair, split="validation") if pair.split == "train" and pair.a in moved else pair)
    grouped = any(d.group is not None for d in train)
    unit = "whole groups (no group of train in validation)" if grouped else "documents"
    note = (f"validation split: {len(moved)} of {len(train)} train documents, {unit} chosen by a hash of their "
            "keys (checkpoint selection only)")
    notes = [*corpus.notes, note]
    if crossing:
        notes.append(f"validation split: {crossing} train pair(s) joining train and validation groups left out")
    return dataclasses.replace(corpus, documents=documents, pairs=pairs, notes=notes)


def with_control(corpus: Corpus, wanted: int | float) -> Corpus:
    """``corpus`` with ``wanted`` train documents (a count, or a fraction of train) moved to its ``control`` split;
    the same object for 0 or when it already has one.

    The control separates recall from learning the train authors' style: a model that learned how the train
    authors write scores their texts above a new author's without having memorised any of them, so a seen -
    unseen gap alone cannot tell the two apart (membership tests compare members with non-members of the same
    distribution; Carlini et al. 2021). Units are the train verification pairs (both documents move, the pair's
    split with them) and the documents in none, ranked by a hash of their ids (no run seed); one is taken while
    fewer than ``wanted`` documents have moved, when at most half of each of its groups' train documents would
    then have moved (every document is eligible where the dataset declares no groups), and when no train document
    left behind has its text (PAN reuses a text across pairs). Test and validation documents never move. Where fewer
    than :data:`CONTROL_MIN` documents can move, none does, and the notes say so.
    """
    if not wanted or corpus.split("control"):
        return corpus
    train = corpus.split("train")
    target = int(wanted) if isinstance(wanted, int) else round(wanted * len(train))
    if target < 1:
        return corpus
    grouped = any(d.group is not None for d in train)
    size = Counter(group_key(d) for d in train)
    texts = Counter(d.text for d in train)
    by_id = {d.id: d for d in train}
    units: list[tuple[str, ...]] = [(p.a, p.b) for p in corpus.pairs
                                    if p.split == "train" and p.a in by_id and p.b in by_id]
    paired = {doc for unit in units for doc in unit}
    units += [(d.id,) for d in train if d.id not in paired]
    moved: set[str] = set()
    taken: Counter[str] = Counter()
    for unit in sorted(units, key=lambda u: hashlib.sha256("\x1f".join(("control", *u)).encode("utf-8")).hexdigest()):
        if len(moved) >= target:
            break
        if any(texts[by_id[i].text] > 1 for i in unit) or moved.intersection(unit):
            continue
        adds = Counter(group_key(by_id[i]) for i in unit)
        if grouped and any(2 * (taken[g] + n) > size[g] for g, n in adds.items()):
            continue
        moved.update(unit)
        taken.update(adds)
    if len(moved) < CONTROL_MIN:
        return dataclasses.replace(corpus, notes=[*corpus.notes, (
            f"control split: none held out; {target} train document(s) asked, {len(moved)} could be held out (whole "
            f"pairs, at most half of each group's texts), and a control set under {CONTROL_MIN} documents has no "
            "standard error: memorisation is not judged, and the seen - unseen gap is reported as a group gap")])
    documents = [dataclasses.replace(d, split="control") if d.id in moved else d for d in corpus.documents]
    pairs, crossing = [], 0
    for pair in corpus.pairs:
        inside = (pair.a in moved) + (pair.b in moved) if pair.split == "train" else 0
        if inside == 1:  # a document in two pairs: the other pair would join train and control
            crossing += 1
            continue
        pairs.append(dataclasses.replace(pair, split="control") if inside == 2 else pair)
    groups = len({group_key(by_id[i]) for i in moved})
    drawn = f"{groups} train group(s), at most half of each group's" if grouped else "documents"
    notes = [*corpus.notes, f"control split: {len(moved)} of {len(train)} train documents ({drawn}) held out of "
             "training, chosen by a hash of their ids: what memorisation is judged against"]
    if crossing:
        notes.append(f"control split: {crossing} train pair(s) joining train and control documents left out")
    return dataclasses.replace(corpus, documents=documents, pairs=pairs, notes=notes)


def describe_validation(corpus: Corpus) -> str:
    """One line on what the validation split holds, for training cards and report.md."""
    validation = corpus.split("validation")
    if not validation:
        return "no validation split"
    groups = {d.group for d in validation if d.group is not None}
    train_groups = {d.group for d in corpus.split("train") if d.group is not None}
    if groups:
        shared = len(groups & train_groups)
        return (f"{len(validation)} documents of {len(groups)} group(s) that no model trains on"
                if not shared else f"{len(validation)} documents; {shared} of their {len(groups)} group(s) also in train")
    return f"{len(validation)} documents not trained on (the dataset declares no groups)"


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


def _groups(corpus: Corpus, train: Sequence[Document], link_pairs: bool) -> list[tuple[str, ...]]:
    """Train document ids grouped by :func:`group_key` and, with ``link_pairs``, by the train pairs that join them."""
    parent = {d.id: d.id for d in train}

    def find(doc_id: str) -> str:
        while parent[doc_id] != doc_id:
            parent[doc_id] = parent[parent[doc_id]]
            doc_id = parent[doc_id]
        return doc_id

    first_of: dict[str, str] = {}
    for document in train:
        parent[find(document.id)] = find(first_of.setdefault(group_key(document), document.id))
    if link_pairs:
        for pair in corpus.pairs:
            if pair.split == "train" and pair.a in parent and pair.b in parent:
                parent[find(pair.a)] = find(pair.b)
    groups: dict[str, list[str]] = defaultdict(list)
    for document in train:
        groups[find(document.id)].append(document.id)
    return [tuple(sorted(members)) for members in groups.values()]


def _take_groups(groups: list[tuple[str, ...]], wanted: int, total: int) -> set[str]:
    """Groups in hash order, each taken while it brings the moved count closer to ``wanted`` (none over
    twice ``wanted`` unless every group is); at least one train document stays."""
    ordered: list[tuple[str, ...]] = sorted(groups, key=_group_rank)
    moved = _fill(ordered, wanted, total, largest=2 * wanted)
    if not moved:  # every group is large: the smallest one that leaves train a document
        smallest = min((g for g in groups if len(g) < total), key=lambda g: (len(g), _group_rank(g)), default=())
        moved.update(smallest)
    return moved


def _fill(groups: Iterable[Sequence[str]], target: int, total: int, largest: int | None = None) -> set[str]:
    """The one rule of both splits: groups in the given order, each taken while it brings the taken count
    closer to ``target`` (the first always, unless it is over ``largest``), never all ``total`` documents."""
    taken: set[str] = set()
    for group in groups:
        if len(taken) + len(group) >= total or (largest is not None and len(group) > largest):
            continue
        if taken and abs(len(taken) + len(group) - target) >= abs(len(taken) - target):
            continue
        taken.update(group)
    return taken


def _group_rank(group: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    """A seed-free order of groups: the SHA-256 of their ids (ties, impossible in practice, by id)."""
    return hashlib.sha256("\x1f".join(("validation", *group)).encode("utf-8")).hexdigest(), group
