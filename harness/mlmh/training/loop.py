"""One model's training: the loop (AdamW steps, validation, early stopping), the step budget, and the card.

The design decisions of the whole recipe (the budget, the shared vocabulary, rotary positions, each objective's
model and masking) are written in :mod:`mlmh.training`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mlmh.adapters.base import model_window
from mlmh.machine.devices import describe as describe_device
from mlmh.errors import DataError
from mlmh.storage.modelcache import CARD_NAME, library_versions
from mlmh.training.config import (EVALUATIONS_PER_BUDGET, FRESH_LEARNING_RATE, HEAD_WARMUP_SHARE, MAX_BUDGET_SCALE,
                                  MIN_EVAL_EVERY, RECIPE_VERSION, VOCABULARY_NOTE, TrainingConfig)
from mlmh.training.corruption import CORRUPTION_NOTES, MEAN_NOISE_SPAN, corruption_for
from mlmh.training.data import BatchMaker, Blocks, loss_terms, make_blocks, on_device, supervised_targets
from mlmh.training.models import (add_sentinels, build_model, count_parameters, embedding_parts, init_source, load_init,
                                  shared_tokenizer)
from mlmh.training.stopping import SELECTION, EarlyStopping
from mlmh.training.validation import final_metrics, most_frequent_token, validate, validation_block_losses

if TYPE_CHECKING:
    import torch

    from mlmh.training.vocabulary import OutputVocabulary


ProgressFn = Callable[[dict[str, Any]], None]
#: called after each validation of a training from scratch with the model, its tokenizer, the step's progress event
#: and the validation (:class:`mlmh.training.stopping.Validation`); it may save them (never change them), and what it
#: returns joins the event (:class:`mlmh.training.previews.Previews`)
CheckpointFn = Callable[[Any, Any, dict[str, Any], Any], dict[str, Any]]


# -- training -------------------------------------------------------------------------------------

def default_threads(config: TrainingConfig | None = None) -> int:
    """:func:`mlmh.machine.devices.threads_for` the size's width (one thread for a tiny model); one thread for a pretrained
    start (``init``) too, so several train side by side, one process each (:mod:`mlmh.training.jobs`). Its steps of
    8 x 64 tokens are too small to split well: on 2 cores at load 4-8 the MiniLM MLM of the paper preset took 1,216
    CPU-s for 625 steps on two threads, where one thread took 247 CPU-s for 400 (docs/TRAINING.md)."""
    from mlmh.machine.devices import cores, threads_for

    if config is None:
        return cores()
    return 1 if config.init else threads_for(config.shape.hidden)


def split_validation(texts: Sequence[str]) -> tuple[list[str], list[str]]:
    """(train, validation) texts by :func:`mlmh.data.splits.with_validation`'s rule, for callers that
    give no validation texts (documents named by their position)."""
    from mlmh.data.splits import with_validation
    from mlmh.types import Corpus, Document

    corpus = with_validation(Corpus("texts", [Document(id=f"text-{i}", text=t) for i, t in enumerate(texts)], ""))
    return corpus.texts("train"), corpus.texts("validation")


def target_share(config: TrainingConfig) -> float:
    """Expected share of a block's tokens that the objective supervises: all of them for the CLM and for
    BART (its decoder reconstructs the block); the MLM's masked share (uniform and mdlm: 1/2 on average); with span
    targets the hidden share and a sentinel per span."""
    if config.objective == "seq2seq" and config.span_targets:
        return config.mask_ratio * (1 + 1 / MEAN_NOISE_SPAN)  # type: ignore[operator]  # seq2seq always has a ratio
    if config.objective != "mlm":
        return 1.0
    return config.mask_ratio if config.mask_schedule == "fixed" else 0.5  # type: ignore[return-value]  # fixed: a ratio is set


def budget_steps(config: TrainingConfig, steps: int, vocab_size: int, blocks: int = 0) -> tuple[int, str]:
    """The step budget under ``config.budget`` from the ``tokens`` budget ``steps``, and how it was set.

    ``targets``: steps x (the CLM's target share / this objective's), at most ``MAX_BUDGET_SCALE``x.
    ``compute``: training FLOPs ~ 6 x parameters x tokens, so steps x (the CLM's parameters / this
    model's); the sizes are matched within 10%, so this stays close to ``tokens``.
    ``max_passes`` then caps any of them at that many passes over the ``blocks`` train blocks' supervised targets.
    """
    matched, note = _matched_steps(config, steps, vocab_size)
    if not config.max_passes or not blocks:
        return matched, note
    cap = max(1, math.ceil(config.max_passes * blocks / (config.shape.batch_size * target_share(config))))
    if matched <= cap:
        return matched, f"{note}; within {config.max_passes:g} passes over the train targets ({cap} steps)"
    return cap, (f"{note}, capped at {config.max_passes:g} passes over the train targets ({blocks} blocks: "
                 f"{cap} steps)")


def _matched_steps(config: TrainingConfig, steps: int, vocab_size: int) -> tuple[int, str]:
    """The steps the declared budget matches across objectives, before any cap on passes."""
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


def estimated_bytes(config: TrainingConfig) -> int:
    """Disk space a saved model needs (float32 weights + tokenizer + slack)."""
    if config.init:  # a pretrained start: its size, twice for an encoder-decoder warm-started on both sides
        return 400_000_000 if config.objective == "seq2seq" else 200_000_000
    params = count_parameters(config.objective, config.shape, positions=config.positions)
    return int(params * 4 * 1.2) + 20_000_000


def train(texts: Sequence[str], config: TrainingConfig, out_dir: Path, *,
          validation_texts: Sequence[str] | None = None, dataset: str = "", data_digest: str = "",
          progress: ProgressFn | None = None, threads: int | None = None, validation_holds: str = "",
          test_texts: Sequence[str] | None = None, checkpoint: CheckpointFn | None = None) -> dict[str, Any]:
    """Train one model on ``texts``, keep its best validation checkpoint, and save it (HF directory +
    ``training_card.json``) in ``out_dir``.

    ``validation_texts`` select the checkpoint (early stopping) and are never trained on; without
    them ~10% of ``texts`` are set aside by :func:`split_validation`. ``validation_holds`` says what they
    are (:func:`mlmh.data.splits.describe_validation`) on the card. The card's held-out accuracy (and the
    best-constant bar and plateau check read from it) is measured on ``test_texts``, blocks that neither chose the
    checkpoint nor stopped training; without them on the validation blocks, and the card says so
    (``heldout_source``). ``checkpoint`` sees the model after each validation (not a pretrained start's, whose output
    layer is cut while it trains). Deterministic for a given seed, thread count and device. Returns the training card.
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
        from mlmh.storage.modelcache import data_hash

        data_digest = data_hash(texts)
    started, cpu_started = time.perf_counter(), time.process_time()
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads or default_threads(config))
    try:
        torch.manual_seed(config.seed)
        shape = config.shape
        fresh: frozenset[str] = frozenset()
        if config.init:
            model, tokenizer, fresh = load_init(config.init, config.objective)
            seq_len = min(shape.seq_len, model_window(model.config, tokenizer))
        else:
            tokenizer = shared_tokenizer(texts, shape.vocab_size)
            model = build_model(config.objective, shape, tokenizer, config.positions)
            seq_len = shape.seq_len
        if config.span_targets:  # before freezing: the resized tables are new parameters
            add_sentinels(model, tokenizer, config.seed)
        if config.freeze_embeddings:
            freeze_word_embeddings(model)
        if config.dropout:
            set_dropout(model, config.dropout)
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
        steps, budget_note = budget_steps(config, token_steps, len(tokenizer), len(train_blocks.ids))
        eval_every = config.eval_every or max(MIN_EVAL_EVERY, token_steps // EVALUATIONS_PER_BUDGET)
        vocabulary = output_vocabulary(model, config, train_blocks)
        with vocabulary or contextlib.nullcontext():
            run = _train_loop(model, tokenizer, config, train_blocks, eval_blocks, steps, eval_every, progress, fresh,
                              vocabulary, checkpoint if vocabulary is None else None)
        with autocast(config):  # the whole model again: the cut tokens masked (mlmh.training.vocabulary)
            run["validation_block_losses"] = validation_block_losses(model, config.objective,
                                                                     run.pop("validation_batches"))
        train_seconds = time.perf_counter() - started
        test = [t for t in (test_texts or []) if t and t.strip()]
        test_blocks = make_blocks(tokenizer, test, seq_len) if test else eval_blocks
        test_blocks.ids = test_blocks.ids[: config.eval_blocks]
        if test and test_blocks.ids:
            heldout_source = f"test split: {len(test)} documents that neither chose the checkpoint nor stopped training"
        else:
            test_blocks = eval_blocks
            heldout_source = f"{validation_source} (no test split: the blocks that chose the checkpoint)"
        card_metrics = final_metrics(model, tokenizer, config, train_blocks, test_blocks)
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
            "heldout_source": heldout_source,
            "parameters": parameters,
            "vocab_size": len(tokenizer),
            "vocabulary": VOCABULARY_NOTE if not config.init else f"the tokenizer of {config.init}",
            "seq_len": seq_len,
            "batch_size": shape.batch_size,
            "mask_schedule": config.mask_schedule,
            "mask_ratio": config.mask_ratio,
            "corruption": CORRUPTION_NOTES[corruption_for(tokenizer, "the tokenizer")]
            if config.objective == "seq2seq" else "",
            "budget": config.budget,
            "budget_note": budget_note,
            "max_passes": config.max_passes,
            "embeddings_frozen": config.freeze_embeddings,
            "dropout": config.dropout or "as built",
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
            "head_warmup_steps": run["head_warmup_steps"],  # fresh parameters alone (LP-FT), before the whole model
            "output_vocabulary": len(vocabulary.kept) if vocabulary is not None else len(tokenizer),
            "final_loss": run["final_loss"],
            **card_metrics,
            "train_curve": run["train_curve"],
            "validation_curve": run["validation_curve"],
            "train_seconds": round(train_seconds, 2),
            "wall_seconds": round(time.perf_counter() - started, 2),
            "seconds_per_step": round(train_seconds / run["steps_run"], 4),
            "train_cpu_seconds": round(time.process_time() - cpu_started, 2),  # this process's threads, all of them
            "threads": torch.get_num_threads(),
            "seed": config.seed,
            "config": config.to_dict(),
            "library_versions": library_versions(),
        }
        (out_dir / CARD_NAME).write_text(json.dumps(card, indent=2), encoding="utf-8")
        return card
    finally:
        torch.set_num_threads(previous_threads)


