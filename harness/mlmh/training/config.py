"""The training recipe: objectives, sizes, budgets and learning rates, and the typed :class:`TrainingConfig`
that :func:`make_config` checks (why each default is what it is: :mod:`mlmh.training`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from mlmh.errors import SpecError


OBJECTIVES = ("mlm", "clm", "seq2seq")
POSITIONS = ("rotary", "absolute")
MASK_SCHEDULES = ("fixed", "uniform", "mdlm")
BUDGETS = ("tokens", "targets", "compute")
#: the checkpoint kept: the best validation (mlmh.training.stopping), or the weights after the budget
KEEPS = ("best", "last")
#: settings added after models were cached: in a config's cache key only when set (:meth:`TrainingConfig.to_dict`)
LATER_SETTINGS = ("max_passes", "freeze_embeddings", "span_targets", "dropout")
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
RECIPE_VERSION = 14  # 14: the card's held-out accuracy on test blocks no selection saw (13: a pretrained start's output layer cut to the corpus's tokens)
#: declared: a model trained in bf16 autocast (``precision``) scores a held-out accuracy (the card's, on test blocks)
#: within this much (absolute) of the same recipe in float32; tests/test_training.py checks it on a micro model and
#: docs/TRAINING.md gives the paper preset's measurements
BF16_ACCURACY_TOLERANCE = 0.02
#: Bumped whenever :func:`train_tokenizer` changes its output (part of the tokenizer cache key).
TOKENIZER_VERSION = 2


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
# continued pretraining of an existing model: gentler than from scratch. Recipe 13 measured 2e-4 against 1e-4 on the
# bundled PAN sample (the paper preset's MiniLM MLM, 8 x 64 tokens a step): validation accuracy 0.14 after 40 steps
# at both, 0.59 after 400 at 2e-4 against 0.14 after 80 at 1e-4 (docs/TRAINING.md)
INIT_LEARNING_RATE = 2e-4
# ... but the parameters a pretrained start lacks (MiniLM's MLM head: the packaged sentence encoder has none) start
# from random values, and at 1e-4 they barely move in a short fine-tuning: they learn at this rate instead. Measured
# on official-format PAN text (the paper preset's MiniLM MLM, 80 steps of 8 x 64 tokens): validation loss at step 80
# 6.39 against 6.66, all-[MASK] validation accuracy of the kept weights 0.057 against 0.036 (unigram baseline 0.019)
FRESH_LEARNING_RATE = 1e-3
#: the share of a pretrained start's step budget that trains its fresh parameters alone, the body frozen (LP-FT)
HEAD_WARMUP_SHARE = 0.1


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
    device: str = "cpu"  # resolved by mlmh.machine.devices: "cpu" | "cuda" | "cuda:N" (weights differ across devices)
    precision: str = "float32"  # "float32" | "bf16" (autocast on CUDA or a CPU with bf16 units; in the cache key)
    unique_tokens: int = 0  # train on the first train blocks holding this many tokens (0 = all): the data budget U
    keep: str = "best"  # "best" validation checkpoint | "last": the weights after the whole budget (epochs)
    max_passes: float = 0.0  # at most this many supervised passes over the train split's targets (0 = no cap)
    freeze_embeddings: bool = False  # a pretrained start's word embeddings (and the output rows tied to them) stay fixed
    span_targets: bool = False  # seq2seq: T5's span corruption, sentinels added to a tokenizer without them
    dropout: float = 0.0  # every dropout layer's rate while training (0 = the checkpoint's or the size's own)

    def to_dict(self) -> dict[str, Any]:
        fields = dataclasses.asdict(self)
        for name in LATER_SETTINGS:  # left unset, a setting added later keeps the cache keys of the models before it
            if not fields[name]:
                del fields[name]
        return fields

    @property
    def learning_rate(self) -> float:
        return INIT_LEARNING_RATE if self.init else self.shape.learning_rate


def make_config(objective: str, size: str = "tiny", *, seed: int = 0, max_steps: int = 0,
                epochs: float | None = None, init: str = "", positions: str = "rotary", mask_schedule: str = "",
                mask_ratio: float = 0.0, budget: str = "tokens", eval_every: int = 0,
                patience_tokens: int = PATIENCE_TOKENS, device: str = "cpu", precision: str = "auto",
                unique_tokens: int = 0, keep: str = "best", max_passes: float = 0.0,
                freeze_embeddings: bool = False, span_targets: bool = False, dropout: float = 0.0, spelled: Callable[[str], str] | None = None,
                **shape_overrides: Any) -> TrainingConfig:
    """A checked :class:`TrainingConfig`; ``shape_overrides`` replace fields of the size (tests use
    this for micro models). ``mask_schedule`` "" = "fixed" for the MLM; ``mask_ratio`` 0 = 15%.
    ``device`` and ``precision`` are resolved here (:mod:`mlmh.machine.devices`), so the config names what ran.
    ``spelled(key)`` is how the user gave a setting, for the errors (default: ``mlmh train``'s flags;
    a trained-* model passes its spec's ``NAME:key``)."""
    from mlmh.machine.devices import resolve_device, resolve_precision

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
    if max_passes < 0:
        raise SpecError(f"{flag('max_passes')} must be >= 0; got {max_passes}")
    if keep not in KEEPS:
        raise SpecError(f"unknown keep '{keep}' (valid: {', '.join(KEEPS)})")
    if freeze_embeddings and not init:
        raise SpecError(f"{flag('freeze_embeddings')} applies to a pretrained start (init=...): a model trained from "
                        "scratch has no embeddings worth keeping")
    if not 0 <= dropout < 1:
        raise SpecError(f"{flag('dropout')} must be at least 0 and below 1; got {dropout}")
    if span_targets and objective != "seq2seq":
        raise SpecError(f"{flag('span_targets')} applies to the seq2seq objective only (its decoder's targets)")
    default = MLM_MASK_RATIO if objective == "mlm" else MASK_RATIO
    ratio = None if objective == "clm" or schedule in ("uniform", "mdlm") else (mask_ratio or default)
    shape = dataclasses.replace(SIZES[size], **shape_overrides) if shape_overrides else SIZES[size]
    resolved = resolve_device(device)
    return TrainingConfig(objective=objective, size=size, shape=shape, seed=seed, max_steps=max_steps,
                          epochs=epochs, init=init, positions=positions, mask_schedule=schedule, mask_ratio=ratio,
                          budget=budget, eval_every=eval_every, patience_tokens=patience_tokens, device=resolved,
                          precision=resolve_precision(precision, resolved), unique_tokens=unique_tokens, keep=keep,
                          max_passes=max_passes, freeze_embeddings=freeze_embeddings, span_targets=span_targets,
                          dropout=dropout)
