"""What an answer rests on: the models a finding compares (held-out accuracy against the best constant
predictor, the budget each got, and how far they score above the trivial baselines), the documents it was measured on, and the next command when a claim
could not be compared. Decided when the findings are (:func:`mlmh.findings.run_findings` keeps them in each
finding's ``extra``), so every face states the same grounds; the faces only format them (:func:`data_line`).

A reader must be able to tell from the answer alone whether the models were good enough to judge."""

from __future__ import annotations

from typing import Sequence

from mlmh.findings.verdicts import DOWNSTREAM, HOLDS, MEMORISED, PLATEAU, deletion_bar, never_learned, verdict
from mlmh.results import model_record_of
from mlmh.types import NOT_COMPARABLE, ConditionResult, Finding, ModelRecord, RunResults, Score

#: the preset whose models start from a pretrained encoder: the next step when scratch models cannot learn a corpus
PRETRAINED_PRESET = "paper"


def model_line(model: str, record: ModelRecord | None) -> str:
    """One line on ``model``: its held-out accuracy against the best constant predictor (and the ratio), and
    the budget it trained on; a model mlmh did not train is named as such."""
    training = record.training if record is not None else {}
    accuracy = training.get("heldout_accuracy")
    if accuracy is None:
        return f"{model}: not trained by mlmh (no held-out check against the best constant predictor)"
    constant = training.get("best_constant_accuracy", training.get("unigram_baseline_accuracy"))
    learned = "beats" if never_learned(model, record) is None else "does not beat"
    against = (f"against {constant:.3f} for the best constant ({accuracy / constant:.2f}x; {learned} it)"
               if constant else f"({learned} the best constant)")
    budget = training.get("budget")
    spent = [f"{training['steps_run']:,} of {training['steps']:,} steps" if "steps_run" in training and "steps" in training
             else "", f"{training['epochs']:.3g} epochs" if training.get("epochs") else "",
             f"{training['tokens_seen']:,} tokens" if training.get("tokens_seen") else "",
             f"{training['supervised_targets']:,} targets" if training.get("supervised_targets") else "",
             f"budget: {budget}" if budget else "", "stopped early" if training.get("stopped_early") else ""]
    spent_text = ", ".join(s for s in spent if s)
    return f"{model}: held-out accuracy {accuracy:.3f} {against}" + (f"; trained {spent_text}" if spent_text else "")


def above_baselines(rows: Sequence[ConditionResult], metric: str, results: RunResults | None = None) -> str:
    """How far ``rows`` (one model's compared conditions) score above the filler and deletion on unseen ``metric``,
    per document with the paired CI, as a range over the conditions and the weakest margin whose CI reaches 0
    (deletion on :func:`mlmh.findings.verdicts.deletion_bar`'s result); "" where the run kept no paired difference
    (results written before)."""
    filler: list[tuple[str, Score]] = []
    deletion: list[tuple[str, Score]] = []
    bars = set()
    for row in rows:
        block = row.unseen
        if block is None or metric not in block.above_filler:
            continue
        filler.append((row.masking, block.above_filler[metric]))
        bar = deletion_bar(block, metric, results)
        if bar in block.above_deletion:
            deletion.append((row.masking, block.above_deletion[bar]))
            bars.add(bar)
    if not filler:
        return ""
    text = f"unseen {metric} per document over the filler {_span(filler)}"
    if deletion:
        on = "" if bars == {metric} else f", on {', '.join(sorted(bars))},"
        text += f"; over deletion{on} {_span(deletion)}"
    return text


def _span(margins: Sequence[tuple[str, Score]]) -> str:
    """The range of ``margins`` (masking, paired difference) and whether every CI lies on the better side of 0."""
    kept = [(masking, score) for masking, score in margins if score.value is not None]
    if not kept:
        return "n/a"
    values = sorted(float(score.value) for _, score in kept if score.value is not None)
    span = f"{values[0]:+.3g}" if len(values) == 1 else f"{values[0]:+.3g} to {values[-1]:+.3g}"
    weak = [(m, s) for m, s in kept if not _beyond(s)]
    if not weak:
        return f"{span} (every CI clear of 0)"
    masking, worst = min(weak, key=lambda pair: (1 if pair[1].higher_is_better else -1) * float(pair[1].value or 0.0))
    return f"{span} ({len(weak)} of {len(kept)} CIs reach 0, e.g. {masking}: {_signed(worst)})"


def _beyond(score: Score) -> bool:
    """Whether the paired difference's CI lies wholly on the better side of 0 (:func:`verdict`'s rule)."""
    return verdict(score.ci_low, score.ci_high, 1 if score.higher_is_better else -1) == HOLDS


