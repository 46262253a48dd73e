"""Experiment trackers (``--tracker``, a preset's ``trackers``): one real run on the bundled PAN sample with a
tiny MLM trained ten steps (validated at 5 and 10), logged to W&B (offline), MLflow (SQLite) and TensorBoard
at once, each read back with that tracker's own reader: MLflow's client, TensorBoard's event accumulator, and
W&B's record type over the offline run's ``.wandb`` file. A tracker that raises or whose library is missing
is said once, by name, and the run completes; trackers see only the runs that enabled them."""

from __future__ import annotations

import json
import re
import struct
import sys
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner

import runner_fakes
from mlmh import hookimpl
from mlmh.api import load
from mlmh.cli import cli, main
from mlmh.components import Tracker
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.errors import SpecError
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.run.runner import run_experiment
from mlmh.tracking import VERDICT_VALUES, comparison_statements, safe_name

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
    return {"dir": out, "results": load(out).results, "stderr": result.stderr, "broken_calls": Broken.calls}


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


def finding(results):
    """The one claim this run's grid tests: stutter as mask-predict's steps grow (tested, or not comparable when
    the ten-step MLM never left the unigram plateau)."""
    (found,) = [f for f in results.findings if f.claim == "b:mask-predict"]
    return found


def expected_condition_scores(results, row) -> dict[str, float]:
    """One condition's scores as its own run names them (``ROLE/METRIC``)."""
    out = {}
    for role in ("seen", "unseen"):
        for metric, score in getattr(row, role).metrics.items():
            out[f"{role}/{metric}"] = score.value
            if score.has_ci:
                out[f"{role}/{metric}.ci_low"], out[f"{role}/{metric}.ci_high"] = score.ci_low, score.ci_high
    return out


def expected_curves(results) -> dict[str, list[tuple[int, float]]]:
    """The trained model's loss curves from its training card, as (step, loss)."""
    (facts,) = results.models.values()
    card = facts.training
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
    assert [f.claim for f in results.findings if f.tested] == ["b:mask-predict"]
    assert results.config.to_dict()["trackers"] == ["broken", "wandb", "mlflow", "tensorboard"]


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
    runs = client.search_runs([experiment.experiment_id])
    (run,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    assert run.info.run_name == run_dir.name and run.info.status == "FINISHED"
    metrics = run.data.metrics
    assert not [name for name in metrics if name.startswith(("seen/", "unseen/"))]  # in the children
    children = {r.data.params["condition"]: r for r in runs if r.data.tags.get("mlflow.parentRunId") == run.info.run_id}
    assert set(children) == {row.id for row in results.conditions}
    for row in results.conditions:
        child = children[row.id]
        assert child.info.status == "FINISHED" and child.info.run_name == safe_name(row.id)
        assert {k: child.data.params[k] for k in ("model", "masking", "sampler", "seed")} == {
            "model": row.model, "masking": row.masking, "sampler": row.sampler, "seed": str(row.seed)}
        for name, value in expected_condition_scores(results, row).items():
            assert child.data.metrics[name] == pytest.approx(value), name
        assert child.data.metrics["unseen/verbatim_recall"] == pytest.approx(row.unseen.verbatim_recall.value)
    assert json.loads(run.data.params["models"]) == results.config.to_dict()["models"]
    assert run.data.params["dataset"] == "pan"
    (model,) = {name.split("/")[1] for name in metrics if name.startswith("training/")}
    for label, points in expected_curves(results).items():
        history = client.get_metric_history(run.info.run_id, f"training/{model}/{label}")
        assert same_curve(sorted((m.step, m.value) for m in history), points)
    found = finding(results)
    assert run.data.tags["finding.b:mask-predict"] == found.verdict
    if found.statistic is not None:
        assert metrics["findings/b:mask-predict/statistic"] == pytest.approx(found.statistic)
    assert metrics.get("findings/b:mask-predict/verdict") == VERDICT_VALUES.get(found.verdict)
    artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"report.md", "results.json", "findings.json", "comparisons.txt", "plots"} <= artifacts
    said = client.download_artifacts(run.info.run_id, "comparisons.txt", str(run_dir.parent / "mlflow-comparisons"))
    assert Path(said).read_text(encoding="utf-8").splitlines() == comparison_statements(results.comparisons)
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

    assert finding(results).statement in text("findings")
    charts = custom_charts(events)
    names = [safe_name(row.id) for row in results.conditions]
    assert len(charts["unseen"]["bleu"]) == len(names) == 2
    assert [tag for tag in tags["scalars"] if any(re.match(p, tag) for p in charts["unseen"]["bleu"])] == [
        f"unseen/{name}/bleu" for name in names]
    assert [re.match(p, f"training/{model}/validation_loss") is not None for p in charts["training"]["validation_loss"]] == [True]
    assert text("report") == (run_dir / "report.md").read_text(encoding="utf-8")
    assert json.loads(text("config").strip("`\njson")) == results.config.to_dict()


