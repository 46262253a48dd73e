"""The machine a figure was measured on: its CPU model, and the CPU time of a fixed reference workload.

CPU seconds differ between machines (an AVX2 core at 2.4 GHz runs the same preset 1.8x slower than the one the
goals were first met on), so every figure travels with the CPU that made it and with the time of one fixed
workload: a single-threaded float32 matrix-multiply loop, the kind of work model training and generation spend
their time in. A figure divided by the reference time compares across machines; a goal is met on the machine
the report names.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the reference workload: this many products of two SIZE x SIZE float32 matrices on one thread
SIZE, PRODUCTS, RUNS = 384, 200, 5


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name, with the vector extensions that decide torch's kernels (AVX2, AVX-512)."""
    import platform

    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine() or "unknown"
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                platform.machine() or "unknown")
    flags = set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))
    vector = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    return f"{name} ({vector})"


def reference_seconds() -> float:
    """Median CPU seconds of :data:`PRODUCTS` float32 ``SIZE x SIZE`` matrix products on one torch thread."""
    import statistics
    import time

    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        generator = torch.Generator().manual_seed(0)
        a, b = (torch.randn(SIZE, SIZE, generator=generator) for _ in range(2))
        times = []
        for run in range(RUNS + 1):  # the first warms the kernels up
            started = time.process_time()
            for _ in range(PRODUCTS):
                torch.mm(a, b)
            if run:
                times.append(time.process_time() - started)
        return round(statistics.median(times), 4)
    finally:
        torch.set_num_threads(previous)


def describe() -> dict[str, Any]:
    """The machine block every bench report carries: the CPU, and the reference workload's time."""
    return {"cpu": cpu_model(), "reference_workload": f"{PRODUCTS} float32 {SIZE}x{SIZE} matmuls, 1 thread",
            "reference_cpu_seconds": reference_seconds()}
