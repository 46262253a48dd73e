"""The command line's start: `mlmh --help` is quick and lists plugin commands; the process-wide allocator
setting is made by the CLI entry, never by importing mlmh."""

from __future__ import annotations

import os
import resource
import subprocess
import sys

from test_entry_points import plugin_site, run  # noqa: F401  (the installed example plugin)

#: CPU seconds `mlmh --help` may take (issue 18: 0.15 s wall on an idle 2-core machine, where wall ~ CPU)
HELP_CPU_S = 0.15


def _cpu_seconds(args, env) -> tuple[float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), out.stdout


def test_help_is_quick_and_lists_plugin_commands(plugin_site):  # noqa: F811
    env = {**{k: v for k, v in os.environ.items() if k != "MLMH_LOAD_PLUGINS"}, "PYTHONPATH": str(plugin_site)}
    mlmh = os.path.join(os.path.dirname(sys.executable), "mlmh")
    runs = [_cpu_seconds([mlmh, "--help"], env) for _ in range(5)]
    assert "hello-example" in runs[0][1] and "eval" in runs[0][1]
    assert min(seconds for seconds, _ in runs) <= HELP_CPU_S, runs


def test_the_allocator_is_set_by_the_cli_entry_not_on_import():
    code = ("import mlmh.cli, mlmh.generation, mlmh.runner, mlmh.bench\n"
            "from mlmh import allocator\nbefore = allocator._tuned\n"
            "try:\n    mlmh.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(before, allocator._tuned)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False True"
