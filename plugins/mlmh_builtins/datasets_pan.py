"""The ``pan`` dataset: PAN authorship verification (PAN 2020-2022) in its official JSONL format.

Files: ``pairs.jsonl`` (``{"id", "fandoms", "pair": [text1, text2]}``) and ``truth.jsonl``
(``{"id", "same", "authors"}``); PAN's own names (``...-small.jsonl`` + ``...-small-truth.jsonl``)
are found too. Each pair text becomes one Document (id ``<pair id>-1`` / ``-2``) and each pair a Pair.
An ``entities.jsonl`` next to the files (a project extension, not part of PAN's format) adds
character/place spans for the ``ner`` masking; the bundled sample ships one.

Split rule (``protocol=open``, the default, as PAN 2021's author-disjoint test set): authors joined by a
pair stay on one side, so no author is in both splits. The connected groups of authors are taken in a
seeded order and put into test while that brings the test share of pairs closer to ``test_fraction``.
When the pairs link (almost) all authors into one group, as in large real releases, authors are split
instead (a seeded ``test_fraction`` of them) and pairs that cross the split are left out and counted in
``Corpus.notes``. ``protocol=closed`` (PAN 2020's closed set) splits pairs, stratified by same/different,
and lets authors appear on both sides.
"""

from __future__ import annotations

from pathlib import Path

from mlmh import hookimpl
from mlmh.components import Dataset
from mlmh.errors import DataError
from mlmh.params import Param
from mlmh.storage.jsonl import read_jsonl
from mlmh.types import Corpus, Document, Pair
from mlmh_builtins.dataset_support import (
    ENTITIES_FILE,
    attach_entity_file,
    bundled_samples_check,
    data_root,
    require_file,
    seeded_permutation,
    seeded_test_set,
    short_documents_note,
    split_params,
)


def find_pan_files(path: Path) -> tuple[Path, Path]:
    """(pairs file, truth file) for a directory or a pairs file."""
    if path.is_dir():
        if (path / "pairs.jsonl").is_file():
            return path / "pairs.jsonl", require_file(path / "truth.jsonl", "PAN truth file truth.jsonl")
        candidates = sorted(p for p in path.glob("*.jsonl") if not p.name.endswith("-truth.jsonl") and p.name != ENTITIES_FILE)
        if not candidates:
            raise DataError(f"{path}: no PAN pairs file (pairs.jsonl or *.jsonl with a *-truth.jsonl) found")
        path = candidates[0]
    require_file(path, "PAN pairs file")
    stem = path.name[: -len(".jsonl")] if path.name.endswith(".jsonl") else path.stem
    for truth in (path.with_name(f"{stem}-truth.jsonl"), path.with_name("truth.jsonl")):
        if truth.is_file():
            return path, truth
    raise DataError(f"{path}: no truth file next to it ({stem}-truth.jsonl or truth.jsonl)")


def _read_pairs(path: Path) -> dict[str, tuple[int, list[str], list[str]]]:
    pairs: dict[str, tuple[int, list[str], list[str]]] = {}
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        pair_id, texts = row.get("id"), row.get("pair")
        if not isinstance(pair_id, str) or not pair_id:
            raise DataError(f"{where}: missing 'id' (expected columns id, fandoms, pair)")
        if not isinstance(texts, list) or len(texts) != 2 or not all(isinstance(t, str) for t in texts):
            raise DataError(f"{where}: 'pair' must be a list of two texts")
        if pair_id in pairs:
            raise DataError(f"{where}: duplicate pair id {pair_id!r} (first on line {pairs[pair_id][0]})")
        fandoms = row.get("fandoms") or []
        pairs[pair_id] = (number, texts, [str(f) for f in fandoms] if isinstance(fandoms, list) else [str(fandoms)])
    return pairs


def _read_truth(path: Path, pairs: dict, pairs_path: Path, need_authors: bool) -> dict[str, tuple[bool, list[str]]]:
    truth: dict[str, tuple[bool, list[str]]] = {}
    for number, row in read_jsonl(path):
        where = f"{path}:{number}"
        pair_id, same, authors = row.get("id"), row.get("same"), row.get("authors")
        if not isinstance(pair_id, str) or not isinstance(same, bool):
            raise DataError(f"{where}: expected {{\"id\": str, \"same\": true|false, \"authors\": [a, b]}}")
        if pair_id not in pairs:
            raise DataError(f"{where}: truth id {pair_id!r} matches no pair in {pairs_path.name}")
        if pair_id in truth:
            raise DataError(f"{where}: duplicate truth for pair {pair_id!r}")
        if authors is None and not need_authors:
            authors = []
        if not isinstance(authors, list) or (authors and len(authors) != 2):
            raise DataError(f"{where}: 'authors' must list the two authors" + (" (the open protocol splits by author; use protocol=closed)" if need_authors else ""))
        authors = [str(a) for a in authors]
        if authors and same != (authors[0] == authors[1]):
            raise DataError(f"{where}: 'same' is {str(same).lower()} but authors are {authors}")
        truth[pair_id] = (same, authors)
    missing = [pid for pid in pairs if pid not in truth]
    if missing:
        line = pairs[missing[0]][0]
        raise DataError(f"{pairs_path}:{line}: pair {missing[0]!r} has no truth in {path.name} ({len(missing)} pair(s) without truth)")
    return truth