def custom_charts(events) -> dict[str, dict[str, list[str]]]:
    """The Custom Scalars layout of an event file: category -> chart -> the tag patterns it plots."""
    from tensorboard.plugins.custom_scalar import layout_pb2
    from tensorboard.util import tensor_util

    (event,) = events.Tensors("custom_scalars__config__")
    layout = layout_pb2.Layout()
    layout.ParseFromString(tensor_util.make_ndarray(event.tensor_proto).item())
    return {category.title: {chart.title: list(chart.multiline.tag) for chart in category.chart}
            for category in layout.category}


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
    assert config == results.config.to_dict()
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
    assert [row[0] for row in rows["data"]] == [f.claim for f in results.findings]
    assert by_kind["exit"][0].exit.exit_code == 0
    assert not list(run_dir.parent.glob("wandb"))  # all of it inside the run directory


# -- rules of every tracker ------------------------------------------------------------------------
def fake_run(tmp_path, name, **table):
    runner_fakes.install()
    install_test_trackers()
    cfg = from_table({**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"],
                      "tasks": [], **table}, name="fake", source="fake.toml")
    seen = []
    results = run_experiment(build_plan(cfg), seen.append, output_path=tmp_path / name, cache_path=tmp_path / "cache.sqlite")
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
        build_plan(from_table({**table, "trackers": ["mlfow"]}, name="fake", source="fake.toml"))


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


# -- layouts, on constructed results ---------------------------------------------------------------
def constructed_results():
    """Two conditions scored on both sets, a downstream baseline, a trained model's curves, and one finding of
    each kind that has a number (holds, does not hold) and one that has none (not comparable)."""
    from mlmh.types import RESULTS_SCHEMA, Finding, RunResults

    def role(value):
        return {"documents": 4, "scored": 4, "metrics": {"bleu": {"value": value, "ci_low": value - 1, "ci_high": value + 1}},
                "verbatim_recall": {"value": value / 100}}

    rows = [{"id": f"trained-{k} | random:ratio=0.5 | {s} | seed=0", "model": f"trained-{k}", "model_kind": k,
             "masking": "random:ratio=0.5", "masking_ratio": 0.5, "sampler": s, "seed": 0, "seen": role(v + 5),
             "unseen": role(v), "downstream": {"av": {"accuracy": v / 100}}}
            for k, s, v in (("mlm", "mask-predict:steps=4", 30.0), ("clm", "clm-infill", 20.0))]
    curve = [{"step": s, "loss": 5.0 / s} for s in (5, 10)]
    results = RunResults.from_dict({
        "schema_version": RESULTS_SCHEMA, "run_id": "built", "config": {"preset": "built", "models": ["trained-mlm", "trained-clm"]}, "conditions": rows,
        "baseline": {"av": {"accuracy": 0.5}},
        "models": {"trained-mlm:size=tiny,max_steps=40,batch_size=0": {"model_kind": "mlm", "label": "trained-mlm",
                                                                       "training": {"train_curve": curve, "validation_curve": curve}}}})
    results.findings = [
        Finding("paper-1:bleu", "paper", "MLM beats CLM", "holds", "MLM higher by 10.", 10.0, 8.0, 12.0),
        Finding("paper-2", "paper", "lower ratios are better", "does not hold", "No.", -1.0, -2.0, -0.5),
        Finding("paper-3", "paper", "punctuation", "not comparable", "Not comparable: plateau."),
    ]
    return results


