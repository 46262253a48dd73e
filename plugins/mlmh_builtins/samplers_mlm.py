"""Samplers for masked LMs: one-shot, left-to-right, mask-predict, confidence (MaskGIT/LLaDA), Gibbs.

All share :class:`MaskedBatch`: the batch as tensors, a forward pass over the rows still working,
and vectorised token choice at selected positions. Only originally masked positions ever change.
"""

from __future__ import annotations

import math
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar, Sequence

from mlmh import bounds
from mlmh.components import BenchCase, Sampler
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem

from mlmh.toolkit import (SAMPLING_PARAMS, ItemCounters, MaskedLM, TraceRecorder, build_generations, choose_at,
                          draw_uniforms, encode_items, item_generators, lowest_scores)

if TYPE_CHECKING:
    from torch import Tensor

    Rows = Tensor | Sequence[int]  # row indices, as a tensor or a list (as_list)

STUTTER = Param("stutter", bool, False, "re-mask generated tokens equal to their left neighbour (Li et al. 2024)")


class MaskedBatch:
    """A right-padded batch of encoded items and the bookkeeping every MLM sampler needs.

    The state lives on the CPU as numpy arrays; ``ids`` and ``masked`` are torch tensors sharing their
    memory, so a sampler may use either, and the other tensors are made when first asked for.
    Per-position work goes through plain lists (:meth:`pick`, :meth:`place`, :meth:`remask_at`):
    after a forward pass every distinct tensor operation first pays tens of microseconds to bring its
    code back into the CPU caches (docs/PERFORMANCE.md), and a batch's masked positions are few. Only
    the input of a pass goes to the model's device.
    """

    def __init__(self, adapter: MaskedLM, items: Sequence[MaskedItem]) -> None:
        import numpy as np

        self.adapter = adapter
        self.items = items
        self.encodings = encode_items(adapter, items)
        self.generators = item_generators(items)
        self.trace = TraceRecorder.for_encodings(self.encodings)
        self.counters = ItemCounters.zeros(len(items))
        #: each row's originally masked positions, ascending
        self.positions: list[list[int]] = [list(e.masked) for e in self.encodings]
        sequences = [e.ids for e in self.encodings] or [[adapter.mask_id]]
        self.length_list = [len(s) for s in sequences]
        width, pad = max(self.length_list), adapter.pad_id
        self._ids = np.array([[*s, *([pad] * (width - len(s)))] for s in sequences], dtype=np.int64)
        self._masked = marked(self._ids.shape, self.positions)  # positions holding the mask token

    # torch views of the state, made when first asked for (each one is an operation a pass pays for)
    @cached_property
    def ids(self) -> Tensor:
        import torch

        return torch.from_numpy(self._ids)

    @cached_property
    def masked(self) -> Tensor:
        import torch

        return torch.from_numpy(self._masked)

    @cached_property
    def original(self) -> Tensor:
        """Positions masked at the start (read-only by convention)."""
        import torch

        return torch.from_numpy(marked(self._ids.shape, self.positions))

    @cached_property
    def attention(self) -> Tensor:
        import numpy as np
        import torch

        # made in numpy and shared, as ids: torch's own constructors cost twice as much right after a pass
        width = self._ids.shape[1]
        return torch.from_numpy(np.array([[1] * n + [0] * (width - n) for n in self.length_list], dtype=np.int64))

    @cached_property
    def lengths(self) -> Tensor:
        import torch

        return torch.as_tensor(self.length_list)

    @cached_property
    def n_masked(self) -> Tensor:
        import torch

        return torch.as_tensor([len(ps) for ps in self.positions] + [0] * (self._ids.shape[0] - len(self.positions)))

    def rows_with_masks(self) -> Tensor:
        return torch_rows(self.rows_to_fill())

    def rows_to_fill(self) -> list[int]:
        """The rows with at least one masked position, as a list."""
        return [row for row, ps in enumerate(self.positions) if ps]

    def width(self, rows: Rows) -> int:
        """The longest length among ``rows``: the width of their pass."""
        return max(self.length_list[row] for row in as_list(rows))

    def forward(self, rows: Rows, at: Tensor | Sequence[Sequence[int]] | None = None) -> Tensor:
        """One pass over ``rows`` (a list or tensor), trimmed to their longest length.

        With ``at`` (the positions to read: a list of positions per row, or a (len(rows), width)
        boolean tensor) the logits of those positions alone, (n, vocab), row-major: the model's
        output layer runs only there. Without, the logits of every position, (len(rows), width, vocab).

        Loops should drop the previous pass's logits before calling again: while they are alive the
        allocator must map fresh pages for the new block, and first-touch page faults cost several
        percent of a pass at size tiny.
        """
        row_list = as_list(rows)
        lengths = [self.length_list[row] for row in row_list]
        width = max(lengths)
        if width == self._ids.shape[1] and row_list == list(range(self._ids.shape[0])):
            ids, attention = self.ids, self.attention  # every row, full width: no copy
        else:
            index = torch_rows(row_list)
            ids, attention = self.ids[index, :width], self.attention[index, :width]
        device = self.adapter.device
        if ids.device != device:  # the state lives on the CPU; skipping .to() there saves a call per pass
            ids, attention = ids.to(device), attention.to(device)
        logits = self.adapter.logits(ids, attention, tokens=sum(lengths), at=None if at is None else flat_index(at, width))
        for row, length in zip(row_list, lengths):
            self.counters.add(row, length)
        return logits

    def pick(self, rows: Sequence[int], logits: Tensor, positions: Sequence[Sequence[int]], temperature: float,
             top_k: int, top_p: float, logit_rows: Sequence[int] | None = None) -> tuple[list[list[int]], list[list[float]]]:
        """A token at each of ``positions[i]`` of ``rows[i]``: per row, the ids and their probabilities.

        ``logits`` as :meth:`forward` returns them: read at ``positions`` (one row per position, in
        order; ``logit_rows``: which rows instead, one per position), or every position's (row
        ``logit_rows[i]`` of the block for ``rows[i]``, default i).
        """
        counts = [len(ps) for ps in positions]
        if logits.dim() == 2:
            flat = logits
            index = range(sum(counts)) if logit_rows is None else list(logit_rows)
        else:
            width, vocab = logits.shape[1], logits.shape[2]
            flat = logits.reshape(-1, vocab)
            sources = range(len(positions)) if logit_rows is None else logit_rows
            index = [source * width + p for source, ps in zip(sources, positions) for p in ps]
        uniforms = draw_uniforms(self.generators, rows, counts, temperature > 0)
        ids, probs = choose_at(flat, index, uniforms, temperature, top_k, top_p)
        return split_counts(ids.tolist(), counts), split_counts(probs.tolist(), counts)

    def choose(self, rows: Rows, logits: Tensor, select: Tensor, temperature: float, top_k: int,
               top_p: float) -> tuple[Tensor, Tensor, Tensor]:
        """Pick tokens where ``select`` (len(rows), width) is True, from logits :meth:`forward` read at
        ``select`` (or of every position, row i of the block for rows[i]); returns (row-local index, ids, probs)."""
        return self.choose_where(rows, logits, select.nonzero(), select.sum(dim=1).tolist(), temperature, top_k, top_p)

    def choose_where(self, rows: Rows, logits: Tensor, where: Tensor, counts: list[int], temperature: float, top_k: int,
                     top_p: float) -> tuple[Tensor, Tensor, Tensor]:
        """:meth:`choose` at the (row-local index, position) pairs ``where``, row-major, ``counts[i]`` of row i.
        The ids and probabilities come back on the CPU, with the batch."""
        uniforms = draw_uniforms(self.generators, as_list(rows), counts, temperature > 0)
        if logits.dim() == 2:  # read at ``where``: one row per pair, in order
            ids, probs = choose_at(logits, range(len(where)), uniforms, temperature, top_k, top_p)
            return where, ids.cpu(), probs.cpu()
        width, vocab = logits.shape[1], logits.shape[2]
        # index_select on the flat (row x position) view: several times faster than advanced indexing
        index = (where[:, 0] * width + where[:, 1]).to(logits.device)
        ids, probs = choose_at(logits.reshape(-1, vocab), index, uniforms, temperature, top_k, top_p)
        return where, ids.cpu(), probs.cpu()

    def place(self, rows: Sequence[int], positions: Sequence[Sequence[int]], ids: Sequence[Sequence[int]],
              probs: Sequence[Sequence[float]], remasked: Sequence[Sequence[int]] | None = None) -> None:
        """Write ``ids[i]`` at ``positions[i]`` of ``rows[i]`` and record one trace step per row
        (``remasked[i]``: the positions of the row that went back to the mask in this step)."""
        write_at(self._ids, rows, positions, ids)
        write_at(self._masked, rows, positions, fill=False)
        for local, row in enumerate(rows):
            self.trace.step(row, list(positions[local]), list(ids[local]), list(probs[local]),
                            remasked[local] if remasked is not None else ())

    def commit(self, rows: Rows, where: Tensor, ids: Tensor, probs: Tensor, remasked: Tensor | None = None) -> None:
        """:meth:`place` for tensors: ``where`` (row-local index, position) pairs row-major, as from
        :meth:`choose`; ``remasked`` a (len(rows), width) mask."""
        row_list = as_list(rows)
        counts = [0] * len(row_list)
        locals_, positions = where[:, 0].tolist(), where[:, 1].tolist()
        for local in locals_:
            counts[local] += 1
        back = None if remasked is None else row_positions(remasked)
        self.place(row_list, split_counts(positions, counts), split_counts(ids.tolist(), counts),
                   split_counts(probs.tolist(), counts), back)

    def remask_at(self, rows: Sequence[int], positions: Sequence[Sequence[int]]) -> None:
        """Put the mask token back at ``positions[i]`` of ``rows[i]``."""
        write_at(self._ids, rows, positions, fill=self.adapter.mask_id)
        write_at(self._masked, rows, positions, fill=True)

    def remask(self, rows: Rows, positions: Tensor) -> None:
        """Put the mask token back at ``positions`` (len(rows), width) of ``rows``."""
        self.remask_at(as_list(rows), row_positions(positions))

    def stutters(self, rows: Rows) -> Tensor:
        """:meth:`stutter_positions` of ``rows`` as a (len(rows), width) boolean tensor."""
        import torch

        repeats = self.stutter_positions(as_list(rows))
        return torch.from_numpy(marked((len(repeats), self._ids.shape[1]), repeats))

    def still_masked(self, rows: Sequence[int]) -> list[list[int]]:
        """Each row's originally masked positions that hold the mask token now, ascending."""
        masked = self._masked
        return [[p for p in self.positions[row] if masked[row, p]] for row in rows]

    def stutter_positions(self, rows: Sequence[int]) -> list[list[int]]:
        """Each row's originally masked, filled positions whose token equals their left neighbour
        (Li et al. 2024), ascending."""
        ids, masked = self._ids, self._masked
        return [[p for p in self.positions[row] if p > 0 and not masked[row, p] and ids[row, p] == ids[row, p - 1]]
                for row in rows]

    def finish(self, sampler_spec: str, started: float, info: dict[str, Any] | None = None) -> list[Generation]:
        return build_generations(self.adapter, sampler_spec, self.items, self.encodings, self._ids.tolist(), self.trace,
                                 self.counters, started, info)


