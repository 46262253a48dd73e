"""The run cache: generations per sample, and the results of metrics and downstream tasks on them.
SQLite in WAL mode, one transaction per finished batch.

A sample's key hashes everything that decides its generation: the model identity and tokenizer, the
document id and a hash of its text, the mask plan (the masked word indices, whatever masking code
chose them), the sampler spec with every parameter, the per-sample seed, and the identity of the code
(:mod:`mlmh.implementation`: the sampler's and the generation engine's distribution version and source
hash). Nothing that does not decide it goes in (batch size, order, output path). So a change to a
component's code never serves stale samples. So a killed run loses at
most the batch in flight, and ``--resume`` (or any later run of the same condition) regenerates only
what is missing.

A result's key hashes the metric's or task's spec and code identity, the versions of the model and
metric libraries (:data:`mlmh.implementation.LIBRARIES`), what else it says its results depend on
(:meth:`mlmh.components.Cached.cache_identity`: a scoring model's files, WordNet), the seed, and its
input whole: every scored item (prediction, reference, the generation with its traces), or the train
and test corpora of a task. A component that names no identity (the default for plugins) is never
cached, nor is a result with an error. So a run over cached samples scores and trains nothing again,
and a changed metric, task, library or scoring model computes its results again.

A claim's simulated null rate (:func:`mlmh.calibrate.null_rate_key`) is kept the same way: its key hashes the rule,
the run's structure, the runs simulated, the seed and the identity of the rules' code (``mlmh.calibrate``, ``mlmh.stats``
and every module of ``mlmh.findings``), so a warm rerun reads what took it minutes, and a changed rule simulates again.

A figure's key hashes what it plots, the plotting code and the matplotlib version
(:func:`mlmh.report.plots.figure_key`): a run whose results are those of an earlier run writes the same PNG
without drawing it again.

Every entry is validated where it is read (:meth:`SampleCache._decode`: JSON, then the shape of the
stored dataclass field by field), and a table whose columns are not the ones written here is set
aside: an entry that fails either check is treated as missing, so it is computed again and
overwritten, and :attr:`SampleCache.notes` says so once, naming the file. The file is created private
to the user (0600, its directory 0700): it holds whole documents.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import time
import types
import typing
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence, TypeVar

from mlmh.errors import MlmhError
from mlmh.types import Generation, from_dict, to_dict

R = TypeVar("R")


class CachedComponent(Protocol):
    """A metric or task that mixes in :class:`mlmh.components.Cached`: its kind and spec name its results."""

    @property
    def kind(self) -> str: ...

    @property
    def spec(self) -> str: ...

    def cache_identity(self) -> str | None: ...


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

#: bump when the stored Generation, MetricResult or TaskResult layout or a key recipe changes
SCHEMA = 2
#: the tables of the cache and their columns, as created here
TABLES = {"samples": ("key", "generation", "created"), "results": ("key", "payload", "created"),
          "figures": ("key", "png", "created")}


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


def content_digest(values: Iterable[Any]) -> str:
    """One hash of ``values`` in order, each whole: scored items (prediction, reference, the generation
    with its traces) or a task's corpora (every document, label and pair)."""
    digest = hashlib.sha256()
    for value in values:
        digest.update(json.dumps(value, default=_field_values).encode())
    return digest.hexdigest()


