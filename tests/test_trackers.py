"""Experiment trackers (``--tracker``, a preset's ``trackers``): one real run on the bundled PAN sample with a
tiny MLM trained ten steps (validated at 5 and 10), logged to W&B (offline), MLflow (SQLite) and TensorBoard
at once, each read back with that tracker's own reader: MLflow's client, TensorBoard's event accumulator, and
W&B's record type over the offline run's ``.wandb`` file. A tracker that raises or whose library is missing
is said once, by name, and the run completes; trackers see only the runs that enabled them."""

from __future__ import annotations

import json
import struct
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

import runner_fakes
from mlmh import hookimpl
from mlmh.cli import cli, main
from mlmh.components import Tracker
from mlmh.config import from_table
from mlmh.errors import SpecError
from mlmh.plugin_manager import get_plugin_manager
from mlmh.results import load_results
from mlmh.runner import run_experiment
from mlmh.tracking import safe_name

PRESET = '''
description = "tracked: a tiny MLM, one masking, mask-predict at one and two steps (a finding), BLEU"
dataset = "pan"
models = ["trained-mlm:size=tiny,max_steps=10"]
maskings = ["random:ratio=0.5"]
samplers = ["mask-predict:steps=1", "mask-predict:steps=2"]
metrics = ["bleu"]
tasks = []
limit = 2
'''


class Broken(Tracker):
    """A tracker whose backend is down: it raises on every event."""

    name = "broken"
    calls = 0

    def observe(self, event):
        type(self).calls += 1
        raise ConnectionError("tracking server unreachable")


class Recorder(Tracker):
    """Keeps the kinds of the events it is given, per run it was built for."""

    name = "recorder"
    runs: list[list[str]] = []

    def observe(self, event):
        if event.kind == "run_started":
            type(self).runs.append([])
        type(self).runs[-1].append(event.kind)


class TrackersPlugin:
    """Registers the two trackers above, as a third-party plugin would."""

    @hookimpl
    def register_trackers(self, register):
        register(Broken())
        register(Recorder())


def install_test_trackers():
    pm = get_plugin_manager()
    if pm.get_plugin("test-trackers") is None:
        pm.register(TrackersPlugin(), name="test-trackers")


def tracked_run(root: Path) -> dict:
    """The run, through the command line: a broken tracker first, then the three real ones."""
    (root / "tracked.toml").write_text(PRESET, encoding="utf-8")
    install_test_trackers()
    Broken.calls = 0
    result = CliRunner().invoke(cli, ["eval", "--preset", str(root / "tracked.toml"), "--tracker", "broken,wandb",
                                      "--tracker", "mlflow,tensorboard", "--output-path", str(root / "run")])
    assert result.exit_code == 0, (result.output, result.exception)
    out = root / "run"
    return {"dir": out, "results": load_results(out), "stderr": result.stderr, "broken_calls": Broken.calls}


def expected_scores(results) -> dict[str, float]:
    """Every condition's seen and unseen metric scores with their CI bounds, by the names trackers log."""
    out = {}
    for row in results.conditions:
        for role in ("seen", "unseen"):
            for metric, score in getattr(row, role).metrics.items():
                name = f"{role}/{safe_name(row.id)}/{metric}"
                out[name] = score.value
                if score.has_ci:
                    out[f"{name}.ci_low"], out[f"{name}.ci_high"] = score.ci_low, score.ci_high
    return out


def finding(results) -> dict:
    """The one claim this run's grid tests: stutter as mask-predict's steps grow."""
    (found,) = [f for f in results.findings if f["claim"] == "b:mask-predict"]
    return found


def expected_curves(results) -> dict[str, list[tuple[int, float]]]:
    """The trained model's loss curves from its training card, as (step, loss)."""
    (facts,) = results.models.values()
    card = facts["training"]
    assert card["train_curve"] and card["validation_curve"]
    return {label: [(p["step"], p["loss"]) for p in card[curve]]
            for curve, label in (("train_curve", "train_loss"), ("validation_curve", "validation_loss"))}


