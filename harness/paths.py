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
