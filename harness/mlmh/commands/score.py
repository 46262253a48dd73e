"""``mlmh score``: metric plugins on their own, on a file of predictions and a file of references."""

from __future__ import annotations

import os

import click

from mlmh.config import options


@click.command(name="score")
@click.option("--metric", "-m", "specs", multiple=True, required=True, metavar="SPEC[,SPEC...]", callback=options.specs("metric"),
              help="Metric spec(s); repeat the option or separate with commas (see: mlmh ls metrics).")
@click.option("--pred", "pred_path", required=True, type=click.Path(dir_okay=False), help="Predictions: one text a line, or .jsonl.")
@click.option("--ref", "ref_path", required=True, type=click.Path(dir_okay=False), help="References, paired line by line with --pred.")
@click.option("--field", default="text", show_default=True, help="Text field of .jsonl/.ndjson files.")
@click.option("--seed", default=0, show_default=True, type=options.SEED, help="Seed of the bootstrap confidence intervals.")
@click.option("--workers", default=min(2, os.cpu_count() or 1), show_default=True, type=options.WORKERS,
              help="Processes scoring metrics side by side (1 = all in this process).")
@click.option("--json", "as_json", is_flag=True, help="Print the results (with per-sample values) as JSON.")
def score(
    specs: list[str], pred_path: str, ref_path: str, field: str, seed: int, workers: int, as_json: bool
) -> None:
    """Score predictions against references with one or more metrics.

    Files hold one text a line (UTF-8, no empty lines); files ending in .jsonl or .ndjson hold one
    JSON object a line with the text under --field. Every metric reports its corpus value with a
    seeded bootstrap 95% confidence interval. Metrics run side by side in --workers processes.

    \b
    Examples:
      mlmh score --metric bleu,rouge,meteor --pred gen.txt --ref orig.txt
      mlmh score -m bleu -m rouge:use_stemmer=true,lsum_split=newline --pred gen.txt --ref orig.txt
      mlmh score -m bertscore:layer=4 --pred gen.jsonl --ref orig.jsonl --field text --json
      mlmh score -m gen-ppl:path=./my-gpt2 -m stutter -m distinct-n:n=2 --pred gen.txt --ref orig.txt
    """
    from mlmh.run.score_files import read_pairs, score_texts
    from mlmh.types import to_dict

    predictions, references = read_pairs(pred_path, ref_path, field=field)
    from rich.console import Console

    err = Console(stderr=True)
    with err.status("scoring...") as status:
        results = score_texts(
            specs, predictions, references, seed=seed, workers=workers,
            on_metric=lambda name: status.update(f"scoring {name} on {len(predictions)} pairs..."),
        )
    if as_json:
        from mlmh.plugins.contracts import strict_json

        click.echo(strict_json({"pairs": len(predictions), "seed": seed, "results": [to_dict(r) for r in results]}, indent=2))
        _fail_on_errors(specs, results)
        return
    from rich.table import Table

    from mlmh.machine.terminal import literal

    table = Table(title=literal(f"{len(predictions)} pairs  ({pred_path} vs {ref_path})"))
    table.add_column("metric", style="bold cyan", no_wrap=True)
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("better", justify="center")
    table.add_column("notes", style="dim")
    for r in results:
        value = "-" if r.value is None else f"{r.value:.4f}"
        ci = "-" if r.ci_low is None or r.ci_high is None else f"[{r.ci_low:.4f}, {r.ci_high:.4f}]"
        notes = literal(r.error, "red") if r.error else literal(r.info.get("signature") or r.info.get("model") or "")
        table.add_row(literal(r.name), value, literal(ci), "↑" if r.higher_is_better else "↓", notes)  # as written
    Console().print(table)
    _fail_on_errors(specs, results)


def _fail_on_errors(specs: list[str], results: list) -> None:
    """Exit non-zero when any requested metric failed (its one error result under its own name, as
    ``contracts.score_metric`` reports a failure; a value a metric says it cannot give, like stutter's
    sub-word rate without a tokenizer, is a note): the others' values are printed, but a script that checks
    the exit code must not take the run for a success."""
    from mlmh.errors import MlmhError

    requested = [spec.partition(":")[0].strip() for spec in specs]
    failed = [r.name for r in results if r.error and r.value is None and r.name in requested]
    if failed:
        kept = "; the others' results are printed" if len(failed) < len(requested) else ""
        raise MlmhError(f"{len(failed)} of {len(requested)} metric(s) failed: {', '.join(failed)} (see above){kept}")
