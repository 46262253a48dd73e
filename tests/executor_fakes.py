"""A model and a sampler for the executor tests that log which process loaded and ran what, and can
kill a worker once.

``MLMH_TEST_UNIT_LOG=<dir>``: each ``generate`` call appends its process id to ``<dir>/calls``, each
model load to ``<dir>/loads``.
``MLMH_TEST_CRASH_AFTER=K``: the first call to see K or more calls logged (``<dir>/crashed`` created
atomically) ends its process with ``os._exit``, as an out-of-memory kill would: mid-run, once.
``MLMH_TEST_UNIT_ERROR=<message>``: every call raises :class:`~mlmh.errors.DataError` with it.
The variables start with ``MLMH_`` so the executors forward them to every worker, Ray's included.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import runner_fakes
from mlmh import hookimpl
from mlmh.errors import DataError


def _log(name: str) -> Path | None:
    """Append this process id to ``<log dir>/name``; the file, or None when not logging."""
    log = os.environ.get("MLMH_TEST_UNIT_LOG")
    if not log:
        return None
    path = Path(log) / name
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)  # one write per line: atomic across processes
    os.write(fd, f"{os.getpid()}\n".encode())
    os.close(fd)
    return path


class LoggedMLM(runner_fakes.FakeMLM):
    name = "logged-mlm"

    def load(self, context):
        _log("loads")
        return super().load(context)


class LoggedFill(runner_fakes.FakeFill):
    name = "logged-fill"

    def generate(self, adapter, items):
        if os.environ.get("MLMH_TEST_UNIT_ERROR"):
            raise DataError(os.environ["MLMH_TEST_UNIT_ERROR"])
        calls = _log("calls")
        if calls is not None:
            after = int(os.environ.get("MLMH_TEST_CRASH_AFTER", "0"))
            if after and len(calls.read_text().split()) >= after:
                try:
                    os.close(os.open(calls.with_name("crashed"), os.O_WRONLY | os.O_CREAT | os.O_EXCL))
                except FileExistsError:
                    pass
                else:
                    os._exit(3)
        return super().generate(adapter, items)


@hookimpl
def register_models(register):
    register(LoggedMLM())


@hookimpl
def register_samplers(register):
    register(LoggedFill())


def install() -> None:
    """Register the runner fakes and this module (as entry points would)."""
    from mlmh.plugins.plugin_manager import get_plugin_manager

    runner_fakes.install()
    pm = get_plugin_manager()
    if not pm.is_registered(sys.modules[__name__]):
        pm.register(sys.modules[__name__], name="executor-fakes")
