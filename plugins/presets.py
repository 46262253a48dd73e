"""Builtin presets: the TOML files shipped in ``mlmh.presets``."""

from __future__ import annotations

from importlib import resources

from mlmh import hookimpl


@hookimpl
def register_presets(register):
    for entry in sorted(resources.files("mlmh.presets").iterdir(), key=lambda p: p.name):
        if entry.name.endswith(".toml"):
            register(entry.name[: -len(".toml")], entry.read_text(encoding="utf-8"))
