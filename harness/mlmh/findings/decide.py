"""A run's findings: the claims of both seed papers tested on its conditions, caveats deciding the verdicts.

This is the product's answer, read first by report.md, the terminal summary, the TUI, notebooks and trackers
(all through ``RunResults.findings``; :func:`mlmh.findings.answer.answer_lines` says them). The claims themselves
live with their papers: arXiv 2405.12630's five in :mod:`mlmh.findings.paper_claims` (with a fluency check beside
claim (1), :mod:`mlmh.findings.fluency`, where a run scored gen-ppl), Li et al.'s (ICML 2024) in
:mod:`mlmh.findings.claims`; the verdict and caveat rules in :mod:`mlmh.findings.verdicts`. Here each claim is
decided once, the same way:

1. Test the claim on the conditions no caveat rules out (:func:`mlmh.findings.verdicts.caveats_of`): a model still
   on the unigram plateau, a condition no better than the filler or deletion on the metric, a memorising model.
   Say which were left out, and why, in the finding.
2. If that leaves the claim without conditions but the run had some, the verdict is "not comparable", with
   the caveats as its reason: a claim never "holds" (or fails) on a model that learned nothing.
"""

from __future__ import annotations

from typing import Callable, Sequence

from mlmh.findings import claims as gmlm
from mlmh.findings import fluency, paper_claims
from mlmh.findings.grounds import annotate
from mlmh.findings.paper_claims import Evidence
from mlmh.findings.verdicts import PLATEAU, Caveat, never_learned, not_comparable, summarise
from mlmh.results import model_record_of
from mlmh.types import NOT_TESTED, Finding, RunResults

Rule = Callable[[Evidence], Finding]


def decide(rule: Rule, ev: Evidence) -> Finding:
    """The finding of one claim under the caveat rule of the module docstring."""
    ev.strict, ev.left_out = True, []
    found = rule(ev)
    caveats = list(dict.fromkeys(ev.left_out))
    if found.tested:
        if caveats:
            found.caveats = [c.text for c in caveats]
            found.statement += f" Left out: {summarise(caveats)}."
        return found
    if not caveats:
        return found
    ev.strict, ev.left_out = False, []
    try:
        loose = rule(ev)
    finally:
        ev.strict, ev.left_out = True, []
    return not_comparable(found.claim, found.source, found.text, caveats, loose.conditions) if loose.tested else found


def _gmlm_rule(claim: gmlm.Claim, cells: Sequence[gmlm.Cell]) -> Rule:
    """Li et al.'s claim as a rule: its cells less those whose model never left the unigram plateau."""
    def rule(ev: Evidence) -> Finding:
        usable = []
        for cell in cells:
            row = next((c for c in ev.results.conditions if c.id in cell.ids), None)
            if row is None or row.model_kind != "mlm":  # the claims are about masked LMs' samplers
                usable.append(cell)
                continue
            why = never_learned(cell.model_label, model_record_of(ev.results, row.model))
            if why and ev.strict:
                ev.left_out.append(Caveat(PLATEAU, cell.model_label, why))
            else:
                usable.append(cell)
        return claim.rule(claim, usable, ev.seed)
    return rule


def run_findings(results: RunResults, per_document: dict[str, dict[str, dict[str, float]]],
                 tasks: dict[str, dict[str, dict[str, list[float]]]], cells: Sequence[gmlm.Cell],
                 seed: int = 0) -> list[Finding]:
    """The paper's claims (always listed, "not tested" with the reason where the run lacks their conditions),
    then Li et al.'s when the run tests at least one of them."""
    ev = Evidence(results, per_document, tasks, seed)
    found = [decide(rule, ev) for rule in paper_claims.rules(results) + fluency.rules(results)]
    second = [decide(_gmlm_rule(claim, cells), ev) for claim in gmlm.CLAIMS]
    found += second if any(f.tested for f in second) else []
    annotate(results, found)
    return found


__all__ = ["decide", "run_findings", "NOT_TESTED"]