def _field_values(value: Any) -> Any:
    """JSON's fallback for :func:`content_digest`: a dataclass as the list of its field values (the
    encoder's C loop does the rest, where :func:`~mlmh.types.to_dict` would walk every step in Python).
    Anything else unknown hashes as its repr: at worst a result is computed again, never served stale."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [getattr(value, f.name) for f in dataclasses.fields(value)]
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    return repr(value)


def stored_json(value: Any) -> str:
    """``json.dumps(to_dict(value))``, with the dataclasses' fields handed to the encoder's C loop instead of
    walked in Python (:func:`~mlmh.types.to_dict` turned step traces into dicts for 9 % of a cold run's
    generation time); the same text. A value the encoder refuses (a key JSON has no form for) takes the
    slow path, which names keys by ``str``."""
    try:
        return json.dumps(value, default=_field_dict, ensure_ascii=False)
    except (TypeError, ValueError):
        return json.dumps(to_dict(value), ensure_ascii=False)


def _field_dict(value: Any) -> dict[str, Any]:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def result_key(*, kind: str, spec: str, code: str, libraries: Sequence[tuple[str, str | None]], inputs: str,
               seed: int, content: str) -> str:
    """The cache key of one metric or task (``kind``) on one input (see the module docstring):
    ``inputs`` is its :meth:`~mlmh.components.Cached.cache_identity`, ``content`` a :func:`content_digest`."""
    parts = {"schema": SCHEMA, "kind": kind, "spec": spec, "code": code, "libraries": [list(p) for p in libraries],
             "inputs": inputs, "seed": seed, "content": content}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


class SampleCache:
    """Generations by sample key, and metric and task results by result key. Safe to kill at any
    point: a batch is either stored whole or not at all."""

    def __init__(self, path: str | Path) -> None:
        from mlmh.machine.paths import private_dir, private_file

        self.path = Path(path)
        self.notes: list[str] = []
        try:
            private_dir(self.path.parent)
            private_file(self.path)
            self._db = sqlite3.connect(str(self.path), timeout=30, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            for table, (key, value, created) in TABLES.items():
                self._set_aside_if_foreign(table)
                self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} "
                                 f"({key} TEXT PRIMARY KEY, {value} TEXT NOT NULL, {created} REAL NOT NULL)")
        except (sqlite3.Error, OSError) as exc:
            raise MlmhError(self._failure(exc, "cannot be opened")) from None

    def _failure(self, exc: BaseException, what: str) -> str:
        """Why the cache failed, in one line: the environment when it is the cause (a read-only folder, a full
        disk: mlmh.machine.environment), so a good cache is never called damaged; else the file itself."""
        from mlmh.machine.environment import os_error_text, storage_problem

        problem = storage_problem(self.path.parent)
        if problem is None and self.path.exists() and not os.access(self.path, os.W_OK):
            problem = f"{self.path} is read-only (or not writable by you)"
        if problem is None and isinstance(exc, OSError) and exc.errno is not None:
            problem = os_error_text(exc)
        if problem is None and isinstance(exc, sqlite3.Error) and "full" in str(exc):
            problem = "the disk is full"
        if problem is None and isinstance(exc, sqlite3.Error) and "locked" in str(exc):
            problem = "another process holds it locked (another mlmh run?)"
        if problem is not None:
            return (f"sample cache {self.path} {what}: {problem}; the cache is not damaged: fix that, point "
                    "MLMH_CACHE_DIR at another folder, or pass --no-cache")
        return f"sample cache {self.path} {what}: {exc}; it may be damaged: delete it or pass --no-cache"

    def _set_aside_if_foreign(self, table: str) -> None:
        """A ``table`` whose columns are not the ones mlmh writes is dropped (its entries are missing,
        so they are computed again), with a note naming the file."""
        columns = tuple(row[1] for row in self._db.execute(f"PRAGMA table_info({table})"))
        if columns and columns != TABLES[table]:
            self._db.execute(f"DROP TABLE {table}")
            self._say(f"table '{table}' had columns ({', '.join(columns)}), not ({', '.join(TABLES[table])}); "
                      "it was dropped and its entries are computed again")

    def _say(self, text: str) -> None:
        note = f"sample cache {self.path}: {text}"
        if note not in self.notes:
            self.notes.append(note)

    def _decode(self, key: str, payload: Any, cls: type[R], many: bool) -> Any:
        """The one rule of every reader: a stored entry as ``cls`` (a list of them where ``many``), or
        None when it is not valid JSON of that shape; such an entry counts as missing, with a note."""
        try:
            data = json.loads(payload)
            rows = data if many else [data]
            if not isinstance(rows, list):
                raise ValueError("expected a list of results")
            for row in rows:
                _check_shape(cls, row)
            values = [from_dict(cls, row) for row in rows]
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            self._say(f"entry {key[:12]}... is unreadable ({type(exc).__name__}: {str(exc)[:120]}); it is "
                      "computed again")
            return None
        return values if many else values[0]

    def get_many(self, keys: Iterable[str]) -> dict[str, Generation]:
        keys = list(keys)
        found: dict[str, Generation] = {}
        for start in range(0, len(keys), 500):
            chunk = keys[start:start + 500]
            marks = ",".join("?" * len(chunk))
            for key, payload in self._db.execute(f"SELECT key, generation FROM samples WHERE key IN ({marks})", chunk):
                generation = self._decode(key, payload, Generation, many=False)
                if generation is not None:
                    found[key] = generation
        return found

    def put_many(self, entries: dict[str, Generation]) -> None:
        """Store one finished batch in a single transaction."""
        now = time.time()
        rows = [(key, stored_json(gen), now) for key, gen in entries.items()]
        with self._transaction():
            self._db.executemany("INSERT OR REPLACE INTO samples (key, generation, created) VALUES (?, ?, ?)", rows)

    def get_results(self, key: str, cls: type[R]) -> list[R] | None:
        """The results stored under ``key``, as ``cls`` instances (MetricResult, TaskResult), or None."""
        row = self._db.execute("SELECT payload FROM results WHERE key = ?", (key,)).fetchone()
        return None if row is None else self._decode(key, row[0], cls, many=True)

    def put_results(self, key: str, results: Sequence[Any]) -> None:
        payload = stored_json(list(results))
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO results (key, payload, created) VALUES (?, ?, ?)",
                             (key, payload, time.time()))

    def get_figure(self, key: str) -> bytes | None:
        """The PNG stored under ``key``, or None (an entry that is not a PNG counts as missing)."""
        row = self._db.execute("SELECT png FROM figures WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        if not isinstance(row[0], bytes) or not row[0].startswith(PNG_SIGNATURE):
            self._say(f"figure {key[:12]}... is not a PNG; it is drawn again")
            return None
        return row[0]

    def put_figure(self, key: str, png: bytes) -> None:
        with self._transaction():
            self._db.execute("INSERT OR REPLACE INTO figures (key, png, created) VALUES (?, ?, ?)",
                             (key, sqlite3.Binary(png), time.time()))

    def __len__(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write, whole or not at all; a write the disk or the folder refuses (full, read-only) is one line
        naming that, what was stored before kept."""
        try:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            if self._db.in_transaction:
                self._db.execute("ROLLBACK")
            raise MlmhError(self._failure(exc, "cannot be written")) from None


