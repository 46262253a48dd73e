"""Where models run: ``auto`` picks CUDA only where torch sees it, a device the machine lacks is one clear
line naming the parameter, and bf16 autocast is chosen where the hardware multiplies bf16 (a CUDA GPU that supports it,
a CPU with AVX512-BF16 or AMX). Runs on the CPU: CUDA is simulated by patching torch's own availability checks, the
CPU's bf16 units by a cpuinfo file and the environment's oneDNN cap."""

from __future__ import annotations

import pytest

from mlmh.errors import SpecError
from mlmh.machine.devices import resolve_device, resolve_precision


@pytest.fixture
def no_cuda(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


@pytest.fixture
def no_cpu_bf16(monkeypatch):
    from mlmh.machine import devices

    monkeypatch.setattr(devices, "cpu_bf16", lambda: False)


@pytest.fixture
def cpu_bf16(monkeypatch):
    from mlmh.machine import devices

    monkeypatch.setattr(devices, "cpu_bf16", lambda: True)


@pytest.fixture
def two_gpus(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)


def test_auto_is_the_cpu_without_cuda_and_cuda_with_it(no_cuda, no_cpu_bf16):
    assert resolve_device("auto") == "cpu" and resolve_device("") == "cpu" and resolve_device("CPU") == "cpu"
    assert resolve_precision("auto", "cpu") == "float32"


def test_auto_precision_on_the_cpu_is_bf16_only_with_bf16_units(monkeypatch):
    from mlmh.machine import devices

    for units in (True, False):
        monkeypatch.setattr(devices, "cpu_bf16", lambda: units)
        assert resolve_precision("auto", "cpu") == ("bf16" if units else "float32")
        # asked for, either is kept: float32 where bf16 would be fast, bf16 (emulated) where it would not
        assert resolve_precision("float32", "cpu") == "float32" and resolve_precision("bf16", "cpu") == "bf16"


@pytest.mark.parametrize("flags, environ, expected", [
    ("fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile", {}, True),
    ("fpu avx2 avx512f avx512_bf16", {}, True),
    ("fpu avx2 avx512f amx_bf16", {"ONEDNN_MAX_CPU_ISA": "avx512_core_amx"}, True),
    ("fpu avx2 avx512f amx_bf16", {"ONEDNN_MAX_CPU_ISA": "ALL"}, True),
    ("fpu avx2 avx512f avx512_bf16 amx_bf16", {"ONEDNN_MAX_CPU_ISA": "AVX2"}, False),  # held to an AVX2 machine's
    ("fpu avx2 avx512f avx512_bf16", {"DNNL_MAX_CPU_ISA": "AVX512_CORE"}, False),
    ("fpu avx2 avx512f avx512_vnni", {}, False),
    ("fpu avx2", {}, False),
])
def test_the_cpu_trains_in_bf16_where_its_kernels_reach_bf16_units(tmp_path, flags, environ, expected):
    from mlmh.machine.devices import cpu_bf16

    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nmodel name\t: Test CPU\nflags\t\t: {flags}\n")
    assert cpu_bf16(info, environ) is expected
    assert not cpu_bf16(tmp_path / "absent", {})  # no cpuinfo (not Linux): float32


def test_a_device_the_machine_lacks_is_one_clear_line(no_cuda):
    with pytest.raises(SpecError, match=r"^trained-mlm:device=cuda:0: CUDA is not available on this machine .*use device=auto or cpu$"):
        resolve_device("cuda:0", "trained-mlm:device")
    with pytest.raises(SpecError, match="device=mps: not a device"):
        resolve_device("mps")
    with pytest.raises(SpecError, match="precision=fp16: unknown precision"):
        resolve_precision("fp16", "cpu")


def test_cuda_is_chosen_and_checked_where_there_is_one(two_gpus):
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"
    assert resolve_precision("auto", "cuda") == "bf16" and resolve_precision("float32", "cuda:1") == "float32"
    with pytest.raises(SpecError, match="has 2 CUDA device"):
        resolve_device("cuda:2")


def test_trained_models_resolve_their_device_parameter(no_cuda, no_cpu_bf16):
    from mlmh.registry import get_registry

    model = get_registry().build("model", "trained-mlm:device=cuda")
    with pytest.raises(SpecError, match="^trained-mlm:device=cuda: CUDA is not available"):
        model._config()
    config = get_registry().build("model", "trained-clm").configured()._config()
    assert (config.device, config.precision) == ("cpu", "float32")


def test_a_config_on_cuda_trains_in_bf16_autocast_and_moves_batches(two_gpus):
    import torch

    from mlmh.training.config import make_config
    from mlmh.training.data import on_device
    from mlmh.training.loop import autocast

    config = make_config("mlm", device="auto")
    assert (config.device, config.precision) == ("cuda", "bf16")
    context = autocast(config)
    assert isinstance(context, torch.autocast) and context.fast_dtype == torch.bfloat16
    cpu = make_config("mlm", device="cpu", precision="float32")
    batch = {"input_ids": torch.ones(2, 3, dtype=torch.long)}
    assert on_device(batch, torch.device("cpu")) is batch and not isinstance(autocast(cpu), torch.autocast)


def test_a_config_on_a_cpu_with_bf16_units_trains_in_cpu_autocast_and_keys_its_cache_by_it(no_cuda, cpu_bf16):
    import torch

    from mlmh.storage.modelcache import cache_key
    from mlmh.training.config import make_config
    from mlmh.training.loop import autocast

    config = make_config("mlm", device="auto")
    assert (config.device, config.precision) == ("cpu", "bf16")
    context = autocast(config)
    assert isinstance(context, torch.autocast) and context.device == "cpu" and context.fast_dtype == torch.bfloat16
    exact = make_config("mlm", device="auto", precision="float32")
    assert not isinstance(autocast(exact), torch.autocast)
    # the precision is part of the recipe's identity: the cache never answers one with the other's weights
    assert cache_key({"config": config.to_dict()}) != cache_key({"config": exact.to_dict()})


def test_narrow_models_run_on_one_thread_wider_on_every_core():
    from mlmh.machine.devices import cores, threads_for

    assert threads_for(128) == 1 and threads_for(64) == 1
    assert threads_for(384) == cores() and threads_for(None) == cores()


def test_inference_threads_for_a_narrow_model_then_restored_and_omp_num_threads_wins(monkeypatch):
    import torch
    from types import SimpleNamespace

    from mlmh.machine.devices import inference_threads

    narrow = SimpleNamespace(config=SimpleNamespace(hidden_size=128))
    before = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
        with inference_threads(narrow):
            assert torch.get_num_threads() == 1
        assert torch.get_num_threads() == 2
        with inference_threads(SimpleNamespace()):  # no config: left alone
            assert torch.get_num_threads() == 2
        monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the user chose
        with inference_threads(narrow):
            assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
