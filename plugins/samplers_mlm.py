"""Samplers for masked LMs: one-shot, left-to-right, mask-predict, confidence (MaskGIT/LLaDA), Gibbs.

All share :class:`MaskedBatch`: the batch as tensors, a forward pass over the rows still working,
and vectorised token choice at selected positions. Only originally masked positions ever change.
"""

from __future__ import annotations

import math
import time
from typing import Any, ClassVar, Sequence

from mlmh.adapters import MaskedLMAdapter
from mlmh.components import Sampler
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem

from mlmh.plugins.samplers_common import (SAMPLING_PARAMS, ItemCounters, TraceRecorder, build_generations, choose_at,
                                          draw_uniforms, encode_items, item_generators, lowest_scores)

STUTTER = Param("stutter", bool, False, "re-mask generated tokens equal to their left neighbour (Li et al. 2024)")


class MaskedBatch:
    """A right-padded batch of encoded items and the bookkeeping every MLM sampler needs."""

    def __init__(self, adapter: MaskedLMAdapter, items: Sequence[MaskedItem]) -> None:
        import torch

        self.adapter = adapter
        self.items = items
        self.encodings = encode_items(adapter, items)
        self.generators = item_generators(items)
        self.trace = TraceRecorder.for_encodings(self.encodings)
        self.counters = ItemCounters.zeros(len(items))
        sequences = [e.ids for e in self.encodings] or [[adapter.mask_id]]
        self.ids, self.attention = adapter.batch(sequences)
        self.lengths = self.attention.sum(dim=1)
        self.original = torch.zeros_like(self.ids, dtype=torch.bool)
        masked_rows = [row for row, enc in enumerate(self.encodings) for _ in enc.masked]
        if masked_rows:
            self.original[masked_rows, [pos for enc in self.encodings for pos in enc.masked]] = True
        self.n_masked = self.original.sum(dim=1)
        self.masked = self.original.clone()  # positions currently holding the mask token

    def rows_with_masks(self) -> Any:
        return (self.n_masked > 0).nonzero().flatten()

    def forward(self, rows: Any) -> Any:
        """Logits (len(rows), width, vocab) for ``rows``, trimmed to their longest length; one pass.

        Loops should drop the previous pass's logits before calling again: while they are alive the
        allocator must map fresh pages for the new (rows x width x vocab) block, and first-touch page
        faults cost several percent of a pass at size tiny.
        """
        lengths = self.lengths[rows].tolist()
        width = max(lengths)
        if len(lengths) == self.ids.shape[0] and width == self.ids.shape[1]:  # every row, full width: no copy
            ids, attention = self.ids, self.attention
        else:
            ids, attention = self.ids[rows, :width], self.attention[rows, :width]
        logits = self.adapter.logits(ids, attention)
        for row, length in zip(rows.tolist(), lengths):
            self.counters.add(row, length)
        return logits

    def choose(self, rows: Any, logits: Any, select: Any, temperature: float, top_k: int, top_p: float,
               logit_rows: Any = None) -> tuple[Any, Any, Any]:
        """Pick tokens where ``select`` (len(rows), width) is True; returns (row-local index, ids, probs).

        Row i of ``select`` reads row ``logit_rows[i]`` of ``logits`` (default: row i), so a subset of
        rows needs no copy of the (rows, width, vocab) logits.
        """
        return self.choose_where(rows, logits, select.nonzero(), select.sum(dim=1).tolist(), temperature, top_k, top_p,
                                 logit_rows)

    def choose_where(self, rows: Any, logits: Any, where: Any, counts: list[int], temperature: float, top_k: int,
                     top_p: float, logit_rows: Any = None) -> tuple[Any, Any, Any]:
        """:meth:`choose` at the (row-local index, position) pairs ``where``, row-major, ``counts[i]`` of row i."""
        uniforms = draw_uniforms(self.generators, rows.tolist(), counts, temperature > 0)
        source_rows = where[:, 0] if logit_rows is None else logit_rows[where[:, 0]]
        width, vocab = logits.shape[1], logits.shape[2]
        # index_select on the flat (row x position) view: several times faster than advanced indexing
        ids, probs = choose_at(logits.reshape(-1, vocab), source_rows * width + where[:, 1], uniforms, temperature, top_k, top_p)
        return where, ids, probs

    def commit(self, rows: Any, where: Any, ids: Any, probs: Any, remasked: Any = None) -> None:
        """Write chosen tokens into the batch and record one trace step per row of ``rows``."""
        import torch

        global_rows = rows[where[:, 0]]
        self.ids[global_rows, where[:, 1]] = ids
        self.masked[global_rows, where[:, 1]] = False
        # ``where`` comes from nonzero(): row-major, so each row's picks are one contiguous slice
        bounds = [0, *torch.bincount(where[:, 0], minlength=len(rows)).cumsum(0).tolist()]
        positions, id_list, prob_list = where[:, 1].tolist(), ids.tolist(), probs.tolist()
        remasked_rows: list[list[int]] = [[] for _ in range(len(rows))]
        if remasked is not None:
            for local, pos in remasked.nonzero().tolist():
                remasked_rows[local].append(pos)
        for local, row in enumerate(rows.tolist()):
            a, b = bounds[local], bounds[local + 1]
            self.trace.step(row, positions[a:b], id_list[a:b], prob_list[a:b], remasked_rows[local])

    def remask(self, rows: Any, positions: Any) -> None:
        """Put the mask token back at ``positions`` (len(rows), width) of ``rows``."""
        width = positions.shape[1]
        block = self.ids[rows, :width]
        block[positions] = self.adapter.mask_id
        self.ids[rows, :width] = block
        sub = self.masked[rows, :width]
        sub |= positions
        self.masked[rows, :width] = sub

    def stutters(self, rows: Any) -> Any:
        """Originally masked, filled positions whose token equals their left neighbour (Li et al. 2024)."""
        import torch

        ids = self.ids[rows]
        same = torch.zeros_like(ids, dtype=torch.bool)
        same[:, 1:] = ids[:, 1:] == ids[:, :-1]
        return same & self.original[rows] & ~self.masked[rows]

    def finish(self, sampler_spec: str, started: float, info: dict[str, Any] | None = None) -> list[Generation]:
        return build_generations(self.adapter, sampler_spec, self.items, self.encodings, self.ids.tolist(), self.trace,
                                 self.counters, started, info)


