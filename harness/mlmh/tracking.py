"""What an experiment tracker logs of a finished run, decided once for every tracker.

A :class:`TrackedRun` is the typed :class:`~mlmh.types.RunResults` of the run-finished event laid out as
trackers take it: the configuration as parameters, every condition's seen and unseen scores with their
CI bounds as named scalars, the trained models' loss curves, the findings, and the run's files (report.md,
results.json, the plots). The builtin trackers (``wandb``, ``mlflow``, ``tensorboard``) map it onto their
own APIs; so can a third-party :class:`~mlmh.components.Tracker`.

Names are ``ROLE/CONDITION/METRIC`` (``unseen/trained-mlm mask-predict:steps_4 .../bleu``), with
``.ci_low`` / ``.ci_high`` beside each value, in the characters every tracker accepts (MLflow's are the
narrowest: letters, digits, ``_ - . : /`` and space). Curves are ``training/MODEL/train_loss`` and
``training/MODEL/validation_loss`` over training steps.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlmh.errors import MlmhError
from mlmh.types import RunResults, Score

#: the columns of a finding as trackers tabulate it
FINDING_COLUMNS = ("claim", "verdict", "statistic", "ci_low", "ci_high", "documents", "statement")
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. :]")


class MissingLibrary(MlmhError):
    """A tracker's library is not installed; the message names the pip extra that installs it."""


def library_installed(module: str) -> bool:
    """Whether ``module`` can be imported, without importing it (a tracker's library takes seconds to load)."""
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _missing(module: str, extra: str) -> MissingLibrary:
    return MissingLibrary(f"{module} is not installed; pip install 'mlmh[{extra}]'")


def check_library(module: str, extra: str) -> None:
    """Raise :class:`MissingLibrary` (one line naming ``pip install 'mlmh[EXTRA]'``) when ``module`` is absent."""
    if not library_installed(module):
        raise _missing(module, extra)


def import_library(module: str, extra: str) -> Any:
    """``module`` imported, or :class:`MissingLibrary` as :func:`check_library` says it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if exc.name is not None and exc.name.split(".")[0] != module.split(".")[0]:
            raise  # the library is there but one of its own imports failed: that error says more
        raise _missing(module, extra) from None


def safe_name(text: str) -> str:
    """``text`` in the characters every tracker accepts in a name; a condition id's `` | `` becomes a space."""
    return _UNSAFE.sub("_", text.replace(" | ", " ")).strip()


@dataclass
class TrackedRun:
    """A finished run as every tracker logs it (see the module docstring for the names)."""

    run_id: str
    directory: Path
    config: dict[str, Any]
    #: condition id -> its name in scalar names (``safe_name``, made unique)
    conditions: dict[str, str] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    #: name -> [(step, value)] in step order
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    #: the run's files that exist: report.md, results.json, then the plots
    files: list[Path] = field(default_factory=list)

    def params(self) -> dict[str, str]:
        """The configuration as flat string parameters (lists as JSON), for trackers that take only strings."""
        return {key: value if isinstance(value, str) else json.dumps(value)
                for key, value in self.config.items() if value is not None}

    def own_path(self, name: str) -> Path:
        """``<run dir>/name`` for a tracker's folder or file, by the run directory's rules: refused when it,
        or a folder on the way to it, is a symbolic link (:meth:`mlmh.rundir.RunDir.own_path`)."""
        from mlmh.rundir import RunDir

        return RunDir(self.directory).own_path(name)

    @property
    def plots(self) -> list[Path]:
        from mlmh.rundir import RunDir

        return [path for path in self.files if path in RunDir(path.parent).figures()]

    def finding_rows(self) -> list[list[Any]]:
        """The findings as table rows of :data:`FINDING_COLUMNS`."""
        return [[finding.get(column) for column in FINDING_COLUMNS] for finding in self.findings]

    def findings_markdown(self) -> str:
        """The findings as a markdown table (for trackers that show text)."""
        lines = ["| " + " | ".join(FINDING_COLUMNS) + " |", "|" + "---|" * len(FINDING_COLUMNS)]
        for row in self.finding_rows():
            lines.append("| " + " | ".join("" if v is None else str(v).replace("|", "/") for v in row) + " |")
        return "\n".join(lines)


def tracked_run(results: RunResults, directory: str | Path) -> TrackedRun:
    """The :class:`TrackedRun` of a run's results, written in ``directory``."""
    directory = Path(directory)
    run = TrackedRun(run_id=results.run_id or directory.name, directory=directory, config=dict(results.config))
    used: set[str] = set()
    for row in results.conditions:
        name = safe_name(row.id)
        while name in used:
            name += "_"
        used.add(name)
        run.conditions[row.id] = name
        for role in ("seen", "unseen"):
            quality = getattr(row, role)
            if quality is None:
                continue
            scores = dict(quality.metrics)
            if quality.verbatim_recall is not None:
                scores["verbatim_recall"] = quality.verbatim_recall
            for metric, score in scores.items():
                _add_score(run.scores, f"{role}/{name}/{safe_name(metric)}", score)
        for task, values in row.downstream.items():
            for key, value in values.items():
                _add_value(run.scores, f"downstream/{name}/{safe_name(task)}.{safe_name(key)}", value)
    for task, values in results.baseline.items():
        for key, value in values.items():
            _add_value(run.scores, f"downstream/real train split/{safe_name(task)}.{safe_name(key)}", value)
    for spec, facts in results.models.items():
        card = facts.get("training") or {}
        for curve, label in (("train_curve", "train_loss"), ("validation_curve", "validation_loss")):
            points = [(int(p["step"]), float(p["loss"])) for p in card.get(curve) or [] if p.get("loss") is not None]
            if points:
                run.curves[f"training/{safe_name(_short_spec(spec))}/{label}"] = sorted(points)
    for finding in results.findings:
        run.findings.append(finding)
        for key in ("statistic", "ci_low", "ci_high"):
            _add_value(run.scores, f"findings/{safe_name(finding['claim'])}/{key}", finding.get(key))
    from mlmh.rundir import RunDir

    run_dir = RunDir(directory)
    run.files = [path for path in (run_dir.report, run_dir.results) if path.is_file()] + run_dir.figures()
    return run


def _short_spec(spec: str) -> str:
    """A model as the conditions name it (its parameters that differ from the defaults), when its plugin is
    loaded; else its full spec."""
    from mlmh.errors import SpecError
    from mlmh.registry import get_registry

    try:
        return get_registry().build("model", spec).short_spec
    except SpecError:
        return spec


def _add_score(scores: dict[str, float], name: str, score: Score) -> None:
    _add_value(scores, name, score.value)
    _add_value(scores, f"{name}.ci_low", score.ci_low)
    _add_value(scores, f"{name}.ci_high", score.ci_high)


def _add_value(scores: dict[str, float], name: str, value: Any) -> None:
    """Only finite numbers: a metric that failed has no value, and no tracker takes None or NaN."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        scores[name] = float(value)
