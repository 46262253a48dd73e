"""Reading a finished run back: ``results.json`` and its ``samples.jsonl`` (as the runner wrote them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlmh.errors import DataError
from mlmh.rundir import RunDir
from mlmh.types import ConditionResult, Generation, RunResults, from_dict


@dataclass
class Sample:
    """One line of samples.jsonl: the condition it belongs to, its generation and per-sample scores."""

    condition: str
    generation: Generation
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunFiles:
    path: Path  # the results file
    results: RunResults
    samples: list[Sample]

    @property
    def conditions(self) -> list[ConditionResult]:
        return list(self.results.conditions)

    def samples_of(self, condition: str) -> list[Sample]:
        return [s for s in self.samples if s.condition == condition]


def load_run(path: str | Path) -> RunFiles:
    """Load a run from its directory or its results file; samples.jsonl next to it is optional."""
    run = RunDir.of(path)
    results = run.read_results()
    samples: list[Sample] = []
    if run.samples.is_file():
        for number, row in run.read_lines(run.samples):
            try:
                samples.append(Sample(str(row["condition"]), from_dict(Generation, row["generation"]), row.get("metrics") or {}))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise DataError(f"{run.samples}:{number}: bad sample line ({type(exc).__name__}: {exc})") from None
    return RunFiles(path=run.results, results=results, samples=samples)
