"""No command writes over a file it did not make (issue 41, item 1): every output path of every command,
and every tracker's folder or file in a run directory, goes through one rule (mlmh.storage.outputs, mlmh.storage.rundir):
a planted link is refused and never followed, an existing file or a non-empty folder that is not the
command's own kind of output is refused in one line, and ``--overwrite`` replaces only a model folder."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_helpers import run_cli

from mlmh.errors import MlmhError

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def finished_run(tmp_path):
    """A run directory with generations and results: what human export and report read."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rows = [{"condition": c, "doc_id": f"d{d}", "original": f"original {d}.", "masked_text": "x", "text": f"{c} {d}."}
            for c in ("mlm | random | one-shot", "clm | random | clm-infill") for d in range(4)]
    (run_dir / "generations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run_dir / "results.json").write_text(json.dumps({"run_id": "r", "config": {"preset": "t", "seeds": [0]},
                                                      "conditions": [], "notes": []}))
    return run_dir


def _plant(kind: str, path: Path, foreign: Path) -> None:
    """A link to a foreign file, a non-empty foreign folder, an existing foreign file or a FIFO at ``path``."""
    if kind == "link":
        (foreign / "theirs.txt").write_text("theirs")
        path.symlink_to(foreign / "theirs.txt")
    elif kind == "folder":
        path.mkdir()
        (path / "theirs.txt").write_text("theirs")
    elif kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("theirs")


def _untouched(kind: str, path: Path, foreign: Path) -> None:
    if kind == "link":
        assert path.is_symlink() and (foreign / "theirs.txt").read_text() == "theirs"
        assert sorted(p.name for p in foreign.iterdir()) == ["theirs.txt"]
    elif kind == "folder":
        assert sorted(p.name for p in path.iterdir()) == ["theirs.txt"]
    elif kind == "fifo":
        assert stat.S_ISFIFO(path.lstat().st_mode)
    else:
        assert path.read_text() == "theirs"


def _bench_stub(monkeypatch):
    """The benchmarks without their minutes: the samplers' report at once, a preset's phases measured as nothing
    (so a path that is not checked first gets written, and the test sees it)."""
    from mlmh.bench import machine, preset
    from mlmh.bench import run as bench_run

    report = {"machine": {}, "options": {}, "method": {}, "sizes": {}}
    monkeypatch.setattr(bench_run, "run_bench", lambda options, progress=None: report)
    monkeypatch.setattr(machine, "describe", lambda: {"cpu": "test"})
    monkeypatch.setattr(preset, "run_phase", lambda *args, **kwargs: {"cpu_seconds": 0.0, "stages": {}})


#: every output path a user names, as a command line with OUT where the path goes
COMMANDS = {
    "human export --out": lambda run_dir: ["human", "export", str(run_dir), "--n", "2", "--out", "OUT"],
    "bench --out": lambda run_dir: ["bench", "--sizes", "tiny", "--lengths", "8", "--batch", "1",
                                    "--no-startup", "--no-scaling", "--metrics", "", "--json", "--out", "OUT"],
    "train --out": lambda run_dir: ["train", "--dataset", "pan", "--objective", "mlm", "--max-steps", "1",
                                    "--out", "OUT"],
    "train --out --overwrite": lambda run_dir: ["train", "--dataset", "pan", "--objective", "mlm", "--max-steps", "1",
                                                "--out", "OUT", "--overwrite"],
    "eval --output-path": lambda run_dir: ["eval", "--preset", "quick", "--limit", "1", "--output-path", "OUT"],
    "bench --preset --out": lambda run_dir: ["bench", "--preset", "quick", "--limit", "2", "--phases", "cold", "--json",
                                             "--out", "OUT"],
    "bench --preset --cache-dir": lambda run_dir: ["bench", "--preset", "quick", "--limit", "2", "--phases", "cold",
                                                   "--json", "--cache-dir", "OUT"],
}


