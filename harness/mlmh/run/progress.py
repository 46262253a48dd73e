"""The headless face of a run: run events rendered as Rich progress bars on a terminal, and as plain
lines (a line per stage and about every 10 %, with counts and an ETA) anywhere else: a log file, CI, a pipe.

Both name things in a few words: a training by its model's kind and start (``train:mlm (minilm)``, the label the
models stage gives), a condition by that label and its other parts, so a log line stays short; where output is not
a terminal the libraries' own carriage-return bars are turned off (:func:`mlmh.machine.terminal.quiet_library_bars`).
A listener is just a callable taking a :class:`~mlmh.events.RunEvent`; the runner does not know it exists.
"""

from __future__ import annotations

import sys
import textwrap
import time
from typing import Any, Callable, TextIO

from mlmh.events import Message, Progress, RunEvent, StageFinished, StageStarted
from mlmh.machine.terminal import is_terminal, literal, quiet_library_bars
from mlmh.run.eta import Eta, duration, eta_text

#: a plain progress line at every this fraction of a stage's total (and at its end)
STEP = 0.1
#: without a total, a plain progress line at most this often (seconds)
QUIET_SECONDS = 30.0
#: a bar's progress info (loss, condition) in at most this many characters, elided in the middle
INFO_WIDTH = 60
#: a plain line's progress info in at most this many characters (a log line stays under about 160)
LINE_INFO_WIDTH = 90
#: a plain message is wrapped at this width, at spaces only (a spec is never split), its later lines indented
MESSAGE_WIDTH = 150
#: what a step of each stage did, the first of each kind carrying its one-off work (mlmh.run.eta): the info keys
KIND_KEYS = ("metric", "model", "masking", "task")
#: the training states that end a training (mlmh.training.jobs)
ENDED = ("finished", "cached", "failed")


def progress_listener(stream: TextIO | None = None) -> "RichListener | PlainListener":
    """Bars where ``stream`` (stderr by default) is a terminal, plain lines where it is not (and no library's own
    bar either)."""
    stream = stream or sys.stderr
    if is_terminal(stream):
        from rich.console import Console

        return RichListener(Console(file=stream))
    quiet_library_bars()
    return PlainListener(stream)


def progress_key(event: Progress) -> tuple[str, str]:
    """The bar or line of an event: one per stage, and one per model while training, named by the model's
    label (``train:mlm (minilm)``), its spec where it has none."""
    model = str(event.info.get("label") or event.info.get("model") or "")
    if event.stage == "train" and model:
        return f"train:{model}", "training " + model
    return event.stage, event.stage


def step_kind(event: Progress) -> tuple[str, ...] | None:
    """What a step did (its metric, model, masking or task), for :class:`~mlmh.run.eta.Eta`'s one-off rule."""
    kind = tuple(str(event.info[key]) for key in KIND_KEYS if event.info.get(key) is not None)
    return kind or None


class Labels:
    """The short names a run's events give (a model's spec -> ``mlm (minilm)``), learned from the events that
    carry them, for the conditions named by later ones."""

    def __init__(self) -> None:
        self.models: dict[str, str] = {}

    def learn(self, event: Progress) -> None:
        if event.info.get("model") and event.info.get("label"):
            self.models[str(event.info["model"])] = str(event.info["label"])

    def condition(self, condition: str) -> str:
        """A condition id (``model | masking | sampler | seed=N``) with its model's label for its spec."""
        model, bar, rest = condition.partition(" | ")
        return self.models.get(model, model) + bar + rest

    def info(self, info: dict[str, Any]) -> str:
        return _info({**info, "condition": self.condition(str(info["condition"]))} if "condition" in info else info)


class RichListener:
    """Progress bar per stage with counts and ETA; training shows its loss; messages print above, unwrapped."""

    def __init__(self, console: Any = None, clock: Callable[[], float] = time.monotonic) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bars, TextColumn, TimeElapsedColumn

        self.console = console or Console(stderr=True)
        self.clock = clock
        # names and info are shown as written (a spec's brackets are no markup)
        self.bars = Bars(TextColumn("{task.description:<28}", style="bold", markup=False), BarColumn(),
                         MofNCompleteColumn(), TimeElapsedColumn(), TextColumn("{task.fields[eta]}"),
                         TextColumn("{task.fields[info]}", markup=False), console=self.console, transient=False)
        self.tasks: dict[str, Any] = {}
        self.etas: dict[str, Eta] = {}
        self.labels = Labels()

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
        if isinstance(event, StageStarted):  # a stage that starts again (a study's next run) gets a bar of its own
            self.tasks.pop(event.stage, None)
            if event.stage == "models":
                forget_trainings(self.tasks)
            task = self._task(event.stage, event.description or event.stage, event.total)
            self.bars.update(task, total=event.total)
        elif isinstance(event, Progress):
            self.labels.learn(event)
            key, label = progress_key(event)
            task = self._task(key, label if event.stage == "train" else None, event.total)
            eta = self.etas[key]
            eta.observe(event.completed, event.total, self.clock(), restart=bool(event.info.get("cached")),
                        kind=step_kind(event))
            if event.stage == "train" and event.info.get("state") in ENDED:
                restart_others(self.etas, key)
            self.bars.update(task, completed=event.completed, total=event.total, eta=eta_text(eta.remaining()),
                             info=elide(self.labels.info(event.info), INFO_WIDTH))
        elif isinstance(event, StageFinished):
            if event.stage in self.tasks:
                self.bars.update(self.tasks[event.stage], eta="", info=f"{event.seconds:.1f}s")
        elif isinstance(event, Message):
            style = {"warning": "yellow", "error": "red"}.get(event.level, "cyan")
            self.console.print(literal(event.text, style), highlight=False, soft_wrap=True)


