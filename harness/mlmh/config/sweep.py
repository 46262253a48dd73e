"""A data-constrained sweep's axes: ``--sweep-epochs`` and ``--sweep-tokens`` read from the command line and
expanded into the run's models list, and the bound of every epoch count a trained-* model or a sweep may ask for.

Configuration, not judgement: the builtin models and the API read it before any run, and
:mod:`mlmh.findings.crossover` reads the finished sweep.
"""

from __future__ import annotations

from typing import Any, Sequence

from mlmh import bounds
from mlmh.config.declared import swept_models
from mlmh.params import parse_spec

AXES = ("unique_tokens", "epochs")
#: the largest value of each sweep axis: a run of more epochs, or more unique tokens than any corpus this
#: tool trains on holds, could never finish (trained-* models' ``epochs`` parameter has the same bound)
MAX_EPOCHS = bounds.EPOCHS.limit  # one ceiling of epochs (mlmh.bounds)
AXIS_LIMITS = {"--sweep-epochs": MAX_EPOCHS, "--sweep-tokens": 10**9}


def expand_models(models: Sequence[str], *, epochs: Sequence[float] | None = None,
                  tokens: Sequence[int] | None = None) -> list[str]:
    """``models`` with every spec of a model that declares ``swept`` (trained-mlm, trained-clm) expanded over
    unique_tokens x epochs.

    An axis not given keeps the values the specs already carry (a preset's sweep); specs that differ only in
    the two axes collapse to one base first, so ``--sweep-epochs 1,2`` on a preset of 1..16 epochs gives 1, 2.
    Other models pass through unchanged."""
    bases: list[tuple[str, tuple[tuple[str, str], ...]]] = []
    seen_values: dict[str, list[str]] = {axis: [] for axis in AXES}
    out: list[str] = []
    at: int | None = None  # the expansion takes the place of the first swept spec
    sweepable = swept_models()
    for spec in models:
        name, params = parse_spec(spec)
        if name not in sweepable:
            out.append(spec)
            continue
        at = len(out) if at is None else at
        for axis in AXES:
            if axis in params and params[axis] not in seen_values[axis]:
                seen_values[axis].append(params[axis])
        base = (name, tuple((k, v) for k, v in params.items() if k not in AXES))
        if base not in bases:
            bases.append(base)
    given = {"unique_tokens": [str(int(u)) for u in tokens] if tokens else None,
             "epochs": [f"{float(e):g}" for e in epochs] if epochs else None}
    values: dict[str, Sequence[str | None]] = {
        axis: chosen if (chosen := given[axis]) is not None else seen_values[axis] for axis in AXES}
    expanded: list[str] = []
    for name, kept in bases:
        for u in values["unique_tokens"] or [None]:
            for e in values["epochs"] or [None]:
                swept = [*kept, *((("unique_tokens", u),) if u is not None else ()), *((("epochs", e),) if e is not None else ())]
                expanded.append(f"{name}:" + ",".join(f"{k}={v}" for k, v in swept) if swept else name)
    return out[:at] + expanded + out[at:] if at is not None else out


def parse_axis(text: str | None, kind: type, option: str) -> list[Any] | None:
    """A comma list of positive numbers from the command line (``--sweep-epochs 1,2,4``), or None when the
    option is not given. Each value follows the one rule of numeric flags (:class:`mlmh.config.options.Number`),
    bounded by :data:`AXIS_LIMITS`; an empty value (an unset shell variable) is refused, never read as
    "the preset's sweep"."""
    from mlmh.config.options import Number
    from mlmh.errors import SpecError

    if text is None:
        return None
    if not isinstance(text, str):
        raise SpecError(f"{option} {text!r}: expected a comma list of numbers as text, like '1,2,4'")
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if not parts:
        raise SpecError(f"{option} {text!r}: nothing given; leave {option} out to keep the preset's sweep")
    number = Number(kind, min=0, max=AXIS_LIMITS[option], open=True)
    values = []
    for part in parts:
        try:  # token counts may be written 16e3
            given: Any = float(part) if kind is int and float(part).is_integer() else part
        except (ValueError, OverflowError):
            given = part
        try:
            values.append(number.convert(given, None, None, flag=option))
        except SpecError:
            raise SpecError(f"{option} {part}: expected {number.range_text()}") from None
    return values
