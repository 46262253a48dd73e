"""Scoring texts with metric plugins outside a run: reading prediction/reference files and scoring them
(``mlmh score``; ``--metric`` lists parse in mlmh.config.options)."""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Sequence

from mlmh.errors import DataError
from mlmh.storage.jsonl import parse_object, text_lines
from mlmh.types import MetricResult

JSONL_SUFFIXES = (".jsonl", ".ndjson")
DEFAULT_TEXT_FIELD = "text"


def read_texts(path: str | Path, *, field: str = DEFAULT_TEXT_FIELD) -> list[str]:
    """One text per line; ``.jsonl``/``.ndjson`` files hold one JSON object a line with the text in ``field``
    (either gzip-compressed too, as ``.gz``), read by the one JSON Lines reader's rules (:mod:`mlmh.storage.jsonl`).

    Errors name the file and line: unreadable, non-UTF-8 bytes, empty lines, bad JSON, missing field.
    """
    path = Path(path)
    lines = list(text_lines(path))
    if not lines:
        raise DataError(f"{path}: the file is empty")
    jsonl = Path(path.stem if path.suffix == ".gz" else path.name).suffix.lower() in JSONL_SUFFIXES
    texts = []
    for number, line in lines:
        if not line.strip():
            raise DataError(f"{path}:{number}: empty line (every line must hold one text)")
        if not jsonl:
            texts.append(line)
            continue
        record = parse_object(path, number, line)
        if not isinstance(record.get(field), str):
            raise DataError(f"{path}:{number}: expected a JSON object with a string field '{field}'")
        if not record[field].strip():
            raise DataError(f"{path}:{number}: field '{field}' is empty")
        texts.append(record[field])
    return texts


def read_pairs(pred: str | Path, ref: str | Path, *, field: str = DEFAULT_TEXT_FIELD) -> tuple[list[str], list[str]]:
    """Predictions and references, checked to pair up line by line."""
    predictions = read_texts(pred, field=field)
    references = read_texts(ref, field=field)
    if len(predictions) != len(references):
        shorter, longer = (pred, ref) if len(predictions) < len(references) else (ref, pred)
        first_unpaired = min(len(predictions), len(references)) + 1
        raise DataError(
            f"{pred} has {len(predictions)} lines but {ref} has {len(references)}: "
            f"line {first_unpaired} of {longer} has no partner in {shorter}"
        )
    return predictions, references


def _score_one(spec: str, predictions: Sequence[str], references: Sequence[str], seed: int) -> list[MetricResult]:
    """One metric on plain pairs; module-level so worker processes can run it. A metric that raises or
    breaks its contract gives one error result (:func:`mlmh.plugins.contracts.score_metric`), so the other
    metrics' results are kept."""
    from mlmh.components import ScoringItem
    from mlmh.plugins.contracts import score_metric
    from mlmh.registry import get_registry

    items = [ScoringItem(prediction=p, reference=r) for p, r in zip(predictions, references)]
    return score_metric(get_registry().build("metric", spec), items, seed=seed)


def score_texts(
    specs: Sequence[str],
    predictions: Sequence[str],
    references: Sequence[str],
    *,
    seed: int = 0,
    workers: int = 1,
    on_metric: Callable[[str], None] | None = None,
) -> list[MetricResult]:
    """Every result of every metric spec on the prediction/reference pairs, in spec order.

    With ``workers > 1`` the metrics run side by side in that many fresh (spawned) processes; each
    metric is pure Python and CPU-bound, so this is what uses a second core. Results are identical.
    """
    from mlmh.registry import get_registry

    registry = get_registry()
    metrics = [registry.build("metric", spec) for spec in specs]  # all specs checked before any work
    if workers <= 1 or len(metrics) < 2:
        results: list[MetricResult] = []
        for metric in metrics:
            if on_metric:
                on_metric(metric.short_spec)
            results.extend(_score_one(metric.spec, predictions, references, seed))
        return results
    from mlmh.machine.worker_pool import spawn_pool

    with spawn_pool(min(workers, len(metrics))) as pool:
        futures = [pool.submit(_score_one, m.spec, list(predictions), list(references), seed) for m in metrics]
        results = []
        for metric, future in zip(metrics, futures):
            if on_metric:
                on_metric(metric.short_spec)
            try:
                results.extend(future.result())
            except Exception as exc:  # the worker itself died (out of memory?): this metric's error alone
                from mlmh.plugins.contracts import describe_error

                results.append(MetricResult(name=metric.name, value=None, higher_is_better=metric.higher_is_better,
                                            error=describe_error(exc)))
    return results
