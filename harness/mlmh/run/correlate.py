"""The correlation stage: the quality of each synthetic corpus (the seen regenerations) against how useful it
was downstream."""

from __future__ import annotations

from typing import Mapping, Sequence

from mlmh.config.plan import Condition
from mlmh.events import Progress, StageStarted
from mlmh.findings import correlation
from mlmh.run.context import RunContext
from mlmh.types import Correlation, RoleQuality


def correlate(conditions: Sequence[Condition], quality: Mapping[str, Mapping[str, RoleQuality]],
              downstream: Mapping[str, dict[str, dict[str, float]]], seed: int, ctx: RunContext) -> list[Correlation]:
    """Each seen-set metric of ``conditions`` against each downstream score; none when no task scored."""
    ctx.bus.emit(StageStarted(stage="correlation", total=1, description="quality vs downstream"))
    rows = []
    for c in conditions:
        seen = quality[c.id].get("seen")
        rows.append({"condition": c.id, "metrics": {k: v.value for k, v in (seen.metrics if seen else {}).items()
                                                    if v.value is not None},
                     "downstream": downstream.get(c.id, {})})
    correlations = correlation.correlate(rows, seed=seed) if any(row["downstream"] for row in rows) else []
    ctx.bus.emit(Progress(stage="correlation", completed=1, total=1))
    return correlations
