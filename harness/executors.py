"""Executors: where a run plan's work units are generated.

The driver (the runner) alone decides what to generate, writes the sample cache and emits events; an
executor only turns work units into generations and hands each finished unit back through
``on_done(unit, generations)`` on the driver's thread, so the event bus, the cache and the results
are the same whichever executor ran.

- :class:`InProcessExecutor` (the default): the driver's own loaded models, one unit after another.

Executors for other processes and machines build their components from the same
:class:`~mlmh.config.RunConfig` through :func:`mlmh.plan.build_plan` and load each model once per
worker; see :func:`make_executor`.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Protocol, Sequence

from mlmh.plan import WorkUnit
from mlmh.types import Generation

OnDone = Callable[[WorkUnit, list[Generation]], None]
BACKENDS = ("local", "ray")


class Executor(Protocol):
    """Generates work units; calls ``on_done`` once per finished unit, on the caller's thread."""

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event) -> None: ...

    def close(self) -> None: ...


class InProcessExecutor:
    """Runs each unit with the driver's own adapters and samplers (``{spec: object}``)."""

    def __init__(self, adapters: dict[str, Any], samplers: dict[str, Any]) -> None:
        self.adapters = adapters
        self.samplers = samplers

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event) -> None:
        from mlmh.generation import generate

        for unit in units:
            if cancel.is_set():
                return
            generations = generate(self.adapters[unit.model], self.samplers[unit.sampler], list(unit.items),
                                   batch_size=max(1, len(unit.items)))
            on_done(unit, generations)

    def close(self) -> None:
        return None
