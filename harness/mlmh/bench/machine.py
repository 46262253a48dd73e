"""The machine a figure was measured on: its CPU model, and the CPU time of a fixed reference workload.

CPU seconds differ between machines (an AVX2 core at 2.4 GHz runs the same preset 1.8x slower than the one the
goals were first met on), so every figure travels with the CPU that made it and with the time of one fixed
workload: a single-threaded float32 matrix-multiply loop, the kind of work model training and generation spend
their time in. A figure divided by the reference time compares across machines; a goal is met on the machine
the report names.

The kernels torch picks are named too (``torch.backends.cpu.get_cpu_capability``): an AVX-512 machine measures an
AVX2 machine's kernels when run with ``ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2``
(docs/PERFORMANCE.md), the same clock and caches aside.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

#: the reference workload: this many products of two SIZE x SIZE float32 matrices on one thread
SIZE, PRODUCTS, RUNS = 384, 200, 5


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    """The processor's model name, with the vector extensions that decide torch's kernels (AVX2, AVX-512)."""
    import platform

    from mlmh.machine.devices import cpu_flags

    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return platform.processor() or platform.machine() or "unknown"
    name = next((line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")),
                platform.machine() or "unknown")
    flags = cpu_flags(cpuinfo)
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


#: the environment variables that cap the instruction set of torch's, MKL's and oneDNN's kernels
ISA_CAPS = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "ONEDNN_MAX_CPU_ISA")


def kernels() -> str:
    """The vector kernels torch dispatches to here, with any cap the environment set on them."""
    import os

    import torch

    caps = [f"{name}={os.environ[name]}" for name in ISA_CAPS if os.environ.get(name)]
    return f"torch {torch.backends.cpu.get_cpu_capability()}" + (f" ({', '.join(caps)})" if caps else "")


def describe() -> dict[str, Any]:
    """The machine block every bench report carries: the CPU, the kernels, and the reference workload's time."""
    return {"cpu": cpu_model(), "kernels": kernels(),
            "reference_workload": f"{PRODUCTS} float32 {SIZE}x{SIZE} matmuls, 1 thread",
            "reference_cpu_seconds": reference_seconds()}