class MaskedSampler(Sampler):
    """Base of the MLM samplers: builds the batch, runs :meth:`run`, assembles Generations."""

    model_kinds: ClassVar[frozenset[str]] = frozenset({"mlm"})

    def generate(self, adapter: Any, items: Sequence[MaskedItem]) -> list[Generation]:
        started = time.perf_counter()
        batch = MaskedBatch(adapter, items)
        info = self.run(batch) or {}
        return batch.finish(self.spec, started, info)

    def run(self, batch: MaskedBatch) -> dict[str, Any] | None:
        raise NotImplementedError

    def _sampling(self) -> tuple[float, int, float]:
        return self.params["temperature"], self.params["top_k"], self.params["top_p"]


class OneShot(MaskedSampler):
    """Fill every mask in a single forward pass (the paper's MLM generation)."""

    name = "one-shot"
    description = "Fill all masked tokens at once: one forward pass."
    parameters = SAMPLING_PARAMS

    def run(self, batch: MaskedBatch) -> None:
        rows = batch.rows_with_masks()
        if len(rows) == 0:
            return
        logits = batch.forward(rows)
        select = batch.masked[rows, : logits.shape[1]]
        batch.commit(rows, *batch.choose(rows, logits, select, *self._sampling()))


class LeftToRight(MaskedSampler):
    """Fill the leftmost remaining mask, one per forward pass: as many passes as masked tokens."""

    name = "left-to-right"
    description = "Fill masks one at a time from left to right: one pass per masked token."
    parameters = SAMPLING_PARAMS

    def run(self, batch: MaskedBatch) -> None:
        import torch

        while True:
            rows = batch.masked.any(dim=1).nonzero().flatten()
            if len(rows) == 0:
                return
            logits = batch.forward(rows)
            current = batch.masked[rows, : logits.shape[1]]
            first = current.float().argmax(dim=1)
            select = torch.zeros_like(current)
            select[torch.arange(len(rows)), first] = True
            batch.commit(rows, *batch.choose(rows, logits, select, *self._sampling()))
            del logits  # free before the next pass (see MaskedBatch.forward)


