"""Training: matched sizes, each objective trains/saves/loads, masking schedules and budgets, early stopping
on validation, determinism, --init."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from mlmh.errors import SpecError
from mlmh.training.config import (BF16_ACCURACY_TOLERANCE, FRESH_LEARNING_RATE, INIT_LEARNING_RATE, MAX_BUDGET_SCALE, OBJECTIVES, POSITIONS,
                                  SIZES, make_config)
from mlmh.training.data import BatchMaker, infill_example, infill_spans, loss_terms, make_blocks
from mlmh.training.loop import budget_steps, parameter_groups, split_validation, train
from mlmh.training.models import build_model, count_parameters, load_init, train_tokenizer
from mlmh.training.validation import most_frequent_token
from tiny_models import output_rows

WORDS = ("the old captain walked along the quiet harbour and counted the boats while gulls circled "
         "over the grey water ; later she wrote a letter to her brother about the storm").split()
TEXTS = [" ".join(WORDS[(i * 3) % len(WORDS):] + WORDS[: (i * 3) % len(WORDS)]) + "." for i in range(24)]
MICRO = dict(hidden=32, layers=2, heads=2, ffn=64, encoder_layers=1, decoder_layers=1, seq_len=24, batch_size=4,
             vocab_size=120)
AUTO = {"mlm": "AutoModelForMaskedLM", "clm": "AutoModelForCausalLM", "seq2seq": "AutoModelForSeq2SeqLM"}


def micro(objective: str, **kw):
    return make_config(objective, "tiny", **{"max_steps": 3, **MICRO, **kw})


@pytest.mark.parametrize("positions", POSITIONS)
@pytest.mark.parametrize("size", [pytest.param(s, marks=pytest.mark.slow) if s == "base" else s for s in sorted(SIZES)])
def test_parameter_counts_match_within_ten_percent(size, positions):
    for vocab in (SIZES[size].vocab_size, 1500):  # the full vocabulary, and a small sample's (PAN: ~1.5k)
        counts = {o: count_parameters(o, SIZES[size], vocab, positions=positions) for o in OBJECTIVES}
        for objective, n in counts.items():
            assert abs(n / counts["mlm"] - 1) <= 0.10, (size, vocab, counts)
    assert counts["mlm"] < count_parameters("mlm", SIZES["base"]) or size == "base"


@pytest.mark.parametrize("objective", OBJECTIVES)
def test_micro_model_trains_saves_and_loads(objective, tmp_path):
    import transformers

    from mlmh.adapters import load_adapter

    events = []
    card = train(TEXTS, micro(objective), tmp_path, dataset="made-up", progress=events.append, threads=1)
    assert [e["step"] for e in events] == [1, 2, 3] and all(e["stage"] == "train" for e in events)
    assert card["objective"] == objective and card["steps"] == 3 and card["tokens_seen"] > 0
    assert card["heldout_source"].startswith("10% of the train documents (no test split: the blocks that chose")
    assert card["heldout_targets"] > 0
    assert 0 <= card["heldout_accuracy"] <= 1 and 0 <= card["unigram_baseline_accuracy"] <= 1
    assert json.loads((tmp_path / "training_card.json").read_text()) == card
    assert (tmp_path / "model.safetensors").is_file()
    model = getattr(transformers, AUTO[objective]).from_pretrained(tmp_path)
    assert sum(p.numel() for p in model.parameters()) == card["parameters"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert tokenizer.mask_token == "[MASK]" and tokenizer.tokenize("the") == ["the"] != tokenizer.tokenize("The")  # cased
    adapter = load_adapter(objective, tmp_path, identity="micro")
    assert adapter.kind == objective


def test_the_cards_held_out_accuracy_is_on_test_blocks_that_chose_nothing(tmp_path, monkeypatch):
    """Early stopping and the checkpoint read the validation blocks; the card's accuracy (and the plateau check read
    from it) comes from the test texts, which no selection saw."""
    from mlmh.training import loop

    measured = []
    real = loop.final_metrics
    monkeypatch.setattr(loop, "final_metrics", lambda model, tok, config, train_blocks, blocks:
                        measured.append(blocks) or real(model, tok, config, train_blocks, blocks))
    test = [text.upper() for text in TEXTS[:6]]  # other texts: blocks of other tokens than validation's
    card = train(TEXTS[6:], micro("clm"), tmp_path, validation_texts=TEXTS[:6], test_texts=test, threads=1)
    assert card["heldout_source"] == "test split: 6 documents that neither chose the checkpoint nor stopped training"
    (blocks,) = measured  # measured once, on the test blocks
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path)
    assert blocks.ids and blocks.ids == make_blocks(tokenizer, test, card["seq_len"]).ids[:len(blocks.ids)]
    assert blocks.ids != make_blocks(tokenizer, TEXTS[:6], card["seq_len"]).ids[:len(blocks.ids)]


def test_training_is_deterministic_under_a_seed_and_budgets_match(tmp_path):
    cards = [train(TEXTS, micro(o, seed=s), tmp_path / f"{o}{s}{i}", threads=1)
             for o, s, i in [("mlm", 1, 0), ("mlm", 1, 1), ("mlm", 2, 0), ("clm", 1, 0), ("seq2seq", 1, 0)]]
    same_a, same_b, other_seed, clm, seq2seq = cards
    assert same_a["final_loss"] == same_b["final_loss"] and same_a["heldout_loss"] == same_b["heldout_loss"]
    assert (tmp_path / "mlm10" / "model.safetensors").read_bytes() == (tmp_path / "mlm11" / "model.safetensors").read_bytes()
    assert other_seed["final_loss"] != same_a["final_loss"]
    # matched budget: the three objectives see the same blocks, hence the same number of tokens
    assert same_a["tokens_seen"] == clm["tokens_seen"] == seq2seq["tokens_seen"]


def test_clm_learns_beyond_the_unigram_baseline(tmp_path):
    card = train(TEXTS, micro("clm", max_steps=80), tmp_path, validation_texts=TEXTS[:4], threads=1)
    assert card["heldout_accuracy"] > card["unigram_baseline_accuracy"] + 0.2, card


@pytest.mark.parametrize("objective", [pytest.param("mlm", marks=pytest.mark.slow), "clm", "seq2seq"])
def test_bf16_training_keeps_the_held_out_accuracy_within_the_declared_tolerance_of_float32(objective, tmp_path):
    """bf16 autocast (the matrix products; weights and AdamW state float32) against float32, the same recipe, seed
    and data: the card's held-out accuracy on test blocks that chose nothing within BF16_ACCURACY_TOLERANCE; the card
    names the precision, and the bf16 run really ran in bf16 (its losses differ)."""
    unseen = [" ".join(WORDS[(i * 3 + 1) % len(WORDS):] + WORDS[: (i * 3 + 1) % len(WORDS)]) + "." for i in range(8)]
    shape = dict(max_steps=200, hidden=64, ffn=128, batch_size=16, seq_len=40) if objective == "mlm" else {"max_steps": 60}
    cards = {precision: train(TEXTS[4:], micro(objective, precision=precision, **shape), tmp_path / precision,
                              validation_texts=TEXTS[:4], test_texts=unseen, threads=1)
             for precision in ("float32", "bf16")}
    assert cards["bf16"]["precision"] == "bf16" and cards["float32"]["precision"] == "float32"
    assert cards["bf16"]["config"]["precision"] == "bf16"  # in the config that keys the model cache
    assert cards["bf16"]["final_loss"] != cards["float32"]["final_loss"]
    exact, cheap = cards["float32"]["heldout_accuracy"], cards["bf16"]["heldout_accuracy"]
    assert exact > cards["float32"]["unigram_baseline_accuracy"] + 0.1, cards["float32"]  # both learned
    assert abs(cheap - exact) <= BF16_ACCURACY_TOLERANCE, (cheap, exact)


@pytest.mark.parametrize("positions", POSITIONS)
def test_architecture_follows_the_position_scheme(positions, tmp_path):
    expected = {"rotary": ("RoFormerForMaskedLM", "GPTNeoXForCausalLM"), "absolute": ("BertForMaskedLM", "GPT2LMHeadModel")}
    cards = [train(TEXTS, micro(o, max_steps=1, positions=positions), tmp_path / o, threads=1) for o in ("mlm", "clm")]
    assert tuple(c["architecture"] for c in cards) == expected[positions]
    assert all(c["positions"] == positions for c in cards)


@pytest.mark.slow
def test_mlm_learns_beyond_the_unigram_baseline(tmp_path):
    """Held out: rotations of the sentence never trained on, so only context use scores (measured
    0.86 against a unigram 0.19 after 300 steps; BERT's absolute positions stay near 0.24)."""
    unseen = [" ".join(WORDS[(i * 3 + 1) % len(WORDS):] + WORDS[: (i * 3 + 1) % len(WORDS)]) + "." for i in range(10)]
    config = micro("mlm", max_steps=300, hidden=64, ffn=128, batch_size=16, seq_len=40)
    card = train(TEXTS, config, tmp_path, validation_texts=unseen, threads=1)
    assert card["heldout_accuracy"] > card["unigram_baseline_accuracy"] + 0.3, card


def test_unknown_position_scheme_is_a_usage_error():
    with pytest.raises(SpecError, match="unknown positions 'alibi'"):
        make_config("mlm", positions="alibi")


def _blocks(n_texts=40):
    tok = train_tokenizer(TEXTS, 120)
    return tok, make_blocks(tok, TEXTS[:n_texts], 64)


def test_mlm_masks_fifteen_percent_eighty_ten_ten():
    tok, blocks = _blocks()
    maker = BatchMaker("mlm", tok, blocks, ratio=0.15, seed=0)
    chosen = replaced = kept = content = 0
    for _ in range(30):
        batch = maker(blocks.ids)
        labels, inputs = batch["labels"], batch["input_ids"]
        sel = labels != -100
        content += sum(sum(t not in blocks.special_ids for t in row) for row in blocks.ids)
        chosen += int(sel.sum())
        replaced += int((inputs[sel] == tok.mask_token_id).sum())
        kept += int((inputs[sel] == labels[sel]).sum())
        assert not any(labels[i, 0] != -100 for i in range(len(blocks.ids)))  # [CLS] never chosen
    assert 0.13 < chosen / content < 0.17
    assert 0.77 < replaced / chosen < 0.83 and 0.08 < kept / chosen < 0.13


@pytest.mark.parametrize("n", [1, 5, 20, 126, *range(30, 40)])
def test_infill_spans_hide_the_budget_with_separated_spans(n):
    rng = np.random.default_rng(n)
    spans = infill_spans(n, 0.15, rng)
    assert sum(length for _, length in spans) == round(0.15 * n)
    assert len(spans) <= sum(length for _, length in spans)  # so the source is never longer than the block
    ends = [(s, s + max(length, 1)) for s, length in spans]
    for (s1, e1), (s2, _) in zip(ends, ends[1:]):
        assert s2 > e1  # at least one visible token between spans: one [MASK] per span


def test_infill_example_replaces_each_span_by_one_mask():
    tok, blocks = _blocks(4)
    rng = np.random.default_rng(0)
    block = blocks.ids[0]
    for _ in range(200):  # corrupted sources always fit the window the blocks were cut for
        assert len(infill_example(block, blocks, tok.mask_token_id, 0.15, rng)[0]) <= len(block)
    source, hidden = infill_example(block, blocks, tok.mask_token_id, 0.3, rng)
    assert source[0] == block[0] and source[-1] == block[-1]
    visible = [t for t, h in zip(block, hidden) if not h]
    assert [t for t in source if t != tok.mask_token_id] == visible
    n_masks = source.count(tok.mask_token_id)
    runs = sum(1 for i, h in enumerate(hidden) if h and (i == 0 or not hidden[i - 1]))
    assert n_masks >= runs >= 1  # zero-length spans add masks without hiding tokens


def test_unknown_objective_and_size_are_usage_errors():
    with pytest.raises(SpecError, match="unknown objective 'xlm'"):
        make_config("xlm")
    with pytest.raises(SpecError, match="unknown size 'huge'"):
        make_config("mlm", "huge")
    with pytest.raises(SpecError, match="either --max-steps or --epochs"):
        make_config("mlm", max_steps=3, epochs=1)
    with pytest.raises(SpecError, match="--patience-tokens must be >= 0"):
        make_config("mlm", patience_tokens=-1)


def test_init_rejects_a_directory_that_is_not_a_model(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(SpecError, match="not a model directory"):
        load_init(str(tmp_path), "mlm")
    with pytest.raises(SpecError, match="no such directory"):
        load_init(str(tmp_path / "missing"), "mlm")


def test_init_rejects_an_objective_the_architecture_does_not_have(tiny_clm, tiny_seq2seq):
    with pytest.raises(SpecError, match="GPT2LMHeadModel checkpoint cannot be trained with objective 'mlm'; train it with objective clm"):
        load_init(str(tiny_clm), "mlm")
    with pytest.raises(SpecError, match="BartForConditionalGeneration checkpoint cannot be trained with objective 'mlm'"):
        load_init(str(tiny_seq2seq), "mlm")
    with pytest.raises(SpecError, match="GPT2LMHeadModel checkpoint cannot be trained with objective 'seq2seq'.*only an encoder"):
        load_init(str(tiny_clm), "seq2seq")


@pytest.mark.parametrize("objective,auto,architecture", [
    ("clm", "AutoModelForCausalLM", "LMHeadModel"),
    ("seq2seq", "AutoModelForSeq2SeqLM", "EncoderDecoderModel"),
])
def test_a_masked_lm_checkpoint_starts_the_other_objectives(tiny_mlm, tmp_path, objective, auto, architecture):
    """The paper's pairing: one pretrained masked LM fine-tuned as a causal LM, and warm-starting both sides of
    an encoder-decoder (Rothe et al. 2020); each result loads with the matching AutoModelFor... class."""
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM

    card = train(TEXTS, micro(objective, init=str(tiny_mlm), max_steps=3), tmp_path, threads=1)
    assert card["init"] == str(tiny_mlm) and card["objective"] == objective and card["steps_run"] == 3
    loaded = getattr(transformers, auto).from_pretrained(tmp_path)
    assert type(loaded).__name__.endswith(architecture)
    start = AutoModelForMaskedLM.from_pretrained(tiny_mlm).state_dict()
    query = next(k for k in start if k.endswith("layer.0.attention.self.query.weight"))
    encoder = loaded.encoder if objective == "seq2seq" else loaded
    started = encoder.state_dict()[next(k for k in encoder.state_dict() if k.endswith("layer.0.attention.self.query.weight"))]
    assert started.shape == start[query].shape and not torch.equal(started, start[query])  # started there, then trained
    if objective == "seq2seq":
        assert loaded.config.decoder.is_decoder and loaded.config.decoder.add_cross_attention


@pytest.mark.parametrize("frozen", [True, False])
@pytest.mark.parametrize("objective", ["mlm", "clm", "seq2seq"])
def test_frozen_embeddings_stay_as_pretrained_while_the_layers_train(tiny_mlm, tmp_path, objective, frozen):
    import torch
    import transformers
    from transformers import AutoModelForMaskedLM

    card = train(TEXTS, micro(objective, init=str(tiny_mlm), max_steps=3, freeze_embeddings=frozen), tmp_path, threads=1)
    assert card["embeddings_frozen"] is frozen
    start = AutoModelForMaskedLM.from_pretrained(tiny_mlm)
    auto = {"mlm": "AutoModelForMaskedLM", "clm": "AutoModelForCausalLM", "seq2seq": "AutoModelForSeq2SeqLM"}[objective]
    loaded = getattr(transformers, auto).from_pretrained(tmp_path)
    parts = [loaded.encoder, loaded.decoder] if objective == "seq2seq" else [loaded]
    pretrained = start.get_input_embeddings().weight
    for part in parts:
        assert torch.equal(part.get_input_embeddings().weight, pretrained) is frozen
    layer = lambda model: next(v for k, v in model.state_dict().items() if k.endswith("layer.0.attention.self.query.weight"))
    assert not torch.equal(layer(parts[0]), layer(start))  # the layers trained either way


@pytest.mark.parametrize("start", ["scratch", "pretrained"])
def test_span_targets_give_a_wordpiece_seq2seq_sentinels_it_trains_and_regenerates_through(tiny_mlm, tmp_path, start):
    import torch
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from mlmh.adapters.decoding import Seq2SeqAdapter
    from mlmh.adapters.sentinels import sentinel_ids
    from mlmh.training.corruption import CORRUPTION_NOTES, SPAN_CORRUPTION
    from mlmh.training.models import ADDED_SENTINELS
    from mlmh.training.loop import target_share

    init = dict(init=str(tiny_mlm), freeze_embeddings=True) if start == "pretrained" else {}
    config = micro("seq2seq", span_targets=True, **init)
    assert target_share(config) == pytest.approx(0.15 * (1 + 1 / 3))  # the hidden share and a sentinel per span
    card = train(TEXTS, config, tmp_path, threads=1)
    assert card["corruption"] == CORRUPTION_NOTES[SPAN_CORRUPTION] and card["config"]["span_targets"] is True
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    sentinels = sentinel_ids(tokenizer)
    assert len(sentinels) == ADDED_SENTINELS
    model = AutoModelForSeq2SeqLM.from_pretrained(tmp_path)
    tables = [model.encoder, model.decoder] if start == "pretrained" else [model]
    for part in tables:
        rows = part.get_input_embeddings().weight[sentinels]
        assert len(torch.unique(rows, dim=0)) == ADDED_SENTINELS  # told apart, frozen or not
    if start == "pretrained":  # the same rows on both sides
        assert torch.equal(model.encoder.get_input_embeddings().weight[sentinels],
                           model.decoder.get_input_embeddings().weight[sentinels])
    assert Seq2SeqAdapter(model, tokenizer, identity="span").style == "sentinel"  # regenerates as T5 does


def test_span_targets_are_the_seq2seq_objectives_and_enter_the_cache_key_only_when_set():
    with pytest.raises(SpecError, match="span.targets applies to the seq2seq objective only"):
        make_config("mlm", span_targets=True)
    assert "span_targets" not in make_config("seq2seq").to_dict()  # the keys of models trained before
    assert make_config("seq2seq", span_targets=True).to_dict()["span_targets"] is True


def test_only_a_pretrained_start_freezes_embeddings_and_the_choice_enters_the_cache_key():
    with pytest.raises(SpecError, match="freeze.embeddings applies to a pretrained start"):
        make_config("mlm", freeze_embeddings=True)
    assert "freeze_embeddings" not in make_config("mlm", init="minilm").to_dict()  # the keys of models trained before
    assert make_config("mlm", init="minilm", freeze_embeddings=True).to_dict()["freeze_embeddings"] is True


@pytest.mark.parametrize("positions", ["rotary", "absolute"])
@pytest.mark.parametrize("objective", ["mlm", "clm", "seq2seq"])
def test_dropout_sets_every_rate_a_model_drops_with_and_only_while_it_trains(tiny_mlm, objective, positions):
    """Every architecture a trained-* model builds or starts from (BERT's dropout layers, BART's and GPT-NeoX's rates
    kept as numbers): each rate becomes the setting, training forwards then differ, evaluation ones do not."""
    import torch

    from mlmh.training.loop import set_dropout

    tokenizer = train_tokenizer(TEXTS, 120)
    built = build_model(objective, micro(objective, positions=positions).shape, tokenizer, positions)
    started = load_init(str(tiny_mlm), objective)[0] if positions == "rotary" else None
    for model in [m for m in (built, started) if m is not None]:
        set_dropout(model, 0.45)
        rates = [m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)]
        rates += [v for m in model.modules() for k, v in vars(m).items() if "dropout" in k and isinstance(v, float)]
        assert rates and set(rates) == {0.45}
        ids = torch.tensor([[2, 7, 8, 9, 10, 11, 3]])
        inputs = {"input_ids": ids, **({"decoder_input_ids": ids} if objective == "seq2seq" else {})}
        model.train()
        assert not torch.equal(model(**inputs).logits, model(**inputs).logits)
        model.eval()
        assert torch.equal(model(**inputs).logits, model(**inputs).logits)


def test_dropout_is_checked_and_enters_the_cache_key_and_the_card_only_when_set(tmp_path):
    with pytest.raises(SpecError, match="dropout must be at least 0 and below 1"):
        make_config("clm", dropout=1.0)
    assert "dropout" not in make_config("clm").to_dict()  # the keys of models trained before
    assert make_config("clm", dropout=0.3).to_dict()["dropout"] == 0.3
    assert train(TEXTS, micro("clm", max_steps=2, dropout=0.3), tmp_path, threads=1)["dropout"] == 0.3


def test_init_continues_pretraining_a_checkpoint_with_its_tokenizer(tiny_mlm, tmp_path):
    import torch
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    card = train(TEXTS, micro("mlm", init=str(tiny_mlm)), tmp_path, threads=1)
    assert card["init"] == str(tiny_mlm) and card["vocabulary"].startswith("the tokenizer of")
    assert card["fresh_parameters"] == [] and card["fresh_learning_rate"] is None  # its own head continues
    assert AutoTokenizer.from_pretrained(tmp_path).get_vocab() == AutoTokenizer.from_pretrained(tiny_mlm).get_vocab()
    before = AutoModelForMaskedLM.from_pretrained(tiny_mlm).state_dict()
    after = AutoModelForMaskedLM.from_pretrained(tmp_path).state_dict()
    assert before.keys() == after.keys()
    assert any(not torch.equal(before[k], after[k]) for k in before)  # it trained


@pytest.mark.parametrize("objective", ["mlm", "clm", "seq2seq"])
def test_init_minilm_keeps_the_pretrained_encoder(objective):
    import torch
    from safetensors.torch import load_file

    from mlmh.training.models import minilm_dir

    model, tokenizer, fresh = load_init("minilm", objective)
    pretrained = load_file(minilm_dir() / "model.safetensors")
    key = next(k for k in pretrained if k.endswith("encoder.layer.0.attention.self.query.weight"))
    if objective == "seq2seq":  # both sides start from MiniLM; the decoder's cross-attention is new
        assert type(model).__name__ == "EncoderDecoderModel"
        for side in (model.encoder, model.decoder.bert):
            assert torch.equal(side.encoder.layer[0].attention.self.query.weight, pretrained[key])
        assert model.config.decoder_start_token_id == tokenizer.cls_token_id
        assert model.decoder.bert.encoder.layer[0].crossattention is not None
        assert fresh and all(n.startswith("decoder.") for n in fresh)  # the new cross-attention and head
        assert any(".crossattention." in n for n in fresh) and "decoder.cls.predictions.bias" in fresh
        assert not any("embeddings" in n or ".attention.self." in n for n in fresh)  # pretrained: not fresh
        return
    assert type(model).__name__ == ("BertForMaskedLM" if objective == "mlm" else "BertLMHeadModel")
    assert model.config.is_decoder == (objective == "clm")
    assert torch.equal(model.bert.encoder.layer[0].attention.self.query.weight, pretrained[key])
    head = model.cls.predictions.decoder.weight
    assert head.data_ptr() == model.bert.embeddings.word_embeddings.weight.data_ptr()  # tied head
    assert tokenizer.mask_token == "[MASK]"
    # the packaged sentence encoder has no MLM head: its transform and output bias start fresh, and learn faster
    assert fresh == {"cls.predictions.bias", "cls.predictions.transform.dense.weight",
                     "cls.predictions.transform.dense.bias", "cls.predictions.transform.LayerNorm.weight",
                     "cls.predictions.transform.LayerNorm.bias"}
    config = make_config(objective, init="minilm")
    base, new = parameter_groups(model, config, fresh)
    assert base["lr"] == config.learning_rate == INIT_LEARNING_RATE and new["lr"] == FRESH_LEARNING_RATE
    named = dict(model.named_parameters())
    assert {id(p) for p in new["params"]} == {id(named[n]) for n in fresh}
    assert len(base["params"]) + len(new["params"]) == len(named)


def test_epochs_set_the_number_of_steps_from_the_data(tmp_path):
    card = train(TEXTS, micro("clm", max_steps=0, epochs=0.5), tmp_path, threads=1)
    assert card["steps"] == -(-card["train_blocks"] // (2 * MICRO["batch_size"]))
    assert card["tokens_seen"] <= card["train_blocks"] * MICRO["seq_len"] / 2 + MICRO["batch_size"] * MICRO["seq_len"]


def test_mlm_masks_come_from_the_seed_not_the_global_rng():
    import torch

    tok, blocks = _blocks(8)
    first = BatchMaker("mlm", tok, blocks, ratio=0.15, seed=3, mask_only=True)(blocks.ids)
    torch.rand(100)  # disturb the global generator
    second = BatchMaker("mlm", tok, blocks, ratio=0.15, seed=3, mask_only=True)(blocks.ids)
    assert torch.equal(first["input_ids"], second["input_ids"]) and torch.equal(first["labels"], second["labels"])
    assert (first["input_ids"][first["labels"] != -100] == tok.mask_token_id).all()  # evaluation: all [MASK]


@pytest.mark.slow
def test_tokenizer_training_is_reproducible_across_processes():
    """The trainer's tie-breaking varies per process; the canonical vocabulary must not."""
    import subprocess
    import sys

    script = ("import hashlib, json; from mlmh.registry import get_registry; "
              "from mlmh.training.models import train_tokenizer; "
              "corpus = get_registry().build('dataset', 'pan').load(None); "
              "tok = train_tokenizer([d.text for d in corpus.split('train')], 6000); "
              "ids = [tok(d.text)['input_ids'] for d in corpus.split('test')]; "
              "print(hashlib.sha256(json.dumps([sorted(tok.get_vocab().items()), ids]).encode()).hexdigest())")
    digests = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.strip()
               for _ in range(3)}
    assert len(digests) == 1, digests


SPECIALS = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}


