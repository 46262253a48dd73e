"""What an experiment tracker logs of a finished run, decided once for every tracker.

A :class:`TrackedRun` is the typed :class:`~mlmh.types.RunResults` of the run-finished event laid out as
trackers take it: the configuration as parameters, every condition's seen and unseen scores with their
CI bounds as named scalars, the trained models' loss curves, the findings, and the run's files (report.md,
results.json, the plots). The builtin trackers (``wandb``, ``mlflow``, ``tensorboard``) map it onto their
own APIs; so can a third-party :class:`~mlmh.components.Tracker`.

Names are ``ROLE/CONDITION/METRIC`` (``unseen/trained-mlm mask-predict:steps_4 .../bleu``), with
``.ci_low`` / ``.ci_high`` beside each value, in the characters every tracker accepts (MLflow's are the
narrowest: letters, digits, ``_ - . : /`` and space). Curves are ``training/MODEL/train_loss`` and
``training/MODEL/validation_loss`` over training steps, MODEL the model's short spec. A finding is
``findings/CLAIM/statistic`` with its CI bounds and ``findings/CLAIM/verdict`` (:data:`VERDICT_VALUES`).

Each condition is also a :class:`TrackedCondition` (its model, masking and sampler as parameters, its scores
named ``ROLE/METRIC``) for trackers that keep a run per condition (MLflow's child runs), and
:meth:`TrackedRun.charts` groups the names one chart per metric, every condition a series in it.
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
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE, Comparisons, RunResults, Score

#: the documents a kind of comparison is about when its verdicts do not say (:func:`comparison_statements`)
STATEMENT_SETS = {"disagreements": "seen against unseen documents",
                  "correlations": "seen documents' regenerations (the synthetic corpus)"}
#: the columns of a finding as trackers tabulate it
FINDING_COLUMNS = ("claim", "verdict", "statistic", "ci_low", "ci_high", "documents", "statement")
_UNSAFE = re.compile(r"[^A-Za-z0-9_\-. :]")
#: a verdict as a number a tracker can chart: +1 holds, 0 inconclusive, -1 does not hold ("not comparable" and
#: "not tested" have no place on that scale: they are the verdict's tag and text only)
VERDICT_VALUES = {HOLDS: 1.0, INCONCLUSIVE: 0.0, FAILS: -1.0}


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


def check_folder(path: str | Path, what: str) -> None:
    """Refuse, in one line naming ``what`` (``log_dir``), a folder a tracker would write its files in but
    cannot: something not a folder in its place or on its way (``/dev/null``, a file), or a read-only place or full
    disk (:func:`mlmh.machine.environment.storage_problem`). A tracker's ``preflight`` calls it, so the run stops
    before any work rather than failing when it has finished; nothing is made."""
    from mlmh.errors import SpecError
    from mlmh.machine.environment import storage_problem
    from mlmh.machine.escape import terminal

    folder = Path(path).expanduser()
    shown = terminal(str(path), line=True)
    found = folder
    while not found.exists() and found != found.parent:
        found = found.parent
    if not found.is_dir():
        on_way = "" if found == folder else f": {terminal(str(found), line=True)}, on its way,"
        raise SpecError(f"{what} {shown}{on_way} is not a folder; name a folder (it is made where missing)")
    problem = storage_problem(found)
    if problem:
        raise SpecError(f"{what} {shown}: {problem}; name a folder you can write")


def safe_name(text: str) -> str:
    """``text`` in the characters every tracker accepts in a name; a condition id's `` | `` becomes a space."""
    return _UNSAFE.sub("_", text.replace(" | ", " ")).strip()


@dataclass
class TrackedCondition:
    """One condition as a run of its own: its name in scalar names, what defines it, its scores."""

    name: str  # safe_name of the condition id, made unique
    #: condition (its id), model (short spec), model_kind, masking, masking_ratio, sampler, seed, as strings
    params: dict[str, str]
    #: ``ROLE/METRIC`` with ``.ci_low``/``.ci_high``, ``ROLE/verbatim_recall``, ``downstream/TASK.KEY``
    scores: dict[str, float] = field(default_factory=dict)


