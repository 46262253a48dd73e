"""A run option is declared once, on its RunConfig field (mlmh.types.runconfig.RunOption), and the four places that
name it agree: ``mlmh eval``'s click option, the preset key, the RunConfig field and the Python API's docs."""

from __future__ import annotations

import ast
import dataclasses
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mlmh import api
from mlmh.commands.eval import eval_command
from mlmh.config import options, plan, presets
from mlmh.errors import SpecError
from mlmh.types.runconfig import SHAPES, RunConfig, run_options

API_DOCS = Path(__file__).resolve().parents[1] / "docs" / "API.md"
#: eval's own options, which are no preset key: where and how the run goes, not what it runs
EVAL_ONLY = {"preset", "sweep_epochs", "sweep_tokens", "output_path", "resume", "no_cache", "workers", "backend",
             "ray_address", "show_config"}
FLAGGED = {key: declared for key, declared in run_options().items() if declared.flag}


def test_every_run_option_is_a_field_a_preset_key_and_an_eval_option():
    fields = {f.name for f in dataclasses.fields(RunConfig)}
    assert set(run_options()) <= fields and {"preset", "source", "overridden"} == fields - set(run_options())
    assert presets.KEYS == set(run_options()) | {"cost", "datasets"}
    assert all(declared.shape in SHAPES for declared in run_options().values())
    flags = {p.name: p for p in eval_command.params if isinstance(p, click.Option)}
    assert set(flags) - EVAL_ONLY == set(FLAGGED)  # every flagged option, and no undeclared one
    for key, declared in FLAGGED.items():
        assert declared.flag in flags[key].opts and flags[key].help == declared.help, key
        assert (flags[key].metavar or "") == declared.metavar, key
    assert plan.FLAGS == {key: d.flag for key, d in FLAGGED.items() if d.component}
    assert presets.COMPONENT_LISTS == {key: d.component for key, d in run_options().items() if d.shape == "specs"}


def test_the_api_docs_name_every_run_option():
    docstring = api.evaluate.__doc__ or ""
    table = API_DOCS.read_text(encoding="utf-8").split("## Running an experiment", 1)[1].split("The other keyword", 1)[0]
    for key, declared in FLAGGED.items():
        assert f"``{key}``" in docstring, f"mlmh.evaluate's docstring: {key}"
        assert f"`{key}`" in table and f"`{declared.flag}`" in table, f"docs/API.md: {key} ({declared.flag})"


@pytest.fixture
def probe():
    """A command with the declared run options, returning the preset overrides they make."""
    command = click.command()(lambda **values: click.echo(repr(options.run_overrides(click.get_current_context().params))))
    for key in reversed(list(FLAGGED)):
        command = options.run_option(key)(command)

    def invoke(*args):
        result = CliRunner().invoke(command, list(args))
        if result.exception is not None:
            raise result.exception
        return ast.literal_eval(result.output)

    return invoke


def test_a_flag_and_a_preset_key_make_the_same_configuration(probe):
    table = {"dataset": "pan", "models": ["trained-mlm:size=tiny"], "maskings": ["random:ratio=0.3", "stopwords"],
             "samplers": ["one-shot"], "metrics": [], "tasks": ["authorship-verification"], "trackers": [],
             "seeds": [0, 3], "limit": 0.5, "control": 3, "batch_size": 4, "log_samples": True}
    overrides = probe("--dataset", "pan", "--model", "trained-mlm:size=tiny", "--masking", "random:ratio=0.3,stopwords",
                      "--sampler", "one-shot", "--metric", "none", "--task", "authorship-verification",
                      "--tracker", "none", "--seed", "0,3", "--limit", "0.5", "--control", "3", "--batch-size", "4",
                      "--log-samples")
    assert overrides == {**table, "data": None}
    base = {"dataset": "mpst", "models": ["trained-clm"], "maskings": ["span"], "samplers": ["clm-infill"]}
    from_flags = presets.from_table(base, name="t", source="t.toml", overrides=overrides)
    from_preset = presets.from_table(table, name="t", source="t.toml")
    assert from_flags.to_dict() == from_preset.to_dict()
    assert probe() == dict.fromkeys(FLAGGED)  # nothing given: the preset's values stand


