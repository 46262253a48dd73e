"""Fluency beside claim (1): does the MLM that wins on overlap also read as fluently as the CLM?

Overlap metrics (BLEU, ROUGE, BERTScore) ask how much of the original a regeneration recovers, not whether
it reads as language. Where a run scored gen-ppl (a pretrained judge's perplexity, with the originals'
beside it as ``gen-ppl_original``: the metric that declares ``fluency``), this finding takes, per masking, the best MLM and the best CLM on claim
(1)'s first overlap metric (the conditions a caveat rules out left out, as for every finding) and compares
the judge's mean NLL per token of their unseen documents, paired per document. The originals' perplexity
cancels in that difference; each part still states both as multiples of it, with the filler's, so a reader
sees how far from the original either lands. Perplexity rewards repetition, so the run's distinct-n is
named beside whenever the run scored it.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np

from mlmh.config.declared import fluency_results
from mlmh.findings.paper_claims import SOURCE, Evidence, paper_metrics
from mlmh.findings.verdicts import FAILS, HOLDS, describe_ci, not_tested, verdict
from mlmh.stats import t_interval
from mlmh.types import ConditionResult, Finding, RunResults



@dataclass(frozen=True)
class Judge:
    """The results of the metric that declares itself a fluency judge (``Metric.fluency``): ``judged`` scores the
    regenerations (gen-ppl), ``floor`` the originals (``gen-ppl_original``)."""

    judged: str
    floor: str


def declared_judge(results: RunResults | None = None) -> Judge | None:
    """The fluency judge a metric declares (as ``results`` recorded it, where it did), or None."""
    declared = fluency_results(results)
    return Judge(*declared) if declared else None


def judged(results: RunResults, judge: Judge) -> bool:
    """Whether the run scored the judge on unseen documents (the finding is listed only then)."""
    return any(judge.judged in row.quality("unseen") for row in results.conditions)


def rules(results: RunResults) -> list[Callable[[Evidence], Finding]]:
    """The fluency check as a rule over a run's :class:`~mlmh.findings.paper_claims.Evidence`, where the run has gen-ppl."""
    judge = declared_judge(results)
    if judge is None:
        return []
    overlap = [m for m in paper_metrics(results) if m not in (judge.judged, judge.floor)]
    if not overlap or not judged(results, judge):
        return []
    metric = overlap[0]

    def rule(ev: Evidence) -> Finding:
        return fluency_beside_claim_1(ev, metric, judge)

    return [rule]


def _overlap_winner(ev: Evidence, rows: Sequence[ConditionResult], metric: str, judge: Judge) -> ConditionResult | None:
    """The usable condition of ``rows`` best on unseen ``metric`` that also has the judge's figures."""
    scored = [r for r in rows
              if r.value(metric, "unseen") is not None and ev.values(r.id, judge.judged) and ev.usable(r, metric)]
    return max(scored, key=lambda r: ev.sign(metric) * r.scored(metric, "unseen"), default=None)


def _ratio(row: ConditionResult, figures: dict, judge: Judge) -> float | None:
    """A gen-ppl figure as a multiple of the originals' (the floor a perfect regeneration reaches)."""
    floor = row.quality("unseen").get(judge.floor)
    score = figures.get(judge.judged)
    if floor is None or score is None or not floor.value or score.value is None:
        return None
    return score.value / floor.value


def _diversity(ev: Evidence, row: ConditionResult) -> str:
    names = sorted(m for m in row.quality("unseen") if m.startswith("distinct-"))
    return ", ".join(f"{m} {row.value(m, 'unseen'):.3f}" for m in names if row.value(m, "unseen") is not None)


