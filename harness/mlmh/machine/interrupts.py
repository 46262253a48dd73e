"""Whether a stop is a real interrupt: the one test behind every "interrupted" message.

Why: a crash that surfaces as ``KeyboardInterrupt`` (a library thread that dies and interrupts the main one) or
as a ``BaseException`` that is not an ``Exception`` (a Rust panic in the tokenizers) was reported with the
Ctrl-C hint, as if the user had stopped the run. Only a signal that really arrived (SIGINT from Ctrl-C, SIGTERM
from a kill), recorded by the handlers :func:`watch` installs, makes a stop an interrupt; anything else is a
crash and is said as one.
"""

from __future__ import annotations

import contextlib
import signal
from typing import Any, Iterator

_arrived: list[int] = []  # the signals received while watched, in order
_watched: list[bool] = [False]  # whether the latest outermost watch could install its handlers


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be, so a killed run stops the same way and prints the same hint."""


def _on_signal(signum: int, frame: Any) -> None:
    _arrived.append(signum)
    raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()


@contextlib.contextmanager
def watch(*signals: int) -> Iterator[None]:
    """Record ``signals`` (default SIGINT) as they arrive and raise them as interrupts while inside; outside the
    main thread (a test runner's worker) nothing is installed and every KeyboardInterrupt counts as real."""
    wanted = signals or (signal.SIGINT,)
    outermost = signal.getsignal(signal.SIGINT) is not _on_signal
    if outermost:
        _arrived.clear()  # a signal of an earlier command (in this process) is not this one's
    previous: dict[int, Any] = {}
    try:
        for signum in wanted:
            previous[signum] = signal.signal(signum, _on_signal)
    except ValueError:  # not the main thread
        pass
    if outermost:
        _watched[0] = bool(previous)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def is_interrupt(exc: BaseException) -> bool:
    """Whether ``exc`` is a stop the user asked for: a KeyboardInterrupt after a watched signal arrived (or with
    no watch installed), never a crash dressed as one."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    return bool(_arrived) or not _watched[0]


def crash_line(exc: BaseException) -> str:
    """A crash that is not an ``Exception`` (or an interrupt no signal sent), said as one line."""
    what = type(exc).__name__
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else "no message"
    return (f"the process stopped on {what} ({detail}) with no Ctrl-C or kill signal: a crash inside a library, "
            "not an interrupt; run with --debug for the traceback")
