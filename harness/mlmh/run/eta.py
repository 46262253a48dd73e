"""How long a stage has left: the one estimator every progress face uses (plain log lines, Rich bars,
the TUI's progress panel, ``mlmh train``'s bar).

The rate is measured over the work itself: counted from the first step observed (so the start-up before it,
loading a model or spawning a worker, is never read as the time of step 1), over a recent window (so an early
slow patch fades), and only once a few steps have run. One-off work is no rate: the first step of each kind
(the first use of a metric, which may load its model or convert a judge; a model's first batch) is left out of
it. Work that arrives at once from a cache restarts the measurement instead of counting as fast work, and so
does a change in what the machine gives the stage (a training beside it that ends, :meth:`Eta.restart`).
"""

from __future__ import annotations

from collections import deque
from typing import Hashable

#: no estimate until this many steps have been measured past the first one observed
MIN_STEPS = 3
#: the rate is measured over about the last this many seconds of progress
WINDOW_S = 60.0


class Eta:
    """Seconds left in one stage, from the progress counts it is given and the times they came at."""

    def __init__(self, *, min_steps: int = MIN_STEPS, window_s: float = WINDOW_S) -> None:
        self.min_steps = min_steps
        self.window_s = window_s
        self.steps: deque[tuple[float, int, float]] = deque()  # (time it ended, items, seconds) of each counted step
        self.last: float | None = None  # when the last report came; None: the measurement starts at the next one
        self.base: int | None = None  # the completed count the measurement started from
        self.completed = 0
        self.total: int | None = None
        self.kinds: set[Hashable] = set()  # the kinds of work already seen (their one-off work done)

    def observe(self, completed: int, total: int | None, now: float, *, restart: bool = False,
                kind: Hashable | None = None) -> None:
        """One progress report at time ``now``. ``restart`` (work that came at once from a cache) starts the
        measurement again from here; ``kind`` (a metric, a model) is what the step did: the first step of each
        kind carries its one-off work and is not counted in the rate."""
        self.total = total
        if completed <= 0 and not restart:  # nothing done yet (a worker saying it started): no step to count from
            return
        first = kind is not None and kind not in self.kinds
        if kind is not None:
            self.kinds.add(kind)
        if restart or self.last is None or completed < self.completed:
            self.steps.clear()
            self.completed, self.last, self.base = completed, now, completed
            return
        if completed == self.completed:  # the same count again: its time goes to the next step
            return
        if not first:
            self.steps.append((now, completed - self.completed, now - self.last))
        self.completed, self.last = completed, now
        # keep the steps of the window, and never fewer than an estimate needs
        while self.steps and self.steps[0][0] <= now - self.window_s and self._items() - self.steps[0][1] >= self.min_steps:
            self.steps.popleft()

    def restart(self) -> None:
        """Measure again from the next report: the pace of the work changed (a training beside it ended)."""
        self.steps.clear()
        self.last = None

    def _items(self) -> int:
        return sum(items for _, items, _ in self.steps)

    def remaining(self) -> float | None:
        """Seconds left, 0 when done, None with no total or while too few steps have been measured."""
        if not self.total:
            return None
        if self.completed >= self.total:
            return 0.0
        items = self._items()
        if items < self.min_steps:
            return None
        return (self.total - self.completed) * sum(seconds for _, _, seconds in self.steps) / items


def eta_text(seconds: float | None) -> str:
    """``eta 1m20s``, or ``eta …`` while there is no estimate yet."""
    return "eta …" if seconds is None else f"eta {duration(seconds)}"


def duration(seconds: float) -> str:
    """Seconds as people read them: ``42.0s``, ``3m05s``, ``2h10m``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f}s"
    minutes, rest = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes}m{rest:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"
