"""The run cache: generations per sample, and the metric scores of each scored set of them. SQLite in
WAL mode, one transaction per finished batch.

A sample's key hashes everything that decides its generation: the model identity and tokenizer, the
document id and a hash of its text, the mask plan (the masked word indices, whatever masking code
chose them), the sampler spec with every parameter, the per-sample seed, and the identity of the code
(:mod:`mlmh.implementation`: the sampler's and the generation engine's distribution version and source
hash). Nothing that does not decide it goes in (batch size, order, output path). So a change to a
component's code never serves stale samples. So a killed run loses at
most the batch in flight, and ``--resume`` (or any later run of the same condition) regenerates only
what is missing.

A score's key hashes the metric spec, the metric's code identity, the versions of the model and metric
libraries (:data:`mlmh.implementation.LIBRARIES`), what else the metric says its scores depend on
(:meth:`mlmh.components.Metric.cache_identity`: a scoring model's files, WordNet), the seed, and every
scored item whole (prediction, reference, the generation with its traces). A metric that names no
identity (the default for plugins) is never cached, nor is a result with an error. So a run over cached
samples scores nothing again, and a changed metric, library or scoring model scores everything again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Sequence

from mlmh.errors import MlmhError
from mlmh.types import Generation, MetricResult, from_dict, to_dict

if TYPE_CHECKING:
    from mlmh.components import Metric, ScoringItem

#: bump when the stored Generation or MetricResult layout or a key recipe changes
SCHEMA = 2


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def sample_key(*, model: str, tokenizer: str, doc_id: str, text: str, masked_words: Sequence[int], masking: str,
               sampler: str, code: str, seed: int) -> str:
    """The cache key of one sample (see the module docstring for what goes in); ``code`` is the
    implementation identity of the sampler and the engine."""
    parts = {
        "schema": SCHEMA,
        "model": model,
        "tokenizer": tokenizer,
        "doc": doc_id,
        "text": text_hash(text),
        "mask": list(masked_words),
        "masking": masking,
        "sampler": sampler,
        "code": code,
        "seed": seed,
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def items_digest(items: Sequence["ScoringItem"]) -> str:
    """One hash of a scored set, in order: each item's prediction, reference and whole generation."""
    digest = hashlib.sha256()
    for item in items:
        digest.update(json.dumps([item.prediction, item.reference, item.generation], default=_field_values).encode())
    return digest.hexdigest()


def _field_values(value: Any) -> Any:
    """JSON's fallback for :func:`items_digest`: a dataclass as the list of its field values (the
    encoder's C loop does the rest, where :func:`~mlmh.types.to_dict` would walk every step in Python)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    if isinstance(value, (set, frozenset)):
        return sorted(value)
    raise TypeError(f"cannot hash a {type(value).__name__} in a scored item")


def score_key(*, metric: str, code: str, libraries: Sequence[tuple[str, str | None]], inputs: str, seed: int,
              items: str) -> str:
    """The cache key of one metric on one scored set (see the module docstring); ``inputs`` is the
    metric's :meth:`~mlmh.components.Metric.cache_identity`, ``items`` an :func:`items_digest`."""
    parts = {"schema": SCHEMA, "metric": metric, "code": code, "libraries": [list(p) for p in libraries],
             "inputs": inputs, "seed": seed, "items": items}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class SampleCache:
    """Generations by sample key, and metric results by score key. Safe to kill at any point: a batch
    is either stored whole or not at all."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS samples (key TEXT PRIMARY KEY, generation TEXT NOT NULL, created REAL NOT NULL)"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS scores (key TEXT PRIMARY KEY, results TEXT NOT NULL, created REAL NOT NULL)"
            )
        except sqlite3.Error as exc:
            raise MlmhError(f"sample cache {self.path} cannot be opened: {exc}; delete it or pass --no-cache") from None

    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        keys = list(keys)
        found: dict[str, Generation] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, payload in self._db.execute(f"SELECT key, generation FROM samples WHERE key IN ({marks})", chunk):
                found[key] = from_dict(Generation, json.loads(payload))
        return found

    def put_many(self, entries: dict[str, Generation]) -> None:
        """Store one finished batch in a single transaction."""
        now = time.time()
        rows = [(key, json.dumps(to_dict(gen), ensure_ascii=False), now) for key, gen in entries.items()]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO samples (key, generation, created) VALUES (?, ?, ?)", rows)

    def get_scores(self, key: str) -> list[MetricResult] | None:
        row = self._db.execute("SELECT results FROM scores WHERE key = ?", (key,)).fetchone()
        return None if row is None else [from_dict(MetricResult, r) for r in json.loads(row[0])]

    def put_scores(self, key: str, results: Sequence[MetricResult]) -> None:
        payload = json.dumps([to_dict(r) for r in results], ensure_ascii=False)
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO scores (key, results, created) VALUES (?, ?, ?)",
                             (key, payload, time.time()))

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")


class ScoreLookup:
    """A run's scores in ``cache``: their keys, lookups, and how many were found.

    A metric's :meth:`~mlmh.components.Metric.cache_identity` is asked at each lookup until it names
    one, then kept for the run (the first METEOR call may assemble WordNet); while it names none, the
    metric's scores are neither looked up nor kept.
    """

    def __init__(self, cache: SampleCache) -> None:
        self.cache = cache
        self.found = 0
        self._identities: dict[str, str] = {}

    def key(self, metric: "Metric", seed: int, digest: str) -> str | None:
        """The score key of ``metric`` on the set whose :func:`items_digest` is ``digest``, if cacheable."""
        from mlmh.implementation import implementation_id, library_versions

        if metric.spec not in self._identities:
            identity = metric.cache_identity()
            if identity is None:
                return None
            self._identities[metric.spec] = identity
        return score_key(metric=metric.spec, code=implementation_id(metric), libraries=library_versions(),
                         inputs=self._identities[metric.spec], seed=seed, items=digest)

    def get(self, key: str | None) -> list[MetricResult] | None:
        found = self.cache.get_scores(key) if key else None
        self.found += found is not None
        return found

    def put(self, key: str | None, results: list[MetricResult]) -> None:
        """Keep ``results`` unless one is an error (a missing model or WordNet may be there next time)."""
        if key and not any(r.error for r in results):
            self.cache.put_scores(key, results)
