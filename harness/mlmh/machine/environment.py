"""The machine's refusals in words: a full disk, a read-only or foreign folder, a name longer than the file system
allows, and control characters in a name echoed back. Every place that reports an OSError to the user (the CLI's
last resort, the sample cache) says it here, so the environment is named as the cause, not the file mlmh was given
("delete it" would lose a good cache on a full disk)."""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

from mlmh.machine.escape import terminal

#: below this many free bytes, a folder's disk counts as full
FULL_BELOW = 1 << 20


def printable(text: str) -> str:
    """``text`` with its control characters escaped (``\\x1b``, ``\\r``...), so a name echoed back cannot move the
    cursor, recolour the terminal or hide part of the line; newlines and tabs stay."""
    return terminal(text)


def os_error_text(exc: OSError) -> str:
    """One line for an OSError, naming the environment when it is the cause."""
    where = exc.filename if exc.filename is not None else ""
    shown = printable(os.fsdecode(where)) if where else ""
    if exc.errno == errno.ENAMETOOLONG:
        name = max((len(os.fsencode(part)) for part in Path(os.fsdecode(where)).parts), default=0) if where else 0
        return (f"a name in {shown[:120]}{'...' if len(shown) > 120 else ''} is longer than the file system allows "
                f"({name} bytes; most allow 255 per name, 4096 per path): choose a shorter name")
    if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
        return f"the disk is full (no space left{' for ' + shown if shown else ''}): free some space and run again"
    if exc.errno == errno.EROFS:
        return f"read-only file system{': ' + shown if shown else ''}: mlmh cannot write there; choose a writable place"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"permission denied{': ' + shown if shown else ''}: the file or folder is not writable (or readable) by you"
    return f"{exc.strerror or exc}{': ' + shown if shown else ''}"


def storage_problem(folder: Path) -> str | None:
    """What about ``folder`` stops mlmh from writing there: read-only (or not the user's), or a full disk; None when
    neither (then a failure is the file's own)."""
    folder = Path(folder)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"{folder} is read-only (or not writable by you)"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return None
    if free < FULL_BELOW:
        return f"the disk holding {folder} is full ({free:,} bytes free)"
    return None