def test_canonical_vocabulary_keeps_used_tokens_and_single_characters():
    tok = train_tokenizer(TEXTS, 120)
    vocab = tok.get_vocab()
    assert [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])][:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    used = {t for text in TEXTS for t in tok.tokenize(text)}
    assert "[UNK]" not in used
    assert {t for t in vocab if len(t.removeprefix("##")) > 1 and t not in SPECIALS} <= used  # no unused merges
    pieces = tok.tokenize("harbours")  # an unseen word is spelled with kept pieces
    assert "".join(p.removeprefix("##") for p in pieces) == "harbours" and "[UNK]" not in pieces


# -- masking schedules -----------------------------------------------------------------------------

def _long_blocks():
    """Blocks of ~60 content tokens, so per-sequence shares are measurable."""
    tok = train_tokenizer(TEXTS, 120)
    long_texts = [" ".join([TEXTS[i], TEXTS[(i + 5) % len(TEXTS)]]) for i in range(len(TEXTS))]
    return tok, make_blocks(tok, long_texts, 128)


def _content(blocks, row):
    return sum(t not in blocks.special_ids for t in row)


def test_uniform_schedule_masks_one_to_all_tokens_uniformly_all_with_mask():
    tok, blocks = _long_blocks()
    maker = BatchMaker("mlm", tok, blocks, ratio=None, seed=0, schedule="uniform")
    shares = []
    for _ in range(40):
        batch = maker(blocks.ids)
        chosen = batch["labels"] != -100
        assert (batch["input_ids"][chosen] == tok.mask_token_id).all()  # no random or kept tokens
        assert not chosen[:, 0].any()  # [CLS] is never masked
        for i, row in enumerate(blocks.ids):
            n, k = _content(blocks, row), int(chosen[i].sum())
            assert 1 <= k <= n
            shares.append(k / n)
    shares = np.array(shares)
    assert abs(shares.mean() - 0.5) < 0.04  # E[k/N] = (N+1)/2N ~ 0.5
    assert shares.min() < 0.1 and shares.max() > 0.9  # the whole range is visited
    assert 0.2 < np.mean(shares < 0.25) < 0.3 and 0.2 < np.mean(shares > 0.75) < 0.3  # flat, not bell-shaped
    assert "loss_weight" not in batch


def test_mdlm_schedule_masks_at_the_drawn_rate_and_weights_by_its_inverse():
    tok, blocks = _long_blocks()
    maker = BatchMaker("mlm", tok, blocks, ratio=None, seed=0, schedule="mdlm")
    t_values, shares = [], []
    for _ in range(20):
        batch = maker(blocks.ids)
        chosen = batch["labels"] != -100
        assert (batch["input_ids"][chosen] == tok.mask_token_id).all()
        t = 1 / batch["loss_weight"].numpy()
        assert t.min() >= 1e-3 and t.max() <= 1
        assert int(batch["loss_tokens"]) == sum(_content(blocks, r) for r in blocks.ids)
        t_values.extend(t)
        shares.extend(int(chosen[i].sum()) / _content(blocks, row) for i, row in enumerate(blocks.ids))
    t_values, shares = np.array(t_values), np.array(shares)
    assert abs(t_values.mean() - 0.5) < 0.05 and abs(np.mean(t_values < 0.2) - 0.2) < 0.06  # t ~ U(0, 1)
    assert np.corrcoef(t_values, shares)[0, 1] > 0.95 and np.abs(t_values - shares).mean() < 0.06


def test_mdlm_loss_is_the_inverse_rate_weighted_masked_cross_entropy_per_token():
    import torch

    tok, blocks = _long_blocks()
    torch.manual_seed(0)
    model = build_model("mlm", dataclasses.replace(SIZES["tiny"], **{**MICRO, "seq_len": 128}), tok).eval()
    batch = BatchMaker("mlm", tok, blocks, ratio=None, seed=1, schedule="mdlm")(blocks.ids[:6])
    with torch.no_grad():
        summed, count = loss_terms(model, "mlm", batch)
        logp = torch.log_softmax(model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits, -1)
    expected = 0.0
    for i in range(6):
        for j in torch.nonzero(batch["labels"][i] != -100).flatten().tolist():
            expected += -float(logp[i, j, batch["labels"][i, j]]) * float(batch["loss_weight"][i])
    assert count == sum(_content(blocks, r) for r in blocks.ids[:6])
    assert float(summed) == pytest.approx(expected, rel=1e-4)


def test_the_mlm_loss_reads_only_the_masked_positions_with_the_full_logits_value_and_gradient():
    import torch

    tok, blocks = _long_blocks()
    torch.manual_seed(0)
    model = build_model("mlm", dataclasses.replace(SIZES["tiny"], **{**MICRO, "seq_len": 128}), tok).eval()
    batch = BatchMaker("mlm", tok, blocks, ratio=0.15, seed=1)(blocks.ids[:6])
    masked = int((batch["labels"] != -100).sum())
    with output_rows(model) as rows:
        summed, count = loss_terms(model, "mlm", batch)
    summed.backward()
    trained = [(name, p) for name, p in model.named_parameters() if p.requires_grad]  # not the fixed rotary table
    read = {name: p.grad.clone() for name, p in trained}
    model.zero_grad()
    full = model(**batch).loss * masked  # transformers' own loss over every position's logits
    full.backward()
    assert rows == [masked] and count == masked and 0 < masked < batch["labels"].numel()
    assert float(summed) == pytest.approx(float(full), rel=1e-5)
    for name, p in trained:
        assert torch.allclose(read[name], p.grad, rtol=1e-4, atol=1e-6), name


@pytest.mark.parametrize("schedule", ["uniform", "mdlm"])
def test_schedules_are_seeded(schedule):
    import torch

    tok, blocks = _long_blocks()
    first = BatchMaker("mlm", tok, blocks, ratio=None, seed=4, schedule=schedule)(blocks.ids)
    torch.rand(10)
    np.random.rand(10)
    second = BatchMaker("mlm", tok, blocks, ratio=None, seed=4, schedule=schedule)(blocks.ids)
    other = BatchMaker("mlm", tok, blocks, ratio=None, seed=5, schedule=schedule)(blocks.ids)
    assert torch.equal(first["input_ids"], second["input_ids"]) and torch.equal(first["labels"], second["labels"])
    assert not torch.equal(first["labels"], other["labels"])


@pytest.mark.parametrize("schedule", ["uniform", "mdlm"])
def test_each_schedule_trains_deterministically(schedule, tmp_path):
    cards = [train(TEXTS, micro("mlm", mask_schedule=schedule, max_steps=4), tmp_path / str(i), threads=1)
             for i in range(2)]
    assert cards[0]["final_loss"] == cards[1]["final_loss"] and cards[0]["mask_schedule"] == schedule
    assert cards[0]["mask_ratio"] is None and cards[0]["validation_curve"] == cards[1]["validation_curve"]


@pytest.mark.parametrize("kwargs,message", [
    (dict(objective="clm", mask_schedule="uniform"), "--mask-schedule applies to the mlm objective only; 'clm'"),
    (dict(objective="mlm", mask_schedule="cosine"), "unknown mask schedule 'cosine'"),
    (dict(objective="mlm", mask_schedule="mdlm", mask_ratio=0.3), "--mask-ratio applies to the mlm objective's fixed"),
    (dict(objective="seq2seq", mask_ratio=0.3), "--mask-ratio applies to the mlm objective's fixed"),
    (dict(objective="mlm", mask_ratio=1.5), "--mask-ratio must be between 0 and 1"),
    (dict(objective="mlm", budget="flops"), "unknown budget 'flops'"),
    (dict(objective="mlm", patience_tokens=-1), "must be >= 0"),
])
def test_bad_schedule_ratio_and_budget_are_usage_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        make_config(kwargs.pop("objective"), **kwargs)


def test_config_resolves_schedule_and_ratio_per_objective():
    assert (make_config("mlm").mask_schedule, make_config("mlm").mask_ratio) == ("fixed", 0.4)
    assert make_config("mlm", mask_ratio=0.4).mask_ratio == 0.4
    assert make_config("mlm", mask_schedule="uniform").mask_ratio is None
    assert (make_config("clm").mask_schedule, make_config("clm").mask_ratio) == ("", None)
    assert make_config("seq2seq").mask_ratio == 0.15  # BART's infilling share


# -- budgets ---------------------------------------------------------------------------------------

def test_budget_rules_scale_the_step_budget():
    assert budget_steps(make_config("mlm"), 300, 1500)[0] == 300  # tokens
    steps, note = budget_steps(make_config("mlm", budget="targets", mask_ratio=0.15), 300, 1500)
    assert steps == 2000 and "6.67x" in note  # 1 / 0.15
    assert budget_steps(make_config("mlm", budget="targets"), 300, 1500)[0] == 750  # the default 0.4: 1 / 0.4
    assert budget_steps(make_config("mlm", budget="targets", mask_ratio=0.05), 300, 1500)[0] == 300 * MAX_BUDGET_SCALE
    assert "capped" in budget_steps(make_config("mlm", budget="targets", mask_ratio=0.05), 300, 1500)[1]
    assert budget_steps(make_config("mlm", budget="targets", mask_schedule="mdlm"), 300, 1500)[0] == 600
    assert budget_steps(make_config("clm", budget="targets"), 300, 1500)[0] == 300
    assert budget_steps(make_config("clm", budget="compute"), 300, 1500)[0] == 300
    mlm_compute = budget_steps(make_config("mlm", budget="compute"), 300, 1500)[0]
    ratio = count_parameters("clm", SIZES["tiny"], 1500) / count_parameters("mlm", SIZES["tiny"], 1500)
    assert mlm_compute == round(300 * ratio) and abs(mlm_compute / 300 - 1) <= 0.1  # matched sizes: ~ tokens


def test_max_passes_caps_every_budget_at_passes_over_the_train_targets():
    # 100 blocks of batch 16: one pass over the CLM's targets is 7 steps (ceil 6.25); the MLM supervises 40% of its
    # tokens, so its pass takes 2.5x the steps: matched targets stay matched under the cap
    clm, note = budget_steps(make_config("clm", budget="targets", max_passes=2), 300, 1500, blocks=100)
    assert clm == 13 and "capped at 2 passes" in note and "100 blocks" in note
    mlm, _ = budget_steps(make_config("mlm", budget="targets", max_passes=2), 300, 1500, blocks=100)
    assert mlm == 32  # ceil(2 x 100 / (16 x 0.4))
    within, note = budget_steps(make_config("clm", budget="targets", max_passes=2), 10, 1500, blocks=100)
    assert within == 10 and "within 2 passes" in note
    assert budget_steps(make_config("clm", budget="targets"), 300, 1500, blocks=100)[0] == 300  # no cap by default
    assert "max_passes" not in make_config("clm").to_dict()  # an unset cap keeps the keys of models trained before it
    assert make_config("clm", max_passes=2).to_dict()["max_passes"] == 2
    with pytest.raises(SpecError, match="max_passes"):
        make_config("clm", max_passes=-1, spelled=lambda key: f"trained-clm:{key}")

def test_card_counts_tokens_targets_and_flops(tmp_path):
    clm = train(TEXTS, micro("clm", max_steps=2), tmp_path / "clm", threads=1)
    assert clm["budget"] == "tokens" and clm["supervised_targets"] == clm["tokens_seen"] - 2 * MICRO["batch_size"]
    assert clm["approx_train_flops"] == 6 * clm["parameters"] * clm["tokens_seen"]
    mlm = train(TEXTS, micro("mlm", max_steps=2, budget="targets"), tmp_path / "mlm", threads=1)
    assert mlm["steps"] == round(2 / 0.4) and mlm["supervised_targets"] < 0.6 * mlm["tokens_seen"]  # default ratio 0.4


# -- validation and early stopping -----------------------------------------------------------------

def test_fallback_validation_is_a_tenth_of_the_texts_and_seed_free():
    train_texts, validation = split_validation(TEXTS)
    assert len(validation) == 2 and len(train_texts) == 22 and not set(validation) & set(train_texts)
    assert split_validation(TEXTS) == (train_texts, validation)


def _scripted_validation(monkeypatch, script, snapshots=None):
    """Replace validation by a script of (loss, accuracy) with a unigram baseline accuracy of 0.1."""
    from mlmh.training import loop, stopping

    script = iter(script)

    def scripted(model, objective, batches, baseline_token, vocabulary=None):
        if snapshots is not None:
            snapshots[len(snapshots) + 1] = {k: v.clone() for k, v in model.state_dict().items()}
        loss, accuracy = next(script)
        return stopping.Validation(loss, accuracy, 0.1, 10_000)

    monkeypatch.setattr(loop, "validate", scripted)


def _tokens_per_step(tmp_path):
    card = train(TEXTS, micro("clm", max_steps=8, eval_every=8), tmp_path / "probe", threads=1)
    return card["tokens_seen"] / 8


def _stopped_by_the_token_rule(card):
    """The run stopped at the first evaluation ``patience_tokens`` tokens after the kept one (off the plateau)."""
    curve = card["validation_curve"]
    kept = next(p["tokens"] for p in curve if p["step"] == card["step_kept"])
    waited = [p["tokens"] - kept for p in curve if p["step"] >= max(card["step_kept"], card["left_plateau_at_step"])]
    return waited[-1] >= card["patience_tokens"] > max(waited[:-1], default=-1)


def test_early_stopping_restores_the_best_step_and_stops_on_patience_in_tokens(tmp_path, monkeypatch):
    """A scripted validation curve (best at the 3rd evaluation, then worse): training stops once
    ``patience_tokens`` training tokens pass without a new best and saves the weights of the 3rd evaluation."""
    import torch
    from transformers import AutoModelForCausalLM

    per_step = _tokens_per_step(tmp_path)
    snapshots = {}
    _scripted_validation(monkeypatch, [(5.0, 0.3), (4.0, 0.3), (3.0, 0.3), (3.5, 0.3), (3.2, 0.3), (3.1, 0.3),
                                       (3.4, 0.3), (2.0, 0.3)], snapshots)
    card = train(TEXTS, micro("clm", max_steps=40, eval_every=2, patience_tokens=int(7 * per_step)), tmp_path, threads=1)
    assert card["stopped_early"] and 10 <= card["steps_run"] <= 16 and card["step_kept"] == 6
    assert _stopped_by_the_token_rule(card)
    assert card["stop_reason"].startswith("stopped early: neither validation loss nor validation accuracy improved for")
    assert card["left_plateau_at_step"] == 2 and card["validation_accuracy"] == 0.3
    assert card["validation_loss"] == 3.0 and card["steps"] == 40
    assert [p["step"] for p in card["validation_curve"]] == list(range(2, card["steps_run"] + 1, 2))
    assert [p["step"] for p in card["train_curve"]] == list(range(2, card["steps_run"] + 1, 2))
    assert 0 < card["tokens_seen_at_kept_step"] < card["tokens_seen"]
    saved = AutoModelForCausalLM.from_pretrained(tmp_path).state_dict()
    for key, value in saved.items():
        assert torch.equal(value, snapshots[3][key]), key
    assert any(not torch.equal(snapshots[3][k], snapshots[5][k]) for k in saved)  # it did train on after


def test_no_model_stops_early_on_the_unigram_plateau_nor_keeps_a_checkpoint_from_it(tmp_path, monkeypatch):
    """A loss lowest at the 2nd evaluation, but the accuracy stays at the unigram baseline's until the 6th (the
    gmlm MLMs on real text: their validation loss was lowest at step 10, before they had learned anything):
    the patience starts to count there, and the checkpoints on the plateau no longer compete."""
    per_step = _tokens_per_step(tmp_path)
    on_plateau = [(5.0, 0.1), (4.0, 0.05), (4.1, 0.1), (4.2, 0.1), (4.3, 0.1), (4.4, 0.2)]
    _scripted_validation(monkeypatch, on_plateau + [(4.5, 0.2)] * 20)
    card = train(TEXTS, micro("clm", max_steps=40, eval_every=2, patience_tokens=int(4 * per_step)), tmp_path, threads=1)
    assert card["left_plateau_at_step"] == 12 and card["step_kept"] == 12 and card["validation_loss"] == 4.4
    assert card["stopped_early"] and 14 <= card["steps_run"] <= 20
    assert _stopped_by_the_token_rule(card)
    _scripted_validation(monkeypatch, [(5.0 - i / 100, 0.1) for i in range(20)])
    card = train(TEXTS, micro("clm", max_steps=40, eval_every=2, patience_tokens=int(1.5 * per_step)), tmp_path / "b", threads=1)
    assert not card["stopped_early"] and card["steps_run"] == 40
    assert card["stop_reason"].startswith("budget spent while still on the unigram plateau")


def test_a_model_whose_validation_accuracy_rises_while_its_loss_rises_trains_on_and_keeps_the_best_accuracy(
        tmp_path, monkeypatch):
    """The gmlm MLMs on real text: off the plateau their validation loss rose while their accuracy rose. The
    accuracy's improvements reset the patience, and the kept weights are those of the highest accuracy (the
    earlier of two equal ones, whose loss is lower), not those of the lowest loss."""
    import torch
    from transformers import AutoModelForCausalLM

    per_step = _tokens_per_step(tmp_path)
    snapshots = {}
    rising = [(4.0, 0.1), (4.1, 0.2), (4.3, 0.22), (4.6, 0.25), (4.8, 0.25), (5.0, 0.24), (5.2, 0.25)]
    _scripted_validation(monkeypatch, rising + [(5.5, 0.2)] * 20, snapshots)
    card = train(TEXTS, micro("clm", max_steps=40, eval_every=2, patience_tokens=int(5 * per_step)), tmp_path, threads=1)
    assert card["left_plateau_at_step"] == 4 and card["step_kept"] == 8
    assert card["validation_loss"] == 4.6 and card["validation_accuracy"] == 0.25
    # the loss never improved after step 2, the accuracy last at step 8: the loss rule would have stopped at ~10
    assert card["stopped_early"] and 13 <= card["steps_run"] <= 16
    improved_at = next(p["tokens"] for p in card["validation_curve"] if p["step"] == 8)
    waited = [p["tokens"] - improved_at for p in card["validation_curve"] if p["step"] >= 8]
    assert waited[-1] >= card["patience_tokens"] > max(waited[:-1])
    assert card["selection"].startswith("lowest validation loss while on the unigram plateau; once off it, the highest")
    saved = AutoModelForCausalLM.from_pretrained(tmp_path).state_dict()
    for key, value in saved.items():
        assert torch.equal(value, snapshots[4][key]), key


def test_validation_accuracy_counts_the_judged_tokens_beside_the_unigram_baseline():
    import torch

    from mlmh.training.stopping import Validation
    from mlmh.training.validation import validate

    tok, blocks = _blocks(8)
    torch.manual_seed(0)
    model = build_model("clm", dataclasses.replace(SIZES["tiny"], **MICRO), tok)
    batches = [BatchMaker("clm", tok, blocks, ratio=None, seed=0)(blocks.ids[:4])]
    baseline = most_frequent_token(blocks)
    result = validate(model, "clm", batches, baseline)
    gold = batches[0]["labels"][:, 1:]
    gold = gold[gold != -100]
    assert result.baseline_accuracy == pytest.approx(float((gold == baseline).float().mean()))
    assert 0 <= result.accuracy <= 1 and result.loss > 0
    assert result.targets == gold.numel()
    assert Validation(1.0, 0.2, 0.1, 1000).off_plateau and not Validation(1.0, 0.1, 0.1, 1000).off_plateau
    # 0.0335 against 0.033 over 2,500 tokens is noise (the gmlm MLMs on real text), 0.05 is not
    assert not Validation(1.0, 0.0335, 0.033, 2500).off_plateau and Validation(1.0, 0.05, 0.033, 2500).off_plateau


def test_a_validation_curve_that_keeps_falling_trains_the_whole_budget(tmp_path):
    """The curve differs from process to process (the WordPiece trainer breaks ties in hash-map order, so the
    vocabulary does), and with it whether the lowest loss or the highest accuracy is kept (mlmh.training.stopping): the
    test holds for any vocabulary, as it must under pytest -n 2, where each worker trains its own."""
    card = train(TEXTS, micro("clm", max_steps=12, eval_every=3), tmp_path, validation_texts=TEXTS[:4], threads=1)
    curve = card["validation_curve"]
    losses, accuracies = [p["loss"] for p in curve], [p["accuracy"] for p in curve]
    assert not card["stopped_early"] and card["steps_run"] == 12 and [p["step"] for p in curve] == [3, 6, 9, 12]
    kept = next(p for p in curve if p["step"] == card["step_kept"])
    assert card["validation_loss"] == kept["loss"]
    assert kept["loss"] == min(losses) or kept["accuracy"] == max(accuracies)
    assert card["heldout_source"].startswith("validation split (no test split") and card["validation_documents"] == 4


@pytest.mark.slow
def test_mlm_card_reports_accuracy_at_inference_ratios(tmp_path):
    card = train(TEXTS, micro("mlm", max_steps=3, mask_ratio=0.5), tmp_path, threads=1)
    assert set(card["accuracy_at_ratio"]) == {"0.15", "0.5", "0.8"}
    targets = [card["accuracy_at_ratio"][r]["targets"] for r in ("0.15", "0.5", "0.8")]
    assert targets[0] < targets[1] < targets[2]  # all-[MASK] masking at the named ratio
    assert card["accuracy_at_ratio"]["0.5"]["accuracy"] == card["heldout_accuracy"]  # held out at the training ratio
    for key in ("step_kept", "steps_run", "stopped_early", "train_curve", "validation_curve", "validation_loss",
                "budget", "tokens_seen", "supervised_targets", "approx_train_flops", "mask_schedule"):
        assert key in card, key


# -- the trained-* models: train on train, select on validation, never touch test ------------------

def _made_up_corpus():
    from mlmh.types import Corpus, Document

    docs = [Document(id=f"d{i}", text=t, split="test" if i % 4 == 0 else "train") for i, t in enumerate(TEXTS)]
    return Corpus(dataset="made-up", documents=docs, source="test")


def _trained(name, **params):
    from mlmh.registry import get_registry

    spec = name + (":" + ",".join(f"{k}={v}" for k, v in params.items()) if params else "")
    return get_registry().build("model", spec)


def test_trained_models_select_on_validation_and_never_see_test(monkeypatch):
    from mlmh.components import LoadContext
    from mlmh.data.splits import with_validation
    from mlmh.training import loop

    seen = {}

    def capture(texts, config, out_dir, *, validation_texts=None, **kwargs):
        seen.update(train=list(texts), validation=list(validation_texts or []), config=config)
        raise RuntimeError("captured")

    monkeypatch.setattr(loop, "train", capture)
    corpus = _made_up_corpus()
    model = _trained("trained-mlm", mask_schedule="mdlm", budget="targets", max_steps=2)
    with pytest.raises(RuntimeError, match="captured"):
        model.load(LoadContext(corpus=corpus))
    split = with_validation(corpus)
    assert seen["validation"] == [d.text for d in split.split("validation")] and len(seen["validation"]) == 2
    assert seen["train"] == [d.text for d in split.split("train")]
    test_ids = {d.id for d in corpus.split("test")}
    assert not test_ids & {d.id for d in split.split("validation")}
    assert (seen["config"].mask_schedule, seen["config"].budget) == ("mdlm", "targets")
    # a corpus that already has its validation split (as the runner passes it) names the same model
    assert model.identity(LoadContext(corpus=split)) == model.identity(LoadContext(corpus=corpus))


def test_trained_model_recipe_follows_the_test_split_its_card_is_measured_on():
    """The weights never see the test split, but the card's held-out accuracy is measured on it: a cached model whose
    card was measured on other test texts is not answered for these."""
    from mlmh.components import LoadContext

    corpus = _made_up_corpus()
    ident = _trained("trained-clm").identity(LoadContext(corpus=corpus))
    changed_test = _made_up_corpus()
    test_doc = next(d for d in changed_test.documents if d.split == "test")
    test_doc.text = "a different unseen document ."
    assert _trained("trained-clm").identity(LoadContext(corpus=changed_test)) != ident
    job = _trained("trained-clm").training_job(LoadContext(corpus=changed_test))
    assert test_doc.text not in job.texts + job.validation_texts and test_doc.text in job.test_texts
    assert _trained("trained-clm", budget="compute").identity(LoadContext(corpus=corpus)) != ident


def test_only_the_trained_mlm_takes_a_schedule():
    from mlmh.components import LoadContext

    with pytest.raises(SpecError, match="mask_schedule"):
        _trained("trained-clm", mask_schedule="uniform")
    with pytest.raises(SpecError, match="mask_ratio applies to mask_schedule=fixed"):
        _trained("trained-mlm", mask_schedule="uniform", mask_ratio=0.3).identity(LoadContext(corpus=_made_up_corpus()))


def test_the_trained_models_take_the_recipe_rules_without_loading_torch():
    """The trained-* models' choices are the training recipe's own (mlmh.training.config), read without torch,
    so listing or checking them (mlmh ls, a preset's specs) stays light."""
    from mlmh.training import config
    from mlmh_builtins import models_trained

    assert models_trained.BUDGETS is config.BUDGETS and models_trained.MASK_SCHEDULES is config.MASK_SCHEDULES
    code = "import sys, mlmh_builtins.models_trained; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "False\n"


# -- data-constrained sweeps: unique_tokens, epochs, keep=last, per-block validation losses -----------------------

@pytest.mark.parametrize("objective", ["mlm", "clm"])
def test_unique_tokens_epochs_and_keep_last(objective, tmp_path):
    extra = {"mask_schedule": "mdlm"} if objective == "mlm" else {}
    config = micro(objective, max_steps=0, epochs=3, unique_tokens=60, keep="last", patience_tokens=0,
                   eval_every=2, **extra)
    card = train(TEXTS, config, tmp_path, validation_texts=TEXTS[:5], threads=1)
    # the first blocks that hold 60 tokens (24-token blocks: three), repeated three times
    assert card["train_blocks"] == 3 and 60 <= card["unique_tokens"] < 60 + 24
    assert card["steps_run"] == math.ceil(3 * 3 / 4) and card["epochs"] == pytest.approx(card["tokens_seen"] / card["unique_tokens"])
    assert card["keep"] == "last" and card["step_kept"] == card["steps_run"]
    assert card["validation_loss"] == card["validation_curve"][-1]["loss"]  # the last weights' loss, not the best
    blocks = card["validation_block_losses"]
    assert len(blocks) == card["heldout_blocks"] and all(n > 0 for _, n in blocks)
    # the per-block terms add up to the validation loss the loop measured on the same batches
    assert sum(s for s, _ in blocks) / sum(n for _, n in blocks) == pytest.approx(card["validation_loss"], rel=1e-4)


def test_keep_best_is_the_default_and_unique_tokens_beyond_the_data_is_refused(tmp_path):
    from mlmh.errors import DataError

    assert micro("clm").keep == "best" and micro("clm").unique_tokens == 0
    with pytest.raises(SpecError, match="keep"):
        micro("clm", keep="first")
    with pytest.raises(DataError, match="unique_tokens=1,000,000"):
        train(TEXTS, micro("clm", unique_tokens=1_000_000), tmp_path, threads=1)
