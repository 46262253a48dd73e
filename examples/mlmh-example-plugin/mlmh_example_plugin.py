"""A minimal third-party mlmh plugin, installed through the ``mlmh`` entry-point group."""

from __future__ import annotations

import click

from mlmh import hookimpl
from mlmh.components import Masking, Metric
from mlmh.params import Param
from mlmh.types import MaskPlan, MetricResult


class EveryNthMasking(Masking):
    name = "every-nth"
    description = "Mask every n-th word, starting at the first (deterministic; ignores the rng)."
    parameters = (Param("n", int, 3, "mask one word in n", min=1),)

    def mask(self, document, words, rng):
        n = self.params["n"]
        return MaskPlan(masking=self.spec, word_indices=tuple(range(0, len(words), n)))


class LengthRatio(Metric):
    name = "length-ratio"
    description = "Characters of the prediction over characters of the reference (1.0 = same length)."
    higher_is_better = False

    def score(self, items, *, seed=0):
        values = [len(i.prediction) / max(1, len(i.reference)) for i in items]
        mean = sum(values) / len(values) if values else None
        return [MetricResult(name=self.name, value=mean, higher_is_better=False, per_sample=values)]


@hookimpl
def register_maskings(register):
    register(EveryNthMasking())


@hookimpl
def register_metrics(register):
    register(LengthRatio())


@hookimpl
def register_commands(cli):
    @cli.command(name="hello-example")
    def hello_example():
        """Say hello from the example plugin."""
        click.echo("hello from mlmh-example-plugin")


EVENTS_SEEN: list[str] = []


@hookimpl
def mlmh_run_event(event):
    EVENTS_SEEN.append(event.kind)