def _signed(score: Score) -> str:
    ci = f" [{score.ci_low:+.3g}, {score.ci_high:+.3g}]" if score.ci_low is not None and score.ci_high is not None else ""
    return f"{score.value:+.3g}{ci}" if score.value is not None else "n/a"


def rests_on(results: RunResults, finding: Finding) -> list[str]:
    """:func:`model_line` of every model whose conditions the finding compares, in their order, with how far they
    score above the baselines on the finding's metric (:func:`above_baselines`)."""
    compared = [row for row in results.conditions if row.id in set(finding.conditions)]
    metric = finding.extra.get("metric")
    lines = []
    for model in dict.fromkeys(row.model for row in compared):
        line = model_line(model, model_record_of(results, model))
        margin = (above_baselines([r for r in compared if r.model == model], metric, results) if isinstance(metric, str)
                  else "")
        lines.append(f"{line}; {margin}" if margin else line)
    return lines


def next_step(results: RunResults, findings: Sequence[Finding]) -> dict[str, str]:
    """The command to try when a claim was not comparable (``command``, "" when the advice is not one command)
    and why (``why``); {} when every claim could be compared."""
    blocked = [f for f in findings if f.verdict == NOT_COMPARABLE]
    if not blocked:
        return {}
    text = " ".join(c for f in blocked for c in f.caveats) + " ".join(f.statement for f in blocked)
    scratch = [m for m, record in results.models.items() if record.training and not record.training.get("init")]
    config = results.config
    where = (f" --dataset {config.dataset}" if config.dataset else "") + (f" --data {config.data}" if config.data else "")
    stuck, recited = _mentions(text, PLATEAU), _mentions(text, MEMORISED)
    if config.preset != PRETRAINED_PRESET and scratch and (stuck or recited):
        what = " and ".join(w for w, found in (("stayed on the unigram plateau", stuck), ("memorised", recited)) if found)
        return {"command": f"mlmh eval --preset {PRETRAINED_PRESET}{where}",
                "why": f"models trained from scratch {what} on this corpus; that preset fine-tunes one pretrained start "
                       "as MLM, CLM and seq2seq (its cost: mlmh ls presets)"}
    if _mentions(text, MEMORISED):
        return {"command": "", "why": "models that scored their own train documents above unseen ones: fewer passes "
                                      "over them (trained-*:max_passes=N) or more train documents (a larger --data)"}
    if _mentions(text, DOWNSTREAM):
        return {"command": "", "why": "a downstream task whose model learns from the real documents: more labelled "
                                      "training documents (--limit, or a larger --data), or another task (--task)"}
    return {"command": "", "why": "more unseen documents narrow the CIs (--limit N), and longer training lets models "
                                  "leave the baselines behind (trained-*:max_steps=N, patience_tokens=N)"}


def _mentions(text: str, kind: str) -> bool:
    """Whether caveat sentences of ``kind`` are in ``text`` (by the words :func:`mlmh.findings.verdicts.summarise` uses)."""
    words = {PLATEAU: "unigram plateau", MEMORISED: "memorised", DOWNSTREAM: "cannot tell useful synthetic text"}
    return words[kind] in text


def data_line(results: RunResults, *, examples: int = 0) -> str:
    """The documents the findings stand on: each set's size, the groups it comes from and the documents cut to
    the model window (the control set's too, where the run held one), and the groups validation held; with
    ``examples``, that many of each set's documents by the corpus's own ids (report.md: a reader finds them in their
    files); "" for results written before these were kept."""
    from mlmh.machine.escape import markdown_cell

    parts = []
    for role in ("unseen", "seen", "control"):
        block = results.documents.get(role)
        if block is None or not block.documents or not block.groups:
            continue
        cut = f", {block.cut} cut to the model window" if block.cut else ""
        ids = ", ".join(f"`{markdown_cell(i).replace('`', chr(39))}`" for i in block.ids[:examples])
        named = f" (e.g. {ids})" if ids else ""
        parts.append(f"{role}: {block.documents} documents from {block.groups} group(s){named}{cut}")
    if results.dataset.validation_groups:
        parts.append(f"validation: {results.dataset.validation_documents} documents from "
                     f"{results.dataset.validation_groups} group(s)")
    return "; ".join(parts)


def annotate(results: RunResults, findings: Sequence[Finding]) -> None:
    """Keep each compared finding's grounds (``rests_on``) and, on the first not comparable one, the next step."""
    for finding in findings:
        if finding.tested:  # decided, or not comparable
            lines = rests_on(results, finding)
            if lines:
                finding.extra["rests_on"] = lines
    step = next_step(results, findings)
    if step:
        next(f for f in findings if f.verdict == NOT_COMPARABLE).extra["next_step"] = step


__all__ = ["PRETRAINED_PRESET", "above_baselines", "annotate", "data_line", "model_line", "next_step", "rests_on"]
