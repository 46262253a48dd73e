"""report.md and plots from a results.json: tables, plain-words findings, PNG figures.

Everything here reads only the results dict, so ``mlmh report RUN_DIR`` rebuilds the same report
from a finished (or copied) run without any model or data.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterable

from mlmh.errors import SpecError

#: the metrics the comparison tables lead with, when a run has them
MAIN_METRICS = ("bleu", "rouge1", "rouge2", "rougeL", "meteor", "bertscore_f1")
KIND_LABEL = {"mlm": "MLM", "clm": "CLM", "seq2seq": "seq2seq"}


def load_results(run_dir: str | Path) -> dict[str, Any]:
    path = Path(run_dir)
    if path.is_dir():
        path = path / "results.json"
    if not path.is_file():
        raise SpecError(f"{path} does not exist: pass a run directory written by mlmh eval")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: not valid JSON ({exc})") from None


def metric_names(results: dict[str, Any]) -> list[str]:
    names: dict[str, None] = {}
    for row in results.get("conditions", []):
        for name in row.get("metrics", {}):
            names.setdefault(name)
    return list(names)


def main_metrics(results: dict[str, Any], limit: int = 6) -> list[str]:
    """The metrics to show first: the paper's ones when present, else the first few the run has."""
    names = metric_names(results)
    main = [m for m in MAIN_METRICS if m in names]
    return main or names[:limit]


def higher_is_better(results: dict[str, Any], metric: str) -> bool:
    for row in results.get("conditions", []):
        entry = row.get("metrics", {}).get(metric)
        if entry is not None:
            return bool(entry.get("higher_is_better", True))
    return True


def best_conditions(results: dict[str, Any], metric: str) -> set[str]:
    """Ids of the condition(s) with the best value of ``metric`` (ties all win)."""
    values = {row["id"]: _value(row, metric) for row in results.get("conditions", [])}
    values = {k: v for k, v in values.items() if v is not None}
    if not values:
        return set()
    best = (max if higher_is_better(results, metric) else min)(values.values())
    return {k for k, v in values.items() if v == best}


def format_score(entry: dict[str, Any] | None, with_ci: bool = True) -> str:
    if not entry or entry.get("value") is None:
        return "n/a"
    text = _num(entry["value"])
    if with_ci and entry.get("ci_low") is not None and entry.get("ci_high") is not None:
        text += f" [{_num(entry['ci_low'])}, {_num(entry['ci_high'])}]"
    return text


def _num(value: float) -> str:
    value = float(value)
    return f"{value:.2f}" if abs(value) >= 10 else f"{value:.3f}"


def _value(row: dict[str, Any], metric: str) -> float | None:
    entry = row.get("metrics", {}).get(metric)
    return None if not entry else entry.get("value")


def overlap(a: dict[str, Any], b: dict[str, Any]) -> bool | None:
    """Whether two CIs overlap; None when either has no CI."""
    if None in (a.get("ci_low"), a.get("ci_high"), b.get("ci_low"), b.get("ci_high")):
        return None
    return not (a["ci_high"] < b["ci_low"] or b["ci_high"] < a["ci_low"])


# -- findings ---------------------------------------------------------------------------------------
def kind_comparison(results: dict[str, Any], metric: str, kind_a: str = "mlm", kind_b: str = "clm") -> list[dict[str, Any]]:
    """Per masking and seed: the best ``kind_a`` condition against the best ``kind_b`` condition on ``metric``."""
    better_high = higher_is_better(results, metric)
    groups: dict[tuple[str, int], dict[str, dict[str, Any]]] = defaultdict(dict)
    for row in results.get("conditions", []):
        if _value(row, metric) is None or row["model_kind"] not in (kind_a, kind_b):
            continue
        slot = groups[(row["masking"], row["seed"])]
        best = slot.get(row["model_kind"])
        value = _value(row, metric)
        if best is None or (value > _value(best, metric) if better_high else value < _value(best, metric)):
            slot[row["model_kind"]] = row
    out = []
    for (masking, seed), slot in groups.items():
        if kind_a not in slot or kind_b not in slot:
            continue
        a, b = slot[kind_a]["metrics"][metric], slot[kind_b]["metrics"][metric]
        a_wins = a["value"] > b["value"] if better_high else a["value"] < b["value"]
        winner = kind_a if a_wins else kind_b if a["value"] != b["value"] else None
        out.append({"masking": masking, "seed": seed, "a": slot[kind_a], "b": slot[kind_b], "winner": winner,
                    "overlapping": overlap(a, b)})
    return out


