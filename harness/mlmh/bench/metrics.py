"""Metric throughput: pairs scored per second by each metric, built through the registry (so a plugin's
replacement of a builtin metric is what gets timed); and the tokens per CPU-second of the two models a run
scores with, BERTScore's encoder and gen-ppl's pretrained judge."""

from __future__ import annotations

from typing import Any, Callable, Sequence

from mlmh.bench.timing import measure, measure_interleaved


def metric_pairs(n: int, *, words: int = 60, variant: int = 0) -> list:
    """``n`` prediction/reference pairs from the PAN sample: each reference with every 4th word swapped.

    Another ``variant`` swaps in words of another text: new predictions for the same references, as
    the next condition of a run brings.
    """
    from mlmh.components import ScoringItem
    from mlmh.registry import get_registry

    texts = [" ".join(d.text.split()[:words]) for d in get_registry().build("dataset", "pan").load(None).documents]
    pairs = []
    for i in range(n):
        reference = texts[i % len(texts)].split()
        donor = texts[(i + 1 + variant) % len(texts)].split()
        prediction = [donor[j % len(donor)] if j % 4 == 3 else w for j, w in enumerate(reference)]
        pairs.append(ScoringItem(prediction=" ".join(prediction), reference=" ".join(reference)))
    return pairs


#: the names --metrics takes; "judge" is gen-ppl under its pretrained judge (JUDGE_SPEC), timed where installed
METRIC_NAMES = ("bleu", "rouge", "meteor", "bertscore", "judge")
JUDGE_SPEC = "gen-ppl:judge=gemma-3-270m"
#: the judge's workload: a few dozen sentences (this many PAN sentences of JUDGE_WORDS words and their references)
JUDGE_PAIRS, JUDGE_WORDS = 16, 20


def measure_metric_throughput(names: Sequence[str] = METRIC_NAMES, *, pairs: int = 64, runs: int = 5) -> dict[str, Any]:
    """Pairs scored per second by each metric plugin (including its bootstrap CI), median of ``runs``.

    The warm-up run pays one-time costs (model loading for BERTScore, WordNet for METEOR).
    """
    from mlmh.registry import get_registry

    items = metric_pairs(pairs)
    out: dict[str, Any] = {}
    for name in names:
        if name == "judge":
            out[name] = judge_figures(runs=min(runs, 3))
            continue
        try:
            metric = get_registry().build("metric", name)
            timing = measure(cold_score(metric, items), runs=runs, warmup=1)
            has_encoder = callable(getattr(metric, "encoder", None))  # the builtin bertscore's; a replacement may lack it
            extra = bertscore_cached_figures(metric, pairs, runs=runs) if name == "bertscore" and has_encoder else {}
        except Exception as exc:  # a metric that cannot run here (e.g. WordNet missing) is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        errors = [r.error for r in timing.result if getattr(r, "error", None)]
        out[name] = {"pairs": pairs, "seconds": timing.seconds, "pairs_per_s": pairs / timing.seconds, "runs": timing.runs,
                     **extra}
        if errors:
            out[name]["error"] = errors[0]
    return out


def cold_score(metric, items: Sequence[Any]) -> Callable[[], Any]:
    """``metric`` scoring ``items`` with what it keeps between calls forgotten first
    (:meth:`mlmh.components.Metric.forget_caches`; BERTScore's embeddings): every text is new to it."""

    def score() -> Any:
        metric.forget_caches()
        return metric.score(items, seed=0)

    return score


def bertscore_cached_figures(metric, pairs: int, *, runs: int) -> dict[str, Any]:
    """BERTScore as a run's later conditions see it: references embedded already, predictions new each run.

    Interleaved with the bare encoder on the same new predictions (the same length-sorted batches,
    ``torch.inference_mode``), so ``encoder_pairs_per_s`` bounds what any implementation could reach here.
    """
    import itertools

    import torch
    from bert_score.utils import padding, sent_encode

    encoder = metric.encoder()  # bert-score's tokenizer and model, as the metric loaded them
    batch_size = metric.params["batch_size"]
    variants = itertools.count(1)
    tokens = []

    def cached() -> Any:
        return metric.score(metric_pairs(pairs, variant=next(variants)), seed=0)

    def bare_encoder() -> None:
        ids = sorted((sent_encode(encoder.tokenizer, item.prediction) for item in metric_pairs(pairs, variant=next(variants))),
                     key=len, reverse=True)
        tokens.append(sum(len(i) for i in ids))
        with torch.inference_mode():
            for start in range(0, len(ids), batch_size):
                padded, _, mask = padding(ids[start:start + batch_size], encoder.tokenizer.pad_token_id)
                encoder.model(padded, attention_mask=mask)

    timings = measure_interleaved({"cached": cached, "encoder": bare_encoder}, runs=runs)
    return {"pairs_per_s_references_cached": pairs / timings["cached"].seconds,
            "encoder_pairs_per_s": pairs / timings["encoder"].seconds,
            "encoder_tokens_per_cpu_s": tokens[-1] / timings["encoder"].cpu_seconds,
            "references_cached_runs": timings["cached"].runs}


def judge_figures(*, runs: int = 3) -> dict[str, Any]:
    """gen-ppl's pretrained judge: its load (from mlmh's cache, converted there first if it is not), then its
    tokens per CPU-second scoring JUDGE_PAIRS sentences and their references cold (its causal LM over every
    token, the 262k-word output layer included) in the precision and threads a run scores with;
    ``off`` with the install command where it is not installed."""
    import time

    from mlmh.registry import get_registry

    metric = get_registry().build("metric", JUDGE_SPEC)
    reason = metric.unavailable()
    if reason:
        return {"off": reason}
    start, cpu_start = time.perf_counter(), time.process_time()
    metric.score(metric_pairs(1, words=JUDGE_WORDS), seed=0)  # loads the judge once for the process
    load_seconds, load_cpu = time.perf_counter() - start, time.process_time() - cpu_start
    timing = measure(cold_score(metric, metric_pairs(JUDGE_PAIRS, words=JUDGE_WORDS)), runs=runs, warmup=0)
    tokens = sum(result.info["predicted_tokens"] for result in timing.result)
    info = timing.result[0].info
    return {"pairs": JUDGE_PAIRS, "tokens": tokens, "seconds": timing.seconds, "pairs_per_s": JUDGE_PAIRS / timing.seconds,
            "cpu_seconds": timing.cpu_seconds, "tokens_per_cpu_s": tokens / timing.cpu_seconds, "runs": timing.runs,
            "load_seconds": load_seconds, "load_cpu_seconds": load_cpu,
            "precision": info.get("precision"), "threads": info.get("threads")}
