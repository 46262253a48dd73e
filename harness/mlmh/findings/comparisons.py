"""The run's comparisons: the verdicts report.md's Findings state beside the claims, decided once from a run's
results into its typed ``comparisons`` block (:class:`mlmh.types.Comparisons`), so report.md, the terminal, the
TUI and notebooks state the same ones, and results.json carries them:

- MLM against CLM (and seq2seq) per main metric and document set: on unseen documents, MLM against CLM is decided
  by claim (1)'s paired test where the run decided it (one question, one answer); elsewhere per masking setting and
  seed the best condition of each kind, where only wins with non-overlapping CIs count, so a difference inside the
  noise is a tie, and a lead resting on a condition a caveat rules out (:func:`mlmh.findings.verdicts.caveats_of`)
  is "not comparable";
- where the verdict on seen documents differs from the one on unseen documents;
- memorisation per model, by the one rule (:func:`mlmh.findings.verdicts.memorisation_check`);
- what the visible context alone earns: the best condition beside the filler and deletion baselines;
- how each main metric moves with the masking ratio (Spearman rho), per model and sampler;
- the correlation of each main quality metric with each downstream task's first score;
- the trained models that never left the unigram plateau.

:func:`compare` decides them; :func:`judged` is the one place results read without them (results.json written
before schema 4) get them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, NamedTuple

from mlmh.config.declared import baseline_results
from mlmh.findings.verdicts import (REWARDS_DELETION, MemorisationCheck, caveats_of, deletion_bar, describe_ci, number,
                                    memorisation_check,
                                    memorisation_set, never_learned, recall_clause, summarise)
from mlmh.results import (better, format_number, format_score, higher_is_better, main_metrics, model_label,
                          model_record_of, roles)
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE, ConditionResult, Finding, RunResults, Score
from mlmh.types.result_blocks import (GROUP_GAP_ONLY, MEMORISED, NO_GAP, ON_PLATEAU, BaselineVerdict, Comparisons, CorrelationVerdict,
                                Disagreement, KindVerdict, Memorisation, PlateauVerdict, RatioTrend, TrendSeries)

KIND_LABEL = {"mlm": "MLM", "clm": "CLM", "seq2seq": "seq2seq"}
#: the kinds each document set's comparison sets against each other, in the order the findings state them
KIND_PAIRS = (("mlm", "clm"), ("mlm", "seq2seq"))


def judged(results: RunResults | dict[str, Any]) -> RunResults:
    """``results`` (typed, or results.json's data) with their comparisons: as the run decided them, or decided now
    for results written before the run kept them."""
    typed = results if isinstance(results, RunResults) else RunResults.from_dict(results)
    if typed.comparisons is None:
        typed.comparisons = compare(typed)
    return typed


def compare(results: RunResults) -> Comparisons:
    """Every comparison of the module docstring, decided on ``results``."""
    present = roles(results)
    both = len(present) == 2
    return Comparisons(
        kinds=[found for role in present for a, b in KIND_PAIRS for found in kind_verdicts(results, a, b, role)],
        disagreements=disagreements(results) if both else [],
        memorisation=memorisation(results) if both else [],
        baselines=baselines(results),
        ratio_trends=ratio_trends(results, results.headline if present else None),
        correlations=correlations(results),
        plateaus=plateaus(results))


# -- one kind against another -----------------------------------------------------------------------
class Cell(NamedTuple):
    """One masking setting and seed: the best condition of each kind on the metric, which kind scores better
    (None: equal) and whether their CIs overlap (None: one has no CI)."""

    masking: str
    seed: int
    a: ConditionResult
    b: ConditionResult
    winner: str | None
    overlapping: bool | None


def kind_cells(results: RunResults, metric: str, kind_a: str = "mlm", kind_b: str = "clm",
               role: str | None = None) -> list[Cell]:
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
        value_a, value_b = slot[kind_a].scored(metric, role), slot[kind_b].scored(metric, role)
        winner = None if value_a == value_b else kind_a if better(results, metric, value_a, value_b) else kind_b
        out.append(Cell(masking, seed, slot[kind_a], slot[kind_b], winner, a.overlaps(b)))
    return out


def kind_verdict(results: RunResults, metric: str, kind_a: str, kind_b: str, role: str) -> KindVerdict | None:
    """``kind_a`` against ``kind_b`` on ``metric`` and ``role`` documents; None when they are never compared.

    The verdict counts only wins with non-overlapping CIs, so a difference inside the noise reads as a tie.
    """
    cells = kind_cells(results, metric, kind_a, kind_b, role)
    if not cells:
        return None
    la, lb = KIND_LABEL.get(kind_a, kind_a), KIND_LABEL.get(kind_b, kind_b)
    wins_a = [c for c in cells if c.winner == kind_a]
    wins_b = [c for c in cells if c.winner == kind_b]
    sure_a = sum(1 for c in wins_a if c.overlapping is False)
    sure_b = sum(1 for c in wins_b if c.overlapping is False)
    counts = (f"{la} higher in {len(wins_a)} of {len(cells)} masking settings ({sure_a} with non-overlapping CIs), "
              f"{lb} higher in {len(wins_b)} ({sure_b} with non-overlapping CIs)")
    claim = _claim_one(results, metric) if (kind_a, kind_b, role) == ("mlm", "clm", "unseen") else None
    if claim is not None:  # one question, one test: the Answer's claim (1) decides the verdict here too
        verdict = {HOLDS: f"{la} beats {lb}", FAILS: f"{lb} beats {la}"}.get(claim.verdict, f"{la} and {lb} tie")
        detail = (f"decided by claim (1)'s paired test, as the Answer states it: {claim.verdict} "
                  f"({number(claim.statistic)} per document, {describe_ci(claim.ci_low, claim.ci_high)}); "
                  f"{counts}")
        return KindVerdict(role=role, metric=metric, kinds=[kind_a, kind_b], verdict=verdict, settings=len(cells),
                           wins=[len(wins_a), len(wins_b)], sure=[sure_a, sure_b], caveats=list(claim.caveats),
                           detail=detail, statement=f"{metric}: {verdict} — {detail}.")
    if sure_a > sure_b:
        verdict, winners = f"{la} beats {lb}", [c.a for c in wins_a]
    elif sure_b > sure_a:
        verdict, winners = f"{lb} beats {la}", [c.b for c in wins_b]
    else:
        verdict, winners = f"{la} and {lb} tie", []
    caveats = list(dict.fromkeys(c for row in winners for c in caveats_of(results, row, metric, role or results.headline)))
    if caveats:  # a model that learned nothing, or no better than a baseline, never wins
        verdict = f"{verdict.replace(' beats ', ' ahead of ')} (not comparable)"
    detail = counts
    if sure_a == 0 and sure_b == 0:
        detail += "; overlapping CIs everywhere, so no difference is established"
    detail += (" (CI overlap, not a paired test" + ("; claim (1) is not decided on this metric)"
                                                     if role == "unseen" and kind_b == "clm" else ")"))
    if not higher_is_better(results, metric):
        detail += " (lower is better)"
    if caveats:
        detail += "; not comparable because " + summarise(caveats)
    return KindVerdict(role=role, metric=metric, kinds=[kind_a, kind_b], verdict=verdict, settings=len(cells),
                       wins=[len(wins_a), len(wins_b)], sure=[sure_a, sure_b], caveats=[c.text for c in caveats],
                       detail=detail, statement=f"{metric}: {verdict} — {detail}.")


def _claim_one(results: RunResults, metric: str) -> Finding | None:
    """Claim (1)'s finding on ``metric`` where the run decided it (holds, does not hold, inconclusive)."""
    return next((f for f in results.findings if f.claim == f"paper-1:{metric}"
                 and f.verdict in (HOLDS, FAILS, INCONCLUSIVE)), None)


def kind_verdicts(results: RunResults, kind_a: str, kind_b: str, role: str) -> list[KindVerdict]:
    """One verdict per main metric of ``role``: which kind wins in how many maskings, and how surely."""
    return [found for metric in main_metrics(results, role)
            if (found := kind_verdict(results, metric, kind_a, kind_b, role)) is not None]


def disagreements(results: RunResults, kind_a: str = "mlm", kind_b: str = "clm") -> list[Disagreement]:
    """Metrics whose verdict on seen documents differs from the one on unseen documents."""
    out = []
    for metric in main_metrics(results, "unseen"):
        seen, unseen = (kind_verdict(results, metric, kind_a, kind_b, r) for r in ("seen", "unseen"))
        if seen and unseen and seen.verdict != unseen.verdict:
            out.append(Disagreement(metric=metric, unseen=unseen.verdict, seen=seen.verdict, statement=(
                f"{metric}: on unseen documents {unseen.verdict}, but on seen documents {seen.verdict}. The models "
                "trained on the seen documents, so the unseen verdict is the one that measures generation.")))
    return out


# -- memorisation, baselines, trends, correlations, the plateau ---------------------------------------
def memorisation(results: RunResults) -> list[Memorisation]:
    """Per model: its conditions the one memorisation rule flags on the first main metric
    (:func:`mlmh.findings.verdicts.memorisation_check`: seen - control above the filler, Holm-adjusted over the run's
    tests), or the group gap the run could only report."""
    metrics = main_metrics(results, "unseen")
    if not metrics:
        return []
    metric = metrics[0]
    by_model: dict[str, list[tuple[ConditionResult, MemorisationCheck]]] = defaultdict(list)
    for row in results.conditions:
        check = memorisation_check(results, row, metric)
        if check.gap is not None and check.gap.value is not None:
            by_model[row.model].append((row, check))
    against, above, judged = memorisation_set(results)
    quality = f"{metric} above the filler" if above else metric
    out = []
    for model, checked in by_model.items():
        flagged = [row for row, check in checked if check.state == MEMORISED]
        worst, check = max(checked, key=lambda pair: pair[1].gap.value if pair[1].gap and pair[1].gap.value else 0.0)
        g = check.gap or Score(None)
        recall = recall_clause(results, worst)
        if not judged:
            verdict = GROUP_GAP_ONLY
            statement = (f"{model}: seen - unseen group gap of {quality} up to {format_score(g)}{recall}; the unseen "
                         "documents are other groups' texts, so the gap measures style as well as recall and is not "
                         "judged (a run with --control judges it).")
        elif never_learned(model, model_record_of(results, model)):
            verdict = ON_PLATEAU
            statement = (f"{model} never beat the best constant predictor on held-out text: its seen - {against} "
                         f"gap of {quality} (largest {format_score(g)}{recall}) is read as the unigram plateau, not as "
                         "memorization.")
        elif flagged:
            verdict = MEMORISED
            statement = (f"{model} scores {quality} higher on seen than on {against} documents beyond the CI in "
                         f"{len(flagged)} of {len(checked)} conditions after Holm's adjustment over the run's "
                         f"{check.family} memorisation tests (largest gap {format_score(g)} in {worst.masking} / "
                         f"{worst.sampler}{recall}): flagged as memorization.")
        else:
            verdict = NO_GAP
            statement = (f"{model}: no seen - {against} gap of {quality} outside its CI in {len(checked)} conditions "
                         f"after Holm's adjustment over the run's {check.family} memorisation tests (largest "
                         f"{format_score(g)}{recall}).")
        out.append(Memorisation(model=model, metric=metric, verdict=verdict, flagged=len(flagged),
                                conditions=len(checked), largest=worst.id, gap=g, statement=statement))
    return out


def baselines(results: RunResults) -> list[BaselineVerdict]:
    """What the visible context alone earns: the two baselines beside the best condition, per masking, on the
    first main metric and the others declared ``baselines`` (ROUGE-L, BERTScore F1;
    :class:`mlmh.components.Headline`)."""
    role = results.headline
    metrics = main_metrics(results, role)
    if not metrics or not results.filler_word:
        return []
    out = []
    declared = tuple(baseline_results(results))
    for metric in metrics[:1] + [m for m in metrics[1:] if m.startswith(declared)]:
        by_masking: dict[str, list[ConditionResult]] = defaultdict(list)
        for row in results.conditions:
            block = getattr(row, role)
            if block is not None and block.filler.get(metric) is not None and row.value(metric, role) is not None:
                by_masking[row.masking].append(row)
        for masking, rows in by_masking.items():
            block = getattr(rows[0], role)
            sign = 1 if higher_is_better(results, metric) else -1
            best = max(rows, key=lambda r: sign * r.scored(metric, role))
            value = best.scored(metric, role)
            line = (f"{metric}, {masking}: the best condition ({best.model} / {best.sampler}) scores "
                    f"{format_score(best.quality(role)[metric])}; filling every mask with \"{results.filler_word}\" "
                    f"scores {format_score(block.filler[metric])}")
            deletion = block.deletion.get(metric)
            beats_deletion = None
            if deletion is not None and deletion.value is not None:
                line += f", deleting the masked words {format_score(deletion)}"
                beats_deletion = not (sign * (deletion.value - value) >= 0)
                if not beats_deletion:
                    bar = deletion_bar(block, metric, results)
                    line += " — no better than deletion" + (
                        f", but {metric} {REWARDS_DELETION}, so deletion is no bar on it (models are held to it on "
                        f"{bar})" if bar != metric else "")
            filler = block.filler[metric].value
            beats_filler = not (filler is not None and sign * (filler - value) >= 0)
            if not beats_filler:
                line += " — no better than the filler"
            out.append(BaselineVerdict(role=role, metric=metric, masking=masking, condition=best.id, value=value,
                                       filler=filler, deletion=None if deletion is None else deletion.value,
                                       beats_filler=beats_filler, beats_deletion=beats_deletion, statement=line + "."))
    return out


def ratio_trends(results: RunResults, role: str | None = None) -> list[RatioTrend]:
    """How each main metric moves with the random masking ratio, per model and sampler (Spearman rho)."""
    from scipy.stats import spearmanr

    series = ratio_series(results, role)
    out = []
    for metric in main_metrics(results, role):
        parts, found = [], []
        for (model, sampler), points in sorted(series.get(metric, {}).items()):
            if len(points) < 3:
                continue
            ratios, values = zip(*sorted(points))
            ends = ([ratios[0], ratios[-1]], [values[0], values[-1]])
            if len(set(values)) < 2:
                parts.append(f"{model} / {sampler}: flat")
                found.append(TrendSeries(f"{model} / {sampler}", "flat", None, *ends))
                continue
            rho = float(spearmanr(ratios, values).statistic)
            direction = "falls" if rho < -0.5 else "rises" if rho > 0.5 else "shows no clear trend"
            parts.append(f"{model} / {sampler} {direction} ({format_number(values[0])} at {ratios[0]} -> "
                         f"{format_number(values[-1])} at {ratios[-1]}, Spearman rho {rho:+.2f})")
            found.append(TrendSeries(f"{model} / {sampler}", direction, rho if math.isfinite(rho) else None, *ends))
        if parts:
            out.append(RatioTrend(role=role, metric=metric, series=found,
                                  statement=f"{metric} as the masking ratio grows: " + "; ".join(parts) + "."))
    return out


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


def correlations(results: RunResults) -> list[CorrelationVerdict]:
    """One per main quality metric and task (its first score; the table has them all): its summary."""
    main = set(main_metrics(results, "seen") or main_metrics(results))
    first_score: dict[str, str] = {}
    for item in results.correlations:
        first_score.setdefault(item.task, item.score)
    return [CorrelationVerdict(metric=item.metric, task=item.task, score=item.score,
                               statement=f"{item.metric} vs {item.task} {item.score}: {item.summary}")
            for item in results.correlations if item.metric in main and first_score.get(item.task) == item.score]


def plateaus(results: RunResults) -> list[PlateauVerdict]:
    """The trained models whose card says they never beat the best constant predictor on held-out text."""
    return [PlateauVerdict(model=spec, statement=plateau) for spec, model in results.models.items()
            if model.training and (plateau := never_learned(model_label(results, spec), model))]
