"""Whole-harness figures: how long ``mlmh --help`` takes, and how eval time grows with documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from mlmh.bench.models import build_bench_model
from mlmh.bench.ratios import safe_ratio
from mlmh.bench.timing import command_wall_time, measure_interleaved, mlmh_command


def measure_startup(*, runs: int = 7) -> dict[str, Any]:
    """Wall time of ``mlmh --help`` in a fresh process (what a user waits for), median of ``runs``."""
    timing = command_wall_time([*mlmh_command(), "--help"], runs=runs)
    return {"seconds": timing.seconds, "runs": timing.runs, "command": "mlmh --help"}


def scaling_config(model_dirs: dict[str, Path], documents: int):
    """The tiny eval of the scaling ratio: PAN sample, random tiny MLM and CLM, 3 samplers, BLEU + ROUGE."""
    from mlmh.config.presets import from_table

    table = {
        "dataset": "pan",
        "models": [f"hf-mlm:path={model_dirs['mlm']}", f"hf-clm:path={model_dirs['clm']}"],
        "maskings": ["random:ratio=0.3"],
        "samplers": ["one-shot", "mask-predict:steps=4", "clm-infill"],
        "metrics": ["bleu", "rouge"],
        "tasks": [],
        "seeds": [0],
        "limit": documents,
        "batch_size": 8,
    }
    # each timed run builds (and so checks) its own plan, as every run does: none is built here to be discarded
    return from_table(table, name="bench-scaling", source="mlmh bench (scaling)")


def prepare_scaling_models(size: str, out: Path) -> dict[str, Path]:
    """Random ``size`` MLM and CLM sharing a WordPiece vocabulary trained on the PAN sample's train split."""
    from mlmh.registry import get_registry
    from mlmh.training.config import SIZES
    from mlmh.training.models import train_tokenizer

    corpus = get_registry().build("dataset", "pan").load(None)
    tokenizer = train_tokenizer(corpus.texts("train"), SIZES[size].vocab_size)
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    window = max(SIZES[size].seq_len, 512)
    paths = {}
    for kind in ("mlm", "clm"):
        path = Path(out) / f"scaling-{size}-{kind}"
        path.mkdir(parents=True, exist_ok=True)
        build_bench_model(kind, size, tokenizer, window=window).save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[kind] = path
    return paths


def measure_scaling(work_dir: Path, *, documents: int = 12, runs: int = 3, size: str = "tiny") -> dict[str, Any]:
    """Eval wall time for 2x documents over 1x, via the real runner, without the sample cache.

    Both runs load the same models (random weights, so no training) and the same dataset; interleaved.
    """
    from mlmh.config.plan import build_plan
    from mlmh.run.runner import run_experiment

    work_dir = Path(work_dir)
    models = prepare_scaling_models(size, work_dir)
    counter = iter(range(10_000))

    def run(n: int) -> Callable[[], Any]:
        config = scaling_config(models, n)
        return lambda: run_experiment(build_plan(config), output_path=work_dir / f"run-{n}-{next(counter)}",
                                      use_cache=False)

    timings = measure_interleaved({"1x": run(documents), "2x": run(2 * documents)}, runs=runs, warmup=1)
    return {
        "documents": documents,
        "seconds_1x": timings["1x"].seconds,
        "seconds_2x": timings["2x"].seconds,
        "ratio": safe_ratio(timings["2x"].seconds, timings["1x"].seconds),
        "runs_1x": timings["1x"].runs,
        "runs_2x": timings["2x"].runs,
        "setup": "pan sample, random tiny hf-mlm + hf-clm, random:ratio=0.3, one-shot / mask-predict:steps=4 / "
                 "clm-infill, bleu + rouge, no tasks, sample cache off",
    }