@pytest.mark.parametrize("key, value, message", [
    ("batch_size", 0, "key 'batch_size' must be an integer >= 1"),
    ("batch_size", 10**6, "key 'batch_size'"),
    ("log_samples", "yes", "key 'log_samples' must be true or false"),
    ("models", [], "key 'models' must list at least one model"),
    ("dataset", "", "key 'dataset' is required"),
    ("control", -1, "key 'control' must be a number of documents or a fraction 0.x"),
    ("control", 1.5, "key 'control' fraction must be between 0 and 1"),
])
def test_a_preset_value_is_read_as_its_option_declares(key, value, message):
    table = {"dataset": "pan", "models": ["trained-mlm"], "maskings": ["span"], "samplers": ["one-shot"], key: value}
    with pytest.raises(SpecError, match=re.escape(message)):
        presets.from_table(table, name="t", source="t.toml")


def test_what_a_run_option_declares_of_the_results_is_what_resume_checks():
    config = presets.from_table({"dataset": "pan", "models": ["trained-mlm"], "maskings": ["span"],
                                 "samplers": ["one-shot"]}, name="t", source="t.toml")
    kept = {key for key, declared in run_options().items() if declared.affects_results}
    assert set(config.experiment()) == kept | {"preset"}
    assert {"batch_size", "log_samples", "trackers", "description"}.isdisjoint(config.experiment())


#: docs/CONTRIBUTING.md's run-option recipe, step 1, as a contributor would type it: a field after log_samples
NEW_FIELD = '''    retries: int = option("Times a failed batch is tried again.", "count", default=1, flag="--retries",
                          affects_results=False)
'''


def test_the_contributing_recipe_for_a_run_option_makes_a_flag_of_mlmh_eval(tmp_path):
    """docs/CONTRIBUTING.md's recipe followed literally on a scratch copy of the package: the field declared on
    RunConfig, and nothing else, is a flag of ``mlmh eval`` that reaches the resolved configuration."""
    import os
    import shutil
    import subprocess
    import sys

    recipe = (Path(__file__).resolve().parents[1] / "docs" / "CONTRIBUTING.md").read_text(encoding="utf-8")
    steps = recipe.split("## A run option", 1)[1].split("## Checking it", 1)[0]
    assert "harness/mlmh/types/runconfig.py" in steps and "commands/eval.py" not in steps  # no second list to edit
    package = Path(api.__file__).resolve().parent
    shutil.copytree(package, tmp_path / "mlmh", ignore=shutil.ignore_patterns("__pycache__"))
    runconfig = tmp_path / "mlmh" / "types" / "runconfig.py"
    text = runconfig.read_text(encoding="utf-8")
    anchor = text.index("    description: str = option(")
    runconfig.write_text(text[:anchor] + NEW_FIELD + text[anchor:], encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    shown = subprocess.run([sys.executable, "-m", "mlmh", "eval", "--preset", "quick", "--retries", "4",
                            "--show-config"], capture_output=True, text=True, env=env, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "retries = 4" in shown.stdout.splitlines()
    helped = subprocess.run([sys.executable, "-m", "mlmh", "eval", "--help"], capture_output=True, text=True,
                            env=env, timeout=120)
    assert "--retries" in helped.stdout
    kept = subprocess.run([sys.executable, "-c", "from mlmh.config.presets import resolve; "
                           "print(sorted(resolve('quick', {'retries': 2}).experiment()))"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert kept.returncode == 0 and "'retries'" not in kept.stdout and "'models'" in kept.stdout, kept.stderr
