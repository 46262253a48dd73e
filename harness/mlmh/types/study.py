"""study.json: what a study (one preset over several datasets) found, typed; ``to_dict`` writes it, ``from_dict``
reads it back (a bad file is one line naming it and the key)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from mlmh.errors import DataError

#: the layout of study.json; bumped when a field changes meaning
STUDY_SCHEMA = 1


@dataclass
class StudyDataset:
    """One dataset of the study: the run that measured it."""

    label: str  # how the study names it (pan, mpst, mimic, or the label given with --data LABEL=DIR)
    dataset: str  # the registered dataset
    data: str | None  # its files; None: the bundled sample
    run: str  # the run folder, relative to the study folder
    documents: int = 0  # unseen documents per condition
    seconds: float = 0.0  # the run's wall time, as it recorded it (0 when taken from an earlier session's cache)


@dataclass
class DatasetVerdict:
    """A claim on one dataset, as that run decided it."""

    verdict: str
    value: float | None = None
    low: float | None = None
    high: float | None = None
    estimate: dict[str, Any] | None = None  # value, se, df, what: the effect the study pools (Finding.extra)


@dataclass
class StudyClaim:
    """One claim across the study's datasets: each one's verdict, the pooled estimate where the claim is pooled,
    and the verdict across datasets (:func:`mlmh.findings.pooling.across`)."""

    claim: str
    text: str
    datasets: dict[str, DatasetVerdict]
    across: str
    statement: str
    pooled: dict[str, float] | None = None  # mlmh.findings.pooling.Pooled as a dict
    pooled_what: str = ""


@dataclass
class StudyCell:
    """One figure of the side-by-side tables: a dataset's value in a row (a model and masking, or a downstream
    training set), with its CI where it has one."""

    row: str
    dataset: str
    value: float | None
    low: float | None = None
    high: float | None = None
    unit: str = ""  # the metric or score the figure is in
    task: str = ""  # the downstream task it scores, for a downstream figure


@dataclass
class StudyResults:
    """A study's datasets, claims and tables."""

    preset: str
    datasets: list[StudyDataset]
    claims: list[StudyClaim]
    quality: list[StudyCell] = field(default_factory=list)  # unseen quality per model kind, start and masking
    downstream: list[StudyCell] = field(default_factory=list)  # each dataset's task: real / synthetic training sets
    failed: dict[str, str] = field(default_factory=dict)  # label -> why, for each dataset whose run failed
    schema_version: int = STUDY_SCHEMA

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "study.json") -> "StudyResults":
        try:
            if data.get("schema_version") != STUDY_SCHEMA:
                raise DataError(f"{where}: schema_version {data.get('schema_version')!r}, this mlmh reads "
                                f"{STUDY_SCHEMA}; run the study again")
            claims = [StudyClaim(**{**c, "datasets": {k: DatasetVerdict(**v) for k, v in c["datasets"].items()}})
                      for c in data["claims"]]
            return cls(preset=data["preset"], datasets=[StudyDataset(**d) for d in data["datasets"]], claims=claims,
                       quality=[StudyCell(**c) for c in data.get("quality", [])],
                       downstream=[StudyCell(**c) for c in data.get("downstream", [])],
                       failed=dict(data.get("failed", {})))
        except DataError:
            raise
        except (AttributeError, KeyError, TypeError) as exc:
            raise DataError(f"{where}: not a study file ({type(exc).__name__}: {exc})") from None

    def claim(self, claim: str) -> StudyClaim:
        for found in self.claims:
            if found.claim == claim:
                return found
        raise KeyError(claim)
