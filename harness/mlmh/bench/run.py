"""The whole bench: what to measure (:class:`BenchOptions`) and one JSON-ready report of it."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from mlmh.bench.goals import goal_rows, summarize_size
from mlmh.bench.harness_figures import measure_scaling, measure_startup
from mlmh.bench.machine import describe as describe_machine
from mlmh.bench.memory import PeakMemory
from mlmh.bench.metrics import METRIC_NAMES, measure_metric_throughput
from mlmh.bench.models import bench_vocabulary, parameter_count, save_bench_models
from mlmh.bench.samplers import (SPEEDUP_LENGTH, SamplerCase, bench_items, case_by_key, case_by_label, causal_case,
                                 masked_case, measure_sampler, sampler_cases)
from mlmh.bench.timing import CELL_CI_WIDTH, CELL_MAX_RUNS, CELL_MAX_SECONDS, CELL_SECONDS, pinned_threads


def as_json_ready(value: Any) -> Any:
    """Dataclasses and tuples to plain JSON types (floats rounded to 6 significant digits)."""
    if hasattr(value, "__dataclass_fields__"):
        value = asdict(value)
    if isinstance(value, dict):
        return {str(k): as_json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json_ready(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class BenchOptions:
    """What ``mlmh bench`` measures. The defaults finish in about 5 minutes on 2 cores."""

    sizes: tuple[str, ...] = ("tiny",)
    lengths: tuple[int, ...] = (32,)
    batches: tuple[int, ...] = (1, 8, 32)
    runs: int = 5
    threads: int = field(default_factory=available_cores)
    samplers: tuple[str, ...] = field(default_factory=lambda: tuple(case.key for case in sampler_cases()))  # keys
    metrics: tuple[str, ...] = METRIC_NAMES
    metric_pairs: int = 64
    scaling_documents: int = 12
    startup: bool = True
    scaling: bool = True
    seed: int = 0
    speedup_length: int = SPEEDUP_LENGTH  # tokens of the speedup/crossover workload (half masked)

    def cells(self) -> list[tuple[int, int, SamplerCase]]:
        """(length, batch, case) to measure: the grid, plus the speedup/crossover workload."""
        by_key, by_label = case_by_key(), case_by_label()
        cases = [by_key[key] for key in self.samplers]
        grid = [(length, batch, case) for length in self.lengths for batch in self.batches for case in cases]
        for batch in sorted(set(self.batches) | {1}):
            for label in (masked_case(), causal_case()):
                cell = (self.speedup_length, batch, by_label[label])
                if cell not in grid:
                    grid.append(cell)
        return grid


Progress = Callable[[str, int, int], None]  # (what, done, total)


def run_bench(options: BenchOptions, progress: Progress | None = None, work_dir: Path | None = None) -> dict[str, Any]:
    """Measure everything ``options`` asks for and return one JSON-ready report."""
    import tempfile

    import torch

    from mlmh.adapters import load_adapter
    from mlmh.machine.allocator import tune_command_line_process
    from mlmh.registry import get_registry
    from mlmh.training.config import SIZES

    notify = progress or (lambda what, done, total: None)
    cells_plan = options.cells()
    stages = len(options.sizes) * len(cells_plan) + int(options.startup) + int(options.scaling) + len(options.metrics)
    done = 0
    memory = PeakMemory()
    report: dict[str, Any] = {
        "machine": {**describe_machine(), "cores": available_cores(), "threads": options.threads, "torch": torch.__version__,
                    "load_average_before": list(os.getloadavg()), "peak_memory_method": memory.method},
        "options": as_json_ready(options),
        "method": {"warmup_runs": 1, "timed_runs": options.runs, "statistic": "median",
                   "interleaved": "harness and bare runs alternate",
                   "sampler_cells": f"at least {options.runs} runs, and on until each side has run {CELL_SECONDS} s "
                                    f"in all, doubling up to {CELL_MAX_SECONDS} s while the overhead's 95% "
                                    f"interval is wider than {CELL_CI_WIDTH} (at most {CELL_MAX_RUNS} runs)"},
        "sizes": {},
    }
    tune_command_line_process()  # what the mlmh command line runs with (mlmh.cli.main)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mlmh-bench-", dir=work_dir) as tmp, pinned_threads(options.threads):
        for size in options.sizes:
            window = max([*options.lengths, options.speedup_length]) + 2
            paths = save_bench_models(size, Path(tmp) / "models", window=window, seed=options.seed)
            adapters = {kind: load_adapter(kind, path, identity=f"bench-{size}-{kind}") for kind, path in paths.items()}
            vocabulary = bench_vocabulary(SIZES[size].vocab_size)
            cells = []
            for length, batch, case in cells_plan:
                notify(f"{size} {case.label} L={length} B={batch}", done, stages)
                sampler = get_registry().build("sampler", case.spec)
                items = bench_items(length, batch, vocabulary, seed=options.seed)
                cells.append(as_json_ready(measure_sampler(case, sampler, adapters[case.kind], items,
                                                           runs=options.runs, memory=memory)))
                done += 1
            report["sizes"][size] = {
                "parameters": {kind: parameter_count(a.model) for kind, a in adapters.items()},
                "cells": cells,
                "ratios": as_json_ready(summarize_size(cells, options.batches, options.speedup_length)),
            }
            del adapters
        if options.startup:
            notify("startup: mlmh --help", done, stages)
            report["startup"] = as_json_ready(measure_startup(runs=max(options.runs, 7)))
            done += 1
        if options.scaling:
            notify("scaling: eval 1x vs 2x documents", done, stages)
            try:
                report["scaling"] = as_json_ready(measure_scaling(Path(tmp) / "scaling", documents=options.scaling_documents,
                                                                  runs=3, size="tiny"))
            except Exception as exc:  # the runner failing must not hide the other figures
                report["scaling"] = {"error": f"{type(exc).__name__}: {exc}"}
            done += 1
        report["metrics"] = {}
        for name in options.metrics:
            notify(f"metric throughput: {name}", done, stages)
            report["metrics"].update(as_json_ready(measure_metric_throughput([name], pairs=options.metric_pairs,
                                                                             runs=options.runs)))
            done += 1
    notify("done", done, stages)
    report["machine"]["load_average_after"] = list(os.getloadavg())
    report["wall_seconds"] = round(time.perf_counter() - started, 2)
    report["goals"] = as_json_ready(goal_rows(report))
    return report
