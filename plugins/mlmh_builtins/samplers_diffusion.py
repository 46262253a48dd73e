"""Samplers of the masked-diffusion line: MDLM ancestral sampling, ReMDM remasking, LLaDA semi-autoregressive
blocks, and the adaptive ("dependent") Gibbs sampler that Li et al. (ICML 2024) propose as future work.

They run on :class:`~mlmh_builtins.samplers_mlm.MaskedBatch` like the other MLM samplers: only
originally masked positions ever change, every random draw comes from the item's own generator (in a
fixed order per item, so batching changes nothing), and a forward pass is counted only for the rows
that take part in it.
"""

from __future__ import annotations

import math
import time
from collections import deque
from typing import Any, Sequence

from mlmh import bounds
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem

from mlmh.toolkit import SAMPLING_PARAMS, MaskedLM, draw_uniforms, lowest_scores
from mlmh_builtins.samplers_mlm import Gibbs, MaskedBatch, MaskedSampler

SCHEDULE = Param("schedule", str, "linear", "alpha_t, the share of unmasked tokens at time t: linear 1 - t, "
                 "cosine 1 - cos(pi/2 (1 - t))", choices=("linear", "cosine"))


def alpha(t: float, schedule: str) -> float:
    """Share of tokens unmasked at diffusion time ``t``: alpha(1) = 0 (all masked), alpha(0) = 1."""
    if t <= 0.0 or t >= 1.0:  # exact ends (cos(pi/2) is 6e-17, not 0)
        return 1.0 if t <= 0.0 else 0.0
    if schedule == "linear":
        return 1.0 - t
    return 1.0 - math.cos(math.pi / 2 * (1.0 - t))  # the MaskGIT cosine: masked share cos(pi/2 x) at progress x


def coins(batch: MaskedBatch, rows: Sequence[int], candidates: Any, probability: float) -> Any:
    """Bernoulli(``probability``) at each True of ``candidates`` (len(rows), width), drawn in position
    order from each row's own generator (no draw for a row without candidates, none when p is 0 or 1)."""
    import torch

    if probability >= 1.0:
        return candidates.clone()
    out = torch.zeros_like(candidates)
    if probability <= 0.0:
        return out
    for local, row in enumerate(rows):
        where = candidates[local].nonzero().flatten()
        if len(where):
            out[local, where] = torch.rand(len(where), generator=batch.generators[row]) < probability
    return out


class PerItemInfoSampler(MaskedSampler):
    """An MLM sampler whose :meth:`run` returns (info shared by the batch, one info dict per item)."""

    def generate(self, adapter: MaskedLM, items: Sequence[MaskedItem]) -> list[Generation]:
        started = time.perf_counter()
        batch = MaskedBatch(adapter, items)
        shared, per_item = self.run(batch)
        generations = batch.finish(self.spec, started, shared)
        for generation, extra in zip(generations, per_item):
            generation.info.update(extra)
        return generations

    def run(self, batch: MaskedBatch) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        raise NotImplementedError


