"""The bench's models: random weights (speed does not depend on what they learned) in the shapes
``mlmh train`` builds, with a vocabulary whose words are one token each."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from mlmh.training.config import SPECIAL_TOKENS


#: Sizes come from :data:`mlmh.training.config.SIZES`: the bench times the shapes that ``mlmh train`` builds.
BENCH_SIZES = ("tiny", "small", "base")

_ONSETS = "b c d f g h j k l m n p r s t v w z".split()
_NUCLEI = "a e i o u".split()


def bench_vocabulary(size: int) -> list[str]:
    """``size - 5`` distinct pronounceable words: each is one word for split_words and one token."""
    syllables = [o + n for o in _ONSETS for n in _NUCLEI]
    words: list[str] = []
    stack = [""]
    while len(words) < size - len(SPECIAL_TOKENS):
        stack = [prefix + s for prefix in stack for s in syllables]
        words.extend(stack)
    return words[: size - len(SPECIAL_TOKENS)]


def build_bench_tokenizer(vocab_size: int):
    """A BERT-style WordPiece tokenizer whose vocabulary holds the bench words whole (1 word = 1 token)."""
    from mlmh.training.models import wordpiece_tokenizer

    return wordpiece_tokenizer({token: i for i, token in enumerate(SPECIAL_TOKENS + bench_vocabulary(vocab_size))})


def build_bench_model(kind: str, size: str, tokenizer, *, window: int, seed: int = 0):
    """A random-weight ``kind`` model ("mlm", "clm", "seq2seq") of training size ``size``, in eval mode.

    Uses the training module's own configs (matched parameter counts across kinds); only the position
    table is widened to ``window`` so the bench can time texts longer than training used.
    """
    import dataclasses

    import torch

    from mlmh.errors import SpecError
    from mlmh.training.config import SIZES
    from mlmh.training.models import build_model

    if size not in SIZES:
        raise SpecError(f"unknown bench size '{size}' (valid: {', '.join(SIZES)})")
    shape = dataclasses.replace(SIZES[size], seq_len=max(window, SIZES[size].seq_len))
    torch.manual_seed(seed)
    return build_model(kind, shape, tokenizer).eval()


def parameter_count(model) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def save_bench_models(size: str, out: Path, *, window: int, kinds: Sequence[str] = ("mlm", "clm", "seq2seq"),
                      seed: int = 0) -> dict[str, Path]:
    """Write random ``size`` models of each kind, with the bench tokenizer, as standard HF directories."""
    from mlmh.training.config import SIZES

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = build_bench_tokenizer(SIZES[size].vocab_size)
    paths = {}
    for kind in kinds:
        path = Path(out) / f"{size}-{kind}"
        path.mkdir(parents=True, exist_ok=True)
        build_bench_model(kind, size, tokenizer, window=window, seed=seed).save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[kind] = path
    return paths
