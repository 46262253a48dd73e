"""Every public function of mlmh.api checks its arguments by the CLI's rules: a wrong type or None where a value is
needed is one SpecError naming the argument, before any work, never an AttributeError or TypeError from inside.
The test walks the module's public functions (inspect), so a function added later is checked too."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path

import pytest

from mlmh import api
from mlmh.config.presets import resolve
from mlmh.errors import SpecError

MODEL = "trained-mlm:size=tiny,max_steps=3"
FINISHED_RUN = Path(__file__).parent / "fixtures" / "results_fixture_run.json"


class Reached(Exception):
    """The call got past its argument checks to the work itself."""


def _reach(*args, **kwargs):
    raise Reached


class _Executor:
    def run(self, *args, **kwargs):
        raise Reached

    def close(self):
        pass


def _valid(tmp_path):
    """Arguments each public function accepts (the work itself is replaced by Reached)."""
    config = resolve("quick")
    return {
        "evaluate": {"preset": "quick", "output_path": str(tmp_path / "run-e"), "progress": None, "resume": False,
                     "use_cache": True, "workers": 1, "backend": "local", "ray_address": None,
                     "cancel": threading.Event()},
        "prepare": {"preset": "quick", "overrides": {}, "output_path": str(tmp_path / "run-p"), "resume": False,
                    "use_cache": True, "workers": 1, "backend": "local", "ray_address": None, "sweep_epochs": None,
                    "sweep_tokens": None},
        "plan": {"preset": "quick", "overrides": {}, "resume": False, "output_path": None, "sweep_epochs": None,
                 "sweep_tokens": None},
        "run_directory": {"config": config, "output_path": str(tmp_path / "run-d"), "resume": False},
        "run": {"prepared": api.PreparedRun(api.plan("quick"), tmp_path / "run-r", executor=_Executor()),
                "progress": None, "cancel": None},
        "load": {"path": FINISHED_RUN},
        "generate": {"text": "The cat sat on the mat.", "model": MODEL, "masking": "random:ratio=0.3",
                     "sampler": None, "seed": 0, "progress": None},
        "generate_from_dataset": {"dataset": "pan", "model": MODEL, "data": None, "limit": 1,
                                  "masking": "random:ratio=0.3", "sampler": None, "seed": 0, "batch_size": 1,
                                  "progress": None},
        "compare": {"text": "The cat sat on the mat and looked at the door.", "sides": [(MODEL, "one-shot")],
                    "masking": "random:ratio=0.3", "seed": 0, "dataset": "pan", "adapter_for": _reach,
                    "on_generation": None, "cancel": None},
        "study": {"preset": "quick", "data": ["pan", "mpst"], "output_path": str(tmp_path / "study"), "progress": None,
                  "announce": None},
        "load_study": {"path": _study(tmp_path / "a-study")},
    }


def _study(folder: Path) -> Path:
    """A study folder with its files (no runs: what load_study reads)."""
    from mlmh.storage.study import write_study
    from mlmh.types.study import StudyResults

    folder.mkdir(parents=True, exist_ok=True)
    study = StudyResults(preset="paper", datasets=[], claims=[])
    write_study(folder, study, "")
    return folder


def _public_functions():
    return sorted(name for name, value in vars(api).items()
                  if inspect.isfunction(value) and value.__module__ == api.__name__ and not name.startswith("_"))


#: values of the wrong type for any argument; None is tried where the argument's type does not allow it
WRONG = [object(), 3.5, ["x"], {"k": 1}, b"bytes", True]


@pytest.fixture
def no_work(monkeypatch):
    monkeypatch.setattr("mlmh.api._load_and_regenerate", _reach)
    monkeypatch.setattr("mlmh.run.runner.run_experiment", _reach)
    monkeypatch.setattr("mlmh.generation.generate", _reach)
    monkeypatch.setattr("mlmh.run.executors.make_executor", lambda *a, **k: _Executor())


def test_the_walk_knows_every_public_function():
    assert set(_public_functions()) == {"evaluate", "prepare", "plan", "run_directory", "run", "load", "generate",
                                        "generate_from_dataset", "compare", "study", "load_study"}


def test_no_argument_shadows_a_public_function():
    """An argument named like a function of the module (``compare``'s ``load`` once) hides that function inside."""
    public = set(_public_functions())
    shadowing = {name: sorted(public & set(inspect.signature(getattr(api, name)).parameters)) for name in public}
    assert not {name: names for name, names in shadowing.items() if names}


@pytest.mark.parametrize("name", _public_functions())
def test_every_argument_of_a_wrong_type_is_one_spec_error_naming_it(name, tmp_path, no_work, monkeypatch):
    monkeypatch.chdir(tmp_path)
    function = getattr(api, name)
    valid = _valid(tmp_path)[name]
    parameters = [p for p in inspect.signature(function).parameters.values() if p.kind is not p.VAR_KEYWORD]
    assert {p.name for p in parameters} == set(valid), f"the walk's valid arguments for {name} are out of date"
    with pytest.raises(Reached):  # the valid call gets to the work (those that only check or read return)
        function(**valid)
        if name in ("prepare", "plan", "run_directory", "load", "load_study"):
            raise Reached
    for parameter in parameters:
        wrong = WRONG + ([None] if "None" not in str(parameter.annotation) else [])
        for value in wrong:
            if isinstance(value, bool) and parameter.name in ("resume", "use_cache"):
                continue  # true/false is the right type there
            if parameter.name == "overrides" and isinstance(value, dict):
                continue  # a dict of preset keys is its type; its keys are checked by the preset's rules
            with pytest.raises(SpecError) as info:
                function(**{**valid, parameter.name: value})
            assert parameter.name in str(info.value) and "\n" not in str(info.value), (name, parameter.name, value)


@pytest.mark.parametrize("value", [None, "quick", {"preset": "quick"}, object()])
def test_build_plan_names_its_argument(value):
    from mlmh.config.plan import build_plan

    with pytest.raises(SpecError, match=r"^config .*: expected a RunConfig"):
        build_plan(value)


@pytest.mark.parametrize("value", [None, 3, ["runs/x"], ""])
def test_load_names_its_argument(value):
    with pytest.raises(SpecError, match=r"^path .*: (expected a path|empty path)"):
        api.load(value)