def same_curve(logged, points) -> bool:
    """The same steps and, to float32 precision (TensorBoard's), the same losses."""
    return ([step for step, _ in logged] == [step for step, _ in points]
            and [value for _, value in logged] == pytest.approx([value for _, value in points], rel=1e-6))


@pytest.mark.slow
def test_one_run_logged_to_all_three_trackers_reads_back_from_each(tmp_path, monkeypatch):
    """One test, so the run is made once even when the suite is spread over workers."""
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    tracked = tracked_run(tmp_path)
    check_the_run(tracked)
    check_the_failing_tracker(tracked)
    check_mlflow(tracked)
    check_tensorboard(tracked)
    check_wandb(tracked)


def check_the_run(tracked):
    """Two conditions, a finding and a trained model with two validation points: something to log."""
    results = tracked["results"]
    assert len(results.conditions) == 2 and all(row.unseen.metrics["bleu"].has_ci for row in results.conditions)
    assert [p[0] for p in expected_curves(results)["validation_loss"]] == [5, 10]
    assert [f["claim"] for f in results.findings if f["verdict"] != "skipped"] == ["b:mask-predict"]
    assert results.config["trackers"] == ["broken", "wandb", "mlflow", "tensorboard"]


def check_the_failing_tracker(tracked):
    """Said once, by name; still offered every event; the three after it logged (checked below)."""
    lines = [line for line in tracked["stderr"].splitlines() if "tracker '" in line]
    assert lines == ["mlmh: tracker 'broken' failed on a run_started event: ConnectionError: tracking server "
                     "unreachable (further failures of it in this run are not shown)"]
    assert tracked["broken_calls"] > 10  # still offered every event of the run
    assert (tracked["dir"] / "report.md").is_file()


# -- MLflow ----------------------------------------------------------------------------------------
def check_mlflow(tracked):
    """Read back with MLflow's client from the SQLite store in the run directory."""
    from mlflow import MlflowClient

    run_dir, results = tracked["dir"], tracked["results"]
    client = MlflowClient(tracking_uri=f"sqlite:///{run_dir / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("mlmh")
    (run,) = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == run_dir.name and run.info.status == "FINISHED"
    metrics = run.data.metrics
    for name, value in expected_scores(results).items():
        assert metrics[name] == pytest.approx(value), name
    assert sum(name.startswith("unseen/") and name.endswith("/bleu") for name in metrics) == len(results.conditions)
    assert json.loads(run.data.params["models"]) == results.config["models"]
    assert run.data.params["dataset"] == "pan"
    (model,) = {name.split("/")[1] for name in metrics if name.startswith("training/")}
    for label, points in expected_curves(results).items():
        history = client.get_metric_history(run.info.run_id, f"training/{model}/{label}")
        assert same_curve(sorted((m.step, m.value) for m in history), points)
    assert run.data.tags["finding.b:mask-predict"] == finding(results)["verdict"]
    assert metrics["findings/b:mask-predict/statistic"] == pytest.approx(finding(results)["statistic"])
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "results.json", "findings.json", "plots"} <= artifacts
    plots = {a.path for a in client.list_artifacts(run.info.run_id, "plots")}
    assert plots == {f"plots/{p.name}" for p in run_dir.glob("*.png")} and plots
    report = client.download_artifacts(run.info.run_id, "report.md", str(run_dir.parent / "mlflow-download"))
    assert Path(report).read_text(encoding="utf-8") == (run_dir / "report.md").read_text(encoding="utf-8")
    assert Path(experiment.artifact_location.removeprefix("file://")).parent == run_dir.resolve()  # not ./mlruns


