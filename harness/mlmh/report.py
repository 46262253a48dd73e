"""report.md and plots from a run's :class:`~mlmh.types.RunResults`: tables, plain-words findings, figures.

Everything here reads only the results, so ``mlmh report RUN_DIR`` rebuilds the same report from a
finished (or copied) run without any model or data. The comparison leads with the documents no model
trained on (``unseen``); the ``seen`` ones follow, and the report says where the two disagree.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from mlmh.findings import answer_lines
from mlmh.results import (as_results, model_record_of, best_conditions, better, format_number, format_score, higher_is_better,
                          main_metrics, metric_names, roles)
from mlmh.rundir import RunDir
from mlmh.types import ConditionResult, RunResults, Score
from mlmh.verdicts import caveats_of, memorised, never_learned, summarise

if TYPE_CHECKING:
    from mlmh.plots import FigureStore

KIND_LABEL = {"mlm": "MLM", "clm": "CLM", "seq2seq": "seq2seq"}
ROLE_LABEL = {"unseen": "unseen documents (test split: no model trained or was selected on them)",
              "seen": "seen documents (train split: the models learned from them)"}


# -- findings ---------------------------------------------------------------------------------------
def kind_comparison(results: RunResults, metric: str, kind_a: str = "mlm", kind_b: str = "clm",
                    role: str | None = None) -> list[dict[str, Any]]:
    """Per masking and seed: the best ``kind_a`` condition against the best ``kind_b`` one on ``metric``."""
    groups: dict[tuple[str, int], dict[str, ConditionResult]] = defaultdict(dict)
    for row in results.conditions:
        value = row.value(metric, role)
        if value is None or row.model_kind not in (kind_a, kind_b):
            continue
        slot = groups[(row.masking, row.seed)]
        best = slot.get(row.model_kind)
        best_value = None if best is None else best.value(metric, role)  # a kept row has a value
        if best_value is None or better(results, metric, value, best_value):
            slot[row.model_kind] = row
    out = []
    for (masking, seed), slot in groups.items():
        if kind_a not in slot or kind_b not in slot:
            continue
        a, b = slot[kind_a].quality(role)[metric], slot[kind_b].quality(role)[metric]
        winner = None if a.value == b.value else kind_a if better(results, metric, a.value, b.value) else kind_b  # type: ignore[arg-type]  # kept rows have values
        out.append({"masking": masking, "seed": seed, "a": slot[kind_a], "b": slot[kind_b], "winner": winner,
                    "overlapping": a.overlaps(b)})
    return out


def kind_verdict(results: RunResults, metric: str, kind_a: str, kind_b: str, role: str | None) -> tuple[str, str] | None:
    """(verdict, detail) of ``kind_a`` against ``kind_b`` on ``metric``; None when they are never compared.

    The verdict counts only wins with non-overlapping CIs, so a difference inside the noise reads as a tie.
    """
    cells = kind_comparison(results, metric, kind_a, kind_b, role)
    if not cells:
        return None
    la, lb = KIND_LABEL.get(kind_a, kind_a), KIND_LABEL.get(kind_b, kind_b)
    wins_a = [c for c in cells if c["winner"] == kind_a]
    wins_b = [c for c in cells if c["winner"] == kind_b]
    sure_a = sum(1 for c in wins_a if c["overlapping"] is False)
    sure_b = sum(1 for c in wins_b if c["overlapping"] is False)
    if sure_a > sure_b:
        verdict, winners = f"{la} beats {lb}", [c["a"] for c in wins_a]
    elif sure_b > sure_a:
        verdict, winners = f"{lb} beats {la}", [c["b"] for c in wins_b]
    else:
        verdict, winners = f"{la} and {lb} tie", []
    caveats = list(dict.fromkeys(c for row in winners for c in caveats_of(results, row, metric, role or results.headline)))
    if caveats:  # a model that learned nothing, or no better than a baseline, never wins
        verdict = f"{verdict.replace(' beats ', ' ahead of ')} (not comparable)"
    detail = (f"{la} higher in {len(wins_a)} of {len(cells)} masking settings ({sure_a} with non-overlapping CIs), "
              f"{lb} higher in {len(wins_b)} ({sure_b} with non-overlapping CIs)")
    if sure_a == 0 and sure_b == 0:
        detail += "; overlapping CIs everywhere, so no difference is established"
    if not higher_is_better(results, metric):
        detail += " (lower is better)"
    if caveats:
        detail += "; not comparable because " + summarise(caveats)
    return verdict, detail


def kind_findings(results: RunResults, kind_a: str = "mlm", kind_b: str = "clm", role: str | None = None) -> list[str]:
    """One plain sentence per main metric: which kind wins in how many maskings, and how surely."""
    lines = []
    for metric in main_metrics(results, role):
        found = kind_verdict(results, metric, kind_a, kind_b, role)
        if found:
            lines.append(f"**{metric}**: {found[0]} — {found[1]}.")
    return lines


def disagreements(results: RunResults, kind_a: str = "mlm", kind_b: str = "clm") -> list[str]:
    """Metrics whose MLM-vs-CLM verdict on seen documents differs from the one on unseen documents."""
    lines = []
    for metric in main_metrics(results, "unseen"):
        seen, unseen = (kind_verdict(results, metric, kind_a, kind_b, r) for r in ("seen", "unseen"))
        if seen and unseen and seen[0] != unseen[0]:
            lines.append(f"**{metric}**: on unseen documents {unseen[0]}, but on seen documents {seen[0]}. "
                         "The models trained on the seen documents, so the unseen verdict is the one that measures generation.")
    return lines


def memorization_findings(results: RunResults) -> list[str]:
    """Per model: conditions whose seen - unseen gap on the first main metric lies outside its CI."""
    metrics = main_metrics(results, "unseen")
    if not metrics:
        return []
    metric = metrics[0]
    by_model: dict[str, list[ConditionResult]] = defaultdict(list)
    for row in results.conditions:
        if row.gap.get(metric) is not None:
            by_model[row.model].append(row)
    lines = []
    for model, rows in by_model.items():
        flagged = [r for r in rows if memorised(results, r, metric)]
        worst = max(rows, key=lambda r: r.gap[metric].value or 0.0)
        g = worst.gap[metric]
        recall = _recall_pair(worst)
        if never_learned(model, model_record_of(results, model)):
            lines.append(f"**{model}** never beat the best constant predictor on held-out text: its seen - unseen "
                         f"{metric} gap (largest {format_score(g)}{recall}) is read as the unigram plateau, not as "
                         "memorization.")
        elif flagged:
            lines.append(f"**{model}** scores {metric} higher on seen than on unseen documents beyond the CI in "
                         f"{len(flagged)} of {len(rows)} conditions (largest gap {format_score(g)} in "
                         f"{worst.masking} / {worst.sampler}{recall}): flagged as memorization.")
        else:
            lines.append(f"**{model}**: no seen - unseen {metric} gap outside its CI in {len(rows)} conditions "
                         f"(largest {format_score(g)}{recall}).")
    return lines


def _recall_pair(row: ConditionResult) -> str:
    seen = row.seen.verbatim_recall if row.seen else None
    unseen = row.unseen.verbatim_recall if row.unseen else None
    if seen is None or unseen is None or seen.value is None or unseen.value is None:
        return ""
    return f"; masked words regenerated verbatim: {seen.value:.1%} seen, {unseen.value:.1%} unseen"


def filler_findings(results: RunResults) -> list[str]:
    """What the visible context alone earns: the two baselines beside the best condition, per masking."""
    role = results.headline
    metrics = main_metrics(results, role)
    if not metrics or not results.filler_word:
        return []
    lines = []
    for metric in metrics[:1] + [m for m in metrics[1:] if m.startswith(("rougeL", "bertscore_f1"))]:
        by_masking: dict[str, list[ConditionResult]] = defaultdict(list)
        for row in results.conditions:
            block = getattr(row, role)
            if block is not None and block.filler.get(metric) is not None and row.value(metric, role) is not None:
                by_masking[row.masking].append(row)
        for masking, rows in by_masking.items():
            block = getattr(rows[0], role)
            sign = 1 if higher_is_better(results, metric) else -1
            best = max(rows, key=lambda r: sign * r.scored(metric, role))
            value = best.value(metric, role)
            line = (f"{metric}, {masking}: the best condition ({best.model} / {best.sampler}) scores "
                    f"{format_score(best.quality(role)[metric])}; filling every mask with \"{results.filler_word}\" "
                    f"scores {format_score(block.filler[metric])}")
            deletion = block.deletion.get(metric)
            if deletion is not None and deletion.value is not None:
                line += f", deleting the masked words {format_score(deletion)}"
                if sign * (deletion.value - value) >= 0:
                    line += " — no better than deletion"
            filler = block.filler[metric].value
            if filler is not None and sign * (filler - value) >= 0:
                line += " — no better than the filler"
            lines.append(line + ".")
    return lines


def ratio_trends(results: RunResults, role: str | None = None) -> list[str]:
    """How each main metric moves with the random masking ratio, per model and sampler (Spearman rho)."""
    from scipy.stats import spearmanr

    series = ratio_series(results, role)
    lines = []
    for metric in main_metrics(results, role):
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
            parts.append(f"{model} / {sampler} {direction} ({format_number(values[0])} at {ratios[0]} -> "
                         f"{format_number(values[-1])} at {ratios[-1]}, Spearman rho {rho:+.2f})")
        if parts:
            lines.append(f"**{metric}** as the masking ratio grows: " + "; ".join(parts) + ".")
    return lines


def ratio_series(results: RunResults, role: str | None = None) -> dict[str, dict[tuple[str, str], list[tuple[float, float]]]]:
    """metric -> (model, sampler [/ masking family]) -> [(ratio, value)] over conditions whose masking has a ratio."""
    out: dict[str, dict[tuple[str, str], list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for row in results.conditions:
        if row.masking_ratio is None:
            continue
        family = row.masking.split(":")[0]
        label = row.sampler if family == "random" else f"{row.sampler} / {family}"
        for metric, score in row.quality(role).items():
            if score.value is not None:
                out[metric][(row.model, label)].append((float(row.masking_ratio), float(score.value)))
    return out


def correlation_findings(results: RunResults) -> list[str]:
    """One line per main quality metric and task (its first score; the table has them all): rho, CI, verdict."""
    main = set(main_metrics(results, "seen") or main_metrics(results))
    first_score: dict[str, str] = {}
    for item in results.correlations:
        first_score.setdefault(item.task, item.score)
    return [f"{item.metric} vs {item.task} {item.score}: {item.summary}" for item in results.correlations
            if item.metric in main and first_score.get(item.task) == item.score]


# -- markdown ----------------------------------------------------------------------------------------
def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def quality_table(results: RunResults, metrics: list[str], role: str | None = None) -> list[str]:
    """One row per condition (best per column in bold), then the filler's row per masking."""
    best = {m: best_conditions(results, m, role) for m in metrics}
    rows = []
    baselines: dict[str, tuple[dict[str, Score], dict[str, Score]]] = {}
    for row in results.conditions:
        cells = [row.model, row.masking, row.sampler, str(row.seed)]
        for m in metrics:
            text = format_score(row.quality(role).get(m))
            cells.append(f"**{text}**" if row.id in best[m] else text)
        block = getattr(row, role) if role else None
        if role:
            cells.append(format_score(block.verbatim_recall if block else None, with_ci=False))
            if block is not None and block.filler:
                baselines.setdefault(row.masking, (block.filler, block.deletion))
        rows.append(cells)
    for masking, (filler, deletion) in baselines.items():
        rows.append([f"filler \"{results.filler_word}\"", masking, "-", "-"]
                    + [format_score(filler.get(m)) for m in metrics] + ["-"])
        if deletion:
            rows.append(["deletion", masking, "-", "-"] + [format_score(deletion.get(m)) for m in metrics] + ["-"])
    arrows = [f"{m} {'↑' if higher_is_better(results, m) else '↓'}" for m in metrics]
    return _table(["model", "masking", "sampler", "seed", *arrows, *(["verbatim recall"] if role else [])], rows)


