"""The goals of ``mlmh bench`` and the ratios of a size's cells judged against them."""

from __future__ import annotations

from typing import Any, Sequence

from mlmh.bench.ratios import batching_ratio, cell_ci, crossover_batch, median, safe_ratio, speedup_ratio
from mlmh.bench.render import interval_text
from mlmh.bench.samplers import SPEEDUP_LENGTH, causal_case, masked_case


#: The issue's goals: (comparison, threshold); None = reported only. Overhead is judged on the worst cell
#: of each sampler, per model size ("overhead tiny", ...): the fixed per-item cost weighs most on tiny models.
GOALS: dict[str, tuple[str, float] | None] = {
    "overhead tiny": ("<=", 1.20),
    "overhead small": ("<=", 1.10),
    "overhead base": ("<=", 1.10),
    "speedup": None,
    "speedup kept": (">=", 0.95),
    "batching": (">=", 0.90),
    "crossover": None,
    "startup": ("<=", 0.15),
    "scaling": ("<=", 2.2),
    "bertscore": (">=", 200.0),
}


def meets(name: str, value: float | None) -> bool | None:
    """Whether ``value`` meets goal ``name`` (None when there is no goal or no value)."""
    goal = GOALS.get(name)
    if goal is None or value is None:
        return None
    op, threshold = goal
    return value <= threshold if op == "<=" else value >= threshold


def _cell(cells: Sequence[dict], label: str, length: int, batch: int) -> dict | None:
    for cell in cells:
        if cell["sampler"] == label and cell["length"] == length and cell["batch"] == batch:
            return cell
    return None


def summarize_overhead(cells: Sequence[dict]) -> dict[str, dict[str, Any]]:
    """Per sampler: the median overhead over its cells (lengths x batches) and its worst cell, with what
    the lean bare loop costs in that cell (``worst_lean_cost``) and the harness over it; 95 %
    intervals of both (``worst_ci``, ``worst_lean_ci``)."""
    out: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(c["sampler"] for c in cells):
        measured = [c for c in cells if c["sampler"] == label and c["overhead"] is not None]
        cpu = [c["overhead_cpu"] for c in measured if c.get("overhead_cpu") is not None]
        if measured:
            worst = max(measured, key=lambda c: c["overhead"])
            out[label] = {"median": median([c["overhead"] for c in measured]), "worst": worst["overhead"],
                          "cells": len(measured), "median_cpu": median(cpu) if cpu else None,
                          "worst_cell": {"length": worst["length"], "batch": worst["batch"]},
                          "worst_lean_cost": worst.get("lean_cost"),
                          "worst_over_lean": worst.get("overhead_over_lean"),
                          "worst_ci": worst.get("overhead_ci"), "worst_lean_ci": worst.get("lean_cost_ci")}
    return out


def summarize_batching(cells: Sequence[dict], small: int, large: int, side: str = "harness_seconds",
                       ci: bool = False) -> dict[str, dict[int, Any]]:
    """Per sampler and length: the share of the bare model's batching gain (small -> large batch) kept
    by ``side`` (the harness, or ``bare_lean_seconds``: the lean bare loop); with
    ``ci``, its 95 % interval instead."""
    out: dict[str, dict[int, Any]] = {}
    runs_side = "harness" if side == "harness_seconds" else "lean"

    def kept(side_small: float, bare_small: float, side_large: float, bare_large: float) -> float | None:
        return batching_ratio(side_small, side_large, bare_small, bare_large, small, large)

    for cell in cells:
        if cell["batch"] != large:
            continue
        base = _cell(cells, cell["sampler"], cell["length"], small)
        if base is None or base.get(side) is None or cell.get(side) is None:
            continue
        out.setdefault(cell["sampler"], {})[cell["length"]] = (
            cell_ci(kept, (base, runs_side), (base, "bare"), (cell, runs_side), (cell, "bare")) if ci
            else kept(base[side], base["bare_seconds"], cell[side], cell["bare_seconds"]))
    return out


def summarize_crossover(cells: Sequence[dict], length: int) -> dict[str, Any]:
    """Samples/s of clm-infill (cache) and mask-predict T=4 per batch, and where the causal LM overtakes."""
    rates: dict[str, dict[str, dict[int, float]]] = {"harness": {}, "bare": {}}
    causal, masked = causal_case(), masked_case()
    for side, key in (("harness", "samples_per_s"), ("bare", "bare_samples_per_s")):
        for label in (causal, masked):
            rates[side][label] = {c["batch"]: c[key] for c in cells if c["sampler"] == label and c["length"] == length}
    return {
        "length": length,
        "batch": crossover_batch(rates["harness"][causal], rates["harness"][masked]),
        "bare_batch": crossover_batch(rates["bare"][causal], rates["bare"][masked]),
        "samples_per_s": {label: {str(b): v for b, v in sorted(r.items())} for label, r in rates["harness"].items()},
        "bare_samples_per_s": {label: {str(b): v for b, v in sorted(r.items())} for label, r in rates["bare"].items()},
    }


