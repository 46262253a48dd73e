"""``mlmh doctor``: what is installed and ready offline, with the fix for each problem."""

from __future__ import annotations

import json

import click


@click.command(name="doctor")
@click.option("--fix", is_flag=True, help="Try to fix what is not ready (e.g. assemble WordNet offline).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def doctor(fix: bool, as_json: bool) -> None:
    """Check what is installed and ready offline, with the fix for each problem.

    \b
    Examples:
      mlmh doctor
      mlmh doctor --fix
    """
    from mlmh.doctor import run_checks, run_fixes
    from mlmh.errors import MlmhError

    if fix:
        for line in run_fixes():
            click.echo(line, err=True)
    results = run_checks()
    if as_json:
        click.echo(json.dumps([r.__dict__ for r in results], indent=2))
    else:
        from rich.console import Console
        from rich.table import Table

        table = Table(title="mlmh doctor")
        table.add_column("check", style="bold")
        table.add_column("status")
        table.add_column("detail")
        table.add_column("fix", style="yellow")
        for r in results:
            status = "[green]ready[/green]" if r.ok else "[yellow]off[/yellow]" if r.optional else "[red]not ready[/red]"
            table.add_row(r.name, status, r.detail, r.fix)
        Console().print(table)
    if any(r.blocking for r in results):
        raise MlmhError("some checks are not ready; see the fix column (or run: mlmh doctor --fix)")