@pytest.mark.parametrize("kind", ["link", "folder", "file", "fifo"])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_output_path_refuses_a_link_a_foreign_folder_and_a_foreign_file(command, kind, finished_run, tmp_path,
                                                                              capsys, monkeypatch):
    _bench_stub(monkeypatch)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    out = tmp_path / "out"
    _plant(kind, out, foreign)
    args = [str(out) if a == "OUT" else a for a in COMMANDS[command](finished_run)]
    code, _, err = run_cli(capsys, *args)
    assert code != 0, err
    last = [line for line in err.splitlines() if line.strip()][-1]
    assert last.startswith("Error: ") and str(out) in last.replace("'", ""), err  # one line naming the path
    assert not any(word in err for word in ("Traceback", "TypeError", "ValueError", "OSError"))
    _untouched(kind, out, foreign)
    assert sorted(p.name for p in finished_run.iterdir()) == ["generations.jsonl", "results.json"]


def _api_calls():
    """Every API function that takes an output path, called with OUT there (stopping before any heavy work)."""
    import mlmh
    from mlmh.bench.preset import run_preset_bench
    from mlmh.human import export_sheet

    return {
        "mlmh.evaluate(output_path=)": lambda run_dir, out: mlmh.evaluate("quick", limit=1, output_path=out),
        "export_sheet(out=)": lambda run_dir, out: export_sheet(run_dir, 2, out=out),
        "run_preset_bench(cache=)": lambda run_dir, out: run_preset_bench("quick", phases=("cold",), cache=out),
    }


@pytest.mark.parametrize("kind", ["link", "folder", "file", "fifo"])
@pytest.mark.parametrize("call", ["mlmh.evaluate(output_path=)", "export_sheet(out=)", "run_preset_bench(cache=)"])
def test_every_api_output_path_refuses_a_link_a_foreign_folder_a_file_and_a_fifo(call, kind, finished_run, tmp_path,
                                                                                 monkeypatch):
    _bench_stub(monkeypatch)
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    out = tmp_path / "out"
    _plant(kind, out, foreign)
    with pytest.raises(MlmhError) as caught:
        _api_calls()[call](finished_run, out)
    assert str(out) in str(caught.value) and "\n" not in str(caught.value)
    _untouched(kind, out, foreign)
    assert sorted(p.name for p in finished_run.iterdir()) == ["generations.jsonl", "results.json"]


def test_bench_preset_cache_dir_is_never_a_link_even_to_an_empty_folder(tmp_path, monkeypatch):
    from mlmh.bench.preset import run_preset_bench

    _bench_stub(monkeypatch)
    (tmp_path / "empty").mkdir()
    (tmp_path / "cache").symlink_to(tmp_path / "empty")
    with pytest.raises(MlmhError, match="--cache-dir .*cache is a symbolic link"):
        run_preset_bench("quick", phases=("cold",), cache=tmp_path / "cache")
    assert list((tmp_path / "empty").iterdir()) == []


def test_human_export_replaces_only_an_unrated_sheet(finished_run, tmp_path, capsys):
    sheet = tmp_path / "sheet.csv"
    assert run_cli(capsys, "human", "export", str(finished_run), "--n", "2", "--out", str(sheet))[0] == 0
    again = run_cli(capsys, "human", "export", str(finished_run), "--n", "3", "--out", str(sheet))
    assert again[0] == 0  # its own: fine
    rated = sheet.read_text().splitlines()
    rated[1] += "4"  # a rater filled a cell: the file is theirs now
    sheet.write_text("\n".join(rated) + "\n")
    code, _, err = run_cli(capsys, "human", "export", str(finished_run), "--out", str(sheet))
    assert code == 2 and f"--out {sheet} already exists and is not an unrated rating sheet" in err
    assert sheet.read_text().splitlines() == rated


def test_bench_out_replaces_only_a_bench_report(tmp_path, capsys, monkeypatch):
    _bench_stub(monkeypatch)
    out = tmp_path / "bench.json"
    args = ["bench", "--metrics", "", "--json", "--out", str(out)]
    assert run_cli(capsys, *args)[0] == 0 and json.loads(out.read_text())["sizes"] == {}
    assert run_cli(capsys, *args)[0] == 0  # a report it wrote is its own kind of output
    out.write_text(json.dumps({"my": "notes"}))
    code, _, err = run_cli(capsys, *args)
    assert code == 2 and "is not an mlmh bench report" in err and json.loads(out.read_text()) == {"my": "notes"}


