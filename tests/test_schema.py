"""Files read back are validated by schema (mlmh.storage.schema): a hand-edited or damaged results.json, samples.jsonl or
human key is one line naming the file and the key, in `mlmh report`, in the API's readers and in `mlmh tui`,
never a Python exception; a verdict outside its closed set, a number that is not finite and nesting too deep
are refused like a wrong type."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest
from test_tui_data import write_run

from mlmh.cli import main
from mlmh.errors import DataError, MlmhError
from mlmh.storage.rundir import RunDir

FIXTURE = Path(__file__).parent / "fixtures" / "results_fixture_run.json"


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _set(data: dict, path: list, value) -> dict:
    data = copy.deepcopy(data)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return data


#: a hand-edited results file, by its own path (RunDir.of reads any name; the suite's strict-JSON check reads only
#: the files mlmh writes, results.json)
EDITED = "edited-results.json"


def _write(run: Path, data, text: str | None = None) -> Path:
    run.mkdir(parents=True, exist_ok=True)
    (run / EDITED).write_text(text if text is not None else json.dumps(data), encoding="utf-8")
    return run / EDITED


FIRST_MODEL = next(iter(_fixture()["models"]))
DAMAGE = [
    (["findings", 2, "verdict"], "maybe", "key findings[2].verdict must be one of holds, does not hold, inconclusive, "
                                          "not comparable, not tested, skipped, not 'maybe'"),
    (["findings", 0, "verdict"], 3, "key findings[0].verdict must be one of holds"),
    (["findings", 0, "statistic"], "large", "key findings[0].statistic must be a number, not text"),
    (["findings", 0, "parts"], [{"verdict": 5}], "key findings[0].parts[0].verdict must be one of"),
    (["crossover"], {"points": "abc"}, "key crossover.points must be a list, not text"),
    (["crossover"], {"points": [], "crossovers": [1]}, "key crossover.crossovers[0] must be an object, not int"),
    (["models", FIRST_MODEL, "training"], "x", f"key models.{FIRST_MODEL}.training must be an object, not text"),
    (["models", FIRST_MODEL, "training", "heldout_accuracy"], "high",
     f"key models.{FIRST_MODEL}.training.heldout_accuracy must be a number"),
    (["correlations"], [{"spearman": "x"}], "key correlations[0].spearman must be a number, not text"),
    (["human"], {"conditions": "x"}, "key human.conditions must be an object, not text"),
    (["errors"], [{"component": 1}], "key errors[0].component must be text"),
    (["dataset"], {"train_documents": "many"}, "key dataset.train_documents must be an integer, not text"),
    (["schema_version"], 9, "key schema_version must be one of 1, 2, 3, 4, not 9 (a newer mlmh wrote it? upgrade mlmh)"),
]


@pytest.mark.parametrize("path, value, message", DAMAGE, ids=[".".join(map(str, d[0])) for d in DAMAGE])
def test_a_damaged_results_key_is_one_line_naming_file_and_key(tmp_path, capsys, path, value, message):
    run = _write(tmp_path / "run", _set(_fixture(), path, value))
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(run)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1, err
    assert f"{run}: not a readable results file" in err and message in err, err
    assert "Error: " + type(None).__name__ not in err and "Exception" not in err


@pytest.mark.parametrize("literal, message", [
    ("Infinity", "key conditions[0].unseen.metrics.bleu.value must be a finite number, not inf"),
    ("NaN", "key conditions[0].unseen.metrics.bleu.value must be a finite number, not nan"),
    ("1e400", "key conditions[0].unseen.metrics.bleu.value must be a finite number, not inf"),
])
def test_a_number_that_is_not_finite_is_named_by_key(tmp_path, literal, message):
    text = json.dumps(_set(_fixture(), ["conditions", 0, "unseen", "metrics", "bleu", "value"], "@@"))
    run = _write(tmp_path / "run", None, text.replace('"@@"', literal))
    with pytest.raises(DataError, match=re.escape(message)):
        RunDir.of(run).read_results()


@pytest.mark.parametrize("depth", [65, 100_000])
def test_nesting_beyond_the_bound_is_refused_not_a_recursion_error(tmp_path, depth):
    text = json.dumps(_fixture())[:-1] + ', "dataset": ' + "[" * depth + "]" * depth + "}"
    run = _write(tmp_path / "run", None, text)
    with pytest.raises(DataError, match=rf"{EDITED}: not a readable results file.*nested deeper than 64 levels"):
        RunDir.of(run).read_results()


def _trimmed(value):
    """``value`` with every list cut to its first two items and every map of scores to its first three (the walk
    visits one of each anyway)."""
    if isinstance(value, dict):
        scores = value and all(isinstance(v, dict) and "value" in v for v in value.values())
        return {k: _trimmed(v) for k, v in list(value.items())[:3 if scores else None]}
    return [_trimmed(v) for v in value[:2]] if isinstance(value, list) else value


def _paths(value, path=(), seen=None):
    """One path per distinct place in the file (list items collapsed to their first), leaves and containers."""
    seen = {} if seen is None else seen
    general = tuple("[]" if isinstance(p, int) else p for p in path)
    if general in seen:
        return seen
    seen[general] = list(path)
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        _paths(item, (*path, key), seen)
    return seen


def test_every_key_of_results_given_a_wrong_type_is_named_or_reads_and_renders():
    """A walk over every place of a real run's results (list items collapsed to their first), each replaced by a
    value of another type: the schema names it by key, or the results type, render (report, figures' data,
    notebook rows, the TUI's answer) without a Python error. That is :func:`mlmh.api.load` after parsing."""
    from mlmh.findings.comparisons import judged
    from mlmh.report.markdown import render_markdown
    from mlmh.report.plots import crossover_data
    from mlmh.storage import schema
    from mlmh.tui.screens.results import findings_text
    from mlmh.types import RunResults

    full = _trimmed(_fixture())
    model, record = next(iter(full["models"].items()))
    record = {**record, "training": {**record["training"], "head_warmup_steps": 30, "output_vocabulary": 900,
                                     "init": "minilm"}}
    data = {**full, "models": {model: record},
            "dataset": {**full["dataset"], "validation_groups": 3},
            "documents": {role: {**block, "groups": 4, "cut": 1} for role, block in full["documents"].items()},
            "human": {"criteria": ["coherence"], "n_raters": 1, "raters": ["a"], "n_items": 1, "agreement": {"coherence": None},
                      "conditions": {"c": {"coherence": {"value": 3.0, "ci_low": 2.0, "ci_high": 4.0, "n": 2}}}},
            "crossover": {"points": [{"unique_tokens": 1000, "epochs": 1.0, "objective": "mlm", "validation_loss": 2.0,
                                      "unseen": {"bleu": {"value": 1.0, "ci_low": 0.5, "ci_high": 1.5,
                                                          "higher_is_better": True}}, "filler": {}, "deletion": {}}],
                          "metrics": ["bleu"], "answer": "No sweep.", "comparability": "same", "crossovers": [
                              {"unique_tokens": 1000, "measure": "bleu", "epochs": None, "swept_epochs": [1.0],
                               "per_epoch": [{"epochs": 1.0, "difference": 0.1}], "statement": "none"}]}}
    assert schema.problem(data, schema.RESULTS, "$") is None
    paths = [p for p in _paths(data).values() if p]
    refused = 0
    for path in paths:
        for value in ("x", 7, 0.5, [], {"k": 1}, None):
            changed = _set(data, path, value)
            if schema.problem(changed, schema.RESULTS, "$") is not None:
                refused += 1
                continue
            results = judged(RunResults.from_dict(changed))
            render_markdown(results, [])
            crossover_data(results)
            results.to_rows()
            findings_text(results)
    assert len(paths) > 200 and refused > len(paths)


@pytest.mark.parametrize("change, message", [
    (lambda r: {**r, "metrics": "high"}, "samples.jsonl:1: key metrics must be an object, not text"),
    (lambda r: {**r, "metrics": {"bleu": "high"}}, "samples.jsonl:1: key metrics.bleu must be a number, not text"),
    (lambda r: {**r, "generation": {**r["generation"], "output_words": {"one": "x"}}},
     "samples.jsonl:1: key generation.output_words keys must be integers, not 'one'"),
    (lambda r: {**r, "generation": {**r["generation"], "steps": [{"tokens": "abc", "changed": []}]}},
     "samples.jsonl:1: key generation.steps[0].tokens must be a list, not text"),
])
def test_a_damaged_samples_line_is_named_by_line_and_key(tmp_path, change, message):
    from mlmh.api import load

    run = write_run(tmp_path / "run")
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    lines[0] = json.dumps(change(json.loads(lines[0])))
    (run / "samples.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(message)):
        load(run).samples  # noqa: B018


def _damaged_samples_metrics(run: Path) -> None:
    lines = (run / "samples.jsonl").read_text(encoding="utf-8").splitlines()
    (run / "samples.jsonl").write_text("\n".join([json.dumps({**json.loads(lines[0]), "metrics": "0.5"}), *lines[1:]]),
                                       encoding="utf-8")


def _damaged_results(change):
    def damage(run: Path) -> None:
        results = json.loads((run / "results.json").read_text(encoding="utf-8"))
        change(results)
        (run / "results.json").write_text(json.dumps(results), encoding="utf-8")
    return damage


@pytest.mark.parametrize("damage, message", [
    (_damaged_results(lambda r: r["findings"][0].__setitem__("verdict", 1)), "key findings[0].verdict must be one of"),
    (_damaged_results(lambda r: r.__setitem__("crossover", {"points": [{"epochs": "one"}]})),
     "key crossover.points[0] missing key(s) unique_tokens"),
    (_damaged_samples_metrics, "samples.jsonl:1: key metrics must be an object, not text"),
])
def test_the_tui_on_a_run_it_cannot_read_is_one_line_and_a_failure(tmp_path, capsys, monkeypatch, damage, message):
    def never(self):
        raise AssertionError("the app started on a run it cannot read")

    monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", never)
    run = write_run(tmp_path / "run")
    damage(run)
    with pytest.raises(SystemExit) as exit_info:
        main(["tui", "--run", str(run)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1, err
    assert message in err and "Traceback" not in err


def test_a_run_written_by_mlmh_reads_back_whole():
    """The schema accepts what mlmh writes: the fixture of a real run reads, every finding with its verdict."""
    from mlmh.types import VERDICTS

    results = RunDir.of(FIXTURE).read_results()
    assert results.findings and all(f.verdict in VERDICTS for f in results.findings)


def test_a_damaged_human_key_is_named_by_key(tmp_path):
    run = write_run(tmp_path / "run")
    (run / "human_key.json").write_text(json.dumps({"items": {"h0001": {"condition": 3, "doc_id": "d1"}}}),
                                        encoding="utf-8")
    with pytest.raises(MlmhError, match=r"human_key.json: not a readable human evaluation key: key items.h0001.condition "
                                        "must be text, not int"):
        RunDir(run).read_human_key()


def test_config_json_s_schema_checks_every_run_option_runconfig_declares(tmp_path):
    """config.json's shape is made from RunConfig's run options: none is left out (trackers once was), each is
    checked as its shape is written, and a configuration mlmh saves reads back."""
    from mlmh.config.presets import resolve, saved
    from mlmh.storage.schema import CONFIG, OPTION_SHAPES, problem
    from mlmh.types.runconfig import SHAPES, run_options

    shape = CONFIG.keys["config"]
    assert set(run_options()) | {"preset", "source"} == set(shape.keys)
    assert set(OPTION_SHAPES) == set(SHAPES)
    assert [k for k, o in run_options().items() if o.required] == [k for k in shape.required if k in run_options()]
    written = resolve("quick").to_dict()
    assert problem({"config": written}, CONFIG, "$") is None
    (tmp_path / "config.json").write_text(json.dumps({"config": {**written, "trackers": "tensorboard"}}), encoding="utf-8")
    with pytest.raises(DataError, match=r"config.json: not a readable run configuration: key config.trackers must be "
                                        "a list, not text"):
        saved(RunDir(tmp_path))


def test_a_metric_named_like_a_fixed_column_never_overwrites_it():
    """Every fixed column of ``to_rows``: a metric of that name is kept as ``metric:NAME`` beside it."""
    from mlmh.types import RunResults

    data = _trimmed(_fixture())
    plain = RunResults.from_dict(data).to_rows()["conditions"][0]
    fixed = [k for k in plain if k in ("condition", "model", "model_kind", "masking", "masking_ratio", "sampler", "seed",
                                       "failed", "role", "headline", "documents", "scored")]
    assert len(fixed) == 12
    for column in fixed:
        changed = copy.deepcopy(data)
        for condition in changed["conditions"]:
            for role in ("seen", "unseen"):
                condition[role]["metrics"][column] = {"value": 99.5, "ci_low": 99.0, "ci_high": 100.0,
                                                      "higher_is_better": True}
        row = RunResults.from_dict(changed).to_rows()["conditions"][0]
        assert row[column] == plain[column] and row[f"metric:{column}"] == 99.5, column


def test_the_tui_command_fails_when_the_app_stopped_on_an_error(tmp_path, monkeypatch):
    """What the schema cannot foresee still never exits 0: an app that ended on an error fails the command."""
    def crashed(self):
        self._return_code = 1

    monkeypatch.setattr("mlmh.tui.app.MlmhApp.run", crashed)
    with pytest.raises(SystemExit) as exit_info:
        main(["tui", "--run", str(write_run(tmp_path / "run"))])
    assert exit_info.value.code == 1


def test_a_run_writes_its_json_lines_strict_so_they_read_back(tmp_path):
    """A per-sample score that is NaN is written null (strict JSON), so the run's own samples.jsonl never fails the
    reader's finite-number rule; a dataset's JSON lines may still carry NaN in fields mlmh does not read."""
    from test_tui_data import mlm_generation

    from mlmh.storage.jsonl import read_jsonl
    from mlmh.types import SampleRow

    run = RunDir(tmp_path / "run")
    run.write_samples([SampleRow("c", mlm_generation("d1", "hf-mlm"), {"bleu": float("nan"), "rouge1": 0.5})])
    assert "NaN" not in run.samples.read_text(encoding="utf-8")
    (row,) = run.read_samples()
    assert row.metrics == {"bleu": None, "rouge1": 0.5}
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"text": "a b", "score": NaN}\n', encoding="utf-8")
    assert [row["text"] for _, row in read_jsonl(corpus)] == ["a b"]
    with pytest.raises(DataError, match=r"corpus.jsonl:1: key score must be a finite number, not nan"):
        list(read_jsonl(corpus, finite=True))
