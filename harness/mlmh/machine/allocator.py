"""Memory settings of the ``mlmh`` command line: glibc's allocator and Python's garbage collector.

Never applied on import: a library user keeps theirs.
"""

from __future__ import annotations

import atexit
import ctypes
import gc
import os
import sys

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
_tuned = False
_collector_tuned = False
YOUNG_COLLECTION_EVERY = 20_000  # allocations between young-generation collections (Python's default: 700)


def tune_command_line_process() -> None:
    """Everything the ``mlmh`` command line and ``mlmh bench`` run with (once per process)."""
    retain_freed_memory()
    collect_garbage_rarely()


def collect_garbage_rarely() -> None:
    """Collect young objects every 20,000 allocations, and skip the collection at exit (once per process).

    A run holds a few hundred thousand long-lived objects (torch and transformers modules, the run's
    generations with their step traces); Python's default of a young collection every 700 allocations
    promoted and rescanned them again and again, and the interpreter's last collection at exit walked
    them all: about 3 of 15 CPU seconds of a warm pan run (docs/PERFORMANCE.md). Freezing at exit (the
    last atexit call) leaves the final collection nothing to scan; the process's memory goes back to the
    OS whole. Files are closed by the code that opens them, never by a collector's finaliser.
    """
    global _collector_tuned
    if _collector_tuned:
        return
    _collector_tuned = True
    _, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_COLLECTION_EVERY, middle, old)
    atexit.register(gc.freeze)  # registered first, so it runs after every later atexit call


def retain_freed_memory() -> None:
    """Ask glibc's allocator to keep freed blocks below 64 MiB in the heap (once per process).

    Every generation pass allocates and frees the same large blocks (logits of batch x length x
    vocab). With glibc's adaptive defaults the sampler's smaller allocations between passes made those
    blocks return to the OS and come back as fresh pages: about 900 first-touch page faults per
    mask-predict pass at batch 8 (bare passes: none), a tenth of its time at size tiny. The cost: up to
    256 MiB of freed memory stays with the process, which is why only the CLI entry (``mlmh.cli.main``)
    and ``mlmh bench`` call this. Off glibc, or when MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_
    are set in the environment, nothing changes.
    """
    global _tuned
    if _tuned:
        return
    _tuned = True
    if not sys.platform.startswith("linux") or any(
            name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl)
        return
    mallopt(_M_MMAP_THRESHOLD, 64 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)
