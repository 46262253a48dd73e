"""Helpers the builtin metric plugins share: which texts to score, and how a result is assembled.

Not a plugin module itself (it registers nothing); third-party metrics may use it too.
"""

from __future__ import annotations

from importlib import metadata
from typing import Any, Sequence

from mlmh.components import Metric, ScoringItem
from mlmh.errors import SpecError
from mlmh.params import Param
from mlmh.stats import mean_ci, method_info
from mlmh.types import MetricResult
from mlmh.words import split_words

SPANS_ONLY = Param(
    "spans_only",
    bool,
    False,
    "score only the masked words (generated vs original), not the whole text; needs generations from a run",
)


def library_version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


def masked_spans(item: ScoringItem) -> tuple[list[str], list[str]]:
    """(generated words, original words) at the masked positions of ``item``, in text order."""
    generation = item.generation
    if generation is None:
        raise SpecError("spans_only=true needs generations from a run (mlmh eval); plain text pairs have no masked spans")
    original = split_words(generation.original)
    generated: list[str] = []
    reference: list[str] = []
    for index in sorted(generation.masked_words):
        generated.extend(split_words(generation.output_words.get(index, "")))
        if 0 <= index < len(original):
            reference.append(original[index])
    return generated, reference


def texts(items: Sequence[ScoringItem], spans_only: bool) -> tuple[list[str], list[str]]:
    """Predictions and references to score: whole texts, or the masked words joined by spaces."""
    if not spans_only:
        return [i.prediction for i in items], [i.reference for i in items]
    preds, refs = [], []
    for item in items:
        generated, original = masked_spans(item)
        preds.append(" ".join(generated))
        refs.append(" ".join(original))
    return preds, refs


def base_info(metric: Metric, implementation: str, distribution: str | None, **extra: Any) -> dict[str, Any]:
    """Provenance every result carries: the metric spec, the library and its version."""
    info: dict[str, Any] = {"metric": metric.spec, "implementation": implementation}
    if distribution:
        info["library_version"] = library_version(distribution)
    if "spans_only" in metric.params:
        info["spans_only"] = metric.params["spans_only"]
    info.update(extra)
    return info


def mean_result(
    name: str,
    per_sample: Sequence[float | None],
    *,
    higher_is_better: bool,
    info: dict[str, Any],
) -> MetricResult:
    """A result whose corpus value is the mean of the per-sample values, with Student's t CI (:func:`mlmh.stats.t_interval`)."""
    value, low, high = mean_ci(per_sample)
    info = {**info, "aggregation": "mean of per-sample values", **method_info("mean")}
    return MetricResult(
        name=name,
        value=value,
        higher_is_better=higher_is_better,
        per_sample=[None if v is None else float(v) for v in per_sample],
        ci_low=low,
        ci_high=high,
        info=info,
    )


def failed_result(name: str, higher_is_better: bool, error: str, info: dict[str, Any]) -> MetricResult:
    """A result that could not be computed: the run carries on and the table shows why."""
    return MetricResult(name=name, value=None, higher_is_better=higher_is_better, info=info, error=error)
