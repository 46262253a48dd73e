"""Where mlmh keeps things: the user cache (models, samples, WordNet) unless MLMH_CACHE_DIR says otherwise."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Root of mlmh's cache: ``$MLMH_CACHE_DIR``, else ``$XDG_CACHE_HOME/mlmh``, else ``~/.cache/mlmh``."""
    env = os.environ.get("MLMH_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mlmh"


def models_dir() -> Path:
    return cache_dir() / "models"


def samples_db() -> Path:
    return cache_dir() / "samples.sqlite"


def private_dir(path: Path) -> Path:
    """``path`` as a directory, every folder this creates readable by the user alone (0700): caches hold
    whole documents (MIMIC notes on a shared host). Folders that exist are left as they are."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    for folder in reversed(missing):
        folder.mkdir(mode=0o700, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` empty and readable by the user alone (0600) unless it exists; SQLite gives its
    ``-wal`` and ``-shm`` files the database file's permissions."""
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
    except FileExistsError:
        pass
    return path
