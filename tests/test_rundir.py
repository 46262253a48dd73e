"""The run directory's rules (mlmh.storage.rundir): only its own files are written or deleted, never through a
symlink, atomically (a full disk leaves the last whole file and a resumable run), privately; a new run
only in a new or empty directory; an interrupt at any stage leaves a run its hint resumes; every run file
is checked where it is read, one line naming the file and key."""

from __future__ import annotations

import ast
import errno
import hashlib
import json
import os
import shlex
import signal
import stat
import threading
import time
from pathlib import Path

import pytest

import runner_fakes
from mlmh.cli import main
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table, saved
from mlmh.errors import DataError, RunCancelled, SpecError
from mlmh.events import Progress, SampleGenerated
from mlmh.run.results import strip_timings
from mlmh.run.runner import run_experiment
from mlmh.storage import rundir
from mlmh.storage.rundir import RunDir, RunDirError, write_atomic

ROOT = Path(__file__).resolve().parents[1]
SMALL = {"maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill", "fake-clm-fill"], "tasks": ["label-task"],
         "limit": 3}


@pytest.fixture(autouse=True)
def fakes():
    runner_fakes.install()


def config(**overrides):
    return from_table({**runner_fakes.FAKE_PRESET, **SMALL, **overrides}, name="fake", source="fake.toml")


def run(out, **kwargs):
    kwargs.setdefault("use_cache", False)
    plan = build_plan(kwargs.pop("cfg", None) or config())
    return run_experiment(plan, kwargs.pop("listener", None), output_path=out, **kwargs)


def comparable(results):
    return {**strip_timings(results.to_dict()), "run_id": None}


