"""scripts/playground_first_step.py, which measures the TUI's cold start (docs/PERFORMANCE.md): each run a new process
on a new, empty model cache, the medians of what each run saw, and the CPU-seconds of a process tree read from /proc.
The cold starts themselves take minutes; here each run's process is replaced by the line such a run prints."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script():
    spec = importlib.util.spec_from_file_location("playground_first_step", ROOT / "scripts" / "playground_first_step.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_run_is_a_new_process_on_a_new_cache_and_the_medians_are_printed(monkeypatch, capsys):
    script = _script()
    seen = iter([12.0, 30.0, 20.0])
    caches: list[str] = []

    def run(command, env, **kwargs):
        assert command[:2] == [sys.executable, script.__file__] and "--child" in command
        assert command[command.index("--until") + 1] == "first"
        caches.append(env["MLMH_CACHE_DIR"])
        assert Path(env["MLMH_CACHE_DIR"]).is_dir() and not any(Path(env["MLMH_CACHE_DIR"]).iterdir())
        first = next(seen)
        line = {"first refinement step": first, "pane 1 first step": first, "cpu-s at the first step": 2 * first}
        return subprocess.CompletedProcess(command, 0, stdout=json.dumps(line) + "\n")

    monkeypatch.setattr(script.subprocess, "run", run)
    script.main(["--runs", "3", "--until", "first"])
    out = capsys.readouterr().out
    assert len(set(caches)) == 3 and not any(Path(cache).exists() for cache in caches)  # each removed after its run
    assert "median first refinement step: 20.0 s over 3 runs ([12.0, 30.0, 20.0])" in out
    assert "median cpu-s at the first step: 40.0 s over 3 runs" in out
    assert "load average (1 min) before and after each run: [" in out and "cores usable" in out


def test_the_cpu_seconds_of_a_process_tree_count_its_children_alive_and_ended():
    script = _script()
    before = script.tree_cpu_seconds()
    child = subprocess.Popen([sys.executable, "-c", "import time\nend = time.process_time() + 0.5\n"
                              "while time.process_time() < end: pass\ntime.sleep(30)"])
    try:
        deadline = time.monotonic() + 60
        while script.tree_cpu_seconds() < before + 0.4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert script.tree_cpu_seconds() >= before + 0.4  # the child's half second of CPU, while it lives
    finally:
        child.kill()
        child.wait()
    assert script.tree_cpu_seconds() >= before + 0.4  # ended and waited for: in this process's count of its children
