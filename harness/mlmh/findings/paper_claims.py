"""The five claims of arXiv 2405.12630 ("Exploration of Masked and Causal Language Modelling for Text
Generation"), each tested on a run's own conditions as a finding with a paired bootstrap CI.

1. MLM beats CLM on generation quality (their Tables 3-5), per quality metric: some MLM arm (model and sampler)
   ahead of every CLM arm, per unseen document, averaged over the maskings both were run under.
2. Lower masking ratios give better generations, stated twice: the slope, against the random masking ratio, of
   per-document raw quality (as the paper measures it), and of the quality above the stronger trivial baseline
   (filler or deletion) of the same masking; per model and sampler, averaged. Masking more leaves less text to
   copy, so the raw quality of even the filler falls, and only a fall beyond the baselines' is the models'.
3. Punctuation masking is best for CLM and worst for MLM: punctuation masking against every other masking, above
   each for a CLM arm and below each for an MLM arm; both parts must hold.
4. No strong correlation between generation quality and downstream usefulness (their section 5): Spearman's
   rho across conditions with its bootstrap CI (:mod:`mlmh.findings.correlation`) must lie within +-``STRONG``.
5. Even at very high masking the synthetic data still trains a useful downstream model: the downstream
   model trained on the regenerations of the highest masking ratio (0.5 or more), per test item, against the
   model that had no training data (chance) and beside the one trained on the real documents.

Claims 4 and 5 judge synthetic text by a downstream model; they are decided only when that model, trained on
the real documents, beats no training data beyond its CI (:func:`real_data_gain`), and are "not comparable"
otherwise.

Statistics are computed on the **unseen** documents (quality) or the real test items (downstream), per document
and paired (every arm on the same documents): each is a contrast linear in the documents' values, with Student's t
interval over them (:mod:`mlmh.stats`; the share of claim 5 alone, a ratio, is bootstrapped). Where a claim picks
"the best" arm (claims 1 and 3), every candidate comparison gets an interval simultaneous over all of them, from the
maximum of their t statistics and their estimated correlation (:func:`family_table`, :func:`best_against_all`), so
the pick does not bend the 95%; claim (1) counts its metrics into that family too (Bonferroni between metrics). The
direction that counts is stated once per metric: for a metric where lower is better, differences are
turned around so that a positive number always means "better".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np

from mlmh.config.declared import findings_results, headline
from mlmh.findings.correlation import MIN_CONDITIONS, STRONG
from mlmh.findings.downstream import augmented, downstream_test
from mlmh.findings.verdicts import (DOWNSTREAM, FAILS, HOLDS, INCONCLUSIVE, REWARDS_DELETION, Caveat, caveats_of,
                                    combined, correlation_verdict, deletion_bar, describe_ci, not_comparable,
                                    not_tested, number, verdict)
from mlmh.results import main_metrics
from mlmh.stats import NO_INTERVAL, Interval, critical, resample_ci, simultaneous, t_interval
from mlmh.types import ConditionResult, Finding, RunResults

SOURCE = "arXiv 2405.12630"
#: claim 5 needs a masking ratio at least this high ("very high masking")
HIGH_RATIO = 0.5


@dataclass
class Evidence:
    """What a claim may read of a run: its typed results, per-document quality on the unseen documents, and
    per-test-item downstream scores (``tasks[who][task]``: ``who`` a condition id, "real" or "chance")."""

    results: RunResults
    per_document: dict[str, dict[str, dict[str, float]]]  # condition id -> metric -> unseen doc id -> value
    tasks: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)  # who -> task -> score -> per item
    seed: int = 0
    strict: bool = True  # leave out the conditions a caveat rules out (mlmh.findings.verdicts.caveats_of)
    left_out: list[Caveat] = field(default_factory=list)  # the caveats of the conditions left out, as found

    def usable(self, row: ConditionResult, metric: str | None) -> bool:
        """Whether ``row`` may decide on ``metric``; a caveat that rules it out is kept in ``left_out``."""
        if row.failed:
            return False
        found = caveats_of(self.results, row, metric)
        if found and self.strict:
            self.left_out.extend(found)
            return False
        return True

    def downstream_learns(self, task: str, score: str) -> bool:
        """Whether ``task``'s model trained on the real documents beats no training data and, where the task reports
        it, the best constant predictor (the class prior for every item) beyond their CIs on ``score``, and scores
        differently on different training sets (:func:`mlmh.findings.downstream.downstream_test`): a model that does
        not cannot tell useful synthetic text from useless, whatever it scores. A caveat that rules the task out is
        kept in ``left_out``."""
        conditions = [r.id for r in self.results.conditions]
        reason = downstream_test(self.tasks, task, score, conditions).reason
        if not reason:
            return True
        if self.strict:
            self.left_out.append(Caveat(DOWNSTREAM, task, f"{reason}, so it cannot tell useful synthetic text from "
                                        "useless"))
        return not self.strict

    def values(self, condition: str, metric: str) -> dict[str, float]:
        return {d: v for d, v in self.per_document.get(condition, {}).get(metric, {}).items() if v is not None}

    def sign(self, metric: str) -> int:
        from mlmh.results import higher_is_better

        return 1 if higher_is_better(self.results, metric) else -1


def paired(ev: Evidence, arms: Sequence[str], metric: str, combine: Callable[[np.ndarray], float], *,
           family: int = 1) -> tuple[float | None, float | None, float | None, int]:
    """(statistic, ci_low, ci_high, documents): ``combine`` of each arm's mean per-document ``metric`` (turned so
    that higher is better) over the documents every arm has. Every ``combine`` here (a difference, a mean of
    differences, a least-squares slope) is linear in the arms' values, so it equals the mean over documents of the
    same contrast taken per document, and gets Student's t interval over those (:func:`mlmh.stats.t_interval`),
    Bonferroni-widened when it is one of ``family`` contrasts (a family of contrasts on the same documents gets
    max-T intervals instead: :func:`family_table`)."""
    found, n = contrast(ev, arms, metric, combine, family=family)
    return found.value, found.low, found.high, n


def contrast(ev: Evidence, arms: Sequence[str], metric: str, combine: Callable[[np.ndarray], float], *,
             family: int = 1) -> tuple[Interval, int]:
    """:func:`paired` with the whole :class:`mlmh.stats.Interval` (standard error, p-value) and the documents."""
    per_arm = [ev.values(a, metric) for a in arms]
    docs = sorted(set.intersection(*(set(v) for v in per_arm))) if per_arm else []
    if not docs:
        return NO_INTERVAL, 0
    matrix = ev.sign(metric) * np.asarray([[v[d] for d in docs] for v in per_arm], dtype=float)
    return t_interval([combine(matrix[:, j]) for j in range(len(docs))], family=family), len(docs)


def _per_document(ev: Evidence, arms: Sequence[str], metric: str,
                  combine: Callable[[np.ndarray], float]) -> dict[str, float]:
    """Document -> ``combine`` of the arms' values on it (turned so that higher is better), over the documents every
    arm has."""
    per_arm = [ev.values(a, metric) for a in arms]
    docs = sorted(set.intersection(*(set(v) for v in per_arm))) if per_arm else []
    matrix = ev.sign(metric) * np.asarray([[v[d] for d in docs] for v in per_arm], dtype=float).reshape(len(arms), -1)
    return {d: combine(matrix[:, j]) for j, d in enumerate(docs)}


def family_table(ev: Evidence, pairs: dict[tuple[str, str], list[str]], metric: str,
                 combine: Callable[[np.ndarray], float], *, sets: int = 1) -> tuple["Table", str]:
    """(arm -> other -> (interval, documents, conditions), how the intervals were made): ``combine`` of each pair's
    conditions, per document, with intervals simultaneous over every pair (one of ``sets`` such families,
    Bonferroni between them). Where every pair has the same documents, the critical value is the max-T one from the
    contrasts' estimated correlation (:func:`mlmh.stats.simultaneous`), else Bonferroni over the pairs."""
    per_pair = {key: _per_document(ev, arms, metric, combine) for key, arms in pairs.items()}
    per_pair = {key: values for key, values in per_pair.items() if values}
    table: Table = defaultdict(dict)
    docs = {tuple(values) for values in per_pair.values()}
    if len(docs) == 1:
        order = sorted(docs.pop())
        found = simultaneous([[per_pair[key][d] for d in order] for key in per_pair], family=sets)
        for key, interval in zip(per_pair, found):
            table[key[0]][key[1]] = (interval, len(order), pairs[key])
        return table, "max-T"
    for key, values in per_pair.items():
        table[key[0]][key[1]] = (t_interval(list(values.values()), family=len(per_pair) * sets), len(values), pairs[key])
    return table, "Bonferroni"


