"""``mlmh ls [KIND]``: an overview of every kind (how many, which names), or one kind's components with
their declared parameters."""

from __future__ import annotations

import json
from typing import Any

import click

KIND_CHOICES = ["models", "datasets", "maskings", "samplers", "metrics", "tasks", "trackers", "presets"]


@click.command(name="ls")
@click.argument("kind", type=click.Choice(KIND_CHOICES), required=False, metavar="[KIND]")  # the kinds: in the help
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
def ls(kind: str | None, as_json: bool) -> None:
    """List registered components of KIND with their parameters; without KIND, how many of each kind and
    their names. KIND: models, datasets, maskings, samplers, metrics, tasks, trackers or presets.

    \b
    Examples:
      mlmh ls
      mlmh ls samplers
      mlmh ls maskings --json
      mlmh ls trackers
    """
    from mlmh.registry import PLURAL, get_registry
    from mlmh.tracking import library_installed

    registry = get_registry()
    if kind is None:
        overview(registry, as_json)
        return
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
        if singular == "preset":
            from mlmh.config.presets import describe_cost

            row["cost"] = describe_cost(item.config, item.source)
            row["short_cost"] = describe_cost(item.config, item.source, how=False)
        if singular == "tracker" and item.extra:
            row["installed"] = library_installed(item.library)
            row["install"] = f"pip install 'mlmh[{item.extra}]'"
        rows.append(row)
    if as_json:
        click.echo(json.dumps([{k: v for k, v in row.items() if k != "short_cost"} for row in rows], indent=2,
                              default=str))
        return
    from rich.console import Console

    Console().print(component_table(kind, rows))


def component_table(kind: str, rows: list[dict[str, Any]]) -> Any:
    """The Rich table of one kind's ``rows``, every text as written (:func:`mlmh.machine.terminal.literal`: a default
    of ``[]`` or a help naming ``mlmh[judge]`` keeps its brackets). A plugin column that every row shares moves to
    the title, and a preset's cost shows its figures (how they were measured: ``--json``, ``mlmh eval --preset NAME
    --help``), so the descriptions get the room of an 80-column terminal and no column is cut."""
    from rich.table import Table
    from rich.text import Text

    from mlmh.machine.terminal import literal

    plugins = {row["plugin"] for row in rows}
    shared = f", all from {next(iter(plugins))}" if len(plugins) == 1 else ""
    how = "; how each cost was measured: --json" if kind == "presets" else ""
    table = Table(title=literal(f"{kind} ({len(rows)}{shared}{how})"), show_lines=False)
    table.add_column("name", style="bold cyan", no_wrap=True)
    table.add_column("description")
    if kind == "presets":
        table.add_column("cost (CPU seconds)")
    else:
        table.add_column("parameters")
    if not shared:
        table.add_column("plugin", style="dim", overflow="fold")
    for row in rows:
        params = "\n".join(
            f"{p['name']}: {p['type']} = {p['default']!r}" + (f"  ({p['help']})" if p.get("help") else "")
            for p in row["parameters"]
        )
        extra = literal("")
        if "higher_is_better" in row:
            extra = literal(" (higher is better)" if row["higher_is_better"] else " (lower is better)", "dim")
        if "model_kinds" in row:
            extra = literal(f" ({', '.join(row['model_kinds'])})", "dim")
        if "model_kind" in row:
            extra = literal(f" ({row['model_kind']})", "dim")
        if row.get("installed") is False:
            extra = literal(f" (needs: {row['install']})", "yellow")
        third = row["short_cost"].replace(", ", "\n") if "short_cost" in row else params or "-"  # a phase a line
        cells = [literal(row["name"]), Text.assemble(literal(row["description"]), extra), literal(third)]
        table.add_row(*cells, *([] if shared else [literal(row["plugin"].replace(".", ".\n"))]))  # a line a part
    return table


def overview(registry: Any, as_json: bool) -> None:
    """Every kind with its count and names, so a first look needs no KIND."""
    from mlmh.registry import PLURAL

    names = {kind: registry.names(PLURAL[kind]) for kind in KIND_CHOICES}
    for msg in registry.errors + registry.warnings:
        click.echo(f"Warning: {msg}", err=True)
    if as_json:
        click.echo(json.dumps(names, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    from mlmh.machine.terminal import literal

    table = Table(title="registered components (mlmh ls KIND for one kind's parameters)")
    table.add_column("kind", style="bold cyan", no_wrap=True)
    table.add_column("count", justify="right")
    table.add_column("names")
    for kind, found in names.items():
        table.add_row(kind, str(len(found)), literal(", ".join(found)))
    Console().print(table)
