"""Every count a user gives is bounded by what the machine or the model can do.

Why: an absurd count is not a slow run but a broken machine. Ten million tokenizer threads exhausted the
process table (other programs could not fork) and then crashed; tens of thousands of refinement steps ran
for minutes on one sentence; ``--max-steps 10**23`` was accepted. So every integer a user types, as a flag
(:class:`mlmh.config.options.Number`), a component parameter (:class:`mlmh.params.Param`) or a preset key
(:mod:`mlmh.config.presets`), has a ceiling: the :class:`Bound` it declares, else :data:`COUNT`. A value above it is
refused in one line naming the bound and why, where it is typed, before any thread or process starts.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from mlmh.errors import SpecError


@dataclass(frozen=True)
class Bound:
    """The largest value a count may take, and what sets it (said in the refusal)."""

    limit: int
    why: str

    def __str__(self) -> str:
        return f"{self.limit} ({self.why})"


def machine_cores() -> int:
    """The CPU cores this process may run on (its affinity where the system tells it, else all)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):
        return os.cpu_count() or 1


CORES = machine_cores()
#: threads of torch or a tokenizer: more than the cores only queue, and millions take the machine down
THREADS = Bound(CORES, "this machine's CPU cores")
#: worker processes, each with its own models: more than the cores only compete for them (a few are allowed on a
#: small machine, where a run that names two workers should still run)
WORKERS = Bound(max(CORES, 4), "this machine's CPU cores, at least 4; each worker is a process")
#: a sampler's refinement steps, each a forward pass over a batch (runs warn from mlmh.config.plan.MANY_STEPS on)
STEPS = Bound(512, "refinement steps, each a forward pass per batch")
#: optimizer steps of one training
TRAINING_STEPS = Bound(10**8, "optimizer steps of one training")
#: items or texts per forward pass
BATCH = Bound(4096, "items per forward pass")
#: tokens of a block or a text a model reads at once (a position table of this size)
SEQUENCE = Bound(8192, "tokens a model reads at once")
#: passes over a training's data
EPOCHS = Bound(1000, "passes over the training data")
#: a token budget of a training (data read, tokens without improvement)
TOKENS = Bound(10**15, "training tokens")
#: a seed: libraries take 32-bit seeds (scikit-learn, numpy's legacy generator)
SEED = Bound(2**32 - 1, "the largest 32-bit seed")
#: simulated runs of one rule and scenario (mlmh calibrate): each decides a claim on synthetic documents
SIMULATIONS = Bound(100_000, "simulated runs per rule, each deciding a claim")
#: documents a simulated run holds per set (mlmh calibrate)
SIMULATED_DOCUMENTS = Bound(100_000, "documents per simulated set")
#: any other count (documents, samples, runs, iterations): the ceiling of an integer that declares none
COUNT = Bound(10**9, "the largest count mlmh takes")


def ceiling(bound: "Bound | float | None", integer: bool) -> "Bound | float | None":
    """The upper bound a declaration has: its own, else :data:`COUNT` for an integer (none for a float)."""
    if bound is None and integer:
        return COUNT
    return bound


def limit_of(bound: "Bound | float | None") -> float | None:
    return bound.limit if isinstance(bound, Bound) else bound


def check(value: Any, bound: "Bound | float | None", where: str) -> None:
    """One-line SpecError when a number is above its bound: ``WHERE must be <= LIMIT (WHY); got VALUE``."""
    limit = limit_of(bound)
    if limit is not None and isinstance(value, (int, float)) and value > limit:
        raise SpecError(f"{where} must be <= {bound}; got {value!r}")
