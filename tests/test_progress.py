"""Progress where output is not a terminal: plain lines per stage and about every 10 %, with counts and an ETA."""

from __future__ import annotations

import io

from mlmh.events import Message, Progress, StageFinished, StageStarted
from mlmh.progress import PlainListener, RichListener, progress_listener


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_log_file_gets_a_line_per_stage_and_per_tenth_with_counts_and_eta():
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    listen(StageStarted(stage="generate", total=200))
    listen(Progress(stage="generate", completed=100, total=200, info={"cached": 100}))  # from the cache, at once
    for done in range(101, 201):
        clock.now += 1.0
        listen(Progress(stage="generate", completed=done, total=200, info={"condition": "c1"}))
    listen(StageFinished(stage="generate", seconds=100.0))
    lines = out.getvalue().splitlines()
    assert lines[0] == "[generate] started (200 to do)"
    progress = [line for line in lines if line.startswith("[generate] ") and "/200" in line]
    # the cached half at once, then one line per further tenth: 50 %, 60 %, ..., 100 %
    assert [p.split()[1] for p in progress] == [f"{n}/200" for n in (100, 120, 140, 160, 180, 200)]
    assert "100 cached" in progress[0] and "eta" not in progress[0]
    # 20 samples took 20 s since the cached ones: 80 left at 1 per second
    assert "elapsed 20.0s" in progress[1] and "eta 1m20s" in progress[1]
    assert lines[-1] == "[generate] done in 1m40s"


def test_training_lines_name_the_model_and_messages_are_not_wrapped():
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    for step in range(1, 11):
        clock.now += 2.0
        listen(Progress(stage="train", completed=step, total=10, info={"model": "trained-mlm:size=tiny", "loss": 3.0}))
    note = "trained-clm: skipped sampler(s) " + ", ".join(f"sampler-{n}" for n in range(30))
    listen(Message(level="warning", text=note))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[train:trained-mlm:size=tiny] 1/10 (10%)") and "loss 3.000" in lines[0]
    assert "eta 16.0s" in lines[1]  # 1 step in 2 s since the first line, 8 left
    assert len(lines) == 11 and lines[-1] == "warning: " + note


def test_without_a_total_a_line_at_most_every_half_minute():
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    for done in range(1, 100):
        clock.now += 1.0
        listen(Progress(stage="train", completed=done, total=None, info={"model": "m"}))
    assert [line.split()[1] for line in out.getvalue().splitlines()] == ["31", "61", "91"]  # the first came at 1 s


def test_a_terminal_gets_bars_anything_else_plain_lines():
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(progress_listener(io.StringIO()), PlainListener)
    assert isinstance(progress_listener(Terminal()), RichListener)
