"""Shared pre-tokenization: one word segmentation for every model, so maskings are model-independent."""

from __future__ import annotations

import re

from mlmh.types import Words

# A word is a run of letters/digits with inner apostrophes or hyphens ("don't", "follow-up");
# every other non-space character is a word of its own (punctuation).
_WORD = re.compile(r"\w+(?:['’\-]\w+)*|[^\w\s]", re.UNICODE)


def split_words(text: str) -> Words:
    """Word spans (with character offsets) of ``text``."""
    return Words(text=text, spans=tuple((m.start(), m.end()) for m in _WORD.finditer(text)))


def is_punctuation(word: str) -> bool:
    return bool(word) and not any(ch.isalnum() for ch in word)
