"""report.md and plots from a run's :class:`~mlmh.types.RunResults`: tables, the findings in words, figures.

Everything here reads only the results, so ``mlmh report RUN_DIR`` rebuilds the same report from a
finished (or copied) run without any model or data. It decides nothing: the claims' verdicts are the
results' ``findings`` and every other verdict is in their ``comparisons`` (:mod:`mlmh.findings`); this
module lays them out, leading with the documents no model trained on (``unseen``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from mlmh.findings.answer import ROLE_LABEL, answer_lines, comparison_sections, plateau_of
from mlmh.findings.verdicts import (MEMORISED, describe_ci, memorisation_check, memorisation_family, memorisation_set,
                                    number)
from mlmh.machine.escape import markdown_cell
from mlmh.results import (best_conditions, format_number, format_score, higher_is_better, main_metrics, metric_names,
                          model_label, roles)
from mlmh.storage.rundir import RunDir
from mlmh.types import ConditionResult, RunResults, Score

if TYPE_CHECKING:
    from mlmh.report.plots import FigureStore


# -- markdown ----------------------------------------------------------------------------------------
def _table(header: list[str], rows: Iterable[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(map(markdown_cell, header)) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(markdown_cell, row)) + " |" for row in rows]
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
    """The gap memorisation is judged on per condition (:func:`~mlmh.findings.verdicts.memorisation_check`: seen -
    control where the run holds control documents; of each metric's quality above the filler where the run has it),
    in bold where the rule flags it, and of the verbatim recall."""
    rows = []
    against, above, _ = memorisation_set(results)
    for row in results.conditions:
        if not row.gap:
            continue
        cells = [row.model, row.masking, row.sampler]
        for m in metrics:
            check = memorisation_check(results, row, m)
            text = format_score(check.gap)
            cells.append(f"**{text}**" if check.state == MEMORISED else text)
        recall = (row.control_gap if against == "control" else row.gap).get("verbatim_recall")
        cells.append(format_score(recall))
        rows.append(cells)
    what = " above filler" if above else ""
    return _table(["model", "masking", "sampler", *[f"{m} gap{what}" for m in metrics], "verbatim recall gap"],
                  rows) if rows else []


def training_section(results: RunResults) -> list[str]:
    """Per trained model, headed by its short spec: the budget rule, the checkpoint kept, held-out accuracy and
    the loss curves."""
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
        if card.get("embeddings_frozen"):
            facts.append("word embeddings kept as pretrained")
        for key, label in (("tokens_seen", "tokens seen"), ("supervised_targets", "supervised targets"),
                           ("steps_run", "steps run"), ("step_kept", "step kept"),
                           ("validation_loss", "validation loss at the step kept"),
                           ("final_loss", "final training loss"), ("heldout_accuracy", "held-out accuracy"),
                           ("heldout_source", "held out on"),
                           ("best_constant_accuracy", "best constant predictor's accuracy"),
                           ("unigram_baseline_accuracy", "unigram baseline accuracy")):
            if card.get(key) is not None:
                value = card[key]
                facts.append(f"{label} {value:.3f}" if isinstance(value, float) else f"{label} {value:,}"
                             if isinstance(value, int) and not isinstance(value, bool) else f"{label} {value}")
        plateau = plateau_of(results, spec)
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


def downstream_table(results: RunResults, mode: str = "synthetic") -> list[str]:
    """Each condition's downstream scores, trained on its synthetic set instead of the real documents (``mode``
    "synthetic") or added to them ("augmented"), under the real documents' own."""
    def of(row: ConditionResult) -> Mapping[str, Mapping[str, float | None]]:
        return row.downstream if mode == "synthetic" else row.downstream_augmented

    columns: dict[tuple[str, str], None] = {}
    for scores in [results.baseline] + [of(r) for r in results.conditions]:
        for task, values in scores.items():
            for metric in values:
                columns.setdefault((task, metric))
    if not columns or not any(of(r) for r in results.conditions) and mode != "synthetic":
        return []
    cols = list(columns)
    rows = [["real train split (baseline)", "", ""] + [_cell(results.baseline, c) for c in cols]]
    for row in results.conditions:
        rows.append([row.model, row.masking, row.sampler] + [_cell(of(row), c) for c in cols])
    return _table(["train data", "masking", "sampler", *[f"{t} {m}" for t, m in cols]], rows)


