"""``mlmh calibrate``: every decision rule run under a null and under a stated effect, with a preset's or a run's own
arm structure (:mod:`mlmh.calibrate`); exit 1 when a rule says "holds" (or flags) more often than its nominal rate
beyond the Monte-Carlo error."""

from __future__ import annotations

import sys

import click

from mlmh import bounds
from mlmh.config import options


@click.command(name="calibrate")
@click.option("--preset", "preset", default=None, metavar="NAME|FILE", help="Simulate the arms of this preset.")
@click.option("--run", "run_dir", default=None, metavar="RUN_DIR", help="Simulate the arms of this finished run.")
@click.option("--runs", default=200, show_default=True, type=options.Number(int, min=20, max=bounds.SIMULATIONS),
              help="Simulated runs per rule and scenario.")
@click.option("--documents", default=None, type=options.Number(int, min=2, max=bounds.SIMULATED_DOCUMENTS),
              help="Unseen documents per condition (default: the preset's limit, or the run's).")
@click.option("--seed", default=0, show_default=True, type=options.Number(int, min=0), help="Seed of the simulations.")
def calibrate(preset: str | None, run_dir: str | None, runs: int, documents: int | None, seed: int) -> None:
    """How often each verdict rule says "holds" when nothing is there (null) and when a real effect is (power), on
    synthetic per-document scores shaped like PRESET's or RUN_DIR's conditions, through mlmh's own findings code.

    \b
    Examples:
      mlmh calibrate --preset pan
      mlmh calibrate --preset paper --runs 100
      mlmh calibrate --preset crossover            # the crossover epoch of a sweep
      mlmh calibrate --run runs/20260101-120000-pan
    """
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    from mlmh import calibrate as sim

    if (preset is None) == (run_dir is None):
        raise click.UsageError("give one of --preset NAME or --run RUN_DIR")
    if preset is not None:
        from mlmh.config.plan import build_plan
        from mlmh.config.presets import resolve

        shape = sim.of_plan(build_plan(resolve(preset)), label=f"preset {preset}")
    else:
        from mlmh import api

        shape = sim.of_results(api.load(str(run_dir)).results, label=f"run {run_dir}")
    if documents:
        shape = sim.shrink(shape, documents)
    rates = sim.calibrate(shape, runs=runs, seed=seed)
    console = Console()
    console.print(escape(f"{shape.describe()}; {runs} simulated runs per row. 'says' is the rate of \"holds\" (of a "
                         "flag, for memorisation; of a stated crossover, for a sweep), with its Monte-Carlo 95% CI; "
                         "under a null it must not exceed the "
                         "nominal rate: EXCEEDED where its Monte-Carlo "
                         f"{sim.MONTE_CARLO_CONFIDENCE:.0%} CI lies wholly above it."))
    table = Table(pad_edge=False)
    for column in ("rule", "scenario", "says", "95% CI", "nominal"):  # a rule's name wraps at words, never shorter
        table.add_column(column, no_wrap=column in ("says", "95% CI"), min_width=23 if column == "rule" else None)
    for found in rates:
        status = "power" if found.nominal is None else f"{found.nominal:.1%}" + (" EXCEEDED" if found.exceeds else "")
        table.add_row(escape(found.rule), escape(found.scenario), f"{found.positive:.1%}",
                      f"{found.low:.1%}-{found.high:.1%}", status)
    console.print(table)
    if not rates:
        console.print("No rule of mlmh can be tested on this structure (it needs MLM and CLM arms, two random "
                      "masking ratios, punctuation masking, a ratio of 0.5 or more, downstream tasks, control "
                      "documents, the conditions of one of Li et al.'s claims, or a sweep of epochs).")
    bad = [r for r in rates if r.exceeds]
    for r in bad:
        console.print(escape(f"{r.rule}: says it {r.positive:.1%} of the time under the null, above its nominal "
                             f"{r.nominal:.1%} beyond the Monte-Carlo error"))
    sys.exit(1 if bad else 0)