def real_data_gain(ev: Evidence, task: str, score: str,
                   against: str = "chance") -> tuple[float | None, float | None, float | None, int]:
    """(gain, ci_low, ci_high, items): the downstream model trained on the real documents minus one with no
    training data (``against`` "chance"; "constant": the best constant predictor), per test item, with its t CI;
    (None, None, None, 0) without per-item scores."""
    real = ev.tasks.get("real", {}).get(task, {}).get(score)
    chance = ev.tasks.get(against, {}).get(task, {}).get(score)
    if not real or not chance or len(real) != len(chance):
        return None, None, None, 0
    found = t_interval(list(np.asarray(real, dtype=float) - np.asarray(chance, dtype=float)))
    return found.value, found.low, found.high, len(real)


def baseline_arm(name: str, masking: str, seed: int) -> str:
    """The name per-document scores of a trivial baseline ("filler", "deletion") of one masking and seed go by
    beside the conditions' ids (claim 2 measures quality above them)."""
    return f"{name} baseline|{masking}|{seed}"


def _stronger_baseline(ev: Evidence, row: ConditionResult, metric: str) -> str | None:
    """The arm of the better-scoring trivial baseline of ``row``'s masking and seed on unseen ``metric``, or None
    when neither has per-document scores."""
    block = row.unseen
    found = []
    for name in ("filler", "deletion"):
        arm = baseline_arm(name, row.masking, row.seed)
        score = getattr(block, name, {}).get(metric) if block is not None else None
        if ev.values(arm, metric) and score is not None and score.value is not None:
            found.append((ev.sign(metric) * score.value, arm))
    return max(found)[1] if found else None


