"""Claims of seed paper 002 tested on a run's own conditions, each a finding with a paired t CI over the documents.

Li et al. (ICML 2024), "Promises and Pitfalls of Generative Masked Language Modeling": masking more in
training is better (their Theorem 2), stutter comes from filling dependent positions in parallel and
refinement undoes it (Theorem 3, Remark 1), and Gibbs with adaptively chosen positions is proposed as a
better sampler (their future work; ``adaptive-gibbs`` here).

A claim is a named rule over the run's conditions: it picks the conditions it needs, or says why the run
has none (so every preset can call :func:`evaluate`). Its statistic is computed from per-document counts
on the **unseen** documents, pooled as the run's own tables pool them (sum of hits / sum of positions),
with Student's t interval over the documents of the statistic's per-document linearisation (:func:`paired`): the
conditions of one masking and seed share their documents and masks, so the CI is that of a paired comparison. Verdicts and caveats follow :mod:`mlmh.findings.verdicts`; :mod:`mlmh.findings` runs these claims beside
the paper's own (:mod:`mlmh.findings.paper_claims`) and leaves out a model that never left the unigram plateau.

Two per-document measures, both from the generations through the run's own rules:

- **masked-word accuracy**: the share of masked words regenerated exactly (verbatim recall,
  :func:`mlmh.findings.memorization.verbatim_recall`). It scores only what the model generated, word by word; BLEU
  of the whole text is dominated by the unmasked context, which every model of a masking copies alike.
- **stutter**: generated words equal to their left neighbour (the ``stutter`` metric's word level).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from mlmh.findings.verdicts import INCONCLUSIVE, describe_ci, not_tested, number, verdict
from mlmh.stats import t_interval
from mlmh.types import Finding

SOURCE = "Li et al., ICML 2024"
#: the methods Li et al.'s claims are about, by name: the claims state which model and samplers they test
TRAINED_MLM, ONE_SHOT, ADAPTIVE_GIBBS = "trained-mlm", "one-shot", "adaptive-gibbs"
ACCURACY, STUTTER = "masked-word accuracy", "stutter"


@dataclass
class Cell:
    """One setting of the grid (model, masking, sampler; its seeds merged) as a claim sees it.

    ``counts[measure][doc_id]`` = (hits, positions) on one unseen document; ``passes[doc_id]`` = forward
    passes that document cost. Parameters are those that differ from the component's defaults.
    """

    ids: list[str]
    model: str
    model_params: dict[str, Any]
    masking: str
    masking_params: dict[str, Any]
    sampler: str
    sampler_params: dict[str, Any]
    counts: dict[str, dict[str, tuple[float, float]]] = field(default_factory=dict)
    passes: dict[str, int] = field(default_factory=dict)

    @property
    def model_label(self) -> str:
        return _label(self.model, self.model_params, drop=("size", "max_steps"))

    @property
    def sampler_label(self) -> str:
        return _label(self.sampler, self.sampler_params)

    @property
    def ratio(self) -> float | None:
        return self.masking_params.get("ratio") if self.masking == "random" else None

    @property
    def T(self) -> int:
        """Forward passes per document (the most any document took)."""
        return max(self.passes.values(), default=0)


def _label(name: str, params: dict[str, Any], drop: Sequence[str] = ()) -> str:
    shown = {k: v for k, v in sorted(params.items()) if k not in drop}
    return name + (":" + ",".join(f"{k}={v}" for k, v in shown.items()) if shown else "")


def _changed(component: Any) -> dict[str, Any]:
    defaults = {p.name: p.default for p in component.parameters}
    return {k: v for k, v in component.params.items() if defaults.get(k, object()) != v}


# -- statistics ------------------------------------------------------------------------------------
def paired(arms: Sequence[Cell], measure: str, combine: Callable[[np.ndarray], float], *,
           seed: int = 0) -> tuple[float | None, float | None, float | None, int]:
    """(statistic, ci_low, ci_high, documents): ``combine`` of the arms' pooled rates (in %), over the documents
    every arm shares, with Student's t interval over those documents (:func:`mlmh.stats.t_interval`) of the
    statistic's linearisation. A pooled rate (sum of hits / sum of positions) is a ratio of means; each document's
    share in it is ``rate + 100 (hits - rate/100 x positions) / mean positions`` (their mean is the rate itself), and
    ``combine`` (a slope, a mean of differences) is linear in the rates, so the statistic is the mean over documents
    of ``combine`` of those shares, paired across arms. The percentile bootstrap it replaced said "holds" under a null
    in 5.5% of simulated runs at 16 documents, twice its one-sided 2.5% (mlmh calibrate). ``seed`` is kept for
    callers; the interval draws nothing."""
    docs = sorted(set.intersection(*(set(a.counts.get(measure, {})) for a in arms)))
    if not docs:
        return None, None, None, 0
    hits = np.asarray([[a.counts[measure][d][0] for d in docs] for a in arms], dtype=float)
    totals = np.asarray([[a.counts[measure][d][1] for d in docs] for a in arms], dtype=float)
    den = totals.sum(axis=1)
    if np.any(den == 0):
        return None, None, None, len(docs)
    rates = hits.sum(axis=1) / den  # (arms,)
    shares = 100.0 * (rates[:, None] + (hits - rates[:, None] * totals) / (den[:, None] / len(docs)))
    value = float(combine(100.0 * rates))
    if not np.isfinite(value):
        return None, None, None, len(docs)
    # rounded below any reported digit, so that arms scoring alike on every document differ by exactly 0
    found = t_interval([round(float(combine(shares[:, j])), 9) for j in range(len(docs))])
    return value, found.low, found.high, len(docs)


def slope_per_tenth(x: Sequence[float]) -> Callable[[np.ndarray], float]:
    """Least-squares slope of the rates against ``x``, per +0.1 of ``x``."""
    xs = np.asarray(x, dtype=float)
    return lambda rates: 0.1 * float(np.polyfit(xs, rates, 1)[0])


def mean_of_differences(rates: np.ndarray) -> float:
    """Arms laid out as (first_1, second_1, first_2, ...): the mean of second - first over the pairs."""
    return float(np.mean(rates[1::2] - rates[0::2]))


# -- the claims ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Claim:
    id: str
    text: str
    direction: int  # +1: the statistic is claimed positive; -1: negative
    rule: Callable[["Claim", list[Cell], int], Finding]
    arg: Any = None


def _finding(claim: Claim, statistic: float | None, low: float | None, high: float | None, subject: str,
             after: str, cells: Sequence[Cell], documents: int, context: str = "", **extra: Any) -> Finding:
    """The finding, its statement one sentence: subject, statistic, ``after`` (unit...), CI, verdict."""
    reason = extra.pop("reason", None)
    unit = extra.pop("unit", "")
    result = INCONCLUSIVE if reason or statistic is None else verdict(low, high, claim.direction)
    statement = (f"{claim.text}: {subject} {number(statistic)} {after} ({describe_ci(low, high)}, {documents} unseen "
                 f"documents{'; ' + context if context else ''}), so it {result}{' because ' + reason if reason else ''}.")
    return Finding(claim.id, SOURCE, claim.text, result, statement, statistic, low, high, unit, documents,
                   [i for c in cells for i in c.ids], caveats=[reason] if reason else [],
                   extra={"direction": "rise" if claim.direction > 0 else "fall", **extra})


def _skip(claim: Claim, reason: str) -> Finding:
    return not_tested(claim.id, SOURCE, claim.text, reason)


def _more_masking(claim: Claim, cells: list[Cell], seed: int) -> Finding:
    """(a) masked-word accuracy rises with the fixed training mask ratio, at inference masking ``arg``."""
    at = [c for c in cells if c.ratio == claim.arg and c.model == TRAINED_MLM]
    refiners = [c for c in at if c.sampler == "mask-predict"]
    if not refiners:
        return _skip(claim, f"the run has no trained-mlm model with mask-predict at random:ratio={claim.arg}")
    sampler = max(refiners, key=lambda c: c.T).sampler_label
    at = [c for c in at if c.sampler_label == sampler]
    fixed = sorted((c for c in at if c.model_params.get("mask_schedule") == "fixed" and "mask_ratio" in c.model_params),
                   key=lambda c: c.model_params["mask_ratio"])
    ratios = [c.model_params["mask_ratio"] for c in fixed]
    if len(set(ratios)) < 2 or len(set(ratios)) < len(ratios):
        return _skip(claim, f"fewer than two fixed training mask ratios with {sampler} at random:ratio={claim.arg}")
    value, low, high, n = paired(fixed, ACCURACY, slope_per_tenth(ratios), seed=seed)
    beside = {}
    for c in at:
        schedule = c.model_params.get("mask_schedule", "fixed")
        if schedule != "fixed":
            v, lo, hi, _ = paired([c], ACCURACY, lambda r: float(r[0]), seed=seed)
            beside[schedule] = {"value": v, "ci_low": lo, "ci_high": hi, "condition": c.ids}
    levels = {str(r): paired([c], ACCURACY, lambda x: float(x[0]), seed=seed)[0] for r, c in zip(ratios, fixed)}
    after = f"points per +0.1 of fixed training mask ratio {'/'.join(f'{r:g}' for r in ratios)}"
    context = ", ".join(f"{k} {v['value']:.1f}%" for k, v in beside.items() if v["value"] is not None)
    return _finding(claim, value, low, high, f"with {sampler}, unseen masked-word accuracy changes by", after,
                    fixed + [c for c in at if c not in fixed], n, context=context and f"accuracy of {context}",
                    measure=ACCURACY, unit="accuracy points per +0.1 training mask ratio", sampler=sampler,
                    fixed_ratios=ratios, accuracy_by_ratio=levels, beside=beside)


def _series(cells: list[Cell], family: str) -> dict[tuple[str, str, str], list[Cell]]:
    """(model, masking) -> the cells of one refinement series, ordered by T (forward passes per document).

    mask-predict at its default settings but steps; gibbs started from a one-shot fill, whose T = 1 point
    is the one-shot fill itself (the ``one-shot`` sampler)."""
    out: dict[tuple[str, str, str], list[Cell]] = {}
    starts: dict[tuple[str, str], Cell] = {}  # gibbs series: the one-shot fill is their T = 1 point
    for c in cells:
        params = dict(c.sampler_params)
        params.pop("steps", None)
        where = (c.model_label, _label(c.masking, c.masking_params))
        if family == "gibbs" and c.sampler == ONE_SHOT and not params:
            starts[where] = c
        elif family == "gibbs" and c.sampler == "gibbs" and params.get("init") == ONE_SHOT:
            params.pop("init")  # other settings (e.g. burnin) stay in the key: one series per setting
            out.setdefault((*where, _label("gibbs", params)), []).append(c)
        elif family != "gibbs" and c.sampler == family and not params:
            out.setdefault((*where, family), []).append(c)
    for key, members in out.items():
        if family == "gibbs" and key[:2] in starts:
            members.append(starts[key[:2]])
    return {k: sorted(v, key=lambda c: c.T) for k, v in out.items() if len({c.T for c in v}) >= 2}


def _stutter_falls(claim: Claim, cells: list[Cell], seed: int) -> Finding:
    """(b) stutter falls from the fewest to the most refinement passes, averaged over models and maskings."""
    series = _series(cells, claim.arg)
    if not series:
        return _skip(claim, f"the run has no {claim.arg} series with two or more step counts")
    arms = [c for cells_ in series.values() for c in (cells_[0], cells_[-1])]
    value, low, high, n = paired(arms, STUTTER, mean_of_differences, seed=seed)
    Ts = sorted({c.T for s in series.values() for c in s})
    by_T = {str(t): [paired([c], STUTTER, lambda r: float(r[0]), seed=seed)[0] for s in series.values() for c in s if c.T == t]
            for t in Ts}
    first, last = min(c.T for c in arms[0::2]), max(c.T for c in arms[1::2])
    after = f"percentage points from T={first} to T={last} forward passes, mean over {len(series)} model x masking series"
    return _finding(claim, value, low, high, "unseen word stutter changes by", after,
                    [c for s in series.values() for c in s], n, measure=STUTTER,
                    unit="percentage points", steps=Ts,
                    stutter_by_T={t: float(np.mean([v for v in vs if v is not None])) if any(v is not None for v in vs) else None
                                  for t, vs in by_T.items()},
                    series=[[c.ids[0] for c in s] for s in series.values()])


def _adaptive_vs_gibbs(claim: Claim, cells: list[Cell], seed: int) -> Finding:
    """(c) adaptive-gibbs minus gibbs of the same settings, model and masking, at equal forward passes."""
    pairs = []
    for a in (c for c in cells if c.sampler == ADAPTIVE_GIBBS):
        own = {k: v for k, v in a.sampler_params.items() if k not in ("pick", "memory")}
        for g in cells:
            if (g.sampler == "gibbs" and g.sampler_params == own and g.model_label == a.model_label
                    and (g.masking, g.masking_params) == (a.masking, a.masking_params)):
                pairs.append((g, a))
    if not pairs:
        return _skip(claim, "the run has no adaptive-gibbs condition beside a gibbs condition of the same settings")
    unequal = [f"{a.ids[0]}: {sum(a.passes.values())} vs {sum(g.passes.values())}" for g, a in pairs
               if a.passes != g.passes]
    arms = [c for pair in pairs for c in pair]
    value, low, high, n = paired(arms, ACCURACY, mean_of_differences, seed=seed)
    stutter = paired(arms, STUTTER, mean_of_differences, seed=seed)
    subject = f"adaptive-gibbs minus gibbs at {pairs[0][0].T} forward passes per document is"
    after = f"points of unseen masked-word accuracy, mean over {len(pairs)} model x masking pairs"
    extra: dict[str, Any] = {"measure": ACCURACY, "unit": "accuracy points", "passes_equal": not unequal,
                             "stutter_difference": {"value": stutter[0], "ci_low": stutter[1], "ci_high": stutter[2]}}
    if unequal:
        extra["reason"] = "the forward passes differ (" + "; ".join(unequal[:3]) + ")"
    return _finding(claim, value, low, high, subject, after, arms, n, **extra)


CLAIMS: tuple[Claim, ...] = (
    Claim("a@0.5", "(a) Training with more masking gives better generation at inference masking 0.5", +1, _more_masking, 0.5),
    Claim("a@0.8", "(a) Training with more masking gives better generation at inference masking 0.8", +1, _more_masking, 0.8),
    Claim("b:gibbs", "(b) Stutter falls as Gibbs refinement steps grow", -1, _stutter_falls, "gibbs"),
    Claim("b:mask-predict", "(b) Stutter falls as mask-predict refinement steps grow", -1, _stutter_falls, "mask-predict"),
    Claim("c", "(c) Adaptive Gibbs beats plain Gibbs at equal forward passes", +1, _adaptive_vs_gibbs),
)


def evaluate(cells: list[Cell], *, seed: int = 0, claims: Sequence[Claim] = CLAIMS) -> list[Finding]:
    """One finding per claim; a claim whose conditions are not in the run is "not tested" with its reason."""
    return [claim.rule(claim, cells, seed) for claim in claims]


# -- from a run ------------------------------------------------------------------------------------
def counts_of(generation: Any) -> dict[str, tuple[float, float]]:
    """Per-document (hits, positions) of each measure, by the run's own rules."""
    from mlmh.findings.memorization import verbatim_recall
    from mlmh.findings.stutter import generated_words, repeats_left_neighbour

    recall = verbatim_recall([generation])
    sequence = generated_words(generation)
    stutter = repeats_left_neighbour([w for w, _ in sequence], [g for _, g in sequence])
    return {ACCURACY: (recall.extra["matched"], recall.extra["masked"]), STUTTER: stutter}


