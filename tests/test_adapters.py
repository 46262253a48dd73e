"""Model adapters: loading, word-to-token mapping (WordPiece and byte-level BPE), windows, caches, errors."""

from __future__ import annotations

import pytest
import torch

from mlmh.adapters import load_adapter
from mlmh.adapters.decoding import CausalLMAdapter, Seq2SeqAdapter, cache_argument, returned_cache
from mlmh.errors import ModelError
from mlmh.types import MaskPlan
from mlmh.words import split_words

TEXT = "The quick brown fox jumps over the lazy dog, again and again."


def plan(*indices: int) -> MaskPlan:
    return MaskPlan(masking="test", word_indices=tuple(sorted(indices)))


@pytest.fixture(scope="module")
def mlm(tiny_mlm):
    return load_adapter("mlm", tiny_mlm, threads=1)


@pytest.fixture(scope="module")
def clm(tiny_clm):
    return load_adapter("clm", tiny_clm, threads=1)


@pytest.fixture(scope="module")
def s2s(tiny_seq2seq):
    return load_adapter("seq2seq", tiny_seq2seq, threads=1)


def test_load_every_kind_in_eval_mode(mlm, clm, s2s):
    for adapter, kind in ((mlm, "mlm"), (clm, "clm"), (s2s, "seq2seq")):
        assert adapter.kind == kind
        assert not adapter.model.training
        assert adapter.max_length == 128
        assert adapter.identity


def test_every_subtoken_of_a_masked_word_is_masked_and_nothing_else(mlm):
    words = split_words("Patient was given aspirinology daily.")
    index = list(words).index("aspirinology")
    enc = mlm.encode(words, plan(index))
    pieces = mlm.tokenizer.tokenize("aspirinology")
    assert len(pieces) > 1  # the test needs a word split into sub-tokens
    assert len(enc.masked) == len(pieces)
    assert all(enc.ids[p] == mlm.tokenizer.mask_token_id for p in enc.masked)
    assert all(enc.word_of[p] == index for p in enc.masked)
    full = mlm.tokenizer(words.text)["input_ids"]
    unmasked = [i for p, i in enumerate(enc.ids) if p not in enc.masked]
    assert unmasked == [i for p, i in enumerate(full) if p not in enc.masked]
    assert enc.filled_words == (index,)


def test_word_of_follows_offsets(mlm):
    words = split_words(TEXT)
    enc = mlm.encode(words, plan())
    content = [(p, w) for p, w in enumerate(enc.word_of) if w >= 0]
    assert [w for _, w in content] == sorted(w for _, w in content)
    assert {w for _, w in content} == set(range(len(words)))


