"""The one event stream of a run. The runner emits; the CLI, the TUI, observer plugins and the run's
trackers listen.

Nothing in the runner knows which face is listening: a listener is any callable taking a RunEvent.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

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


def notify(name: str, observe: Callable[[RunEvent], Any], event: RunEvent, failed: set[str]) -> None:
    """Give ``event`` to one onlooker of a run (an observer plugin, a tracker). One that raises is reported
    once per run on stderr, by ``name`` with its first error, and the run goes on: it is an onlooker, and a
    warning per event would bury the run's own output. ``failed`` holds the names already reported."""
    try:
        observe(event)
    except Exception as exc:
        if name in failed:
            return
        failed.add(name)
        from mlmh.errors import MlmhError

        said = str(exc) if isinstance(exc, MlmhError) else f"{type(exc).__name__}: {exc}"
        print(f"mlmh: {name} failed on a {getattr(event, 'kind', 'run')} event: {said} "
              "(further failures of it in this run are not shown)", file=sys.stderr)


class EventBus:
    """Fans one event out to every listener, to plugins' ``mlmh_run_event`` hooks and to the trackers the
    run enabled (:class:`mlmh.components.Tracker`, set by the runner from the run's plan)."""

    def __init__(self, *listeners: Listener | None, plugins: bool = True) -> None:
        self.listeners = [listener for listener in listeners if listener is not None]
        self.plugins = plugins
        self.trackers: Sequence[Any] = ()
        self._failed_trackers: set[str] = set()

    def emit(self, event: RunEvent) -> None:
        for listener in self.listeners:
            listener(event)
        if self.plugins:
            _notify_plugins(event)
        for tracker in self.trackers:
            notify(f"tracker '{tracker.short_spec}'", tracker.observe, event, self._failed_trackers)

    __call__ = emit


#: the plugin manager whose observers were told, and those of them already reported as failing in this run
_failed_observers: tuple[object, set[str]] = (None, set())


def _notify_plugins(event: RunEvent) -> None:
    """Send a run event to every plugin implementing ``mlmh_run_event``, each by the observers' rule
    (:func:`notify`: one that raises is reported once per run and the run goes on)."""
    global _failed_observers
    from mlmh.plugins.plugin_manager import get_plugin_manager, plugin_label

    pm = get_plugin_manager()
    if _failed_observers[0] is not pm or event.kind == "run_started":
        _failed_observers = (pm, set())
    for impl in pm.hook.mlmh_run_event.get_hookimpls():
        observe = impl.function  # pluggy passes hook arguments by name
        notify(f"observer plugin '{plugin_label(impl.plugin_name)}'", lambda e: observe(event=e), event,
               _failed_observers[1])
