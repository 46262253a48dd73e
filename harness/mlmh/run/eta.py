"""How long a stage has left: the one estimator every progress face uses (plain log lines, Rich bars,
the TUI's progress panel, ``mlmh train``'s bar).

The rate is measured over the work itself: counted from the first step observed (so the start-up before it,
loading a model or spawning a worker, is never read as the time of step 1), over a recent window (so an early
slow patch fades), and only once a few steps have run. Work that arrives at once from a cache restarts the
measurement instead of counting as fast work.
"""

from __future__ import annotations

from collections import deque

#: no estimate until this many steps have run past the first one observed
MIN_STEPS = 3
#: the rate is measured over about the last this many seconds of progress
WINDOW_S = 60.0


class Eta:
    """Seconds left in one stage, from the progress counts it is given and the times they came at."""

    def __init__(self, *, min_steps: int = MIN_STEPS, window_s: float = WINDOW_S) -> None:
        self.min_steps = min_steps
        self.window_s = window_s
        self.points: deque[tuple[float, int]] = deque()  # (time, completed), oldest first
        self.base: int | None = None  # completed count the measurement started from
        self.completed = 0
        self.total: int | None = None

    def observe(self, completed: int, total: int | None, now: float, *, restart: bool = False) -> None:
        """One progress report at time ``now``. ``restart`` (work that came at once from a cache) starts
        the measurement again from here."""
        self.total = total
        if completed <= 0 and not restart:  # nothing done yet (a worker saying it started): no step to count from
            return
        if restart or self.base is None or completed < self.completed:
            self.points.clear()
            self.base = completed
        self.completed = completed
        self.points.append((now, completed))
        # keep one point at or before the window's start, so the window always spans the recent past
        while len(self.points) > 2 and self.points[1][0] <= now - self.window_s:
            self.points.popleft()

    def remaining(self) -> float | None:
        """Seconds left, 0 when done, None with no total or while too few steps have been measured."""
        if not self.total:
            return None
        if self.completed >= self.total:
            return 0.0
        if self.base is None or self.completed - self.base < self.min_steps or len(self.points) < 2:
            return None
        (start, done_then), (end, done_now) = self.points[0], self.points[-1]
        if end <= start or done_now <= done_then:
            return None
        return (self.total - self.completed) * (end - start) / (done_now - done_then)


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
