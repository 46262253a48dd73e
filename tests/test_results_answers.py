"""One answer per question about results (mlmh.results), and results.json read and written only as typed
results: the TUI stars what the report bolds, and ``mlmh human import`` keeps every other field and writes
whole or not at all."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from mlmh.errors import MlmhError
from mlmh.results import best_conditions, format_number, format_score, higher_is_better, main_metrics
from mlmh.storage import rundir
from mlmh.types import RunResults, Score

FIXTURE = Path(__file__).parent / "fixtures" / "results_fixture_run.json"


@pytest.fixture
def fixture_data():
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def test_typed_results_serialise_to_the_file_they_were_read_from(fixture_data):
    """results.json is RunResults.to_dict: reading and writing it back changes nothing (what human import does)."""
    written = RunResults.from_dict(copy.deepcopy(fixture_data)).to_dict()
    assert {k: written[k] for k in fixture_data} == fixture_data


def test_the_tui_table_stars_the_cells_the_report_bolds(fixture_data):
    from mlmh.tui.widgets.results_table import best_of, columns_of

    data = copy.deepcopy(fixture_data)
    first, second = data["conditions"][0], data["conditions"][1]
    second["metrics"]["bleu"]["value"] = first["metrics"]["bleu"]["value"] = 99.0  # a tie: both are best
    results = RunResults.from_dict(data)
    columns = {c.label: c for c in columns_of(results.conditions) if c.key.startswith("metric:")}
    assert not higher_is_better(results, "stutter_word")  # a lower-is-better column is among them
    assert {"bleu", "stutter_word", "novelty"} <= set(columns)
    for name, column in columns.items():
        assert column.higher_is_better == higher_is_better(results, name)
        assert best_of(results.conditions, column) == best_conditions(results, name), name
    assert best_conditions(results, "bleu") == {first["id"], second["id"]}


def test_one_rounding_rule_for_the_report_and_the_tui():
    from mlmh.tui.labels import number

    for value in (0.41234, -0.5, 9.99949):
        assert number(value) == format_number(value) == f"{value:.3f}"
    assert (format_number(68.8241), number(68.8241)) == ("68.82", "68.8")
    assert format_score(Score(0.5, 0.25, 0.75)) == "0.500 [0.250, 0.750]"
    assert format_score(Score(None)) == "n/a"


def test_main_metrics_lead_with_the_papers_ones(fixture_data):
    results = RunResults.from_dict(fixture_data)
    assert main_metrics(results)[:2] == ["bleu", "rouge1"]


def _rated_run(tmp_path, fixture_data):
    """The fixture's results with generations of two of its conditions, exported and rated once."""
    from mlmh.human import export_sheet

    out = tmp_path / "run"
    out.mkdir()
    (out / "results.json").write_text(json.dumps(fixture_data), encoding="utf-8")
    rows = [{"sample": f"s{n}", "condition": c["id"], "doc_id": f"d{n}", "role": "unseen", "original": f"text {n}.",
             "masked_text": "x", "text": f"made {n}."} for n, c in enumerate(fixture_data["conditions"][:2] * 2)]
    (out / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    lines = export_sheet(out, 4).read_text(encoding="utf-8").splitlines()
    filled = tmp_path / "rater.csv"
    filled.write_text("\n".join([lines[0]] + [line.replace(",,,", ",3,4,") for line in lines[1:]]) + "\n",
                      encoding="utf-8")
    return out, filled


def test_human_import_adds_its_block_and_keeps_every_other_field(tmp_path, fixture_data):
    from mlmh.human import import_sheets

    out, filled = _rated_run(tmp_path, fixture_data)
    human = import_sheets(out, [filled])
    merged = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert merged["human"] == json.loads(json.dumps(human.to_dict()))
    assert {k: merged[k] for k in fixture_data} == fixture_data


def test_human_import_on_a_full_disk_leaves_results_json_whole(tmp_path, fixture_data, monkeypatch):
    from mlmh.human import import_sheets

    out, filled = _rated_run(tmp_path, fixture_data)
    before = (out / "results.json").read_bytes()
    real = rundir._open_temp

    class FullDisk:
        def __init__(self, handle):
            self.handle = handle

        def write(self, data):
            raise OSError(28, "No space left on device")

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.handle.close()

    def open_temp(path):
        handle, tmp = real(path)
        return (FullDisk(handle) if path.name == "results.json" else handle), tmp

    monkeypatch.setattr(rundir, "_open_temp", open_temp)
    with pytest.raises(MlmhError, match="cannot write .*results.json: No space left on device"):
        import_sheets(out, [filled])
    assert (out / "results.json").read_bytes() == before
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]
