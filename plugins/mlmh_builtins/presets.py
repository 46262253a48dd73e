"""Builtin presets: the TOML files of the top-level ``presets/`` folder.

A source checkout (and an editable install) reads them where a user looks for one to copy, ``presets/`` beside
``plugins/``; a wheel ships the same files as this package's data, ``mlmh_builtins/preset_files`` (pyproject.toml's
force-include), since a wheel installs packages only.
"""

from __future__ import annotations

from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from mlmh import hookimpl

WHEEL_FOLDER = "preset_files"
SOURCE_FOLDER = Path(__file__).resolve().parent.parent.parent / "presets"


def presets_folder() -> Traversable:
    """Where the builtin preset files are: the installed package's data, else the source tree's ``presets/``."""
    packaged = resources.files("mlmh_builtins") / WHEEL_FOLDER
    if packaged.is_dir():
        return packaged
    if SOURCE_FOLDER.is_dir():
        return SOURCE_FOLDER
    raise FileNotFoundError(f"no builtin presets: neither {packaged} nor {SOURCE_FOLDER} is a folder")


def preset_files() -> list[Traversable]:
    """The shipped preset files (``importlib.resources`` traversables), by name."""
    return sorted((entry for entry in presets_folder().iterdir() if entry.name.endswith(".toml")), key=lambda p: p.name)


@hookimpl
def register_presets(register):
    for entry in preset_files():
        register(entry.name[: -len(".toml")], entry.read_text(encoding="utf-8"))
