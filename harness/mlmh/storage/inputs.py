"""Where a command reads a file a user names (``mlmh score --pred``, a rating sheet, a dataset's files, a run's
files): the one rule of every input path. Only a regular file is read: a device (``/dev/zero`` never ends,
``/dev/null`` is always empty), a FIFO (blocks until someone writes) or a socket is refused in one line naming the
path and what it is, before a byte is read, so no input can make mlmh read until the kernel kills it. A path the
system cannot look up (a NUL byte in it: :func:`refuse_nul`, the rule every path argument and option passes; a name
too long: :func:`path_error`) is one line too, never a Python exception."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

from mlmh.errors import DataError, SpecError

#: the most of a path an error shows (a 5,000-character path would be the whole message)
SHOWN_PATH = 160

#: what a path that is not a regular file is, in words
_KINDS = ((stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISSOCK, "a socket"))


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``os.stat``'s) is, in words: "a file", "a directory", "a FIFO (named pipe)"..."""
    if stat.S_ISREG(mode):
        return "a file"
    if stat.S_ISDIR(mode):
        return "a directory"
    return next((words for test, words in _KINDS if test(mode)), "not a regular file")


def refuse_nul(path: Any, name: str) -> None:
    """A path holding a NUL byte names no file (the system cannot take it): a SpecError naming the argument or option
    ``name``, before anything is looked up."""
    text = os.fspath(path) if isinstance(path, (str, os.PathLike)) else path
    if isinstance(text, str) and "\x00" in text:
        raise SpecError(f"{name} {shown_path(text)!r}: a path cannot hold a NUL byte")


def shown_path(path: str | Path) -> str:
    """``path`` as an error shows it: whole, or its start and its length when it is very long."""
    text = str(path)
    return text if len(text) <= SHOWN_PATH else f"{text[:SHOWN_PATH]}... ({len(text):,} characters)"


def path_error(path: str | Path, exc: OSError, what: str = "") -> DataError:
    """The one line for a path the system would not look up or open (a name too long, no permission, a loop of
    links), naming it (``what`` first)."""
    named = f"{what} {shown_path(path)}" if what else shown_path(path)
    if exc.errno == errno.ENAMETOOLONG:
        return DataError(f"{named}: the path (or a name in it) is too long for this system")
    return DataError(f"{named} cannot be read ({exc.strerror or exc})")


def check_input_file(path: str | Path, what: str = "") -> Path:
    """``path`` as a regular file to read; a DataError naming it (``what`` first, e.g. "rating sheet") when it is
    missing, a directory, unreadable, or a device, FIFO or socket."""
    refuse_nul(path, what or "path")
    path = Path(path)
    named = f"{what} {shown_path(path)}" if what else shown_path(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"{named} does not exist") from None
    except OSError as exc:
        raise path_error(path, exc, what) from None
    if stat.S_ISDIR(mode):
        raise DataError(f"{named} is a directory; give a file")
    if not stat.S_ISREG(mode):
        raise DataError(f"{named} is {kind_of(mode)}, not a file: mlmh reads only regular files (a device or pipe may never "
                        "end, or never start); give a file")
    return path
