"""The README's ``mlmh generate`` example speaks the demo models' language: every word of its text is one token of
the vocabulary the demo's trained-* models share (trained on the bundled PAN sample's train split), so the MLM
fills each masked word with one token instead of spelling it letter by letter."""

from __future__ import annotations

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


def test_the_readme_generate_example_is_one_token_per_word_for_the_demo_models():
    corpus = with_validation(get_registry().build("dataset", "pan").load(None))
    tokenizer = train_tokenizer([d.text for d in corpus.split("train")], SIZES["tiny"].vocab_size)
    text = _example_text()
    spelled = {word: tokenizer.tokenize(word) for word in split_words(text)}
    assert spelled and all(len(pieces) == 1 for pieces in spelled.values()), \
        {w: p for w, p in spelled.items() if len(p) != 1}
    assert tokenizer.unk_token not in {p for pieces in spelled.values() for p in pieces}
