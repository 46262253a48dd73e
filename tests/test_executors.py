"""Executors: the same plan in-process, on N local worker processes and on Ray gives the same results,
also when a worker dies mid-run; workers' progress reaches the one event bus; a missing Ray says how
to install it. Fast fake components (tests/executor_fakes.py) everywhere but the CLI runs, which train
real tiny models for three steps so workers must find them in the driver's model cache."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

import executor_fakes
import runner_fakes
from mlmh.cli import cli, main
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.errors import MlmhError, ModelError, SpecError
from mlmh.events import Progress, SampleGenerated
from mlmh.run.executors import LocalWorkersExecutor, RayExecutor, Worker, make_executor, wants_gpu, worker_spec
from mlmh.run.results import strip_timings
from mlmh.run.runner import run_experiment

PRESET = {**runner_fakes.FAKE_PRESET, "models": ["logged-mlm", "fake-clm"],
          "samplers": ["logged-fill", "fake-clm-fill"], "maskings": ["every-nth:ratio=0.3", "every-nth:ratio=0.6"],
          "tasks": ["label-task"], "batch_size": 2}
#: 2 models x 2 maskings x (8 seen + 4 unseen documents) in units of 2: 24 units, 12 of them logged-fill
UNITS, LOGGED_UNITS = 24, 12
#: the documented --workers / --backend examples, with the training cap in the model specs rather than a
#: patch of this process (tests/test_documented_commands.py lists them in NOT_RUN, pointing here);
#: 3 conditions: the MLM with one-shot and with mask-predict, the CLM with clm-infill
CLI_RUN = ["eval", "--preset", "quick", "--model", "trained-mlm:size=tiny,max_steps=3",
           "--model", "trained-clm:size=tiny,max_steps=3", "--masking", "random:ratio=0.3", "--limit", "2",
           "--task", "none"]


@pytest.fixture(autouse=True)
def fakes():
    executor_fakes.install()


def plan():
    return build_plan(from_table(dict(PRESET), name="fake", source="fake.toml"))


def run(tmp_path, name, executor=None, listener=None):
    results = run_experiment(plan(), listener, output_path=tmp_path / name, cache_path=tmp_path / f"{name}.sqlite",
                             executor=executor).to_dict()
    results.pop("run_id")
    return strip_timings(results)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    """The in-process results every executor must reproduce."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLMH_CACHE_DIR", str(tmp_path_factory.mktemp("baseline-cache")))
        mp.delenv("MLMH_TEST_UNIT_LOG", raising=False)
        executor_fakes.install()
        return run(tmp_path_factory.mktemp("baseline"), "in-process")


@pytest.fixture
def unit_log(tmp_path, monkeypatch):
    log = tmp_path / "log"
    log.mkdir()
    monkeypatch.setenv("MLMH_TEST_UNIT_LOG", str(log))
    return log


def pids(log: Path, name: str) -> list[int]:
    path = log / name
    return [int(p) for p in path.read_text().split()] if path.exists() else []


