"""The README's ``mlmh generate`` example speaks the demo models' language: every word of its text is one token of
the vocabulary the demo's trained-* models share (trained on the bundled PAN sample's train split), so the MLM
fills each masked word with one token instead of spelling it letter by letter."""

from __future__ import annotations

import functools
import re
import shlex
from pathlib import Path

from mlmh.data.splits import with_validation
from mlmh.registry import get_registry
from mlmh.training.config import SIZES
from mlmh.training.models import train_tokenizer
from mlmh.words import split_words

README = Path(__file__).resolve().parents[1] / "README.md"


def _example_text() -> str:
    block = re.search(r"mlmh generate --model trained-mlm (.*?)\n(?!\s)", README.read_text(encoding="utf-8"), re.S)
    assert block, "README.md has no `mlmh generate --model trained-mlm` example"
    words = shlex.split(block.group(1).replace("\\\n", " "))
    return words[words.index("--text") + 1]


@functools.lru_cache(maxsize=1)
def _demo_tokenizer():
    corpus = with_validation(get_registry().build("dataset", "pan").load(None))
    return train_tokenizer([d.text for d in corpus.split("train")], SIZES["tiny"].vocab_size)


def words_in_pieces(text: str) -> dict[str, list[str]]:
    """The words of ``text`` the demo models' vocabulary does not hold whole (spelled in pieces, or unknown), with
    their pieces; {} for a text the MLM fills one token per masked word. The TUI playground's default text is held
    to the same rule (tests/test_tui_playground.py)."""
    tokenizer = _demo_tokenizer()
    spelled = {word: tokenizer.tokenize(word) for word in split_words(text)}
    assert spelled, "no words"
    return {w: p for w, p in spelled.items() if len(p) != 1 or tokenizer.unk_token in p}


def test_the_readme_generate_example_is_one_token_per_word_for_the_demo_models():
    assert words_in_pieces(_example_text()) == {}
