"""Short display forms of specs and numbers, so tables and pane titles fit an 80-column terminal."""

from __future__ import annotations

from mlmh.results import format_number
from mlmh.run.progress import elide

#: a plot legend's entry at most this wide (plotext draws the legend inside the plot)
LEGEND_WIDTH = 34
#: a document id in the sample list at most this wide: a UUID and its chunk (``-N``) whole
ID_WIDTH = 40


def _short_path(value: str, keep: int) -> str:
    if "/" in value and len(value) > keep:
        return "…/" + "/".join(value.rstrip("/").split("/")[-2:])
    return value


def short_spec(spec: str, keep: int = 24) -> str:
    """A component spec with long path values cut to their last two parts: ``hf-mlm:path=…/runs/bert``."""
    name, _, rest = spec.partition(":")
    parts = []
    for part in filter(None, rest.split(",")):
        key, eq, value = part.partition("=")
        parts.append(f"{key}={_short_path(value, keep)}" if eq else _short_path(part, keep))
    return name + (":" + ",".join(parts) if parts else "")


def short_condition(condition_id: str) -> str:
    """A condition id (``model | masking | sampler | seed=N``) with each spec shortened."""
    return " | ".join(short_spec(part.strip()) for part in condition_id.split("|"))


def number(value: float, like: float | None = None) -> str:
    """Enough digits for a score on a 0-1 scale (0.412) or a 0-100 scale (68.8), no more: the report's
    rounding (:func:`mlmh.results.format_number`) in its compact form. ``like`` (a column's largest magnitude)
    sets the digits instead of ``value``, so that one metric prints in one format: 71.6 beside 4.9, never
    beside 4.882."""
    if like is None:
        return format_number(value, compact=True)
    digits = len(format_number(abs(like), compact=True).partition(".")[2])
    return f"{float(value):.{digits}f}"


def distinct_specs(specs: list[str]) -> dict[str, str]:
    """Each spec shortened (:func:`short_spec`) and without the parameters that every one of two or more
    distinct specs shares: ``trained-mlm:size=tiny,max_steps=40`` beside ``trained-clm:size=tiny,max_steps=40``
    is ``trained-mlm`` beside ``trained-clm``."""
    unique = list(dict.fromkeys(specs))
    return dict(zip(unique, without_shared([short_spec(spec) for spec in unique])))


def without_shared(labels: list[str]) -> list[str]:
    """``labels`` (specs, or specs joined by spaces) without the ``key=value`` parameters every label of two or
    more shares: they tell none apart."""
    split = [label.split() for label in labels]
    common = set.intersection(*(set(_parameters(words)) for words in split)) if len(split) > 1 else set()
    return [" ".join(_without(word, common) for word in words) for words in split]


def legend_labels(labels: list[str], width: int = LEGEND_WIDTH) -> list[str]:
    """Legend entries that fit: the parameters every label shares left out (:func:`without_shared`), then each
    shortened in the middle, so both its model and its sampler show."""
    return [elide(label, width) for label in without_shared(labels)]


def _parameters(words: list[str]) -> list[str]:
    return [p for word in words for p in word.partition(":")[2].split(",") if "=" in p]


def _without(word: str, common: set[str]) -> str:
    name, colon, params = word.partition(":")
    kept = [p for p in params.split(",") if p and p not in common]
    return name + (":" + ",".join(kept) if colon and kept else "")


def short_id(doc_id: str, width: int = ID_WIDTH) -> str:
    """A document id that fits the sample list, cut at its end: an id is read from its start, and a cut in
    the middle makes ``py:selectors.register`` and ``py:selectors.unregister`` the same ``py:sel…egister``;
    the whole id is in the trace's title."""
    return doc_id if len(doc_id) <= width else doc_id[: width - 1] + "…"