def downstream_power(results: RunResults) -> list[str]:
    """Per task: whether its model learns from the real documents, and the smallest difference its test detects."""
    lines = []
    for test in results.downstream_tests:
        gains = "; ".join(f"{number(c.value, 3)} against {what} ({describe_ci(c.ci_low, c.ci_high, 3)})"
                          for c, what in ((test.real_vs_none, "no training data"),
                                          (test.real_vs_constant, "the best constant predictor")) if c is not None)
        learns = ("it learns" if test.learns else f"**it cannot judge synthetic text**: {test.reason}"
                  if test.learns is False else "whether it learns is unknown")
        mdd = (f" Minimum detectable difference between two training sets: **{test.mdd:.3f} {test.score}** "
               f"({test.power:.0%} power, two-sided {1 - test.confidence:.0%}, per-item sd {test.sd or 0:.3f} of "
               f"{test.sd_of}, {test.items} test items)." if test.mdd is not None else "")
        lines.append(f"- **{test.task}** ({test.score} per test item, {test.items} items): trained on the real "
                     f"documents it scores {gains}; {learns}.{mdd}")
    return lines


def downstream_contrast_table(results: RunResults) -> list[str]:
    """Per condition and task, its synthetic set instead of and added to the real documents, each minus the real
    documents alone and minus no training data, paired over test items with its t CI."""
    rows = []
    for row in results.conditions:
        for mode, tasks in row.downstream_contrasts.items():
            for task, scores in tasks.items():
                for score, against in scores.items():
                    cells = [f"{number(c.value, 3)} ({describe_ci(c.ci_low, c.ci_high, 3)})" if c else "n/a"
                             for c in (against.get("vs_real"), against.get("vs_none"))]
                    rows.append([row.model, row.masking, row.sampler, "instead of real" if mode == "synthetic"
                                 else "added to real", f"{task} {score}", *cells])
    return _table(["model", "masking", "sampler", "synthetic set", "score", "minus real only", "minus no data"],
                  rows) if rows else []


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
        rows.append([condition] + [format_score(scores.get(c)) for c in criteria])
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
        failed = next((e for e in results.errors if e.component == "findings"), None)
        return [] if failed is None else [
            "## Answer", "", f"No claim was decided: the findings step failed ({failed.during}: {failed.error}); "
            "every other result of the run stands below, and **Failed components** names it.", ""]
    lines = ["## Answer", "", "The claims of arXiv 2405.12630 (and of Li et al., ICML 2024, where the run has their "
             "conditions) tested on this run's unseen documents, with paired t 95% CIs per document (simultaneous where a "
             "claim picks the best arm, so the pick keeps its 95%). A condition whose model "
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
    """A data-constrained sweep (:mod:`mlmh.findings.crossover`): the answer in one sentence, then every point."""
    block = results.crossover
    if not block:
        failed = next((e for e in results.errors if e.component == "crossover"), None)
        return [] if failed is None else [
            "## Where masked overtakes causal", "", f"Not computed: the crossover step failed ({failed.during}: "
            f"{failed.error}); **Failed components** names it.", ""]
    metrics = block.metrics
    lines = ["## Where masked overtakes causal", "", block.answer, "",
             f"Validation loss: {block.comparability}; the CI of a loss difference resamples validation "
             "blocks, that of a quality difference unseen documents (the mean per-document difference; sentence "
             "BLEU for BLEU), every epoch with the same draws, and so does the crossover epoch's CI.", ""]
    header = ["U", "epochs", "objective", "validation loss", "train FLOPs", "train s"]
    header += [f"unseen {m}" for m in metrics] + [f"{kind} {m}" for m in metrics[-1:] for kind in ("filler", "deletion")]
    rows = []
    for p in block.points:
        row = [f"{p.unique_tokens:,}", f"{p.epochs:g}", p.objective,
               format_number(p.validation_loss) if p.validation_loss is not None else "-",
               f"{p.approx_train_flops:.2g}" if p.approx_train_flops else "-",
               f"{p.train_seconds:.0f}" if p.train_seconds is not None else "-"]
        row += [format_score(p.unseen.get(m)) for m in metrics]
        row += [format_score(baseline.get(m)) for m in metrics[-1:] for baseline in (p.filler, p.deletion)]
        rows.append(row)
    return lines + _table(header, rows) + [""]


def _header(results: RunResults) -> list[str]:
    config, dataset = results.config, results.dataset
    sets = ", ".join(f"{info.documents} {role} ({info.split or '?'} split)"
                     for role, info in results.documents.items() if info.documents)
    total = results.timings.get("total")
    return [f"# mlmh run {results.run_id}", "",
            f"Preset **{config.preset or '?'}** on dataset **{dataset.name or config.dataset or '?'}** "
            f"({dataset.source}): {sets or f'{results.n_samples} documents'} per condition, "
            f"{len(results.conditions)} conditions, seeds {config.seeds}"
            + (f", {total:.0f} s in all." if total is not None else "."), ""]


def render_markdown(results: RunResults, plots: Sequence[str | Path]) -> str:
    """report.md of judged results (:func:`mlmh.findings.comparisons.judged`: what every reader of a run gets)."""
    present = roles(results)
    lines = _header(results) + answer_section(results) + ["## Findings", ""]
    for section in comparison_sections(results):
        lines += [section.heading, ""] + [f"- {line}" for line in section.lines] + [""]
    lines += claims_section(results) + crossover_section(results)
    lines += ["## Generation quality", "", "Bold: best per column. Brackets: 95% CI over documents (Student's t for means of per-document scores, the "
              "seeded bootstrap for corpus BLEU and pooled rates). "
              "Verbatim recall: share of masked words regenerated exactly.", ""]
    shown: Sequence[str | None] = present or [None]
    if present and any(row.control is not None for row in results.conditions):
        shown = [*present, "control"]  # what memorisation is judged against, as the seen documents are shown
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
        against, _, judged = memorisation_set(results)
        tests = len(memorisation_family(results))
        held = ("The control documents are texts of the train authors that no model trained on: the same authors, "
                "texts learned or not. " if against == "control" else "")
        rule = (f"Welch's 95% CI per gap; bold: flagged as memorised by Holm's rule over the run's {tests} memorisation "
                "tests (conditions x main metrics, family-wise 5%), for a model that learned." if judged else
                "The run holds no control documents and the unseen documents are other groups' texts (new authors), "
                "so this is a **group gap**: a model that learned how the train authors write scores their texts "
                "higher without reciting any. It is reported, never judged as memorisation (`--control 0.1` holds "
                "train authors' texts out to judge it).")
        lines += [f"### Seen - {against} gap", "", f"{held}Of each document's score above the filler's on the same "
                  f"masks, where the run has a filler (the seen and {against} documents are different texts, and a gap "
                  f"the filler shows too is theirs, not recall). {rule}", ""] + gaps + [""]
    lines += training_section(results)
    down = downstream_table(results)
    if down:
        lines += ["## Downstream tasks", "", "Trained on the regenerated seen (train) documents instead of the real ones "
                  "(the paper's protocol), tested on the dataset's whole real test split.", ""] + down + [""]
        power = downstream_power(results)
        if power:
            lines += ["### What the downstream test can tell", ""] + power + [""]
        added = downstream_table(results, "augmented")
        if added:
            lines += ["### Added to the real documents (augmentation)", "", "Trained on the real seen documents and "
                      "their regenerations together (Kumar et al. 2020, SSMBA), tested on the same split.", ""]
            lines += added + [""]
        contrasts = downstream_contrast_table(results)
        if contrasts:
            lines += ["### Synthetic sets against the real documents and no data", "", "Paired over test items: the "
                      "model trained on the synthetic set minus the one trained on the real documents alone, and minus "
                      "one with no training data; Student's t 95% CI.", ""] + contrasts + [""]
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


def write_report(results: RunResults, out_dir: str | Path | RunDir, figures: FigureStore | None = None) -> Path:
    """Write report.md and the plots into the run directory ``out_dir``; returns the report's path.
    ``figures``: where figures drawn before are kept (the run cache; :func:`mlmh.report.plots.write_plots`)."""
    run = out_dir if isinstance(out_dir, RunDir) else RunDir(out_dir)
    from mlmh.report.plots import write_plots  # matplotlib is imported only when a report is written

    plots = write_plots(results, run, figures)
    return run.write_text(run.report, render_markdown(results, plots))
