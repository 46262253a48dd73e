"""A study's findings from its runs' results: each paper claim's verdict per dataset side by side, claims (1) and (2)
pooled across datasets (:mod:`mlmh.findings.pooling`), and the paper's tables (quality per model and masking,
downstream scores per training set) with one column per dataset. Pure: results in, :class:`StudyResults` out."""

from __future__ import annotations

from typing import Iterable, Mapping

from mlmh.findings.answer import brief_label, precise
from mlmh.findings.paper_claims import SOURCE, paper_metrics
from mlmh.findings.pooling import Pooled, across, random_effects
from mlmh.types.study import DatasetVerdict, StudyCell, StudyClaim, StudyDataset, StudyResults
from mlmh.types import NOT_TESTED, Finding, RunResults

#: the claims pooled across datasets (their estimate is one mean over documents, free of a choice among arms), and
#: the sign each claims: claim (1) a positive MLM - CLM difference, claim (2) a falling slope
POOLED_SIGN = {"paper-1": +1, "paper-2": -1}
POOLING = "random effects: DerSimonian-Laird tau^2, Hartung-Knapp t interval on k - 1 degrees of freedom"


def summarise(preset: str, datasets: list[StudyDataset], results: Mapping[str, RunResults],
              failed: Mapping[str, str] | None = None) -> StudyResults:
    """The study of ``preset`` whose ``datasets`` (in the study's order) measured ``results`` (by label); ``failed``:
    why each dataset without results has none."""
    claims = [_claim(claim, {d.label: _finding(results[d.label], claim) for d in datasets})
              for claim in _claim_ids(results[d.label] for d in datasets)]
    return StudyResults(preset=preset, datasets=datasets, claims=claims, quality=_quality(results),
                        downstream=_downstream(results), failed=dict(failed or {}))


def _claim_ids(runs: Iterable[RunResults]) -> list[str]:
    """The paper's claims any run decided or listed, in the order the first run that has each listed it."""
    ids: list[str] = []
    for results in runs:
        ids += [f.claim for f in results.findings if f.source == SOURCE and f.claim not in ids]
    return ids


def _finding(results: RunResults, claim: str) -> Finding | None:
    return next((f for f in results.findings if f.claim == claim), None)


def _family(claim: str) -> str:
    """The claim a finding id belongs to ("paper-1:bleu" -> "paper-1"; "paper-2:raw" -> "paper-2")."""
    return claim.split(":", 1)[0]


def _claim(claim: str, found: dict[str, Finding | None]) -> StudyClaim:
    text = next(f.text for f in found.values() if f is not None)
    per = {label: DatasetVerdict(NOT_TESTED) if f is None else
           DatasetVerdict(f.verdict, f.statistic, f.ci_low, f.ci_high, f.extra.get("estimate"))
           for label, f in found.items()}
    sign = POOLED_SIGN.get(_family(claim))
    pooled, what = _pool(per) if sign is not None else (None, "")
    verdict = across([v.verdict for v in per.values()], pooled, sign or 1)
    said = "; ".join(f"{label}: {v.verdict}" + (f" ({precise(v.value, v.low, v.high)})" if v.value is not None else "")
                     for label, v in per.items())
    statement = f"{text}: {verdict} ({said})."
    if pooled is not None:
        statement += (f" Pooled over {pooled.k} datasets ({what}): {precise(pooled.value, pooled.low, pooled.high)}, "
                      f"tau^2 {pooled.tau2:.3g}, I^2 {pooled.i2:.0%} ({POOLING}).")
    elif sign is not None:
        statement += " Not pooled: it needs the estimate and standard error of at least two datasets' verdicts."
    return StudyClaim(claim, text, per, verdict, statement, pooled._asdict() if pooled is not None else None, what)


def _pool(per: dict[str, DatasetVerdict]) -> tuple[Pooled | None, str]:
    """The pooled estimate of the datasets that decided the claim and recorded an estimate with a standard error."""
    estimates = [v.estimate for v in per.values()
                 if v.verdict != NOT_TESTED and v.estimate and v.estimate.get("value") is not None
                 and (v.estimate.get("se") or 0) > 0]
    if len(estimates) < 2:
        return None, ""
    pooled = random_effects([float(e["value"]) for e in estimates], [float(e["se"]) for e in estimates])
    return pooled, str(estimates[0].get("what", ""))


def _quality(results: Mapping[str, RunResults]) -> list[StudyCell]:
    """Unseen quality on each run's first paper metric, per model (kind and start), sampler and masking."""
    cells = []
    for label, run in results.items():
        metrics = paper_metrics(run)
        if not metrics:
            continue
        for row in run.conditions:
            score = row.quality("unseen").get(metrics[0])
            if score is None or row.failed:
                continue
            name = f"{brief_label(run, row.model)} / {row.sampler} @ {row.masking}"
            cells.append(StudyCell(name, label, score.value, score.ci_low, score.ci_high, metrics[0]))
    return cells


def _downstream(results: Mapping[str, RunResults]) -> list[StudyCell]:
    """Each run's downstream task, every score: trained on the real documents, and on each condition's synthetic
    documents."""
    cells = []
    for label, run in results.items():
        for task, scores in run.baseline.items():
            sets = [("real documents", scores)] + [
                (f"synthetic: {brief_label(run, row.model)} / {row.sampler} @ {row.masking}", row.downstream.get(task, {}))
                for row in run.conditions]
            for name, found in sets:
                cells += [StudyCell(name, label, value, unit=score, task=task) for score, value in found.items()
                          if isinstance(value, (int, float))]
    return cells
