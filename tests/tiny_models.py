"""Tiny random transformers models, built in a temp dir for the tests: never downloaded.

One shared WordPiece vocabulary for all three kinds, trained with the ``tokenizers`` library on a
few sentences, so that the word-to-token mapping is the same for MLM, CLM and seq2seq.
"""

from __future__ import annotations

from pathlib import Path

TEXTS = [
    "The cat sat on the mat and looked at the door.",
    "A quick brown fox jumps over the lazy dog, again and again.",
    "She walked to the market; he stayed home with the children.",
    "Patient was given aspirin 81 mg by mouth daily for chest pain.",
    "In the film, a detective hunts a thief across the old city at night.",
    "I think that style matters more than plot, don't you?",
    "They said the draft belongs on the rubbish tip of history.",
    "Everything is very fast in football, and the crowd loves it.",
]


def build_tokenizer(out: Path, texts: list[str] | None = None, vocab_size: int = 300):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials)
    tok.train_from_iterator((texts or TEXTS) * 4, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )
    fast.save_pretrained(out)
    return fast


def build_tiny_model(kind: str, out: Path, seed: int = 0) -> Path:
    """Save a random tiny ``kind`` model ("mlm", "clm", "seq2seq") with its tokenizer in ``out``."""
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel)

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer(out)
    vocab = len(tok)
    torch.manual_seed(seed)
    if kind == "mlm":
        config = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id)
        model = BertForMaskedLM(config)
    elif kind == "clm":
        config = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=128,
                            bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
        model = GPT2LMHeadModel(config)
    elif kind == "seq2seq":
        config = BartConfig(vocab_size=vocab, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
                            pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                            decoder_start_token_id=tok.cls_token_id, forced_eos_token_id=tok.sep_token_id)
        model = BartForConditionalGeneration(config)
    else:
        raise ValueError(kind)
    model.save_pretrained(out, safe_serialization=True)
    return out