def _check_shape(cls: Any, data: Any) -> None:
    """Raise ValueError unless ``data`` is a dict whose keys are fields of dataclass ``cls`` (every
    field without a default present) and whose values have the fields' declared types, nested lists,
    dicts and dataclasses included (the checks :func:`~mlmh.types.from_dict` leaves to chance)."""
    if not isinstance(data, dict):
        raise ValueError(f"expected a {cls.__name__} object, got {type(data).__name__}")
    checks, required = _shape(cls)
    unknown = sorted(set(data) - set(checks))
    if unknown:
        raise ValueError(f"{cls.__name__}: unknown field(s) {', '.join(unknown)}")
    missing = [name for name in required if name not in data]
    if missing:
        raise ValueError(f"{cls.__name__}: missing field(s) {', '.join(missing)}")
    for name, value in data.items():
        hint, fits = checks[name]
        if not fits(value):
            raise ValueError(f"{cls.__name__}.{name}: {type(value).__name__} does not fit {hint}")


@functools.lru_cache(maxsize=None)
def _shape(cls: type) -> tuple[dict[str, tuple[Any, Callable[[Any], bool]]], tuple[str, ...]]:
    """Per field of dataclass ``cls``: its declared type and the check of a JSON value against it (made
    once per class: a cached step trace holds thousands of values); and the fields without a default."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)
    required = tuple(f.name for f in fields
                     if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)
    return {f.name: (hints[f.name], _fits(hints[f.name])) for f in fields}, required


#: the exact JSON types that stand for each scalar type (json.loads makes no subclasses; bool is no int here)
_SCALARS: dict[Any, tuple[type, ...]] = {str: (str,), int: (int,), float: (int, float), bool: (bool,),
                                         type(None): (type(None),)}


def _scalar_types(hint: Any) -> frozenset[type] | None:
    """The JSON types a scalar ``hint`` (or a union of scalars) accepts; None for any other hint."""
    if hint in _SCALARS:
        return frozenset(_SCALARS[hint])
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        parts = [_scalar_types(arg) for arg in typing.get_args(hint)]
        return None if None in parts else frozenset().union(*(part for part in parts if part is not None))
    return None


@functools.lru_cache(maxsize=None)
def _fits(hint: Any) -> Callable[[Any], bool]:
    """Whether a JSON value can stand for a field declared as ``hint`` (dict keys come back as strings).
    A list or dict of scalars is checked by the set of its values' types, not value by value."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return lambda value: True
    scalar = _scalar_types(hint)
    if scalar is not None:
        return lambda value: type(value) in scalar
    if origin in (typing.Union, types.UnionType):
        options = [_fits(arg) for arg in args]
        return lambda value: any(fits(value) for fits in options)
    if dataclasses.is_dataclass(hint):
        def fits_dataclass(value: Any) -> bool:
            try:
                _check_shape(hint, value)
            except ValueError:
                return False
            return True

        return fits_dataclass
    if origin in (list, tuple, Sequence) or hint in (list, tuple):
        return _fits_all(args[0], list, lambda value: value) if args else lambda value: isinstance(value, list)
    if origin is dict or hint is dict:
        return _fits_all(args[1], dict, dict.values) if args else lambda value: isinstance(value, dict)
    if isinstance(hint, type):
        return lambda value: isinstance(value, hint)
    return lambda value: True


