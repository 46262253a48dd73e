"""The mlmh command line run in this process from a test: its exit code and what it printed."""

from __future__ import annotations


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    """``mlmh ARGS`` here: (exit code, stdout, stderr), with 0 for a command that returned without exiting."""
    from mlmh.cli import main

    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err
