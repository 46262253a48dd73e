"""``mlmh human export|import``: blinded rating sheets for coherence and grammar, merged back into a run."""

from __future__ import annotations

import click

from mlmh.config import options


@click.group(name="human")
def human() -> None:
    """Human evaluation (coherence and grammar, 1-5) of a run's generations.

    \b
    Examples:
      mlmh human export runs/X --n 50                     # writes runs/X/human_sheet.csv (+ hidden key)
      mlmh human import runs/X alice.csv bob.csv          # means, CIs, Krippendorff's alpha
    """


@human.command(name="export")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.option("--n", "n", type=options.COUNT, default=50, show_default=True, help="Texts on the sheet (originals included).")
@click.option("--seed", type=options.SEED, default=0, show_default=True, help="Seed of the draw and the shuffle.")
@click.option("--out", type=click.Path(dir_okay=False), help="Sheet path (default: RUN_DIR/human_sheet.csv).")
def export(run_dir: str, n: int, seed: int, out: str | None) -> None:
    """Write a shuffled, blinded CSV sheet of originals and generations; the key stays in RUN_DIR.

    \b
    Example:
      mlmh human export runs/X --n 50 --out sheet.csv
    """
    from mlmh.human import KEY_FILE, export_sheet

    sheet = export_sheet(run_dir, n, seed=seed, out=out)
    click.echo(f"wrote {sheet} (rate coherence and grammar 1-5; the key is {run_dir}/{KEY_FILE})")


@human.command(name="import")
@click.argument("run_dir", type=click.Path(file_okay=False))
@click.argument("sheets", nargs=-1, required=True, type=click.Path(dir_okay=False))
def import_(run_dir: str, sheets: tuple[str, ...]) -> None:
    """Merge filled sheets (one per rater; the file name is the rater) into RUN_DIR's results and report.

    \b
    Example:
      mlmh human import runs/X alice.csv bob.csv
    """
    from mlmh.human import import_sheets

    human_results = import_sheets(run_dir, list(sheets))
    for condition, scores in human_results.conditions.items():
        text = ", ".join(f"{c} {s.value:.2f} (n={s.n})" for c, s in scores.items() if s.value is not None)
        click.echo(f"{condition}: {text}")
    agreement = ", ".join(f"{c}: {'n/a' if a is None else f'{a:.3f}'}" for c, a in human_results.agreement.items())
    click.echo(f"Krippendorff's alpha (ordinal): {agreement}")
