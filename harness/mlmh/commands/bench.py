"""``mlmh bench``: generation speed of every sampler and the harness's own overhead, against bare models."""

from __future__ import annotations

import json
from pathlib import Path

import click

from mlmh import bounds
from mlmh.config import options

from mlmh.errors import SpecError
from mlmh.storage.outputs import check_output_file, write_output_file


def _int_list(value: str, option: str, bound: bounds.Bound, *, minimum: int = 1) -> tuple[int, ...]:
    try:
        numbers = tuple(int(part) for part in value.split(",") if part.strip())
    except ValueError:
        raise SpecError(f"{option} expects comma-separated integers, got {value!r}") from None
    if not numbers or any(n < minimum for n in numbers):
        raise SpecError(f"{option} expects integers >= {minimum}, got {value!r}")
    for number in numbers:
        bounds.check(number, bound, f"{option} {value}: each")
    return tuple(dict.fromkeys(numbers))


#: the keys of the two reports ``mlmh bench --out`` writes: the samplers', and a preset's (``--preset``)
REPORT_KEYS = ({"machine", "options", "method", "sizes"}, {"preset", "machine", "phases", "goal_rows"},
               {"training", "machine", "bf16_units", "method"})


def _is_bench_report(path: Path) -> bool:
    """Whether ``path`` holds a report an earlier ``mlmh bench --out`` wrote (safe to replace)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return isinstance(data, dict) and any(keys <= data.keys() for keys in REPORT_KEYS)


def _check_out(out_path: str | None) -> Path | None:
    """``--out`` as a file ``mlmh bench`` may write (:func:`mlmh.storage.outputs.check_output_file`), checked
    before minutes of timing, not after."""
    return (check_output_file(out_path, "--out", is_own=_is_bench_report, kind="an mlmh bench report")
            if out_path else None)


def _write_out(out_file: Path | None, report: dict) -> None:
    if out_file:
        write_output_file(out_file, "--out", lambda fh: fh.write((json.dumps(report, indent=2) + "\n").encode("utf-8")),
                          is_own=_is_bench_report, kind="an mlmh bench report")


def _name_list(value: str, option: str, valid: tuple[str, ...]) -> tuple[str, ...]:
    names = tuple(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    unknown = [n for n in names if n not in valid]
    if unknown:
        raise SpecError(f"{option}: unknown {', '.join(map(repr, unknown))} (valid: {', '.join(valid)})")
    return names


@click.command(name="bench")
@click.option("--sizes", default="tiny", show_default=True, help="Model sizes (shapes of mlmh train): tiny, small, base.")
@click.option("--lengths", default="32", show_default=True,
              help="Document lengths in tokens; the middle half is masked. The speedup/crossover workload "
                   "(256 tokens, 128 masked) is always added for mask-predict T=4 and clm-infill.")
@click.option("--batch", "batches", default="1,8,32", show_default=True, help="Batch sizes; batching compares the smallest and largest.")
@click.option("--runs", default=5, show_default=True, type=options.Number(int, min=5), help="Timed runs per figure (median); >= 5 (sampler cells: more until each side has run 0.5 s, up to 2 s while the overhead's interval is wide).")
@click.option("--threads", default=0, type=options.Number(int, min=0, max=bounds.THREADS, meaning="0 = every core available"), help="torch threads (0 = every core available).")
@click.option("--samplers", "sampler_labels", default="", metavar="NAMES",
              help="Sampler rows to time (default: all): one-shot, mask-predict-1, mask-predict-4, mask-predict-10, "
                   "left-to-right, gibbs, clm-infill, clm-infill-nocache, seq2seq-infill.")
@click.option("--metrics", "metric_names", default="bleu,rouge,meteor,bertscore,judge", show_default=True,
              callback=options.may_be_empty,
              help="Metrics whose throughput (pairs/s) to measure; '' for none. judge: gen-ppl's pretrained judge "
                   "(tokens per CPU-second beside BERTScore's encoder) where the judge extra is installed.")
@click.option("--no-startup", is_flag=True, help="Skip the `mlmh --help` startup timing.")
@click.option("--no-scaling", is_flag=True, help="Skip the eval scaling ratio (runs the runner 8 times).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the table.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Print Markdown tables instead of the table (the form docs/PERFORMANCE.md keeps).")
@click.option("--out", "out_path", type=click.Path(dir_okay=False, writable=True), help="Also write the JSON report to FILE.")
@click.option("--preset", "preset", metavar="NAME|FILE.toml",
              help="Instead of the samplers: CPU seconds per stage of whole runs of this preset, cold in a fresh "
                   "private cache, then warm (goals for pan: cold <= 600, warm <= 15).")
@click.option("--phases", default="cold,warm", show_default=True, help="With --preset: the phases to report "
              "(warm alone still runs a cold phase first, to fill the cache).")
@click.option("--limit", "limit", metavar="N|0.x", help="With --preset: documents per condition instead of the preset's.")
@click.option("--cache-dir", "cache_dir", type=click.Path(file_okay=False),
              help="With --preset: the model and sample cache of the runs, new or empty, kept afterwards "
                   "(default: a temporary one).")
@click.option("--training", is_flag=True,
              help="Instead of the samplers: training tokens per CPU-second of each kind (MLM, CLM, seq2seq) from the "
                   "paper preset's starts (MiniLM, tiny from scratch), float32 against bf16 autocast, interleaved.")
def bench(sizes: str, lengths: str, batches: str, runs: int, threads: int, sampler_labels: str, metric_names: str,
          no_startup: bool, no_scaling: bool, as_json: bool, as_markdown: bool, out_path: str | None,
          preset: str | None, phases: str, limit: str | None, cache_dir: str | None, training: bool) -> None:
    """Time every sampler against bare model forward passes doing the same work.

    Builds random-weight MLM, CLM and seq2seq models of matched parameter count (the shapes
    `mlmh train` uses), pins torch threads, warms up once, and reports medians of --runs runs
    (harness and bare runs interleaved; a sampler cell runs on until each side has taken 0.5 s,
    and up to 2 s while the overhead's 95 % interval is wider than 0.04, so that short calls get
    enough runs): forward passes, tokens/s, latency at batch 1, samples/s
    at the largest batch, peak memory; and the ratios overhead (goal, worst cell: <= 1.20 tiny,
    <= 1.10 small; next to it the lean bare loop, which computes the output layer only where a
    sampler reads and chooses each token with its exact probability there, as the harness does:
    harness / lean is the harness's own cost), speedup of mask-predict T=4 over
    cached clm-infill (the harness keeps >= 0.95 of the bare models'), batching (>= 0.90),
    crossover, startup (<= 0.15 s), scaling (<= 2.2) and metric throughput (BERTScore: cold,
    references cached (goal >= 200 pairs/s), and the bare encoder), with the tokens per CPU-second
    of BERTScore's encoder and of gen-ppl's pretrained judge (where installed: its load, then a few
    dozen sentences scored cold). Timing ratios come with a 95 %
    bootstrap interval over the runs; a result whose interval spans its goal says so.

    The defaults (tiny, 32 tokens, batches 1,8,32, 5 runs) use about 4 minutes of CPU time (under 5
    minutes on 2 idle cores); every extra length or size adds minutes (left-to-right and gibbs
    make one pass per masked token).

    \b
    Examples:
      mlmh bench                                  # the default figures, as a table
      mlmh bench --json --out bench.json          # one JSON object, also saved
      mlmh bench --markdown                       # Markdown tables, as docs/PERFORMANCE.md keeps them
      mlmh bench --sizes tiny,small --lengths 32,128 --batch 1,32
      mlmh bench --samplers one-shot,mask-predict-4,clm-infill --metrics '' --no-scaling
      mlmh bench --preset pan                     # a cold and a warm pan run, CPU seconds per stage
      mlmh bench --training                       # training tokens per CPU-second, float32 and bf16
    """
    from mlmh.bench.metrics import METRIC_NAMES
    from mlmh.bench.models import BENCH_SIZES
    from mlmh.bench.run import BenchOptions, available_cores, run_bench
    from mlmh.bench.samplers import sampler_cases

    if as_json and as_markdown:
        raise SpecError("--json and --markdown: give one of them")
    if preset and training:
        raise SpecError("--preset and --training: give one of them")
    if training:
        _bench_training(as_json, out_path)
        return
    if preset:
        _bench_preset(preset, _name_list(phases, "--phases", ("cold", "warm")), limit, cache_dir, as_json, out_path)
        return
    given = [flag for flag, value in (("--limit", limit), ("--cache-dir", cache_dir)) if value is not None]
    if phases != "cold,warm":
        given.append("--phases")
    if given:  # they shape a preset's runs: without --preset they would be ignored after minutes of timing
        raise SpecError(f"{', '.join(given)}: only with --preset NAME (the sampler benchmark has no such setting)")
    keys = tuple(case.key for case in sampler_cases())
    options = BenchOptions(
        sizes=_name_list(sizes, "--sizes", BENCH_SIZES),
        lengths=_int_list(lengths, "--lengths", bounds.SEQUENCE, minimum=2),
        batches=_int_list(batches, "--batch", bounds.BATCH),
        runs=runs,
        threads=threads or available_cores(),
        samplers=_name_list(sampler_labels, "--samplers", keys) if sampler_labels else keys,
        metrics=_name_list(metric_names, "--metrics", METRIC_NAMES),
        startup=not no_startup,
        scaling=not no_scaling,
    )
    if max(options.lengths) > 1022:
        raise SpecError(f"--lengths: at most 1022 tokens, got {max(options.lengths)}")
    out_file = _check_out(out_path)
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("[bold]bench"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.description}"), console=Console(stderr=True), transient=True) as bars:
        task = bars.add_task("starting", total=None)
        report = run_bench(options, progress=lambda what, done, total: bars.update(task, description=what,
                                                                                    completed=done, total=total))
    _write_out(out_file, report)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    from mlmh.bench.render import render, report_markdown

    if as_markdown:
        click.echo(report_markdown(report), nl=False)
        return
    render(report, Console())


def _bench_training(as_json: bool, out_path: str | None) -> None:
    """``--training``: tokens per CPU-second of each kind's training steps, float32 against bf16 autocast."""
    from rich.console import Console
    from rich.table import Table

    from mlmh.bench.render import number_text
    from mlmh.bench.training import run_training_bench

    out_file = _check_out(out_path)
    console = Console(stderr=True)
    report = run_training_bench(progress=lambda what, done, total: console.print(f"bench: training {what} ({done + 1}/{total})"))
    _write_out(out_file, report)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    out = Console()
    machine = report["machine"]
    out.print(f"{machine['cpu']}, {machine['kernels']}; bf16 units: {'yes' if report['bf16_units'] else 'no (emulated)'}; "
              f"reference workload ({machine['reference_workload']}): {machine['reference_cpu_seconds']} CPU-s")
    table = Table(title="training steps: tokens per CPU-second (one thread)")
    for column in ("start", "kind", "float32", "bf16", "bf16 / float32"):
        table.add_column(column, justify="left" if column in ("start", "kind") else "right")
    for row in report["training"]:
        rate = row["tokens_per_cpu_second"]
        table.add_row(row["start"], row["kind"], number_text(rate["float32"], 4), number_text(rate["bf16"], 4),
                      number_text(row["bf16_gain"], 3))
    out.print(table)
    out.print(report["method"])


def _bench_preset(preset: str, phases: tuple[str, ...], limit: str | None, cache_dir: str | None, as_json: bool,
                  out_path: str | None) -> None:
    """``--preset``: cold and warm runs of a preset, CPU seconds per stage, and which goal falls short."""
    from rich.console import Console
    from rich.table import Table

    from mlmh.bench.preset import goal_rows, run_preset_bench
    from mlmh.bench.render import number_text, verdict_text
    from mlmh.config.presets import parse_limit

    from mlmh import api

    if not phases:
        raise SpecError("--phases: give cold, warm or both")
    # a bad preset, limit or output path is refused here, before minutes of runs
    api.plan(preset, {"limit": parse_limit(limit, "--limit")} if limit is not None else None)
    out_file = _check_out(out_path)
    console = Console(stderr=True)
    report = run_preset_bench(preset, phases=phases, limit=limit, cache=Path(cache_dir) if cache_dir else None,
                              progress=lambda what, done, total: console.print(f"bench: {what} run ({done + 1}/{total})"))
    report["goal_rows"] = goal_rows(report)
    _write_out(out_file, report)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    stages = Table(title=f"mlmh bench --preset {preset}: CPU seconds (user + system) per stage")
    stages.add_column("stage", style="bold")
    for phase in report["phases"]:
        stages.add_column(f"{phase} CPU s", justify="right")
        stages.add_column(f"{phase} wall s", justify="right")
    names = list(dict.fromkeys(name for m in report["phases"].values() for name in m["stages"]))
    for name in names + ["outside stages", "whole process"]:
        cells = []
        for measured in report["phases"].values():
            if name == "whole process":
                cells += [number_text(measured["cpu_seconds"], 4), number_text(measured["wall_seconds"], 4)]
            elif name == "outside stages":
                cells += [number_text(measured["outside_stages_cpu"], 4), ""]
            else:
                stage = measured["stages"].get(name, {})
                cells += [number_text(stage.get("cpu"), 4), number_text(stage.get("wall"), 4)]
        stages.add_row(name, *cells)
    goals = Table(title="goals")
    for column in ("figure", "value", "goal", "result", "detail"):
        goals.add_column(column)
    for row in report["goal_rows"]:
        goals.add_row(row["name"], number_text(row["value"], 4), row["goal"], verdict_text(row), row["detail"])
    out = Console()
    machine = report["machine"]
    out.print(f"{machine['cpu']}; reference workload ({machine['reference_workload']}): "
              f"{machine['reference_cpu_seconds']} CPU-s")
    out.print(stages)
    out.print(goals)
    trained = {spec: rate for phase, measured in report["phases"].items() if phase == "cold"
               for spec, rate in measured.get("training", {}).items()}
    if trained:
        rates = Table(title="training, cold run: tokens per CPU-second")
        for column in ("model", "objective", "tokens", "CPU s", "tokens / CPU s"):
            rates.add_column(column, justify="left" if column in ("model", "objective") else "right")
        for spec, rate in trained.items():
            rates.add_row(spec, str(rate["objective"]), f"{rate['tokens']:,}", number_text(rate["cpu_seconds"], 4),
                          number_text(rate["tokens_per_cpu_second"], 4))
        out.print(rates)
    short = [row["name"] for row in report["goal_rows"] if row["passed"] is False]
    if short:
        out.print(f"[red]falls short of its goal: {', '.join(short)}[/]")
