"""``mlmh eval``: run a preset's whole experiment headless, with Rich progress and a final table."""

from __future__ import annotations

from typing import Any

import click

from mlmh import options


@click.command(name="eval")
@click.option("--preset", "preset", metavar="NAME|FILE.toml", help="Preset to run: pan, mpst, mimic, quick, or a TOML file.")
@click.option("--dataset", callback=options.dataset, help="Override the dataset (a registered dataset name).")
@click.option("--data", "data", metavar="PATH", help="Dataset files in their official format (default: bundled sample).")
@click.option("--model", "models", multiple=True, metavar="SPEC[,SPEC...]", callback=options.specs("model"),
              help="Model spec; repeat or separate with commas (replaces the preset's).")
@click.option("--masking", "maskings", multiple=True, metavar="SPEC[,SPEC...]", callback=options.specs("masking"),
              help="Masking spec; repeat or separate with commas.")
@click.option("--sampler", "samplers", multiple=True, metavar="SPEC[,SPEC...]", callback=options.specs("sampler"),
              help="Sampler spec; repeat or separate with commas.")
@click.option("--metric", "metrics", multiple=True, metavar="SPEC[,SPEC...]", callback=options.specs("metric", none=True),
              help="Metric spec; repeat or separate with commas ('none' for no metrics).")
@click.option("--task", "tasks", multiple=True, metavar="SPEC[,SPEC...]", callback=options.specs("task", none=True),
              help="Downstream task; repeat or separate with commas ('none' to skip downstream).")
@click.option("--limit", metavar="N|0.x", callback=options.limit, help="Documents per condition: a count, a fraction, or 0 for all.")
@click.option("--seed", "seeds", multiple=True, metavar="N[,N...]", callback=options.seeds,
              help="Run seed; repeat or separate with commas (one condition per seed).")
@click.option("--batch-size", type=int, help="Generation batch size (results do not depend on it).")
@click.option("--output-path", type=click.Path(file_okay=False), help="Run directory (default: runs/<timestamp>-<preset>/).")
@click.option("--log-samples", is_flag=True, default=None, help="Write samples.jsonl with every step trace and per-sample scores.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run (the newest unfinished one, or --output-path).")
@click.option("--no-cache", is_flag=True, help="Do not share generations with other runs (a private cache in the run dir).")
@click.option("--show-config", is_flag=True, help="Print the resolved configuration as TOML and exit.")
def eval_command(preset: str | None, dataset: str | None, data: str | None, models: list[str],
                 maskings: list[str], samplers: list[str], metrics: list[str], tasks: list[str],
                 limit: int | float | None, seeds: list[int], batch_size: int | None, output_path: str | None,
                 log_samples: bool | None, resume: bool, no_cache: bool, show_config: bool) -> None:
    """Run an experiment: models x maskings x samplers x seeds -> generation quality, downstream
    usefulness, correlations. Writes results.json, report.md and plots to the run directory.

    \b
    Examples:
      mlmh eval --preset quick                      # one-minute smoke run, offline
      mlmh eval --preset pan                        # the paper's PAN setting (bundled sample)
      mlmh eval --preset mpst --data ~/mpst --limit 200
      mlmh eval --preset pan --model trained-mlm --model trained-clm \\
                --masking random:ratio=0.3 --sampler mask-predict:steps=10 --sampler clm-infill
      mlmh eval --preset quick --metric bleu,rouge --seed 0,1   # comma lists = repeated options
      mlmh eval --preset pan --resume               # continue the newest interrupted pan run
      mlmh eval --preset pan --show-config          # print the resolved preset and exit
    """
    from pathlib import Path

    from mlmh.config import resolve
    from mlmh.errors import SpecError
    from mlmh.registry import get_registry
    from mlmh.runner import RunCancelled, default_output_path, latest_run, run_experiment

    if not preset:
        names = ", ".join(get_registry().names("preset"))
        raise SpecError(f"pass --preset NAME (one of: {names}) or --preset FILE.toml")
    overrides: dict[str, Any] = {
        "dataset": dataset, "data": data, "limit": limit, "batch_size": batch_size, "log_samples": log_samples,
        "models": list(models) or None, "maskings": list(maskings) or None, "samplers": list(samplers) or None,
        "metrics": _optional_list(metrics), "tasks": _optional_list(tasks), "seeds": list(seeds) or None,
    }
    config = resolve(preset, overrides)
    if show_config:
        click.echo(config.to_toml(), nl=False)
        return
    if output_path:
        out = Path(output_path)
    elif resume:
        found = latest_run(config.preset)
        if found is None:
            raise SpecError(f"--resume: no unfinished run of preset '{config.preset}' under runs/; pass --output-path")
        out = found
    else:
        out = default_output_path(config.preset)

    from mlmh.progress import RichListener

    with RichListener() as listener:
        try:
            results = run_experiment(config, listener, output_path=out, resume=resume, use_cache=not no_cache)
        except KeyboardInterrupt:
            raise RunCancelled(f"interrupted; finished batches are cached. Continue with: mlmh eval --preset {preset} "
                               f"--resume --output-path {out}") from None
    print_summary(results, out)


def _optional_list(values: list[str]) -> list[str] | None:
    if not values:
        return None
    if [v.lower() for v in values] == ["none"]:
        return []
    return list(values)


def print_summary(results: dict[str, Any], out: Any) -> None:
    """The final comparison table (conditions x main metrics, CIs, best per column marked)."""
    from rich.console import Console
    from rich.table import Table

    from mlmh.report import best_conditions, format_score, higher_is_better, main_metrics

    console = Console()
    if not console.is_terminal:  # a log file or CI: room for the CIs instead of 80 folded columns
        console = Console(width=200)
    metrics = main_metrics(results)
    table = Table(title=f"{results['config']['preset']}: {results['n_samples']} documents per condition "
                        "(best per column in bold, 95% CI in brackets)")
    for column in ("model", "masking", "sampler"):
        table.add_column(column, overflow="fold")
    if len(results["config"]["seeds"]) > 1:
        table.add_column("seed")
    best = {m: best_conditions(results, m) for m in metrics}
    for m in metrics:
        table.add_column(f"{m} {'↑' if higher_is_better(results, m) else '↓'}", justify="right")
    for row in results["conditions"]:
        cells = [row["model"], row["masking"], row["sampler"]]
        if len(results["config"]["seeds"]) > 1:
            cells.append(str(row["seed"]))
        for m in metrics:
            text = format_score(row["metrics"].get(m))
            cells.append(f"[bold green]*{text}[/]" if row["id"] in best[m] else text)
        table.add_row(*cells)
    console.print(table)
    baseline = results.get("baseline") or {}
    if baseline:
        console.print("Downstream baseline (real train split): " + "; ".join(
            f"{task}: " + ", ".join(f"{k}={v:.3f}" for k, v in scores.items()) for task, scores in baseline.items()))
    console.print(f"Results: {out}/results.json  report: {out}/report.md")
