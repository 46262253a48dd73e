"""Command-line options every command reads the same way: repeatable options that also take comma
lists, and component specs checked where they are typed, so an error names the flag the user typed
(``--masking nope: unknown masking 'nope' ...``) rather than the preset the flag would have overridden."""

from __future__ import annotations

import re
from typing import Any, Callable, Iterable

import click

from mlmh.errors import SpecError

#: a piece ``key=value`` whose key is a bare parameter name continues the spec before it
_PARAMETER = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*=")


def split_list(values: Iterable[str], flag: str) -> list[str]:
    """The items of a repeatable option whose values may each hold several, comma-separated.

    A spec's own parameters are comma-separated too (``random:ratio=0.3,seed=1``), so a piece of the
    form ``key=value`` continues the spec before it and any other piece starts a new one:
    ``bleu,rouge:use_stemmer=true,lsum_split=newline,meteor`` is three specs.
    """
    items: list[str] = []
    for value in values:
        found = 0
        for piece in (p.strip() for p in value.split(",")):
            if not piece:
                continue
            if _PARAMETER.match(piece):
                if not items or not found or ":" not in items[-1]:
                    raise SpecError(f"{flag} {value}: parameter '{piece}' follows no 'NAME:' spec")
                items[-1] += "," + piece
            else:
                items.append(piece)
                found += 1
        if not found:
            raise SpecError(f"{flag} {value!r}: nothing given")
    return items


def build_spec(kind: str, spec: str, flag: str) -> Any:
    """The component ``spec`` builds, or a one-line SpecError naming ``flag`` and the spec."""
    from mlmh.registry import get_registry

    try:
        return get_registry().build(kind, spec)
    except SpecError as exc:
        raise SpecError(f"{flag} {spec}: {exc}") from None


def flag_of(param: click.Parameter) -> str:
    """The long flag of a click option (``--masking``), as the user typed it."""
    return max(param.opts, key=len)


def specs(kind: str, *, none: bool = False) -> Callable[[click.Context, click.Parameter, Any], list[str]]:
    """A click callback for a repeatable spec option: comma lists flattened, each spec checked once.
    ``none=True`` lets a lone ``none`` through (no metrics, no tasks)."""

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[str]:
        flag = flag_of(param)
        items = split_list(values, flag)
        if none and [item.lower() for item in items] == ["none"]:
            return items
        for item in items:
            build_spec(kind, item, flag)
        return items

    return callback


def seeds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[int]:
    """A click callback for ``--seed``: repeatable or a comma list of integers >= 0."""
    flag = flag_of(param)
    out = []
    for item in split_list(values, flag):
        if not item.isdigit():
            raise SpecError(f"{flag} {item}: a seed is an integer >= 0")
        out.append(int(item))
    return out


def limit(ctx: click.Context, param: click.Parameter, value: str | None) -> int | float | None:
    """A click callback for a run's ``--limit``: N documents, a fraction 0.x, or 0 for all."""
    if value is None:
        return None
    from mlmh.config import parse_limit

    try:
        return parse_limit(value, flag_of(param))
    except SpecError:
        raise SpecError(f"{flag_of(param)} {value}: expected a number of documents, a fraction 0.x, or 0 for all") from None


def dataset(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback for ``--dataset``: a registered dataset (spec), checked where it is typed."""
    if value is not None:
        build_spec("dataset", value, flag_of(param))
    return value

