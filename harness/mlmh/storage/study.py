"""A study folder's own files: study.json (:class:`mlmh.types.study.StudyResults`) and study.md, each written whole;
its runs are normal run folders beside them (:mod:`mlmh.storage.rundir`)."""

from __future__ import annotations

import json
from pathlib import Path

from mlmh.errors import DataError
from mlmh.types.study import StudyResults

STUDY = "study.json"
STUDY_REPORT = "study.md"


def write_study(out: Path, study: StudyResults, report: str) -> None:
    """study.json and the ``report`` as study.md, each written whole (a reader never sees half a file)."""
    from mlmh.storage.rundir import write_text_atomic

    write_text_atomic(out / STUDY, json.dumps(study.to_dict(), indent=2, allow_nan=False) + "\n")
    write_text_atomic(out / STUDY_REPORT, report)


def read_study(path: str | Path) -> StudyResults:
    """A study folder's (or its study.json's) results; a missing or bad file is one line naming it."""
    path = Path(path)
    file = path / STUDY if path.is_dir() else path
    if not file.is_file() or file.is_symlink():
        raise DataError(f"{file}: no study here (a study folder holds {STUDY}, which mlmh study writes)")
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataError(f"{file}: not a study file ({exc})") from None
    return StudyResults.from_dict(data, str(file))
