"""One writer per run directory (mlmh.storage.rundir's lock): a resume of a run another process writes, or a second
new run on its path, is refused in one line naming the writer's PID, with nothing of the run changed; a lock left
by a writer that was killed is taken over, and the run says so."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import runner_fakes
from cli_helpers import run_cli
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.run.runner import run_experiment
from mlmh.storage.rundir import LOCK, RunDir, RunDirError

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"], "tasks": [], "limit": 2}


@pytest.fixture(autouse=True)
def fakes():
    runner_fakes.install()


def config():
    return from_table({**runner_fakes.FAKE_PRESET, **SMALL}, name="fake", source="fake.toml")


def record():
    return {"config": config().to_dict(), "experiment": config().experiment()}


def files(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


def test_a_writer_in_this_process_keeps_every_other_writer_out(tmp_path):
    out = tmp_path / "run"
    writer = RunDir(out)
    writer.start(record(), "mlmh eval --resume")
    assert (out / LOCK).read_text().strip() == str(os.getpid())
    before = files(out)
    for second in (lambda: RunDir(out).resume(), lambda: RunDir(out).start(record(), "mlmh eval --resume")):
        with pytest.raises(RunDirError, match=rf"run {out} is being written by process {os.getpid()} "):
            second()
    with pytest.raises(RunDirError, match=f"being written by process {os.getpid()}"):
        run_experiment(build_plan(config()), output_path=out, resume=True, use_cache=False)
    assert files(out) == before
    writer.unlock()
    assert not (out / LOCK).exists()
    again = RunDir(out)
    again.resume()  # released: the next writer takes it
    assert again.took_over is None
    again.unlock()


def test_a_finished_run_leaves_no_lock_and_a_failed_new_run_leaves_nothing(tmp_path, monkeypatch):
    from mlmh.errors import DataError
    from mlmh.run import runner

    out = tmp_path / "run"
    run_experiment(build_plan(config()), output_path=out, use_cache=False)
    assert (out / "results.json").is_file() and not (out / LOCK).exists()

    def bad_data(plan, ctx):
        raise DataError("the data cannot be read")

    monkeypatch.setattr(runner, "load_data", bad_data)
    with pytest.raises(DataError):
        run_experiment(build_plan(config()), output_path=tmp_path / "other", use_cache=False)
    assert not (tmp_path / "other").exists()  # the lock went with the run's other files, and the folder it made


def test_report_and_human_evaluation_do_not_write_a_run_another_writer_holds(tmp_path, capsys):
    out = tmp_path / "run"
    run_experiment(build_plan(config()), output_path=out, use_cache=False)
    writer = RunDir(out)
    writer.lock()  # a resume of the finished run, say, writing it now
    before = files(out)
    sheet = tmp_path / "sheet.csv"
    for args in (["report", str(out)], ["human", "export", str(out), "--n", "2"],
                 ["human", "export", str(out), "--n", "2", "--out", str(sheet)]):
        code, _, err = run_cli(capsys, *args)
        assert code == 1 and err.strip() == (f"Error: run {out} is being written by process {os.getpid()} (it holds "
                                             f"{out / LOCK}); one process writes a run at a time: wait for it to "
                                             "finish or stop it"), err
    assert files(out) == before and not sheet.exists()
    writer.unlock()
    assert run_cli(capsys, "report", str(out))[0] == 0


#: a second process that starts a run in ARGV[1] and holds it until it is killed
HOLDER = """
import sys, time, json
sys.path[:0] = [sys.argv[2]]
import runner_fakes
runner_fakes.install()
from mlmh.storage.rundir import RunDir
RunDir(sys.argv[1]).start(json.loads(sys.argv[3]), "mlmh eval --resume")
print("holding", flush=True)
time.sleep(120)
"""


@pytest.fixture
def held(tmp_path):
    """A run directory whose writer is another live process: (path, its process)."""
    import json

    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "harness"), str(ROOT / "plugins")])}
    child = subprocess.Popen([sys.executable, "-c", HOLDER, str(out), str(ROOT / "tests"), json.dumps(record())],
                             env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "holding"
        yield out, child
    finally:
        child.kill()
        child.wait()


def test_resume_and_a_second_new_run_of_a_run_another_process_writes_are_refused(held, tmp_path, capsys):
    out, child = held
    before = files(out)
    preset = tmp_path / "fake.toml"
    preset.write_text(config().to_toml(), encoding="utf-8")
    for args in (["eval", "--resume", "--output-path", str(out)],
                 ["eval", "--preset", str(preset), "--output-path", str(out)]):
        code, _, err = run_cli(capsys, *args)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 1 and len(lines) == 1, err
        assert lines[0] == (f"Error: run {out} is being written by process {child.pid} (it holds {out / LOCK}); one "
                            "process writes a run at a time: wait for it to finish or stop it, or choose another "
                            "--output-path")
        assert "--resume" not in lines[0].split("--output-path")[0]  # the loser is not told to resume a live run
        assert files(out) == before


def test_the_lock_of_a_killed_writer_is_taken_over_and_said(held, capsys):
    out, child = held
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert (out / LOCK).read_text().strip() == str(child.pid)  # the file stays; the kernel dropped the lock
    code, _, err = run_cli(capsys, "eval", "--resume", "--output-path", str(out))
    assert code == 0, err
    assert not (out / LOCK).exists() and (out / "results.json").is_file()
    notes = RunDir(out).read_results().notes
    assert f"run {out}: took over the lock of process {child.pid}, which ended without releasing it" in notes
