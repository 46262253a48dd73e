"""Builtin tracker ``tensorboard``: a finished run as TensorBoard event files, in ``<run dir>/tensorboard``.

``tensorboard --logdir runs/`` then shows every run side by side. Scores are scalars at step 0, loss
curves scalars by training step, the configuration, findings and report.md text, and the plots images.
The Custom Scalars tab shows one chart per metric (:meth:`mlmh.tracking.TrackedRun.charts`): every condition
a series of it (a point at step 0), every model a line of a loss chart, each finding its statistic and CI.
Written with PyTorch's ``SummaryWriter`` (the event-file writer of the ``tensorboard`` package).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mlmh import hookimpl
from mlmh.components import Tracker
from mlmh.params import Param
from mlmh.tracking import TrackedRun, check_folder, import_library


class TensorboardTracker(Tracker):
    name = "tensorboard"
    description = "TensorBoard event files in <run dir>/tensorboard (`tensorboard --logdir runs/` compares runs)."
    library = "tensorboard"
    extra = "tensorboard"
    parameters = (Param("log_dir", str, "", "where the event files go; empty = <run dir>/tensorboard"),)

    def preflight(self) -> None:
        """A log_dir= given is a folder the event files can be written in (checked before the run's work)."""
        if self.params["log_dir"]:
            check_folder(self.params["log_dir"], "log_dir")

    def log_dir(self, run: TrackedRun) -> Path:
        return Path(self.params["log_dir"]).expanduser() if self.params["log_dir"] else run.own_path("tensorboard")

    def log(self, run: TrackedRun) -> None:
        import_library("tensorboard", self.extra)
        from matplotlib.image import imread
        from torch.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(log_dir=str(self.log_dir(run)))
        try:
            writer.add_text("config", "```json\n" + json.dumps(run.config, indent=2) + "\n```", 0)
            writer.add_custom_scalars({group: {title: ["Multiline", [f"^{re.escape(name)}$" for name in names]]
                                               for title, names in charts.items()}
                                       for group, charts in run.charts().items()})
            for name, value in run.scores.items():
                writer.add_scalar(name, value, 0)
            for name, points in run.curves.items():
                for step, value in points:
                    writer.add_scalar(name, value, step)
            if run.findings:
                writer.add_text("findings", run.findings_markdown(), 0)
            if run.comparisons:
                writer.add_text("comparisons", "\n".join(f"- {line}" for line in run.comparisons), 0)
            plots = run.plots
            for path in run.files:
                if path in plots:
                    writer.add_image(f"plots/{path.stem}", imread(path)[..., :3], 0, dataformats="HWC")
                elif path.suffix == ".md":
                    writer.add_text(path.stem, path.read_text(encoding="utf-8"), 0)
        finally:
            writer.close()


@hookimpl
def register_trackers(register):
    register(TensorboardTracker())
