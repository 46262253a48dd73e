"""Where a command writes outside a run directory: the one rule of every output path a user names.

``mlmh human export --out``, ``mlmh bench --out`` and ``mlmh train --out`` name a file or a folder of
their own; a run directory (:mod:`mlmh.storage.rundir`) keeps the same rules for its files and tracker outputs:

- a symbolic link is never followed or replaced: refused, naming the flag and the path;
- a run's own file (results.json, config.json, human_key.json... in a folder that holds a run) is never another
  command's output: refused, unless it is the one file the command itself writes there (``allow``);
- an existing file is replaced only when it is this command's own kind of output (a rating sheet, a bench
  report): anything else is refused in one line, before any work;
- a folder (``train --out``) is used when missing or empty; ``--overwrite`` replaces one that holds only
  what the command itself writes (a model's files), never the home directory, the current directory or
  one of its parents, the filesystem root, or a folder holding anything else.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path
from typing import IO, Any, Callable, Iterable

from mlmh.errors import SpecError
from mlmh.storage.inputs import kind_of, refuse_nul
from mlmh.storage.rundir import RunDir, RunDirError, refuse_link, write_atomic

#: what ``mlmh train`` writes in its ``--out`` folder (save_pretrained's files and the training card)
MODEL_FILES = ("config.json", "generation_config.json", "training_card.json", "*.safetensors", "*.safetensors.index.json",
               "pytorch_model*.bin", "tokenizer*.json", "tokenizer.model", "vocab.txt", "vocab.json", "merges.txt",
               "special_tokens_map.json", "added_tokens.json", "spiece.model", "sentencepiece.bpe.model")


class OutputError(RunDirError, SpecError):
    """An output path a command will not write: a link, a file or folder that is not its own output."""


def check_output_file(path: str | Path, flag: str, *, is_own: Callable[[Path], bool] = lambda p: False,
                      kind: str = "file", allow: Iterable[str] = ()) -> Path:
    """``path`` as a file the command may write: missing, or an existing ``kind`` that ``is_own`` recognizes;
    never a run's own file but those named in ``allow``. Checked before the command does any work."""
    refuse_nul(path, flag)
    path = Path(path).expanduser()
    refuse_link(path, flag=flag)
    if path.is_dir():
        raise OutputError(f"{flag} {path} is a directory; give a file path")
    run = RunDir(path.parent)
    if path.name not in allow and run.is_own_name(path.name) and any(
            p.is_file() for p in (run.config, run.results, run.generations)):
        raise OutputError(f"{flag} {path} is a file of the run in {path.parent} ({path.name}); mlmh never writes "
                          "another output over a run's own files: choose another path")
    if path.exists() and not _recognized(is_own, path):
        raise OutputError(f"{flag} {path} already exists and is not {kind} written by mlmh; mlmh does not "
                          "overwrite other files: choose another path or remove it")
    return path


def write_output_file(path: str | Path, flag: str, write: Callable[[IO[bytes]], Any], *,
                      is_own: Callable[[Path], bool] = lambda p: False, kind: str = "file") -> Path:
    """Check ``path`` (:func:`check_output_file`) and write it whole or not at all."""
    return write_atomic(check_output_file(path, flag, is_own=is_own, kind=kind), write)


def _recognized(is_own: Callable[[Path], bool], path: Path) -> bool:
    try:
        return path.is_file() and bool(is_own(path))
    except (OSError, ValueError, UnicodeDecodeError):
        return False


def _protected(path: Path) -> str | None:
    """Why ``path`` may never be replaced as a command's output folder, or None."""
    resolved = path.resolve()
    cwd = Path.cwd().resolve()
    if resolved == Path(resolved.anchor):
        return "the filesystem root"
    if resolved == Path.home().resolve():
        return "your home directory"
    if resolved == cwd or resolved in cwd.parents:
        return "the current directory" if resolved == cwd else "a parent of the current directory"
    return None


def is_model_file(name: str) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in MODEL_FILES)


def check_output_folder(path: str | Path, flag: str, *, overwrite: bool,
                        is_own_entry: Callable[[str], bool] = is_model_file, kind: str = "a model folder") -> Path:
    """``path`` as a folder the command fills: missing or empty; with ``overwrite``, also one holding only
    files ``is_own_entry`` names (the command's own output). Returns the path made absolute."""
    refuse_nul(path, flag)
    path = Path(os.path.abspath(Path(path).expanduser()))
    refuse_link(path, flag=flag)
    if path.exists() and not path.is_dir():
        raise OutputError(f"{flag} {path} is {kind_of(path.stat().st_mode)}, not a directory; choose another path")
    protected = _protected(path)
    if protected:
        raise OutputError(f"{flag} {path} is {protected}; mlmh never replaces it: choose a new directory")
    if not path.is_dir():
        return path
    try:
        entries = sorted(p.name for p in path.iterdir())
    except OSError as exc:
        raise OutputError(f"{flag} {path} cannot be listed ({exc.strerror or exc})") from None
    if not entries:
        return path
    if not overwrite:
        raise OutputError(f"{flag} {path} already exists and is not empty; choose another directory or pass "
                          "--overwrite (which replaces only a folder mlmh wrote)")
    foreign = [name for name in entries if not (is_own_entry(name) and (path / name).is_file()
                                                  and not (path / name).is_symlink())]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise OutputError(f"{flag} {path} holds files that are not {kind}'s ({shown}); --overwrite replaces only "
                          "what mlmh wrote: choose another directory")
    return path
