"""Training data: token blocks, the objectives' masked or infilled batches, and the loss of a batch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from mlmh.adapters.readout import logits_at
from mlmh.adapters.sentinels import sentinel_ids
from mlmh.training.config import MDLM_MIN_T, MEAN_SPAN
from mlmh.training.corruption import SPAN_CORRUPTION, corruption_for, span_corruption_example

if TYPE_CHECKING:
    from mlmh.training.vocabulary import OutputVocabulary
    import numpy as np
    import torch


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
            # other process outside a DataLoader: mlmh.training.jobs trains in spawned processes)
            self.collator.generator = self.collator.get_generator(seed)
        self.mask_id = tokenizer.mask_token_id
        # seq2seq: T5 span corruption where the tokenizer has sentinels, BART text infilling otherwise
        self.span_corruption = objective == "seq2seq" and corruption_for(tokenizer, "seq2seq") == SPAN_CORRUPTION
        self.sentinels = sentinel_ids(tokenizer) if self.span_corruption else []

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
        assert self.ratio is not None  # the seq2seq objectives hide a share of each block
        if self.span_corruption:
            sources, rows, hidden = zip(*(span_corruption_example(r, self.blocks.start_id, self.blocks.end_id,
                                                                  self.sentinels, self.ratio, self.rng) for r in rows))
        else:
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


def loss_terms(model: Any, objective: str, batch: dict[str, "torch.Tensor"],
               vocabulary: "OutputVocabulary | None" = None) -> tuple["torch.Tensor", int]:
    """(summed loss, normaliser) of one batch, so losses over several batches average exactly.

    Cross-entropy summed over the supervised tokens and their count; for ``mdlm`` batches the masked
    tokens' cross-entropy weighted by 1/t, over the count of maskable tokens (MDLM's per-token ELBO).
    The MLM's logits are computed at its supervised positions only (:func:`mlmh.adapters.readout.logits_at`):
    the loss is the same, and the output layer's share of a step shrinks to the masked tokens'. With a
    ``vocabulary`` cut (:mod:`mlmh.training.vocabulary`) the softmax runs over the cut's tokens.
    """
    summed, count, _, _ = loss_and_predictions(model, objective, batch, vocabulary)
    return summed, count


def loss_and_predictions(model: Any, objective: str, batch: dict[str, "torch.Tensor"],
                         vocabulary: "OutputVocabulary | None" = None):
    """:func:`loss_terms` plus the (predicted, gold) ids of the tokens the objective is judged on (positions in
    the ``vocabulary`` cut when there is one; a target outside it is left out)."""
    import torch

    if objective == "mlm":
        labels = batch["labels"]
        where = (labels != -100).flatten().nonzero().flatten()
        logits = logits_at(model, where, input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        gold = labels.flatten().index_select(0, where)
        if vocabulary is not None:
            gold = vocabulary.labels(gold)
        nll = torch.nn.functional.cross_entropy(logits, gold, reduction="none", ignore_index=-100)
        judged = gold != -100
        predictions = (logits.detach().argmax(-1)[judged], gold[judged])
        if "loss_weight" not in batch:
            return nll.sum(), int(judged.sum()), *predictions
        weights = batch["loss_weight"].repeat_interleave(labels.shape[1]).index_select(0, where)  # 1/t of each row
        return (nll * weights).sum(), int(batch["loss_tokens"]), *predictions
    if vocabulary is not None:
        logits, labels = vocabulary.logits_and_labels(objective, batch)
        kept = labels != -100
        summed = torch.nn.functional.cross_entropy(logits[kept], labels[kept], reduction="sum")
        judged = kept & batch["hidden"] if objective == "seq2seq" else kept
        return summed, int(kept.sum()), logits.detach().argmax(-1)[judged], labels[judged]
    out = model(**{k: batch[k] for k in MODEL_INPUTS if k in batch})
    count = supervised_targets(objective, batch)
    summed = out.loss * count if count else out.logits.sum() * 0.0
    return summed, count, *predictions_and_gold(objective, batch, out.logits.detach())



def predictions_and_gold(objective: str, batch: dict[str, "torch.Tensor"], logits: "torch.Tensor"):
    """(predictions, gold) of the tokens an objective is judged on."""
    labels = batch["labels"]
    if objective == "clm":  # position i predicts token i+1
        logits, labels = logits[:, :-1], labels[:, 1:]
    keep = labels != -100
    if objective == "seq2seq":  # only the hidden tokens: copying the visible ones is trivial
        keep = keep & batch["hidden"]
    return logits.argmax(-1)[keep], labels[keep]



def on_device(batch: dict[str, "torch.Tensor"], device: "torch.device") -> dict[str, "torch.Tensor"]:
    """``batch`` with its tensors on ``device`` (a no-op on the CPU)."""
    if device.type == "cpu":
        return batch
    return {k: v.to(device, non_blocking=True) if hasattr(v, "to") else v for k, v in batch.items()}
