"""What the registered components declare about themselves, read in one place for the core.

Which results lead the comparison tables, which sampler a model kind gets when none is named, which model a face
opens with, which models a data-constrained sweep varies, which sampler settings ``mlmh bench`` times, which dataset a face
falls back on: each used to be a constant of the core naming builtins. A component now declares it
(:mod:`mlmh.components`: ``headlines``, ``fluency``, ``default_for``, ``bench``, ``default``, ``swept``) and the core asks here, so a third-party plugin's
component takes part exactly as a builtin does, and no core module names a builtin (tests/test_declarations.py).

Where two components declare the same default, the first in registration order wins (builtins, then plugins by
distribution name), as for names; a plugin takes a builtin's default over by replacing that component.
"""

from __future__ import annotations

from typing import Any

from mlmh.components import BenchCase, Headline
from mlmh.errors import SpecError
from mlmh.registry import get_registry


# -- metrics -----------------------------------------------------------------------------------------
def headlines() -> list[Headline]:
    """Every registered metric's main results, in rank order (ties in registration order); a result declared twice
    (a metric subclassing another keeps its declarations) counts once, as first declared."""
    declared: dict[str, Headline] = {}
    for metric in get_registry().all("metric"):
        for headline in metric.headlines:
            declared.setdefault(headline.result, headline)
    return sorted(declared.values(), key=lambda headline: headline.rank)


def main_results() -> list[str]:
    """The results comparison tables lead with, in their order."""
    return [headline.result for headline in headlines()]


def findings_results() -> list[str]:
    """The main results the papers' claims are tested on, in table order."""
    return [headline.result for headline in headlines() if headline.findings]


def sweep_results() -> list[str]:
    """The main results a data-constrained sweep compares the models on, in table order."""
    return [headline.result for headline in headlines() if headline.sweep]


def baseline_results() -> list[str]:
    """The main results the best condition is set against the filler and deletion baselines on, in table order."""
    return [headline.result for headline in headlines() if headline.baselines]


def headline(result: str) -> Headline | None:
    """The declaration of a main result, or None for a result no metric declares main."""
    return next((h for h in headlines() if h.result == result), None)


def fluency_results() -> tuple[str, str] | None:
    """(the result a fluency judge scores regenerations with, the one it scores the originals with), or None
    when no registered metric judges fluency."""
    return next((metric.fluency for metric in get_registry().all("metric") if metric.fluency), None)


# -- samplers ----------------------------------------------------------------------------------------
def default_samplers() -> dict[str, str]:
    """Model kind -> the name of the sampler it gets when none is named."""
    out: dict[str, str] = {}
    for sampler in get_registry().all("sampler"):
        for kind in sorted(sampler.default_for):
            out.setdefault(kind, sampler.name)
    return out


def bench_cases() -> list[tuple[Any, BenchCase]]:
    """(sampler, setting) of every setting a registered sampler declares for ``mlmh bench``, in rank order; a
    setting whose key or label an earlier one took is left out (a subclass inherits its base's settings)."""
    declared: list[tuple[Any, BenchCase]] = []
    taken: set[str] = set()
    for sampler in get_registry().all("sampler"):
        for case in sampler.bench:
            if not {case.key, case.label} & taken:
                declared.append((sampler, case))
                taken |= {case.key, case.label}
    return sorted(declared, key=lambda pair: pair[1].rank)


# -- models ------------------------------------------------------------------------------------------
def default_models() -> dict[str, str]:
    """Model kind -> the name of the model a face opens with for it."""
    out: dict[str, str] = {}
    for model in get_registry().all("model"):
        if model.default:
            out.setdefault(model.model_kind, model.name)
    return out


def swept_models() -> dict[str, str]:
    """Name -> model kind of every model a data-constrained sweep expands, in registration order."""
    return {model.name: model.model_kind for model in get_registry().all("model") if model.swept}


# -- datasets ----------------------------------------------------------------------------------------
def default_dataset() -> str:
    """The name of the dataset a face falls back on when none is named: a trained-* model regenerating a given
    text learns from it, the playground takes its examples from it."""
    for dataset in get_registry().all("dataset"):
        if dataset.default:
            return str(dataset.name)
    raise SpecError("no registered dataset declares itself the default (Dataset.default); name one (mlmh ls datasets)")
