"""Reading a finished run back: ``results.json`` and its ``samples.jsonl`` (as the runner wrote them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlmh.errors import DataError
from mlmh.report import load_results, results_path
from mlmh.types import ConditionResult, Generation, RunResults, from_dict


@dataclass
class Sample:
    """One line of samples.jsonl: the condition it belongs to, its generation and per-sample scores."""

    condition: str
    generation: Generation
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunFiles:
    path: Path  # the results.json
    results: RunResults
    samples: list[Sample]

    @property
    def conditions(self) -> list[ConditionResult]:
        return list(self.results.conditions)

    def samples_of(self, condition: str) -> list[Sample]:
        return [s for s in self.samples if s.condition == condition]


def load_run(path: str | Path) -> RunFiles:
    """Load a run from its directory or its results.json; samples.jsonl next to it is optional."""
    results_file = results_path(path)
    results = load_results(results_file)
    samples: list[Sample] = []
    samples_file = results_file.with_name("samples.jsonl")
    if samples_file.is_file():
        from mlmh.jsonl import read_jsonl

        for number, row in read_jsonl(samples_file):
            try:
                samples.append(Sample(str(row["condition"]), from_dict(Generation, row["generation"]), row.get("metrics") or {}))
            except (KeyError, TypeError, AttributeError, ValueError) as exc:
                raise DataError(f"{samples_file}:{number}: bad sample line ({type(exc).__name__}: {exc})") from None
    return RunFiles(path=results_file, results=results, samples=samples)