def _fits_all(hint: Any, container: type, members: Callable[[Any], Any]) -> Callable[[Any], bool]:
    """A check that a value is a ``container`` whose ``members`` each fit ``hint``."""
    scalar = _scalar_types(hint)
    if scalar is not None:
        return lambda value: isinstance(value, container) and set(map(type, members(value))) <= scalar
    fits = _fits(hint)
    return lambda value: isinstance(value, container) and all(map(fits, members(value)))


class ResultLookup:
    """One stage's results in ``cache`` (metric scores, task results): keys, lookups, what was found.

    A component's :meth:`~mlmh.components.Cached.cache_identity` is asked at each lookup until it
    names one, then kept for the run (the first METEOR call may assemble WordNet); while it names
    none, its results are neither looked up nor kept.
    """

    def __init__(self, cache: SampleCache, cls: type) -> None:
        self.cache = cache
        self.cls = cls
        self.asked = 0
        self.found = 0
        self._identities: dict[str, str] = {}

    def key(self, component: CachedComponent, seed: int, content: str) -> str | None:
        """The result key of ``component`` on the input whose :func:`content_digest` is ``content``,
        or None when it is not cacheable."""
        from mlmh.implementation import implementation_id, library_versions

        if component.spec not in self._identities:
            identity = component.cache_identity()
            if identity is None:
                return None
            self._identities[component.spec] = identity
        return result_key(kind=component.kind, spec=component.spec, code=implementation_id(component),
                          libraries=library_versions(), inputs=self._identities[component.spec], seed=seed,
                          content=content)

    def get(self, key: str | None) -> list[Any] | None:
        self.asked += 1
        found: list[Any] | None = self.cache.get_results(key, self.cls) if key else None
        self.found += found is not None
        return found

    def put(self, key: str | None, results: Sequence[Any]) -> None:
        """Keep ``results`` unless one is an error (a missing model or WordNet may be there next time)."""
        if key and not any(r.error for r in results):
            self.cache.put_results(key, results)

    def summary(self, stage: str) -> str | None:
        """What came from the cache, for the run's log; None when nothing did."""
        if not self.found:
            return None
        return (f"{stage}: {self.found} of {self.asked} results came from the run cache (same inputs, code, "
                "libraries and scoring models)")
