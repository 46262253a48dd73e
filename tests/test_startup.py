"""The command line's start: the installed `mlmh --help` lists plugin commands (its time is a figure of
`mlmh bench`, not of a test; tests/test_cli_core.py checks it imports no heavy library); the
process-wide allocator setting is made by the CLI entry, never by importing mlmh."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from test_entry_points import plugin_site, run  # noqa: F401  (the installed example plugin)


@pytest.mark.slow
def test_help_lists_plugin_commands(plugin_site):  # noqa: F811
    env = {**{k: v for k, v in os.environ.items() if k != "MLMH_LOAD_PLUGINS"}, "PYTHONPATH": str(plugin_site)}
    mlmh = os.path.join(os.path.dirname(sys.executable), "mlmh")
    listed = subprocess.run([mlmh, "--help"], capture_output=True, text=True, env=env, check=True).stdout
    assert "hello-example" in listed and "eval" in listed


def test_the_allocator_is_set_by_the_cli_entry_not_on_import():
    code = ("import mlmh.cli, mlmh.generation, mlmh.runner, mlmh.bench.run\n"
            "from mlmh import allocator\nbefore = allocator._tuned\n"
            "try:\n    mlmh.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(before, allocator._tuned)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False True"