def output_vocabulary(model: Any, config: TrainingConfig, train_blocks: Blocks) -> "OutputVocabulary | None":
    """The output layer cut to the train blocks' tokens for a pretrained start (:mod:`mlmh.training.vocabulary`);
    None from scratch, whose vocabulary is the corpus's already."""
    from mlmh.training.vocabulary import OutputVocabulary

    if not config.init:
        return None
    return OutputVocabulary.fitted(model, {t for row in train_blocks.ids for t in row}, train_blocks.special_ids)


def freeze_word_embeddings(model: Any) -> None:
    """Keep a pretrained start's word embeddings fixed, the encoder's and the decoder's, and with them the output rows
    tied to them; the output bias and every layer still train. Half of MiniLM's parameters are its embeddings: a
    corpus of a few thousand words moves the rows of the words it holds towards those documents and leaves the
    rest behind (on the real prose: the same held-out accuracy, five of six seen - unseen BLEU gaps smaller, a fifth
    less CPU time; docs/TRAINING.md)."""
    for part in embedding_parts(model):
        part.get_input_embeddings().weight.requires_grad_(False)


def set_dropout(model: Any, rate: float) -> None:
    """Every dropout of ``model`` drops ``rate`` while it trains (Srivastava et al. 2014): its ``nn.Dropout`` layers
    (BERT's embeddings, attention probabilities and residual branches; transformers' attention reads its layer's rate)
    and the rates layers keep as numbers (BART's and GPT-NeoX's attention and residual dropout). Generation runs in
    eval mode, where nothing drops."""
    import torch

    for module in model.modules():
        if isinstance(module, torch.nn.Dropout):
            module.p = rate
        for name, value in list(vars(module).items()):
            if "dropout" in name and isinstance(value, float):
                setattr(module, name, rate)


