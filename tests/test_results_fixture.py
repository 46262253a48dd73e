"""results.json of one fixed configuration against a stored run: a refactor of how results are built and
written must not change what a run writes (timings, versions and machine paths aside).

To record the fixture again after a deliberate change of results.json:
``MLMH_RECORD_FIXTURE=1 pytest tests/test_results_fixture.py`` (then say why in the commit)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "results_fixture_run.json"
PRESET = '''
description = "results fixture: tiny models, a few steps, every kind of result block"
dataset = "pan"
models = ["trained-mlm:size=tiny,max_steps=4", "trained-clm:size=tiny,max_steps=4", "trained-seq2seq:size=tiny,max_steps=4"]
maskings = ["random:ratio=0.3"]
samplers = ["one-shot", "mask-predict:steps=2", "clm-infill", "seq2seq-infill"]
metrics = ["bleu", "rouge", "stutter", "novelty"]
tasks = ["authorship-verification"]
limit = 4
batch_size = 4
'''
#: Fields that describe the machine or the moment, not the configuration's results.
MACHINE_KEYS = {"versions", "created", "started", "finished", "output_path", "host", "init_path", "path",
                "cache_path", "model_path", "command", "train_seconds", "train_cpu_seconds", "library_version"}


def normalised(value, tmp: str):
    """``value`` without timings and machine facts, with the run's temporary directory written as ``<tmp>``."""
    from mlmh.run.results import strip_timings

    def walk(v):
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items() if k not in MACHINE_KEYS}
        if isinstance(v, list):
            return [walk(x) for x in v]
        if isinstance(v, str):
            return v.replace(tmp, "<tmp>")
        return v
    return walk(strip_timings(value))


def differences(got, want, where="results"):
    """Paths where ``got`` differs from ``want``; numbers compare to a relative 1e-6 (another CPU's last bits)."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{where}.{k}: missing" for k in want if k not in got]
        out += [f"{where}.{k}: not in the fixture" for k in got if k not in want]
        for k in want.keys() & got.keys():
            out += differences(got[k], want[k], f"{where}.{k}")
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{where}: {len(got)} items, fixture has {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in differences(g, w, f"{where}[{i}]")]
    if isinstance(want, (int, float)) and isinstance(got, (int, float)) and not isinstance(want, bool):
        return [] if math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-9) else [f"{where}: {got!r} != {want!r}"]
    return [] if got == want else [f"{where}: {got!r} != {want!r}"]


@pytest.mark.slow
def test_results_json_equals_the_stored_fixture_run(tmp_path, monkeypatch):
    import mlmh
    from mlmh.machine import devices

    # trained in float32 on every machine: precision=auto would train in bf16 where the CPU has bf16 units, and the
    # stored run would then hold for one kind of CPU only (bf16 against float32 is tests/test_training.py's)
    monkeypatch.setattr(devices, "cpu_bf16", lambda: False)

    preset = tmp_path / "fixture.toml"
    preset.write_text(PRESET, encoding="utf-8")
    out = tmp_path / "run"
    mlmh.evaluate(str(preset), output_path=out)
    got = normalised(json.loads((out / "results.json").read_text(encoding="utf-8")), str(tmp_path))
    if os.environ.get("MLMH_RECORD_FIXTURE"):
        FIXTURE.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    want = json.loads(FIXTURE.read_text(encoding="utf-8"))
    found = differences(got, want)
    assert not found, "results.json differs from tests/fixtures/results_fixture_run.json:\n" + "\n".join(found[:40])