def gap_table(results: RunResults, metrics: list[str]) -> list[str]:
    rows = []
    for row in results.conditions:
        if not row.gap:
            continue
        cells = [row.model, row.masking, row.sampler]
        for m in metrics:
            g = row.gap.get(m)
            text = format_score(g)
            cells.append(f"**{text}**" if g is not None and g.extra.get("significant") else text)
        cells.append(format_score(row.gap.get("verbatim_recall")))
        rows.append(cells)
    return _table(["model", "masking", "sampler", *[f"{m} gap" for m in metrics], "verbatim recall gap"], rows) if rows else []


def training_section(results: RunResults) -> list[str]:
    """Per trained model, headed by its short spec: the budget rule, the checkpoint kept, held-out accuracy and
    the loss curves."""
    from mlmh.results import model_label

    lines: list[str] = []
    for spec, model in results.models.items():
        card = model.training
        if not card:
            continue
        lines += [f"### {model_label(results, spec)}", ""]
        facts = [f"objective {card.get('objective', model.model_kind or '?')}",
                 f"started from {card['init']}" if card.get("init") else "trained from scratch"]
        if card.get("mask_schedule"):
            ratio = f" {card['mask_ratio']}" if card.get("mask_schedule") == "fixed" and card.get("mask_ratio") else ""
            facts.append(f"mask schedule {card['mask_schedule']}{ratio}")
        if card.get("budget"):
            facts.append(f"budget matched on {card['budget']}")
        if card.get("head_warmup_steps"):
            facts.append(f"fresh parameters warmed up alone for {card['head_warmup_steps']:,} steps")
        if card.get("init") and card.get("output_vocabulary"):
            facts.append(f"output layer cut to the corpus's {card['output_vocabulary']:,} tokens while training")
        for key, label in (("tokens_seen", "tokens seen"), ("supervised_targets", "supervised targets"),
                           ("steps_run", "steps run"), ("step_kept", "step kept"),
                           ("validation_loss", "validation loss at the step kept"),
                           ("final_loss", "final training loss"), ("heldout_accuracy", "validation accuracy"),
                           ("best_constant_accuracy", "best constant predictor's accuracy"),
                           ("unigram_baseline_accuracy", "unigram baseline accuracy")):
            if card.get(key) is not None:
                value = card[key]
                facts.append(f"{label} {value:.3f}" if isinstance(value, float) else f"{label} {value:,}")
        plateau = never_learned(model_label(results, spec), model)
        if plateau:
            facts.append(f"**{plateau}**: no finding is decided on it")
        elif card.get("beats_constant"):
            facts.append("beat the best constant predictor on held-out text (off the unigram plateau)")
        if card.get("train_seconds") is not None:
            facts.append(f"trained in {card['train_seconds']:.0f} s on {card.get('device', 'cpu')}")
        lines += ["; ".join(facts) + ".", ""]
        why = [f"Validation held {card['validation_holds']}." if card.get("validation_holds") else "",
               f"Training ended: {card['stop_reason']}." if card.get("stop_reason") else
               ("Training ended: stopped early on validation loss." if card.get("stopped_early") else "")]
        if any(why):
            lines += [" ".join(w for w in why if w), ""]
        accuracy = card.get("accuracy_at_ratio")
        measured = [f"{k}: {format_number(v['accuracy'])} ({format_number(v.get('best_constant_accuracy', v.get('unigram_baseline_accuracy')) or 0)}"
                    f"{'' if v.get('beats_constant', True) else ', not beaten'})"
                    for k, v in (accuracy.items() if isinstance(accuracy, dict) else [])
                    if isinstance(v, dict) and v.get("accuracy") is not None]  # None: no validation targets
        if measured:
            lines += ["Masked-token accuracy on validation, by inference masking ratio (the best constant predictor's, "
                      "or the unigram baseline's on an older card): " + ", ".join(measured) + ".", ""]
        curve = _curve_rows(card.get("train_curve") or [], card.get("validation_curve") or [])
        if curve:
            lines += _table(["step", "training loss", "validation loss"], curve) + [""]
    return (["## Training", "", "Each trained model's card (training_card.json): what was matched across objectives, "
             "which checkpoint was kept, and its loss curves.", ""] + lines) if lines else []


