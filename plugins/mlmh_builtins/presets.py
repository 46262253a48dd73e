"""Builtin presets: the TOML files in this package's ``preset_files`` folder."""

from __future__ import annotations

from importlib import resources

from mlmh import hookimpl


def preset_files() -> list:
    """The shipped preset files (``importlib.resources`` traversables), by name."""
    folder = resources.files("mlmh_builtins") / "preset_files"
    return sorted((entry for entry in folder.iterdir() if entry.name.endswith(".toml")), key=lambda p: p.name)


@hookimpl
def register_presets(register):
    for entry in preset_files():
        register(entry.name[: -len(".toml")], entry.read_text(encoding="utf-8"))