def torch_rows(rows: Sequence[int]) -> Tensor:
    """Row indices as a long tensor."""
    import torch

    return torch.as_tensor(list(rows), dtype=torch.long)


def as_list(rows: Any) -> list[int]:
    """Row indices given as a tensor or a sequence, as a list."""
    return rows.tolist() if hasattr(rows, "tolist") else list(rows)


def flat_pairs(rows: Sequence[int], positions: Sequence[Sequence[int]]) -> tuple[list[int], list[int]]:
    """(row, position) pairs of ``positions[i]`` of ``rows[i]``, as two flat lists for numpy indexing."""
    return [row for row, ps in zip(rows, positions) for _ in ps], [p for ps in positions for p in ps]


def flat_index(at: Any, width: int) -> Any:
    """Positions to read, per row (lists) or as a (rows, any width) boolean tensor, as a flat long
    tensor of row * width + position, row-major."""
    import numpy as np
    import torch

    if torch.is_tensor(at):
        where = at.nonzero()
        return where[:, 0] * width + where[:, 1]
    return torch.from_numpy(np.array([row * width + p for row, ps in enumerate(at) for p in ps], dtype=np.int64))


def marked(shape: tuple[int, int], positions: Sequence[Sequence[int]]) -> Any:
    """A boolean numpy array of ``shape``, True at ``positions[i]`` of row i."""
    import numpy as np

    marks = np.zeros(shape, dtype=bool)
    write_at(marks, range(len(positions)), positions, fill=True)
    return marks


