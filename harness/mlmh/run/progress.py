"""The headless face of a run: run events rendered as Rich progress bars on a terminal, and as plain
lines (a line per stage and about every 10 %, with counts and an ETA) anywhere else: a log file, CI, a pipe.

A listener is just a callable taking a :class:`~mlmh.events.RunEvent`; the runner does not know it exists.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Callable, TextIO

from mlmh.events import Message, Progress, RunEvent, StageFinished, StageStarted
from mlmh.run.eta import Eta, duration, eta_text

#: a plain progress line at every this fraction of a stage's total (and at its end)
STEP = 0.1
#: without a total, a plain progress line at most this often (seconds)
QUIET_SECONDS = 30.0
#: a bar's progress info (loss, condition) in at most this many characters, elided in the middle
INFO_WIDTH = 60


def progress_listener(stream: TextIO | None = None) -> "RichListener | PlainListener":
    """Bars where ``stream`` (stderr by default) is a terminal, plain lines where it is not."""
    stream = stream or sys.stderr
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        from rich.console import Console

        return RichListener(Console(file=stream))
    return PlainListener(stream)


def progress_key(event: Progress) -> tuple[str, str]:
    """The bar or line of an event: one per stage, and one per model while training."""
    model = str(event.info.get("model") or "")
    if event.stage == "train" and model:
        return f"train:{model}", "training " + model
    return event.stage, event.stage


class RichListener:
    """Progress bar per stage with counts and ETA; training shows its loss; messages print above, unwrapped."""

    def __init__(self, console: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bars, TextColumn, TimeElapsedColumn

        self.console = console or Console(stderr=True)
        self.clock = clock
        self.bars = Bars(TextColumn("[bold]{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), TextColumn("{task.fields[eta]}"), TextColumn("{task.fields[info]}"),
                         console=self.console, transient=False)
        self.tasks: dict[str, Any] = {}
        self.etas: dict[str, Eta] = {}

    def __enter__(self) -> "RichListener":
        self.bars.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bars.stop()

    def _task(self, stage: str, description: str | None = None, total: int | None = None) -> Any:
        if stage not in self.tasks:
            self.tasks[stage] = self.bars.add_task(description or stage, total=total, info="", eta="")
            self.etas[stage] = Eta()
        return self.tasks[stage]

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, StageStarted):
            task = self._task(event.stage, event.description or event.stage, event.total)
            self.bars.update(task, total=event.total)
        elif isinstance(event, Progress):
            key, label = progress_key(event)
            task = self._task(key, label if event.stage == "train" else None, event.total)
            eta = self.etas[key]
            eta.observe(event.completed, event.total, self.clock(), restart=bool(event.info.get("cached")))
            self.bars.update(task, completed=event.completed, total=event.total, eta=eta_text(eta.remaining()),
                             info=elide(_info(event.info), INFO_WIDTH))
        elif isinstance(event, StageFinished):
            if event.stage in self.tasks:
                self.bars.update(self.tasks[event.stage], eta="", info=f"{event.seconds:.1f}s")
        elif isinstance(event, Message):
            style = {"warning": "yellow", "error": "red"}.get(event.level, "cyan")
            self.console.print(f"[{style}]{event.text}[/]", highlight=False, soft_wrap=True)


def elide(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, shortened in the middle so that both ends of a spec stay."""
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head):]


class _Line:
    """What a plain line of one stage needs: when it started, its ETA, and what was printed last."""

    def __init__(self, label: str, now: float) -> None:
        self.label = label
        self.started = now
        self.eta = Eta()
        self.printed_step = -1
        self.printed_at = now


class PlainListener:
    """One plain line per stage start and end, and about every 10 % of a stage in between, with counts,
    elapsed time and an ETA; messages as they come, never wrapped. For output that is not a terminal,
    where progress bars print nothing until the end."""

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.clock = clock
        self.lines: dict[str, _Line] = {}

    def __enter__(self) -> "PlainListener":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stream.flush()

    def _print(self, text: str) -> None:
        print(text, file=self.stream, flush=True)

    def __call__(self, event: RunEvent) -> None:
        now = self.clock()
        if isinstance(event, StageStarted):
            self.lines[event.stage] = _Line(event.description or event.stage, now)
            total = f" ({event.total} to do)" if event.total else ""
            self._print(f"[{event.stage}] started{total}")
        elif isinstance(event, Progress):
            key, label = progress_key(event)
            line = self.lines.get(key)
            if line is None:  # a stage without a start event (training)
                line = self.lines[key] = _Line(label, now)
            line.eta.observe(event.completed, event.total, now, restart=bool(event.info.get("cached")))
            if self._due(line, event, now):
                self._print(self._progress_line(key, line, event, now))
        elif isinstance(event, StageFinished):
            self._print(f"[{event.stage}] done in {duration(event.seconds)}")
        elif isinstance(event, Message):
            prefix = "" if event.level == "info" else f"{event.level}: "
            self._print(prefix + event.text)

    def _due(self, line: _Line, event: Progress, now: float) -> bool:
        """At each further tenth of the total and at its end; every QUIET_SECONDS without a total."""
        if not event.total:
            if now - line.printed_at < QUIET_SECONDS:
                return False
            line.printed_at = now
            return True
        step = int(event.completed / event.total / STEP + 1e-9)
        if step <= line.printed_step:
            return False
        line.printed_step = step
        line.printed_at = now
        return True

    def _progress_line(self, key: str, line: _Line, event: Progress, now: float) -> str:
        count = f"{event.completed}/{event.total} ({100 * event.completed / event.total:.0f}%)" if event.total \
            else str(event.completed)
        parts = [f"[{key}] {count}", f"elapsed {duration(now - line.started)}"]
        eta = line.eta.remaining()
        if eta:  # none yet, or 0 at the end, where it says nothing
            parts.append(f"eta {duration(eta)}")
        info = _info(event.info)
        if info:
            parts.append(info)
        return "  ".join(parts)


def _info(info: dict[str, Any]) -> str:
    parts = []
    if "loss" in info and info["loss"] is not None:
        parts.append(f"loss {float(info['loss']):.3f}")
    if info.get("cached"):
        parts.append(f"{info['cached']} cached")
    if "condition" in info:
        parts.append(str(info["condition"]))
    return "  ".join(parts)
