"""Every count a user gives is bounded (mlmh.bounds): every integer flag of every command, every integer parameter
of every registered component and the preset keys refuse an absurd value in one line naming the bound and why,
where they are parsed, before any thread or process starts. A stop is an interrupt only when a signal arrived."""

from __future__ import annotations

import os
import signal

import click
import pytest

from mlmh import bounds
from mlmh.cli import main
from mlmh.config import options
from mlmh.errors import SpecError
from mlmh.registry import get_registry

ABSURD = (10**23, 10**16)  # above every bound (the largest: mlmh.bounds.TOKENS, 10**15)
KINDS = ("model", "sampler", "masking", "metric", "task", "dataset", "tracker")


def _numeric_flags():
    from test_numeric_flags import _numeric_options

    for path, param in _numeric_options():
        if isinstance(param.type, options.Number):
            yield pytest.param(path, param, id=f"{' '.join(path)} {options.flag_of(param)}")


@pytest.mark.parametrize("path, param", list(_numeric_flags()))
def test_every_integer_flag_refuses_an_absurd_count_naming_its_bound(path, param, capsys):
    rule: options.Number = param.type
    if rule.kind is not int:
        assert rule.max is not None or options.flag_of(param) not in ("--epochs",)
        return
    assert rule.max is not None and rule.why, f"{options.flag_of(param)} has no bound"
    flag = options.flag_of(param)
    for value in ABSURD:
        with pytest.raises(SystemExit) as info:
            main([*path, f"{flag}={value}"])
        err = capsys.readouterr().err
        assert info.value.code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"Error: {flag} {value}: expected ") and f"<= {int(rule.max)} ({rule.why})" in err, err


def _integer_parameters():
    registry = get_registry()
    for kind in KINDS:
        for component in registry.all(kind):
            for declared in component.parameters:
                if declared.type is int:
                    yield pytest.param(kind, component.name, declared.name, id=f"{component.name}:{declared.name}")


@pytest.mark.parametrize("kind, name, parameter", list(_integer_parameters()))
def test_every_integer_parameter_refuses_an_absurd_count_naming_its_bound(kind, name, parameter):
    for value in ABSURD:
        with pytest.raises(SpecError, match=rf"parameter '{parameter}' must be <= \d+( \(.+\))?; got {value}$"):
            get_registry().build(kind, f"{name}:{parameter}={value}")


@pytest.mark.parametrize("spec, bound", [
    ("hf-mlm:path=x,threads={}", bounds.THREADS),
    ("trained-clm:max_steps={}", bounds.TRAINING_STEPS),
    ("trained-mlm:batch_size={}", bounds.BATCH),
    ("trained-mlm:seq_len={}", bounds.SEQUENCE),
])
def test_machine_and_model_counts_are_bounded_by_what_sets_them(spec, bound):
    get_registry().build("model", spec.format(bound.limit))  # at the bound: taken
    with pytest.raises(SpecError, match=f"must be <= {bound.limit} \\({bound.why}\\)"):
        get_registry().build("model", spec.format(bound.limit + 1))
    assert bounds.THREADS.limit == bounds.machine_cores()


