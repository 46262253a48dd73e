"""Reading a finished run back: ``results.json`` and its ``samples.jsonl`` (as the runner wrote them)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlmh.errors import DataError
from mlmh.types import Generation, from_dict


@dataclass
class Sample:
    """One line of samples.jsonl: the condition it belongs to, its generation and per-sample scores."""

    condition: str
    generation: Generation
    metrics: dict[str, Any] = field(default_factory=dict)


@dataclass
class RunFiles:
    path: Path  # the results.json
    results: dict[str, Any]
    samples: list[Sample]

    @property
    def conditions(self) -> list[dict[str, Any]]:
        return list(self.results.get("conditions", []))

    def samples_of(self, condition: str) -> list[Sample]:
        return [s for s in self.samples if s.condition == condition]


def results_path(path: str | Path) -> Path:
    """``path`` itself when it is a file, else the ``results.json`` inside the run directory."""
    p = Path(path).expanduser()
    return p / "results.json" if p.is_dir() else p


def load_run(path: str | Path) -> RunFiles:
    """Load a run from its directory or its results.json; samples.jsonl next to it is optional."""
    results_file = results_path(path)
    if not results_file.is_file():
        raise DataError(f"{results_file}: no such results file (give a run directory or its results.json)")
    try:
        results = json.loads(results_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{results_file}: not a readable results.json ({exc})") from None
    if not isinstance(results, dict) or not isinstance(results.get("conditions"), list):
        raise DataError(f"{results_file}: no 'conditions' list; is this an mlmh results.json?")
    samples: list[Sample] = []
    samples_file = results_file.with_name("samples.jsonl")
    if samples_file.is_file():
        with samples_file.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    samples.append(Sample(str(row["condition"]), from_dict(Generation, row["generation"]), row.get("metrics") or {}))
                except (json.JSONDecodeError, KeyError, TypeError) as exc:
                    raise DataError(f"{samples_file}:{number}: bad sample line ({type(exc).__name__}: {exc})") from None
    return RunFiles(path=results_file, results=results, samples=samples)