def run_cells(conditions: Sequence[Any], generations: dict[str, list[Any]], role_of: dict[str, str]) -> list[Cell]:
    """The cells of a run: its conditions with seeds merged, counted on the unseen documents."""
    cells: dict[tuple[str, str, str], Cell] = {}
    for condition in conditions:
        key = (condition.model.spec, condition.masking.spec, condition.sampler.spec)
        # the training schedule always explicit: claim (a) reads it, and a default can change between versions
        schedule = {k: condition.model.params[k] for k in ("mask_schedule", "mask_ratio") if k in condition.model.params}
        cell = cells.setdefault(key, Cell([], condition.model.name, {**_changed(condition.model), **schedule},
                                          condition.masking.name,
                                          _changed(condition.masking), condition.sampler.name, _changed(condition.sampler)))
        cell.ids.append(condition.id)
        for g in generations.get(condition.id, []):
            if role_of.get(g.doc_id) != "unseen" or not g.masked_words:
                continue
            for measure, (hits, total) in counts_of(g).items():
                before = cell.counts.setdefault(measure, {}).get(g.doc_id, (0.0, 0.0))
                cell.counts[measure][g.doc_id] = (before[0] + hits, before[1] + total)
            cell.passes[g.doc_id] = max(cell.passes.get(g.doc_id, 0), g.forward_passes)
    return list(cells.values())