def _pairs_mean(means: np.ndarray) -> float:
    """Arms laid out as (b_1, a_1, b_2, a_2, ...): the mean of a - b over the pairs."""
    return float(np.mean(means[1::2] - means[0::2]))


def _random(row: ConditionResult) -> bool:
    """Whether ``row`` masks a random share of the words (the paper's masking ratio); the other maskings'
    ``ratio`` is the share of the words they select (stopwords, punctuation, entities)."""
    return row.masking_ratio is not None and row.masking.split(":")[0] == "random"


def _unit(metric: str, results: RunResults | None = None) -> str:
    """How a difference in ``metric`` is counted: in its declared unit ("bleu points", as ``results`` recorded it),
    else in the metric."""
    declared = headline(metric, results)
    return f"{metric} {declared.unit}" if declared and declared.unit else metric


def _part(label: str, value: float | None, low: float | None, high: float | None, direction: int,
          **more: object) -> dict[str, Any]:
    return {"label": label, "statistic": value, "ci_low": low, "ci_high": high,
            "verdict": verdict(low, high, direction), **more}


def _finding(claim: str, text: str, verdict_: str, statement: str, value: float | None, low: float | None,
             high: float | None, unit: str, documents: int, conditions: Sequence[str], ev: Evidence,
             parts: Sequence[dict[str, object]] = (), **extra: object) -> Finding:
    return Finding(claim, SOURCE, text, verdict_, statement, value, low, high, unit, documents,
                   list(dict.fromkeys(conditions)), [], list(parts), dict(extra))


def _estimate(found: Interval, what: str) -> dict[str, Any]:
    """A claim's effect as one number with its standard error and degrees of freedom, ``what`` saying which: the
    quantity a study pools across datasets (:mod:`mlmh.findings.pooling`), free of any choice among arms."""
    return {"what": what, "value": found.value, "se": found.se, "df": found.df}


def _said(result: str) -> str:
    return {HOLDS: "holds", FAILS: "does not hold", INCONCLUSIVE: "is inconclusive"}.get(result, result)


# -- choosing among arms ------------------------------------------------------------------------------------
class Choice(NamedTuple):
    """The verdict of "some arm beats every other" and the comparison that decides it: the ``arm`` and the ``other``
    it is reported against, with their simultaneous interval, documents and the conditions compared."""

    verdict: str
    arm: str
    other: str
    interval: Interval
    documents: int
    conditions: list[str]


#: arm -> other -> (the arm minus the other, turned so that positive is better; documents; conditions compared)
Table = dict[str, dict[str, tuple[Interval, int, list[str]]]]


def _beyond(found: Interval, direction: int) -> bool:
    return verdict(found.low, found.high, direction) == HOLDS


def _against(found: Interval, direction: int) -> bool:
    return verdict(found.low, found.high, direction) == FAILS


