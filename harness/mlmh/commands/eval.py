"""``mlmh eval``: run a preset's whole experiment headless, with progress (bars on a terminal, lines in a log) and a final table."""

from __future__ import annotations

import re
import signal
from typing import Any

import click

from mlmh.config import options
from mlmh.machine import interrupts
from mlmh.run.executors import BACKENDS


@click.command(name="eval", cls=options.PresetHelpCommand)
@click.option("--preset", "preset", cls=options.PresetOption, metavar="NAME|FILE.toml", help="Preset to run.")
@options.run_option_flags  # every run option with a flag: declared once, on mlmh.types.runconfig.RunConfig
@click.option("--sweep-epochs", metavar="E[,E...]", help="Data-constrained sweep: train every trained-mlm / trained-clm "
              "for each of these epoch counts (with --sweep-tokens: at each U); see the crossover preset.")
@click.option("--sweep-tokens", metavar="U[,U...]", help="Data-constrained sweep: unique training tokens U, the first "
              "train blocks holding U tokens, for every trained-mlm / trained-clm.")
@click.option("--output-path", type=click.Path(file_okay=False), help="Run directory (default: runs/<timestamp>-<preset>/); a new run needs a new or empty one.")
@click.option("--resume", is_flag=True, help="Continue an interrupted run (the newest unfinished one, or --output-path).")
@click.option("--no-cache", is_flag=True, help="Do not share generations, metric and task results with other runs (a private cache in the run dir).")
@click.option("--workers", type=options.WORKERS, default=1, show_default=True,
              help="Worker processes that generate (1 = in this process); results do not depend on it.")
@click.option("--backend", type=click.Choice(BACKENDS), default="local", show_default=True,
              help="Where workers run: local processes, or Ray (needs: pip install 'mlmh[ray]').")
@click.option("--ray-address", metavar="ADDR", help="An existing Ray cluster (default: a local Ray started for the run).")
@click.option("--show-config", is_flag=True, help="Print the resolved configuration as TOML and exit.")
def eval_command(preset: str | None, sweep_epochs: str | None, sweep_tokens: str | None, output_path: str | None,
                 resume: bool, no_cache: bool, workers: int, backend: str, ray_address: str | None, show_config: bool,
                 **run_values: Any) -> None:
    """Run an experiment: models x maskings x samplers x seeds -> generation quality, downstream
    usefulness, correlations. Writes results.json, report.md and plots to the run directory.

    \b
    Examples:
      mlmh eval --preset quick                      # one-minute smoke run, offline
      mlmh eval --preset pan                        # the paper's PAN setting (bundled sample)
      mlmh eval --preset mpst --data ~/mpst --limit 200
      mlmh eval --preset pan --dataset text:group_field=author,id_field=id --data reviews.jsonl   # your own corpus
      mlmh eval --preset pan --model trained-mlm --model trained-clm \\
                --masking random:ratio=0.3 --sampler mask-predict:steps=10 --sampler clm-infill
      mlmh eval --preset quick --metric bleu,rouge --seed 0,1   # comma lists = repeated options
      mlmh eval --preset pan --control 0.1          # memorisation judged against train authors' held-out texts
      mlmh eval --preset pan --resume               # continue the newest interrupted pan run
      mlmh eval --resume --output-path runs/X       # continue that run as it was configured
      mlmh eval --preset pan --show-config          # print the resolved preset and exit
      mlmh eval --preset paper --help               # what a preset runs and what it costs
      mlmh eval --preset crossover --sweep-epochs 1,4 --sweep-tokens 8000   # where masked overtakes causal
      mlmh eval --preset quick --workers 2          # generate on two local worker processes
      mlmh eval --preset quick --backend ray        # generate on a local Ray (or --ray-address ADDR)
      mlmh eval --preset quick --tracker wandb,mlflow,tensorboard   # also log to trackers (README: Trackers)
    """
    from mlmh import api
    from mlmh.errors import MlmhError, RunCancelled
    from mlmh.run.progress import progress_listener

    overrides = options.run_overrides(click.get_current_context().params)
    if show_config:
        shown = api.plan(preset, overrides, resume=resume, output_path=output_path, sweep_epochs=sweep_epochs,
                         sweep_tokens=sweep_tokens)
        click.echo(shown.config.to_toml(), nl=False)
        return
    # every check before any display: the plan, checkpoints, the run directory, the backend
    prepared = api.prepare(preset, overrides, output_path=output_path, resume=resume, use_cache=not no_cache,
                           workers=workers, backend=backend, ray_address=ray_address, sweep_epochs=sweep_epochs,
                           sweep_tokens=sweep_tokens)
    out = prepared.out
    hint = f"Continue with: mlmh eval --resume --output-path {out}" + (" --no-cache" if no_cache else "")
    with progress_listener() as listener, interrupts.watch(signal.SIGINT, signal.SIGTERM):
        try:
            results = api.run(prepared, progress=listener)
        except interrupts.Terminated:
            raise RunCancelled(f"terminated; finished batches are cached. {hint}", exit_code=143) from None
        except KeyboardInterrupt as exc:
            if not interrupts.is_interrupt(exc):
                raise MlmhError(f"{interrupts.crash_line(exc)}; finished batches are cached. {hint}") from None
            raise RunCancelled(f"interrupted; finished batches are cached. {hint}") from None
    print_summary(results, out)


#: the width of the summary where the output is no terminal (a log): its table and its lines wrap within it
LOG_WIDTH = 120


