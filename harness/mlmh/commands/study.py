"""``mlmh study``: one preset over several datasets, each a normal run folder, and one report that sets their
verdicts side by side and pools claims (1) and (2) across them (:func:`mlmh.api.study`)."""

from __future__ import annotations

import signal
from typing import Any

import click

from mlmh.config import options


@click.command(name="study")
@click.option("--preset", "preset", default="paper", show_default=True, metavar="NAME|FILE.toml",
              help="The preset every dataset runs.")
@click.option("--data", "data", multiple=True, required=True, metavar="DATASET[=DIR]",
              help="A dataset and its official-format files (without =DIR: its bundled sample); repeat, at least two.")
@click.option("--limit", default=None, metavar="N|0.x", help="Documents per condition and set, for every dataset "
              "(default: the preset's).")
@click.option("--output-path", type=click.Path(file_okay=False),
              help="The study folder (default: studies/<timestamp>-<preset>/); run the same command on it again to "
              "continue: finished runs are read back, an interrupted one is resumed.")
def study(preset: str, data: tuple[str, ...], limit: str | None, output_path: str | None) -> None:
    """Run PRESET on every --data dataset, each into its own run folder inside the study folder, and write
    study.json and study.md: each claim's verdict per dataset, claims (1) and (2) pooled across datasets (random
    effects, with tau^2 and I^2), and the verdict across datasets ("holds on every dataset", "holds pooled, not on
    every dataset", ...). A dataset whose run fails is named; the others complete (exit 1).

    \b
    Examples:
      mlmh study --data pan --data mpst --data mimic          # the paper's setting on the three bundled samples
      mlmh study --data pan=~/pan20 --data mpst=~/mpst --data mimic --output-path studies/paper   # again: continues
    """
    from rich.console import Console

    from mlmh import api
    from mlmh.config.study import study_path
    from mlmh.errors import MlmhError, RunCancelled
    from mlmh.machine import interrupts
    from mlmh.machine.escape import markup as escape
    from mlmh.report.study import study_lines
    from mlmh.run.progress import progress_listener
    from mlmh.storage.study import STUDY, STUDY_REPORT

    from mlmh.config.study import parse_inputs

    parse_inputs(data)  # each --data value checked by the flag's name, before anything runs
    overrides: dict[str, Any] = {}
    if limit is not None:
        from mlmh.config.presets import parse_limit

        overrides["limit"] = parse_limit(limit, "--limit", "limit")
    out = study_path(options.check_path(preset, "preset") or "paper", output_path)
    console = Console(stderr=True)
    if not console.is_terminal:  # a log: lines it holds, as mlmh eval's
        from mlmh.commands.eval import LOG_WIDTH

        console = Console(stderr=True, width=LOG_WIDTH)
    with progress_listener() as listener, interrupts.watch(signal.SIGINT, signal.SIGTERM):
        try:
            found = api.study(preset, data, output_path=out, progress=listener,
                              announce=lambda line: console.print(escape(line)), **overrides)
        except (KeyboardInterrupt, interrupts.Terminated):
            raise RunCancelled("interrupted; finished runs are kept. Continue with the same command and "
                               f"--output-path {out}") from None
    shown = Console()
    if not shown.is_terminal:  # a log: lines it holds, as mlmh eval's summary
        from mlmh.commands.eval import LOG_WIDTH

        shown = Console(width=LOG_WIDTH)
    shown.print(f"[bold]Study[/] of {escape(found.results.preset)} on {len(found.results.datasets)} datasets:")
    for line in study_lines(found.results):
        shown.print("- " + escape(line))
    shown.print(f"Study: {escape(str(out / STUDY))}  report: {escape(str(out / STUDY_REPORT))}")
    failed = found.results.failed
    if failed:
        raise MlmhError(f"{len(failed)} dataset(s) failed: " + "; ".join(f"{k}: {v}" for k, v in failed.items()))