#: Fewer (row, position) pairs than this are written one element at a time (:func:`write_at`).
FEW_WRITES = 64


def write_at(array: Any, rows: Sequence[int], positions: Sequence[Sequence[int]],
             values: Sequence[Sequence[Any]] | None = None, fill: Any = None) -> None:
    """``array[rows[i], positions[i][j]] = values[i][j]`` in a 2-D numpy array, or ``fill`` at every such place.

    A few elements are written one at a time: numpy's fancy indexing (and the conversion of its index lists)
    cost about 40 us per call of a sampler at size tiny, batch 1, right after a model pass, when its code is
    out of the CPU caches (docs/PERFORMANCE.md), where a batch of one short text writes a few dozen elements.
    """
    if sum(len(ps) for ps in positions) < FEW_WRITES:
        for n, (row, ps) in enumerate(zip(rows, positions)):
            line = array[row]
            if values is None:
                for p in ps:
                    line[p] = fill
            else:
                for p, value in zip(ps, values[n]):
                    line[p] = value
        return
    flat_rows, flat_positions = flat_pairs(rows, positions)
    array[flat_rows, flat_positions] = [v for vs in values for v in vs] if values is not None else fill


def row_positions(mask: Any) -> list[list[int]]:
    """The True positions of each row of a (rows, width) boolean tensor, ascending."""
    out: list[list[int]] = [[] for _ in range(len(mask))]
    for row, pos in mask.nonzero().tolist():
        out[row].append(pos)
    return out