def kind_findings(results: dict[str, Any], kind_a: str = "mlm", kind_b: str = "clm") -> list[str]:
    """One plain sentence per main metric: which kind wins in how many maskings, and how surely."""
    lines = []
    la, lb = KIND_LABEL.get(kind_a, kind_a), KIND_LABEL.get(kind_b, kind_b)
    for metric in main_metrics(results):
        cells = kind_comparison(results, metric, kind_a, kind_b)
        if not cells:
            continue
        wins_a = [c for c in cells if c["winner"] == kind_a]
        wins_b = [c for c in cells if c["winner"] == kind_b]
        sure_a = sum(1 for c in wins_a if c["overlapping"] is False)
        sure_b = sum(1 for c in wins_b if c["overlapping"] is False)
        n = len(cells)
        if len(wins_a) > len(wins_b):
            verdict = f"{la} beats {lb}"
        elif len(wins_b) > len(wins_a):
            verdict = f"{lb} beats {la}"
        else:
            verdict = f"{la} and {lb} tie"
        detail = (f"{la} higher in {len(wins_a)} of {n} masking settings ({sure_a} with non-overlapping CIs), "
                  f"{lb} higher in {len(wins_b)} ({sure_b} with non-overlapping CIs)")
        if sure_a == 0 and sure_b == 0:
            detail += "; overlapping CIs everywhere, so no difference is established"
        if not higher_is_better(results, metric):
            detail += " (lower is better)"
        lines.append(f"**{metric}**: {verdict} — {detail}.")
    return lines


def ratio_trends(results: dict[str, Any]) -> list[str]:
    """How each main metric moves with the random masking ratio, per model and sampler (Spearman rho)."""
    from scipy.stats import spearmanr

    series = ratio_series(results)
    lines = []
    for metric in main_metrics(results):
        parts = []
        for (model, sampler), points in sorted(series.get(metric, {}).items()):
            if len(points) < 3:
                continue
            ratios, values = zip(*sorted(points))
            if len(set(values)) < 2:
                parts.append(f"{model} / {sampler}: flat")
                continue
            rho = float(spearmanr(ratios, values).statistic)
            direction = "falls" if rho < -0.5 else "rises" if rho > 0.5 else "shows no clear trend"
            parts.append(f"{model} / {sampler} {direction} ({_num(values[0])} at {ratios[0]} -> "
                         f"{_num(values[-1])} at {ratios[-1]}, Spearman rho {rho:+.2f})")
        if parts:
            lines.append(f"**{metric}** as the masking ratio grows: " + "; ".join(parts) + ".")
    return lines


