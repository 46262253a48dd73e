"""Deprecated path of the sampler toolkit, which is :mod:`mlmh.toolkit` now; kept for one release so that
samplers written against the docs/PLUGINS.md of the release before the builtins moved still run, each name
read here warning where it is imported."""

from __future__ import annotations

from mlmh.toolkit import moved_here

__getattr__ = moved_here("mlmh.plugins.samplers_common")
