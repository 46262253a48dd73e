"""Validation of a model in training: the objective's loss and accuracy on fixed validation batches (what
early stopping reads), per-block losses, and the kept model's metrics on the card."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any, Sequence

from mlmh.adapters.readout import logits_at
from mlmh.training.config import INFERENCE_RATIOS, MASK_RATIO, TrainingConfig
from mlmh.training.data import (MODEL_INPUTS, BatchMaker, Blocks, loss_and_predictions, on_device,
                                predictions_and_gold)
from mlmh.training.stopping import TargetTally, Validation

if TYPE_CHECKING:
    import torch

    from mlmh.training.vocabulary import OutputVocabulary


def evaluate(model: Any, objective: str, tokenizer: Any, blocks: Blocks, *, ratio: float, seed: int,
             batch_size: int, baseline_token: int | None) -> dict[str, Any]:
    """Loss and accuracy on ``blocks`` with all-[MASK] masking at ``ratio`` (as generation masks):
    masked-token (mlm), next-token (clm), hidden-span token (seq2seq, teacher-forced) accuracy, beside
    the unigram baseline's accuracy."""
    import torch

    maker = BatchMaker(objective, tokenizer, blocks, ratio=ratio, seed=seed + 7919, mask_only=True)
    device = next(model.parameters()).device
    total_loss, total_weight, tally = 0.0, 0, TargetTally(baseline_token)
    model.eval()
    with torch.inference_mode():
        for i in range(0, len(blocks.ids), batch_size):
            batch = on_device(maker(blocks.ids[i:i + batch_size]), device)
            out = model(**{k: v for k, v in batch.items() if k != "hidden"})
            tally.add(*predictions_and_gold(objective, batch, out.logits))
            weight = int((batch["labels"] != -100).sum())
            total_loss += float(out.loss) * weight
            total_weight += weight
    model.train()
    return {"heldout_loss": total_loss / max(total_weight, 1), **tally.facts(), "heldout_blocks": len(blocks.ids)}


def most_frequent_token(blocks: Blocks) -> int | None:
    """The unigram baseline's constant prediction: the commonest non-special training token."""
    counts = Counter(t for row in blocks.ids for t in row if t not in blocks.special_ids)
    return counts.most_common(1)[0][0] if counts else None



def validate(model: Any, objective: str, batches: Sequence[dict[str, "torch.Tensor"]],
             baseline_token: int | None, vocabulary: "OutputVocabulary | None" = None) -> Validation:
    """The training objective's loss and accuracy over fixed validation batches, in eval mode (no dropout); with
    a ``vocabulary`` cut, over its tokens (:mod:`mlmh.training.vocabulary`)."""
    import torch

    if vocabulary is not None and baseline_token is not None:
        baseline_token = int(vocabulary.position[baseline_token])
    total, count, tally = 0.0, 0, TargetTally(baseline_token)
    model.eval()
    with torch.inference_mode():
        for batch in batches:
            summed, weight, predicted, gold = loss_and_predictions(model, objective, batch, vocabulary)
            total, count = total + float(summed), count + weight
            tally.add(predicted, gold)
    model.train()
    return tally.validation(total / max(count, 1))


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



def final_metrics(model: Any, tokenizer: Any, config: TrainingConfig, train_blocks: Blocks,
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
                               m["unigram_baseline_accuracy"], "best_constant_accuracy": m["best_constant_accuracy"],
                               "beats_constant": m["beats_constant"], "targets": m["heldout_targets"]}
    return {**metrics, "accuracy_at_ratio": at_ratio}
