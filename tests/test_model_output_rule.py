"""A scored word is a word the model wrote: over every sampler x model kind x masking, the text at every masked
word is the sampler's output for it, or the batch fails naming why (mlmh.generation.check_filled).

The models include a T5 with two sentinels, fewer than most maskings make spans: its spans are merged to fit
(mlmh.adapters.sentinels.spans_to_fit), so it still writes every masked word instead of keeping the later ones."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from paper_families import build_family

from mlmh.adapters import load_adapter
from mlmh.config.plan import fits
from mlmh.errors import ModelError, PluginError
from mlmh.generation import fit_to_windows, generate, prepare_items
from mlmh.registry import get_registry
from mlmh.types import Document

#: model -> (kind, how its fixture is built)
MODELS = ("mlm", "clm", "seq2seq (BART <mask>)", "seq2seq (T5, 2 sentinels)")
KIND = {"mlm": "mlm", "clm": "clm", "seq2seq (BART <mask>)": "seq2seq", "seq2seq (T5, 2 sentinels)": "seq2seq"}
#: model kind -> a sampler that drives it
SAMPLER = {"mlm": "mask-predict:steps=2", "clm": "clm-infill", "seq2seq": "seq2seq-infill"}
MASKINGS = ("random", "stopwords", "punctuation")
WORDS = st.sampled_from(["the", "cat", "sat", "on", "a", "mat", "and", "dog", ",", ".", "quick", "of", "children", "xyzzy"])


@pytest.fixture(scope="module")
def models(tiny_mlm, tiny_clm, tiny_seq2seq, tmp_path_factory):
    t5 = build_family("t5", tmp_path_factory.mktemp("t5-two-sentinels"), sentinels=2)
    paths = dict(zip(MODELS, (tiny_mlm, tiny_clm, tiny_seq2seq, t5)))
    return {name: load_adapter(KIND[name], path, threads=1) for name, path in paths.items()}


def _pairs() -> list[tuple[str, str]]:
    samplers = get_registry().all("sampler")
    return [(model, sampler.name) for model in MODELS for sampler in samplers if fits(sampler, KIND[model])]


@pytest.mark.parametrize("model, sampler_name", _pairs())
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORDS, min_size=1, max_size=16), masking=st.sampled_from(MASKINGS),
       ratio=st.floats(0.2, 1.0), seed=st.integers(0, 2**31))
@example(words="the cat and the dog of a mat sat on the mat".split(), masking="stopwords", ratio=1.0, seed=0)  # 5 spans
def test_every_masked_word_is_model_output(models, model, sampler_name, words, masking, ratio, seed):
    adapter = models[model]
    sampler = get_registry().build("sampler", sampler_name)
    items = prepare_items([Document(id="d", text=" ".join(words))],
                          get_registry().build("masking", f"{masking}:ratio={ratio:.3f}"), seed)
    (generation,) = generate(adapter, sampler, items)
    item = items[0]
    assert "unfilled_masked_words" not in generation.info
    assert set(generation.output_words) == set(item.plan.word_indices) == set(generation.masked_words)
    assert generation.text == item.words.replace(generation.output_words)
    for index, text in generation.output_words.items():
        assert "<extra_id_" not in text and (adapter.tokenizer.mask_token or "\0") not in text


class _Keeps:
    """A sampler wrapper that hands back its generation with the given masked words put back as they were."""

    def __init__(self, sampler, how):
        self.inner, self.how = sampler, how
        self.short_spec, self.name, self.model_kinds = sampler.short_spec, sampler.name, sampler.model_kinds

    def generate(self, adapter, items):
        generations = self.inner.generate(adapter, items)
        for item, generation in zip(items, generations):
            kept = sorted(generation.output_words)[-1:]
            for index in kept:
                del generation.output_words[index]
            if self.how == "beyond the window":
                generation.info["unfilled_masked_words"] = kept
            elif self.how == "text":
                generation.output_words[kept[0]] = "zzz"  # the word it says it wrote is not the text's
        return generations


@pytest.mark.parametrize("how, error, message", [
    ("silently", PluginError, "left 1 masked word"),
    ("beyond the window", ModelError, r"1 masked word\(s\) lie beyond the window of model"),
    ("text", PluginError, "not the original with its masked words replaced"),
])
def test_a_kept_original_fails_the_batch_naming_why(models, how, error, message):
    sampler = _Keeps(get_registry().build("sampler", "one-shot"), how)
    items = prepare_items([Document(id="d", text="the cat sat on the mat")],
                          get_registry().build("masking", "random:ratio=0.5"), 1)
    with pytest.raises(error, match=message):
        generate(models["mlm"], sampler, items)


def test_the_playground_cuts_a_long_text_to_every_window_before_masking(tiny_mlm, tiny_clm):
    """mlmh.compare masks once for every side: the text is cut to the narrowest window first, so every side writes
    every masked word (none is left beyond a window)."""
    from mlmh import api

    text = " ".join(["the cat sat on the mat and looked at the door"] * 30)
    sides = [(f"hf-mlm:path={tiny_mlm}", "one-shot"), (f"hf-clm:path={tiny_clm}", "clm-infill")]
    left, right = api.compare(text, sides, masking="random:ratio=0.3", seed=2)
    assert left.masked_words == right.masked_words and left.original == right.original != text
    for generation in (left, right):
        assert "the last that fits the model window of 128 tokens" in generation.info["cut_to_window"]
        assert set(generation.output_words) == set(generation.masked_words)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_document_cut_to_the_window_leaves_no_masked_word_beyond_it(models, model, seed):
    """A run cuts a document to the window before masking, and the masking then cuts the text at every masked word
    (each is tokenized on its own): the cut must hold however the words are masked. A word glued to a symbol
    ("marmot®") is one [UNK] to a WordPiece tokenizer, but "marmot" alone is four pieces: cut by the tokens of
    the unmasked text, the text with half its words masked overflowed the window and failed the batch."""
    adapter = models[model]
    text = " ".join(["the cat saw a marmot® by the door ."] * 40)
    (fitted,), cut = fit_to_windows([Document(id="d", text=text)], [adapter])
    assert cut == 1 and 0 < len(fitted.text) < len(text)
    items = prepare_items([fitted], get_registry().build("masking", "random:ratio=0.5"), seed)
    (generation,) = generate(adapter, get_registry().build("sampler", SAMPLER[KIND[model]]), items)
    assert generation.truncated_tokens == 0 and set(generation.output_words) == set(items[0].plan.word_indices)