def split_counts(values: Sequence[Any], counts: Sequence[int]) -> list[list[Any]]:
    """``values`` cut into consecutive lists of ``counts[i]`` items."""
    out, start = [], 0
    for n in counts:
        out.append(list(values[start:start + n]))
        start += n
    return out


class MaskedSampler(Sampler[MaskedLM]):
    """Base of the MLM samplers: builds the batch, runs :meth:`run`, assembles Generations."""

    model_kinds: ClassVar[frozenset[str]] = frozenset({"mlm"})

    def generate(self, adapter: MaskedLM, items: Sequence[MaskedItem]) -> list[Generation]:
        started = time.perf_counter()
        batch = MaskedBatch(adapter, items)
        info = self.run(batch) or {}
        return batch.finish(self.spec, started, info)

    def run(self, batch: MaskedBatch) -> Any:
        """The batch's sampling; what it returns is for :meth:`generate` (here: info shared by the batch, or None)."""
        raise NotImplementedError

    def _sampling(self) -> tuple[float, int, float]:
        return self.params["temperature"], self.params["top_k"], self.params["top_p"]


class OneShot(MaskedSampler):
    """Fill every mask in a single forward pass (the paper's MLM generation)."""

    name = "one-shot"
    description = "Fill all masked tokens at once: one forward pass."
    bench = (BenchCase("one-shot", "one-shot", 10),)
    parameters = SAMPLING_PARAMS

    def run(self, batch: MaskedBatch) -> None:
        rows = batch.rows_to_fill()
        if not rows:
            return
        positions = batch.still_masked(rows)
        logits = batch.forward(rows, at=positions)
        batch.place(rows, positions, *batch.pick(rows, logits, positions, *self._sampling()))


class LeftToRight(MaskedSampler):
    """Fill the leftmost remaining mask, one per forward pass: as many passes as masked tokens."""

    name = "left-to-right"
    description = "Fill masks one at a time from left to right: one pass per masked token."
    bench = (BenchCase("left-to-right", "left-to-right", 30),)
    parameters = SAMPLING_PARAMS

    def run(self, batch: MaskedBatch) -> None:
        rows = batch.rows_to_fill()
        positions = batch.still_masked(rows)  # pass k fills each row's k-th masked position
        for k in range(max((len(ps) for ps in positions), default=0)):
            live = [i for i, ps in enumerate(positions) if k < len(ps)]
            sub, at = [rows[i] for i in live], [[positions[i][k]] for i in live]
            logits = batch.forward(sub, at=at)
            batch.place(sub, at, *batch.pick(sub, logits, at, *self._sampling()))
            del logits  # free before the next pass (see MaskedBatch.forward)


