"""What the registered components declare about themselves, read in one place for the core.

Which results lead the comparison tables, which sampler a model kind gets when none is named, which model a face
opens with, which models a data-constrained sweep varies, which sampler settings ``mlmh bench`` times, which dataset a face
falls back on: each used to be a constant of the core naming builtins. A component now declares it
(:mod:`mlmh.components`: ``headlines``, ``fluency``, ``default_for``, ``bench``, ``default``, ``swept``) and the core asks here, so a third-party plugin's
component takes part exactly as a builtin does, and no core module names a builtin (tests/test_declarations.py).

Where two components declare the same default, the first in registration order wins (builtins, then plugins by
distribution name), as for names; a plugin takes a builtin's default over by replacing that component.

What a verdict reads of them (the main results with their labels, units and roles, which of them reward deletion,
the models a sweep varies, the fluency judge) is recorded in results.json when a run runs (:func:`record`,
``RunResults.declared``, docs/RESULTS.md), and each question below that a verdict asks takes the run's
``results``: :func:`of` is the one rule that answers it, from the run's record where it has one, so the same file
gives the same verdicts whatever plugins are installed later; a file written before they were recorded, or no
``results``, is answered by the installed components.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from mlmh.components import BenchCase, Headline
from mlmh.errors import SpecError
from mlmh.registry import get_registry
from mlmh.types import Declared, DeclaredResult, RunResults

#: the fields of a main result's declaration, which results.json's record of it keeps (DeclaredResult)
HEADLINE_FIELDS = tuple(f.name for f in dataclasses.fields(Headline))


# -- what a run records, and what a verdict reads ------------------------------------------------------
def record() -> Declared:
    """The installed components' declarations that verdicts read, as results.json records them."""
    registry = get_registry()
    found: dict[str, Headline] = {}  # a result declared twice (a metric subclassing another) counts as first declared
    for metric in registry.all("metric"):
        for declared in metric.headlines:
            found.setdefault(declared.result, declared)
    ranked = sorted(found.values(), key=lambda h: h.rank)  # ties in registration order
    fluency = next((metric.fluency for metric in registry.all("metric") if metric.fluency), None)
    return Declared(headlines=[DeclaredResult(**{k: getattr(h, k) for k in HEADLINE_FIELDS}) for h in ranked],
                    swept_models={model.name: model.model_kind for model in registry.all("model") if model.swept},
                    fluency=list(fluency) if fluency else None)


def of(results: RunResults | None = None) -> Declared:
    """The declarations a verdict on ``results`` reads: those the run recorded, else (a file written before runs
    recorded them, or no run) the installed components'."""
    recorded = results.declared if results is not None else None
    return recorded if recorded is not None else record()


# -- metrics -----------------------------------------------------------------------------------------
def headlines(results: RunResults | None = None) -> list[Headline]:
    """Every main result, in rank order (:func:`of`)."""
    return [Headline(**{k: getattr(h, k) for k in HEADLINE_FIELDS}) for h in of(results).headlines]


def main_results(results: RunResults | None = None) -> list[str]:
    """The results comparison tables lead with, in their order."""
    return [headline.result for headline in headlines(results)]


def findings_results(results: RunResults | None = None) -> list[str]:
    """The main results the papers' claims are tested on, in table order."""
    return [headline.result for headline in headlines(results) if headline.findings]


def sweep_results(results: RunResults | None = None) -> list[str]:
    """The main results a data-constrained sweep compares the models on, in table order."""
    return [headline.result for headline in headlines(results) if headline.sweep]


def baseline_results(results: RunResults | None = None) -> list[str]:
    """The main results the best condition is set against the filler and deletion baselines on, in table order."""
    return [headline.result for headline in headlines(results) if headline.baselines]


def headline(result: str, results: RunResults | None = None) -> Headline | None:
    """The declaration of a main result, or None for a result no metric declares main."""
    return next((h for h in headlines(results) if h.result == result), None)


def fluency_results(results: RunResults | None = None) -> tuple[str, str] | None:
    """(the result a fluency judge scores regenerations with, the one it scores the originals with), or None
    when no metric judges fluency."""
    fluency = of(results).fluency
    return (fluency[0], fluency[1]) if fluency and len(fluency) == 2 else None


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


def swept_models(results: RunResults | None = None) -> dict[str, str]:
    """Name -> model kind of every model a data-constrained sweep expands, in registration order."""
    return dict(of(results).swept_models)


# -- datasets ----------------------------------------------------------------------------------------
def default_dataset() -> str:
    """The name of the dataset a face falls back on when none is named: a trained-* model regenerating a given
    text learns from it, the playground takes its examples from it."""
    for dataset in get_registry().all("dataset"):
        if dataset.default:
            return str(dataset.name)
    raise SpecError("no registered dataset declares itself the default (Dataset.default); name one (mlmh ls datasets)")
