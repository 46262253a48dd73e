"""Kill -9 a real `mlmh eval` subprocess mid-generation, resume it, and get the uninterrupted results."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from mlmh.run.results import strip_timings
from processes import children, wait_gone

DOCS = 10
CONDITIONS = 4  # mlm x 2 maskings + clm x 2 maskings


def preset(tmp_path, tiny_mlm, tiny_clm):
    path = tmp_path / "resume.toml"
    path.write_text(f'''
dataset = "pan"
models = ["hf-mlm:path={tiny_mlm}", "hf-clm:path={tiny_clm}"]
maskings = ["random:ratio=0.5", "stopwords"]
samplers = ["mask-predict:steps=10", "clm-infill"]
metrics = ["bleu", "rouge"]
tasks = ["authorship-verification"]
limit = {DOCS}
batch_size = 2
''', encoding="utf-8")
    return str(path)


def eval_args(preset_path, out, *extra):
    return [sys.executable, "-m", "mlmh", "eval", "--preset", preset_path, "--output-path", str(out), "--no-cache", *extra]


def stored(db):
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1) as conn:
            return conn.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    except sqlite3.Error:
        return 0


def comparable(path):
    """results.json less what says when and how it was made: timings, the run id, and the note of a killed writer's
    lock taken over on resume (the one trace an interruption leaves)."""
    results = json.loads(path.read_text(encoding="utf-8"))
    notes = [n for n in results.get("notes", []) if "took over the lock" not in n]
    return {**strip_timings(results), "run_id": None, "notes": notes}


NO_RAY = pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs the ray extra: pip install 'mlmh[ray]'")


@pytest.mark.slow
@pytest.mark.parametrize("executor", [[], ["--workers", "2"], pytest.param(["--backend", "ray", "--workers", "2"], marks=NO_RAY)],
                         ids=["in-process", "two-workers", "ray"])
def test_kill_9_mid_generate_then_resume_gives_identical_results(tmp_path, tiny_mlm, tiny_clm, executor):
    path = preset(tmp_path, tiny_mlm, tiny_clm)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"}  # tiny models: one thread is fastest
    reference = tmp_path / "reference"
    subprocess.run(eval_args(path, reference), env=env, check=True, capture_output=True, timeout=600)

    cut = tmp_path / "cut"
    proc = subprocess.Popen(eval_args(path, cut, *executor), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    db = cut / "samples.sqlite"
    reference_results = json.loads((reference / "results.json").read_text(encoding="utf-8"))
    total = CONDITIONS * sum(role["documents"] for role in reference_results["documents"].values())
    deadline = time.time() + 300
    try:
        while time.time() < deadline and proc.poll() is None and stored(db) < 6:
            time.sleep(0.01)
        started = children(proc.pid)  # local workers (Ray's processes are Ray's to reap)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run ended before it could be killed"
    if executor == ["--workers", "2"] and os.path.isdir("/proc"):
        assert started, "the driver had no worker processes when it was killed"
        assert not wait_gone(started), "worker processes outlived their killed driver"
    kept = stored(db)
    assert 0 < kept < total, f"kill did not land mid-generation ({kept} of {total} samples stored)"
    assert not (cut / "results.json").exists()

    resumed = subprocess.run(eval_args(path, cut, "--resume", *executor), env=env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert stored(db) == total
    assert comparable(cut / "results.json") == comparable(reference / "results.json")


def test_resume_without_an_interrupted_run_is_a_usage_error(tmp_path, tiny_mlm, tiny_clm):
    path = preset(tmp_path, tiny_mlm, tiny_clm)
    done = subprocess.run(eval_args(path, tmp_path / "none", "--resume"), capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "no interrupted run" in done.stderr


@pytest.mark.slow
def test_sigterm_exits_143_with_a_hint_that_resumes_the_run(tmp_path, tiny_mlm, tiny_clm):
    """The printed hint is run exactly as printed (no --preset, no overrides) and finishes the run."""
    import shlex

    path = preset(tmp_path, tiny_mlm, tiny_clm)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "300"}
    cut = tmp_path / "cut"
    proc = subprocess.Popen(eval_args(path, cut, "--limit", "6"), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 300
    while time.time() < deadline and proc.poll() is None and stored(cut / "samples.sqlite") < 2:
        time.sleep(0.01)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err[-2000:]
    hint = err[err.index("mlmh eval --resume"):].split("\n")[0].strip()
    assert hint == f"mlmh eval --resume --output-path {cut} --no-cache"
    resumed = subprocess.run([sys.executable, "-m", *shlex.split(hint)], env=env, capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    results = json.loads((cut / "results.json").read_text(encoding="utf-8"))
    assert results["config"]["limit"] == 6 and results["documents"]["seen"]["documents"] == 6