class Mdlm(PerItemInfoSampler):
    """MDLM ancestral sampling (Sahoo et al., 2024, "Simple and Effective Masked Diffusion Language Models").

    T steps from t = 1 to 0 (t = i/T, s = (i-1)/T): every still-masked position is unmasked with
    probability (alpha_s - alpha_t) / (1 - alpha_t) and takes a token from the model's prediction
    x_theta(z_t); unmasked tokens are carried over (the SUBS parameterisation), and the last step
    (alpha_0 = 1) fills everything left. The (vocab + mask)-way categorical of the paper is drawn as a
    coin first (it does not depend on the model) and then the token. A step whose coins unmask nothing
    leaves the sequence unchanged, and x_theta ignores t, so it needs no forward pass: MDLM's caching
    trick, applied here by skipping the pass. Passes per item = steps that unmask something (<= T),
    recorded per item with the per-step counts in ``info``.
    """

    name = "mdlm"
    description = "MDLM ancestral sampling: T steps from t=1 to 0, each mask unmasked w.p. (a_s-a_t)/(1-a_t); no pass when nothing unmasks."
    parameters = (
        Param("steps", int, 16, "T: diffusion steps from t=1 to 0 (forward passes <= T)", min=1, max=bounds.STEPS, headline=True),
        SCHEDULE,
        *SAMPLING_PARAMS,
    )

    def _sigma(self, alpha_s: float, alpha_t: float) -> float:
        """Probability of remasking a committed token in a step from t to s; MDLM never remasks."""
        return 0.0

    def run(self, batch: MaskedBatch) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        per_item: list[dict[str, Any]] = [{} for _ in batch.items]
        rows = batch.rows_with_masks()
        if len(rows) == 0:
            return {}, per_item
        row_list = rows.tolist()
        total, schedule = self.params["steps"], self.params["schedule"]
        unmasked: dict[int, list[int]] = {row: [] for row in row_list}
        remasked: dict[int, list[int]] = {row: [] for row in row_list}
        for i in range(total, 0, -1):
            alpha_t, alpha_s = alpha(i / total, schedule), alpha((i - 1) / total, schedule)
            last = i == 1
            sigma = 0.0 if last else self._sigma(alpha_s, alpha_t)
            p_unmask = 1.0 if last else (alpha_s - (1.0 - sigma) * alpha_t) / (1.0 - alpha_t)
            masked = batch.masked[rows]
            unmask = coins(batch, row_list, masked, p_unmask)
            remask = coins(batch, row_list, batch.original[rows] & ~masked, sigma)
            for local, row in enumerate(row_list):
                unmasked[row].append(int(unmask[local].sum()))
                remasked[row].append(int(remask[local].sum()))
            passing = unmask.any(dim=1)
            remasking = remask.any(dim=1)
            logits = None
            if passing.any():  # x_theta(z_t): computed before this step's remasking changes z
                local_pass = passing.nonzero().flatten()
                pass_rows = rows[local_pass]
                width = batch.width(pass_rows)
                logits = batch.forward(pass_rows, at=unmask[local_pass, :width])
                where, ids, probs = batch.choose(pass_rows, logits, unmask[local_pass, :width], *self._sampling())
            if remasking.any():
                batch.remask(rows[remasking], remask[remasking])
            if logits is not None:
                batch.commit(pass_rows, where, ids, probs, remasked=remask[local_pass, :width])
                del logits  # free before the next pass (see MaskedBatch.forward)
            for local in (remasking & ~passing).nonzero().flatten().tolist():  # remasking needs no pass
                batch.trace.step(row_list[local], [], [], [], remask[local].nonzero().flatten().tolist())
        for row in row_list:
            per_item[row] = self._item_info(batch, row, unmasked[row], remasked[row])
        return {}, per_item

    def _item_info(self, batch: MaskedBatch, row: int, unmasked: list[int], remasked: list[int]) -> dict[str, Any]:
        return {"unmasked_per_step": unmasked, "steps_without_pass": len(unmasked) - batch.counters.passes[row]}


class Remdm(Mdlm):
    """ReMDM (Wang et al., 2025, "Remasking Discrete Diffusion Models with Inference-Time Scaling").

    MDLM's steps with the ReMDM posterior: a committed (originally masked, now unmasked) token is
    remasked with probability sigma_t, and a masked one is unmasked with probability
    (alpha_s - (1 - sigma_t) alpha_t) / (1 - alpha_t). sigma_t is bounded by
    sigma_max = min(1, (1 - alpha_s) / alpha_t); ``cap``: sigma_t = min(eta, sigma_max), ``rescale``:
    sigma_t = eta * sigma_max. With eta = 0 this is MDLM exactly (same draws). Remasking needs no
    forward pass; passes = steps that unmask something. The last step (alpha_0 = 1, sigma_max = 0)
    fills everything. Not implemented: the paper's confidence schedule and its switch/loop strategies.
    """

    name = "remdm"
    description = "ReMDM: MDLM steps that also remask committed tokens w.p. sigma_t (cap: min(eta, (1-a_s)/a_t); rescale: eta * bound)."
    parameters = (
        Param("steps", int, 16, "T: diffusion steps from t=1 to 0 (forward passes <= T)", min=1, max=bounds.STEPS, headline=True),
        SCHEDULE,
        Param("eta", float, 0.04, "remasking strength (0 = MDLM)", min=0.0, max=1.0, headline=True),
        Param("sigma", str, "cap", "remasking schedule: cap min(eta, bound) or rescale eta * bound", choices=("cap", "rescale")),
        *SAMPLING_PARAMS,
    )

    def _sigma(self, alpha_s: float, alpha_t: float) -> float:
        bound = 1.0 if alpha_t <= 0.0 else min(1.0, (1.0 - alpha_s) / alpha_t)
        eta = self.params["eta"]
        return min(eta, bound) if self.params["sigma"] == "cap" else eta * bound

    def _item_info(self, batch: MaskedBatch, row: int, unmasked: list[int], remasked: list[int]) -> dict[str, Any]:
        return {**super()._item_info(batch, row, unmasked, remasked), "remasked_per_step": remasked}


