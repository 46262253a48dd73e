"""``mlmh plugins``: JSON list of loaded plugins (name, version, hooks)."""

from __future__ import annotations

import json

import click


@click.command(name="plugins")
def plugins() -> None:
    """Show installed plugins and the hooks they implement, as JSON.

    \b
    Examples:
      mlmh plugins
      MLMH_LOAD_PLUGINS= mlmh plugins      # builtins only
    """
    from mlmh.plugins.plugin_manager import describe_plugins, get_plugin_manager, load_errors

    get_plugin_manager()
    for msg in load_errors:
        click.echo(f"Warning: {msg}", err=True)
    click.echo(json.dumps(describe_plugins(), indent=2))