def _byte_level_clm(tmp_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator([TEXT, "Wait!!, what?! No... yes.", "again and again"] * 20, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|endoftext|>", eos_token="<|endoftext|>",
                                   unk_token="<|endoftext|>", pad_token="<|endoftext|>")
    config = GPT2Config(vocab_size=len(fast), n_embd=16, n_layer=1, n_head=2, n_positions=64)
    return CausalLMAdapter(GPT2LMHeadModel(config), fast, identity="bpe")


def test_byte_level_bpe_never_shares_a_token_between_masked_and_unmasked_words(tmp_path):
    adapter = _byte_level_clm(tmp_path)
    words = split_words("Wait!!, what?! No... yes.")
    assert adapter.tokenizer.tokenize("!!,")[0] == "!!,"  # BPE merges the punctuation run
    second_bang = [i for i, w in enumerate(words) if w == "!"][1]
    enc = adapter.encode(words, plan(second_bang))
    assert enc.filled_words == (second_bang,)
    assert {enc.word_of[p] for p in enc.masked} == {second_bang}
    assert enc.ids[0] != adapter.mask_id


def test_clm_gets_a_bos_when_the_first_word_is_masked(tmp_path):
    adapter = _byte_level_clm(tmp_path)
    enc = adapter.encode(split_words("again and again"), plan(0))
    assert enc.ids[0] == adapter.tokenizer.bos_token_id
    assert enc.masked[0] == 1


def test_too_long_text_is_truncated_at_a_word_boundary_and_said(mlm):
    text = " ".join(["again and again"] * 80)
    words = split_words(text)
    last = len(words) - 1
    enc = mlm.encode(words, plan(0, last))
    assert len(enc.ids) <= mlm.max_length
    assert enc.truncated_tokens > 0
    assert enc.dropped_words == (last,)
    assert enc.filled_words == (0,)


def test_seq2seq_mask_style_collapses_each_span_to_one_mask(s2s):
    assert s2s.style == "mask"
    words = split_words(TEXT)
    enc = s2s.encode(words, plan(1, 2, 5))  # "quick brown" is one span, "over" another
    mask = s2s.tokenizer.mask_token_id
    assert enc.source_ids.count(mask) == 2
    assert enc.ids[0] == s2s.decoder_start_id
    assert len(enc.masked) == len(s2s.tokenizer.tokenize("quick brown over"))


def test_t5_sentinel_style_is_detected_and_laid_out(tmp_path):
    from transformers import T5Config, T5ForConditionalGeneration

    from tiny_models import build_tokenizer

    tok = build_tokenizer(tmp_path)
    tok.add_special_tokens({"additional_special_tokens": [f"<extra_id_{k}>" for k in range(4)]})
    config = T5Config(vocab_size=len(tok), d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2,
                      decoder_start_token_id=tok.pad_token_id, pad_token_id=tok.pad_token_id, eos_token_id=tok.sep_token_id)
    adapter = Seq2SeqAdapter(T5ForConditionalGeneration(config), tok, identity="t5")
    assert adapter.style == "sentinel"
    words = split_words(TEXT)
    enc = adapter.encode(words, plan(1, 5))
    s0, s1 = adapter.sentinel_id(0), adapter.sentinel_id(1)
    assert s0 in enc.source_ids and s1 in enc.source_ids
    assert enc.ids[:2] == [tok.pad_token_id, s0]
    assert all(enc.ids[p] != s1 for p in enc.masked)
    from mlmh.registry import get_registry

    from mlmh.generation import generate, prepare_items
    from mlmh.types import Document

    items = prepare_items([Document(id="a", text=TEXT)], get_registry().build("masking", "random:ratio=0.3"), 0)
    (gen,) = generate(adapter, get_registry().build("sampler", "seq2seq-infill"), items)
    assert gen.forward_passes == 1 + gen.generated_tokens  # encoder + one pass per token


def test_cached_and_uncached_clm_logits_agree(clm):
    ids = clm.tokenizer(TEXT)["input_ids"]
    cached = clm.new_state(2, use_cache=True)
    first = clm.next_logits([ids[:5], ids[:3]], cached, [0, 1])
    second = clm.next_logits([ids[5:9], ids[3:4]], cached, [0, 1])
    plain = clm.next_logits([ids[:9], ids[:4]], clm.new_state(2, use_cache=False), [0, 1])
    assert first.shape[0] == 2
    torch.testing.assert_close(second, plain, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind, spec", [("clm", "clm-infill"), ("seq2seq", "seq2seq-infill")])
def test_cached_decoding_passes_the_cache_under_the_name_the_model_takes(kind, spec, clm, s2s):
    """transformers 5 renamed ``past_key_values`` to ``cache``: the old name warns in every run and
    its removal is announced."""
    import warnings

    from mlmh.generation import generate, prepare_items
    from mlmh.registry import get_registry
    from mlmh.types import Document

    adapter = {"clm": clm, "seq2seq": s2s}[kind]
    items = prepare_items([Document(id="a", text=TEXT)], get_registry().build("masking", "random:ratio=0.3"), 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (generation,) = generate(adapter, get_registry().build("sampler", spec), items)
    assert generation.generated_tokens > 1  # cached steps were taken
    assert not [w for w in caught if "past_key_values" in str(w.message)]


def test_older_transformers_take_and_return_past_key_values():
    class OldModel(torch.nn.Module):
        def forward(self, input_ids, past_key_values=None, use_cache=None):
            return input_ids

    class OldOutput(dict):
        past_key_values = "the cache"

    assert cache_argument(OldModel()) == "past_key_values"
    assert returned_cache(OldOutput(logits=0)) == "the cache"


def test_counters_count_and_reset(mlm):
    mlm.reset_counters()
    ids, mask = mlm.batch([[2, 5, 6, 3], [2, 7, 3]])
    mlm.logits(ids, mask)
    assert (mlm.forward_passes, mlm.tokens_processed) == (1, 7)
    mlm.reset_counters()
    assert (mlm.forward_passes, mlm.tokens_processed) == (0, 0)


def test_special_tokens_are_never_generated(mlm):
    ids, mask = mlm.batch([[2, 4, 4, 3]])
    logits = mlm.logits(ids, mask)
    for special in mlm.tokenizer.all_special_ids:
        assert torch.isinf(logits[..., special]).all()


@pytest.mark.parametrize("path, message", [
    ("definitely-not/a-model", "not cached locally and no network is reachable; pass a local directory with path="),
    ("/no/such/dir", "does not exist"),
])
def test_missing_models_give_one_line_errors(path, message):
    with pytest.raises(ModelError, match=message) as info:
        load_adapter("mlm", path)
    assert "\n" not in str(info.value)


def test_directory_that_is_not_a_model(tmp_path):
    with pytest.raises(ModelError, match="not a model directory"):
        load_adapter("mlm", tmp_path)


def test_architecture_without_the_objective(tiny_clm):
    with pytest.raises(ModelError, match="trained as clm, loaded as mlm: its output at a position predicts the next "
                                         "word, not the masked one; load it as hf-clm"):
        load_adapter("mlm", tiny_clm)


def test_hf_model_plugins_load_and_name_their_weights(tiny_mlm, tmp_path):
    from mlmh.components import LoadContext
    from mlmh.errors import SpecError
    from mlmh.registry import get_registry

    model = get_registry().build("model", f"hf-mlm:path={tiny_mlm}")
    identity = model.identity(LoadContext())
    assert str(tiny_mlm.resolve()) in identity and "@" in identity
    adapter = model.load(LoadContext())
    assert adapter.kind == "mlm" and adapter.identity == identity
    with pytest.raises(SpecError, match="needs path="):
        get_registry().build("model", "hf-clm").load(LoadContext())


@pytest.mark.parametrize("build", ["wordpiece", "byte-level"])
def test_batched_encoding_equals_one_item_at_a_time_through_the_tokenizer_wrapper(build, mlm, tmp_path, monkeypatch):
    adapter = mlm if build == "wordpiece" else _byte_level_clm(tmp_path)
    texts = [TEXT, "Wait!!, what?! No... yes.", "again and again", "x"]
    pairs = [(split_words(t), plan(*range(0, len(split_words(t)), 2))) for t in texts]
    batched = adapter.encode_batch(pairs)
    assert adapter._direct_backend  # plain TokenizersBackend: the Rust tokenizer is called directly
    monkeypatch.setattr(adapter, "_direct_backend", False)  # the wrapper, item by item
    assert [adapter.encode(*pair) for pair in pairs] == batched


@pytest.mark.parametrize("kind", ["mlm", "bpe"])
def test_decoded_words_equal_the_tokenizer_decode_and_one_token_words_come_from_the_table(kind, mlm, tmp_path,
                                                                                         monkeypatch):
    adapter = mlm if kind == "mlm" else _byte_level_clm(tmp_path)
    words = [adapter.tokenizer(w, add_special_tokens=False)["input_ids"] for w in ("again", "lazy", "jumps", "dog,")]
    lists = [*words, words[0] + words[1], words[2][:1]]
    expected = [adapter.tokenizer.decode(ids, skip_special_tokens=True).strip().removeprefix("##") for ids in lists]
    assert adapter.decode_words(lists) == expected
    singles = [ids for ids in lists if len(ids) == 1]
    assert singles, "the test needs one-token words"
    monkeypatch.setattr(adapter, "_decode_lists", lambda lists: pytest.fail(f"decoded {lists} again"))
    assert adapter.decode_words(singles) == [e for ids, e in zip(lists, expected) if len(ids) == 1]


def test_kept_encodings_are_handed_out_as_copies(mlm):
    pair = (split_words(TEXT), plan(1, 3))
    first = mlm.encode_batch([pair])[0]
    expected = (list(first.ids), list(first.masked), list(first.word_of))
    first.ids[0], first.word_of[0] = -7, -7
    first.masked.append(999)
    again = mlm.encode_batch([pair])[0]
    assert (again.ids, again.masked, again.word_of) == expected


@pytest.mark.parametrize("build", ["wordpiece", "byte-level"])
def test_a_masked_word_is_tokenized_once_and_encodings_stay_the_same(build, mlm, tmp_path, monkeypatch):
    import mlmh.adapters.base as adapters

    adapter = mlm if build == "wordpiece" else _byte_level_clm(tmp_path)
    texts = [TEXT, "Wait!!, what?! No... yes.", "again and again"]
    pairs = [(split_words(t), plan(*range(1, len(split_words(t)), 2))) for t in texts]
    adapter._masked_pieces.clear()
    first = adapter.encode_batch(pairs)
    seen: list[str] = []
    tokenize = adapter._tokenize_pieces
    monkeypatch.setattr(adapter, "_tokenize_pieces", lambda pieces: seen.extend(pieces) or tokenize(pieces))
    assert adapter.encode_batch(pairs) == first and not seen  # the encodings are kept
    adapter._encodings.clear()
    assert adapter.encode_batch(pairs) == first
    pieces = [(words.text[s:e], wi) for words, p in pairs for s, e, wi in adapters._cut_pieces(words, p)]
    context = {text for text, wi in pieces if wi < 0}
    masked = {text for text, wi in pieces if wi >= 0}
    masked_only = masked - context
    assert masked_only and set(seen) == context - masked  # only pieces never masked went to the tokenizer again
    # a full table is emptied, never wrong: here it is full and lacks the batch's first masked word only
    first_masked = next(text for text, wi in pieces if wi >= 0 and text in masked_only)
    del adapter._masked_pieces[first_masked]
    monkeypatch.setattr(adapters, "_MASKED_PIECES_KEPT", len(adapter._masked_pieces))
    adapter._encodings.clear()
    assert adapter.encode_batch(pairs) == first
    monkeypatch.setattr(adapters, "_MASKED_PIECES_KEPT", 3)
    adapter._encodings.clear()
    assert adapter.encode_batch(pairs) == first and adapter.encode_batch(pairs) == first
    adapter._masked_pieces.clear()


@pytest.mark.parametrize("kind, spec, path", [("mlm", "mask-predict:steps=3", "tiny_mlm"), ("clm", "clm-infill", "tiny_clm"),
                                              ("seq2seq", "seq2seq-infill", "tiny_seq2seq")])
def test_deferred_weights_are_read_at_the_first_pass_and_generate_what_eager_ones_do(kind, spec, path, request):
    """A run with every sample cached tokenizes and fits windows without the weights; when it does generate,
    the deferred adapter is the eager one (window, banned ids, generations)."""
    from mlmh.generation import fit_to_windows, generate, prepare_items
    from mlmh.registry import get_registry
    from mlmh.types import Document

    checkpoint = request.getfixturevalue(path)
    eager = load_adapter(kind, checkpoint, threads=1)
    deferred = load_adapter(kind, checkpoint, threads=1, defer_weights=True)
    assert not deferred.weights_loaded and eager.weights_loaded
    documents = [Document(id=f"d{n}", text="the cat sat on the mat and then it ran away " * (n + 1)) for n in range(3)]
    assert fit_to_windows(documents, [deferred]) == fit_to_windows(documents, [eager])
    assert (deferred.max_length, deferred.vocab_size) == (eager.max_length, eager.vocab_size)
    assert torch.equal(deferred.banned_ids, eager.banned_ids)
    assert not deferred.weights_loaded  # tokenizing, fitting and the window need no weights
    items = prepare_items(documents, get_registry().build("masking", "random:ratio=0.5"), seed=0)
    sampler = get_registry().build("sampler", spec)
    assert [g.text for g in generate(deferred, sampler, items)] == [g.text for g in generate(eager, sampler, items)]
    assert deferred.weights_loaded


def test_deferred_weights_that_fail_to_load_say_so_in_one_line(tiny_mlm, tmp_path):
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(tiny_mlm, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    adapter = load_adapter("mlm", broken, defer_weights=True)  # tokenizer and config read: fine
    with pytest.raises(ModelError) as info:
        adapter.load_weights()
    assert "\n" not in str(info.value) and not adapter.weights_loaded
