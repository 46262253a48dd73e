"""``mlmh report RUN_DIR``: rebuild report.md and the plots from a run's results.json."""

from __future__ import annotations

import click


@click.command(name="report")
@click.argument("run_dir", type=click.Path(file_okay=True, dir_okay=True))
def report(run_dir: str) -> None:
    """Rebuild report.md and plots (PNG) of RUN_DIR from its results.json; no model or data needed.

    \b
    Examples:
      mlmh report runs/20260101-120000-pan
      mlmh report runs/20260101-120000-pan/results.json
    """
    from mlmh import api
    from mlmh.report.markdown import write_report

    loaded = api.load(run_dir)
    path = write_report(loaded.results, loaded.run)
    click.echo(f"wrote {path}")