def split_pairs_open(authors_of: dict[str, list[str]], seed: int, fraction: float) -> tuple[dict[str, str], str]:
    """pair id -> "train" | "test" | "excluded" with no author on both sides, and how it was done."""
    parent: dict[str, str] = {}

    def find(a: str) -> str:
        while parent.setdefault(a, a) != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for a, b in authors_of.values():
        parent[find(a)] = find(b)
    groups: dict[str, list[str]] = {}
    for pair_id, (a, _) in authors_of.items():
        groups.setdefault(find(a), []).append(pair_id)
    total = len(authors_of)
    test_groups: set[str] = set()
    share = 0.0
    for root in seeded_permutation(list(groups), seed, "pan-groups"):
        added = share + len(groups[root]) / total
        if abs(added - fraction) < abs(share - fraction) and len(test_groups) + 1 < len(groups):
            test_groups.add(root)
            share = added
    if test_groups and abs(share - fraction) <= fraction / 2:
        assignment = {pid: ("test" if find(authors_of[pid][0]) in test_groups else "train") for pid in authors_of}
        return assignment, f"author groups linked by pairs kept on one side ({len(test_groups)} of {len(groups)} groups in test)"
    all_authors = sorted({a for pair in authors_of.values() for a in pair})
    test_authors = seeded_test_set(all_authors, seed, fraction, "pan-authors")
    assignment = {}
    for pid, (a, b) in authors_of.items():
        sides = {a in test_authors, b in test_authors}
        assignment[pid] = "excluded" if len(sides) == 2 else ("test" if True in sides else "train")
    return assignment, f"authors split ({len(test_authors)} of {len(all_authors)} in test); pairs crossing the split left out"


def split_pairs_closed(same_of: dict[str, bool], seed: int, fraction: float) -> dict[str, str]:
    """Pair-level split stratified by same/different (authors may appear on both sides)."""
    assignment = {}
    for label in (True, False):
        ids = [pid for pid, same in same_of.items() if same is label]
        test = seeded_test_set(ids, seed, fraction, f"pan-pairs-{label}")
        assignment.update({pid: ("test" if pid in test else "train") for pid in ids})
    return assignment


class PanDataset(Dataset):
    name = "pan"
    tasks = ("authorship-verification",)  # the paper's downstream task on this dataset
    default = True  # the bundled sample of prose the faces fall back on (mlmh.config.declared.default_dataset)
    description = "PAN authorship verification pairs (pairs.jsonl + truth.jsonl); bundled sample of 16 project-written authors"
    parameters = (
        *split_params(0.3),
        Param("protocol", str, "open", "open: no author in both splits (PAN 2021); closed: pairs split, authors shared (PAN 2020)", choices=("open", "closed")),
    )

    def load(self, path: str | None) -> Corpus:
        root, source = data_root(path, "pan", "a directory with pairs.jsonl and truth.jsonl")
        pairs_path, truth_path = find_pan_files(root)
        open_protocol = self.params["protocol"] == "open"
        raw_pairs = _read_pairs(pairs_path)
        if not raw_pairs:
            raise DataError(f"{pairs_path}: no pairs (the file is empty or has only blank lines)")
        truth = _read_truth(truth_path, raw_pairs, pairs_path, need_authors=open_protocol)
        notes: list[str] = []
        empty = [pid for pid, (_, texts, _) in raw_pairs.items() if not all(t.strip() for t in texts)]
        if empty:
            notes.append(f"{pairs_path.name}: {len(empty)} pair(s) with an empty text dropped (first: line {raw_pairs[empty[0]][0]})")
        dropped = set(empty)
        kept = [pid for pid in raw_pairs if pid not in dropped]
        if not kept:
            raise DataError(f"{pairs_path}: every pair has an empty text; no pairs left")
        classes = {truth[pid][0] for pid in kept}
        if len(classes) < 2:
            only = "same-author" if True in classes else "different-author"
            raise DataError(f"{truth_path}: every pair is {only}; verification needs both classes")
        seed, fraction = self.params["seed"], self.params["test_fraction"]
        if open_protocol:
            split_of, how = split_pairs_open({pid: truth[pid][1] for pid in kept}, seed, fraction)
        else:
            split_of, how = split_pairs_closed({pid: truth[pid][0] for pid in kept}, seed, fraction), "pairs split by same/different (closed set)"
        excluded = sum(1 for s in split_of.values() if s == "excluded")
        notes.append(f"split: {how}")
        if excluded:
            notes.append(f"{excluded} pair(s) cross the author split and were left out")
        documents: list[Document] = []
        pairs: list[Pair] = []
        for pid in kept:
            split = split_of[pid]
            if split == "excluded":
                continue
            _, texts, fandoms = raw_pairs[pid]
            same, authors = truth[pid]
            ids = []
            for index, text in enumerate(texts):
                doc_id = f"{pid}-{index + 1}"
                ids.append(doc_id)
                meta = {"pair": pid, "fandom": fandoms[index] if index < len(fandoms) else None}
                author = authors[index] if authors else None
                documents.append(Document(id=doc_id, text=text, split=split, author=author, group=author, meta=meta))
            pairs.append(Pair(id=pid, a=ids[0], b=ids[1], same=same, split=split))
        for side in ("train", "test"):
            labels = {p.same for p in pairs if p.split == side}
            if len(labels) < 2:
                notes.append(f"warning: the {side} split has only {'same' if True in labels else 'different'}-author pairs; verification cannot be scored on it (try another seed or test_fraction)")
        attach_entity_file(root / ENTITIES_FILE if root.is_dir() else pairs_path.with_name(ENTITIES_FILE), documents, notes)
        short = short_documents_note(documents, pairs_path.name)
        if short:
            notes.append(short)
        return Corpus(dataset="pan", documents=documents, source=source, pairs=pairs, notes=notes)


@hookimpl
def register_datasets(register):
    register(PanDataset())


@hookimpl
def register_checks(register):
    register("bundled samples", bundled_samples_check)  # of every builtin dataset (mlmh_builtins.dataset_support)
