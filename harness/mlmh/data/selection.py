"""Which documents of a split a run regenerates: all, a seeded sample of a count, or a fraction, never
depending on the run's seeds; with verification pairs, whole pairs."""

from __future__ import annotations

import numpy as np

from mlmh.machine.seeding import sample_seed
from mlmh.types import Corpus, Document


def select_documents(corpus: Corpus, limit: int | float, split: str = "train") -> list[Document]:
    """The documents of ``split`` to regenerate: all, the first ``limit`` of a seeded shuffle, or a fraction.

    With verification pairs, whole pairs of the split are taken (same-author and different-author pairs
    alternating) so the synthetic corpus keeps usable pairs; the selection never depends on the run seeds.
    """
    pool = corpus.split(split)
    if not limit:
        return pool
    n = int(limit) if isinstance(limit, int) else max(1, round(limit * len(pool)))
    if n >= len(pool):
        return pool
    rng = np.random.default_rng(sample_seed(0, "select" if split == "train" else f"select|{split}", corpus.dataset))
    ids = {d.id for d in pool}
    chosen: list[str] = []
    pairs = [p for p in corpus.pairs if p.a in ids and p.b in ids]
    if pairs:
        same = [pairs[i] for i in rng.permutation(len(pairs)) if pairs[i].same]
        diff = [pairs[i] for i in rng.permutation(len(pairs)) if not pairs[i].same]
        for k in range(max(len(same), len(diff))):
            for group in (same, diff):
                if k < len(group) and len(chosen) < n:
                    chosen.extend(x for x in (group[k].a, group[k].b) if x not in chosen)
    for i in rng.permutation(len(pool)):
        if len(chosen) >= n:
            break
        if pool[i].id not in chosen:
            chosen.append(pool[i].id)
    keep = set(chosen)
    return [d for d in pool if d.id in keep]


def subcorpus(corpus: Corpus, documents: list[Document]) -> Corpus:
    """``corpus`` cut to ``documents``, with the verification pairs whose two documents it keeps."""
    ids = {d.id for d in documents}
    return Corpus(dataset=corpus.dataset, documents=list(documents), source=corpus.source,
                  pairs=[p for p in corpus.pairs if p.a in ids and p.b in ids], notes=list(corpus.notes))