def best_against_all(table: Table, direction: int, *, sets: int = 1) -> Choice | None:
    """Selection kept out of the test. The intervals of ``table`` are simultaneous over every (arm, other): max-T
    over the contrasts' estimated correlation where they share their documents (:func:`family_table`; Hothorn, Bretz
    & Westfall 2008), and each set is one of ``sets`` (Bonferroni between them). The claim "the best arm beats
    (``direction`` +1) every other" **holds** when some arm beats every other beyond a bound: an intersection-union
    test per arm (Berger 1982: an arm that does not beat some other fails that comparison's own test), so only the
    choice among the arms costs confidence, and the bound is the smaller of the simultaneous one and Student's
    Bonferroni-widened over the arms; it **does not hold** when every arm is against 0 on some other beyond the
    simultaneous intervals. Either way, whichever arm the data favour, the verdict keeps its 95%. Reported: the arm
    whose worst comparison is best, against that comparison, with the interval its verdict read."""
    rows = {arm: others for arm, others in table.items() if others}
    if not rows:
        return None

    def holding(found: Interval) -> Interval:
        """``found`` at the bound "holds" reads: the smaller of its own (simultaneous) and Bonferroni over the arms."""
        if found.value is None or not found.se or found.df is None or found.low is None:
            return found
        half = min(found.value - found.low, critical(found.df, family=len(rows) * sets) * found.se)
        return found._replace(low=found.value - half, high=found.value + half)

    def worst(arm: str, on: Callable[[Interval], float | None], among: Sequence[str] | None = None) -> tuple[float, str]:
        """The other ``arm`` fares worst against, by ``on`` of the interval (turned to ``direction``)."""
        return min((direction * (on(rows[arm][other][0]) or 0.0), other) for other in (among or rows[arm]))

    def near(found: Interval) -> float | None:  # the end of the holding interval nearer the claimed side's 0
        held = holding(found)
        return held.low if direction > 0 else held.high

    def far(found: Interval) -> float | None:  # the other end
        return found.high if direction > 0 else found.low

    winners = [arm for arm, others in rows.items()
               if all(_beyond(holding(found), direction) for found, _, _ in others.values())]
    losers = [arm for arm, others in rows.items() if any(_against(found, direction) for found, _, _ in others.values())]
    if winners:
        result = HOLDS
        arm = max(winners, key=lambda a: worst(a, near)[0])
        other = worst(arm, near)[1]
    else:
        result = FAILS if len(losers) == len(rows) else INCONCLUSIVE
        arm = max(rows, key=lambda a: worst(a, lambda found: found.value)[0])
        against = [o for o, (found, _, _) in rows[arm].items() if _against(found, direction)]
        other = worst(arm, far, against)[1] if result == FAILS else worst(arm, lambda found: found.value)[1]
    found, documents, conditions = rows[arm][other]
    return Choice(result, arm, other, holding(found) if result == HOLDS else found, documents, conditions)


def _arm(row: ConditionResult) -> str:
    return f"{row.model} / {row.sampler}"


# -- claim 1 ---------------------------------------------------------------------------------------------
def mlm_beats_clm(ev: Evidence, metric: str) -> Finding:
    """Every usable MLM arm (model and sampler) against every usable CLM arm on unseen ``metric``, per document,
    averaged over the masking settings and seeds both have; "holds" when one MLM arm beats every CLM arm beyond
    intervals simultaneous over all pairs and the metrics claim (1) is tested on (:func:`best_against_all`)."""
    claim, text = f"paper-1:{metric}", f"(1) MLM beats CLM on {metric}"
    cells: dict[tuple[str, int], dict[str, dict[str, ConditionResult]]] = defaultdict(lambda: defaultdict(dict))
    for row in ev.results.conditions:
        if row.model_kind in ("mlm", "clm") and row.value(metric, "unseen") is not None and ev.usable(row, metric):
            cells[(row.masking, row.seed)][row.model_kind][_arm(row)] = row
    pairs: dict[tuple[str, str], list[str]] = defaultdict(list)  # (mlm arm, clm arm) -> (clm id, mlm id) per cell
    for kinds in cells.values():
        for m, m_row in kinds.get("mlm", {}).items():
            for c, c_row in kinds.get("clm", {}).items():
                pairs[(m, c)] += [c_row.id, m_row.id]
    if not pairs:
        return not_tested(claim, SOURCE, text, "the run has no masking with both a usable MLM and a CLM condition "
                          f"scored on unseen documents with {metric}")
    metrics = len(paper_metrics(ev.results))
    family = len(pairs) * metrics
    table, rule = family_table(ev, pairs, metric, _pairs_mean, sets=metrics)
    choice = best_against_all(table, +1, sets=metrics)
    if choice is None:
        return not_tested(claim, SOURCE, text, f"no MLM and CLM condition share unseen documents scored with {metric}")
    average, _ = contrast(ev, [arm for arms in pairs.values() for arm in arms], metric, _pairs_mean)
    found = choice.interval
    settings = len(choice.conditions) // 2
    direction = "" if ev.sign(metric) > 0 else " (lower is better, so the difference is CLM minus MLM)"
    mlm_arms, clm_arms = len(table), len({c for others in table.values() for c in others})
    chosen = (f"{mlm_arms} MLM x {clm_arms} CLM arm(s) x {metrics} metric(s), CIs simultaneous over the {family} ("
              + ("max-T over the pairs' correlation" if rule == "max-T" else "Bonferroni")
              + (", Bonferroni over the metrics" if metrics > 1 and rule == "max-T" else "")
              + f"; an MLM arm leads when each of its comparisons clears the smaller of that bound and Student's "
              f"widened over the {mlm_arms * metrics} arm x metric choices, an intersection-union test), so picking "
              "the best keeps its 95%")
    beat = {HOLDS: "it leads every CLM arm beyond its CI", FAILS: "every MLM arm trails some CLM arm beyond its CI",
            }.get(choice.verdict, "neither leads every arm of the other kind beyond its CI")
    unit = _unit(metric, ev.results)
    statement = (f"{text}: the best MLM ({choice.arm}) leads the best CLM ({choice.other}) by {number(found.value)} "
                 f"{unit} per unseen document ({describe_ci(found.low, found.high)}, {choice.documents} "
                 f"documents, averaged over {settings} masking setting(s)){direction}; {beat} ({chosen}). So the "
                 f"claim {_said(choice.verdict)}." + _deletion_elsewhere(ev, choice.conditions, metric))
    parts = [_part(f"{m} vs {c}", iv.value, iv.low, iv.high, +1, documents=n)
             for m, others in table.items() for c, (iv, n, _) in others.items()]
    return _finding(claim, text, choice.verdict, statement, found.value, found.low, found.high, unit,
                    choice.documents, choice.conditions, ev, parts, metric=metric, selection=chosen, family=family,
                    simultaneous=rule, estimate=_estimate(average, "every MLM arm minus every CLM arm, per unseen document, averaged"))


