"""Builtin tracker ``mlflow``: a finished run as an MLflow run, in a local SQLite store by default.

The store is ``sqlite:///<run dir>/mlflow.db`` unless ``tracking_uri=`` (or ``$MLFLOW_TRACKING_URI``) names
another, e.g. one database for every run: ``mlflow:tracking_uri=sqlite:///runs/mlflow.db``; a SQLite store's
artifacts are kept beside its database, in ``mlflow-artifacts/``. The run's parameters are the run
configuration, its metrics the loss curves (by training step), the downstream baseline and the findings
(statistic, CI, verdict as +1/0/-1), its tags the findings' verdicts, and its artifacts report.md,
results.json, findings.json and the plots. Each condition is a child run (``mlflow.parentRunId``) whose
parameters are its model, masking, sampler and seed and whose metrics are its scores at step 0 (``unseen/bleu``
with ``.ci_low``/``.ci_high``), so MLflow's run comparison charts a metric across conditions. MLflow's usage
telemetry is off unless ``MLFLOW_DISABLE_TELEMETRY`` says otherwise.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from pathlib import Path
from urllib.parse import unquote, urlparse
from typing import Iterator

from mlmh import hookimpl
from mlmh.components import Tracker
from mlmh.params import Param
from mlmh.errors import SpecError
from mlmh.tracking import TrackedRun, check_folder, import_library, safe_name


class MlflowTracker(Tracker):
    name = "mlflow"
    description = "MLflow: a local SQLite store in the run directory (mlflow.db) unless tracking_uri names another."
    library = "mlflow"
    extra = "mlflow"
    parameters = (
        Param("tracking_uri", str, "", "where runs go; empty = $MLFLOW_TRACKING_URI if set, else "
              "sqlite:///<run dir>/mlflow.db"),
        Param("experiment", str, "mlmh", "MLflow experiment the run goes under"),
    )

    def preflight(self) -> None:
        """A local store named by tracking_uri= (or $MLFLOW_TRACKING_URI) is one MLflow can write: a ``file:`` URI or a
        path names a folder, a ``sqlite:///`` URI a database file in a folder (checked before the run's work; a server's
        URI is the server's to refuse)."""
        given = self.params["tracking_uri"] or os.environ.get("MLFLOW_TRACKING_URI", "")
        what = "tracking_uri" if self.params["tracking_uri"] else "$MLFLOW_TRACKING_URI"
        store = local_store(given)
        if store is None:
            return
        where, is_database = store
        if is_database and where.is_dir():
            raise SpecError(f"{what} {given}: {where} is a folder, not a SQLite database file")
        check_folder(where.parent if is_database else where, what)

    def tracking_uri(self, run: TrackedRun) -> str:
        given = self.params["tracking_uri"] or os.environ.get("MLFLOW_TRACKING_URI")
        if given:
            return given
        run.own_path("mlflow-artifacts")  # the store's artifacts go beside it: no link there either
        return f"sqlite:///{run.own_path('mlflow.db').resolve()}"

    def log(self, run: TrackedRun) -> None:
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")  # read when mlflow is imported
        mlflow = import_library("mlflow", self.extra)
        from mlflow.entities import Metric, Param as MlflowParam, RunTag

        uri = self.tracking_uri(run)
        with _quiet("mlflow.store.db.utils"):  # "Creating initial MLflow database tables..." amid the progress bars
            client = mlflow.MlflowClient(tracking_uri=uri)
            experiment = client.get_experiment_by_name(self.params["experiment"])
        if experiment is not None:
            experiment_id = experiment.experiment_id
        else:
            experiment_id = client.create_experiment(self.params["experiment"], artifact_location=_artifact_root(uri))
        tags = {"mlmh.run_dir": str(run.directory.resolve()), "mlmh.preset": str(run.config.get("preset", ""))}
        tags |= {f"finding.{safe_name(f['claim'])}": str(f.get("verdict")) for f in run.findings}
        run_id = client.create_run(experiment_id, run_name=run.run_id, tags=tags).info.run_id
        try:
            now = int(time.time() * 1000)
            metrics = [Metric(name, value, now, 0) for name, value in run.run_scores().items()]
            metrics += [Metric(name, value, now, step) for name, points in run.curves.items() for step, value in points]
            params = [MlflowParam(key, value[:6000]) for key, value in run.params().items()]  # MLflow's longest value
            client.log_batch(run_id, metrics=metrics, params=params, tags=[RunTag("mlmh.run_id", run.run_id)])
            for condition in run.conditions.values():
                child = client.create_run(experiment_id, run_name=condition.name, tags={
                    "mlflow.parentRunId": run_id, "mlmh.run_id": run.run_id}).info.run_id
                client.log_batch(child, metrics=[Metric(name, value, now, 0) for name, value in condition.scores.items()],
                                 params=[MlflowParam(key, value[:6000]) for key, value in condition.params.items()])
                client.set_terminated(child, "FINISHED")
            if run.findings:
                client.log_dict(run_id, run.findings, "findings.json")
            if run.comparisons:
                client.log_text(run_id, "\n".join(run.comparisons) + "\n", "comparisons.txt")
            plots = run.plots
            for path in run.files:
                client.log_artifact(run_id, str(path), artifact_path="plots" if path in plots else None)
        except BaseException:
            client.set_terminated(run_id, "FAILED")
            raise
        client.set_terminated(run_id, "FINISHED")


@contextlib.contextmanager
def _quiet(name: str) -> Iterator[None]:
    """Logger ``name`` says only warnings and errors while inside."""
    logger = logging.getLogger(name)
    before = logger.level
    logger.setLevel(max(before, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(before)


def local_store(uri: str) -> tuple[Path, bool] | None:
    """(where, whether a SQLite database) of a tracking URI that names this machine's files: a folder for a path or a
    ``file:`` URI, a database file for ``sqlite:///PATH``; None for a server, ``:memory:`` or no URI."""
    if not uri:
        return None
    parsed = urlparse(uri)
    if parsed.scheme == "sqlite":
        path = uri[len("sqlite:///"):] if uri.startswith("sqlite:///") else ""
        return (Path(unquote(path)), True) if path and path != ":memory:" else None
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)), False
    if not parsed.scheme or len(parsed.scheme) == 1:  # a path (a Windows drive letter is no scheme)
        return Path(uri), False
    return None


def _artifact_root(uri: str) -> str | None:
    """Artifacts of a new experiment in a local SQLite store: beside the database (MLflow's own default is
    ``./mlruns`` in whatever directory the run was started from); elsewhere, the server's choice."""
    prefix = "sqlite:///"
    if not uri.startswith(prefix) or uri == prefix + ":memory:":
        return None
    return (Path(uri[len(prefix):]).parent / "mlflow-artifacts").resolve().as_uri()


@hookimpl
def register_trackers(register):
    register(MlflowTracker())