def print_summary(results: Any, out: Any) -> None:
    """The final comparison: conditions x main metrics on the headline (unseen) documents with CIs, the
    first metric on seen documents and its gap, then the answer (the findings in words, as report.md opens) and
    the comparisons, as report.md's Findings state them."""
    from rich.console import Console

    from mlmh.findings.answer import answer_lines, comparison_lines
    from mlmh.machine.escape import markup as escape

    console = Console()
    if not console.is_terminal:  # a log file or CI: room for the CIs, and lines a log viewer holds
        console = Console(width=LOG_WIDTH)
    console.print(summary_table(results, console.width))
    answer = answer_lines(results.findings, markdown=False, results=results)
    if answer:
        console.print("[bold]Answer[/] (claims on unseen documents, paired t 95% CIs; each sentence in report.md):")
        for line in answer:
            console.print("- " + escape(line))
    console.print("[bold]Findings[/] (the run's comparisons, as report.md states them):")
    for line in comparison_lines(results):
        console.print(escape(line))
    if results.baseline:
        console.print("Downstream baseline (real train split): " + "; ".join(
            f"{task}: " + ", ".join(f"{k}={v:.3f}" for k, v in scores.items()) for task, scores in results.baseline.items()))
    if results.errors:
        console.print(f"[yellow]{len(results.errors)} component(s) failed; the rest completed (see report.md).[/]")
    from mlmh.storage.rundir import RunDir

    run = RunDir(out)
    console.print(f"Results: {run.results}  report: {run.report}")


def break_name(name: str, width: int) -> str:
    """``name`` (a spec) on lines of at most ``width`` characters, broken only after its ``:`` and ``,`` (a
    piece longer than ``width`` keeps its own line): a table never folds a name mid-word."""
    pieces = re.findall(r"[^:,]*[:,]|[^:,]+$", name) or [name]
    lines = [""]
    for piece in pieces:
        if lines[-1] and len(lines[-1]) + len(piece) > width:
            lines.append("")
        lines[-1] += piece
    return "\n".join(lines)


def _widest(names: list[str], width: int) -> int:
    return max((len(line) for name in names for line in break_name(name, width).split("\n")), default=1)


def label_widths(columns: list[list[str]], room: int) -> list[int]:
    """Widths for columns of names that together fit ``room`` if breaking names between their parameters can
    make them fit: the widest column gives up a line length first, none goes below its longest piece."""
    widths = [_widest(names, 10**6) for names in columns]
    while sum(widths) > room:
        narrower = [(w, i) for i, w in enumerate(widths) if _widest(columns[i], w - 1) < w]
        if not narrower:
            break
        _, i = max(narrower)
        widths[i] = _widest(columns[i], widths[i] - 1)
    return widths


def summary_table(results: Any, width: int) -> Any:
    """Conditions x main metrics on the headline set (best in bold, CIs), the first metric on seen documents and
    the gap; names break only between a spec's parameters, the numbers' columns wrap at their spaces."""
    from rich.table import Table

    from mlmh.findings.verdicts import MEMORISED, memorisation_check, memorisation_set
    from mlmh.machine.escape import markup as escape
    from mlmh.results import best_conditions, document_counts, format_score, higher_is_better, main_metrics, roles

    role = results.headline
    metrics = main_metrics(results, role)
    several_seeds = len(results.config.seeds) > 1
    both = len(roles(results)) == 2 and metrics
    counts = document_counts(results)
    table = Table(title=f"{results.config.preset or '?'}: {counts or results.n_samples} documents per condition; "
                        f"scores on {role} documents (best per column in bold, 95% CI in brackets)")
    best = {m: best_conditions(results, m, role) for m in metrics}
    headers = [f"{m} {'↑' if higher_is_better(results, m) else '↓'}" for m in metrics]
    against, above, judged = memorisation_set(results)
    gap_header = f"seen - {against}" + (" above filler" if above else "") + ("" if judged else " (group gap)")
    headers += [f"{metrics[0]} seen", gap_header] if both else []
    numbers = []
    for row in results.conditions:
        cells: list[str | tuple[str, str]] = [str(row.seed)] if several_seeds else []
        for m in metrics:
            text = format_score(row.quality(role).get(m))
            cells.append((f"*{text}", "bold green") if row.id in best[m] else (text, ""))
        if both:
            check = memorisation_check(results, row, metrics[0])
            cells.append((format_score(row.quality("seen").get(metrics[0]), with_ci=False), ""))
            cells.append((format_score(check.gap), "bold yellow" if check.state == MEMORISED else ""))
        numbers.append([c if isinstance(c, tuple) else (c, "") for c in cells])
    # the number columns get their longest word at least, the names what is left (broken between parameters
    # only), and the number columns any room still left, up to one line per value
    headers = (["seed"] if several_seeds else []) + headers
    texts = [[cells[i][0] for cells in numbers] + [h] for i, h in enumerate(headers)]
    least = [max(len(word) for text in column for word in text.split()) for column in texts]
    full = [max(map(len, column)) for column in texts]
    names = [[row.model for row in results.conditions], [row.masking for row in results.conditions],
             [row.sampler for row in results.conditions]]
    room = width - 1 - 3 * (len(names) + len(headers))
    widths = label_widths(names, room - sum(least))
    spare = max(0, room - sum(widths) - sum(least))
    for i in range(len(least)):
        grow = min(full[i] - least[i], spare)
        least[i], spare = least[i] + grow, spare - grow
    for column, names_width in zip(("model", "masking", "sampler"), widths):
        table.add_column(column, no_wrap=True, min_width=min(names_width, len(column)))
    for header, number_width in zip(headers, least):
        table.add_column(header, justify="right", width=number_width)
    for row, styled in zip(results.conditions, numbers):
        labels = [escape(break_name(name, w)) for name, w in zip((row.model, row.masking, row.sampler), widths)]
        table.add_row(*labels, *(f"[{style}]{escape(text)}[/]" if style else escape(text) for text, style in styled))
    return table