def _deletion_elsewhere(ev: Evidence, arms: Sequence[str], metric: str) -> str:
    """A sentence for when deletion outscores a compared condition on ``metric`` and was checked on another result
    (:func:`mlmh.findings.verdicts.deletion_bar`), so that a reader of the verdict sees it; "" otherwise."""
    ahead, bars = [], set()
    for row in ev.results.conditions:
        block = row.unseen
        if row.id not in arms or block is None:
            continue
        bar = deletion_bar(block, metric, ev.results)
        score, deletion = block.metrics.get(metric), block.deletion.get(metric)
        if bar == metric or score is None or deletion is None or score.value is None or deletion.value is None:
            continue
        bars.add(bar)
        if ev.sign(metric) * (score.value - deletion.value) <= 0:
            ahead.append(f"{deletion.value:.3g} against {score.value:.3g} under {row.masking}")
    if not ahead:
        return ""
    return (f" Deletion scores above {len(ahead)} of the compared conditions on {metric} ({ahead[0]}): {metric} "
            f"{REWARDS_DELETION}, so they were held to deletion on {', '.join(sorted(bars))}, and beat it there.")


# -- claim 2 ---------------------------------------------------------------------------------------------
def lower_ratio_better(ev: Evidence, metric: str, *, beyond_baselines: bool = True) -> Finding:
    """The slope against the random masking ratio, per model and sampler, averaged, of unseen quality: above the
    stronger trivial baseline (``beyond_baselines``: the models' own fall, since the filler's quality falls with
    masking too), or raw, as the paper states the claim. The two are separate findings, each with its verdict."""
    claim = "paper-2" if beyond_baselines else "paper-2:raw"
    text = (f"(2) Lower masking ratios give better generations beyond the baselines ({metric})" if beyond_baselines
            else f"(2) Lower masking ratios give better generations ({metric}, raw quality as the paper measures it)")
    series: dict[tuple[str, str, int], list[ConditionResult]] = defaultdict(list)
    for row in ev.results.conditions:
        if _random(row) and row.value(metric, "unseen") is not None:
            if ev.usable(row, metric):
                series[(row.model, row.sampler, row.seed)].append(row)
    series = {k: sorted(v, key=lambda r: r.masking_ratio) for k, v in series.items()  # type: ignore[arg-type, return-value]  # _random rows have a ratio
              if len({r.masking_ratio for r in v}) >= 2}
    if not series:
        return not_tested(claim, SOURCE, text, "the run has no model and sampler scored at two or more random "
                          f"masking ratios with {metric}")
    baselines = {r.id: _stronger_baseline(ev, r, metric) for rows in series.values() for r in rows}
    relative = beyond_baselines and all(baselines.values())
    if beyond_baselines and not relative:
        return not_tested(claim, SOURCE, text, "the run kept no per-document scores of the filler and deletion for "
                          "every condition (the raw statement of the claim stands beside this one)")
    arms: list[str] = []
    slopes: list[tuple[int, int, np.ndarray]] = []  # (first arm, last arm, ratios); arms (row, baseline) pairs if relative
    parts = []
    for (model, sampler, _), rows in series.items():
        ratios = np.asarray([r.masking_ratio for r in rows], dtype=float)
        own = [a for r in rows for a in ((r.id, baselines[r.id]) if relative else (r.id,))]
        value, low, high, n = paired(ev, own, metric, _slope(ratios, relative))  # type: ignore[arg-type]  # relative: all set
        parts.append(_part(f"{model} / {sampler}", value, low, high, -1, ratios=ratios.tolist(), documents=n))
        slopes.append((len(arms), len(arms) + len(own), ratios))
        arms += own  # type: ignore[arg-type]  # relative: every baseline is set

    def mean_slope(means: np.ndarray) -> float:
        return float(np.mean([_slope(x, relative)(means[a:b]) for a, b, x in slopes]))

    found, n = contrast(ev, arms, metric, mean_slope)
    value, low, high = found.value, found.low, found.high
    result = verdict(low, high, -1)
    swept = sorted({r for _, _, x in slopes for r in x})
    what = (f"unseen {metric} above the stronger of the filler and deletion of each masking" if relative else
            f"raw unseen {metric} (which the trivial filler loses too as masking rises)")
    unit = _unit(metric, ev.results)
    statement = (f"{text}: {what} changes by {number(value)} {unit} per +0.1 of masking ratio "
                 f"({describe_ci(low, high)}, {n} documents; ratios {', '.join(f'{r:g}' for r in swept)}; mean over "
                 f"{len(parts)} model x sampler series). So the claim {_said(result)}.")
    return _finding(claim, text, result, statement, value, low, high, f"{unit} per +0.1 masking ratio", n,
                    [a for a in arms if a in baselines], ev, parts, metric=metric, above_baseline=relative,
                    estimate=_estimate(found, "the slope, averaged over the model x sampler series"))