def test_a_run_logs_one_chart_per_metric_and_findings_as_values(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from mlmh.tracking import tracked_run
    from mlmh_builtins.trackers_tensorboard import TensorboardTracker

    results = constructed_results()
    run = tracked_run(results, tmp_path)
    mlm, clm = (safe_name(row.id) for row in results.conditions)
    assert run.charts()["unseen"]["bleu"] == [f"unseen/{mlm}/bleu", f"unseen/{clm}/bleu"]
    assert run.charts()["downstream"]["av.accuracy"] == [f"downstream/{mlm}/av.accuracy", f"downstream/{clm}/av.accuracy",
                                                         "downstream/real train split/av.accuracy"]
    assert run.charts()["training"] == {"train_loss": ["training/trained-mlm/train_loss"],
                                        "validation_loss": ["training/trained-mlm/validation_loss"]}
    assert run.charts()["findings"]["paper-1:bleu"] == [f"findings/paper-1:bleu/{k}" for k in ("statistic", "ci_low", "ci_high")]
    assert run.run_scores() == {"downstream/real train split/av.accuracy": 0.5,
                                **{f"findings/paper-1:bleu/{k}": v for k, v in (("statistic", 10.0), ("ci_low", 8.0),
                                                                                ("ci_high", 12.0), ("verdict", 1.0))},
                                **{f"findings/paper-2/{k}": v for k, v in (("statistic", -1.0), ("ci_low", -2.0),
                                                                           ("ci_high", -0.5), ("verdict", -1.0))}}
    assert run.conditions[results.conditions[0].id].params == {
        "condition": results.conditions[0].id, "model": "trained-mlm", "model_kind": "mlm", "masking": "random:ratio=0.5",
        "masking_ratio": "0.5", "sampler": "mask-predict:steps=4", "seed": "0"}

    TensorboardTracker().log(run)
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    charts = custom_charts(events)
    scalars = events.Tags()["scalars"]
    assert set(charts) == {"seen", "unseen", "downstream", "training", "findings"}
    for group, by_title in run.charts().items():
        for title, names in by_title.items():
            plotted = [tag for tag in scalars if any(re.match(p, tag) for p in charts[group][title])]
            assert sorted(plotted) == sorted(names), (group, title)
    (verdict,) = events.Scalars("findings/paper-2/verdict")
    assert verdict.value == -1.0
    assert not [tag for tag in scalars if tag.startswith("findings/paper-3/")]


def test_the_comparisons_report_md_states_reach_every_tracker(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from mlmh.findings.comparisons import compare
    from mlmh.tracking import tracked_run
    from mlmh_builtins.trackers_tensorboard import TensorboardTracker

    results = constructed_results()
    assert tracked_run(results, tmp_path / "unjudged").comparisons == []  # results built by hand: none decided
    results.comparisons = compare(results)
    run = tracked_run(results, tmp_path)
    assert run.comparisons and run.comparisons == comparison_statements(results.comparisons)
    assert any(line.startswith("unseen documents: bleu") for line in run.comparisons)  # MLM against CLM, main metric
    TensorboardTracker().log(run)
    events = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"tensors": 0})
    events.Reload()
    (text,) = events.Tensors("comparisons/text_summary")
    assert run.comparisons[0] in text.tensor_proto.string_val[0].decode()


def test_mlflow_logs_a_child_run_per_condition(tmp_path):
    from mlflow import MlflowClient

    from mlmh.tracking import tracked_run
    from mlmh_builtins.trackers_mlflow import MlflowTracker

    results = constructed_results()
    MlflowTracker().log(tracked_run(results, tmp_path))
    client = MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name("mlmh").experiment_id])
    (parent,) = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]
    assert len(runs) == 3 and len(children) == 2
    by_model = {r.data.params["model"]: r for r in children}
    mlm = by_model["trained-mlm"]
    assert (mlm.data.params["masking"], mlm.data.params["sampler"], mlm.data.params["masking_ratio"]) == (
        "random:ratio=0.5", "mask-predict:steps=4", "0.5")
    assert mlm.data.metrics == pytest.approx({"unseen/bleu": 30.0, "unseen/bleu.ci_low": 29.0, "unseen/bleu.ci_high": 31.0,
                                              "unseen/verbatim_recall": 0.3, "seen/bleu": 35.0, "seen/bleu.ci_low": 34.0,
                                              "seen/bleu.ci_high": 36.0, "seen/verbatim_recall": 0.35,
                                              "downstream/av.accuracy": 0.3})
    assert by_model["trained-clm"].data.metrics["unseen/bleu"] == 20.0
    assert parent.data.metrics["findings/paper-1:bleu/verdict"] == 1.0
    assert parent.data.metrics["downstream/real train split/av.accuracy"] == 0.5
    assert parent.data.tags["finding.paper-3"] == "not comparable" and "findings/paper-3/verdict" not in parent.data.metrics