class MaskPredict(MaskedSampler):
    """Mask-Predict (Ghazvininejad et al., 2019): predict all, then re-mask the least confident and repeat."""

    name = "mask-predict"
    description = "Predict all masks, then T-1 times re-mask the n = N(T-t)/T least confident and re-predict."
    parameters = (Param("steps", int, 4, "T: forward passes per batch", min=1, headline=True), *SAMPLING_PARAMS, STUTTER)

    def run(self, batch: MaskedBatch) -> None:
        import torch

        rows = batch.rows_with_masks()
        if len(rows) == 0:
            return
        total = self.params["steps"]
        width = int(batch.lengths[rows].max())
        original = batch.original[rows, :width]
        confidence = torch.zeros(original.shape, dtype=torch.float32)
        n_masked = batch.n_masked[rows]
        select = original
        for t in range(total):
            if t > 0:
                count = torch.div(n_masked * (total - t), total, rounding_mode="floor")
                select = lowest_scores(confidence.masked_fill(~original, float("inf")), count) & original
                if self.params["stutter"]:
                    select = select | batch.stutters(rows)[:, :width]
                batch.remask(rows, select)
            logits = batch.forward(rows)
            where, ids, probs = batch.choose(rows, logits, select, *self._sampling())
            confidence[where[:, 0], where[:, 1]] = probs
            batch.commit(rows, where, ids, probs)
            del logits  # free before the next pass (see MaskedBatch.forward)


class Confidence(MaskedSampler):
    """MaskGIT (Chang et al., 2022) / LLaDA (Nie et al., 2025): commit the most confident predictions per step.

    After step t of T, ``N * schedule((t+1)/T)`` positions stay masked (linear: 1-x, cosine: cos(pi x / 2));
    at least one is committed per step and every position by the last. With ``threshold`` > 0 every
    prediction at least that probable is committed too (so fewer than T passes may be needed).
    """

    name = "confidence"
    description = "Commit the k most confident predictions per step (MaskGIT/LLaDA), linear or cosine schedule."
    parameters = (
        Param("steps", int, 8, "T: at most this many forward passes", min=1, headline=True),
        Param("schedule", str, "cosine", "how many masks remain after each step", choices=("linear", "cosine")),
        Param("threshold", float, 0.0, "also commit every prediction with probability >= this (0 = off)", min=0.0, max=1.0),
        *SAMPLING_PARAMS,
        STUTTER,
    )

    def _remaining(self, n: Any, step: int, total: int) -> Any:
        import torch

        x = (step + 1) / total
        fraction = 1.0 - x if self.params["schedule"] == "linear" else math.cos(math.pi / 2 * x)
        return torch.floor(n.float() * max(fraction, 0.0)).long()

    def run(self, batch: MaskedBatch) -> None:
        import torch

        total = self.params["steps"]
        threshold = self.params["threshold"]
        for t in range(total):
            rows = batch.masked.any(dim=1).nonzero().flatten()
            if len(rows) == 0:
                return
            logits = batch.forward(rows)
            width = logits.shape[1]
            current = batch.masked[rows, :width]
            where, ids, probs = batch.choose(rows, logits, current, *self._sampling())
            scores = torch.full(current.shape, float("inf"))
            scores[where[:, 0], where[:, 1]] = -probs  # lowest score = most confident
            still = current.sum(dim=1)
            keep_masked = torch.zeros_like(still) if t == total - 1 else self._remaining(batch.n_masked[rows], t, total)
            count = (still - keep_masked).clamp(min=1)
            commit = lowest_scores(scores, count) & current
            if threshold > 0:
                commit |= (scores <= -threshold) & current
            chosen = commit[where[:, 0], where[:, 1]]
            if self.params["stutter"] and t < total - 1:  # repeats stay masked for the next step
                before = batch.ids[rows, :width].clone()
                before[where[chosen][:, 0], where[chosen][:, 1]] = ids[chosen]
                repeat = torch.zeros_like(commit)
                repeat[:, 1:] = (before[:, 1:] == before[:, :-1]) & commit[:, 1:]
                chosen = chosen & ~repeat[where[:, 0], where[:, 1]]
            batch.commit(rows, where[chosen], ids[chosen], probs[chosen])
            del logits  # free before the next pass (see MaskedBatch.forward)