def _slope(ratios: np.ndarray, relative: bool = False) -> Callable[[np.ndarray], float]:
    """Quality per +0.1 of ratio from the arms' means: one per ratio, or (condition, baseline) pairs when
    ``relative``, whose differences it fits."""
    if relative:
        return lambda means: 0.1 * float(np.polyfit(ratios, means[0::2] - means[1::2], 1)[0])
    return lambda means: 0.1 * float(np.polyfit(ratios, means, 1)[0])


# -- claim 3 ---------------------------------------------------------------------------------------------
def punctuation_extremes(ev: Evidence, metric: str) -> Finding:
    """Punctuation masking against every other masking, per usable arm (model and sampler) of each kind: claimed above
    each for a CLM arm and below each for an MLM arm; each part decided by :func:`best_against_all` over intervals
    simultaneous within the part, and both parts must hold."""
    claim, text = "paper-3", f"(3) Punctuation masking is best for CLM and worst for MLM ({metric})"
    parts, arms, results = [], [], []
    for kind, direction in (("clm", +1), ("mlm", -1)):
        by_arm: dict[str, dict[int, dict[str, ConditionResult]]] = defaultdict(lambda: defaultdict(dict))
        for row in ev.results.conditions:
            if row.model_kind == kind and row.value(metric, "unseen") is not None and ev.usable(row, metric):
                by_arm[_arm(row)][row.seed][row.masking] = row
        pairs: dict[tuple[str, str], list[str]] = defaultdict(list)  # (arm, other masking) -> (other id, punct id)...
        for arm, seeds in by_arm.items():
            for maskings in seeds.values():
                punct = next((m for m in maskings if m.split(":")[0] == "punctuation"), None)
                for other in maskings:
                    if punct is not None and other != punct:
                        pairs[(arm, other)] += [maskings[other].id, maskings[punct].id]
        table, rule = family_table(ev, pairs, metric, _pairs_mean)
        choice = best_against_all(table, direction)
        if choice is None:
            continue
        found = choice.interval
        parts.append(_part(f"{kind.upper()} ({choice.arm}): punctuation minus {choice.other}", found.value, found.low,
                           found.high, direction, documents=choice.documents, comparisons=len(pairs),
                           simultaneous=rule))
        parts[-1]["verdict"] = choice.verdict  # the part's rule, not its shown interval's alone
        results.append(choice.verdict)
        arms += choice.conditions
    if len(parts) < 2:
        return not_tested(claim, SOURCE, text, "the run needs punctuation masking and at least one other masking "
                          f"for both a usable MLM and a usable CLM, scored with {metric}")
    result = combined(results)
    said = "; ".join(f"{p['label']}: {number(p['statistic'])} {describe_ci(p['ci_low'], p['ci_high'])}, "
                     f"{p['verdict']}" for p in parts)
    statement = (f"{text}: on unseen documents, {said}. So the claim {_said(result)} (both parts must hold; within each "
                 "part every arm of the kind is set against every other masking, with CIs simultaneous over those "
                 "comparisons, so the arm shown is chosen without bending its 95%; the maskings hide different shares "
                 "of the words, as in the paper).")
    return _finding(claim, text, result, statement, None, None, None, _unit(metric, ev.results),
                    min(p["documents"] for p in parts), arms, ev, parts, metric=metric)


