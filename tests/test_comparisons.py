"""The run's comparisons (mlmh.findings.comparisons): decided once, into results.json's typed ``comparisons``
block, so report.md only lays them out, results written before the block get it when read, and the terminal
and the TUI state the same verdicts. The results fixture (tests/test_results_fixture.py) is the run."""

from __future__ import annotations

import json
from pathlib import Path

from mlmh.api import load
from mlmh.commands.eval import print_summary
from mlmh.findings.comparisons import judged
from mlmh.report.markdown import render_markdown
from mlmh.tui.screens.results import findings_text
from mlmh.types import ConfigRecord, GenerationCosts, RunResults
from mlmh.types.runconfig import RunConfig

FIXTURES = Path(__file__).parent / "fixtures"
#: report.md of the fixture run, as mlmh wrote it before the comparisons were kept in results.json
REPORT = FIXTURES / "results_fixture_report.md"
#: what report.md's Findings say where a section has no comparison
NONE_SAID = {"Nowhere: the MLM-CLM verdict is the same on both sets.", "No gap could be computed.",
             "Fewer than three masking ratios in this run: no trend to report.",
             "No correlation computed (no downstream scores).", "No masking setting has both an MLM and a CLM condition."}


def fixture() -> dict:
    return json.loads((FIXTURES / "results_fixture_run.json").read_text(encoding="utf-8"))


def statements(data: dict) -> list[str]:
    return [item["statement"] for items in data["comparisons"].values() for item in items]


def findings_of(report: str) -> list[str]:
    """The bullets of report.md's Findings section, without their markdown emphasis."""
    start = report.index("## Findings")
    section = report[start:report.index("\n## ", start)]
    return [line[2:].replace("**", "") for line in section.splitlines() if line.startswith("- ")]


def test_report_md_of_the_fixture_run_is_byte_for_byte_the_one_mlmh_wrote_before():
    assert render_markdown(RunResults.from_dict(fixture()), []) == REPORT.read_text(encoding="utf-8")


def test_every_verdict_sentence_of_report_md_is_in_the_typed_block():
    data = fixture()
    report = render_markdown(RunResults.from_dict(data), [])
    bullets = findings_of(report)
    assert {b for b in bullets if b not in statements(data)} <= NONE_SAID
    assert len([b for b in bullets if b in statements(data)]) == 16 + 3 + 2 + 4  # kinds, models, baselines, correlations
    plateaus = data["comparisons"]["plateaus"]
    assert len(plateaus) == 2 and all(f"**{p['statement']}**: no finding is decided on it" in report for p in plateaus)
    kind = data["comparisons"]["kinds"][5]
    assert (kind["role"], kind["metric"], kind["kinds"], kind["verdict"], kind["wins"], kind["sure"]) == (
        "unseen", "rouge1", ["mlm", "seq2seq"], "MLM and seq2seq tie", [0, 1], [0, 0])
    assert "CI overlap, not a paired test" in kind["detail"]  # says why it may differ from a claim's verdict


def test_the_report_states_what_the_block_says_and_decides_nothing():
    data = fixture()
    data["comparisons"]["kinds"][0]["statement"] = "bleu: a verdict the report did not decide."
    data["comparisons"]["memorisation"] = []
    data["comparisons"]["plateaus"] = []
    report = render_markdown(RunResults.from_dict(data), [])
    assert "- **bleu**: a verdict the report did not decide." in report and "- No gap could be computed." in report
    assert "no finding is decided on it" not in report


def test_results_written_before_the_block_get_it_when_read_and_render_the_same(tmp_path):
    data = fixture()
    old = {key: value for key, value in data.items() if key != "comparisons"} | {"schema_version": 3}
    (tmp_path / "results.json").write_text(json.dumps(old), encoding="utf-8")
    results = load(tmp_path).results  # the one reader of a run judges what it reads
    assert results.comparisons == RunResults.from_dict(data).comparisons  # what the run decided
    assert render_markdown(results, []) == REPORT.read_text(encoding="utf-8")
    assert results.to_dict()["comparisons"] == data["comparisons"] and results.schema_version == data["schema_version"]


def test_judged_keeps_the_block_a_run_decided():
    data = fixture()
    data["comparisons"]["disagreements"] = [{"metric": "bleu", "statement": "bleu: kept as written."}]
    assert judged(data).comparisons.disagreements[0].statement == "bleu: kept as written."


def test_the_terminal_and_the_tui_state_the_same_verdicts(tmp_path, capsys):
    data = fixture()
    results = RunResults.from_dict(data)
    print_summary(results, tmp_path)
    out = capsys.readouterr().out
    assert max(map(len, out.splitlines())) <= 120  # a log holds it: every line wraps within the log width
    terminal, tui = " ".join(out.split()), " ".join(findings_text(results).plain.split())
    for statement in statements(data):
        statement = " ".join(statement.split())
        assert statement in terminal and statement in tui
    for face in (terminal, tui):
        assert "Memorization (seen - unseen gap; a group gap across authors: reported, not judged):" in face
        assert f"{data['comparisons']['plateaus'][0]['statement']}: no finding is decided on it." in face


def test_the_config_and_generation_costs_read_typed_and_write_back_as_read():
    data = fixture()
    results = RunResults.from_dict(data)
    config = results.config
    assert isinstance(config, ConfigRecord) and (config.preset, config.dataset, config.seeds) == ("fixture", "pan", [0])
    assert list(results.to_dict()["config"].items()) == list(data["config"].items())  # keys in the order read
    costs = results.conditions[0].generation
    assert isinstance(costs, GenerationCosts) and costs.samples == data["conditions"][0]["generation"]["samples"]
    assert results.to_dict()["conditions"][0]["generation"] == data["conditions"][0]["generation"]
    run = RunConfig(preset="quick", source="builtin", dataset="pan", models=["m"], seeds=[1, 2])
    assert list(ConfigRecord.of(run).to_dict().items()) == list(run.to_dict().items())
    assert ConfigRecord.from_dict({"preset": "t"}).to_dict() == {"preset": "t"}  # a key the file lacked stays absent
