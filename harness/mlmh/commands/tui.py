"""``mlmh tui``: the Textual UI — playground, run and results screens."""

from __future__ import annotations

import click

from mlmh.config import options


@click.command(name="tui")
@click.option("--preset", "preset", cls=options.PresetOption, metavar="NAME",
              help="Open the run screen and start this preset.")
@click.option("--run", "run_dir", metavar="RUN_DIR", help="Open the results screen on a run directory, results.json or a "
              "study folder (mlmh study).")
@click.option("--model", "models", metavar="SPEC[,SPEC]", multiple=True, callback=options.specs("model"),
              help="Playground model (give two, repeated or comma-separated, for the left and right side). "
                   "Default: trained-mlm and trained-clm.")
@click.option("--text", metavar="TEXT", help="Playground text to mask (default: a built-in example).")
def tui(preset: str | None, run_dir: str | None, models: list[str], text: str | None) -> None:
    """Watch masked and causal LMs regenerate the same masked text step by step, run presets with live
    progress, and compare results.

    Keys: q quits, ? lists the keys of the current screen, F1/F2/F3 switch between playground, run and
    results. In the playground: ctrl+r runs, space plays/pauses, left/right step, +/- change the speed,
    m draws a new mask, esc cancels. The default models train on the PAN sample the first time (side by
    side where two cores allow; each pane says how long is left, animates the training's previews as they
    come, its title giving the training step they are at, and then the finished model) and are cached for
    every later start, a training that reached its last step also when you quit.
    The results screen opens on the newest run under runs/ (ctrl+o picks another) with its findings first;
    t, p and a show its table, plots and samples, u switches the table between unseen and seen documents,
    c shows the table's whole CIs.

    \b
    Examples:
      mlmh tui                                    # playground: trained-mlm vs trained-clm
      mlmh tui --model hf-mlm:path=./my-bert --model hf-clm:path=./my-gpt2
      mlmh tui --preset quick                     # start a run and watch it
      mlmh tui --run runs/20240101-120000-pan     # browse a finished run
      mlmh tui --run studies/paper                # a study: its answer across datasets, then each dataset's run
    """
    from mlmh.errors import SpecError

    prepared = None
    if preset is not None:
        from mlmh.tui.screens.run import prepare_run

        # a bad preset or a missing checkpoint fails here in one line, before the screen opens; the screen runs it
        prepared = prepare_run(preset)
    if len(models) > 2:
        raise SpecError(f"--model: {len(models)} models given; the playground has two sides (give it at most twice)")
    if run_dir is not None:
        from mlmh import api

        from mlmh.storage.study import first_run

        # its samples read now too: a bad file fails here in one line, before the app opens (a study: its first run)
        api.load(first_run(run_dir)).samples
    from mlmh.tui import create_app

    app = create_app(preset=preset, run_dir=run_dir, models=models or None, text=text, prepared=prepared)
    app.run()
    if app.return_code:  # the app stopped on an error (Textual printed it): the command failed, never exit 0
        raise SystemExit(app.return_code)