# -- TensorBoard -----------------------------------------------------------------------------------
def check_tensorboard(tracked):
    """Read back with TensorBoard's event accumulator from <run dir>/tensorboard."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    run_dir, results = tracked["dir"], tracked["results"]
    events = EventAccumulator(str(run_dir / "tensorboard"), size_guidance={"scalars": 0, "images": 0, "tensors": 0})
    events.Reload()
    tags = events.Tags()
    for name, value in expected_scores(results).items():
        (point,) = events.Scalars(name)
        assert point.step == 0 and point.value == pytest.approx(value, rel=1e-6), name  # stored as float32
    (model,) = {tag.split("/")[1] for tag in tags["scalars"] if tag.startswith("training/")}
    for label, points in expected_curves(results).items():
        assert same_curve([(e.step, e.value) for e in events.Scalars(f"training/{model}/{label}")], points)
    assert sorted(tags["images"]) == sorted(f"plots/{p.stem}" for p in run_dir.glob("*.png"))

    def text(tag):
        (event,) = events.Tensors(f"{tag}/text_summary")
        return tensor_util.make_ndarray(event.tensor_proto).item().decode("utf-8")

    assert finding(results)["statement"] in text("findings")
    assert text("report") == (run_dir / "report.md").read_text(encoding="utf-8")
    assert json.loads(text("config").strip("`\njson")) == results.config


# -- W&B -------------------------------------------------------------------------------------------
def wandb_records(path: Path) -> list:
    """The records of an offline W&B run file: W&B's framing (a LevelDB-style log of 32 KiB blocks, each
    record with a CRC-32 of its type and data) around its own protobuf ``Record``, parsed with wandb's."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    assert data[:4] == b":W&B", "not a W&B run file"
    block, pos, records, pending = 32768, 7, [], b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            continue
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc, f"{path}: corrupt record at {pos}"
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):  # full, or last of a split record
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            records.append(record)
    return records


def check_wandb(tracked):
    """Read back from the offline run's .wandb file (W&B's records) and its table file."""
    run_dir, results = tracked["dir"], tracked["results"]
    (offline,) = (run_dir / "wandb").glob("offline-run-*")
    (run_file,) = offline.glob("run-*.wandb")
    records = wandb_records(run_file)
    by_kind: dict[str, list] = {}
    for record in records:
        by_kind.setdefault(record.WhichOneof("record_type"), []).append(record)
    (run,) = [r.run for r in by_kind["run"]]
    assert run.display_name == run_dir.name and run.project == "mlmh"
    config = {item.key: json.loads(item.value_json) for item in run.config.update if item.key != "_wandb"}
    assert config == results.config
    summary = {}
    for record in by_kind["summary"]:
        for item in record.summary.update:
            summary["/".join(item.nested_key) if item.nested_key else item.key] = json.loads(item.value_json)
    for name, value in expected_scores(results).items():
        assert summary[name] == pytest.approx(value), name
    history = [{"/".join(i.nested_key) or i.key: json.loads(i.value_json) for i in r.history.item}
               for r in by_kind["history"]]
    (model,) = {k.split("/")[1] for k in summary if k.startswith("training/")}
    for label, points in expected_curves(results).items():
        name = f"training/{model}/{label}"
        assert same_curve([(h[f"training/{model}/step"], h[name]) for h in history if name in h], points)
    (artifact,) = [r.artifact for r in by_kind["artifact"] if r.artifact.type == "mlmh-run"]
    logged = {entry.path for entry in artifact.manifest.contents}
    assert logged == {"report.md", "results.json", *(p.name for p in run_dir.glob("*.png"))}
    (table,) = (offline / "files" / "media" / "table").glob("findings_*.table.json")
    rows = json.loads(table.read_text(encoding="utf-8"))
    assert [row[0] for row in rows["data"]] == [f["claim"] for f in results.findings]
    assert by_kind["exit"][0].exit.exit_code == 0
    assert not list(run_dir.parent.glob("wandb"))  # all of it inside the run directory


