"""Timed runs: pinned torch threads, interleaved medians with a warm-up, a subprocess's wall time."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from mlmh.bench.memory import PeakMemory
from mlmh.bench.ratios import median


@contextmanager
def pinned_threads(threads: int) -> Iterator[int]:
    """Run the block with exactly ``threads`` intra-op torch threads; restore the old setting after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)


@dataclass
class Timing:
    """Median wall time of several runs of one function, with every run and the peak memory."""

    seconds: float
    runs: list[float]
    peak_mib: float
    result: Any = field(default=None, repr=False, compare=False)  # what the last run returned
    cpu_seconds: float = 0.0  # median process CPU time (all threads): robust to other processes' load


#: A sampler cell's harness and bare sides each run at least this long in all (see measure_interleaved).
CELL_SECONDS = 0.5
#: ... and on, doubling, up to this long while the overhead's 95 % interval is wider than CELL_CI_WIDTH ...
CELL_MAX_SECONDS = 2.0
CELL_CI_WIDTH = 0.04
#: ... in at most this many runs.
CELL_MAX_RUNS = 400


def measure_interleaved(functions: dict[str, Callable[[], Any]], *, runs: int = 5, warmup: int = 1,
                        memory: PeakMemory | None = None, min_seconds: float = 0.0, max_runs: int = CELL_MAX_RUNS,
                        precise: Callable[[dict[str, list[float]]], bool] | None = None,
                        max_seconds: float = 0.0) -> dict[str, Timing]:
    """Time each function ``runs`` times after ``warmup`` untimed calls, alternating between them, and
    go on until each has run ``min_seconds`` in all (at most ``max_runs`` runs): the median of 5 runs
    of a 3 ms call moved by 0.1 between bench runs, more than the margin of a goal. While ``precise``
    (given every function's run times) says no, the time each must run doubles, up to ``max_seconds``."""
    if runs < 1:
        raise ValueError("runs must be >= 1")
    memory = memory or PeakMemory()
    for fn in functions.values():
        for _ in range(warmup):
            fn()
    seconds: dict[str, list[float]] = {name: [] for name in functions}
    cpu: dict[str, list[float]] = {name: [] for name in functions}
    peaks: dict[str, float] = {name: 0.0 for name in functions}
    results: dict[str, Any] = {}
    done, target = 0, min_seconds
    while True:
        while done < runs or (done < max_runs and min(sum(seconds[name]) for name in functions) < target):
            done += 1
            for name, fn in functions.items():
                memory.start()
                start, cpu_start = time.perf_counter(), time.process_time()
                results[name] = fn()
                seconds[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - cpu_start)
                peaks[name] = max(peaks[name], memory.peak_mib())
        if precise is None or done >= max_runs or target >= max_seconds or precise(seconds):
            break
        target = min(2 * max(target, 1e-3), max_seconds)
    return {name: Timing(median(seconds[name]), seconds[name], peaks[name], results.get(name), median(cpu[name]))
            for name in functions}


def measure(fn: Callable[[], Any], *, runs: int = 5, warmup: int = 1, memory: PeakMemory | None = None) -> Timing:
    """Median wall time of ``fn`` over ``runs`` runs after ``warmup`` untimed ones."""
    return measure_interleaved({"fn": fn}, runs=runs, warmup=warmup, memory=memory)["fn"]


def command_wall_time(argv: Sequence[str], *, runs: int = 7, env: dict[str, str] | None = None) -> Timing:
    """Median wall time of a subprocess (e.g. ``mlmh --help``), output discarded; one untimed warm-up."""
    environment = {**os.environ, **(env or {})}

    def run() -> int:
        done = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
        if done.returncode != 0:
            from mlmh.errors import MlmhError

            raise MlmhError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.decode()[-300:]}")
        return done.returncode

    return measure(run, runs=runs, warmup=1)


def mlmh_command() -> list[str]:
    """How to launch the installed ``mlmh`` console script (next to this Python, else ``python -m mlmh``)."""
    script = Path(sys.executable).with_name("mlmh")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlmh"]