def head_warmup_steps(steps: int, fresh: frozenset[str]) -> int:
    """Steps that train the ``fresh`` parameters alone before the whole model moves (LP-FT, Kumar et al. 2022: a
    random head fine-tuned together with its pretrained body distorts the body's features)."""
    return max(1, round(HEAD_WARMUP_SHARE * steps)) if fresh else 0


def _train_loop(model: Any, tokenizer: Any, config: TrainingConfig, train_blocks: Blocks, eval_blocks: Blocks,
                steps: int, eval_every: int, progress: ProgressFn | None,
                fresh: frozenset[str] = frozenset(), vocabulary: "OutputVocabulary | None" = None,
                checkpoint: CheckpointFn | None = None) -> dict[str, Any]:
    """AdamW steps with early stopping: validation every ``eval_every`` steps (and at the last), fed to
    :class:`mlmh.training.stopping.EarlyStopping`, which says when to stop and which weights to keep (held in memory
    and restored at the end); the first :func:`head_warmup_steps` train the fresh parameters alone. Returns the
    counters and curves of the card, and the validation batches."""
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
    warmup = head_warmup_steps(steps, fresh)
    body = [p for n, p in model.named_parameters() if n not in fresh and p.requires_grad]
    for p in body if warmup else ():
        p.requires_grad_(False)
    tokens_seen = targets_seen = 0
    stopped_early = False
    step = 0
    for step in range(1, steps + 1):
        if len(order) < shape.batch_size:
            order.extend(order_rng.permutation(len(train_blocks.ids)).tolist())
        rows = [train_blocks.ids[i] for i in order[: shape.batch_size]]
        del order[: shape.batch_size]
        if step == warmup + 1:
            for p in body:
                p.requires_grad_(True)
        batch = on_device(maker(rows), device)
        with autocast(config):
            summed, count = loss_terms(model, config.objective, batch, vocabulary)
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
                    current = validate(model, config.objective, validation_batches, baseline, vocabulary)
                validation_curve.append({"step": step, "tokens": tokens_seen, "loss": current.loss,
                                         "accuracy": current.accuracy})
                event["validation_loss"] = current.loss
                if rule.observe(step, tokens_seen, current):
                    best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
                stopped_early = step < steps and rule.should_stop()
                if checkpoint is not None:
                    event.update(checkpoint(model, tokenizer, event, current))
        if progress is not None:
            progress(event)  # each face measures its own ETA from these steps (mlmh.run.eta)
        if stopped_early:
            break
    if best_state is not None and config.keep == "best":
        model.load_state_dict(best_state)
        step_kept, tokens_at_kept = rule.step_kept, rule.tokens_at_kept
        kept_point = next(p for p in validation_curve if p["step"] == step_kept)
    else:  # the last weights: asked for (keep=last), or nothing to select on
        step_kept, tokens_at_kept = step, tokens_seen
        kept_point = validation_curve[-1] if validation_curve else {}
    for p in body:
        p.requires_grad_(True)  # a budget spent within the warm-up leaves no parameter frozen
    return {
        "steps_run": step, "step_kept": step_kept, "stopped_early": stopped_early,
        "stop_reason": rule.stop_reason(stopped_early, bool(validation_batches)),
        "left_plateau_at_step": rule.left_plateau_at,
        "best_validation_loss": kept_point.get("loss"),  # the kept weights' (keep=last: the last)
        "validation_accuracy_at_kept_step": kept_point.get("accuracy"),
        "validation_batches": validation_batches, "head_warmup_steps": min(warmup, step),
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


def autocast(config: TrainingConfig):
    """bf16 autocast when the config asks for it (on CUDA or the CPU: the matrix products of the forward pass, and so
    of its backward pass, in bf16; the rest as torch's autocast runs it, the loss in float32; the weights, their
    gradients and AdamW's state stay float32); a null context otherwise."""
    import contextlib

    import torch

    if config.precision == "bf16":
        return torch.autocast("cuda" if config.device.startswith("cuda") else "cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()