@pytest.mark.parametrize("where", ["home", "cwd", "parent of cwd"])
def test_train_overwrite_never_replaces_home_or_the_current_directory(where, tmp_path, capsys, monkeypatch):
    home, work = tmp_path / "home", tmp_path / "home" / "work"
    work.mkdir(parents=True)
    (home / "thesis.tex").write_text("mine")
    (work / "config.json").write_text("{}")  # even a folder that looks like a model's
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(work)
    target = {"home": "~", "cwd": ".", "parent of cwd": ".."}[where]
    code, _, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "mlm", "--max-steps", "1", "--out",
                           target, "--overwrite")
    assert code == 2 and "mlmh never replaces it" in err and "ValueError" not in err
    assert (home / "thesis.tex").read_text() == "mine" and (work / "config.json").read_text() == "{}"


def test_train_overwrite_replaces_a_model_folder_and_refuses_one_with_other_files(tmp_path, capsys):
    out = tmp_path / "model"
    args = ["train", "--dataset", "pan", "--objective", "mlm", "--max-steps", "1", "--threads", "1", "--out", str(out)]
    assert run_cli(capsys, *args)[0] == 0
    first = (out / "training_card.json").stat().st_mtime_ns
    assert run_cli(capsys, *args, "--overwrite")[0] == 0 and (out / "training_card.json").stat().st_mtime_ns != first
    (out / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, *args, "--overwrite")
    assert code == 2 and "holds files that are not a model folder's (notes.txt)" in err
    assert (out / "notes.txt").read_text() == "mine"


# -- tracker folders and files follow the run directory's rules ------------------------------------------
TRACKER_PATHS = {"tensorboard": "tensorboard", "wandb": "wandb", "mlflow": "mlflow.db",
                 "mlflow-artifacts": "mlflow-artifacts"}


def _tracked(run_dir: Path):
    from mlmh.tracking import TrackedRun

    return TrackedRun(run_id="r", directory=run_dir, config={"preset": "t"})


@pytest.mark.parametrize("name", sorted(TRACKER_PATHS))
def test_a_tracker_never_writes_through_a_link_in_the_run_directory(name, tmp_path):
    from mlmh.registry import get_registry

    run_dir, foreign = tmp_path / "run", tmp_path / "foreign"
    run_dir.mkdir()
    foreign.mkdir()
    (run_dir / TRACKER_PATHS[name]).symlink_to(foreign, target_is_directory=True)
    tracker = get_registry().build("tracker", name.split("-")[0])
    with pytest.raises(MlmhError, match="is a symbolic link; mlmh does not write through links"):
        tracker.log(_tracked(run_dir))
    assert list(foreign.iterdir()) == []


@pytest.mark.parametrize("name, kind", [(name, kind) for name in sorted(TRACKER_PATHS) for kind in ("file", "fifo")]
                         + [("mlflow", "folder")])
def test_a_tracker_never_writes_over_a_file_a_fifo_or_a_folder_where_its_own_goes(name, kind, tmp_path):
    """A user's file where a tracker's folder goes, a FIFO where mlflow's database goes (its library retried it for
    minutes), a folder where a file goes: one line, at --resume before any work and where the tracker logs."""
    from mlmh.registry import get_registry
    from mlmh.storage.rundir import RunDir

    run_dir = tmp_path / "run"
    run = RunDir(run_dir)
    run.start({"config": {"preset": "quick", "source": "x", "dataset": "pan", "models": [], "maskings": [],
                          "samplers": []}}, "mlmh eval --resume")
    run.unlock()
    planted = run_dir / TRACKER_PATHS[name]
    _plant(kind, planted, tmp_path)
    try:
        with pytest.raises(MlmhError, match=f"{planted} is a .*, not the (SQLite database|directory) a tracker keeps there"):
            RunDir(run_dir).resume()
        tracker = get_registry().build("tracker", name.split("-")[0])
        with pytest.raises(MlmhError, match=f"{planted} is a .*, not the (SQLite database|directory) a tracker keeps there"):
            tracker.log(_tracked(run_dir))
        _untouched(kind, planted, tmp_path)
    finally:
        if kind == "fifo":
            planted.unlink()


