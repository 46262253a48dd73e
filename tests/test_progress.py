"""Progress where output is not a terminal: plain lines per stage and about every 10 %, with counts and an ETA."""

from __future__ import annotations

import io

import pytest

from mlmh.events import Message, Progress, StageFinished, StageStarted
from mlmh.run.eta import Eta, eta_text
from mlmh.run.progress import PlainListener, RichListener, elide, progress_listener


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


def test_training_lines_name_the_model_and_messages_wrap_at_spaces_to_fit_a_log():
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    for step in range(1, 11):
        clock.now += 2.0
        listen(Progress(stage="train", completed=step, total=10,
                        info={"model": "trained-mlm:size=tiny", "label": "mlm (scratch)", "loss": 3.0}))
    note = "trained-clm: skipped sampler(s) " + ", ".join(f"sampler-{n}" for n in range(30))
    listen(Message(level="warning", text=note))
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("[train:mlm (scratch)] 1/10 (10%)") and "loss 3.000" in lines[0]
    assert all("eta" not in line for line in lines[:3])  # no estimate until a few steps have run
    assert "eta 12.0s" in lines[3]  # 3 steps in 6 s since the first, 6 left
    said = [line for line in lines if not line.startswith("[train")]
    assert len(said) > 1 and all(len(line) <= 150 for line in said) and said[1].startswith("  sampler-")
    assert " ".join(line.strip() for line in said) == "warning: " + note  # every spec whole, none split


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


def test_start_up_before_the_first_step_is_not_read_as_its_time():
    """A training worker says it started (step 0), loads for minutes, then steps at 0.1 s: the ETA is the
    steps' own rate, never the start-up spread over 500 steps (the demo once printed eta 15h19m)."""
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    listen(Progress(stage="train", completed=0, total=None, info={"model": "trained-seq2seq", "state": "started"}))
    clock.now += 111.0  # spawning, importing torch, building the tokenizer
    for step in range(1, 101):
        listen(Progress(stage="train", completed=step, total=500, info={"model": "trained-seq2seq"}))
        clock.now += 0.1
    lines = out.getvalue().splitlines()
    assert "1/500" in lines[0] and "eta" not in lines[0]
    assert lines[-1].startswith("[train:trained-seq2seq] 100/500") and "eta 40.0s" in lines[-1]


def test_a_stage_after_its_parts_is_not_timed_by_them():
    """The models stage waits for its trainings, then loads models in seconds: never 'one model per half hour'
    (the demo once printed 1/3 ... eta 59m54s after all trainings). Each model's load is one-off work, no rate
    for the next (a log once read "[mask] 6/7 eta 0.3s", then "7/7 elapsed 14.2s"): no ETA at all."""
    out, clock = io.StringIO(), Clock()
    listen = PlainListener(out, clock=clock)
    listen(StageStarted(stage="models", total=8))
    clock.now += 1800.0  # the trainings
    for done in range(1, 9):
        listen(Progress(stage="models", completed=done, total=8, info={"model": f"m{done}"}))
        clock.now += 2.0
    progress = [line for line in out.getvalue().splitlines() if "/8" in line]
    assert len(progress) == 8 and all("eta" not in line for line in progress)
    assert "4/8" in progress[3] and "elapsed 30m06s" in progress[3]  # elapsed stays the stage's whole time


def test_a_condition_is_named_by_its_models_label_and_long_specs_are_elided_in_the_middle():
    model = "trained-mlm:batch_size=8,budget=targets,init=minilm,max_passes=6,patience_tokens=60000,seq_len=64"
    spec = f"{model} | span:ratio=0.30,mean_span=3 | mlm-gibbs:temperature=0.9,top_k=50 | seed=0"
    out = io.StringIO()
    listen = PlainListener(out, clock=Clock())
    listen(Progress(stage="models", completed=1, total=1, info={"model": model, "label": "mlm (minilm)"}))
    listen(Progress(stage="generate", completed=1, total=1, info={"condition": spec}))
    line = out.getvalue().splitlines()[-1]
    assert line.endswith("mlm (minilm) | span:ratio=0.30,mean_span=3 | mlm-gibbs:temperature=0.9,top_k=50 | seed=0")
    listen(Progress(stage="metrics", completed=1, total=1, info={"condition": "x" * 300, "metric": "bleu"}))
    line = out.getvalue().splitlines()[-1]
    assert len(line) < 160 and "…" in line and "x" * 40 in line
    short = elide(spec, 40)
    assert len(short) == 40 and short.startswith("trained-mlm:batch_s") and short.endswith("| seed=0")
    assert elide("short", 40) == "short"


def test_the_estimate_is_the_recent_rate_over_a_window():
    eta, now = Eta(window_s=10.0), 0.0
    for step in range(1, 21):  # slow at first: 5 s a step
        eta.observe(step, 200, now)
        now += 5.0
    for step in range(21, 41):  # then 1 s a step
        eta.observe(step, 200, now)
        now += 1.0
    assert eta.remaining() == pytest.approx(160.0)  # the last 10 s ran at 1 step/s: the slow start has faded
    eta.observe(100, 200, now, restart=True)  # a jump from a cache: measured again from here
    assert eta.remaining() is None
    eta.observe(200, 200, now)
    assert eta.remaining() == 0.0
    assert Eta().remaining() is None and eta_text(None) == "eta …" and eta_text(90.0) == "eta 1m30s"
