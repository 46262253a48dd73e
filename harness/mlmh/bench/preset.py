"""``mlmh bench --preset NAME``: what a whole run of a preset costs, cold (a fresh cache: models trained,
every sample generated and scored) and then warm (the same cache: everything read back), in CPU seconds
(user + system, the process and the processes it waited for) per stage.

CPU time, not wall time, because wall time on a shared machine says more about the neighbours than about
the run. Each phase is a fresh ``python -m mlmh.bench.preset`` process running the preset through
:mod:`mlmh.api` as ``mlmh eval`` does, so interpreter start and imports count as they do for a user.
The process records ``os.times()`` at each stage's start and end event; the parent measures the whole
process (``resource.getrusage(RUSAGE_CHILDREN)``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Sequence

#: CPU-second goals of a preset's phases (issue 39: the demo in minutes, a warm run in seconds); other
#: presets are measured and reported without a goal
PRESET_GOALS: dict[str, dict[str, float]] = {"pan": {"cold": 600.0, "warm": 15.0},
                                             "paper": {"cold": 3600.0, "warm": 30.0}}
PHASES = ("cold", "warm")


def cpu_seconds(times: os.times_result) -> float:
    """User + system seconds of a process and of its children it waited for."""
    return times.user + times.system + times.children_user + times.children_system


def run_phase(preset: str, cache: Path, out: Path, *, limit: str | None = None, timeout: float | None = None) -> dict[str, Any]:
    """One run of ``preset`` in a fresh process on the model and sample cache ``cache``: its CPU and wall
    seconds in all and per stage, and the machine's load average before and after."""
    stages = out.with_suffix(".stages.json")
    command = [sys.executable, "-m", "mlmh.bench.preset", "--preset", preset, "--output-path", str(out),
               "--stages", str(stages)] + (["--limit", limit] if limit else [])
    env = {**os.environ, "MLMH_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    load_before = os.getloadavg()
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        from mlmh.errors import MlmhError

        tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise MlmhError(f"bench --preset {preset}: the run exited with {done.returncode}: {tail[0]}")
    measured = json.loads(stages.read_text(encoding="utf-8"))
    return {"cpu_seconds": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 2),
            "wall_seconds": round(wall, 2), "stages": measured["stages"], "training": training_rates(out),
            "outside_stages_cpu": round(measured["outside_stages_cpu"], 2),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()]}


def training_rates(out: Path) -> dict[str, dict[str, Any]]:
    """Per model the run trained: training tokens per CPU-second, from its card in the run's results.json (a warm
    run reads cards of models trained before: the rate is theirs, and ``trained`` says the run did not train)."""
    from mlmh.storage.rundir import RunDir

    run = RunDir(out)
    if not run.results.is_file():
        return {}
    models = run.read_results_data().get("models", {})
    rates = {}
    for spec, model in models.items():
        card = model.get("training") or {}
        if card.get("tokens_seen") and card.get("train_cpu_seconds"):
            rates[spec] = {"objective": card.get("objective"), "tokens": card["tokens_seen"],
                           "cpu_seconds": card["train_cpu_seconds"],
                           "tokens_per_cpu_second": round(card["tokens_seen"] / card["train_cpu_seconds"], 1)}
    return rates


def run_preset_bench(preset: str, *, phases: Sequence[str] = PHASES, limit: str | None = None,
                     cache: Path | None = None,
                     progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Cold then warm runs of ``preset`` in one fresh private cache: a temporary one (removed afterwards)
    or ``cache``, an empty or new directory that is kept. A warm phase alone still runs a cold one first,
    to fill the cache, and reports only the warm one."""
    from mlmh.storage.outputs import check_output_folder

    if cache is not None:  # a cold run needs a new or empty folder: the one rule of an output folder
        cache = check_output_folder(cache, "--cache-dir", overwrite=False, kind="a bench cache")
    wanted = [p for p in PHASES if p in phases]
    from mlmh.bench.machine import describe

    report: dict[str, Any] = {"preset": preset, "limit": limit, "goals": PRESET_GOALS.get(preset, {}),
                              "cores": os.cpu_count(), "machine": describe(), "phases": {}}
    with tempfile.TemporaryDirectory(prefix="mlmh-bench-preset-") as tmp:
        root = Path(tmp)
        for number, phase in enumerate(PHASES):
            if phase == "warm" and "warm" not in wanted:
                break
            if progress:
                progress(f"{preset} {phase}", number, len(PHASES))
            measured = run_phase(preset, cache or root / "cache", root / phase, limit=limit)
            if phase in wanted:
                report["phases"][phase] = measured
    return report


def goal_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per measured phase: its CPU seconds against the preset's goal (``passed`` None without one)."""
    rows = []
    for phase, measured in report.get("phases", {}).items():
        goal = report.get("goals", {}).get(phase)
        value = measured["cpu_seconds"]
        slowest = sorted(measured["stages"].items(), key=lambda kv: -kv[1]["cpu"])[:3]
        rows.append({"name": f"{report['preset']} {phase}: CPU seconds", "ratio": f"preset {phase}", "value": value,
                     "goal": f"<= {goal:g}" if goal is not None else "report",
                     "passed": None if goal is None else value <= goal,
                     "detail": f"wall {measured['wall_seconds']:.1f} s, load {measured['load_before'][0]:.1f}; "
                               + ", ".join(f"{name} {s['cpu']:.1f}" for name, s in slowest)})
    return rows


class StageClock:
    """A run listener that keeps each stage's CPU and wall seconds from its start and end events."""

    def __init__(self) -> None:
        self.open: dict[str, tuple[float, float]] = {}
        self.stages: dict[str, dict[str, float]] = {}

    def __call__(self, event: Any) -> None:
        from mlmh.events import StageFinished, StageStarted

        if isinstance(event, StageStarted):
            self.open[event.stage] = (cpu_seconds(os.times()), time.perf_counter())
        elif isinstance(event, StageFinished) and event.stage in self.open:
            cpu, wall = self.open.pop(event.stage)
            self.stages[event.stage] = {"cpu": round(cpu_seconds(os.times()) - cpu, 2),
                                        "wall": round(time.perf_counter() - wall, 2)}


def main(argv: Sequence[str] | None = None) -> None:
    """The measured process: one run of a preset through mlmh.api, its stage times written as JSON."""
    parser = argparse.ArgumentParser(prog="python -m mlmh.bench.preset")
    parser.add_argument("--preset", required=True)
    parser.add_argument("--output-path", required=True)
    parser.add_argument("--stages", required=True)
    parser.add_argument("--limit")
    args = parser.parse_args(argv)
    from mlmh import api
    from mlmh.config.presets import parse_limit
    from mlmh.machine.allocator import tune_command_line_process

    from mlmh.errors import MlmhError

    tune_command_line_process()  # as the mlmh command line does
    clock = StageClock()
    try:
        overrides = {"limit": parse_limit(args.limit, "--limit")} if args.limit else None
        api.run(api.prepare(args.preset, overrides, output_path=args.output_path), progress=clock)
    except MlmhError as exc:
        sys.exit(f"Error: {exc}")
    inside = sum(s["cpu"] for s in clock.stages.values())
    Path(args.stages).write_text(json.dumps({"stages": clock.stages,
                                             "outside_stages_cpu": cpu_seconds(os.times()) - inside}), encoding="utf-8")


if __name__ == "__main__":
    main()
