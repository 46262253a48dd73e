"""``mlmh bench --preset``: CPU seconds per stage of a cold and a warm run, judged against the preset's goals."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mlmh.bench.preset import PRESET_GOALS, StageClock, goal_rows
from mlmh.cli import cli
from mlmh.events import StageFinished, StageStarted

#: a preset of the same shape as pan at a fraction of its cost: models trained a few steps, two samplers
PRESET = '''
description = "bench test: tiny models trained for a few steps"
dataset = "pan"
models = ["trained-mlm:size=tiny,max_steps=2", "trained-clm:size=tiny,max_steps=2"]
maskings = ["random:ratio=0.3"]
samplers = ["one-shot", "clm-infill"]
metrics = ["bleu"]
tasks = []
limit = 2
'''


def phase(cpu: float, **stages: float) -> dict:
    return {"cpu_seconds": cpu, "wall_seconds": cpu / 2, "load_before": [1.0, 1.0, 1.0], "load_after": [1.0] * 3,
            "outside_stages_cpu": 1.0, "stages": {name: {"cpu": s, "wall": s} for name, s in stages.items()}}


def test_goal_rows_say_which_phase_falls_short():
    report = {"preset": "pan", "goals": PRESET_GOALS["pan"],
              "phases": {"cold": phase(590.0, models=200.0, generate=300.0, metrics=80.0),
                         "warm": phase(20.0, generate=12.0, metrics=3.0)}}
    cold, warm = goal_rows(report)
    assert (cold["goal"], cold["passed"]) == ("<= 600", True)
    assert (warm["goal"], warm["passed"]) == ("<= 15", False)
    assert warm["detail"].endswith("generate 12.0, metrics 3.0")  # the costliest stages first
    other = goal_rows({"preset": "quick", "goals": {}, "phases": {"cold": phase(50.0, generate=30.0)}})
    assert other[0]["goal"] == "report" and other[0]["passed"] is None


def test_stage_clock_keeps_cpu_and_wall_per_stage():
    clock = StageClock()
    clock(StageStarted(stage="generate", total=3))
    sum(i * i for i in range(200_000))  # some CPU inside the stage
    clock(StageFinished(stage="generate", seconds=0.1))
    clock(StageFinished(stage="metrics", seconds=0.1))  # no start event: not measured
    assert set(clock.stages) == {"generate"}
    assert clock.stages["generate"]["cpu"] >= 0 and clock.stages["generate"]["wall"] > 0


@pytest.mark.slow
def test_bench_preset_measures_a_cold_then_a_warm_run(tmp_path):
    preset = tmp_path / "tiny.toml"
    preset.write_text(PRESET, encoding="utf-8")
    out = tmp_path / "bench.json"
    done = CliRunner().invoke(cli, ["bench", "--preset", str(preset), "--limit", "2", "--json", "--out", str(out)])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text(encoding="utf-8"))
    cold, warm = report["phases"]["cold"], report["phases"]["warm"]
    for measured in (cold, warm):
        assert {"data", "models", "generate", "metrics", "report"} <= set(measured["stages"])
        assert measured["cpu_seconds"] >= sum(s["cpu"] for s in measured["stages"].values()) * 0.9
    assert warm["stages"]["models"]["cpu"] < cold["stages"]["models"]["cpu"]  # trained once, then read back
    assert [row["goal"] for row in report["goal_rows"]] == ["report", "report"]  # goals are pan's
    assert report["machine"]["cpu"] and report["machine"]["reference_cpu_seconds"] > 0
    trained = cold["training"]
    assert {rate["objective"] for rate in trained.values()} == {"mlm", "clm"}
    assert all(rate["tokens_per_cpu_second"] == pytest.approx(rate["tokens"] / rate["cpu_seconds"], rel=0.01)
               for rate in trained.values())
    table = CliRunner().invoke(cli, ["bench", "--preset", str(preset), "--limit", "2", "--phases", "cold"])
    assert table.exit_code == 0 and "tokens per CPU-second" in table.output and "reference workload" in table.output


def test_the_machine_names_its_cpu_and_times_the_reference_workload(tmp_path):
    from mlmh.bench.machine import cpu_model, reference_seconds

    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse avx avx2 fma\n", encoding="utf-8")
    assert cpu_model(info) == "AMD EPYC 7B13 (AVX2)"
    assert cpu_model(tmp_path / "absent")  # elsewhere: the platform's word
    assert 0 < reference_seconds() < 60


def test_the_machine_names_the_kernels_and_the_caps_on_their_instruction_set():
    import os
    import subprocess
    import sys

    capped = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    code = "from mlmh.bench.machine import kernels; print(kernels())"
    line = subprocess.run([sys.executable, "-c", code], env=capped, capture_output=True, text=True, check=True).stdout
    assert line.strip() == "torch DEFAULT (ATEN_CPU_CAPABILITY=default)"  # an AVX2 machine measured on any CPU