class Gibbs(MaskedSampler):
    """Parallel-sequential Gibbs sampling (Wang & Cho, 2019): resample one random masked position per step.

    Starts from all masks (each position is first visited once, in a random order) or from a
    one-shot fill. During burn-in tokens are sampled from the full distribution at ``burnin_temperature``;
    afterwards with ``temperature`` / ``top_k`` / ``top_p`` (temperature 0 = argmax, as in the paper's code).
    """

    name = "gibbs"
    description = "Wang & Cho 2019 parallel-sequential Gibbs: re-mask and resample one random masked position per step."
    parameters = (
        Param("steps", int, 0, "resampling steps per item (0 = twice its masked token count)", min=0),
        Param("burnin", float, 0.5, "fraction of steps sampled from the full distribution", min=0.0, max=1.0),
        Param("burnin_temperature", float, 1.0, "temperature during burn-in", min=0.01),
        Param("init", str, "mask", "start from all masks or from a one-shot fill", choices=("mask", "one-shot")),
        *SAMPLING_PARAMS,
        STUTTER,
    )

    def run(self, batch: MaskedBatch) -> dict[str, Any]:
        import torch

        rows_all = batch.rows_with_masks()
        info: dict[str, Any] = {"gibbs_start": "all positions masked" if self.params["init"] == "mask" else "one-shot fill"}
        if len(rows_all) == 0:
            return info
        n_masked = batch.n_masked.tolist()
        steps = [0] * len(n_masked)
        positions: list[list[int]] = [[] for _ in n_masked]
        orders: list[list[int]] = [[] for _ in n_masked]
        for row in rows_all.tolist():
            positions[row] = batch.original[row].nonzero().flatten().tolist()
            n = n_masked[row]
            wanted = self.params["steps"] or 2 * n
            steps[row] = max(wanted, n) if self.params["init"] == "mask" else wanted
            if self.params["init"] == "mask":
                orders[row] = torch.randperm(n, generator=batch.generators[row]).tolist()
        if self.params["init"] == "mask" and self.params["steps"] and any(self.params["steps"] < n for n in n_masked):
            info["gibbs_steps_raised"] = "steps raised to the masked token count so that every mask gets filled"
        if self.params["init"] == "one-shot":
            OneShot(temperature=self.params["temperature"], top_k=self.params["top_k"], top_p=self.params["top_p"]).run(batch)
        burnin = [int(self.params["burnin"] * s) for s in steps]
        t = 0
        while True:
            rows = [r for r in rows_all.tolist() if t < steps[r]]
            if not rows:
                return info
            row_index = torch.as_tensor(rows)
            picks = torch.as_tensor([self._pick(batch, r, t, positions[r], orders[r]) for r in rows])
            # one position per row: indexed writes, not the (rows, width) selection blocks of remask()
            batch.ids[row_index, picks] = batch.adapter.mask_id
            batch.masked[row_index, picks] = True
            logits = batch.forward(row_index)
            self._sample(batch, row_index, logits, picks, [t < burnin[r] for r in rows])
            del logits  # free before the next pass (see MaskedBatch.forward)
            t += 1

    def _pick(self, batch: MaskedBatch, row: int, t: int, positions: list[int], order: list[int]) -> int:
        import torch

        gen = batch.generators[row]
        if t < len(order):
            return positions[order[t]]
        if self.params["stutter"]:
            repeats = batch.stutters(torch.as_tensor([row]))[0].nonzero().flatten().tolist()
            if repeats:
                return repeats[int(torch.randint(len(repeats), (1,), generator=gen))]
        return positions[int(torch.randint(len(positions), (1,), generator=gen))]

    def _sample(self, batch: MaskedBatch, rows: Any, logits: Any, picks: Any, in_burnin: list[bool]) -> None:
        """One token per row, at ``picks``: burn-in rows from the full tempered distribution, the others as
        configured."""
        import torch

        for burning, settings in ((True, (self.params["burnin_temperature"], 0, 1.0)), (False, self._sampling())):
            members = [i for i, b in enumerate(in_burnin) if b == burning]
            if not members:
                continue
            if len(members) == len(rows):  # the common case: every row in the same phase
                sub, local, at = rows, None, picks
            else:
                local = torch.as_tensor(members)
                sub, at = rows[local], picks[local]
            where = torch.stack((torch.arange(len(members)), at), dim=1)
            batch.commit(sub, *batch.choose_where(sub, logits, where, [1] * len(members), *settings, logit_rows=local))
