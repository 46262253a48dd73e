"""The app as its screens see it, typed: what ``mlmh tui`` was started with, the shared adapter cache, cancel
events for background jobs, and opening a run's results. A module of its own so that a screen names its app's
type without importing :mod:`mlmh.tui.app`, which imports the screens."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from textual.app import App
from textual.screen import Screen

from mlmh.tui.playground_job import AdapterCache, default_models

if TYPE_CHECKING:
    from textual import getters

    from mlmh.api import PreparedRun


@dataclass
class TuiOptions:
    """What ``mlmh tui`` was started with."""

    preset: str | None = None
    run_dir: str | None = None
    models: tuple[str, ...] = field(default_factory=default_models)
    text: str | None = None
    autorun: bool = True  # generate the default example as soon as the playground opens
    prepared: "PreparedRun | None" = None  # what ``mlmh tui --preset`` prepared: the run screen's first start runs it


class TuiApp(App):
    """What every screen may ask of the app; :class:`mlmh.tui.app.MlmhApp` adds the modes and opens results."""

    def __init__(self, options: TuiOptions | None = None) -> None:
        super().__init__()
        self.options = options or TuiOptions()
        self.adapters = AdapterCache()
        self._job_events: list[threading.Event] = []

    def job_event(self) -> threading.Event:
        """A cancel event for one background job; set when the app closes, so no thread outlives it
        (a model training on first use stops at its next step, unless that was its last)."""
        self._job_events = [event for event in self._job_events if not event.is_set()]
        event = threading.Event()
        self._job_events.append(event)
        return event

    def on_unmount(self) -> None:
        for event in self._job_events:
            event.set()
        self.adapters.close()  # a training past its last step is saved before the app exits

    def open_results(self, path: str | Path) -> None:
        """Switch to the results screen and load ``path`` (a run directory or results.json)."""
        raise NotImplementedError


class TuiScreen(Screen):
    """A screen of the app, whose ``app`` is typed :class:`TuiApp` (Textual's is any ``App``)."""

    if TYPE_CHECKING:  # Textual's own pattern (textual.getters.app); at run time the inherited property serves
        app = getters.app(TuiApp)
