"""The cache of trained models: one directory per training recipe, keyed by a hash of data + config +
library versions, so a preset trains on first use and reuses the weights afterwards.

Writes are atomic: a model is built in a temporary sibling directory and renamed into place only when
it is complete, so nothing half-written is ever presented as a model (a crash, Ctrl-C or a full disk
leaves no model directory behind). A per-key file lock keeps two processes from training the same
model at once.

Every entry also carries a manifest of its files' sizes, checked (with each safetensors header) on every
use: an entry damaged later (a disk filling up during a copy, a truncated sync) is named in a warning and
rebuilt instead of failing every later run with a bare ``SafetensorError``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from mlmh.errors import ModelError

#: Name of the file that marks a finished model directory (written last, before the rename).
CARD_NAME = "training_card.json"
#: Sizes of an entry's files, written when the entry is built and checked whenever it is used.
MANIFEST_NAME = "cache_manifest.json"
_TMP_PREFIX = ".partial-"

log = logging.getLogger("mlmh.storage.modelcache")


def library_versions() -> dict[str, str]:
    """Versions that change what training produces; part of every cache key and training card."""
    import mlmh

    out = {"mlmh": mlmh.__version__}
    for dist in ("torch", "transformers", "tokenizers"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "missing"
    return out


def data_hash(texts: Iterable[str]) -> str:
    """SHA-256 of the training texts, length-prefixed so that boundaries between texts count."""
    digest = hashlib.sha256()
    for text in texts:
        raw = text.encode("utf-8")
        digest.update(len(raw).to_bytes(8, "little"))
        digest.update(raw)
    return digest.hexdigest()


def cache_key(recipe: dict[str, Any]) -> str:
    """Short stable hash of a JSON-serialisable recipe (data hash, config, versions...)."""
    blob = json.dumps(recipe, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:20]


def is_model_dir(path: Path) -> bool:
    """A finished model directory: has a config and the training card written at the very end."""
    return (path / "config.json").is_file() and (path / CARD_NAME).is_file()


def write_manifest(directory: Path) -> None:
    """Record the size of every file under ``directory`` (relative paths) in its manifest."""
    sizes = {
        path.relative_to(directory).as_posix(): path.stat().st_size
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name != MANIFEST_NAME
    }
    (directory / MANIFEST_NAME).write_text(json.dumps({"files": sizes}, indent=1, sort_keys=True), encoding="utf-8")


def _safetensors_problem(path: Path) -> str | None:
    """Why a safetensors file cannot be opened (header unreadable, data not fully present), or None."""
    from safetensors import SafetensorError, safe_open

    try:
        with safe_open(str(path), framework="numpy"):
            return None
    except (SafetensorError, OSError) as exc:
        return f"{path.name} is damaged ({exc})"


def entry_problem(directory: Path) -> str | None:
    """What is wrong with a finished cache entry, or None when it is intact.

    Cheap enough for every use: file sizes against the manifest written at build time, and each
    ``*.safetensors`` header parsed (which also checks that the header's tensors fit in the file).
    Entries built before manifests existed are checked through their safetensors headers only.
    """
    manifest = directory / MANIFEST_NAME
    if manifest.exists():
        try:
            sizes = json.loads(manifest.read_text(encoding="utf-8"))["files"]
            if not isinstance(sizes, dict):
                raise TypeError(type(sizes).__name__)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return f"{MANIFEST_NAME} is unreadable ({exc})"
        for name, size in sorted(sizes.items()):
            path = directory / name
            if not path.is_file():
                return f"{name} is missing"
            actual = path.stat().st_size
            if actual != size:
                return f"{name} has {actual} bytes, {size} when it was written"
    for path in sorted(directory.rglob("*.safetensors")):
        problem = _safetensors_problem(path)
        if problem:
            return problem
    return None


def _disk_error(target: Path, exc: OSError) -> ModelError:
    return ModelError(
        f"out of disk space while writing the model to {target}; free some space or point "
        f"MLMH_CACHE_DIR (or --out) to a larger disk ({exc.strerror})"
    )


def ensure_free_space(directory: Path, needed_bytes: int) -> None:
    """Fail before training, not after, when the target disk cannot hold the model."""
    probe = directory
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    if free < needed_bytes:
        raise ModelError(
            f"not enough disk space in {directory}: need about {needed_bytes / 1e6:.0f} MB, "
            f"{free / 1e6:.0f} MB free; free some space or choose another directory"
        )


#: the tail of a build's temp folder name: ``-PID-xxxxxxxx`` (mkdtemp) or ``-old-PID`` (an entry being replaced)
_PARTIAL_TAIL = re.compile(r"-(?:old-(\d+)|(\d+)-[a-z0-9_]{8})$")


def partial_owner(path: Path) -> int | None:
    """The PID in a ``.partial-NAME-PID-*`` folder's name (the process that builds it), or None."""
    match = _PARTIAL_TAIL.search(path.name) if path.name.startswith(_TMP_PREFIX) else None
    return int(match.group(1) or match.group(2)) if match else None


def build_in_progress(path: Path, lock: Path | None = None) -> bool:
    """Whether a live process may still own the temp folder ``path``: the one rule every cleanup asks before it
    removes a build's folder. Live when ``lock`` (the build's key lock) is held by any process, or when the PID
    in the name is a running process; a name without a PID counts as live unless a free lock says otherwise
    (an owner is never guessed dead)."""
    if lock is not None and lock_held(lock):
        return True
    pid = partial_owner(path)
    return lock is None if pid is None else _alive(pid)


def lock_held(lock: Path) -> bool:
    """Whether some process holds the flock on ``lock`` now (asked without waiting, then released at once)."""
    try:
        fd = os.open(lock, os.O_RDONLY)
    except OSError:  # no lock file: nobody holds it
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a file system without flock: no lock can tell, the PID decides
        return False
    else:
        fcntl.flock(fd, fcntl.LOCK_UN)
        return False
    finally:
        os.close(fd)


def clear_stale_partials(final: Path) -> list[Path]:
    """Remove the temp folders of ``final`` that a killed build left (``.partial-NAME-PID-*`` whose process is
    gone), so the next build of the same output cleans up after it; a live build's folder stays."""
    removed = []
    for path in Path(final).parent.glob(f"{_TMP_PREFIX}{Path(final).name}-*"):
        owned = _PARTIAL_TAIL.fullmatch(path.name[len(_TMP_PREFIX + Path(final).name):])
        if owned and not build_in_progress(path) and path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def atomic_directory(final: Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary directory next to ``final``; rename it to ``final`` only on success.

    On any exception the temporary directory is removed and the exception propagates (a full disk
    becomes a :class:`ModelError` naming the target). ``overwrite`` replaces an existing ``final``.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    clear_stale_partials(final)
    tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{final.name}-{os.getpid()}-", dir=final.parent))
    try:
        yield tmp
        if final.exists():
            if not overwrite:
                raise ModelError(f"{final} already exists (written while this build ran); the finished build is "
                                 "not moved over it: choose another directory or remove it")
            old = final.with_name(f"{_TMP_PREFIX}{final.name}-old-{os.getpid()}")
            os.rename(final, old)
            os.rename(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, final)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise _disk_error(final, exc) from None
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


class ModelCache:
    """Trained models under ``root`` (default: ``mlmh.machine.paths.models_dir()``), one directory per key."""

    def __init__(self, root: Path | None = None) -> None:
        if root is None:
            from mlmh.machine.paths import models_dir

            root = models_dir()
        self.root = Path(root)

    def path(self, key: str) -> Path:
        return self.root / key

    def lookup(self, key: str) -> Path | None:
        """The finished, intact model for ``key``, or None (partial or damaged directories never count)."""
        path = self.path(key)
        return path if is_model_dir(path) and entry_problem(path) is None else None

    def _usable(self, path: Path, complete: Callable[[Path], bool]) -> bool:
        """A complete entry whose files are intact; a damaged one is named in a warning (then rebuilt)."""
        if not complete(path):
            return False
        problem = entry_problem(path)
        if problem is None:
            return True
        log.warning("cache entry %s is damaged: %s; rebuilding it", path, problem)
        return False

    @contextlib.contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        from mlmh.machine.paths import private_dir

        private_dir(self.root)  # entries are mkdtemp folders (0700) renamed into place
        with open(self.root / f".{key}.lock", "w") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    @staticmethod
    def _refuse_foreign(path: Path) -> None:
        """An entry is a folder the cache built: a link (to anything) or a file at its name is refused in one line,
        never followed, used or removed (removing it could reach what the link points at)."""
        if path.is_symlink() or (os.path.lexists(path) and not path.is_dir()):
            from mlmh.storage.inputs import kind_of

            what = "a symbolic link" if path.is_symlink() else kind_of(path.stat().st_mode)
            raise ModelError(f"cache entry {path} is {what}, not a folder mlmh built; mlmh never uses, follows or "
                             "removes it: remove it yourself and mlmh builds the entry again")

    def get_or_build(self, key: str, build: Callable[[Path], Any],
                     complete: Callable[[Path], bool] = is_model_dir) -> tuple[Path, bool]:
        """The entry for ``key``, building it with ``build(tmp_dir)`` on a miss.

        Returns ``(path, built)``; ``built`` is False on a cache hit. Another process building the
        same key is waited for rather than duplicated. ``complete`` says whether a directory is a
        finished entry (default: a model with its training card). An entry whose files were damaged
        after it was built (see :func:`entry_problem`) is named in a warning and rebuilt.
        """
        path = self.path(key)
        self._refuse_foreign(path)
        if complete(path) and entry_problem(path) is None:
            return path, False
        with self._lock(key):
            self._refuse_foreign(path)
            if self._usable(path, complete):
                return path, False
            if path.exists():  # unfinished or damaged: not an entry
                shutil.rmtree(path)
            with atomic_directory(path) as tmp:
                build(tmp)
                if not complete(tmp):
                    raise ModelError(f"building cache entry {key} finished without writing all its files")
                write_manifest(tmp)
            return path, True

    def entries(self) -> list[dict[str, Any]]:
        """Training cards of every finished model in the cache (for ``mlmh doctor`` and listings)."""
        if not self.root.is_dir():
            return []
        cards = []
        for path in sorted(self.root.iterdir()):
            if path.name.startswith(".") or not is_model_dir(path):
                continue
            try:
                card = json.loads((path / CARD_NAME).read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
            cards.append({"path": str(path), **card})
        return cards

    def damaged_entries(self) -> list[tuple[Path, str]]:
        """(path, problem) of every finished model whose files no longer match what was written."""
        if not self.root.is_dir():
            return []
        found = []
        for path in sorted(self.root.iterdir()):
            if not path.name.startswith(".") and is_model_dir(path):
                problem = entry_problem(path)
                if problem:
                    found.append((path, problem))
        return found

    def partial_dirs(self) -> list[Path]:
        """Temp folders of builds, finished or not (never loaded as models): :meth:`leftovers` and
        :meth:`builds_in_progress` tell them apart."""
        if not self.root.is_dir():
            return []
        return sorted(p for p in self.root.iterdir() if p.is_dir() and p.name.startswith(_TMP_PREFIX))

    def key_lock(self, path: Path) -> Path:
        """The lock file of the entry that ``path`` (an entry or one of its temp folders) builds."""
        key = path.name
        if key.startswith(_TMP_PREFIX):
            key = _PARTIAL_TAIL.sub("", key[len(_TMP_PREFIX):])
        return self.root / f".{key}.lock"

    def builds_in_progress(self) -> list[Path]:
        """Temp folders a live process owns (:func:`build_in_progress`): no cleanup touches them."""
        return [p for p in self.partial_dirs() if build_in_progress(p, self.key_lock(p))]

    def leftovers(self) -> list[Path]:
        """Temp folders of builds whose process is gone and whose lock nobody holds: safe to delete."""
        return [p for p in self.partial_dirs() if not build_in_progress(p, self.key_lock(p))]


# -- readiness ------------------------------------------------------------------------------------

def _register_checks() -> None:
    from mlmh.doctor import CheckResult, check

    def _clear_partials() -> str:
        cache = ModelCache()
        # a damaged entry whose key lock is held is being rebuilt right now: its builder replaces it
        leftovers = cache.leftovers() + [path for path, _ in cache.damaged_entries() if not lock_held(cache.key_lock(path))]
        for path in leftovers:
            shutil.rmtree(path, ignore_errors=True)
        live = len(cache.builds_in_progress())
        kept = f"; left {live} build(s) in progress alone" if live else ""
        return f"removed {len(leftovers)} unfinished or damaged model director{'y' if len(leftovers) == 1 else 'ies'}{kept}"

    @check("trained models", fixer=_clear_partials)
    def _trained_models() -> CheckResult:
        cache = ModelCache()
        cards = cache.entries()
        names = [
            f"{c.get('dataset') or '?'}/{c.get('objective')}/{c.get('size')} "
            f"(acc {c.get('heldout_accuracy') or 0:.2f} vs {c.get('unigram_baseline_accuracy') or 0:.2f})"
            for c in cards
        ]
        detail = f"{len(cards)} in {cache.root}" + (": " + "; ".join(names) if names else " (trained on first use)")
        live = cache.builds_in_progress()
        if live:
            owners = sorted({str(partial_owner(p)) for p in live if partial_owner(p) is not None})
            detail += f"; {len(live)} build(s) in progress" + (f" (PID {', '.join(owners)})" if owners else "")
        leftover = cache.leftovers()
        damaged = cache.damaged_entries()
        if leftover or damaged:
            problems = ([f"{len(leftover)} unfinished build(s) left over"] if leftover else []) + [
                f"damaged {path.name}: {problem}" for path, problem in damaged]
            return CheckResult("trained models", False, f"{detail}; " + "; ".join(problems),
                               "mlmh doctor --fix (removes them, never a build in progress; damaged models are "
                               "retrained on next use)")
        return CheckResult("trained models", True, detail)


_register_checks()
