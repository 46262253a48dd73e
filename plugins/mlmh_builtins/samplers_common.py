"""Deprecated path of the sampler toolkit, which is :mod:`mlmh.toolkit` now; kept for one release so that
samplers written against the previous docs/PLUGINS.md still run, each name read here warning where it is
imported."""

from __future__ import annotations

from mlmh.toolkit import moved_here

__getattr__ = moved_here("mlmh_builtins.samplers_common")
