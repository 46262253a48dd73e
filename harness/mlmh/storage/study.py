"""A study folder's own files: study.json (:class:`mlmh.types.study.StudyResults`) and study.md, each written whole;
its runs are normal run folders beside them (:mod:`mlmh.storage.rundir`)."""

from __future__ import annotations

import os
from pathlib import Path

from mlmh.errors import DataError
from mlmh.types.study import StudyResults

STUDY = "study.json"
STUDY_REPORT = "study.md"
#: where studies go when no --output-path is given
STUDIES_ROOT = "studies"


def write_study(out: Path, study: StudyResults, report: str) -> None:
    """study.json (strict JSON, as every run file) and the ``report`` as study.md, each written whole (a reader never
    sees half a file)."""
    from mlmh.plugins.contracts import strict_json
    from mlmh.storage.rundir import write_text_atomic

    write_text_atomic(out / STUDY, strict_json(study.to_dict(), indent=2, ensure_ascii=False) + "\n")
    write_text_atomic(out / STUDY_REPORT, report)


def read_study(path: str | Path) -> StudyResults:
    """A study folder's (or its study.json's) results, read by the input rule and checked by key against
    :data:`mlmh.storage.schema.STUDY`, as every file mlmh reads back; a missing or bad file is one line naming it."""
    from mlmh.storage import schema
    from mlmh.storage.rundir import read_checked_json

    path = Path(path)
    file = path / STUDY if path.is_dir() else path
    if not os.path.lexists(file):
        raise DataError(f"{file}: no study here (a study folder holds {STUDY}, which mlmh study writes)")
    return StudyResults.from_dict(read_checked_json(file, f"study file ({STUDY} of mlmh study)", schema.STUDY),
                                  str(file))


def study_runs(root: str | Path = STUDIES_ROOT) -> list[Path]:
    """The finished runs of the studies directly under ``root``, newest first (each a normal run folder beside its
    study's study.json): what the TUI's run picker lists beside runs/."""
    from mlmh.storage.rundir import RESULTS, finished_runs

    found = [run for study in Path(root).expanduser().glob(f"*/{STUDY}") if study.is_file() and not study.is_symlink()
             for run in finished_runs(study.parent)]
    return sorted(found, key=lambda run: run.joinpath(RESULTS).stat().st_mtime, reverse=True)


def study_of(path: str | Path) -> tuple[StudyResults, str] | None:
    """The study a run folder (or results file) is one dataset of, with the dataset's label; None for a run of
    no study, or a study file that does not read."""
    run = Path(path)
    run = run.parent if run.suffix == ".json" else run
    try:
        study = read_study(run.parent)
    except DataError:
        return None
    label = next((d.label for d in study.datasets if (run.parent / d.run).resolve() == run.resolve()), None)
    return (study, label) if label is not None else None


def first_run(path: str | Path) -> Path:
    """``path`` itself, or where ``path`` is a study folder, the run of its first dataset: how a face opened on a
    study shows it."""
    folder = Path(path)
    if folder.is_dir() and (folder / STUDY).is_file():
        study = read_study(folder)
        if study.datasets:
            return folder / study.datasets[0].run
    return folder