def snapshot(*roots):
    """Every path under ``roots``: a link's target, a file's digest and mode, or a directory."""
    seen = {}
    for root in roots:
        for path in sorted(Path(root).rglob("*")):
            if path.is_symlink():
                seen[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                seen[str(path)] = ("file", hashlib.sha256(path.read_bytes()).hexdigest(), stat.S_IMODE(path.stat().st_mode))
            else:
                seen[str(path)] = ("dir",)
    return seen


def outside(tmp_path):
    """Someone else's files, which planted links point at."""
    other = tmp_path / "someone-else"
    other.mkdir()
    for name in ("notes.md", "data.json", "figure.png", "db.sqlite"):
        (other / name).write_text(f"precious {name}\n", encoding="utf-8")
    return other


def cut_run(out, after=4):
    """An interrupted run in ``out``: cancelled after ``after`` generated samples."""
    cancel = threading.Event()
    seen = []

    def stop(event):
        if isinstance(event, SampleGenerated):
            seen.append(event)
            if len(seen) == after:
                cancel.set()

    with pytest.raises(RunCancelled):
        run(out, listener=stop, cancel=cancel, cfg=config(batch_size=2))
    assert RunDir(out).unfinished


# -- a new run goes only into a new or empty directory -----------------------------------------------
def test_a_directory_with_foreign_files_is_refused_and_left_as_it_was(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "report.md").write_text("my own report\n", encoding="utf-8")
    (out / "thesis.tex").write_text("\\section{x}\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(RunDirError, match=rf"output path {out} is not empty and holds no mlmh run \(report.md, "
                                          r"thesis.tex\)") as refused:
        run(out)
    assert "\n" not in str(refused.value)
    assert snapshot(tmp_path) == before


def test_the_cli_refuses_a_foreign_directory_in_one_line_with_a_nonzero_exit(tmp_path, capsys):
    preset = tmp_path / "fake.toml"
    preset.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in {**runner_fakes.FAKE_PRESET, **SMALL}.items()),
                      encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    (out / "photo.png").write_bytes(b"\x89PNG not mine")
    before = snapshot(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--preset", str(preset), "--output-path", str(out), "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1 and str(out) in err and "holds no mlmh run" in err
    assert snapshot(tmp_path) == before


@pytest.mark.slow
def test_an_empty_or_missing_directory_takes_a_run_and_one_holding_a_run_says_resume(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    run(empty)
    assert RunDir(empty).finished and RunDir(empty).holds_run()
    run(tmp_path / "new" / "deeper")
    with pytest.raises(SpecError, match=rf"{empty} already holds a run; continue it with `mlmh eval --resume "
                                        rf"--output-path {empty} --no-cache`"):
        run(empty)
    half = tmp_path / "half"
    cut_run(half)
    with pytest.raises(SpecError, match="already holds a run"):
        run(half)


def test_a_file_given_as_the_output_path_is_refused(tmp_path):
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(RunDirError, match="is a file, not a directory"):
        run(tmp_path / "file")


# -- symlinks are never followed ----------------------------------------------------------------------
def test_planted_links_and_foreign_files_change_nothing_outside_the_run(tmp_path):
    other = outside(tmp_path)
    out = tmp_path / "run"
    cut_run(out)
    links = {"generations.jsonl": "notes.md", "report.md": "notes.md", "results.json": "data.json",
             "quality_by_masking.png": "figure.png", "samples.jsonl": "data.json", "samples.sqlite-wal": "db.sqlite"}
    for name, target in links.items():
        (out / name).symlink_to(other / target)
    (out / "results.json.tmp").symlink_to(other / "data.json")  # the temp name writes used to follow
    (out / ".config.json.x.tmp").symlink_to(other / "data.json")
    (out / "mine.txt").write_text("a foreign file\n", encoding="utf-8")
    before = snapshot(tmp_path)
    with pytest.raises(RunDirError, match=r"is a symbolic link; mlmh does not write through links") as refused:
        run(out, resume=True)
    assert str(out) in str(refused.value) and "\n" not in str(refused.value)
    assert snapshot(tmp_path) == before  # refused before anything was written

    for name in links:  # the run's own names freed; the foreign files and the other links stay
        (out / name).unlink()
    kept = {k: v for k, v in snapshot(tmp_path).items() if not RunDir(out).is_own_name(Path(k).name) or
            Path(k).parent != out}
    resumed = run(out, resume=True)
    after = snapshot(tmp_path)
    assert {k: after.get(k) for k in kept} == kept
    assert resumed.conditions and RunDir(out).finished


def test_write_atomic_refuses_a_link_and_replaces_a_file_without_following_it(tmp_path):
    target = tmp_path / "target.txt"
    target.write_text("keep", encoding="utf-8")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with pytest.raises(RunDirError, match=rf"{link} is a symbolic link"):
        write_atomic(link, lambda fh: fh.write(b"overwritten"))
    assert target.read_text(encoding="utf-8") == "keep" and link.is_symlink()


def test_writes_outside_the_run_names_are_refused(tmp_path):
    run_dir = RunDir(tmp_path)
    with pytest.raises(ValueError, match="not a file of run"):
        run_dir.write_text(tmp_path / "thesis.tex", "x")
    with pytest.raises(ValueError, match="not a file of run"):
        run_dir.write_text(tmp_path / "sub" / "report.md", "x")


# -- nothing but the run's own files is deleted --------------------------------------------------------
def test_a_no_cache_run_never_deletes_someone_elses_sample_cache(tmp_path):
    out = tmp_path / "shared"
    out.mkdir()
    (out / "samples.sqlite").write_bytes(b"someone's cache")
    (out / "samples.sqlite-wal").write_bytes(b"someone's wal")
    before = snapshot(tmp_path)
    with pytest.raises(RunDirError, match="holds no mlmh run"):
        run(out)
    assert snapshot(tmp_path) == before


class DroppingData(runner_fakes.FakeData):
    """A dataset that puts a file of its own in the run directory, then fails on its input."""

    name = "dropping-data"
    into: Path | None = None

    def load(self, path):
        if type(self).into is not None:
            (type(self).into / "dropped-by-a-plugin.txt").write_text("not the run's\n", encoding="utf-8")
        raise DataError("dropping-data: the files are not there")


def test_a_run_failing_on_its_input_removes_only_what_it_created(tmp_path):
    from mlmh import hookimpl
    from mlmh.plugins.plugin_manager import get_plugin_manager

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            register(DroppingData())

    get_plugin_manager().register(Plugin(), name="dropping")
    empty = tmp_path / "empty"
    empty.mkdir()
    DroppingData.into = empty
    with pytest.raises(DataError, match="not there"):
        run(empty, cfg=config(dataset="dropping-data"))
    assert sorted(p.name for p in empty.iterdir()) == ["dropped-by-a-plugin.txt"]  # config.json and the cache gone

    assert (empty / "dropped-by-a-plugin.txt").read_text(encoding="utf-8") == "not the run's\n"

    made = tmp_path / "made"
    DroppingData.into = None
    existed = []
    with pytest.raises(DataError):
        run(made, cfg=config(dataset="dropping-data"), listener=lambda event: existed.append(made.is_dir()))
    assert existed[0] and not made.exists()  # a directory the run made goes, so the corrected command can use it


# -- interrupted at any stage, the hint resumes --------------------------------------------------------
def test_cancelled_while_models_train_the_run_stays_and_resumes(tmp_path):
    reference = run(tmp_path / "reference")
    cancel = threading.Event()

    def stop_in_training(event):
        if isinstance(event, Progress) and event.stage == "train":
            cancel.set()

    out = tmp_path / "cut"
    with pytest.raises(RunCancelled, match=rf"mlmh eval --resume --output-path {out}"):
        run(out, listener=stop_in_training, cancel=cancel)
    assert RunDir(out).unfinished
    assert comparable(run(out, resume=True)) == comparable(reference)


def test_ctrl_c_while_models_train_prints_a_hint_that_finishes_the_run(tmp_path, capsys, monkeypatch):
    preset = tmp_path / "fake.toml"
    preset.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in {**runner_fakes.FAKE_PRESET, **SMALL}.items()),
                      encoding="utf-8")
    out = tmp_path / "out"
    train = runner_fakes.FakeMLM.load

    def interrupted(self, context):
        if context.progress:
            context.progress({"stage": "train", "step": 1, "total": 3})
        os.kill(os.getpid(), signal.SIGINT)  # a real Ctrl-C: only a signal that arrived is an interrupt
        time.sleep(5)
        raise AssertionError("the SIGINT never arrived")

    monkeypatch.setattr(runner_fakes.FakeMLM, "load", interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--preset", str(preset), "--output-path", str(out), "--no-cache"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 130
    hint = err[err.index("mlmh eval --resume"):].split("\n")[0].strip()
    assert hint == f"mlmh eval --resume --output-path {out} --no-cache"
    monkeypatch.setattr(runner_fakes.FakeMLM, "load", train)
    main(shlex.split(hint)[1:])
    assert RunDir(out).finished


# -- a full disk leaves the last whole state and a resumable run --------------------------------------
class FullDisk:
    """A temp file that takes ``room`` bytes, then fails as a full disk does."""

    def __init__(self, handle, room):
        self.handle, self.room = handle, room

    def write(self, data):
        if len(data) > self.room:
            self.handle.write(data[:self.room])
            self.room = 0
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        self.room -= len(data)
        return self.handle.write(data)

    def __getattr__(self, name):
        return getattr(self.handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.handle.close()


def disk_full_for(monkeypatch, names, room=10):
    real = rundir._open_temp

    def open_temp(path):
        handle, tmp = real(path)
        return (FullDisk(handle, room) if path.name in names else handle), tmp

    monkeypatch.setattr(rundir, "_open_temp", open_temp)


def test_a_full_disk_keeps_the_previous_file_and_names_the_path(tmp_path, monkeypatch):
    path = tmp_path / "results.json"
    RunDir(tmp_path).write_json(path, {"old": True})
    disk_full_for(monkeypatch, {"results.json"})
    with pytest.raises(RunDirError, match=rf"cannot write {path}: No space left on device") as failed:
        RunDir(tmp_path).write_json(path, {"new": "x" * 1000})
    assert "\n" not in str(failed.value)
    assert json.loads(path.read_text(encoding="utf-8")) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no temp file left behind


@pytest.mark.parametrize("name", ["config.json", "generations.jsonl", "quality_by_masking.png", "report.md",
                                  "results.json"])
def test_a_run_that_hits_a_full_disk_resumes_to_the_same_results(tmp_path, monkeypatch, name):
    reference = run(tmp_path / "reference")
    out = tmp_path / "run"
    with monkeypatch.context() as patched:
        disk_full_for(patched, {name})
        with pytest.raises(RunDirError, match=rf"cannot write {out / name}: No space left on device") as failed:
            run(out)
    assert "\n" not in str(failed.value)
    if name == "config.json":  # nothing was written, and the directory it made is gone
        assert not out.exists()
        return
    assert str(failed.value).endswith(f"continue with `mlmh eval --resume --output-path {out} --no-cache`")
    assert RunDir(out).unfinished and not (out / name).exists()
    assert comparable(run(out, resume=True)) == comparable(reference)


# -- private files ------------------------------------------------------------------------------------
def test_run_files_are_private_to_the_user(tmp_path):
    previous = os.umask(0o022)
    try:
        out = tmp_path / "run"
        run(out, cfg=config(log_samples=True))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    files = [p for p in out.iterdir() if p.is_file()]
    assert {"results.json", "config.json", "generations.jsonl", "samples.jsonl", "report.md", "samples.sqlite"} <= \
        {p.name for p in files}
    assert {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in files} == {p.name: oct(0o600) for p in files}


# -- human evaluation ---------------------------------------------------------------------------------
@pytest.fixture
def rated_run(tmp_path):
    out = tmp_path / "run"
    run(out)
    from mlmh.human import export_sheet

    sheet = export_sheet(out, 6)
    lines = sheet.read_text(encoding="utf-8").splitlines()
    filled = tmp_path / "ann.csv"
    filled.write_text("\n".join([lines[0]] + [line.replace(",,,", ",3,4,") for line in lines[1:]]) + "\n",
                      encoding="utf-8")
    return out, filled


def test_human_import_checks_results_before_writing_anything(rated_run, capsys):
    out, filled = rated_run
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    (out / "results.json").write_text(json.dumps({**results, "config": None}), encoding="utf-8")
    before = snapshot(out)
    with pytest.raises(SystemExit) as exit_info:
        main(["human", "import", str(out), str(filled)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1
    assert f"{out / 'results.json'}: not a readable results file" in err and "key config must be an object, not null" in err
    assert snapshot(out) == before and not (out / "human.json").exists()


def test_human_import_writes_through_no_link_and_a_corrupt_key_is_named(rated_run, tmp_path):
    from mlmh.human import import_sheets

    out, filled = rated_run
    other = outside(tmp_path)
    (out / "human.json").symlink_to(other / "data.json")
    before = snapshot(other)
    with pytest.raises(RunDirError, match=rf"{out / 'human.json'} is a symbolic link"):
        import_sheets(out, [filled])
    assert snapshot(other) == before
    (out / "human.json").unlink()
    human = import_sheets(out, [filled])
    assert json.loads((out / "human.json").read_text(encoding="utf-8")) == json.loads(json.dumps(human.to_dict()))
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["human"]["n_raters"] == 1

    key = json.loads((out / "human_key.json").read_text(encoding="utf-8"))
    for broken, message in (("{not json", "invalid JSON at line 1"),
                            (json.dumps({**key, "items": {"h0001": "x"}}), "key items.h0001 must be an object, not text"),
                            (json.dumps({"seed": 0}), "missing key(s) items")):
        (out / "human_key.json").write_text(broken, encoding="utf-8")
        with pytest.raises(DataError, match=rf"{out / 'human_key.json'}: not a readable human evaluation key.*"
                                            + message.replace("(", r"\(").replace(")", r"\)")):
            import_sheets(out, [filled])


# -- every run file is checked where it is read ----------------------------------------------------------
@pytest.fixture
def finished(tmp_path):
    out = tmp_path / "run"
    run(out, cfg=config(log_samples=True))
    return out


@pytest.mark.parametrize("change, message", [
    (lambda r: {**r, "config": None}, "key config must be an object, not null"),
    (lambda r: {**r, "conditions": ["a", "b"]}, "key conditions[0] must be an object, not text"),
    (lambda r: {**r, "conditions": [{**r["conditions"][0], "seed": "zero"}]}, "key conditions[0].seed must be an integer"),
    (lambda r: {**r, "conditions": [{**r["conditions"][0], "unseen": {"metrics": {"bleu": {"value": "high"}}}}]},
     "key conditions[0].unseen.metrics.bleu.value must be a number, not text"),
    (lambda r: {**r, "timings": {"total": "long"}}, "key timings.total must be a number"),
    (lambda r: [r], "must be an object, not a list"),
    (lambda r: {k: v for k, v in r.items() if k != "conditions"}, "missing key(s) conditions"),
])
def test_a_bad_results_file_is_one_line_naming_file_and_key(finished, capsys, change, message):
    from mlmh.api import load

    path = finished / "results.json"
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(finished)])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1
    assert f"{path}: not a readable results file" in err and message in err
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")
                       .replace("]", r"\]")):
        load(finished)


@pytest.mark.anyio
async def test_the_tui_shows_a_bad_results_file_as_one_status_line(finished):
    from mlmh.tui import create_app
    from mlmh.tui.screens.results import ResultsScreen

    path = finished / "results.json"
    path.write_text(json.dumps({**json.loads(path.read_text(encoding="utf-8")), "config": None}), encoding="utf-8")
    app = create_app(run_dir=str(finished))
    async with app.run_test() as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ResultsScreen)
        assert "key config must be an object, not null" in str(app.screen.query_one("#res-status").render())


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON at line 1"),
    (json.dumps({"config": {"preset": "fake"}}), "missing key(s) source, dataset"),
    (json.dumps({"config": {**runner_fakes.FAKE_PRESET, "preset": "fake", "source": "x", "seeds": "0"}}),
     "key config.seeds must be a list, not text"),
    (json.dumps([]), "must be an object, not a list"),
])
def test_a_corrupt_config_under_resume_is_one_line_naming_it(tmp_path, capsys, content, message):
    out = tmp_path / "run"
    cut_run(out)
    (out / "config.json").write_text(content, encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--resume", "--output-path", str(out), "--no-cache"])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 1 and len(err.splitlines()) == 1
    assert f"{out / 'config.json'}: not a readable run configuration" in err and message in err
    with pytest.raises(DataError, match="not a readable run configuration"):
        run(out, resume=True)


def test_bad_lines_of_the_jsonl_files_name_file_and_line(finished):
    from mlmh.api import load
    from mlmh.run.reproduce import recorded_sample

    samples = finished / "samples.jsonl"
    lines = samples.read_bytes().split(b"\n")
    samples.write_bytes(b"\n".join(lines[:2] + [b"\xff" + lines[2]] + lines[3:]))
    with pytest.raises(DataError, match=rf"{samples}:3: not valid UTF-8"):
        load(finished).samples  # noqa: B018
    generations = finished / "generations.jsonl"
    rows = generations.read_text(encoding="utf-8").splitlines()
    generations.write_text("\n".join(rows[:1] + ["{half"] + rows[1:]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{generations}:2: invalid JSON"):
        recorded_sample(finished, "1:d00")
    generations.write_text("\n".join(rows[:1] + ['{"sample": 3}'] + rows[1:]) + "\n", encoding="utf-8")
    with pytest.raises(DataError, match=rf"{generations}:2: missing or non-text field\(s\) sample"):
        recorded_sample(finished, "1:d00")


def test_a_run_of_this_mlmh_reads_back_whole(finished):
    """The checks accept everything the runner writes (and the rewritten human block)."""
    run_dir = RunDir(finished)
    assert run_dir.holds_run() and run_dir.read_results().conditions
    assert saved(run_dir).experiment() == config(log_samples=True).experiment()
    assert run_dir.read_generations() and list(run_dir.read_lines(run_dir.samples))


# -- one owner of the names -------------------------------------------------------------------------------
def test_only_mlmh_rundir_spells_the_run_file_names():
    """Code outside mlmh.storage.rundir names a run file through it (prose in docstrings and help may mention them)."""
    names = ("results.json", "generations.jsonl", "samples.jsonl", "report.md", "human.json", "human_key.json",
             "human_sheet.csv", ".png")
    found = []
    for path in [*sorted((ROOT / "harness").rglob("*.py")), *sorted((ROOT / "plugins").rglob("*.py"))]:
        if path.name == "rundir.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and not any(c.isspace() for c in node.value):
                if any(name in node.value for name in names):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
    assert not found, found


def test_finished_runs_lists_runs_with_results_newest_first(tmp_path):
    import os

    from mlmh.storage.rundir import finished_runs

    assert finished_runs(tmp_path / "missing") == []
    for age, name in enumerate(["b-new", "a-old"]):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text("{}", encoding="utf-8")
        os.utime(tmp_path / name / "results.json", (1_700_000_000 - 60 * age,) * 2)
    (tmp_path / "unfinished").mkdir()
    (tmp_path / "unfinished" / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "linked").mkdir()
    (tmp_path / "linked" / "results.json").symlink_to(tmp_path / "b-new" / "results.json")
    assert finished_runs(tmp_path) == [tmp_path / "b-new", tmp_path / "a-old"]
