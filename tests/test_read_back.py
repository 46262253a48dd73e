"""Everything mlmh reads back is held to the rules it was written under: a run's config.json on ``--resume`` by a
preset's (every count bounded, errors naming RUN/config.json), results.json's condition ids unique (every reader
keys its rows by them), a rating sheet that rates each item once, a preset's ``cost`` typed and finite. Each is one
line, a non-zero exit, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_cli
from test_tui_data import write_run

import runner_fakes
from mlmh.config.presets import from_table
from mlmh.errors import DataError
from mlmh.storage.rundir import RunDir

SMALL = {"maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"], "tasks": [], "limit": 2}


@pytest.fixture(autouse=True)
def fakes():
    runner_fakes.install()


def _one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    assert not any(word in err for word in ("Traceback", "IndexError", "KeyError", "ValueError",
                                            "TypeError", "DuplicateKey"))
    return lines[0]


# -- config.json on --resume -----------------------------------------------------------------------------
@pytest.fixture
def interrupted(tmp_path) -> Path:
    """An unfinished run (its config.json, as a run writes it first) of the fake preset."""
    config = from_table({**runner_fakes.FAKE_PRESET, **SMALL}, name="fake", source="fake.toml")
    run = RunDir(tmp_path / "run")
    run.start({"config": config.to_dict(), "experiment": config.experiment()}, "mlmh eval --resume")
    run.unlock()
    return run.path


@pytest.mark.parametrize("key, value, why", [("limit", 10**12, "must be <= 1000000000"),
                                             ("batch_size", 10**9, "must be <= 4096"),
                                             ("control", -1, "must be a number of documents or a fraction"),
                                             ("samplers", ["no-such-sampler"], "no-such-sampler")])
def test_resume_holds_config_json_to_the_rules_of_a_preset_and_names_it(interrupted, capsys, key, value, why):
    config = interrupted / "config.json"
    record = json.loads(config.read_text(encoding="utf-8"))
    record["config"][key] = value
    config.write_text(json.dumps(record), encoding="utf-8")
    before = config.read_bytes()
    code, _, err = run_cli(capsys, "eval", "--resume", "--output-path", str(interrupted))
    line = _one_line(err)
    assert code == 2 and f"{config}" in line and why in line, line
    assert "fake.toml" not in line and "preset" not in line.split(str(config))[0]  # the file read, not the preset
    assert config.read_bytes() == before and sorted(p.name for p in interrupted.iterdir()) == ["config.json"]


# -- results.json ---------------------------------------------------------------------------------------
def test_two_conditions_with_one_id_are_refused_by_every_reader(tmp_path, capsys):
    import mlmh

    run = write_run(tmp_path / "run")
    results = run / "results.json"
    data = json.loads(results.read_text(encoding="utf-8"))
    data["conditions"].append(dict(data["conditions"][0]))
    results.write_text(json.dumps(data), encoding="utf-8")
    before = {p.name: p.read_bytes() for p in run.iterdir()}
    first = data["conditions"][0]["id"]
    why = f"key conditions[{len(data['conditions']) - 1}].id {first!r} repeats conditions[0]'s; each id must be unique"
    with pytest.raises(DataError, match=f"{results}: not a readable results file.*: " + why.replace("[", r"\[")
                       .replace("]", r"\]").replace("|", r"\|")):
        mlmh.load(run)
    for args in (["report", str(run)], ["tui", "--run", str(run)]):
        code, _, err = run_cli(capsys, *args)
        assert code == 1 and why in _one_line(err)
    assert {p.name: p.read_bytes() for p in run.iterdir()} == before


# -- a rating sheet -------------------------------------------------------------------------------------
def test_a_sheet_that_rates_one_item_twice_is_refused_naming_the_rows(tmp_path, capsys):
    from mlmh.human import export_sheet

    run = write_run(tmp_path / "run")
    sheet = export_sheet(run, 4, out=tmp_path / "sheet.csv")
    lines = sheet.read_text(encoding="utf-8").splitlines()
    rated = [lines[0]] + [line.replace(",,,", ",3,4,") for line in lines[1:]]
    rated.append(rated[2].replace(",3,4,", ",5,5,"))  # the second item again, rated otherwise
    filled = tmp_path / "rater.csv"
    filled.write_text("\n".join(rated) + "\n", encoding="utf-8")
    item = rated[2].split(",")[0]
    code, _, err = run_cli(capsys, "human", "import", str(run), str(filled))
    assert code == 1 and f"{filled}: item {item} is on rows 3 and {len(rated)}; a sheet rates each item once" in \
        _one_line(err)
    assert not (run / "human.json").exists()


# -- a preset's cost ------------------------------------------------------------------------------------
@pytest.mark.parametrize("cost, why", [("{cold_cpu_s = nan}", "cost key 'cold_cpu_s' must be a finite number"),
                                       ("{warm_cpu_s = 1e400}", "cost key 'warm_cpu_s' must be a finite number"),
                                       ("{cold_cpu_s = 4, measured = 5}", "cost key 'measured' must be text"),
                                       ("{cold_cpu = 4}", "key 'cost' must be a table of")])
def test_a_preset_cost_is_typed_and_finite(tmp_path, capsys, cost, why):
    preset = tmp_path / "costly.toml"
    preset.write_text('dataset = "fake-data"\nmodels = ["fake-mlm"]\nmaskings = ["every-nth"]\nsamplers = ["fake-fill"]\n'
                      f"cost = {cost}\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "eval", "--preset", str(preset), "--show-config")
    assert code == 2 and f"{preset}: {why}" in _one_line(err) and not out