# -- claim 4 ---------------------------------------------------------------------------------------------
def no_strong_correlation(ev: Evidence, metric: str) -> Finding:
    """Spearman's rho of seen-regeneration quality against the first downstream score, across conditions; decided only
    on a downstream model that learns (:meth:`Evidence.downstream_learns`) and with conditions enough for rho's CI to
    be narrower than the (-STRONG, STRONG) band."""
    claim, text = "paper-4", f"(4) No strong correlation between generation quality ({metric}) and downstream usefulness"
    entries = [c for c in ev.results.correlations if c.metric == metric]
    entry = next((c for c in entries if c.spearman is not None), None)
    if entry is None:  # a model that learns nothing gives every condition one score: that is the reason to give
        for task in dict.fromkeys(c.task for c in entries):
            score = _item_score(ev, task, "")
            reason = downstream_test(ev.tasks, task, score, [r.id for r in ev.results.conditions]).reason
            if reason and task in ev.tasks.get("real", {}):
                return not_comparable(claim, SOURCE, text, [Caveat(DOWNSTREAM, task, (
                    f"{reason}, so it cannot tell useful synthetic text from useless"))])
        return not_tested(claim, SOURCE, text, _why_no_correlation(ev, metric, entries))
    if not ev.downstream_learns(entry.task, _item_score(ev, entry.task, entry.score)):
        return not_tested(claim, SOURCE, text, f"its {entry.task} model does not learn from the real documents")
    low, high = entry.spearman_ci[:2] if entry.spearman_ci else (None, None)
    result = correlation_verdict(low, high, STRONG)
    if low is None or high is None or high - low >= 2 * STRONG:
        ci = "no CI (too few resamples vary)" if low is None or high is None else f"a CI ({describe_ci(low, high)})"
        return not_comparable(claim, SOURCE, text, [Caveat(DOWNSTREAM, entry.task, (
            f"too few conditions: its {entry.n} conditions give Spearman's rho of {metric} with {entry.task} "
            f"{entry.score} {ci} as wide as the whole (-{STRONG:g}, {STRONG:g}) band, so a weak correlation cannot "
            "be told from a strong one"))])
    statement = (f"{text}: across {entry.n} conditions, Spearman's rho of seen {metric} with {entry.task} "
                 f"{entry.score} is {number(entry.spearman)} ({describe_ci(low, high)}); 'strong' means "
                 f"|rho| >= {STRONG:g}. So the claim {_said(result)}.")
    return _finding(claim, text, result, statement, entry.spearman, low, high, "Spearman rho", 0, [], ev, [],
                    metric=metric, task=entry.task, score=entry.score, n=entry.n)


def _why_no_correlation(ev: Evidence, metric: str, entries: Sequence[Any]) -> str:
    """Why the run has no Spearman's rho of ``metric`` with a downstream score, in its own numbers."""
    scored = [r for r in ev.results.conditions if r.downstream and not r.failed]
    if not entries and not scored:
        return "the run trained no downstream model on a condition's synthetic text (it needs a downstream task)"
    if not entries:
        return (f"its {len(scored)} condition(s) with downstream scores have no seen {metric} to set beside them "
                "(it needs regenerations of train documents scored with the metric)")
    most = max(entries, key=lambda c: c.n)
    if most.n < MIN_CONDITIONS:
        return (f"only {most.n} condition(s) have both seen {metric} and a downstream score; Spearman's rho needs at "
                f"least {MIN_CONDITIONS}")
    same = most.summary.removeprefix("not enough conditions: ") if " is the same in all " in most.summary else ""
    return (f"{same} conditions" if same else f"its downstream scores do not vary across the {most.n} conditions") + (
        ", so Spearman's rho is undefined")


