"""``mlmh bench --training``: training tokens per CPU-second of each kind, in float32 and in bf16 autocast.

The trainings of a run are the bulk of a cold paper preset (docs/PERFORMANCE.md). This workload trains each kind
(MLM, CLM, seq2seq) from the paper preset's two starts (the pretrained MiniLM: 8 x 64-token steps, frozen word
embeddings, the output layer cut to the corpus's tokens; a tiny model from scratch: 16 x 256-token steps) on the
bundled PAN sample's train split, with :func:`mlmh.training.train` itself, on one torch thread (as a run trains them),
once in float32 and once in bf16 autocast (:func:`mlmh.training.loop.autocast`), interleaved: float32, bf16, then
again in the opposite order, so that a change in machine load hits both alike. Only the steps are timed: from the
progress event of the second step to that of the last but one (process CPU time, the one thread), never the load,
the tokenizer, a validation pass or the card. A CPU without bf16 units runs bf16 emulated (``bf16_units`` in the
report says which; :func:`mlmh.machine.devices.cpu_bf16`).
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

#: the starts timed, with the paper preset's shapes of each
STARTS: dict[str, dict[str, Any]] = {"minilm": dict(init="minilm", seq_len=64, batch_size=8, freeze_embeddings=True),
          "scratch": dict(seq_len=256)}
KINDS = ("mlm", "clm", "seq2seq")
PRECISIONS = ("float32", "bf16")
#: steps per training (the first and the last are not timed) and trainings per precision (interleaved)
STEPS, ROUNDS = 10, 2


def time_training(kind: str, start: str, precision: str, texts: list[str], validation: list[str], steps: int = STEPS,
                  work: Path | None = None, dataset: str = "") -> dict[str, float]:
    """Tokens and CPU seconds of ``steps`` - 2 training steps of ``kind`` from ``start`` in ``precision``."""
    from mlmh.training.config import make_config
    from mlmh.training.loop import train

    config = make_config(kind, max_steps=steps, eval_every=steps, patience_tokens=0, precision=precision,
                         **STARTS[start])
    marks: dict[int, tuple[float, int]] = {}

    def progress(event: dict[str, Any]) -> None:
        if event.get("stage") == "train":
            marks[event["step"]] = (time.process_time(), event["tokens"])

    with tempfile.TemporaryDirectory(prefix="mlmh-bench-training-") as tmp:
        train(texts, config, Path(work or tmp) / f"{start}-{kind}-{precision}", validation_texts=validation,
              dataset=dataset, progress=progress, threads=1)
    (t0, n0), (t1, n1) = marks[1], marks[steps - 1]
    return {"tokens": n1 - n0, "cpu_seconds": round(t1 - t0, 4)}


def run_training_bench(kinds: tuple[str, ...] = KINDS, starts: tuple[str, ...] = tuple(STARTS), steps: int = STEPS,
                       rounds: int = ROUNDS, progress: Callable[[str, int, int], None] | None = None) -> dict[str, Any]:
    """Per start and kind: tokens per CPU-second in float32 and bf16 (the rounds pooled), and bf16's gain."""
    from mlmh.bench.machine import describe
    from mlmh.machine.devices import cpu_bf16
    from mlmh.registry import get_registry

    from mlmh.config.declared import default_dataset

    corpus = get_registry().build("dataset", default_dataset()).load(None)
    from mlmh.data.splits import with_validation

    corpus = with_validation(corpus)
    texts, validation = corpus.texts("train"), corpus.texts("validation")
    rows: list[dict[str, Any]] = []
    gains: list[float] = []
    total, done = len(starts) * len(kinds) * rounds * len(PRECISIONS), 0
    for start in starts:
        for kind in kinds:
            runs: dict[str, list[dict[str, float]]] = {p: [] for p in PRECISIONS}
            for round_ in range(rounds):
                for precision in PRECISIONS if round_ % 2 == 0 else PRECISIONS[::-1]:
                    if progress:
                        progress(f"{start} {kind} {precision}", done, total)
                    runs[precision].append(time_training(kind, start, precision, texts, validation, steps,
                                                                   dataset=corpus.dataset))
                    done += 1
            rate = {p: round(sum(r["tokens"] for r in runs[p]) / sum(r["cpu_seconds"] for r in runs[p]), 1)
                    for p in PRECISIONS}
            spread = {p: [round(r["tokens"] / r["cpu_seconds"], 1) for r in runs[p]] for p in PRECISIONS}
            gains.append(round(rate["bf16"] / rate["float32"], 3))
            rows.append({"start": start, "kind": kind, "tokens_per_cpu_second": rate, "per_round": spread,
                         "bf16_gain": gains[-1],
                         "steps_timed": steps - 2, "rounds": rounds})
    return {"training": rows, "machine": describe(), "bf16_units": cpu_bf16(),
            "method": f"mlmh.training.train on the bundled PAN sample's train split, one torch thread; {steps - 2} "
                      f"steps timed per training (process CPU time), {rounds} trainings per precision interleaved",
            "median_gain": round(statistics.median(gains), 3) if gains else None}