def ratio_series(results: dict[str, Any]) -> dict[str, dict[tuple[str, str], list[tuple[float, float]]]]:
    """metric -> (model, sampler [/ masking family]) -> [(ratio, value)] over conditions whose masking has a ratio."""
    out: dict[str, dict[tuple[str, str], list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in results.get("conditions", []):
        if row.get("masking_ratio") is None:
            continue
        family = row["masking"].split(":")[0]
        label = row["sampler"] if family == "random" else f"{row['sampler']} / {family}"
        for metric, entry in row.get("metrics", {}).items():
            if entry.get("value") is not None:
                out[metric][(row["model"], label)].append((float(row["masking_ratio"]), float(entry["value"])))
    return out


def correlation_findings(results: dict[str, Any]) -> list[str]:
    """One line per main quality metric and task (its first score; the table has them all): rho, CI, verdict."""
    main = set(main_metrics(results))
    first_score: dict[str, str] = {}
    for item in results.get("correlations", []):
        first_score.setdefault(item.get("task"), item.get("score"))
    lines = []
    for item in results.get("correlations", []):
        if item.get("metric") in main and first_score.get(item.get("task")) == item.get("score"):
            lines.append(f"{item['metric']} vs {item.get('task')} {item.get('score')}: {item.get('summary', '')}")
    return lines


def correlation_table(results: dict[str, Any]) -> list[str]:
    rows = []
    for item in results.get("correlations", []):
        ci = item.get("spearman_ci")
        rows.append([str(item.get("metric")), f"{item.get('task')} {item.get('score')}", str(item.get("n")),
                     "n/a" if item.get("spearman") is None else f"{item['spearman']:+.2f}",
                     "n/a" if not ci else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]",
                     "n/a" if item.get("pearson") is None else f"{item['pearson']:+.2f}"])
    return _table(["metric", "downstream score", "n", "Spearman rho", "95% CI", "Pearson r"], rows) if rows else []


# -- markdown ----------------------------------------------------------------------------------------
def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def quality_table(results: dict[str, Any], metrics: list[str]) -> list[str]:
    best = {m: best_conditions(results, m) for m in metrics}
    rows = []
    for row in results.get("conditions", []):
        cells = [row["model"], row["masking"], row["sampler"], str(row["seed"])]
        for m in metrics:
            text = format_score(row.get("metrics", {}).get(m))
            cells.append(f"**{text}**" if row["id"] in best[m] else text)
        rows.append(cells)
    arrows = [f"{m} {'↑' if higher_is_better(results, m) else '↓'}" for m in metrics]
    return _table(["model", "masking", "sampler", "seed", *arrows], rows)


def downstream_table(results: dict[str, Any]) -> list[str]:
    columns: dict[tuple[str, str], None] = {}
    for scores in [results.get("baseline", {})] + [r.get("downstream", {}) for r in results.get("conditions", [])]:
        for task, values in scores.items():
            for metric in values:
                columns.setdefault((task, metric))
    if not columns:
        return []
    cols = list(columns)
    rows = [["real train split (baseline)", "", ""] + [_cell(results.get("baseline", {}), c) for c in cols]]
    for row in results.get("conditions", []):
        rows.append([row["model"], row["masking"], row["sampler"]] + [_cell(row.get("downstream", {}), c) for c in cols])
    return _table(["train data", "masking", "sampler", *[f"{t} {m}" for t, m in cols]], rows)


def _cell(scores: dict[str, dict[str, float]], column: tuple[str, str]) -> str:
    value = scores.get(column[0], {}).get(column[1])
    return "n/a" if value is None else _num(value)


def human_section(results: dict[str, Any]) -> list[str]:
    human = results.get("human")
    if not human:
        return []
    lines = ["## Human evaluation", "", f"{human.get('n_raters', '?')} rater(s), {human.get('n_items', '?')} items, "
             "ratings 1-5.", ""]
    criteria = human.get("criteria", [])
    rows = []
    for condition, scores in human.get("conditions", {}).items():
        rows.append([condition] + [format_score(scores.get(c)) for c in criteria])
    lines += _table(["condition", *criteria], rows)
    agreement = human.get("agreement", {})
    if agreement:
        lines += ["", "Inter-rater agreement (Krippendorff's alpha, ordinal): " + ", ".join(
            f"{c}: {'n/a' if a is None else f'{a:.3f}'}" for c, a in agreement.items()) + "."]
    return lines + [""]


def render_markdown(results: dict[str, Any], plots: list[str]) -> str:
    config = results.get("config", {})
    dataset = results.get("dataset", {})
    metrics = main_metrics(results)
    rest = [m for m in metric_names(results) if m not in metrics]
    lines = [f"# mlmh run {results.get('run_id', '')}", "",
             f"Preset **{config.get('preset', '?')}** on dataset **{dataset.get('name', config.get('dataset', '?'))}** "
             f"({dataset.get('source', '')}): {results.get('n_samples', '?')} documents per condition, "
             f"{len(results.get('conditions', []))} conditions, seeds {config.get('seeds', [])}.", ""]
    lines += ["## Findings", ""]
    findings = kind_findings(results, "mlm", "clm")
    if findings:
        lines += ["Does MLM beat CLM here? Best MLM sampler against the CLM, per masking setting:", ""]
        lines += [f"- {f}" for f in findings]
    else:
        lines += ["- No masking setting has both an MLM and a CLM condition, so MLM and CLM are not compared."]
    seq = kind_findings(results, "mlm", "seq2seq")
    if seq:
        lines += ["", "MLM against seq2seq:", ""] + [f"- {f}" for f in seq]
    trends = ratio_trends(results)
    lines += ["", "Masking-ratio trend:", ""]
    lines += [f"- {t}" for t in trends] or ["- Fewer than three masking ratios in this run: no trend to report."]
    lines += ["", "Quality vs downstream usefulness:", ""]
    lines += [f"- {c}" for c in correlation_findings(results)] or ["- No correlation computed (no downstream scores)."]
    lines += ["", "## Generation quality", "", "Bold: best per column. Brackets: bootstrap 95% CI.", ""]
    lines += quality_table(results, metrics)
    if rest:
        lines += ["", "### More metrics", ""] + quality_table(results, rest)
    down = downstream_table(results)
    if down:
        lines += ["", "## Downstream tasks", "", "Trained on the (synthetic) train documents, tested on the real test split.", ""]
        lines += down
    correlations = correlation_table(results)
    if correlations:
        lines += ["", "## Quality vs downstream correlations", "", "Across conditions; bootstrap CIs over conditions.", ""]
        lines += correlations
    lines += [""] + human_section(results)
    if plots:
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots] + [""]
    notes = results.get("notes", [])
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    versions = results.get("versions", {})
    lines += ["## Versions", "", ", ".join(f"{k} {v}" for k, v in versions.items() if isinstance(v, str)), ""]
    return "\n".join(lines)


def write_report(results: dict[str, Any], out_dir: str | Path) -> Path:
    """Write report.md and the plots into ``out_dir``; returns the report's path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    from mlmh.plots import write_plots  # plots reads this module's metric helpers

    plots = write_plots(results, out)
    path = out / "report.md"
    path.write_text(render_markdown(results, plots), encoding="utf-8")
    return path
