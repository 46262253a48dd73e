"""What a study runs: its datasets as ``mlmh study --data`` names them (``DATASET`` for the bundled sample,
``DATASET=DIR`` for official-format files), and where it lives."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from mlmh.errors import SpecError
from mlmh.storage.study import STUDIES_ROOT


@dataclass(frozen=True)
class StudyInput:
    """One dataset a study runs: the label it goes by (its run folder's name), the registered dataset, its files
    (None: the bundled sample)."""

    label: str
    dataset: str
    data: str | None = None


def parse_inputs(values: Sequence[str]) -> list[StudyInput]:
    """``--data`` values, ``DATASET`` (its bundled sample) or ``DATASET=DIR``, into inputs; each dataset once, at
    least two; a bad one is a SpecError naming it."""
    from mlmh.registry import get_registry

    names = get_registry().names("dataset")
    found: list[StudyInput] = []
    for value in values:
        name, eq, data = value.partition("=")
        name = name.strip()
        if name not in names:
            raise SpecError(f"--data {value}: '{name}' is no dataset (one of: {', '.join(names)}); write "
                            "DATASET or DATASET=DIR")
        if eq and not data.strip():
            raise SpecError(f"--data {value}: no files after '='; write {name} for its bundled sample")
        if any(i.label == name for i in found):
            raise SpecError(f"--data {value}: dataset {name} is named twice; a study runs each dataset once")
        # the files by their absolute path: the same files however the command named them, run after run
        found.append(StudyInput(name, name, str(Path(data.strip()).expanduser().resolve()) if data.strip() else None))
    if len(found) < 2:
        raise SpecError("a study needs at least two datasets: --data pan --data mpst=DIR ...")
    return found


def study_path(preset: str, output_path: str | Path | None) -> Path:
    """Where the study lives: ``output_path``, else ``studies/<UTC timestamp>-<preset>``."""
    from mlmh.storage.rundir import new_run_path

    return Path(output_path) if output_path else new_run_path(Path(preset).stem, STUDIES_ROOT)
