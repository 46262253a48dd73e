"""What every stage of a run shares, and nothing else: the event bus it reports on, the cancel event it
obeys, and the run's log (notes, failed components, the conditions they left without results, stage times).

A stage's inputs and outputs are its arguments and its return value; :class:`RunContext` carries only what
every stage needs to report as it goes.
"""

from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

from mlmh.config.plan import Condition, RunPlan
from mlmh.errors import MlmhError, RunCancelled
from mlmh.events import EventBus, Message
from mlmh.plugins.contracts import describe_error
from mlmh.types import RunError


@dataclass
class RunLog:
    """What the run records as it goes, whichever stage is running: notes, failed components, the conditions
    they left without results, each stage's time, and whether any sample was generated."""

    notes: list[str] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # condition id -> why it has no results
    timings: dict[str, float] = field(default_factory=dict)
    generated: bool = False  # a new sample reached the cache (the run is worth resuming)

    def add_note(self, text: str) -> bool:
        """Keep ``text`` once; whether it is new."""
        if text in self.notes:
            return False
        self.notes.append(text)
        return True

    def add_error(self, entry: RunError) -> bool:
        """Keep ``entry`` once; whether it is new."""
        if entry in self.errors:
            return False
        self.errors.append(entry)
        return True

    def copy(self) -> RunLog:
        return dataclasses.replace(self, notes=list(self.notes), errors=list(self.errors), failed=dict(self.failed),
                                   timings=dict(self.timings))


def error_note(entry: RunError) -> str:
    """How a failed component is said in the run's notes and messages."""
    return f"{entry.component} failed ({entry.during}): {entry.error}"


def error_entry(component: str, what: str, exc: BaseException | str) -> RunError:
    return RunError(component=component, during=what, error=exc if isinstance(exc, str) else describe_error(exc))


@dataclass
class RunContext:
    """The bus, the cancel event and the log a run's stages share (see the module docstring).

    ``resume_hint`` is the command that continues the run, said when it is cancelled.
    """

    bus: EventBus
    cancel: threading.Event
    resume_hint: str = ""
    log: RunLog = field(default_factory=RunLog)

    def note(self, text: str, level: str = "info") -> None:
        """Keep ``text`` in the run's notes and say it, once."""
        if self.log.add_note(text):
            self.bus.emit(Message(level=level, text=text))

    def error(self, component: str, what: str, exc: BaseException | str) -> None:
        """A component that failed: recorded by name in results.json and said once; the run goes on."""
        entry = error_entry(component, what, exc)
        if self.log.add_error(entry):
            self.note(error_note(entry), "warning")

    def fail(self, plan: RunPlan, conditions: Sequence[Condition], component: Any, what: str,
             exc: BaseException | str) -> None:
        """``component`` failed, so ``conditions`` (those that need it) have no results: each is marked
        failed in results.json with the reason, and the run goes on with the others. Nothing left to run
        stops the run with the errors."""
        entry = error_entry(plan.describe(component), what, exc)
        self.error(entry.component, what, entry.error)
        for condition in conditions:
            self.log.failed.setdefault(condition.id, error_note(entry))
        if all(c.id in self.log.failed for c in plan.conditions):
            raise MlmhError("every condition failed: " + "; ".join(str(e) for e in self.log.errors))

    def running(self, conditions: Sequence[Condition]) -> list[Condition]:
        """The ``conditions`` no component failure has stopped."""
        return [c for c in conditions if c.id not in self.log.failed]

    def check_cancel(self) -> None:
        """Stop here when the run was cancelled: finished batches are cached for ``--resume``."""
        if self.cancel.is_set():
            self.bus.emit(Message(level="warning", text="run cancelled; finished batches are cached (use --resume)"))
            raise RunCancelled(f"run cancelled; resume with: {self.resume_hint}")
