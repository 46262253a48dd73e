"""The declarations a verdict reads are the run's own (results.json's ``declared``), not whatever plugins are installed
when the file is read again: the main results and which of them the claims, the sweep and the baselines use, their
labels and units, which of them reward deletion (the deletion bar), the models a sweep varies and the fluency judge
(mlmh.config.declared.record and .of). A file written before they were recorded is read with the installed plugins'
declarations, as it always was.

Each test decides verdicts with the builtins installed, writes the results and reads them back with the builtins'
declarations changed by a plugin that replaces them (:func:`changed`), and compares; the same file without its
record, read the same way, must come out different, or the comparison would prove nothing."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from mlmh import calibrate as sim
from mlmh import hookimpl
from mlmh.components import Headline, Metric
from mlmh.config import declared
from mlmh.findings.comparisons import compare, judged
from mlmh.findings.crossover import summarise
from mlmh.findings.decide import run_findings
from mlmh.findings.verdicts import deletion_bar
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry, reset
from mlmh.report.markdown import render_markdown
from mlmh.storage.schema import DECLARED, RESULTS, problem
from mlmh.types import ConfigRecord, Declared, DeclaredResult, RunResults, Score
from mlmh_builtins.metrics_overlap import BleuMetric, RougeMetric
from mlmh_builtins.metrics_ppl import GenPerplexityMetric
from mlmh_builtins.models_trained import TrainedCLM, TrainedMLM

FIXTURE = Path(__file__).parent / "fixtures" / "results_fixture_run.json"


# -- the builtins' declarations, changed after the run ---------------------------------------------------------
class Bleu(BleuMetric):
    headlines = ()  # BLEU is no main result any more: not tested by the claims, no deletion bar, no baseline


class Rouge(RougeMetric):
    headlines = (Headline("rougeL", 5, label="Changed ROUGE-L", unit="changed units"),)  # first, and no longer rewards deletion


class GenPpl(GenPerplexityMetric):
    fluency = None  # no fluency judge


class MLM(TrainedMLM):
    swept = False


class CLM(TrainedCLM):
    swept = False


class Replacing:
    @hookimpl
    def register_metrics(self, register):
        for metric in (Bleu(), Rouge(), GenPpl()):
            register(metric, replace=True)

    @hookimpl
    def register_models(self, register):
        for model in (MLM(), CLM()):
            register(model, replace=True)


def changed() -> None:
    """From here on, the installed builtins declare other things than the run recorded."""
    get_plugin_manager().register(Replacing(), name="replacing-plugin")
    reset()
    assert declared.main_results()[0] == "rougeL" and declared.headline("bleu") is None
    assert declared.fluency_results() is None and declared.swept_models() == {}


def written_and_read(results: RunResults, *, record: bool = True) -> RunResults:
    """``results`` through results.json and back (checked as every reader checks it), with or without its record."""
    data = json.loads(json.dumps(results.to_dict()))
    if not record:
        data.pop("declared", None)
    assert problem(data, RESULTS, "results.json") is None
    return RunResults.from_dict(data)


# -- comparisons and report.md of a real run's results.json -------------------------------------------------------
def fixture_without_comparisons() -> dict:
    """The results fixture's run, its comparisons left to be decided when it is read."""
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    data.pop("comparisons")
    return data


def verdicts_of(data: dict) -> tuple[list[str], str]:
    results = judged(copy.deepcopy(data))  # as mlmh.load decides a file's comparisons
    return results.comparisons.statements(), render_markdown(results, [])


def test_the_fixture_run_recorded_what_the_builtins_declare():
    data = json.loads(FIXTURE.read_text(encoding="utf-8"))
    assert Declared.from_dict(data["declared"]) == declared.record()