@pytest.mark.parametrize("planted", ["tensorboard", "wandb", "mlflow.db", "mlflow-artifacts", "tensorboard/events.out",
                                     "wandb/offline-run-1/files"])
def test_resume_refuses_a_link_anywhere_in_the_run_directory_before_any_work(planted, tmp_path):
    from mlmh.storage.rundir import RunDir

    run_dir, foreign = tmp_path / "run", tmp_path / "foreign"
    run = RunDir(run_dir)
    run.start({"config": {"preset": "quick", "source": "x", "dataset": "pan", "models": [], "maskings": [],
                          "samplers": []}}, "mlmh eval --resume")
    foreign.mkdir()
    link = run_dir / planted
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(foreign, target_is_directory=True)
    with pytest.raises(MlmhError, match=f"{link} is a symbolic link"):
        run.resume()


def test_a_run_output_path_that_is_a_link_to_an_empty_folder_is_refused(tmp_path):
    from mlmh.storage.rundir import RunDir

    (tmp_path / "empty").mkdir()
    (tmp_path / "out").symlink_to(tmp_path / "empty")
    with pytest.raises(MlmhError, match="is a symbolic link; a run is never written through a link"):
        RunDir(tmp_path / "out").start({"config": {}}, "x")
    assert list((tmp_path / "empty").iterdir()) == []


def test_the_loser_of_two_runs_on_one_path_does_not_call_the_winners_files_foreign(tmp_path):
    from mlmh.storage.rundir import RunDir

    (tmp_path / "out").mkdir()
    (tmp_path / "out" / ".config.json.a1b2c3.tmp").write_text("{")  # the winner is writing its first file
    with pytest.raises(MlmhError) as caught:
        RunDir(tmp_path / "out").start({"config": {}}, "x")
    assert "another mlmh run's unfinished files" in str(caught.value) and "holds no mlmh run" not in str(caught.value)


# -- a killed training's partial folder is cleaned by the next run of the same output ---------------------
def test_a_killed_train_leaves_a_partial_folder_that_the_next_run_removes(tmp_path):
    out = tmp_path / "model"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "harness"), str(ROOT / "plugins")])}
    args = [sys.executable, "-m", "mlmh", "train", "--dataset", "pan", "--objective", "mlm", "--max-steps", "100000",
            "--patience-tokens", "0", "--threads", "1", "--out", str(out)]
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and not list(tmp_path.glob(".partial-model-*")):
            time.sleep(0.2)
        time.sleep(1)
    finally:
        child.kill()
        child.wait()
    assert list(tmp_path.glob(".partial-model-*")), "the training never started"
    again = subprocess.run(args[:args.index("100000")] + ["1"] + args[args.index("100000") + 1:], env=env,
                           capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model"]


def test_a_live_builds_partial_folder_is_left_alone(tmp_path):
    from mlmh.storage.modelcache import clear_stale_partials

    live = tmp_path / f".partial-model-{os.getpid()}-abcdefgh"
    other = tmp_path / ".partial-model-2-99999999-abcdefgh"  # output "model-2" of a dead process: not ours
    dead = tmp_path / ".partial-model-99999999-abcdefgh"
    for path in (live, other, dead):
        path.mkdir()
    assert clear_stale_partials(tmp_path / "model") == [dead]
    assert live.is_dir() and other.is_dir()


def test_the_loser_of_two_trainings_on_one_out_does_not_replace_the_winners_model(tmp_path):
    from mlmh.errors import ModelError
    from mlmh.storage.modelcache import atomic_directory

    out = tmp_path / "model"
    with pytest.raises(ModelError, match="already exists \\(written while this build ran\\)"):
        with atomic_directory(out, overwrite=False) as tmp:
            (tmp / "config.json").write_text("loser")
            out.mkdir()  # the winner finished first
            (out / "config.json").write_text("winner")
    assert (out / "config.json").read_text() == "winner" and sorted(p.name for p in tmp_path.iterdir()) == ["model"]
