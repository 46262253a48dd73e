"""The per-sample generation cache: SQLite in WAL mode, one transaction per finished batch.

A sample's key hashes everything that decides its generation: the model identity and tokenizer, the
document id and a hash of its text, the mask plan (the masked word indices, whatever masking code
chose them), the sampler spec with every parameter, the per-sample seed, and the identity of the code
(:mod:`mlmh.implementation`: the sampler's and the generation engine's distribution version and source
hash). Nothing that does not decide it goes in (batch size, order, output path). So a change to a
component's code never serves stale samples. So a killed run loses at
most the batch in flight, and ``--resume`` (or any later run of the same condition) regenerates only
what is missing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator, Sequence

from mlmh.errors import MlmhError
from mlmh.types import Generation, from_dict, to_dict

#: bump when the stored Generation layout or the key recipe changes
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


class SampleCache:
    """Generations by sample key. Safe to kill at any point: a batch is either stored whole or not at all."""

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


class NoCache:
    """Stands in for :class:`SampleCache` under ``--no-cache``: remembers nothing."""

    path = None

    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        return {}

    def put_many(self, entries: dict[str, Generation]) -> None:
        return None

    def close(self) -> None:
        return None
