"""How long ``mlmh tui`` takes on a cold cache to show a refinement step: seconds from launching a fresh Python process
to the first pane whose trace moved past its masked input (step 1), and to each pane's model being the finished
training. Each run is a new process on a new, empty model cache (a temporary ``MLMH_CACHE_DIR``; yours is never read
or written); the app is the one ``mlmh tui`` opens, at the default models and text, run headless at 100 x 30.

    python scripts/playground_first_step.py --runs 3                # to both panes' finished models
    python scripts/playground_first_step.py --runs 3 --until first  # to the first refinement step

Prints one line per run (when each pane's training started, showed its first step count, first refined and with the
preview of which training step, showed its finished model; the CPU-seconds of the app and its training processes, all
together, at the first refinement and at the finished models), then
the medians, the load average before and after each run and the CPU. Linux (it reads /proc). Run it from the
repository root with mlmh importable (an installed mlmh, or PYTHONPATH=harness:plugins).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time


def tree_cpu_seconds() -> float:
    """CPU-seconds (user and system) of this process and every process under it, from /proc: those alive, and those
    ended and waited for (in their parent's count)."""
    ticks = os.sysconf("SC_CLK_TCK")
    parents: dict[int, int] = {}
    cpu: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        cpu[int(entry)] = sum(int(value) for value in fields[11:15]) / ticks  # its own, and its waited-for children's
    tree, grew = {os.getpid()}, True
    while grew:
        below = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= below
        grew = bool(below)
    return sum(cpu.get(pid, 0.0) for pid in tree)


def child(launched: float, limit: float, until: str) -> None:
    """One cold start, in this process: the app of ``mlmh tui``, watched until both panes show their finished model's
    refinement (``until`` "final"), or the first refinement step ("first"), or ``limit`` seconds; one JSON line of when
    things first happened, in seconds since ``launched``."""
    import asyncio

    from mlmh.tui import create_app
    from mlmh.tui.screens.playground import PlaygroundScreen
    from mlmh.tui.widgets.trace_view import TraceView

    seen: dict[str, float] = {"imported": time.time() - launched}

    async def watch() -> None:
        app = create_app()
        async with app.run_test(size=(100, 30)) as pilot:
            seen["opened"] = time.time() - launched
            deadline = time.monotonic() + limit
            while time.monotonic() < deadline:
                await pilot.pause(0.05)
                now = time.time() - launched
                screen = app.screen
                assert isinstance(screen, PlaygroundScreen)
                for side, trace in enumerate(screen.query(TraceView)):
                    if trace.status.startswith("training"):
                        seen.setdefault(f"pane {side} training", now)
                    if " · step " in trace.status:
                        seen.setdefault(f"pane {side} training step", now)
                    shown = getattr(screen, "shown", None)  # None: a playground from before the previews
                    if trace.frames and trace.index > 0:
                        if "first refinement step" not in seen:
                            seen["cpu-s at the first step"] = tree_cpu_seconds()
                        seen.setdefault("first refinement step", now)
                        if f"pane {side} first step" not in seen and shown and shown.get(side) is not None:
                            seen[f"pane {side} by its training's step"] = shown[side].step  # a preview's
                        seen.setdefault(f"pane {side} first step", now)
                    if trace.generation is not None and (shown is None or (side in shown and shown[side] is None)):
                        seen.setdefault(f"pane {side} final model", now)  # the model itself, not a preview
                if all(f"pane {side} final model" in seen for side in (0, 1)):
                    seen["cpu-s at the final models"] = tree_cpu_seconds()
                    break
                if until == "first" and "first refinement step" in seen:
                    break
            seen["quit"] = time.time() - launched
        seen["closed"] = time.time() - launched

    asyncio.run(watch())
    print(json.dumps({k: round(v, 1) for k, v in seen.items()}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="cold starts, one after another (default 3)")
    parser.add_argument("--limit", type=float, default=900.0, help="seconds a run may take (default 900)")
    parser.add_argument("--until", choices=("first", "final"), default="final",
                        help="watch each run until the first refinement step, or both finished models (default)")
    parser.add_argument("--child", type=float, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        child(args.child, args.limit, args.until)
        return
    rows, loads = [], [os.getloadavg()]
    for run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="mlmh-cold-") as cache:
            env = {**os.environ, "MLMH_CACHE_DIR": cache, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
            launched = time.time()
            out = subprocess.run([sys.executable, __file__, "--child", repr(launched), "--limit", str(args.limit),
                                  "--until", args.until],
                                 env=env, capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        loads.append(os.getloadavg())
        print(f"run {run + 1}: {json.dumps(rows[-1])}  (load {loads[-1][0]:.2f})", flush=True)
    for key in ("first refinement step", "cpu-s at the first step", "pane 0 first step", "pane 1 first step",
                "pane 0 final model", "pane 1 final model", "cpu-s at the final models"):
        values = [row[key] for row in rows if key in row]
        if values:
            print(f"median {key}: {statistics.median(values):.1f} s over {len(values)} runs ({values})")
    print(f"load average (1 min) before and after each run: {[round(load[0], 2) for load in loads]}")
    print(f"cpu: {_cpu()}, {len(os.sched_getaffinity(0))} cores usable")


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown"


if __name__ == "__main__":
    main()
