"""The Textual app: three modes (playground, run, results) over the same engine and events as the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from textual.binding import Binding

from mlmh.tui.host import TuiApp, TuiOptions
from mlmh.tui.playground_job import default_models

if TYPE_CHECKING:
    from mlmh.api import PreparedRun


class MlmhApp(TuiApp):
    """mlmh's terminal UI. Start with :func:`create_app`."""

    CSS_PATH = "mlmh.tcss"
    TITLE = "mlmh"
    SUB_TITLE = "masked vs causal generation"
    #: the footer needs the room at 80 columns; every action has a key, listed by ``?``
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Keys", key_display="?"),
        Binding("f1", "switch_mode('playground')", "Playground"),
        Binding("f2", "switch_mode('run')", "Run"),
        Binding("f3", "switch_mode('results')", "Results"),
    ]

    def __init__(self, options: TuiOptions | None = None) -> None:
        super().__init__(options)
        from mlmh.tui.screens.playground import PlaygroundScreen
        from mlmh.tui.screens.results import ResultsScreen
        from mlmh.tui.screens.run import RunScreen

        self.add_mode("playground", PlaygroundScreen)
        self.add_mode("run", RunScreen)
        self.add_mode("results", ResultsScreen)

    def on_mount(self) -> None:
        if self.options.run_dir:
            self.switch_mode("results")
        elif self.options.preset:
            self.switch_mode("run")
        else:
            self.switch_mode("playground")

    def action_help(self) -> None:
        from mlmh.tui.screens.help import HelpScreen

        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.screen))

    def open_results(self, path: str | Path) -> None:
        from mlmh.storage.rundir import RunDir
        from mlmh.tui.screens.results import ResultsScreen

        self.options.run_dir = str(path)  # a results screen made now loads it when it mounts

        def load_into_existing() -> None:
            screen = self.screen
            if isinstance(screen, ResultsScreen) and (screen.run_files is None or screen.run_files.path != RunDir.of(path).results):
                screen.load(str(path))

        self.switch_mode("results")
        self.call_after_refresh(load_into_existing)


def create_app(preset: str | None = None, run_dir: str | None = None, models: tuple[str, ...] | list[str] | None = None,
               *, text: str | None = None, autorun: bool = True, prepared: "PreparedRun | None" = None) -> MlmhApp:
    """The app, configured: ``preset`` opens the run screen, ``run_dir`` the results screen, ``models``
    overrides the playground's two default models (e.g. ``hf-mlm:path=DIR``). ``prepared`` is ``preset``'s run
    when the caller prepared it already (:func:`mlmh.tui.screens.run.prepare_run`), so the run builds its plan
    once."""
    defaults = default_models()
    chosen = tuple(models) if models else defaults
    if len(chosen) == 1:
        chosen = (chosen[0], defaults[1])
    return MlmhApp(TuiOptions(preset=preset, run_dir=run_dir, models=chosen, text=text, autorun=autorun,
                                prepared=prepared))
