"""Where a command reads a file a user names (``mlmh score --pred``, a rating sheet, a dataset's files, a run's
files): the one rule of every input path. Only a regular file is read: a device (``/dev/zero`` never ends,
``/dev/null`` is always empty), a FIFO (blocks until someone writes) or a socket is refused in one line naming the
path and what it is, before a byte is read, so no input can make mlmh read until the kernel kills it."""

from __future__ import annotations

import stat
from pathlib import Path

from mlmh.errors import DataError

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


def check_input_file(path: str | Path, what: str = "") -> Path:
    """``path`` as a regular file to read; a DataError naming it (``what`` first, e.g. "rating sheet") when it is
    missing, a directory, unreadable, or a device, FIFO or socket."""
    path = Path(path)
    named = f"{what} {path}" if what else str(path)
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise DataError(f"{named} does not exist") from None
    except OSError as exc:
        raise DataError(f"{named} cannot be read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(mode):
        raise DataError(f"{named} is a directory; give a file")
    if not stat.S_ISREG(mode):
        raise DataError(f"{named} is {kind_of(mode)}, not a file: mlmh reads only regular files (a device or pipe may never "
                        "end, or never start); give a file")
    return path