@pytest.mark.parametrize("args, message", [
    (["generate", "--model", "trained-mlm", "--sampler", "mask-predict:steps=100000", "--text", "a b c"],
     "parameter 'steps' must be <= 512 (refinement steps, each a forward pass per batch); got 100000"),
    (["train", "--dataset", "pan", "--objective", "mlm", "--max-steps", str(10**23), "--out", "never"],
     f"expected an integer >= 1 and <= {bounds.TRAINING_STEPS.limit} (optimizer steps of one training)"),
    (["train", "--dataset", "pan", "--objective", "mlm", "--threads", str(10**7), "--out", "never"],
     f"<= {bounds.CORES} (this machine's CPU cores)"),
    (["eval", "--preset", "quick", "--workers", str(10**6)], "each worker is a process"),
    (["eval", "--preset", "quick", "--limit", "1e23"], "--limit 1e23: must be <= 1000000000"),
    (["eval", "--preset", "quick", "--seed", str(10**23)], "<= 4294967295 (the largest 32-bit seed)"),
    (["bench", "--batch", f"1,{10**9}", "--no-startup"], "each must be <= 4096 (items per forward pass)"),
    (["bench", "--lengths", str(10**8), "--no-startup"], "each must be <= 8192 (tokens a model reads at once)"),
])
def test_commands_refuse_absurd_counts_before_any_work(args, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.count("\n") == 1 and message in err, err
    assert list(tmp_path.iterdir()) == []  # nothing written, nothing started


def test_preset_keys_are_bounded(tmp_path):
    from mlmh.config.presets import from_table

    with pytest.raises(SpecError, match=r"key 'batch_size' must be <= 4096 \(items per forward pass\)"):
        from_table({"dataset": "pan", "models": ["trained-mlm"], "maskings": ["random"], "samplers": ["one-shot"], "batch_size": 10**9}, name="p", source="p.toml")
    with pytest.raises(SpecError, match=r"a seed of key 'seeds' must be <= 4294967295"):
        from_table({"dataset": "pan", "models": ["trained-mlm"], "maskings": ["random"], "samplers": ["one-shot"], "seeds": [10**23]}, name="p", source="p.toml")


def test_the_api_bounds_counts_by_the_same_rules():
    import mlmh

    with pytest.raises(SpecError, match="seed 100000000000000000000000: expected an integer >= 0 and <= 4294967295"):
        mlmh.generate("The cat sat.", model="trained-mlm", seed=10**23)
    with pytest.raises(SpecError, match="batch_size 1000000000: expected an integer >= 1 and <= 4096"):
        mlmh.generate_from_dataset("pan", model="trained-mlm", batch_size=10**9)


# -- a stop is an interrupt only when a signal arrived ---------------------------------------------------------
class Panic(BaseException):
    """What a Rust panic inside a library (pyo3's PanicException) is: not an Exception."""


@pytest.mark.parametrize("raised", [KeyboardInterrupt("thread pool"), Panic("failed to spawn thread")])
def test_a_crash_is_not_reported_as_an_interrupt(raised, capsys, monkeypatch):

    def crash(*args, **kwargs):
        raise raised

    monkeypatch.setattr(get_registry(), "all", crash)
    with pytest.raises(SystemExit) as info:
        main(["ls", "samplers"])
    err = capsys.readouterr().err
    err = err.lstrip("\n")  # click writes a blank line when a KeyboardInterrupt passes through it
    assert info.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"Error: the process stopped on {type(raised).__name__}") and "not an interrupt" in err
    assert "Interrupted" not in err


def test_a_real_ctrl_c_is_an_interrupt(capsys, monkeypatch):
    def ctrl_c(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGINT)
        import time

        time.sleep(5)
        raise AssertionError("the SIGINT never arrived")

    monkeypatch.setattr(get_registry(), "all", ctrl_c)
    with pytest.raises(SystemExit) as info:
        main(["ls", "samplers"])
    assert info.value.code == 130 and capsys.readouterr().err.strip() == "Aborted."


def test_a_crash_inside_a_run_keeps_the_resume_hint_but_is_not_called_an_interrupt(tmp_path, capsys, monkeypatch):
    import json

    import runner_fakes
    from test_rundir import SMALL

    runner_fakes.install()
    preset = tmp_path / "fake.toml"
    preset.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in {**runner_fakes.FAKE_PRESET, **SMALL}.items()),
                      encoding="utf-8")

    def crashed(self, context):
        raise KeyboardInterrupt  # as a library thread that dies interrupts the main one: no signal was sent

    monkeypatch.setattr(runner_fakes.FakeMLM, "load", crashed)
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", str(preset), "--output-path", str(tmp_path / "out"), "--no-cache"])
    err = capsys.readouterr().err
    assert info.value.code == 1 and "the process stopped on KeyboardInterrupt" in err and "not an interrupt" in err
    assert "interrupted;" not in err and f"mlmh eval --resume --output-path {tmp_path / 'out'} --no-cache" in err