@pytest.mark.slow
def test_local_workers_give_the_in_process_results_and_stream_events(tmp_path, baseline, unit_log):
    events = []
    with LocalWorkersExecutor(plan(), 2) as executor:
        assert executor.spec.threads == max(1, len(os.sched_getaffinity(0)) // 2)
        results = run(tmp_path, "workers", executor, events.append)
    assert results == baseline
    ran = pids(unit_log, "calls")
    assert len(ran) == LOGGED_UNITS and os.getpid() not in ran and len(set(ran)) == 2
    loads = Counter(pids(unit_log, "loads"))
    assert loads.pop(os.getpid()) == 1  # the driver's models stage
    assert set(loads) == set(ran) and set(loads.values()) == {1}  # each worker loaded the model once
    samples = [e for e in events if isinstance(e, SampleGenerated)]
    progress = [e for e in events if isinstance(e, Progress) and e.stage == "generate"]
    assert len(samples) == UNITS * 2 and len(progress) == UNITS
    assert progress[-1].completed == progress[-1].total == UNITS * 2


@pytest.mark.slow
def test_a_killed_local_worker_has_its_units_run_again(tmp_path, baseline, unit_log, monkeypatch):
    monkeypatch.setenv("MLMH_TEST_CRASH_AFTER", "4")
    with LocalWorkersExecutor(plan(), 2) as executor:
        results = run(tmp_path, "killed", executor)
    assert (unit_log / "crashed").exists()
    ran = pids(unit_log, "calls")
    # the crashed unit ran again, in a process of the fresh pool (how many of the old and new workers got units
    # depends on scheduling, so only "more calls than units, in more than one process" is certain)
    assert len(ran) > LOGGED_UNITS and len(set(ran)) >= 2
    assert results == baseline


@pytest.mark.slow
def test_workers_that_keep_dying_stop_the_run_with_a_clear_error(tmp_path, unit_log, monkeypatch):
    monkeypatch.setenv("MLMH_TEST_CRASH_AFTER", "1")
    with LocalWorkersExecutor(plan(), 2, max_retries=0) as executor:
        with pytest.raises(MlmhError, match=r"a worker process died 1 time\(s\) .* try fewer --workers"):
            run(tmp_path, "dying", executor)


@pytest.mark.parametrize("backend", ["in-process", pytest.param("workers", marks=pytest.mark.slow),
                                     pytest.param("ray", marks=pytest.mark.slow)])
def test_a_unit_error_fails_its_condition_alone_by_name(tmp_path, monkeypatch, backend):
    """A sampler that raises fails its own conditions, named with its plugin and its error as itself,
    in this process, in worker processes and on Ray; the other sampler's conditions complete."""
    monkeypatch.setenv("MLMH_TEST_UNIT_ERROR", "unit failed on purpose")
    if backend == "ray":
        pytest.importorskip("ray")
        executor = RayExecutor(plan(), workers=2)
    else:
        executor = LocalWorkersExecutor(plan(), 2) if backend == "workers" else None
    try:
        results = run(tmp_path, "error", executor)
    finally:
        if executor is not None:
            executor.close()
    rows = {row["id"]: row for row in results["conditions"]}
    failed = {cid for cid, row in rows.items() if row.get("failed")}
    assert failed == {cid for cid in rows if "logged-fill" in cid} and len(failed) < len(rows)
    assert all("sampler 'logged-fill' (plugin " in rows[cid]["failed"]
               and rows[cid]["failed"].endswith(": unit failed on purpose")  # an mlmh error: no type name
               and "DataError" not in rows[cid]["failed"] for cid in failed)
    assert all(row["metrics"] and not row.get("failed") for cid, row in rows.items() if cid not in failed)
    assert {e["component"].split(" (plugin")[0] for e in results["errors"]} == {"sampler 'logged-fill'"}


@pytest.mark.slow
def test_cancel_stops_the_workers_between_units(tmp_path):
    from mlmh.errors import RunCancelled

    cancel = threading.Event()

    def listener(event):
        if isinstance(event, SampleGenerated):
            cancel.set()

    with LocalWorkersExecutor(plan(), 2) as executor:
        with pytest.raises(RunCancelled):
            run_experiment(plan(), listener, cancel, output_path=tmp_path / "c", cache_path=tmp_path / "c.sqlite",
                           executor=executor)
        assert executor._pool is None  # shut down: nothing left running


@pytest.mark.slow
def test_a_worker_never_trains(tmp_path):
    """A trained-* model missing from the model cache is an error in a worker, not a second training."""
    cfg = from_table({**PRESET, "models": ["trained-mlm:size=tiny,max_steps=3"]}, name="fake", source="fake.toml")
    worker = Worker(worker_spec(cfg, threads=1))
    with pytest.raises(ModelError, match="is not in the model cache .* shared filesystem"):
        worker.adapter(worker.plan.models[0].spec)


def test_make_executor_reads_the_flags():
    assert make_executor("local", 1, None, plan()) is None  # in-process: the runner's own models
    executor = make_executor("local", 3, None, plan())
    assert isinstance(executor, LocalWorkersExecutor) and executor.workers == 3
    executor.close()
    with pytest.raises(SpecError, match="--ray-address needs --backend ray"):
        make_executor("local", 1, "ray://x:10001", plan())
    with pytest.raises(SpecError, match="--backend dask: expected one of local, ray"):
        make_executor("dask", 1, None, plan())


def test_backend_ray_without_ray_says_how_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    with pytest.raises(SpecError, match=r"^--backend ray needs Ray: pip install 'mlmh\[ray\]'$"):
        make_executor("ray", 1, None, plan())
    with pytest.raises(SystemExit) as stopped:
        main(["eval", "--preset", "quick", "--backend", "ray", "--output-path", str(tmp_path / "run")])
    assert stopped.value.code == 2
    assert capsys.readouterr().err == "Error: --backend ray needs Ray: pip install 'mlmh[ray]'\n"
    assert not (tmp_path / "run").exists()  # stopped before the run started


class _Component:
    def __init__(self, device):
        self.params = {"device": device}


def test_units_ask_ray_for_a_gpu_where_their_model_is_on_one():
    assert wants_gpu(_Component("cuda:0"), gpus_available=False)
    assert wants_gpu(_Component("auto"), gpus_available=True)
    assert not wants_gpu(_Component("auto"), gpus_available=False)
    assert not wants_gpu(_Component("cpu"), gpus_available=True)
    assert not wants_gpu(object(), gpus_available=True)  # a model without a device parameter


# -- the CLI: real tiny models, --workers 2 and --backend ray against the in-process run ----------------
def quality(out: Path) -> dict:
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    return {row["id"]: (row["metrics"], row["seen"]["metrics"], row["unseen"]["metrics"])
            for row in results["conditions"]}


def cli_run(args: list[str], out: Path) -> dict:
    from mlmh.plugins import plugin_manager

    plugin_manager.reset()  # the CLI runs builtins only
    result = CliRunner().invoke(cli, [*args, "--output-path", str(out), "--no-cache"], catch_exceptions=True)
    assert result.exit_code == 0, (result.output, result.exception)
    return quality(out)


@pytest.fixture(scope="module")
def cli_baseline(tmp_path_factory):
    """The in-process CLI run; its model cache (trained here) is the one the worker runs reuse."""
    cache = tmp_path_factory.mktemp("cli-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLMH_CACHE_DIR", str(cache))
        expected = cli_run(CLI_RUN, tmp_path_factory.mktemp("cli") / "in-process")
    assert len(expected) == 3 and all(metrics and "bleu" in metrics for metrics, _, _ in expected.values())
    return cache, expected


@pytest.mark.slow
def test_eval_with_two_workers_gives_the_in_process_quality(tmp_path, cli_baseline, monkeypatch):
    cache, expected = cli_baseline
    monkeypatch.setenv("MLMH_CACHE_DIR", str(cache))
    assert cli_run([*CLI_RUN, "--workers", "2"], tmp_path / "workers") == expected


@pytest.mark.slow
def test_eval_on_ray_gives_the_in_process_quality(tmp_path, cli_baseline, monkeypatch):
    ray = pytest.importorskip("ray")
    assert not ray.is_initialized()
    cache, expected = cli_baseline
    monkeypatch.setenv("MLMH_CACHE_DIR", str(cache))
    assert cli_run([*CLI_RUN, "--backend", "ray", "--workers", "2"], tmp_path / "ray") == expected
    assert not ray.is_initialized()  # the Ray it started for the run is shut down


# -- Ray on the fakes: a local Ray with 2 CPUs, as CI runs it --------------------------------------------
@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


@pytest.mark.slow
def test_ray_gives_the_in_process_results_when_a_worker_dies(tmp_path, baseline, unit_log, monkeypatch, local_ray):
    monkeypatch.setenv("MLMH_TEST_CRASH_AFTER", "4")
    events = []
    with RayExecutor(plan()) as executor:
        results = run(tmp_path, "ray-killed", executor, events.append)
    assert local_ray.is_initialized()  # a Ray it did not start stays up
    assert (unit_log / "crashed").exists()  # a worker died mid-run: Ray ran its task again
    ran = pids(unit_log, "calls")
    assert len(ran) == LOGGED_UNITS + 1 and os.getpid() not in ran
    assert results == baseline
    progress = [e for e in events if isinstance(e, Progress) and e.stage == "generate"]
    assert len(progress) == UNITS and progress[-1].completed == progress[-1].total == UNITS * 2


# a unit's own error on Ray: test_a_unit_error_fails_its_condition_alone_by_name[ray]
