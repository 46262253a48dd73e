"""Local pools of spawned worker processes that end with the process that started them.

Spawned, never forked: the driver may hold torch threads. And a driver killed with SIGKILL cannot shut
its pool down; a worker blocked writing its result to the dead driver's queue would wait forever,
holding its models in memory (the queue's read end is open in the worker too, so the write never
fails). So every worker starts with :func:`exit_with_parent`. Used by ``--workers`` and
``mlmh score --workers``.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any

#: How often a worker checks that its driver is still alive (seconds).
PARENT_CHECK_S = 1.0
#: environment a worker process takes from its driver (executors' workers, a cold run's training children): mlmh's
#: own settings (cache dir, plugins) and offline flags
FORWARDED_ENV = ("MLMH_", "HF_", "TRANSFORMERS_")


def spawn_pool(workers: int) -> Any:
    """A ``ProcessPoolExecutor`` of ``workers`` spawned processes, each ending when this process is gone."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    return ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                               initializer=exit_with_parent, initargs=(os.getpid(),))


def exit_with_parent(parent: int) -> None:
    """Pool initializer: end this process once ``parent`` is gone (this process is then re-parented).

    A daemon thread polls the parent id; what the driver stored (cached samples) stays for ``--resume``.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_CHECK_S)
        os._exit(1)

    threading.Thread(target=watch, name="mlmh-parent-watch", daemon=True).start()