def test_a_real_run_s_comparisons_and_report_do_not_move_with_the_plugins_installed():
    data = fixture_without_comparisons()
    before = verdicts_of(data)
    old = {k: v for k, v in data.items() if k != "declared"}
    assert verdicts_of(old) == before  # with the builtins installed, the record says what they say
    changed()
    assert verdicts_of(data) == before
    # the file without its record is read with the changed declarations: other verdicts, so the above is no accident
    statements, report = verdicts_of(old)
    assert statements != before[0] and report != before[1]


# -- the papers' claims: units, the claims' results, the deletion bar -------------------------------------------------
def simulated() -> tuple[RunResults, dict, dict]:
    """A simulated run (4 MLM arms, 1 CLM, the MLM ahead) scored on BLEU and ROUGE-L, whose deletion outscores every
    arm on ROUGE-L (which rewards deletion) and none on BLEU (which does not)."""
    shape = sim.structure(mlm=4, clm=1, documents=16)
    rule = next(r for r in sim.rules_for(shape) if r.claim == "paper-1:quality")
    results, per_document, tasks = sim.simulated(shape, rule.effect, np.random.default_rng(4))
    results.config = ConfigRecord(preset="test", dataset="simulated", seeds=[0])
    for arm, values in per_document.items():
        values["bleu"] = values.pop("quality")
        values["rougeL"] = {d: 1.0 if arm.startswith("deletion") else v / 100 for d, v in values["bleu"].items()}
    for row in results.conditions:
        block = row.unseen
        assert block is not None
        for scores in (block.metrics, block.filler, block.deletion):
            scores["bleu"] = scores.pop("quality")
            scores["rougeL"] = dataclasses.replace(scores["bleu"], value=scores["bleu"].value / 100)
        block.deletion["rougeL"] = dataclasses.replace(block.deletion["rougeL"], value=1.0)
        # the paired margins per document a finding's grounds state (mlmh.findings.grounds.above_baselines)
        block.above_filler = {"bleu": Score(30.0, 29.0, 31.0), "rougeL": Score(0.3, 0.29, 0.31)}
        block.above_deletion = {"bleu": Score(35.0, 34.0, 36.0), "rougeL": Score(-0.5, -0.6, -0.4)}
        row.metrics = block.metrics
    return results, per_document, tasks


def claims_of(results: RunResults, per_document: dict, tasks: dict) -> list[tuple[str, str, str, str]]:
    found = run_findings(results, per_document, tasks, [], seed=0)
    return [(f.claim, f.verdict, f.unit, f.statement + repr(f.extra)) for f in found] + [
        (kind, getattr(v, "verdict", ""), "", v.statement) for kind, v in compare(results).verdicts()]


def test_the_claims_on_a_file_read_again_are_the_claims_the_run_decided():
    results, per_document, tasks = simulated()
    results.declared = declared.record()  # as the runner records them (mlmh.run.results.build_results)
    before = claims_of(results, per_document, tasks)
    claims = {claim: unit for claim, _, unit, _ in before}
    assert claims["paper-1:bleu"] == "bleu points" and "paper-1:rougeL" in claims
    block = results.conditions[0].unseen
    assert deletion_bar(block, "rougeL", results) == "bleu"  # ROUGE-L rewards deletion: held to deletion on BLEU
    assert any("so deletion is no bar on it" in statement for *_, statement in before)
    assert any("over deletion, on bleu, +35" in statement for *_, statement in before)  # the grounds, on the bar

    read = written_and_read(results)
    assert read.declared == results.declared
    changed()
    assert claims_of(read, per_document, tasks) == before
    assert deletion_bar(read.conditions[0].unseen, "rougeL", read) == "bleu"
    assert declared.headline("bleu", read).unit == "points" and declared.findings_results(read)[:2] == ["bleu", "rougeL"]

    old = written_and_read(results, record=False)
    assert old.declared is None and deletion_bar(old.conditions[0].unseen, "rougeL", old) == "rougeL"
    after = claims_of(old, per_document, tasks)
    assert {claim for claim, *_ in after if claim.startswith("paper-1:")} == {"paper-1:rougeL"}
    assert after != before


