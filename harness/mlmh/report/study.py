"""study.md and the terminal's lines: a study's answer per claim across datasets, then the paper's tables with one
column per dataset. Every name from a run or a corpus goes through :func:`mlmh.machine.escape.markdown_cell`."""

from __future__ import annotations

from collections import defaultdict

from mlmh.findings.answer import precise
from mlmh.machine.escape import markdown_cell
from mlmh.types.study import StudyCell, StudyResults
from mlmh.findings.study import POOLING


def render_study(study: StudyResults) -> str:
    """The study's report as markdown."""
    labels = [d.label for d in study.datasets]
    out = [f"# Study: preset {markdown_cell(study.preset)} on {len(labels)} datasets", ""]
    out += ["| dataset | data | unseen documents | run folder | wall time |", "|---|---|---|---|---|"]
    for d in study.datasets:
        out.append(f"| {markdown_cell(d.label)} | {markdown_cell(d.data or 'bundled sample')} | {d.documents} | "
                   f"{markdown_cell(d.run)} | {d.seconds:.0f} s |")
    for label, why in study.failed.items():
        out.append(f"| {markdown_cell(label)} | failed: {markdown_cell(why)} | | | |")
    out += ["", "## Answer across datasets", "",
            "Each dataset's verdict is its run's (report.md in its folder says how it was reached); \"holds on every "
            "dataset\" needs every one. Claims (1) and (2) are also pooled, one estimate per dataset free of any "
            f"choice among arms, {POOLING}.", ""]
    out += ["| claim | " + " | ".join(markdown_cell(x) for x in labels) + " | across datasets | pooled (tau^2, I^2) |",
            "|---|" + "---|" * len(labels) + "---|---|"]
    for claim in study.claims:
        cells = [claim.datasets[x].verdict if x in claim.datasets else "" for x in labels]
        pooled = claim.pooled
        shown = (f"{precise(pooled['value'], pooled['low'], pooled['high'])} ({pooled['tau2']:.3g}, "
                 f"{pooled['i2']:.0%})" if pooled else "")
        out.append(f"| {markdown_cell(claim.text)} | " + " | ".join(cells) + f" | {claim.across} | {shown} |")
    out += [""] + [f"- {markdown_cell(claim.statement)}" for claim in study.claims]
    out += _table("Generation quality on unseen documents", study.quality, labels)
    out += _table("Downstream: the dataset's task trained on real or synthetic documents, tested on real ones",
                  study.downstream, labels)
    return "\n".join(out) + "\n"


def _table(title: str, cells: list[StudyCell], labels: list[str]) -> list[str]:
    """One row per ``row`` name, one column per dataset; each cell the value with its CI and unit."""
    if not cells:
        return ["", f"## {title}", "", "No dataset measured it."]
    rows: dict[str, dict[str, list[StudyCell]]] = defaultdict(lambda: defaultdict(list))
    for cell in cells:
        rows[cell.row][cell.dataset].append(cell)
    tasks = {c.dataset: c.task for c in cells if c.task}
    header = [markdown_cell(x + (f" ({tasks[x]})" if x in tasks else "")) for x in labels]
    out = ["", f"## {title}", "", "| | " + " | ".join(header) + " |",
           "|---|" + "---|" * len(labels)]
    for name, by in rows.items():
        shown = ["; ".join(_cell(c) for c in by[x]) if x in by else "" for x in labels]
        out.append(f"| {markdown_cell(name)} | " + " | ".join(shown) + " |")
    return out


def _cell(cell: StudyCell) -> str:
    """A figure (no sign: a score, not a difference) with its CI where it has one, and its unit."""
    if cell.value is None:
        return "-"
    return markdown_cell(f"{precise(cell.value, cell.low, cell.high).replace('+', '')} {cell.unit}")


def study_lines(study: StudyResults) -> list[str]:
    """The study's answer in a few lines for a terminal: one per claim, its verdict across datasets and per dataset."""
    return [f"{claim.text}: {claim.across} (" + ", ".join(f"{k}: {v.verdict}" for k, v in claim.datasets.items())
            + ")" for claim in study.claims]