def fluency_beside_claim_1(ev: Evidence, metric: str, judge: Judge) -> Finding:
    """Per masking, the judge's NLL per token of the best CLM on ``metric`` minus the best MLM's (positive: the
    overlap winner among MLMs reads more fluently), per unseen document, averaged over the maskings."""
    claim = f"paper-1-fluency:{metric}"
    text = f"(1) fluency check: the MLM best on {metric} reads as fluently as the CLM best on it (judge's perplexity)"
    groups: dict[tuple[str, int], list[ConditionResult]] = defaultdict(list)
    for row in ev.results.conditions:
        groups[(row.masking, row.seed)].append(row)
    parts: list[dict] = []
    for (masking, seed), rows in groups.items():
        mlm = _overlap_winner(ev, [r for r in rows if r.model_kind == "mlm"], metric, judge)
        clm = _overlap_winner(ev, [r for r in rows if r.model_kind == "clm"], metric, judge)
        if mlm is None or clm is None:
            continue
        a, b = ev.values(mlm.id, judge.judged), ev.values(clm.id, judge.judged)
        docs = sorted(set(a) & set(b))
        if not docs:
            continue
        gap = np.asarray([math.log(b[d]) - math.log(a[d]) for d in docs])  # nats per token: log ppl = mean NLL
        low, high = t_interval(list(gap))[1:3]
        unseen_mlm, unseen_clm = mlm.unseen, clm.unseen
        parts.append({"label": masking + (f" (seed {seed})" if seed else ""), "statistic": float(gap.mean()),
                      "ci_low": low, "ci_high": high, "verdict": verdict(low, high, +1), "mlm": mlm.id, "clm": clm.id,
                      "documents": len(docs),
                      "mlm_x_original": _ratio(mlm, unseen_mlm.metrics, judge) if unseen_mlm else None,
                      "clm_x_original": _ratio(clm, unseen_clm.metrics, judge) if unseen_clm else None,
                      "filler_x_original": _ratio(mlm, unseen_mlm.filler, judge) if unseen_mlm else None,
                      "deletion_x_original": _ratio(mlm, unseen_mlm.deletion, judge) if unseen_mlm else None,
                      "mlm_diversity": _diversity(ev, mlm), "clm_diversity": _diversity(ev, clm)})
    if not parts:
        return not_tested(claim, SOURCE, text, "the run has no masking with both a usable MLM and a CLM condition "
                          f"scored on unseen documents with {metric} and {judge.judged}")

    # per document, the mean over the maskings' pairs: one paired contrast with its t interval, as claim (1) has
    shared = sorted(set.intersection(*(set(ev.values(p[k], judge.judged)) for p in parts for k in ("mlm", "clm"))))
    matrix = np.asarray([[math.log(ev.values(p["clm"], judge.judged)[d])
                          - math.log(ev.values(p["mlm"], judge.judged)[d]) for d in shared] for p in parts])
    n = len(shared)
    if n:
        value, low, high = t_interval(list(matrix.mean(axis=0)))[:3]
    else:
        value, low, high = None, None, None
    result = verdict(low, high, +1)
    said = "; ".join(
        f"{p['label']}: MLM {_times(p['mlm_x_original'])}, CLM {_times(p['clm_x_original'])}, filler "
        f"{_times(p['filler_x_original'])}, deletion {_times(p['deletion_x_original'])} the originals' perplexity"
        + (f" (MLM {p['mlm_diversity']}; CLM {p['clm_diversity']})" if p["mlm_diversity"] else "")
        for p in parts)
    statement = (f"{text}: the CLM's mean NLL per token exceeds the MLM's by {_nats(value)} per unseen document "
                 f"({describe_ci(low, high, 3)}, {n} documents), averaged over {len(parts)} masking(s); {said}. "
                 + {HOLDS: "So the overlap winner among MLMs also reads more fluently.",
                    FAILS: "So the overlap winner among MLMs reads less fluently than the CLM.",
                    }.get(result, "So fluency does not separate them.")
                 + " A lower perplexity can come from repetition: read it beside distinct-n.")
    conditions = list(dict.fromkeys(c for p in parts for c in (p["clm"], p["mlm"])))
    return Finding(claim, SOURCE, text, result, statement, value, low, high, "nats per token", n, conditions, [],
                   parts, {"metric": metric, "judge": judge.judged})


def _nats(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.3f} nats"


def _times(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.2f}x"
