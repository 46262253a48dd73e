"""The one event stream of a run. The runner emits; the CLI, the TUI and observer plugins listen.

Nothing in the runner knows which face is listening: a listener is any callable taking a RunEvent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from mlmh.types import Generation


@dataclass
class RunEvent:
    kind: str = "event"


@dataclass
class RunStarted(RunEvent):
    run_id: str = ""
    config: dict[str, Any] = field(default_factory=dict)
    n_conditions: int = 0
    output_path: str = ""
    kind: str = "run_started"


@dataclass
class StageStarted(RunEvent):
    stage: str = ""  # data | models | mask | generate | metrics | downstream | correlation | report | train
    total: int | None = None
    description: str = ""
    kind: str = "stage_started"


@dataclass
class Progress(RunEvent):
    stage: str = ""
    completed: int = 0
    total: int | None = None
    info: dict[str, Any] = field(default_factory=dict)  # e.g. {"loss": 3.2} while training
    kind: str = "progress"


@dataclass
class SampleGenerated(RunEvent):
    condition: str = ""
    generation: Generation | None = None
    kind: str = "sample_generated"


@dataclass
class StageFinished(RunEvent):
    stage: str = ""
    seconds: float = 0.0
    kind: str = "stage_finished"


@dataclass
class Message(RunEvent):
    level: str = "info"  # info | warning | error
    text: str = ""
    kind: str = "message"


@dataclass
class RunFinished(RunEvent):
    output_path: str = ""
    results: Any = None  # the run's mlmh.types.RunResults
    seconds: float = 0.0
    kind: str = "run_finished"


Listener = Callable[[RunEvent], None]


class EventBus:
    """Fans one event out to every listener and to plugins' ``mlmh_run_event`` hooks."""

    def __init__(self, *listeners: Listener, plugins: bool = True) -> None:
        self.listeners = [listener for listener in listeners if listener is not None]
        self.plugins = plugins

    def emit(self, event: RunEvent) -> None:
        for listener in self.listeners:
            listener(event)
        if self.plugins:
            from mlmh.plugin_manager import emit_event

            emit_event(event)

    __call__ = emit
