"""The headless face of a run: run events rendered as Rich progress bars, one per stage.

A :class:`RichListener` is just a callable taking a :class:`~mlmh.events.RunEvent`; the runner
does not know it exists.
"""

from __future__ import annotations

from typing import Any

from mlmh.events import Message, Progress, RunEvent, StageFinished, StageStarted


class RichListener:
    """Progress bar per stage with counts and ETA; training shows its loss; messages print above."""

    def __init__(self, console: Any = None) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bars, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.console = console or Console(stderr=True)
        self.bars = Bars(TextColumn("[bold]{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
                         TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(), TextColumn("{task.fields[info]}"),
                         console=self.console, transient=False)
        self.tasks: dict[str, Any] = {}

    def __enter__(self) -> "RichListener":
        self.bars.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.bars.stop()

    def _task(self, stage: str, description: str | None = None, total: int | None = None) -> Any:
        if stage not in self.tasks:
            self.tasks[stage] = self.bars.add_task(description or stage, total=total, info="")
        return self.tasks[stage]

    def __call__(self, event: RunEvent) -> None:
        if isinstance(event, StageStarted):
            task = self._task(event.stage, event.description or event.stage, event.total)
            self.bars.update(task, total=event.total)
        elif isinstance(event, Progress):
            label = "training " + str(event.info.get("model", "")) if event.stage == "train" else None
            key = f"train:{event.info.get('model', '')}" if event.stage == "train" else event.stage
            task = self._task(key, label, event.total)
            self.bars.update(task, completed=event.completed, total=event.total, info=_info(event.info))
        elif isinstance(event, StageFinished):
            if event.stage in self.tasks:
                self.bars.update(self.tasks[event.stage], info=f"{event.seconds:.1f}s")
        elif isinstance(event, Message):
            style = {"warning": "yellow", "error": "red"}.get(event.level, "cyan")
            self.console.print(f"[{style}]{event.text}[/]", highlight=False)


def _info(info: dict[str, Any]) -> str:
    parts = []
    if "loss" in info and info["loss"] is not None:
        parts.append(f"loss {float(info['loss']):.3f}")
    if info.get("cached"):
        parts.append(f"{info['cached']} cached")
    if "condition" in info:
        parts.append(str(info["condition"])[:60])
    return "  ".join(parts)