def _curve_rows(train: list[dict[str, float]], validation: list[dict[str, float]], most: int = 8) -> list[list[str]]:
    """Up to ``most`` evenly spaced validation points with the training loss logged at the same step."""
    if not validation:
        return []
    train_at = {int(p["step"]): p["loss"] for p in train}
    step = max(1, -(-len(validation) // most))
    picked = validation[::step]
    if picked[-1] is not validation[-1]:
        picked.append(validation[-1])
    return [[str(int(p["step"])), _loss(train_at.get(int(p["step"]))), _loss(p["loss"])] for p in picked]


def _loss(value: float | None) -> str:
    return "-" if value is None else format_number(value)  # None: not logged at that step, or a NaN loss


def downstream_table(results: RunResults) -> list[str]:
    columns: dict[tuple[str, str], None] = {}
    for scores in [results.baseline] + [r.downstream for r in results.conditions]:
        for task, values in scores.items():
            for metric in values:
                columns.setdefault((task, metric))
    if not columns:
        return []
    cols = list(columns)
    rows = [["real train split (baseline)", "", ""] + [_cell(results.baseline, c) for c in cols]]
    for row in results.conditions:
        rows.append([row.model, row.masking, row.sampler] + [_cell(row.downstream, c) for c in cols])
    return _table(["train data", "masking", "sampler", *[f"{t} {m}" for t, m in cols]], rows)


def _cell(scores: Mapping[str, Mapping[str, float | None]], column: tuple[str, str]) -> str:
    value = scores.get(column[0], {}).get(column[1])
    return "n/a" if value is None else format_number(value)


def correlation_table(results: RunResults) -> list[str]:
    rows = []
    for item in results.correlations:
        ci = item.spearman_ci
        rows.append([str(item.metric), f"{item.task} {item.score}", str(item.n),
                     "n/a" if item.spearman is None else f"{item.spearman:+.2f}",
                     "n/a" if not ci or len(ci) != 2 else f"[{ci[0]:+.2f}, {ci[1]:+.2f}]",
                     "n/a" if item.pearson is None else f"{item.pearson:+.2f}"])
    return _table(["metric", "downstream score", "n", "Spearman rho", "95% CI", "Pearson r"], rows) if rows else []


def human_section(results: RunResults) -> list[str]:
    human = results.human
    if not human:
        return []
    lines = ["## Human evaluation", "", f"{human.n_raters} rater(s), {human.n_items} items, ratings 1-5.", ""]
    criteria = human.criteria
    rows = []
    for condition, scores in human.conditions.items():
        rows.append([condition] + [format_score(Score.from_dict(scores.get(c))) for c in criteria])
    lines += _table(["condition", *criteria], rows)
    agreement = human.agreement
    if agreement:
        lines += ["", "Inter-rater agreement (Krippendorff's alpha, ordinal): " + ", ".join(
            f"{c}: {'n/a' if a is None else f'{a:.3f}'}" for c, a in agreement.items()) + "."]
    return lines + [""]


def answer_section(results: RunResults) -> list[str]:
    """What report.md opens with: one sentence per finding (verdict, CI, caveat), then where to look."""
    answer = answer_lines(results.findings, results=results)
    if not answer:
        return []
    lines = ["## Answer", "", "The claims of arXiv 2405.12630 (and of Li et al., ICML 2024, where the run has their "
             "conditions) tested on this run's unseen documents, with paired bootstrap 95% CIs. A condition whose model "
             "never beat the best constant predictor, that scores no better than the filler or deletion, or that "
             "memorised is left out of a claim; a claim left with none is \"not comparable\".", ""]
    lines += [f"- {line}" for line in answer]
    return lines + ["", "Where to look: **Claims in detail** for each claim's parts; **Findings** for the "
                    "per-metric MLM-CLM counts, memorization and the baselines; **Generation quality** for every "
                    "condition; **Training** for each model's card (whether it beat the best constant predictor).", ""]


def claims_section(results: RunResults) -> list[str]:
    """Each tested claim's parts (per masking, per model and sampler, per kind) as a table."""
    rows = [[f.claim, str(p.get("label", "")), "-" if p.get("statistic") is None else format_number(p["statistic"]),
             _ci_text(p), str(p.get("verdict", ""))]
            for f in results.findings if f.tested for p in f.parts]
    if not rows:
        return []
    return (["## Claims in detail", "", "Each claim's parts; the claim's own verdict is in the Answer above.", ""]
            + _table(["claim", "part", "statistic", "95% CI", "verdict"], rows) + [""])


def _ci_text(part: dict[str, Any]) -> str:
    low, high = part.get("ci_low"), part.get("ci_high")
    return "-" if low is None or high is None else f"[{format_number(low)}, {format_number(high)}]"


def crossover_section(results: RunResults) -> list[str]:
    """A data-constrained sweep (:mod:`mlmh.crossover`): the answer in one sentence, then every point."""
    block = results.crossover
    if not block:
        return []
    metrics = block.metrics
    lines = ["## Where masked overtakes causal", "", block.answer, "",
             f"Validation loss: {block.comparability}; the CI of a loss difference resamples validation "
             "blocks, that of a quality difference unseen documents (the mean per-document difference; sentence "
             "BLEU for BLEU), every epoch with the same draws, and so does the crossover epoch's CI.", ""]
    header = ["U", "epochs", "objective", "validation loss", "train FLOPs", "train s"]
    header += [f"unseen {m}" for m in metrics] + [f"{kind} {m}" for m in metrics[-1:] for kind in ("filler", "deletion")]
    rows = []
    for p in block.points:
        row = [f"{p['unique_tokens']:,}", f"{p['epochs']:g}", p["objective"],
               format_number(p["validation_loss"]) if p.get("validation_loss") is not None else "-",
               f"{p['approx_train_flops']:.2g}" if p.get("approx_train_flops") else "-",
               f"{p['train_seconds']:.0f}" if p.get("train_seconds") is not None else "-"]
        row += [format_score(Score.from_dict(p["unseen"].get(m))) for m in metrics]
        row += [format_score(Score.from_dict(p[kind].get(m))) for m in metrics[-1:] for kind in ("filler", "deletion")]
        rows.append(row)
    return lines + _table(header, rows) + [""]


def _header(results: RunResults) -> list[str]:
    config, dataset = results.config, results.dataset
    sets = ", ".join(f"{info.documents} {role} ({info.split or '?'} split)"
                     for role, info in results.documents.items() if info.documents)
    total = results.timings.get("total")
    return [f"# mlmh run {results.run_id}", "",
            f"Preset **{config.get('preset', '?')}** on dataset **{dataset.name or config.get('dataset', '?')}** "
            f"({dataset.source}): {sets or f'{results.n_samples} documents'} per condition, "
            f"{len(results.conditions)} conditions, seeds {config.get('seeds', [])}"
            + (f", {total:.0f} s in all." if total is not None else "."), ""]


def _comparison(results: RunResults, role: str) -> list[str]:
    lines = [f"MLM against CLM on {ROLE_LABEL.get(role, role)}; best MLM sampler per masking setting:", ""]
    found = kind_findings(results, "mlm", "clm", role)
    lines += [f"- {f}" for f in found] or ["- No masking setting has both an MLM and a CLM condition."]
    seq = kind_findings(results, "mlm", "seq2seq", role)
    if seq:
        lines += ["", f"MLM against seq2seq on {role} documents:", ""] + [f"- {f}" for f in seq]
    return lines + [""]


def render_markdown(results: RunResults | dict[str, Any], plots: Sequence[str | Path]) -> str:
    results = as_results(results)
    present = roles(results)
    lines = _header(results) + answer_section(results) + ["## Findings", ""]
    for compared in present:
        lines += _comparison(results, compared)
    if len(present) == 2:
        disagree = disagreements(results)
        lines += ["Where seen and unseen documents disagree:", ""]
        lines += [f"- {d}" for d in disagree] or ["- Nowhere: the MLM-CLM verdict is the same on both sets."]
        lines += ["", "Memorization (seen - unseen gap; flagged when its 95% CI excludes 0):", ""]
        lines += [f"- {m}" for m in memorization_findings(results)] or ["- No gap could be computed."]
        lines += [""]
    filler = filler_findings(results)
    if filler:
        lines += [f"What the visible context alone earns ({results.headline} documents; a model that does not beat "
                  "these baselines has learned nothing the metric can see):", ""] + [f"- {f}" for f in filler] + [""]
    trends = ratio_trends(results, results.headline if present else None)
    lines += ["Masking-ratio trend:", ""]
    lines += [f"- {t}" for t in trends] or ["- Fewer than three masking ratios in this run: no trend to report."]
    lines += ["", "Quality of the synthetic corpus (seen regenerations) vs its downstream usefulness:", ""]
    lines += [f"- {c}" for c in correlation_findings(results)] or ["- No correlation computed (no downstream scores)."]
    lines += [""] + claims_section(results) + crossover_section(results)
    lines += ["## Generation quality", "", "Bold: best per column. Brackets: bootstrap 95% CI over documents. "
              "Verbatim recall: share of masked words regenerated exactly.", ""]
    shown: Sequence[str | None] = present or [None]
    for role in shown:
        metrics = main_metrics(results, role)
        rest = [m for m in metric_names(results, role) if m not in metrics]
        if role:
            lines += [f"### On {ROLE_LABEL[role]}", ""]
        lines += quality_table(results, metrics, role) + [""]
        if rest:
            lines += [f"More metrics{f' ({role})' if role else ''}:", ""] + quality_table(results, rest, role) + [""]
    gaps = gap_table(results, main_metrics(results, "unseen"))
    if gaps:
        lines += ["### Seen - unseen gap", "", "Bold: the CI excludes 0.", ""] + gaps + [""]
    lines += training_section(results)
    down = downstream_table(results)
    if down:
        lines += ["## Downstream tasks", "", "Trained on the regenerated seen (train) documents, tested on the real "
                  "test split.", ""] + down + [""]
    correlations = correlation_table(results)
    if correlations:
        lines += ["## Quality vs downstream correlations", "", "Across conditions; bootstrap CIs over conditions.", ""]
        lines += correlations + [""]
    lines += human_section(results)
    if plots:
        lines += ["## Plots", ""] + [f"![{Path(p).stem}]({Path(p).name})" for p in plots] + [""]
    if results.errors:
        lines += ["## Failed components", "", "Each failed alone; the rest of the run completed.", ""]
        lines += [f"- **{e.component}** ({e.during}): {e.error}" for e in results.errors] + [""]
    if results.notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in results.notes] + [""]
    if results.timings:
        lines += ["## Timings", "", ", ".join(f"{k} {v:.1f} s" for k, v in results.timings.items()), ""]
    lines += ["## Versions", "", ", ".join(f"{k} {v}" for k, v in results.versions.libraries.items() if isinstance(v, str)), ""]
    return "\n".join(lines)


def write_report(results: RunResults | dict[str, Any], out_dir: str | Path | RunDir, figures: FigureStore | None = None) -> Path:
    """Write report.md and the plots into the run directory ``out_dir``; returns the report's path.
    ``figures``: where figures drawn before are kept (the run cache; :func:`mlmh.plots.write_plots`)."""
    results = as_results(results)
    run = out_dir if isinstance(out_dir, RunDir) else RunDir(out_dir)
    from mlmh.plots import write_plots  # matplotlib is imported only when a report is written

    plots = write_plots(results, run, figures)
    return run.write_text(run.report, render_markdown(results, plots))
