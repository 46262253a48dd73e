"""Tiny random transformers models for the tests: never downloaded. The builders live in
:mod:`mlmh.testing`, so plugin authors get the same models."""

from __future__ import annotations

from mlmh.testing import TINY_TEXTS as TEXTS
from mlmh.testing import build_tiny_model, build_tokenizer

__all__ = ["TEXTS", "build_tiny_model", "build_tokenizer"]
