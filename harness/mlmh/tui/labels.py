"""Short display forms of specs and numbers, so tables and pane titles fit an 80-column terminal."""

from __future__ import annotations

from mlmh.results import format_number


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