class Llada(PerItemInfoSampler):
    """LLaDA semi-autoregressive sampling with remasking (Nie et al., 2025, "Large Language Diffusion Models").

    The masked positions are split, left to right, into blocks of ``block_length``; the ``steps`` are
    shared across blocks (steps // blocks each, the first steps % blocks one more, at least one and at
    most one per token of the block). Within a block each step predicts every masked position of the
    block and commits m // s of them (the first m % s steps one more: LLaDA's get_num_transfer_tokens),
    the most confident (``low_confidence`` remasking) or random ones; the rest stay masked. Passes per
    item = the sum of its blocks' steps (<= steps, unless there are more blocks than steps).
    """

    name = "llada"
    description = "LLaDA semi-autoregressive: blocks of masked positions left to right, steps shared, low-confidence or random remasking."
    parameters = (
        Param("steps", int, 16, "forward passes shared by all blocks (each block gets at least one)", min=1, max=bounds.STEPS, headline=True),
        Param("block_length", int, 8, "masked positions per block, left to right", min=1, max=bounds.SEQUENCE, headline=True),
        Param("remasking", str, "low_confidence", "which predictions stay masked: the least confident or random ones",
              choices=("low_confidence", "random")),
        *SAMPLING_PARAMS,
    )

    def plan(self, positions: Sequence[int]) -> list[tuple[list[int], int]]:
        """(block positions, tokens to commit) for each step of an item with these masked positions."""
        size = self.params["block_length"]
        blocks = [list(positions[start:start + size]) for start in range(0, len(positions), size)]
        if not blocks:
            return []
        base, extra = divmod(self.params["steps"], len(blocks))
        steps: list[tuple[list[int], int]] = []
        for index, block in enumerate(blocks):
            block_steps = min(max(base + (index < extra), 1), len(block))
            each, more = divmod(len(block), block_steps)
            steps.extend((block, each + (k < more)) for k in range(block_steps))
        return steps

    def run(self, batch: MaskedBatch) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        import torch

        per_item: list[dict[str, Any]] = [{} for _ in batch.items]
        plans = {row: self.plan(batch.positions[row]) for row in batch.rows_to_fill()}
        for row, plan in plans.items():
            blocks = len({block[0] for block, _ in plan})
            per_item[row] = {"blocks": blocks}
            if blocks > self.params["steps"]:
                per_item[row]["llada_steps_raised"] = f"{blocks} blocks need at least {blocks} steps; steps={self.params['steps']}"
        total = max((len(plan) for plan in plans.values()), default=0)
        for t in range(total):
            active = [row for row, plan in plans.items() if t < len(plan)]
            rows = torch.as_tensor(active)
            width = batch.width(active)
            block = torch.zeros((len(active), width), dtype=torch.bool)
            for local, row in enumerate(active):
                block[local, plans[row][t][0]] = True
            candidates = block & batch.masked[rows, :width]
            logits = batch.forward(rows, at=candidates)
            where, ids, probs = batch.choose(rows, logits, candidates, *self._sampling())
            scores = torch.full(candidates.shape, float("inf"))
            if self.params["remasking"] == "low_confidence":
                scores[where[:, 0], where[:, 1]] = -probs  # lowest score = most confident
            else:
                scores[where[:, 0], where[:, 1]] = draw_uniforms(batch.generators, active, candidates.sum(dim=1).tolist(), True)
            commit = lowest_scores(scores, torch.as_tensor([plans[row][t][1] for row in active])) & candidates
            chosen = commit[where[:, 0], where[:, 1]]
            batch.commit(rows, where[chosen], ids[chosen], probs[chosen])
            del logits  # free before the next pass (see MaskedBatch.forward)
        return {}, per_item


