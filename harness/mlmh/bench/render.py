"""A bench report for people: the terminal tables of ``mlmh bench`` and the Markdown of ``--markdown``
(the form docs/PERFORMANCE.md keeps)."""

from __future__ import annotations

from typing import Any, Sequence


def number_text(value: Any, digits: int = 3) -> str:
    """A figure as the tables show it: ``digits`` significant digits, "-" when missing."""
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def interval_text(ci: Sequence[float | None] | None) -> str:
    """`` [low, high]`` of a 95 % interval, or nothing when there is none."""
    return f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci and None not in ci else ""


def verdict_text(row: dict[str, Any]) -> str:
    """A goal row's result: pass, FAIL or report, and "(CI spans the goal)" where this run cannot decide it."""
    text = {True: "pass", False: "FAIL", None: "report"}[row["passed"]]
    return text + (" (CI spans the goal)" if row.get("settled") is False else "")


def report_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (docs/PERFORMANCE.md keeps the latest real run in this form)."""
    lines: list[str] = []
    machine = report["machine"]
    lines.append(f"{machine.get('cpu', 'CPU not recorded')}, {machine.get('kernels', 'kernels not recorded')}; reference workload ({machine.get('reference_workload', '-')}) "
                 f"{machine.get('reference_cpu_seconds', '-')} CPU-s. "
                 f"{machine['threads']} torch threads on {machine['cores']} cores, torch {machine['torch']}; load average "
                 f"{machine['load_average_before'][0]:.1f} before, {machine['load_average_after'][0]:.1f} after; "
                 f"{report['method']['timed_runs']} timed runs after 1 warm-up (sampler cells: "
                 f"{report['method'].get('sampler_cells', 'as many')}); whole bench {report['wall_seconds']:.0f} s.")
    lines += ["", "| figure | value | goal | result | detail |", "|---|---:|---|---|---|"]
    for row in report["goals"]:
        verdict = verdict_text(row).replace("FAIL", "**FAIL**", 1)
        lines.append(f"| {row['name']} | {number_text(row['value'])} | {row['goal']} | {verdict} | {row['detail']} |")
    for size, block in report["sizes"].items():
        params = ", ".join(f"{k} {v / 1e6:.2f}M" for k, v in block["parameters"].items())
        lines += ["", f"Samplers, size {size} ({params} parameters):", "",
                  "| sampler | L | batch | passes (harness/bare) | harness s | bare s | overhead [95% CI] | CPU overhead | "
                  "lean bare / bare | harness / lean bare | tokens/s | samples/s | peak MiB |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c in block["cells"]:
            lines.append(f"| {c['sampler']} | {c['length']} | {c['batch']} | {c['forward_passes']}/{c['bare_forward_passes']} | "
                         f"{number_text(c['harness_seconds'])} | {number_text(c['bare_seconds'])} | {number_text(c['overhead'])}"
                         f"{interval_text(c.get('overhead_ci'))} | "
                         f"{number_text(c.get('overhead_cpu'))} | {number_text(c.get('lean_cost'))} | {number_text(c.get('overhead_over_lean'))} | "
                         f"{number_text(c['tokens_per_s'])} | {number_text(c['samples_per_s'])} | {number_text(c['peak_mib'])} |")
    if report.get("metrics"):
        lines += ["", "| metric | pairs | seconds | pairs/s | pairs/s, references cached | encoder alone | model tokens/CPU-s | note |",
                  "|---|---:|---:|---:|---:|---:|---:|---|"]
        for name, m in report["metrics"].items():
            lines.append(f"| {name} | {number_text(m.get('pairs'))} | {number_text(m.get('seconds'))} | {number_text(m.get('pairs_per_s'))} | "
                         f"{number_text(m.get('pairs_per_s_references_cached'))} | {number_text(m.get('encoder_pairs_per_s'))} | "
                         f"{number_text(model_tokens_per_cpu_s(m))} | {metric_note(m)} |")
    return "\n".join(lines) + "\n"


def model_tokens_per_cpu_s(figures: dict[str, Any]) -> float | None:
    """Tokens per CPU-second of the model a metric scores with: BERTScore's bare encoder, gen-ppl's judge."""
    return figures.get("encoder_tokens_per_cpu_s", figures.get("tokens_per_cpu_s"))


def metric_note(figures: dict[str, Any]) -> str:
    """What else a metric row says: its error, why it is off, or the judge's one-time load."""
    if figures.get("error") or figures.get("off"):
        return figures.get("error") or f"off: {figures['off']}"
    if "load_seconds" in figures:
        how = f" ({figures['precision']}, {figures['threads']} thread(s))" if figures.get("precision") else ""
        return (f"judge{how}: {figures['tokens']} tokens cold; loaded in {figures['load_seconds']:.3g} s "
                f"({figures['load_cpu_seconds']:.3g} CPU-s)")
    return ""