class MaskPredict(MaskedSampler):
    """Mask-Predict (Ghazvininejad et al., 2019): predict all, then re-mask the least confident and repeat."""

    name = "mask-predict"
    description = "Predict all masks, then T-1 times re-mask the n = N(T-t)/T least confident and re-predict."
    default_for = frozenset({"mlm"})
    bench = (BenchCase("mask-predict T=1", "mask-predict-1", 20, "steps=1"),
             BenchCase("mask-predict T=4", "mask-predict-4", 21, "steps=4", reference=True),
             BenchCase("mask-predict T=10", "mask-predict-10", 22, "steps=10"))
    parameters = (Param("steps", int, 4, "T: forward passes per batch", min=1, max=bounds.STEPS, headline=True), *SAMPLING_PARAMS, STUTTER)

    def run(self, batch: MaskedBatch) -> None:
        rows = batch.rows_to_fill()
        if not rows:
            return
        total = self.params["steps"]
        positions = [batch.positions[row] for row in rows]
        confidence = [dict.fromkeys(ps, 0.0) for ps in positions]  # of each masked position's current token
        select = positions
        for t in range(total):
            if t > 0:
                # re-mask the n = N(T-t)/T least confident (ties: leftmost first, as lowest_scores)
                select = [sorted(sorted(ps, key=conf.__getitem__)[: len(ps) * (total - t) // total])
                          for ps, conf in zip(positions, confidence)]
                if self.params["stutter"]:
                    select = [sorted(set(chosen).union(repeats))
                              for chosen, repeats in zip(select, batch.stutter_positions(rows))]
                batch.remask_at(rows, select)
            logits = batch.forward(rows, at=select)
            ids, probs = batch.pick(rows, logits, select, *self._sampling())
            for conf, at, p in zip(confidence, select, probs):
                conf.update(zip(at, p))
            batch.place(rows, select, ids, probs)
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
        Param("steps", int, 8, "T: at most this many forward passes", min=1, max=bounds.STEPS, headline=True),
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
            width = batch.width(rows)
            current = batch.masked[rows, :width]
            logits = batch.forward(rows, at=current)
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
    bench: ClassVar[tuple[BenchCase, ...]] = (BenchCase("gibbs", "gibbs", 40),)
    parameters = (
        Param("steps", int, 0, "resampling steps per item (0 = twice its masked token count)", min=0, max=bounds.STEPS),
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
            positions[row] = list(batch.positions[row])
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
            picks = [[self._pick(batch, r, t, positions[r], orders[r])] for r in rows]  # one position per row
            batch.remask_at(rows, picks)
            logits = batch.forward(rows, at=picks)
            self._sample(batch, rows, logits, picks, [t < burnin[r] for r in rows])
            del logits  # free before the next pass (see MaskedBatch.forward)
            t += 1

    def _pick(self, batch: MaskedBatch, row: int, t: int, positions: list[int], order: list[int]) -> int:
        import torch

        gen = batch.generators[row]
        if t < len(order):
            return positions[order[t]]
        if self.params["stutter"]:
            (repeats,) = batch.stutter_positions([row])
            if repeats:
                return repeats[int(torch.randint(len(repeats), (1,), generator=gen))]
        return positions[int(torch.randint(len(positions), (1,), generator=gen))]

    def _sample(self, batch: MaskedBatch, rows: list[int], logits: Any, picks: list[list[int]],
                in_burnin: list[bool]) -> None:
        """One token per row, at ``picks`` (one position per row): burn-in rows from the full tempered
        distribution, the others as configured."""
        settings: tuple[float, int, float]
        for burning, settings in ((True, (self.params["burnin_temperature"], 0, 1.0)), (False, self._sampling())):
            members = [i for i, b in enumerate(in_burnin) if b == burning]
            if not members:
                continue
            if len(members) == len(rows):  # the common case: every row in the same phase
                sub, at, local = rows, picks, None
            else:
                sub, at, local = [rows[i] for i in members], [picks[i] for i in members], members
            batch.place(sub, at, *batch.pick(sub, logits, at, *settings, logit_rows=local))
