"""Observer plugins (``mlmh_run_event``): one that raises is reported once per run, by name, and neither the
run nor the other observers miss anything."""

from __future__ import annotations

import pytest

import runner_fakes
from mlmh import hookimpl
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.run.runner import run_experiment


class Broken:
    """Raises on every event."""

    calls = 0

    @hookimpl
    def mlmh_run_event(self, event):
        Broken.calls += 1
        raise RuntimeError("tracker offline")


class Recorder:
    def __init__(self):
        self.kinds = []

    @hookimpl
    def mlmh_run_event(self, event):
        self.kinds.append(event.kind)


@pytest.fixture
def observers():
    runner_fakes.install()
    pm = get_plugin_manager()
    recorder = Recorder()
    pm.register(Broken(), name="broken-tracker")
    pm.register(recorder, name="recorder")
    Broken.calls = 0
    return recorder


def run(tmp_path, name):
    cfg = from_table(runner_fakes.FAKE_PRESET, name="fake", source="fake.toml")
    seen = []
    results = run_experiment(build_plan(cfg), seen.append, output_path=tmp_path / name, cache_path=tmp_path / f"{name}.sqlite")
    return results, [event.kind for event in seen]


def test_a_failing_observer_is_reported_once_per_run_and_the_run_completes(tmp_path, capsys, observers):
    results, kinds = run(tmp_path, "first")
    err = capsys.readouterr().err
    reports = [line for line in err.splitlines() if "observer plugin" in line]
    assert reports == ["mlmh: observer plugin 'broken-tracker' failed on a run_started event: RuntimeError: "
                       "tracker offline (further failures of it in this run are not shown)"]
    assert Broken.calls == len(kinds) > 10  # it was still offered every event
    assert kinds[-1] == "run_finished" and (tmp_path / "first" / "results.json").is_file()
    assert results.conditions and observers.kinds == kinds  # the other observer missed nothing

    run(tmp_path, "second")  # a new run reports it again
    assert sum("observer plugin 'broken-tracker'" in line for line in capsys.readouterr().err.splitlines()) == 1
