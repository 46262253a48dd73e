"""Where models run: the one rule that turns a ``device`` parameter into a torch device.

``auto`` (the default of trained models and ``mlmh train``) is CUDA when torch sees a GPU, else the CPU;
on the CPU, narrow models run on one torch thread (:func:`threads_for`).
A device that this machine does not have is refused in one line naming the parameter, instead of the
assertion torch raises deep inside its first allocation. ``precision="auto"`` trains in bf16 autocast
where the GPU supports it, and on a CPU that multiplies bf16 matrices in hardware (AVX512-BF16 or AMX, and oneDNN
not held below them: :func:`cpu_bf16`); weights and optimiser state stay float32. Elsewhere float32: a CPU without
bf16 units emulates it, slower than float32.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from mlmh.errors import SpecError
from mlmh.params import Param

DEVICE_HELP = "where the model runs: auto (CUDA when available, else the CPU), cpu, cuda or cuda:N"
PRECISIONS = ("auto", "float32", "bf16")


def device_name_problem(spec: str) -> str | None:
    """What is wrong with ``spec`` as a device name mlmh runs on (``auto``, ``cpu``, ``cuda``, ``cuda:N``), or None.
    Checked when a spec is parsed (:data:`DEVICE_PARAM`), before any run, for every model kind; whether this machine
    has the device is :func:`resolve_device`'s question, where the model loads."""
    value = (spec or "auto").strip().lower()
    kind, _, index = value.partition(":")
    if value not in ("auto", "cpu") and (kind != "cuda" or (index and not index.isdigit())):
        return "must be a device this build of mlmh runs on: auto, cpu, cuda or cuda:N"
    return None


#: the ``device`` parameter of every model that runs on torch (trained-*, hf-*): one name rule for all
DEVICE_PARAM = Param("device", str, "auto", DEVICE_HELP, check=device_name_problem)


def resolve_device(spec: str, where: str = "device") -> str:
    """The torch device string ``spec`` names on this machine: ``cpu``, ``cuda`` or ``cuda:N``.

    ``where`` names the parameter in the error (e.g. ``trained-mlm:device``).
    """
    problem = device_name_problem(spec)
    if problem:
        raise SpecError(f"{where}={spec}: not a device this build of mlmh runs on (valid: auto, cpu, cuda, cuda:N)")
    value = (spec or "auto").strip().lower()
    if value == "cpu":
        return "cpu"
    import torch

    if value == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    index = value.partition(":")[2]
    if not torch.cuda.is_available():
        build = "a CPU-only build of torch" if torch.version.cuda is None else "no GPU visible"
        raise SpecError(f"{where}={spec}: CUDA is not available on this machine ({build}); use {where.split(':')[-1]}=auto or cpu")
    if index and int(index) >= torch.cuda.device_count():
        raise SpecError(f"{where}={spec}: this machine has {torch.cuda.device_count()} CUDA device(s) (cuda:0.."
                        f"cuda:{torch.cuda.device_count() - 1})")
    return value


def resolve_precision(precision: str, device: str, where: str = "precision") -> str:
    """``float32`` or ``bf16`` for training on ``device``: ``auto`` is bf16 on a CUDA device that supports it and on
    a CPU with bf16 units (:func:`cpu_bf16`), float32 elsewhere; ``bf16`` asked for on a CPU without them is
    emulated (slower than float32, the same arithmetic)."""
    if precision not in PRECISIONS:
        raise SpecError(f"{where}={precision}: unknown precision (valid: {', '.join(PRECISIONS)})")
    if precision != "auto":
        return precision
    if not device.startswith("cuda"):
        return "bf16" if cpu_bf16() else "float32"
    import torch

    return "bf16" if torch.cuda.is_bf16_supported() else "float32"


def describe(device: str) -> str:
    """A line for cards and reports: the device and, on CUDA, the GPU's name."""
    if not device.startswith("cuda"):
        return "cpu"
    import torch

    index = int(device.partition(":")[2] or 0)
    return f"{device} ({torch.cuda.get_device_name(index)})"


#: models of at most this hidden size run on one torch thread on the CPU (see :func:`threads_for`)
NARROW_HIDDEN = 128


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def threads_for(hidden: int | None) -> int:
    """Torch threads for the passes of a model of hidden size ``hidden`` on the CPU: one up to
    NARROW_HIDDEN, every core above. A tiny model's matrices are too small to split: on 2 cores a tiny
    training step took 0.22 s on one thread and 0.9-1.5 s on two, and on a busy machine (load 10-18) the
    Gibbs passes of 32 PAN documents took 6.7 CPU-s on one thread and 92 on two (the second thread spins
    while it waits), with the same tokens."""
    return 1 if hidden is not None and hidden <= NARROW_HIDDEN else cores()


@contextmanager
def inference_threads(model: Any) -> Iterator[None]:
    """Run ``model``'s (a transformers model's) passes on :func:`threads_for` its width, and restore the
    count afterwards; where ``OMP_NUM_THREADS`` is set, the user chose and nothing changes."""
    config = getattr(model, "config", None)
    hidden = getattr(config, "hidden_size", None)
    if "OMP_NUM_THREADS" in os.environ or not isinstance(hidden, int):
        yield
        return
    with torch_threads(threads_for(hidden)):
        yield


@contextmanager
def torch_threads(wanted: int) -> Iterator[None]:
    """Run the block on ``wanted`` torch threads, and restore the count afterwards."""
    import torch

    before = torch.get_num_threads()
    if wanted == before:
        yield
        return
    torch.set_num_threads(wanted)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> set[str]:
    """The CPU's feature flags as Linux lists them (``avx512f``, ``amx_bf16``...); empty elsewhere."""
    try:
        text = cpuinfo.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    return set(next((line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")), []))


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware (AVX512-BF16 or AMX-BF16). Without it torch
    emulates bf16 and is slower than float32: a 512 x 640 by 640 x 262,144 product took 0.36 CPU-s in bf16 and
    1.37 in float32 with AMX, 5.2 and 1.4 with AVX-512 alone, 10.8 and 1.3 with AVX2 (oneDNN held to each)."""
    return bool({"avx512_bf16", "amx_bf16"} & cpu_flags(cpuinfo))


#: values of oneDNN's ``ONEDNN_MAX_CPU_ISA`` cap that still reach its bf16 kernels (AVX512-BF16 and later, AMX)
BF16_ISAS = ("ALL", "AVX512_CORE_BF16", "AVX512_CORE_FP16", "AVX512_CORE_AMX", "AVX512_CORE_AMX_FP16",
             "AVX10_1_512", "AVX10_1_512_AMX", "AVX10_1_512_AMX_FP16", "AVX10_2_512", "AVX10_2_512_AMX_2")


def cpu_bf16(cpuinfo: Path = Path("/proc/cpuinfo"), environ: Any = None) -> bool:
    """Whether bf16 matrix products on this CPU (training's autocast, the judge's weights) run in bf16 hardware:
    :func:`native_bf16`, and oneDNN (which runs them) not held by ``ONEDNN_MAX_CPU_ISA`` below its bf16 kernels
    (the AVX2 cap that docs/PERFORMANCE.md measures an AVX2 machine's kernels with: there bf16 would be emulated,
    slower than float32)."""
    env = os.environ if environ is None else environ
    cap = (env.get("ONEDNN_MAX_CPU_ISA") or env.get("DNNL_MAX_CPU_ISA") or "").strip().upper()
    if cap and cap not in BF16_ISAS:
        return False
    return native_bf16(cpuinfo)