# -- rules of every tracker ------------------------------------------------------------------------
def fake_run(tmp_path, name, **table):
    runner_fakes.install()
    install_test_trackers()
    cfg = from_table({**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"],
                      "tasks": [], **table}, name="fake", source="fake.toml")
    seen = []
    results = run_experiment(cfg, seen.append, output_path=tmp_path / name, cache_path=tmp_path / "cache.sqlite")
    return results, [event.kind for event in seen]


def test_trackers_see_only_the_runs_that_enable_them(tmp_path):
    Recorder.runs = []
    fake_run(tmp_path, "plain")
    assert Recorder.runs == [] and not (tmp_path / "plain" / "tensorboard").exists()
    _, kinds = fake_run(tmp_path, "recorded", trackers=["recorder"])
    assert Recorder.runs == [kinds] and kinds[0] == "run_started" and kinds[-1] == "run_finished"


def test_a_missing_library_is_one_line_naming_the_extra_and_the_run_completes(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # as if `pip install 'mlmh[wandb]'` had not been run
    results, _ = fake_run(tmp_path, "missing", trackers=["wandb"])
    lines = [line for line in capsys.readouterr().err.splitlines() if "tracker" in line]
    assert lines == ["mlmh: tracker 'wandb' failed on a run_started event: wandb is not installed; "
                     "pip install 'mlmh[wandb]' (further failures of it in this run are not shown)"]
    assert results.conditions and (tmp_path / "missing" / "results.json").is_file()


def test_tracker_option_takes_comma_lists_repeats_and_parameters(capsys):
    main(["eval", "--preset", "quick", "--tracker", "wandb:project=lab,mlflow", "--tracker",
          "tensorboard:log_dir=tb", "--show-config"])
    shown = capsys.readouterr().out
    assert 'trackers = [\n    "wandb:project=lab",\n    "mlflow",\n    "tensorboard:log_dir=tb",\n]' in shown
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--preset", "quick", "--tracker", "wandb:mode=cloud", "--show-config"])
    assert stop.value.code == 2
    assert "--tracker wandb:mode=cloud" in capsys.readouterr().err


def test_preset_key_trackers_is_checked_and_does_not_decide_results():
    table = {**runner_fakes.FAKE_PRESET, "trackers": ["tensorboard", {"name": "mlflow", "experiment": "pan"}]}
    runner_fakes.install()
    config = from_table(table, name="fake", source="fake.toml")
    assert config.trackers == ["tensorboard", "mlflow:experiment=pan"]
    assert "trackers" not in config.experiment()  # --resume may add or drop a tracker
    with pytest.raises(SpecError, match=r"fake.toml: key 'trackers': unknown tracker 'mlfow'; did you mean 'mlflow'"):
        from_table({**table, "trackers": ["mlfow"]}, name="fake", source="fake.toml")


def test_ls_trackers_lists_the_three_with_their_extras():
    result = CliRunner().invoke(cli, ["ls", "trackers", "--json"])
    rows = {row["name"]: row for row in json.loads(result.output)}
    assert set(rows) == {"wandb", "mlflow", "tensorboard"}
    assert all(row["install"] == f"pip install 'mlmh[{name}]'" and row["installed"] for name, row in rows.items())
    assert {p["name"] for p in rows["mlflow"]["parameters"]} == {"tracking_uri", "experiment"}


def test_a_metric_that_failed_is_left_out_not_logged_as_nothing(tmp_path, capsys):
    """A score without a value (its metric failed) is not a number to log: the tracker logs the others."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    results, _ = fake_run(tmp_path, "failing", metrics=["word-match", "always-fails"], trackers=["tensorboard"])
    assert "tracker" not in capsys.readouterr().err
    events = EventAccumulator(str(tmp_path / "failing" / "tensorboard"))
    events.Reload()
    scalars = events.Tags()["scalars"]
    assert {f"unseen/{safe_name(row.id)}/word-match" for row in results.conditions} <= set(scalars)
    assert not [tag for tag in scalars if "always-fails" in tag]
    assert all(row.unseen.metrics["always-fails"].value is None for row in results.conditions)
