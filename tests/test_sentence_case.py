"""A model whose tokenizer folds case (uncased BERT, MiniLM) writes every word in lowercase; its generated words
are capitalised where a sentence starts, so case-sensitive metrics do not count a right word wrong for its case.
A cased model's words are left as it wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlmh.registry import get_registry
from mlmh.testing import build_tiny_model, check_sampler, sample_items
from mlmh.types import MaskedItem, MaskPlan
from mlmh.words import sentence_cased, split_words

TEXTS = ["the river bends near the old mill. the miller sleeps there! does the wheel turn? it does, slowly."]


def test_sentence_starts_are_capitalised_and_nothing_else():
    words = split_words("Rain fell. Then it stopped, and the sun came out? Yes")
    index = {w: i for i, w in reversed(list(enumerate(words)))}
    outputs = {0: "rain", index["Then"]: "then", index["and"]: "and", index["Yes"]: "yes", index["sun"]: "sun"}
    cased = sentence_cased(words, outputs)
    assert cased[0] == "Rain"  # the text's first word
    assert cased[index["Then"]] == "Then" and cased[index["Yes"]] == "Yes"  # after "." and "?"
    assert cased[index["and"]] == "and" and cased[index["sun"]] == "sun"  # after "," and mid-sentence
    assert outputs[0] == "rain"  # the caller's outputs are not changed


def test_a_generated_sentence_end_starts_the_next_sentence():
    words = split_words("It rained , so we left")
    assert sentence_cased(words, {2: ".", 3: "so"}) == {2: ".", 3: "So"}
    assert sentence_cased(words, {2: ";", 3: "so"}) == {2: ";", 3: "so"}
    assert sentence_cased(words, {3: "42"}) == {3: "42"}  # nothing to capitalise


def _uncased(directory: Path) -> Path:
    """The tiny MLM of ``directory`` with a tokenizer that lowercases what it reads, like an uncased BERT's."""
    build_tiny_model("mlm", directory)
    path = directory / "tokenizer.json"
    spec = json.loads(path.read_text())
    spec["normalizer"] = {"type": "Sequence", "normalizers": [spec["normalizer"], {"type": "Lowercase"}]}
    path.write_text(json.dumps(spec))
    return directory


@pytest.mark.parametrize("uncased", [True, False])
def test_a_model_that_folds_case_writes_sentence_starts_capitalised(tmp_path, uncased):
    from mlmh.adapters import load_adapter

    directory = _uncased(tmp_path) if uncased else build_tiny_model("mlm", tmp_path)
    adapter = load_adapter("mlm", directory, identity="tiny-mlm")
    assert adapter.folds_case is uncased
    base = sample_items(TEXTS, "random:ratio=0.1")[0]
    starts = tuple(i for i, w in enumerate(base.words) if i == 0 or base.words[i - 1] in {".", "!", "?"})
    assert len(starts) == 4
    items = [MaskedItem(doc_id=f"d{seed}", words=base.words, plan=MaskPlan(masking="sentence starts", word_indices=starts),
                        seed=seed) for seed in range(6)]
    sampler = get_registry().build("sampler", "mask-predict:steps=2")
    generations = check_sampler(sampler, adapter, items)
    written = [gen.output_words[i] for gen in generations for i in starts]
    letters = [word for word in written if word[:1].isalpha()]
    assert letters, "the tiny model wrote no word with a letter at a sentence start"
    if uncased:
        assert all(word[0].isupper() for word in letters)
        assert all(gen.text.split()[0][0].isupper() for gen in generations if gen.output_words[0][:1].isalpha())
    else:  # the tiny vocabulary is lowercase text: a cased model's words stay as it wrote them
        assert all(word[0].islower() for word in letters)
