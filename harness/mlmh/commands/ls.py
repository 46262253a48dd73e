"""``mlmh ls KIND``: the registered components of one kind with their declared parameters."""

from __future__ import annotations

import json

import click

KIND_CHOICES = ["models", "datasets", "maskings", "samplers", "metrics", "tasks", "trackers", "presets"]


@click.command(name="ls")
@click.argument("kind", type=click.Choice(KIND_CHOICES))
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def ls(kind: str, as_json: bool) -> None:
    """List registered components of KIND with their parameters.

    \b
    Examples:
      mlmh ls samplers
      mlmh ls maskings --json
      mlmh ls trackers
    """
    from mlmh.registry import PLURAL, get_registry
    from mlmh.tracking import library_installed

    registry = get_registry()
    singular = PLURAL[kind]
    items = registry.all(singular)
    for msg in registry.errors + registry.warnings:
        click.echo(f"Warning: {msg}", err=True)
    rows = []
    for item in items:
        row = item.describe()
        row["plugin"] = registry.owner(singular, item.name)
        if singular == "metric":
            row["higher_is_better"] = item.higher_is_better
        if singular == "sampler":
            row["model_kinds"] = sorted(item.model_kinds)
        if singular == "model":
            row["model_kind"] = item.model_kind
        if singular == "tracker" and item.extra:
            row["installed"] = library_installed(item.library)
            row["install"] = f"pip install 'mlmh[{item.extra}]'"
        rows.append(row)
    if as_json:
        click.echo(json.dumps(rows, indent=2, default=str))
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=f"{kind} ({len(rows)})", show_lines=False)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    table.add_column("parameters")
    table.add_column("plugin", style="dim")
    for row in rows:
        params = "\n".join(
            f"{p['name']}: {p['type']} = {p['default']!r}" + (f"  ({p['help']})" if p.get("help") else "")
            for p in row["parameters"]
        )
        extra = ""
        if "higher_is_better" in row:
            extra = " [dim](higher is better)[/dim]" if row["higher_is_better"] else " [dim](lower is better)[/dim]"
        if "model_kinds" in row:
            extra = f" [dim]({', '.join(row['model_kinds'])})[/dim]"
        if "model_kind" in row:
            extra = f" [dim]({row['model_kind']})[/dim]"
        if row.get("installed") is False:
            extra = f" [yellow](needs: {escape(row['install'])})[/yellow]"
        table.add_row(row["name"], row["description"] + extra, params or "-", row["plugin"])
    Console().print(table)

