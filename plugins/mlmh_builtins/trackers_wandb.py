"""Builtin tracker ``wandb``: a finished run as a Weights & Biases run, offline by default.

Offline, the run is written under ``<run dir>/wandb/offline-run-*`` and nothing leaves the machine until
``wandb sync`` uploads it; ``mode=online`` streams it (after ``wandb login``). Scores go to the run's
summary, loss curves to its history (each model's curves on its own step axis), findings to a table,
plots as images, and report.md, results.json and the plots as one artifact of type ``mlmh-run``.
"""

from __future__ import annotations

import netrc
import os
import re
from urllib.parse import urlparse

from mlmh import hookimpl
from mlmh.components import Tracker
from mlmh.errors import SpecError
from mlmh.params import Param
from mlmh.tracking import FINDING_COLUMNS, TrackedRun, import_library

#: what W&B refuses in a project name (wandb's Settings.validate_project), and its longest
INVALID_NAME_CHARACTERS = ("/", "\\", "#", "?", "%", ":")
MAX_NAME = 128


def has_api_key() -> bool:
    """Whether W&B finds an API key as it looks for one: $WANDB_API_KEY, else the .netrc entry of its host
    ($WANDB_BASE_URL, else api.wandb.ai; the file $NETRC, else ~/.netrc)."""
    if os.environ.get("WANDB_API_KEY", "").strip():
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "") or "https://api.wandb.ai").hostname or "api.wandb.ai"
    path = os.path.expanduser(os.environ.get("NETRC", "") or "~/.netrc")
    try:
        found = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return False
    return bool(found and found[2])


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

    def preflight(self) -> None:
        """The settings W&B would refuse when the run has finished, refused before its work instead: a project or
        entity name W&B does not take, and mode=online without an API key (W&B's own rules, read without importing it)."""
        for key in ("project", "entity"):
            value = self.params[key]
            bad = sorted(set(value) & set(INVALID_NAME_CHARACTERS))
            if bad or len(value) > MAX_NAME:
                why = f"holds {' '.join(bad)}" if bad else f"is longer than {MAX_NAME} characters"
                raise SpecError(f"the {key} name {why}; W&B takes names of up to {MAX_NAME} characters without "
                                f"{' '.join(INVALID_NAME_CHARACTERS)}")
        if self.params["mode"] == "online" and not has_api_key():
            raise SpecError("mode=online needs a W&B API key: run `wandb login` or set WANDB_API_KEY "
                            "(or keep mode=offline and `wandb sync` later)")

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
