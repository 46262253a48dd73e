"""A third-party plugin (``fault-fakes``) with one faulty component of every kind, next to the runner
fakes that work: each raises or breaks its contract in the way the fault round found.

``MLMH_TEST_FAULT=<kind>`` makes the component of that kind fail; the variable starts with ``MLMH_`` so
worker processes see it too.
"""

from __future__ import annotations

import math
import os
import sys

import runner_fakes
from mlmh import hookimpl
from mlmh.types import TaskResult


def _faulty(kind: str) -> bool:
    return os.environ.get("MLMH_TEST_FAULT") == kind


class FaultyData(runner_fakes.FakeData):
    name = "faulty-data"

    def load(self, path):
        if _faulty("dataset"):
            raise KeyError("split")
        return super().load(path)


class FaultyModel(runner_fakes.FakeMLM):
    name = "faulty-mlm"

    def load(self, context):
        if _faulty("model"):
            raise AssertionError("Torch not compiled with CUDA enabled")
        return super().load(context)


class FaultyMasking(runner_fakes.EveryNth):
    name = "faulty-masking"

    def mask(self, document, words, rng):
        if _faulty("masking"):
            raise IndexError("list index out of range")
        return super().mask(document, words, rng)


class FaultySampler(runner_fakes.FakeFill):
    name = "faulty-fill"

    def generate(self, adapter, items):
        if _faulty("sampler"):
            raise KeyError("logits")
        generations = super().generate(adapter, items)
        if _faulty("sampler-output"):  # one generation short: a contract breach, not an exception
            return generations[:-1]
        return generations


class FaultyMetric(runner_fakes.WordMatch):
    """Raises, returns NaN, or returns fewer per-sample values than items, as MLMH_TEST_FAULT says."""

    name = "faulty-metric"

    def score(self, items, *, seed=0):
        if _faulty("metric"):
            raise ZeroDivisionError("division by zero")
        results = super().score(items, seed=seed)
        results[0].name = self.name
        if _faulty("metric-nan"):
            results[0].value = math.nan
        if _faulty("metric-short"):
            results[0].per_sample = results[0].per_sample[:-1]
        return results


class FaultyTask(runner_fakes.LabelTask):
    name = "faulty-task"

    def run(self, train, test, *, seed=0):
        if _faulty("task"):
            raise ValueError("could not convert string to float")
        if _faulty("task-nan"):
            return TaskResult(task=self.name, scores={"accuracy": math.inf}, n_train=1, n_test=1)
        return super().run(train, test, seed=seed)


@hookimpl
def register_datasets(register):
    register(FaultyData())


@hookimpl
def register_maskings(register):
    register(FaultyMasking())


@hookimpl
def register_models(register):
    register(FaultyModel())


@hookimpl
def register_samplers(register):
    register(FaultySampler())


@hookimpl
def register_metrics(register):
    register(FaultyMetric())


@hookimpl
def register_tasks(register):
    register(FaultyTask())


#: one faulty component of each kind beside a working one, so a fault must leave the others' results
PRESET = {
    "dataset": "faulty-data",
    "models": ["faulty-mlm", "fake-clm"],
    "maskings": ["faulty-masking:ratio=0.5", "every-nth:ratio=0.5"],
    "samplers": ["faulty-fill", "fake-clm-fill"],
    "metrics": ["faulty-metric", "word-match"],
    "tasks": ["faulty-task", "label-task"],
    "seeds": [0],
    "limit": 6,
    "batch_size": 2,
}


def install() -> None:
    from mlmh.plugins.plugin_manager import get_plugin_manager

    runner_fakes.install()
    pm = get_plugin_manager()
    if not pm.is_registered(sys.modules[__name__]):
        pm.register(sys.modules[__name__], name="fault-fakes")