def forget_trainings(faces: dict[str, Any]) -> None:
    """A models stage starts (a study's next run): its trainings are new, though they carry the labels of the last
    run's (``train:mlm (minilm)``), so their times and ETAs start afresh."""
    for key in [k for k in faces if k.startswith("train:")]:
        del faces[key]


def restart_others(etas: dict[str, Eta], ended: str) -> None:
    """A training ended: the others beside it get its cores, so their rates are measured again."""
    for key, eta in etas.items():
        if key != ended and key.startswith("train:"):
            eta.restart()


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
        self.total: int | None = None  # the largest total seen: a training that stops early ends below it


class PlainListener:
    """One plain line per stage start and end, and about every 10 % of a stage in between, with counts,
    elapsed time and an ETA; messages as they come, wrapped at spaces to fit a log's line. For output that is not a
    terminal, where progress bars print nothing until the end."""

    def __init__(self, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.clock = clock
        self.lines: dict[str, _Line] = {}
        self.labels = Labels()

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
            if event.stage == "models":
                forget_trainings(self.lines)
            total = f" ({event.total} to do)" if event.total else ""
            self._print(f"[{event.stage}] started{total}")
        elif isinstance(event, Progress):
            self.labels.learn(event)
            key, label = progress_key(event)
            line = self.lines.get(key)
            if line is None:  # a stage without a start event (training)
                line = self.lines[key] = _Line(label, now)
            line.eta.observe(event.completed, event.total, now, restart=bool(event.info.get("cached")),
                             kind=step_kind(event))
            if event.stage == "train" and event.info.get("state") in ENDED:
                restart_others({k: v.eta for k, v in self.lines.items()}, key)
            stopped = line.total if event.total and line.total and event.total < line.total else None
            line.total = max(line.total or 0, event.total or 0) or None
            if self._due(line, event, now):
                self._print(self._progress_line(key, line, event, now, stopped))
        elif isinstance(event, StageFinished):
            self._print(f"[{event.stage}] done in {duration(event.seconds)}")
        elif isinstance(event, Message):
            prefix = "" if event.level == "info" else f"{event.level}: "
            self._print("\n".join(textwrap.wrap(prefix + event.text, MESSAGE_WIDTH, subsequent_indent="  ",
                                                 break_long_words=False, break_on_hyphens=False)))

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

    def _progress_line(self, key: str, line: _Line, event: Progress, now: float, stopped: int | None = None) -> str:
        """``[key] done/total (%)``, the stage's time so far, its ETA once measured, what the step did; a training
        that ended before its budget says so (``stopped early at 412 of 2000 steps``) where its ETA had counted on
        the whole budget."""
        count = f"{event.completed}/{event.total} ({100 * event.completed / event.total:.0f}%)" if event.total \
            else str(event.completed)
        parts = [f"[{key}] {count}", f"elapsed {duration(now - line.started)}"]
        eta = line.eta.remaining()
        if eta:  # none yet, or 0 at the end, where it says nothing
            parts.append(f"eta {duration(eta)}")
        if stopped:
            parts.append(f"stopped early at {event.completed} of {stopped} steps")
        info = self.labels.info(event.info)
        if info:
            parts.append(elide(info, LINE_INFO_WIDTH))
        return "  ".join(parts)


def _info(info: dict[str, Any]) -> str:
    parts = []
    if "loss" in info and info["loss"] is not None:
        parts.append(f"loss {float(info['loss']):.3f}")
    if info.get("cached"):
        parts.append(f"{info['cached']} cached")
    if "condition" in info:
        parts.append(str(info["condition"]))
    elif info.get("label") and "step" not in info:  # a model the models stage counted (a training's is its key)
        parts.append(str(info["label"]))
    return "  ".join(parts)
