"""``mlmh doctor``: what is installed and ready offline, with the fix for each problem."""

from __future__ import annotations

import json

import click


@click.command(name="doctor")
@click.option("--fix", is_flag=True, help="Try to fix what is not ready (e.g. assemble WordNet offline).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@click.option("--problems", is_flag=True,
              help="Show only the checks that are not ready (one line when all are): what make setup and make demo print.")
def doctor(fix: bool, as_json: bool, problems: bool) -> None:
    """Check what is installed and ready offline, with the fix for each problem.

    \b
    Examples:
      mlmh doctor
      mlmh doctor --fix
      mlmh doctor --fix --problems
    """
    from mlmh.doctor import run_checks, run_fixes
    from mlmh.errors import MlmhError

    if fix:
        for line in run_fixes():
            click.echo(line, err=True)
    results = run_checks()
    shown = [r for r in results if not r.ok] if problems else results
    if problems and not shown and not as_json:
        click.echo(f"mlmh doctor: all {len(results)} checks ready", err=True)
    elif as_json:
        click.echo(json.dumps([r.__dict__ for r in shown], indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        from mlmh.machine.terminal import literal

        off = sum(1 for r in shown if r.optional and not r.ok)
        title = f": {len(shown) - off} of {len(results)} checks not ready" + (f", {off} optional off" if off else "")
        table = Table(title="mlmh doctor" + (title if problems else ""))
        table.add_column("check", style="bold")
        table.add_column("status")
        table.add_column("detail")
        table.add_column("fix", style="yellow")
        for r in shown:
            status = literal("ready", "green") if r.ok else literal("off", "yellow") if r.optional \
                else literal("not ready", "red")
            table.add_row(literal(r.name), status, literal(r.detail), literal(r.fix))  # a fix holds brackets: mlmh[judge]
        Console().print(table)
    if any(r.blocking for r in results):
        raise MlmhError("some checks are not ready; see the fix column (or run: mlmh doctor --fix)")