# -- the fluency judge -----------------------------------------------------------------------------------------------
def test_the_fluency_judge_the_run_declared_judges_the_file_read_again():
    from test_fluency import judged_rows
    from test_findings import results_of

    rows = judged_rows(30.0, 45.0)
    per_document = {r.id: {m: {f"t{i}": r.unseen.metrics[m].value for i in range(24)}
                           for m in ("bleu", "gen-ppl", "gen-ppl_original")} for r in rows}
    results = results_of(rows)
    results.config = ConfigRecord(preset="test", dataset="simulated", seeds=[0])
    results.declared = declared.record()
    before = claims_of(results, per_document, {})
    assert "paper-1-fluency:bleu" in {claim for claim, *_ in before}
    read = written_and_read(results)
    changed()
    assert claims_of(read, per_document, {}) == before
    old = claims_of(written_and_read(results, record=False), per_document, {})
    assert "paper-1-fluency:bleu" not in {claim for claim, *_ in old}


# -- a data-constrained sweep: its objectives, its results and their labels -------------------------------------------
def test_a_sweep_s_crossovers_read_the_models_and_results_the_run_declared():
    from test_crossover import sweep

    results, per_document = sweep([5.0, 4.6, 4.2, 4.0], [4.5, 4.4, 4.5, 4.7], [0.60, 0.62, 0.70, 0.72],
                                  [0.66, 0.68, 0.66, 0.64])
    results.config = ConfigRecord(preset="test", dataset="simulated", seeds=[0])
    results.declared = declared.record()
    before = summarise(results, per_document, n_resamples=200)
    assert before is not None and before.metrics == ["rougeL"] and "unseen ROUGE-L" in before.answer
    read = written_and_read(results)
    changed()
    after = summarise(read, per_document, n_resamples=200)
    assert after is not None and after.to_dict() == before.to_dict()
    assert summarise(written_and_read(results, record=False), per_document, n_resamples=200) is None  # nothing swept


# -- the record itself -------------------------------------------------------------------------------------------
def test_a_run_records_what_the_installed_components_declare():
    found = declared.record()
    assert [h.result for h in found.headlines] == declared.main_results() == declared.main_results(None)
    assert found.swept_models == declared.swept_models() == {"trained-mlm": "mlm", "trained-clm": "clm"}
    assert tuple(found.fluency or ()) == declared.fluency_results() == ("gen-ppl", "gen-ppl_original")
    assert [h.result for h in found.headlines if h.rewards_deletion] == ["rouge1", "rouge2", "rougeL", "bertscore_f1"]
    assert problem(found.to_dict(), DECLARED, "declared") is None


def test_the_record_keeps_every_field_of_a_declaration_and_the_schema_checks_them():
    # a field added to Headline must be recorded too, or a file read again would lose it
    kept = {f.name for f in dataclasses.fields(DeclaredResult)} - {"extra"}
    assert kept == {f.name for f in dataclasses.fields(Headline)} == set(declared.HEADLINE_FIELDS)
    assert set(DECLARED.keys["headlines"].shape.keys) == kept
    good = declared.record().to_dict()
    bad = copy.deepcopy(good)
    bad["headlines"][0]["rewards_deletion"] = "no"
    assert problem(bad, DECLARED, "declared") == "declared.headlines[0].rewards_deletion: must be true or false, not text"
    twice = copy.deepcopy(good)
    twice["headlines"].append(twice["headlines"][0])
    assert "repeats" in (problem(twice, DECLARED, "declared") or "")


def test_an_empty_record_is_a_run_with_nothing_declared_not_a_file_without_a_record():
    results, *_ = simulated()
    results.declared = Declared()
    assert declared.main_results(results) == [] and declared.fluency_results(results) is None
    assert declared.swept_models(results) == {} and declared.main_results() != []
    assert get_registry().get("metric", "bleu").headlines  # the installed ones are untouched