class AdaptiveGibbs(Gibbs):
    """Adaptive ("dependent") Gibbs: the Gibbs sampler with adaptively chosen positions that Li et al.
    (ICML 2024, "Promises and Pitfalls of Generative Masked Language Modeling") propose as future work.

    As ``gibbs`` (same start, burn-in and step count, so equal ``steps`` means equal forward passes),
    but after the first fill each step resamples the position whose current token had the lowest
    conditional probability P(x_j | x_-j) when it was placed (the probability recorded with the pick;
    ``pick=proportional`` instead draws positions with probability proportional to 1 - that
    probability). Why: tokens placed while their neighbours were still masked (the first sweep, or a
    one-shot start) come from the product of marginals that Theorem 3 blames for stutter, and a
    multimodal conditional shows as a low probability; resampling those first spends the passes where
    dependence left the chain stuck, instead of on settled tokens. The ``memory`` most recent picks are
    excluded so the chain cannot resample one position forever; ties go to a seeded random order.
    Scores are refreshed only when a position is resampled (one pass gives one exact conditional).
    """

    name = "adaptive-gibbs"
    description = "Gibbs that resamples the least confident masked position (P(current token | rest) at its last draw) per step."
    bench = ()  # not timed by the bench (gibbs's setting is not this sampler's)
    parameters = (
        *Gibbs.parameters,
        Param("pick", str, "least-confident", "which position to resample: the least confident, or drawn in "
              "proportion to 1 - confidence", choices=("least-confident", "proportional")),
        Param("memory", int, 1, "this many most recent picks are not picked again (at most masked count - 1)", min=0, max=bounds.SEQUENCE),
    )

    def run(self, batch: MaskedBatch) -> dict[str, Any]:
        # per-row (confidence of each position's current token, recent picks) for this batch only
        self._state: dict[int, tuple[dict[int, float], deque[int]]] = {}
        info = super().run(batch)
        info["gibbs_pick"] = f"{self.params['pick']}, last {self.params['memory']} picks excluded"
        return info

    def _pick(self, batch: MaskedBatch, row: int, t: int, positions: list[int], order: list[int]) -> int:
        confidence, recent = self._state.setdefault(row, ({}, deque(maxlen=max(min(self.params["memory"], len(positions) - 1), 0) or None)))
        # the previous step's pick(s), with the probability of the token each got
        confidence.update(batch.trace.last_confidences(row))
        if t < len(order):
            pick = super()._pick(batch, row, t, positions, order)
        else:
            pick = self._adaptive(batch, row, positions, confidence, set(recent) if recent.maxlen else set())
        if recent.maxlen:
            recent.append(pick)
        return pick

    def _adaptive(self, batch: MaskedBatch, row: int, positions: list[int], confidence: dict[int, float], excluded: set[int]) -> int:
        import torch

        candidates = [p for p in positions if p not in excluded]
        if self.params["stutter"]:
            repeats = set(batch.stutter_positions([row])[0])
            candidates = [p for p in candidates if p in repeats] or candidates
        gen = batch.generators[row]
        scores = torch.as_tensor([confidence.get(p, 0.0) for p in candidates], dtype=torch.float64)
        if self.params["pick"] == "proportional":
            weights = (1.0 - scores).clamp(min=1e-6)
            return candidates[int(torch.multinomial(weights, 1, generator=gen))]
        tie_break = torch.rand(len(candidates), generator=gen, dtype=torch.float64)
        lowest = scores == scores.min()
        return candidates[int(torch.where(lowest, tie_break, float("inf")).argmin())]
