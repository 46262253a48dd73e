"""Declared parameters of components and the ``NAME:key=value,...`` spec syntax."""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable, ClassVar, Self

from mlmh.bounds import Bound, ceiling, limit_of
from mlmh.bounds import check as check_bound
from mlmh.errors import SpecError

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


@dataclass(frozen=True)
class Param:
    """One declared parameter: shown by ``mlmh ls``, validated when a spec is parsed."""

    name: str
    type: type
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None
    min: float | None = None
    max: "float | Bound | None" = None  # an integer without one is bounded by mlmh.bounds.COUNT
    headline: bool = False  # always shown in short specs (tables), even at its default
    #: a rule of the value's own, run when the spec is parsed: ``check(value)`` says what is wrong ("must be ..."),
    #: or None
    check: Callable[[Any], str | None] | None = None

    def convert(self, value: Any, owner: str) -> Any:
        """Coerce ``value`` (often a string from the command line) and check its range.

        Floats must be finite (NaN passes every range check and fails much later, inside a run), and a
        text parameter whose default is not empty must not be given empty.
        """
        where = f"{owner}: parameter '{self.name}'"
        if value is None:
            if self.default is None:
                return None
            raise SpecError(f"{where} must not be empty")
        out: Any
        try:
            if self.type is bool and isinstance(value, str):
                low = value.strip().lower()
                if low not in _TRUE | _FALSE:
                    raise ValueError(value)
                out = low in _TRUE
            elif self.type is bool:
                if not isinstance(value, (bool, int)):
                    raise ValueError(value)
                out = bool(value)
            elif self.type is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError(value)
                if isinstance(value, bool):
                    raise ValueError(value)
                out = int(str(value).strip()) if isinstance(value, str) else int(value)
            elif self.type is float:
                if isinstance(value, bool):
                    raise ValueError(value)
                out = float(value)
            else:
                out = self.type(value)
        except (TypeError, ValueError, OverflowError):
            raise SpecError(f"{where} expects {self.type.__name__}, got {value!r}") from None
        if self.type is float and not math.isfinite(out):
            raise SpecError(f"{where} must be a finite number; got {value!r}")
        if self.type is str and self.choices is None and self.default and not out.strip():
            raise SpecError(f"{where} must not be empty (default: {self.default!r})")
        if self.choices is not None and out not in self.choices:
            raise SpecError(f"{where} must be one of {', '.join(map(str, self.choices))}; got {out!r}")
        if self.min is not None and out < self.min:
            raise SpecError(f"{where} must be >= {self.min}; got {out!r}")
        check_bound(out, ceiling(self.max, self.type is int), where)
        problem = self.check(out) if self.check is not None else None
        if problem:
            raise SpecError(f"{where} {problem}; got {out!r}")
        return out

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type.__name__,
            "default": self.default,
            "help": self.help,
            **({"choices": list(self.choices)} if self.choices else {}),
            **({"min": self.min} if self.min is not None else {}),
            **({"max": limit_of(self.max)} if self.max is not None else {}),
        }


class Component:
    """Base of everything a plugin registers: a name, a description and declared parameters.

    A registered instance holds defaults; :meth:`configured` returns a copy with overrides, which is
    what a spec like ``random:ratio=0.3`` builds. Subclasses read their values from ``self.params``.
    """

    kind: ClassVar[str] = "component"
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    parameters: ClassVar[tuple[Param, ...]] = ()

    def __init__(self, **params: Any) -> None:
        self.params: dict[str, Any] = resolve_params(self, params)

    def configured(self, **overrides: Any) -> Self:
        """A new instance with ``overrides`` applied on top of this one's values."""
        clone = object.__new__(type(self))
        clone.__dict__.update(self.__dict__)
        clone.params = resolve_params(self, {**self.params, **overrides})
        clone.__post_configure__()
        return clone

    def __post_configure__(self) -> None:
        """Hook for subclasses that derive state from ``self.params``; called after configure."""

    def preflight(self) -> None:
        """Raise an :class:`~mlmh.errors.MlmhError` saying, in one line, why this component as configured cannot run
        at all: a checkpoint that is missing or built for another role, a tracker setting its library would refuse.
        A run calls it while it is prepared, before any folder is made or model trains
        (:meth:`mlmh.config.plan.RunPlan.require_ready`), so a bad setting costs no work; it reads no corpus (that is
        ``unavailable(corpus)``'s) and loads no weights. Nothing to check by default."""

    @property
    def spec(self) -> str:
        """Canonical spec with every parameter, sorted: stable for cache keys and results."""
        if not self.params:
            return self.name
        body = ",".join(f"{k}={_fmt(v)}" for k, v in sorted(self.params.items()))
        return f"{self.name}:{body}"

    @property
    def short_spec(self) -> str:
        """Spec with the headline parameters and those that differ from their defaults: for tables."""
        declared = {p.name: p for p in self.parameters}
        changed = {k: v for k, v in sorted(self.params.items())
                   if k not in declared or declared[k].headline or declared[k].default != v}
        if not changed:
            return self.name
        return f"{self.name}:" + ",".join(f"{k}={_fmt(v)}" for k, v in changed.items())

    def describe(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "description": self.description,
            "parameters": [p.describe() for p in self.parameters],
        }

    def __repr__(self) -> str:
        return f"<{self.kind} {self.spec}>"


def _fmt(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def resolve_params(component: Component, given: dict[str, Any]) -> dict[str, Any]:
    """Defaults plus ``given``, every value converted and checked; unknown keys are errors."""
    declared = {p.name: p for p in component.parameters}
    owner = f"{component.kind} '{component.name}'"
    out: dict[str, Any] = {}
    for key in given:
        if key not in declared:
            raise SpecError(unknown_message(f"parameter of {owner}", key, declared))
    for name, param in declared.items():
        out[name] = param.convert(given[name], owner) if name in given else param.default
    return out


def unknown_message(what: str, got: str, valid: Any) -> str:
    """``unknown masking 'randm'; did you mean 'random'? (valid: ...)``: one line."""
    names = sorted(valid)
    close = difflib.get_close_matches(got, names, n=1, cutoff=0.6)
    hint = f"; did you mean '{close[0]}'?" if close else ""
    listing = ", ".join(names) if names else "none registered"
    return f"unknown {what} '{got}'{hint} (valid: {listing})"


def parse_spec(spec: str) -> tuple[str, dict[str, str]]:
    """Split ``NAME`` or ``NAME:key=value,key=value`` into the name and raw string values."""
    text = spec.strip()
    if not text:
        raise SpecError("empty component spec")
    name, _, rest = text.partition(":")
    name = name.strip()
    if not name:
        raise SpecError(f"component spec {spec!r} has no name")
    values: dict[str, str] = {}
    if rest.strip():
        for part in rest.split(","):
            key, eq, value = part.partition("=")
            if not eq or not key.strip():
                raise SpecError(f"bad parameter {part!r} in spec {spec!r}; expected key=value")
            key = key.strip()
            if key in values:
                raise SpecError(f"parameter '{key}' given twice in spec {spec!r}")
            values[key] = value.strip()
    return name, values
