"""Tiny random transformers models for the tests: never downloaded. The builders live in
:mod:`mlmh.testing`, so plugin authors get the same models."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from mlmh.testing import TINY_TEXTS as TEXTS
from mlmh.testing import build_tiny_model, build_tokenizer

__all__ = ["TEXTS", "build_tiny_model", "build_tokenizer", "output_rows", "with_half_the_embeddings"]


def with_half_the_embeddings(source: Any, out: Any, auto_class: str) -> int:
    """``source`` saved to ``out`` with its embeddings cut to half its tokenizer's vocabulary (config.json's
    ``vocab_size`` then smaller than the tokenizer: a checkpoint every loader must refuse); that size."""
    import transformers

    model = getattr(transformers, auto_class).from_pretrained(source)
    tokenizer = transformers.AutoTokenizer.from_pretrained(source)
    model.resize_token_embeddings(tokenizer.vocab_size // 2)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return tokenizer.vocab_size // 2


@contextmanager
def output_rows(model: Any) -> Iterator[list[int]]:
    """The rows (positions) each call of ``model``'s output layer computed logits for, in call order."""
    rows: list[int] = []
    handle = model.get_output_embeddings().register_forward_hook(
        lambda module, args, output: rows.append(output.numel() // output.shape[-1]))
    try:
        yield rows
    finally:
        handle.remove()
