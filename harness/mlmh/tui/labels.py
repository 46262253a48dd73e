"""Short display forms of specs and numbers, so tables and pane titles fit an 80-column terminal."""

from __future__ import annotations

from mlmh.results import format_number
from mlmh.run.progress import elide

#: a plot legend's entry at most this wide (plotext draws the legend inside the plot)
LEGEND_WIDTH = 34
#: a document id in the sample list at most this wide (a UUID is 36)
ID_WIDTH = 14


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


def number(value: float) -> str:
    """Enough digits for a score on a 0-1 scale (0.412) or a 0-100 scale (68.8), no more: the report's
    rounding (:func:`mlmh.results.format_number`) in its compact form."""
    return format_number(value, compact=True)


def legend_labels(labels: list[str], width: int = LEGEND_WIDTH) -> list[str]:
    """Legend entries that fit: the ``key=value`` parameters every label of two or more shares are left out
    (they tell no line apart), then each is shortened in the middle, so both its model and its sampler show."""
    split = [label.split() for label in labels]
    common = set.intersection(*(set(_parameters(words)) for words in split)) if len(split) > 1 else set()
    out = []
    for words in split:
        kept = [_without(word, common) for word in words]
        out.append(elide(" ".join(kept), width))
    return out


def _parameters(words: list[str]) -> list[str]:
    return [p for word in words for p in word.partition(":")[2].split(",") if "=" in p]


def _without(word: str, common: set[str]) -> str:
    name, colon, params = word.partition(":")
    kept = [p for p in params.split(",") if p and p not in common]
    return name + (":" + ",".join(kept) if colon and kept else "")


def short_id(doc_id: str, width: int = ID_WIDTH) -> str:
    """A document id that fits the sample list: shortened in the middle, so its start and its end (a chunk's
    ``-N``) stay; the whole id is in the trace's title."""
    return elide(doc_id, width)