def render(report: dict[str, Any], console: Any) -> None:
    """The human view: a sampler table per size, then the goals with pass/fail, then metric throughput."""
    from rich.markup import escape
    from rich.table import Table

    for size, block in report["sizes"].items():
        params = ", ".join(f"{k} {v / 1e6:.2f}M" for k, v in block["parameters"].items())
        table = Table(title=f"samplers ({size}: {params}) medians of >= {report['method']['timed_runs']} runs; "
                            "passes = harness/bare",
                      caption="harness s is the latency of one batch of B; lean = the lean bare loop (output layer "
                              "only where read, exact greedy choice) / bare; ovh/lean = harness / lean")
        table.add_column("sampler", no_wrap=True)
        for column in ("L", "B", "passes", "harness s", "bare s", "overhead", "CPU ovh", "lean", "ovh/lean",
                       "tok/s", "samples/s", "MiB"):
            table.add_column(column, justify="right")
        for c in block["cells"]:
            passes_style = "" if c["forward_passes"] == c["bare_forward_passes"] else "[yellow]"
            table.add_row(escape(c["sampler"]), str(c["length"]), str(c["batch"]),
                          f"{passes_style}{c['forward_passes']}/{c['bare_forward_passes']}", number_text(c["harness_seconds"]),
                          number_text(c["bare_seconds"]), number_text(c["overhead"]) + interval_text(c.get("overhead_ci")),
                          number_text(c.get("overhead_cpu")),
                          number_text(c.get("lean_cost")), number_text(c.get("overhead_over_lean")),
                          number_text(c["tokens_per_s"]), number_text(c["samples_per_s"]), number_text(c["peak_mib"], 4))
        console.print(table)
    goals = Table(title="goals")
    for column in ("figure", "value", "goal", "result", "detail"):
        goals.add_column(column, justify="right" if column in ("value",) else "left")
    for row in report["goals"]:
        style = {True: "[green]", False: "[red]", None: "[dim]"}[row["passed"]]
        goals.add_row(escape(row["name"]), number_text(row["value"]), row["goal"], style + escape(verdict_text(row)),
                      escape(row["detail"]))
    console.print(goals)
    if report.get("metrics"):
        metrics = Table(title="metric throughput")
        for column in ("metric", "pairs", "seconds", "pairs/s", "pairs/s, references cached", "encoder alone",
                       "model tokens/CPU-s", "note"):
            metrics.add_column(column)
        for name, m in report["metrics"].items():
            metrics.add_row(name, number_text(m.get("pairs")), number_text(m.get("seconds")), number_text(m.get("pairs_per_s")),
                            number_text(m.get("pairs_per_s_references_cached")), number_text(m.get("encoder_pairs_per_s")),
                            number_text(model_tokens_per_cpu_s(m)), escape(metric_note(m)))
        console.print(metrics)
    if "scaling" in report and "error" in report["scaling"]:
        console.print(f"[red]scaling could not run: {escape(report['scaling']['error'])}")
    machine = report["machine"]
    console.print(f"[dim]{machine['threads']} threads on {machine['cores']} cores, load average "
                  f"{machine['load_average_before'][0]:.1f} -> {machine['load_average_after'][0]:.1f}, "
                  f"peak memory by {machine['peak_memory_method']}, {report['wall_seconds']:.0f} s in all")
