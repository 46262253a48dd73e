"""Builtin tracker ``wandb``: a finished run as a Weights & Biases run, offline by default.

Offline, the run is written under ``<run dir>/wandb/offline-run-*`` and nothing leaves the machine until
``wandb sync`` uploads it; ``mode=online`` streams it (after ``wandb login``). Scores go to the run's
summary, loss curves to its history (each model's curves on its own step axis), findings to a table,
plots as images, and report.md, results.json and the plots as one artifact of type ``mlmh-run``.
"""

from __future__ import annotations

import re

from mlmh import hookimpl
from mlmh.components import Tracker
from mlmh.params import Param
from mlmh.tracking import FINDING_COLUMNS, TrackedRun, import_library


class WandbTracker(Tracker):
    name = "wandb"
    description = ("Weights & Biases: offline under <run dir>/wandb unless mode=online; `wandb sync DIR` uploads "
                   "an offline run.")
    library = "wandb"
    extra = "wandb"
    parameters = (
        Param("project", str, "mlmh", "W&B project"),
        Param("entity", str, "", "W&B team or user; empty = your default"),
        Param("group", str, "", "W&B run group; empty = none"),
        Param("mode", str, "offline", "offline: written in the run directory only; online: streamed to W&B",
              choices=("offline", "online")),
    )

    def log(self, run: TrackedRun) -> None:
        wandb = import_library("wandb", self.extra)
        run.own_path("wandb")  # wandb writes <run dir>/wandb: never through a link planted there
        settings = wandb.Settings(silent=True, console="off", disable_git=True, save_code=False,
                                  x_disable_stats=True)
        session = wandb.init(project=self.params["project"], entity=self.params["entity"] or None,
                             group=self.params["group"] or None, name=run.run_id, job_type="eval",
                             mode=self.params["mode"], dir=str(run.directory), config=run.config, settings=settings)
        try:
            for name, points in run.curves.items():
                step = name.rsplit("/", 1)[0] + "/step"  # one step axis per model, shared by its curves
                session.define_metric(step)
                session.define_metric(name, step_metric=step)
                for at, value in points:
                    session.log({step: at, name: value})
            session.summary.update(run.scores)
            logged = {f"plots/{path.stem}": wandb.Image(str(path)) for path in run.plots}
            if run.findings:
                logged["findings"] = wandb.Table(columns=list(FINDING_COLUMNS), data=run.finding_rows())
            if run.comparisons:
                logged["comparisons"] = wandb.Table(columns=["comparison"], data=[[line] for line in run.comparisons])
            if logged:
                session.log(logged)
            if run.files:
                files = wandb.Artifact(re.sub(r"[^\w.-]", "_", f"mlmh-{run.run_id}"), type="mlmh-run",
                                       description=f"report, results and plots of mlmh run {run.run_id}")
                for path in run.files:
                    files.add_file(str(path), policy="immutable")  # the run directory keeps them: no staged copy
                session.log_artifact(files)
        except BaseException:
            session.finish(exit_code=1)
            raise
        session.finish()


@hookimpl
def register_trackers(register):
    register(WandbTracker())
