"""The command line's start: the installed `mlmh --help` lists plugin commands (its time is a figure of
`mlmh bench`, not of a test; tests/test_cli_core.py checks it imports no heavy library); the
process-wide allocator and garbage-collector settings are made by the CLI entry, never by importing mlmh."""

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
    code = ("import mlmh.cli, mlmh.generation, mlmh.run.runner, mlmh.bench.run\n"
            "import gc\nfrom mlmh.machine import allocator\nbefore = allocator._tuned, gc.get_threshold()[0]\n"
            "try:\n    mlmh.cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            "print(*before, allocator._tuned, gc.get_threshold()[0])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "False 700 True 20000"


def test_the_command_line_collects_young_objects_rarely_and_freezes_them_at_exit(monkeypatch):
    import gc

    from mlmh.machine import allocator

    registered = []
    monkeypatch.setattr(allocator, "_collector_tuned", False)
    monkeypatch.setattr(allocator.atexit, "register", registered.append)
    before = gc.get_threshold()
    try:
        allocator.collect_garbage_rarely()
        allocator.collect_garbage_rarely()
        assert gc.get_threshold() == (allocator.YOUNG_COLLECTION_EVERY, before[1], before[2])
        assert registered == [gc.freeze]  # once: the final collection at exit has nothing left to walk
    finally:
        gc.set_threshold(*before)