def summarize_size(cells: Sequence[dict], batches: Sequence[int], speedup_length: int = SPEEDUP_LENGTH) -> dict[str, Any]:
    """The issue's ratios for one model size, from its measured cells."""
    small, large = min(batches), max(batches)
    masked = _cell(cells, masked_case(), speedup_length, 1)
    causal = _cell(cells, causal_case(), speedup_length, 1)
    speedup = speedup_ratio(causal["harness_seconds"], masked["harness_seconds"]) if masked and causal else None
    bare_speedup = speedup_ratio(causal["bare_seconds"], masked["bare_seconds"]) if masked and causal else None

    def speedup_kept(causal_harness: float, causal_bare: float, masked_harness: float, masked_bare: float) -> float | None:
        return safe_ratio(speedup_ratio(causal_harness, masked_harness), speedup_ratio(causal_bare, masked_bare))

    overhead = summarize_overhead(cells)
    batching = summarize_batching(cells, small, large) if large > small else {}
    lean_batching = summarize_batching(cells, small, large, "bare_lean_seconds") if large > small else {}
    batching_ci = summarize_batching(cells, small, large, ci=True) if large > small else {}
    worst_batching = [v for per in batching.values() for v in per.values() if v is not None]
    return {
        "overhead": overhead,
        "overhead_worst_sampler": max((v["median"] for v in overhead.values()), default=None),
        "speedup": {"value": speedup, "bare": bare_speedup, "length": speedup_length,
                    "masked_tokens": masked["masked_tokens"] if masked else None,
                    "kept_ci": cell_ci(speedup_kept, (causal, "harness"), (causal, "bare"), (masked, "harness"),
                                       (masked, "bare"))},
        "batching": {"small_batch": small, "large_batch": large,
                     "by_sampler": _by_length_key(batching), "lean_by_sampler": _by_length_key(lean_batching),
                     "ci_by_sampler": _by_length_key(batching_ci),
                     "worst": min(worst_batching) if worst_batching else None},
        "crossover": summarize_crossover(cells, speedup_length),
    }


def _by_length_key(per_sampler: dict[str, dict[int, Any]]) -> dict[str, dict[str, Any]]:
    """``{sampler: {length: value}}`` with the lengths as strings, as JSON keeps them."""
    return {label: {str(length): value for length, value in per.items()} for label, per in per_sampler.items()}


def goal_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per goal (per size for the model ratios): name, value, goal text, pass/fail, and for the
    timing ratios their 95 % interval (``ci``) and whether all of it lies on one side of the goal
    (``settled``: False means this run cannot tell pass from fail)."""
    rows: list[dict[str, Any]] = []

    def add(name: str, label: str, value: float | None, detail: str = "",
            ci: Sequence[float | None] | None = None) -> None:
        goal = GOALS.get(name)
        row: dict[str, Any] = {"name": label, "ratio": name, "value": value, "goal": f"{goal[0]} {goal[1]:g}" if goal else "report",
               "passed": meets(name, value), "detail": detail}
        if ci and None not in ci:
            row["ci"] = list(ci)
            row["settled"] = meets(name, ci[0]) == meets(name, ci[1])
            row["detail"] = f"95% CI{interval_text(ci)}" + (f"; {detail}" if detail else "")
        rows.append(row)

    for size, block in report.get("sizes", {}).items():
        ratios = block["ratios"]
        for label, over in ratios["overhead"].items():
            cpu = f", CPU-time ratio {over['median_cpu']:.3g}" if over.get("median_cpu") else ""
            lean = ""
            if over.get("worst_lean_cost"):
                cell = over["worst_cell"]
                lean = (f"; worst cell (L={cell['length']}, B={cell['batch']}): lean bare "
                        f"{over['worst_lean_cost']:.3g}{interval_text(over.get('worst_lean_ci'))}, "
                        f"harness over it {over['worst_over_lean']:.3g}")
            add(f"overhead {size}", f"overhead {label} [{size}]", over["worst"],
                f"median cell {over['median']:.3g}{cpu}{lean}", over.get("worst_ci"))
        speedup = ratios["speedup"]
        add("speedup", f"speedup clm-infill/mask-predict T=4 [{size}]", speedup["value"],
            f"bare models {speedup['bare']:.3g}" if speedup["bare"] else "")
        add("speedup kept", f"speedup kept (harness/bare) [{size}]", safe_ratio(speedup["value"], speedup["bare"]),
            ci=speedup.get("kept_ci"))
        batching = ratios["batching"]
        for label, per in batching["by_sampler"].items():
            for length, value in per.items():
                lean = batching.get("lean_by_sampler", {}).get(label, {}).get(length)
                add("batching", f"batching {label} L={length} [{size}]", value,
                    f"batch {batching['small_batch']} -> {batching['large_batch']}"
                    + (f"; lean bare {lean:.3g}" if lean is not None else ""),
                    batching.get("ci_by_sampler", {}).get(label, {}).get(length))
        cross = ratios["crossover"]
        add("crossover", f"crossover batch [{size}]", cross["batch"], f"bare models: {cross['bare_batch']}")
    if "startup" in report:
        add("startup", "startup: mlmh --help (s)", report["startup"]["seconds"])
    if "scaling" in report and "ratio" in report["scaling"]:
        add("scaling", "scaling: eval 2x docs / 1x", report["scaling"]["ratio"])
    bertscore = report.get("metrics", {}).get("bertscore", {})
    if "pairs_per_s_references_cached" in bertscore:
        add("bertscore", "bertscore pairs/s, references cached", bertscore["pairs_per_s_references_cached"],
            f"cold {bertscore['pairs_per_s']:.3g}; encoder alone {bertscore['encoder_pairs_per_s']:.3g} "
            "(references cached)")
    return rows
