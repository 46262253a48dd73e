"""The run's answer and comparisons as every face states them: report.md, the terminal summary and the TUI
call these and only lay the lines out (markdown, Rich text). Nothing is decided here: the findings come from
:mod:`mlmh.findings.decide`, the comparisons from :mod:`mlmh.findings.comparisons`, both kept in the results."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

from mlmh.findings.grounds import data_line, model_line
from mlmh.findings.verdicts import memorisation_set
from mlmh.results import model_record_of, roles
from mlmh.types import NOT_COMPARABLE, Finding, RunResults
from mlmh.types.result_blocks import Comparisons, brief_model_name

ROLE_LABEL = {"unseen": "unseen documents (test split: no model trained or was selected on them)",
              "seen": "seen documents (train split: the models learned from them)",
              "control": "control documents (train authors' texts held out of training: what memorisation is judged "
                         "against)"}


# -- the answer: the findings -----------------------------------------------------------------------------
#: the widest line of the terminal's and the TUI's answer (report.md keeps every sentence whole)
LINE = 200
#: documents report.md's answer names by their ids, per set
EXAMPLES = 2


def answer_lines(findings: Sequence[Finding], *, markdown: bool = True, results: RunResults | None = None) -> list[str]:
    """One sentence per tested finding, verdict first, each followed by the models it rests on (once while they
    stay the same; each model's card once, later lines give its margins on the finding's metric under its short
    name); a line naming the claims the run did not test; the documents the answer stands on (with
    ``results``); and the next command to try where a claim was not comparable (:mod:`mlmh.findings.grounds`).
    Plain (``markdown`` False: the terminal and the TUI) it is :func:`brief_lines`, one short line per claim."""
    if not markdown:
        return brief_lines(findings, results)
    lines, said, rated = [], None, None
    cards: set[str] = set()
    names = short_names(results, [row.model for row in results.conditions]) if results is not None else {}
    for f in findings:
        if f.tested:
            verdict = f"**{f.verdict}**" if markdown else f.verdict.upper()
            lines.append(f"{verdict}: {f.statement}" + (_null_rate(f.extra["false_holds"])
                                                         if f.extra.get("false_holds") and f.claim[:7] != rated else ""))
            rated = f.claim[:7] if f.extra.get("false_holds") else rated
            grounds = f.extra.get("rests_on")
            if grounds and grounds != said:
                lines.append("Rests on: " + "; ".join(_card_once(ground, cards, names) for ground in grounds) + ".")
                said = grounds
    untested = [f for f in findings if not f.tested]
    if untested:
        lines.append("Not tested in this run: " + "; ".join(
            f"{f.text} ({f.extra.get('reason', 'no conditions')})" for f in untested) + ".")
    documents = data_line(results, examples=EXAMPLES) if results is not None else ""
    if documents and lines:
        lines.append(f"Measured on {documents}.")
    step: dict[str, Any] = next((f.extra["next_step"] for f in findings if f.extra.get("next_step")), {})
    if step.get("command"):
        command = f"`{step['command']}`" if markdown else step["command"]
        lines.append(f"Next step: {command}: {step.get('why', '')}.")
    elif step:
        lines.append(f"Next step: {step.get('why', '')}.")
    return lines


def _card_once(ground: str, cards: set[str], names: dict[str, str]) -> str:
    """``ground`` (:func:`mlmh.findings.grounds.rests_on`: a model's card, then its margins on one metric, which start
    "unseen") whole the first time its card is said; after that the model's short name (``names``, where the run's
    results are at hand) and the margins alone. Read from the stored text, so a results file read back renders as it
    was decided."""
    card, _, margins = ground.partition("; unseen ")
    if card not in cards or not names:
        cards.add(card)
        return ground
    model = card.split(": held-out accuracy ", 1)[0].split(": not trained by mlmh", 1)[0]
    return f"{names.get(model, model)}: " + (f"unseen {margins}" if margins else "its card above")


def brief_lines(findings: Sequence[Finding], results: RunResults | None = None) -> list[str]:
    """The answer to fit a screen: per claim one line of at most :data:`LINE` characters (verdict, the claim, its
    estimate with a CI printed to the digits its width needs, the documents, and the rule's false-"holds" rate on the
    run's arms; the reason in a few words where it was not comparable or not tested); then what it rests on, each
    model once; the documents; the next step. report.md has every sentence whole."""
    lines = []
    for f in findings:
        if not f.tested:
            continue
        if f.verdict == NOT_COMPARABLE:
            lines.append(_fit(f"{f.verdict.upper()}: {f.text}: {f.statement.split(', because ', 1)[-1]}"))
            continue
        estimate = (f"{precise(f.statistic, f.ci_low, f.ci_high)} {f.unit}" if f.statistic is not None else
                    "; ".join(f"{p['label'].split('): ')[0]}) {p['verdict']}" for p in f.parts))
        rate = f.extra.get("false_holds")
        null = f"; null rate {rate['rate']:.1%}" if rate else ""
        documents = f", {f.documents} documents" if f.documents else ""
        lines.append(_fit(f"{f.verdict.upper()}: {f.text}: {estimate}{documents}{null}"))
    untested = [f for f in findings if not f.tested]
    if untested:
        lines.append(_fit("Not tested: " + "; ".join(dict.fromkeys(f.text.split(" ", 1)[0] for f in untested))
                          + " (report.md says why)"))
    if results is not None:
        compared = {row.model for f in findings if f.tested for row in results.conditions if row.id in f.conditions}
        models = list(dict.fromkeys(row.model for row in results.conditions if row.model in compared))
        names = short_names(results, models)
        rests = [model_line(names[model], model_record_of(results, model)) for model in models]
        lines += [_fit(f"Rests on: {line}") for line in rests]
        documents = data_line(results)
        if documents and lines:
            lines.append(_fit(f"Measured on {documents}."))
    step: dict[str, Any] = next((f.extra["next_step"] for f in findings if f.extra.get("next_step")), {})
    if step:
        lines.append(_fit("Next step: " + (f"{step['command']}: " if step.get("command") else "") + step.get("why", "")))
    return lines


def short_names(results: RunResults, models: Sequence[str]) -> dict[str, str]:
    """Each of ``models`` by its :func:`brief_label` where no other of them shares it, else by its spec."""
    labels = {model: brief_label(results, model) for model in dict.fromkeys(models)}
    shared = list(labels.values())
    return {model: label if shared.count(label) == 1 else model for model, label in labels.items()}


def brief_label(results: RunResults, model: str) -> str:
    """A trained model in a few words, its kind and start (``mlm (minilm)``, ``clm (scratch)``), as progress names it;
    another model by its label."""
    record = model_record_of(results, model)
    if record is None or not record.training:
        return model
    return brief_model_name(record.model_kind, record.training.get("init") or "")


def precise(value: float, low: float | None, high: float | None) -> str:
    """``value`` and its CI with the digits the CI's width needs (never "[-0.01, +0.00]"): two significant ones."""
    import math

    width = abs(high - low) if low is not None and high is not None else abs(value)
    digits = max(2, min(6, 1 - math.floor(math.log10(width)))) if width > 0 else 2
    ci = f" [{low:+.{digits}f}, {high:+.{digits}f}]" if low is not None and high is not None else ""
    return f"{value:+.{digits}f}{ci}"


def _fit(line: str) -> str:
    return line if len(line) <= LINE else line[:LINE - 1].rstrip() + "…"


def _null_rate(rate: dict[str, Any]) -> str:
    """The rule's false-"holds" rate under a null of the run's own arms (:func:`mlmh.calibrate.annotate_null_rates`)."""
    return (f" (This rule on this run's arms, under a null: \"holds\" in {rate['rate']:.1%} of {rate['runs']} simulated "
            f"runs, 95% CI {rate['ci_low']:.1%}-{rate['ci_high']:.1%}; nominal {rate['nominal']:.1%}.)")


# -- the comparisons ----------------------------------------------------------------------------------------
class Section(NamedTuple):
    """A heading and its lines: one per comparison, or the one line saying why there is none. report.md writes
    each as a paragraph and a bullet list."""

    heading: str
    lines: list[str]


def _stated(statement: str, subject: str, markdown: bool) -> str:
    """``statement`` with its leading ``subject`` in bold (markdown)."""
    if markdown and subject and statement.startswith(subject):
        return f"**{subject}**{statement[len(subject):]}"
    return statement


def comparison_sections(results: RunResults, *, markdown: bool = True) -> list[Section]:
    """The comparisons of ``results`` (decided: :func:`mlmh.findings.comparisons.judged`) as report.md's Findings
    lay them out: MLM against CLM (and seq2seq) per document set, where seen and unseen disagree and memorisation
    (runs with both sets), the baselines, the masking-ratio trends and the correlations."""
    block = decided(results)
    present = roles(results)
    sections = []
    for role in present:
        mine = [k for k in block.kinds if k.role == role]
        against_clm = [_stated(k.statement, k.metric, markdown) for k in mine if k.kinds == ["mlm", "clm"]]
        sections.append(Section(f"MLM against CLM on {ROLE_LABEL.get(role, role)}; best MLM sampler per masking "
                                "setting:", against_clm or ["No masking setting has both an MLM and a CLM condition."]))
        against_seq = [_stated(k.statement, k.metric, markdown) for k in mine if k.kinds == ["mlm", "seq2seq"]]
        if against_seq:
            sections.append(Section(f"MLM against seq2seq on {role} documents:", against_seq))
    if len(present) == 2:
        sections.append(Section("Where seen and unseen documents disagree:",
                                [_stated(d.statement, d.metric, markdown) for d in block.disagreements]
                                or ["Nowhere: the MLM-CLM verdict is the same on both sets."]))
        against, _, judged = memorisation_set(results)
        rule = ("flagged when its 95% CI excludes 0 after Holm's adjustment over the run's memorisation tests" if judged
                else "a group gap across authors: reported, not judged")
        sections.append(Section(f"Memorization (seen - {against} gap; {rule}):",
                                [_stated(m.statement, m.model, markdown) for m in block.memorisation]
                                or ["No gap could be computed."]))
    if block.baselines:
        sections.append(Section(f"What the visible context alone earns ({results.headline} documents; a model that "
                                "does not beat these baselines has learned nothing the metric can see):",
                                [b.statement for b in block.baselines]))
    sections.append(Section("Masking-ratio trend:", [_stated(t.statement, t.metric, markdown) for t in block.ratio_trends]
                            or ["Fewer than three masking ratios in this run: no trend to report."]))
    sections.append(Section("Quality of the synthetic corpus (seen regenerations) vs its downstream usefulness:",
                            [c.statement for c in block.correlations]
                            or ["No correlation computed (no downstream scores)."]))
    return sections


def decided(results: RunResults) -> Comparisons:
    """The comparisons of ``results``; a ValueError for results that were never judged (built by hand)."""
    if results.comparisons is None:
        raise ValueError("results without their comparisons: read them with mlmh.load, or decide "
                         "them with mlmh.findings.comparisons.judged")
    return results.comparisons


def plateau_of(results: RunResults, spec: str) -> str | None:
    """Why the trained model ``spec`` decides no finding (it never left the unigram plateau), or None."""
    return next((p.statement for p in decided(results).plateaus if p.model == spec), None)


def comparison_lines(results: RunResults) -> list[str]:
    """The comparisons in plain lines for the terminal and the TUI: each section's heading, then its lines as
    ``- ...``; the trained models still on the unigram plateau last (report.md says so in its Training section)."""
    lines = []
    for section in comparison_sections(results, markdown=False):
        lines += [section.heading] + [f"- {line}" for line in section.lines]
    plateaus = decided(results).plateaus
    if plateaus:
        lines += ["Training:"] + [f"- {p.statement}: no finding is decided on it." for p in plateaus]
    return lines
