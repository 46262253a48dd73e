"""Questions about a run's :class:`~mlmh.types.RunResults`, answered once for every reader.

report.md, the figures, the CLI summary table and the TUI's results table all ask the same things of a
run: which document sets it scored (headline first), which metrics lead a table, whether a metric is
better high or low, which conditions are best in a column, and how a number is written. Each answer
lives here, so the report and the TUI always star the same cells and round by the same rule.

A finished run is read by :func:`mlmh.api.load` (results.json parsed by :meth:`mlmh.storage.rundir.RunDir.read_results`);
the runner builds RunResults directly and RunDir writes its ``to_dict``.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Protocol

from mlmh.config.declared import main_results
from mlmh.types import ConditionResult, ModelRecord, RunResults


# -- models ------------------------------------------------------------------------------------------
def _parts(spec: str) -> tuple[str, dict[str, str]]:
    name, _, rest = spec.partition(":")
    return name, dict(item.partition("=")[::2] for item in rest.split(",") if item)


def model_record_of(results: RunResults, model: str) -> ModelRecord | None:
    """The ``models`` entry of a model, named as conditions name it (its short spec) or by its full spec.

    Entries carry their short spec as ``label``; results written before labels existed are matched by
    parameters, when exactly one full spec holds every parameter of the short one."""
    if model in results.models:
        return results.models[model]
    labelled = [r for r in results.models.values() if r.label == model]
    if labelled:
        return labelled[0]
    name, params = _parts(model)
    matches = [r for spec, r in results.models.items() if not r.label
               and _parts(spec)[0] == name and params.items() <= _parts(spec)[1].items()]
    return matches[0] if len(matches) == 1 else None


def model_label(results: RunResults, spec: str) -> str:
    """What a reader calls a model: its short spec (the parameters that differ from the defaults)."""
    record = results.models.get(spec)
    return record.called(spec) if record is not None else spec


# -- which sets and metrics --------------------------------------------------------------------------
def document_counts(results: RunResults) -> str:
    """The regenerated document sets in a few words ("8 seen, 4 unseen"); empty when the run records none."""
    return ", ".join(f"{info.documents} {name}" for name, info in results.documents.items() if info.documents)


def roles(results: RunResults) -> list[str]:
    """The document sets the run scored, headline first."""
    present = [r for r in ("unseen", "seen") if any(getattr(c, r) is not None for c in results.conditions)]
    return sorted(present, key=lambda r: r != results.headline)


def metric_names(results: RunResults, role: str | None = None) -> list[str]:
    """Every metric scored on ``role`` (the headline set's when None), in first-seen order."""
    names: dict[str, None] = {}
    for row in results.conditions:
        for name in row.quality(role):
            names.setdefault(name)
    return list(names)


def pick_main(names: Iterable[str], limit: int = 6, results: RunResults | None = None) -> list[str]:
    """The metrics to show first: the main results the metrics declare (:class:`mlmh.components.Headline`; as
    ``results`` recorded them where it did), in their order, when present; else the first few."""
    names = list(names)
    return [m for m in main_results(results) if m in names] or names[:limit]


def main_metrics(results: RunResults, role: str | None = None) -> list[str]:
    return pick_main(metric_names(results, role), results=results)


def higher_is_better(results: RunResults | Iterable[ConditionResult], metric: str) -> bool:
    """Whether a larger ``metric`` is better, as the first score of it in the run says (True if none does)."""
    conditions = results.conditions if isinstance(results, RunResults) else results
    for row in conditions:
        for role in (None, "seen", "unseen"):
            score = row.quality(role).get(metric)
            if score is not None:
                return score.higher_is_better
    return True


def better(results: RunResults, metric: str, a: float, b: float) -> bool:
    """Whether value ``a`` of ``metric`` beats value ``b``."""
    return a > b if higher_is_better(results, metric) else a < b


# -- best per column ---------------------------------------------------------------------------------
def best_keys(values: Mapping[str, float | None], higher: bool) -> set[str]:
    """The keys holding the best of ``values`` (ties all win; None is no value): the one rule behind
    "best per column" in report.md, the CLI summary and the TUI's table."""
    present = {k: v for k, v in values.items() if v is not None}
    if not present:
        return set()
    best = (max if higher else min)(present.values())
    return {k for k, v in present.items() if v == best}


def best_conditions(results: RunResults, metric: str, role: str | None = None) -> set[str]:
    """Ids of the condition(s) with the best value of ``metric`` on ``role`` (ties all win)."""
    return best_keys({row.id: row.value(metric, role) for row in results.conditions}, higher_is_better(results, metric))


# -- numbers -----------------------------------------------------------------------------------------
def format_number(value: float, *, compact: bool = False) -> str:
    """A score as every table writes it: three decimals below 10 (0.412), two above (68.82). ``compact``
    (the TUI's 80-column table) keeps one decimal from 10 and none from 100 (68.8, 123)."""
    value = float(value)
    magnitude = abs(value)
    if magnitude < 10:
        return f"{value:.3f}"
    if not compact:
        return f"{value:.2f}"
    return f"{value:.1f}" if magnitude < 100 else f"{value:.0f}"


class Estimate(Protocol):
    """A value with its 95% CI, as a table writes it (a :class:`~mlmh.types.Score`, a human rating's mean)."""

    @property
    def value(self) -> float | None: ...

    @property
    def ci_low(self) -> float | None: ...

    @property
    def ci_high(self) -> float | None: ...


def format_score(score: Estimate | None, with_ci: bool = True) -> str:
    """``value [ci_low, ci_high]``, or ``n/a`` when there is no value."""
    if score is None or score.value is None:
        return "n/a"
    text = format_number(score.value)
    if with_ci and score.ci_low is not None and score.ci_high is not None:
        text += f" [{format_number(score.ci_low)}, {format_number(score.ci_high)}]"
    return text
