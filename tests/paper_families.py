"""Tiny random checkpoints of the paper's five families, each with a tokenizer of its own kind trained here
(nothing downloaded): BERT (uncased WordPiece), RoBERTa, GPT-2 and BART (byte-level BPE, a prefix space), T5
(a SentencePiece-style unigram vocabulary with sentinels <extra_id_N> and no mask token)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from mlmh.testing import TINY_TEXTS

#: family -> the objectives ``mlmh train --init`` starts from it (an encoder: all three)
FAMILIES: dict[str, tuple[str, ...]] = {
    "bert": ("mlm", "clm", "seq2seq"),
    "roberta": ("mlm", "clm", "seq2seq"),
    "gpt2": ("clm",),
    "t5": ("seq2seq",),
    "bart": ("seq2seq",),
}
#: family -> the hub checkpoint of the paper's that the ``paper-hub`` preset names
HUB_NAMES = {"bert": "bert-base-uncased", "roberta": "roberta-base", "gpt2": "gpt2", "t5": "t5-base",
             "bart": "facebook/bart-base"}
#: family -> the hf-* model kind that generates with it
KINDS = {"bert": "mlm", "roberta": "mlm", "gpt2": "clm", "t5": "seq2seq", "bart": "seq2seq"}
SENTINELS = 20
SHAPE = {"hidden": 32, "layers": 2, "heads": 2, "ffn": 64, "positions": 130}


def _wordpiece(texts: Sequence[str]) -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import BertTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)  # bert-base-uncased
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(vocab_size=400, special_tokens=specials))
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    return BertTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]",
                             sep_token="[SEP]", mask_token="[MASK]", do_lower_case=True)


def _byte_level(texts: Sequence[str], family: str) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import BartTokenizerFast, GPT2TokenizerFast, RobertaTokenizerFast

    specials = ["<|endoftext|>"] if family == "gpt2" else ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=500, special_tokens=specials,
                                                      initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if family == "gpt2":
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
        return GPT2TokenizerFast(tokenizer_object=tok, unk_token="<|endoftext|>", bos_token="<|endoftext|>",
                                 eos_token="<|endoftext|>")
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")), ("<s>", tok.token_to_id("<s>")),
                                                      trim_offsets=True, add_prefix_space=False)
    cls = RobertaTokenizerFast if family == "roberta" else BartTokenizerFast
    return cls(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
               unk_token="<unk>", pad_token="<pad>", mask_token="<mask>")


def _unigram(texts: Sequence[str], sentinel_count: int = SENTINELS) -> Any:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import T5TokenizerFast

    sentinels = [f"<extra_id_{k}>" for k in range(sentinel_count)]
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.train_from_iterator(texts, trainers.UnigramTrainer(vocab_size=300, unk_token="<unk>",
                                                          special_tokens=["<pad>", "</s>", "<unk>", *sentinels]))
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", pair="$A </s> $B </s>",
                                                       special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return T5TokenizerFast(tokenizer_object=tok, eos_token="</s>", unk_token="<unk>", pad_token="<pad>",
                           extra_ids=0, additional_special_tokens=sentinels)


def build_tokenizer(family: str, texts: Sequence[str] = TINY_TEXTS, sentinels: int = SENTINELS) -> Any:
    """The family's kind of tokenizer, trained on ``texts`` (T5: with ``sentinels`` <extra_id_N>)."""
    corpus = list(texts) * 4
    if family == "bert":
        return _wordpiece(corpus)
    if family == "t5":
        return _unigram(corpus, sentinels)
    return _byte_level(corpus, family)


def build_family(family: str, out: Path, seed: int = 0, sentinels: int = SENTINELS) -> Path:
    """A random tiny ``family`` checkpoint and its tokenizer saved in ``out`` (as ``save_pretrained`` leaves
    a hub checkpoint); a T5 has ``sentinels`` <extra_id_N> (t5-base: 100)."""
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel, RobertaConfig, RobertaForMaskedLM, T5Config,
                              T5ForConditionalGeneration)

    out = Path(out)
    tok = build_tokenizer(family, sentinels=sentinels)
    vocab, s = len(tok), SHAPE
    torch.manual_seed(seed)
    if family == "bert":
        model: Any = BertForMaskedLM(BertConfig(
            vocab_size=vocab, hidden_size=s["hidden"], num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
            intermediate_size=s["ffn"], max_position_embeddings=s["positions"], pad_token_id=tok.pad_token_id))
    elif family == "roberta":
        model = RobertaForMaskedLM(RobertaConfig(
            vocab_size=vocab, hidden_size=s["hidden"], num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
            intermediate_size=s["ffn"], max_position_embeddings=s["positions"], pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    elif family == "gpt2":
        model = GPT2LMHeadModel(GPT2Config(
            vocab_size=vocab, n_embd=s["hidden"], n_layer=s["layers"], n_head=s["heads"], n_positions=s["positions"],
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id))
    elif family == "t5":
        model = T5ForConditionalGeneration(T5Config(
            vocab_size=vocab, d_model=s["hidden"], d_kv=s["hidden"] // s["heads"], d_ff=s["ffn"],
            num_layers=1, num_decoder_layers=1, num_heads=s["heads"], pad_token_id=tok.pad_token_id,
            eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.pad_token_id))
    elif family == "bart":
        model = BartForConditionalGeneration(BartConfig(
            vocab_size=vocab, d_model=s["hidden"], encoder_layers=1, decoder_layers=1, encoder_attention_heads=s["heads"],
            decoder_attention_heads=s["heads"], encoder_ffn_dim=s["ffn"], decoder_ffn_dim=s["ffn"],
            max_position_embeddings=s["positions"], pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id, decoder_start_token_id=tok.eos_token_id,
            forced_eos_token_id=tok.eos_token_id))
    else:
        raise ValueError(f"unknown family {family!r} (valid: {', '.join(FAMILIES)})")
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