@dataclass
class TrackedRun:
    """A finished run as every tracker logs it (see the module docstring for the names)."""

    run_id: str
    directory: Path
    config: dict[str, Any]
    #: condition id -> the condition as a run of its own
    conditions: dict[str, TrackedCondition] = field(default_factory=dict)
    #: every value by its run-wide name: each condition's scores as ``ROLE/CONDITION/METRIC``, the downstream
    #: baseline, the findings
    scores: dict[str, float] = field(default_factory=dict)
    #: name -> [(step, value)] in step order
    curves: dict[str, list[tuple[int, float]]] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[str] = field(default_factory=list)  # the run's other verdicts, as report.md states them
    #: the run's files that exist: report.md, results.json, then the plots
    files: list[Path] = field(default_factory=list)

    def params(self) -> dict[str, str]:
        """The configuration as flat string parameters (lists as JSON), for trackers that take only strings."""
        return {key: value if isinstance(value, str) else json.dumps(value)
                for key, value in self.config.items() if value is not None}

    def own_path(self, name: str) -> Path:
        """``<run dir>/name`` for a tracker's folder or file, by the run directory's rules: refused when it,
        or a folder on the way to it, is a symbolic link (:meth:`mlmh.storage.rundir.RunDir.own_path`)."""
        from mlmh.storage.rundir import RunDir

        return RunDir(self.directory).own_path(name)

    @property
    def plots(self) -> list[Path]:
        from mlmh.storage.rundir import RunDir

        return [path for path in self.files if path in RunDir(path.parent).figures()]

    def run_scores(self) -> dict[str, float]:
        """The values that belong to no one condition: the downstream baseline and the findings."""
        of_conditions = {self.name_of(c, short) for c in self.conditions.values() for short in c.scores}
        return {name: value for name, value in self.scores.items() if name not in of_conditions}

    @staticmethod
    def name_of(condition: TrackedCondition, short: str) -> str:
        """The run-wide name of a condition's score: ``unseen/bleu`` -> ``unseen/CONDITION/bleu``."""
        group, _, metric = short.partition("/")
        return f"{group}/{condition.name}/{metric}"

    def charts(self) -> dict[str, dict[str, list[str]]]:
        """Group -> chart title -> the names it plots: one chart per metric and document set (``unseen`` ->
        ``bleu`` -> that metric of every condition), per downstream score, per loss curve (every model), and
        per finding (its statistic and CI bounds)."""
        charts: dict[str, dict[str, list[str]]] = {}
        for condition in self.conditions.values():
            for short in condition.scores:
                group, _, metric = short.partition("/")
                if not metric.endswith((".ci_low", ".ci_high")):
                    charts.setdefault(group, {}).setdefault(metric, []).append(self.name_of(condition, short))
        for name in list(self.run_scores()) + list(self.curves):
            group, _, rest = name.partition("/")
            owner, _, metric = rest.rpartition("/")
            title = owner if group == "findings" else metric
            if group == "findings" and metric == "verdict":
                continue  # another scale than the statistic's
            charts.setdefault(group, {}).setdefault(title, []).append(name)
        return charts

    def finding_rows(self) -> list[list[Any]]:
        """The findings as table rows of :data:`FINDING_COLUMNS`."""
        return [[finding.get(column) for column in FINDING_COLUMNS] for finding in self.findings]

    def findings_markdown(self) -> str:
        """The findings as a markdown table (for trackers that show text)."""
        lines = ["| " + " | ".join(FINDING_COLUMNS) + " |", "|" + "---|" * len(FINDING_COLUMNS)]
        for row in self.finding_rows():
            lines.append("| " + " | ".join("" if v is None else str(v).replace("|", "/") for v in row) + " |")
        return "\n".join(lines)


def comparison_statements(comparisons: Comparisons) -> list[str]:
    """Every verdict's sentence led by the documents it is about (``unseen documents: bleu: MLM and CLM tie ...``):
    report.md says the set in a section's heading, which a tracker's list of lines does not have. A memorisation gap
    and a plateau name their sets in their own sentences."""
    lines = []
    for kind, item in comparisons.verdicts():
        role = getattr(item, "role", None)
        about = f"{role} documents" if role else STATEMENT_SETS.get(kind)
        lines.append(f"{about}: {item.statement}" if about else item.statement)
    return lines


def tracked_run(results: RunResults, directory: str | Path) -> TrackedRun:
    """The :class:`TrackedRun` of a run's results, written in ``directory``; curves are named by each model's
    label (its short spec, as the conditions name it)."""
    directory = Path(directory)
    run = TrackedRun(run_id=results.run_id or directory.name, directory=directory, config=results.config.to_dict())
    used: set[str] = set()
    for row in results.conditions:
        name = safe_name(row.id)
        while name in used:
            name += "_"
        used.add(name)
        condition = TrackedCondition(name, {
            "condition": row.id, "model": row.model, "model_kind": row.model_kind, "masking": row.masking,
            "masking_ratio": "" if row.masking_ratio is None else str(row.masking_ratio), "sampler": row.sampler,
            "seed": str(row.seed)})
        run.conditions[row.id] = condition
        for role in ("seen", "unseen"):
            quality = getattr(row, role)
            if quality is None:
                continue
            scores = dict(quality.metrics)
            if quality.verbatim_recall is not None:
                scores["verbatim_recall"] = quality.verbatim_recall
            for metric, score in scores.items():
                _add_score(condition.scores, f"{role}/{safe_name(metric)}", score)
        for task, values in row.downstream.items():
            for key, value in values.items():
                _add_value(condition.scores, f"downstream/{safe_name(task)}.{safe_name(key)}", value)
        run.scores |= {run.name_of(condition, short): value for short, value in condition.scores.items()}
    for task, measured in results.baseline.items():
        for key, number in measured.items():
            _add_value(run.scores, f"downstream/real train split/{safe_name(task)}.{safe_name(key)}", number)
    for spec, facts in results.models.items():
        card = facts.training
        for curve, label in (("train_curve", "train_loss"), ("validation_curve", "validation_loss")):
            points = [(int(p["step"]), float(p["loss"])) for p in card.get(curve) or [] if p.get("loss") is not None]
            if points:
                run.curves[f"training/{safe_name(facts.called(spec))}/{label}"] = sorted(points)
    for finding in results.findings:
        run.findings.append(finding.to_dict())
        for key in ("statistic", "ci_low", "ci_high"):
            _add_value(run.scores, f"findings/{safe_name(finding.claim)}/{key}", getattr(finding, key))
        _add_value(run.scores, f"findings/{safe_name(finding.claim)}/verdict", VERDICT_VALUES.get(finding.verdict))
    if results.comparisons is not None:
        run.comparisons = comparison_statements(results.comparisons)
    from mlmh.storage.rundir import RunDir

    run_dir = RunDir(directory)
    run.files = [path for path in (run_dir.report, run_dir.results) if path.is_file()] + run_dir.figures()
    return run


def _add_score(scores: dict[str, float], name: str, score: Score) -> None:
    _add_value(scores, name, score.value)
    _add_value(scores, f"{name}.ci_low", score.ci_low)
    _add_value(scores, f"{name}.ci_high", score.ci_high)


def _add_value(scores: dict[str, float], name: str, value: Any) -> None:
    """Only finite numbers: a metric that failed has no value, and no tracker takes None or NaN."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        scores[name] = float(value)