# -- claim 5 ---------------------------------------------------------------------------------------------
def useful_at_high_masking(ev: Evidence, metric: str) -> Finding:
    """Downstream per-item scores of the regenerations at the highest ratio against chance and the real data."""
    claim = "paper-5"
    text = "(5) Even at very high masking the synthetic data still trains a useful downstream model"
    ratios = [r.masking_ratio for r in ev.results.conditions
              if _random(r) and r.masking_ratio is not None and r.downstream]  # (_random implies a ratio)
    top = max(ratios, default=None)
    if top is None or top < HIGH_RATIO:
        return not_tested(claim, SOURCE, text, f"the run has no downstream scores at a masking ratio of {HIGH_RATIO:g} "
                          "or more")
    real, chance = ev.tasks.get("real", {}), ev.tasks.get("chance", {})
    task, score = next(((t, s) for t, scores in real.items() for s in scores if s in chance.get(t, {})), (None, None))
    if task is None or score is None:  # both or neither
        return not_tested(claim, SOURCE, text, "no downstream task of the run reports per-item scores beside a "
                          "chance level")
    if not ev.downstream_learns(task, score):
        return not_tested(claim, SOURCE, text, f"its {task} model does not learn from the real documents")
    rows = [r for r in ev.results.conditions if _random(r) and r.masking_ratio == top and r.downstream
            and task in ev.tasks.get(r.id, {}) and ev.usable(r, None)]  # only a model that never learned is left out
    if not rows:
        return not_tested(claim, SOURCE, text, f"no usable condition at masking ratio {top:g} has {task} scores")
    synthetic = np.asarray([ev.tasks[r.id][task][score] for r in rows], dtype=float).mean(axis=0)
    matrix = np.vstack([chance[task][score], synthetic, real[task][score]]).astype(float)
    n = matrix.shape[1]

    def retained(rows_: np.ndarray) -> float:
        means = matrix[:, rows_].mean(axis=1)
        return float((means[1] - means[0]) / (means[2] - means[0])) if means[2] != means[0] else float("nan")

    value, low, high = t_interval(list(matrix[1] - matrix[0]))[:3]  # per test item: linear, so Student's t
    real_gain, real_low, real_high, _ = real_data_gain(ev, task, score)
    share: float | None = None
    share_low = share_high = None
    if real_low is not None and real_low > 0:  # a share of a gain not beyond its CI is no share
        share = retained(np.arange(n))
        share_low, share_high = resample_ci(n, retained, seed=ev.seed)
        kept = (f"keeps {share:.0%} of what the real documents give"
                f" ({'no CI' if share_low is None else f'95% CI {share_low:.0%} to {share_high:.0%}'})")
    else:
        kept = (f"the model trained on the real documents scores {number(real_gain, 3)} against no training data "
                f"itself ({describe_ci(real_low, real_high, 3)}), so no share of its gain is given")
    result = verdict(low, high, +1)
    parts = [_part("share of the real data's gain kept", share, share_low, share_high, +1),
             _part("instead of the real documents, minus the real documents", *_against_real(ev, rows, task, score, ""),
                   +1)]
    added = _against_real(ev, rows, task, score, "augmented")
    if added[0] is not None:  # the synthetic set added to the real documents (augmentation), against them alone
        parts.append(_part("added to the real documents, minus the real documents alone", *added, +1))
        kept += (f"; added to the real documents it scores {number(added[0], 3)} {score} against them alone "
                 f"({describe_ci(added[1], added[2], 3)})")
    power = downstream_test(ev.tasks, task, score, [r.id for r in ev.results.conditions])
    detects = (f"; this test detects a difference of {power.mdd:.3f} {score} between two training sets {power.power:.0%} "
               "of the time" if power.mdd is not None else "")
    statement = (f"{text}: trained on the regenerations at masking ratio {top:g} ({len(rows)} condition(s), averaged), "
                 f"{task} scores {number(value, 3)} {score} above a model with no training data ({describe_ci(low, high, 3)}, "
                 f"{n} test items); {kept}{detects}. So the claim {_said(result)}.")
    return _finding(claim, text, result, statement, value, low, high, f"{task} {score} above chance", n,
                    [r.id for r in rows], ev, parts, task=task, score=score, ratio=top, metric=metric, mdd=power.mdd)


def _against_real(ev: Evidence, rows: Sequence[ConditionResult], task: str, score: str,
                  mode: str) -> tuple[float | None, float | None, float | None]:
    """The downstream model trained on ``rows``' synthetic sets (``mode`` "augmented": each added to the real
    documents), averaged per test item, minus the one trained on the real documents alone, with its t CI."""
    sets = [ev.tasks.get(augmented(r.id) if mode else r.id, {}).get(task, {}).get(score) for r in rows]
    real = ev.tasks.get("real", {}).get(task, {}).get(score)
    if not real or not all(v and len(v) == len(real) for v in sets):
        return None, None, None
    found = t_interval(list(np.asarray(sets, dtype=float).mean(axis=0) - np.asarray(real, dtype=float)))
    return found.value, found.low, found.high


def _item_score(ev: Evidence, task: str, score: str) -> str:
    """``score`` where the task reports it per item beside a chance level, else the first score it does."""
    real, chance = ev.tasks.get("real", {}).get(task, {}), ev.tasks.get("chance", {}).get(task, {})
    if score in real and score in chance:
        return score
    return next((s for s in real if s in chance), score)


def paper_metrics(results: RunResults) -> list[str]:
    """The metrics claim 1 is tested on: the paper's quality metrics (the main results declared ``findings``: BLEU,
    ROUGE-L, METEOR, BERTScore F1) the run scored on unseen documents, else the first."""
    names = main_metrics(results, "unseen")
    return [m for m in findings_results(results) if m in names] or names[:1]


def rules(results: RunResults) -> list[Callable[[Evidence], Finding]]:
    """The claims as rules over an :class:`Evidence`: claim 1 per paper metric, the others on the first."""
    metrics = paper_metrics(results)
    if not metrics:
        return []
    first = metrics[0]
    out: list[Callable[[Evidence], Finding]] = [partial(mlm_beats_clm, metric=m) for m in metrics]
    out.append(partial(lower_ratio_better, metric=first, beyond_baselines=False))
    return out + [lambda e, rule=rule: rule(e, first)
                  for rule in (lower_ratio_better, punctuation_extremes, no_strong_correlation, useful_at_high_masking)]


__all__ = ["Evidence", "SOURCE", "baseline_arm", "paired", "paper_metrics", "real_data_gain", "rules"]
