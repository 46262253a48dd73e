"""Measurement core of ``mlmh bench``: fair timings of the harness against bare model forward passes.

Why it is built this way:
- Threads are pinned (``torch.set_num_threads``) so every timing uses the same cores.
- Every timed function runs once untimed first (warm-up: allocator, kernels, lazy imports), then
  ``runs`` times; we report the median, which one noisy run cannot move.
- A ratio's numerator and denominator are measured in the same process, their runs interleaved
  (harness, bare, harness, bare, ...), so drift of the machine hits both sides alike.
- Peak memory is the process's peak resident set size (RSS) during a measurement. On Linux the peak
  (``VmHWM``) is reset before each measurement through ``/proc/self/clear_refs``; where that is not
  possible we fall back to the growth of ``resource.getrusage().ru_maxrss`` (a lower bound). torch
  allocates outside Python's heap, so ``tracemalloc`` would miss it.
- The models have random weights (speed does not depend on what they learned) and are built in memory
  from configs of matched parameter count: BERT-style MLM, GPT-2-style CLM, BART-style seq2seq.
- The bare baselines call the Hugging Face model directly with exactly the passes a sampler needs
  (e.g. T full passes for mask-predict; one prefill and one cached step per token for clm-infill),
  as a user's own loop would: ``harness time / bare time`` is the overhead the goals judge.
- A third side, the lean bare loop, does the least a sampler's work needs: the same passes with the
  output layer computed only at the positions the sampler reads (a masked LM's hidden states there
  fed to its head; a decoder prefill's last token: ``logits_to_keep``, or BART's head on it), plus an
  exact greedy choice there (softmax over the vocabulary and its max: what reporting each token's
  probability costs). The harness does the same, so ``harness / lean`` is its own cost, while
  ``harness / bare`` may fall below 1.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from mlmh.training import SPECIAL_TOKENS

# -- statistics and ratios ------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    """The median of a non-empty sequence (robust to one slow outlier run)."""
    if not values:
        raise ValueError("median of no values")
    return float(statistics.median(values))


def safe_ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``, or None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def overhead_ratio(harness_seconds: float, bare_seconds: float) -> float | None:
    """Harness time over bare forward-pass time for the same work (1.0 = no overhead)."""
    return safe_ratio(harness_seconds, bare_seconds)


def speedup_ratio(causal_seconds: float, masked_seconds: float) -> float | None:
    """How many times faster the masked LM fills the same masks than the cached causal LM."""
    return safe_ratio(causal_seconds, masked_seconds)


def batching_ratio(harness_small: float, harness_large: float, bare_small: float, bare_large: float,
                   small_batch: int, large_batch: int) -> float | None:
    """Share of the model's own batching gain that the harness keeps (1.0 = all of it).

    Gain = samples/s at the large batch over samples/s at the small batch; inputs are seconds per batch.
    """
    harness_gain = safe_ratio(large_batch / harness_large, small_batch / harness_small) if harness_large > 0 and harness_small > 0 else None
    bare_gain = safe_ratio(large_batch / bare_large, small_batch / bare_small) if bare_large > 0 and bare_small > 0 else None
    return safe_ratio(harness_gain, bare_gain)


def timing_ci(statistic: Callable[..., float | None], *cells: Sequence[Sequence[float]],
              seed: int = 0) -> tuple[float | None, float | None]:
    """95 % percentile bootstrap interval of a ratio of median timings (``statistic`` of every side's median).

    ``cells``: one sequence of run lists per cell, e.g. ``(harness_runs, bare_runs)``; ``statistic`` gets
    the medians of every list, cell by cell, in that order. The runs of one cell were interleaved, so its
    rounds are resampled whole (each harness run stays with the bare run beside it); cells are
    resampled independently. (None, None) when a cell has fewer than 2 rounds.
    """
    import numpy as np

    from mlmh.stats import DEFAULT_RESAMPLES, percentile_interval

    rng = np.random.default_rng(seed)
    medians: list[Any] = []
    for sides in cells:
        rounds = min((len(runs) for runs in sides), default=0)
        if rounds < 2:
            return None, None
        draws = rng.integers(0, rounds, size=(DEFAULT_RESAMPLES, rounds))
        medians += [np.median(np.asarray(runs[:rounds], dtype=float)[draws], axis=1) for runs in sides]
    return percentile_interval([statistic(*(float(m) for m in row)) for row in zip(*medians)])


def cell_ci(statistic: Callable[..., float | None], *sides: tuple[dict | None, str]) -> list[float | None]:
    """:func:`timing_ci` of ``statistic`` over the ``(cell, side)`` run lists (side: "harness", "bare",
    "lean"), grouped by cell in the order given; [None, None] where a cell or its runs are missing."""
    groups: dict[int, list[Sequence[float]]] = {}
    for cell, side in sides:
        runs = (cell or {}).get(f"{side}_runs")
        if not runs:
            return [None, None]
        groups.setdefault(id(cell), []).append(runs)
    return list(timing_ci(statistic, *groups.values()))


def crossover_batch(causal_rate: dict[int, float], masked_rate: dict[int, float]) -> int | None:
    """The smallest batch size at which the causal LM's samples/s exceeds the masked LM's (None if never)."""
    for batch in sorted(set(causal_rate) & set(masked_rate)):
        if causal_rate[batch] > masked_rate[batch]:
            return batch
    return None


# -- threads and memory ---------------------------------------------------------------------------


@contextmanager
def pinned_threads(threads: int) -> Iterator[int]:
    """Run the block with exactly ``threads`` intra-op torch threads; restore the old setting after."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield threads
    finally:
        torch.set_num_threads(before)


_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field_name: str) -> int | None:
    try:
        match = re.search(rf"^{field_name}:\s+(\d+)\s+kB", _STATUS.read_text(), re.MULTILINE)
    except OSError:
        return None
    return int(match.group(1)) if match else None


def _maxrss_kib() -> int:
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return usage // 1024 if sys.platform == "darwin" else usage  # bytes on macOS, KiB on Linux


class PeakMemory:
    """Peak resident memory of this process during a block, in MiB.

    ``method`` says how it was measured: "vmhwm-reset" (exact peak, Linux) or "maxrss-delta" (growth of
    the lifetime peak: 0 when the block stayed below an earlier peak).
    """

    def __init__(self) -> None:
        self.method = "vmhwm-reset" if self._can_reset() else "maxrss-delta"
        self._start_kib = 0

    @staticmethod
    def _can_reset() -> bool:
        if _status_kib("VmHWM") is None:
            return False
        try:
            _CLEAR_REFS.write_text("5")
        except OSError:
            return False
        return True

    def start(self) -> None:
        if self.method == "vmhwm-reset":
            _CLEAR_REFS.write_text("5")
            self._start_kib = _status_kib("VmRSS") or 0
        else:
            self._start_kib = _maxrss_kib()

    def peak_mib(self) -> float:
        """Peak RSS since :meth:`start` (vmhwm-reset) or growth of the lifetime peak (maxrss-delta)."""
        if self.method == "vmhwm-reset":
            return (_status_kib("VmHWM") or 0) / 1024
        return max(0, _maxrss_kib() - self._start_kib) / 1024


# -- timing ---------------------------------------------------------------------------------------


@dataclass
class Timing:
    """Median wall time of several runs of one function, with every run and the peak memory."""

    seconds: float
    runs: list[float]
    peak_mib: float
    result: Any = field(default=None, repr=False, compare=False)  # what the last run returned
    cpu_seconds: float = 0.0  # median process CPU time (all threads): robust to other processes' load


#: A sampler cell's harness and bare sides each run at least this long in all (see measure_interleaved).
CELL_SECONDS = 0.5
#: ... and on, doubling, up to this long while the overhead's 95 % interval is wider than CELL_CI_WIDTH ...
CELL_MAX_SECONDS = 2.0
CELL_CI_WIDTH = 0.04
#: ... in at most this many runs.
CELL_MAX_RUNS = 400


def measure_interleaved(functions: dict[str, Callable[[], Any]], *, runs: int = 5, warmup: int = 1,
                        memory: PeakMemory | None = None, min_seconds: float = 0.0, max_runs: int = CELL_MAX_RUNS,
                        precise: Callable[[dict[str, list[float]]], bool] | None = None,
                        max_seconds: float = 0.0) -> dict[str, Timing]:
    """Time each function ``runs`` times after ``warmup`` untimed calls, alternating between them, and
    go on until each has run ``min_seconds`` in all (at most ``max_runs`` runs): the median of 5 runs
    of a 3 ms call moved by 0.1 between bench runs, more than the margin of a goal. While ``precise``
    (given every function's run times) says no, the time each must run doubles, up to ``max_seconds``."""
    if runs < 1:
        raise ValueError("runs must be >= 1")
    memory = memory or PeakMemory()
    for fn in functions.values():
        for _ in range(warmup):
            fn()
    seconds: dict[str, list[float]] = {name: [] for name in functions}
    cpu: dict[str, list[float]] = {name: [] for name in functions}
    peaks: dict[str, float] = {name: 0.0 for name in functions}
    results: dict[str, Any] = {}
    done, target = 0, min_seconds
    while True:
        while done < runs or (done < max_runs and min(sum(seconds[name]) for name in functions) < target):
            done += 1
            for name, fn in functions.items():
                memory.start()
                start, cpu_start = time.perf_counter(), time.process_time()
                results[name] = fn()
                seconds[name].append(time.perf_counter() - start)
                cpu[name].append(time.process_time() - cpu_start)
                peaks[name] = max(peaks[name], memory.peak_mib())
        if precise is None or done >= max_runs or target >= max_seconds or precise(seconds):
            break
        target = min(2 * max(target, 1e-3), max_seconds)
    return {name: Timing(median(seconds[name]), seconds[name], peaks[name], results.get(name), median(cpu[name]))
            for name in functions}


def measure(fn: Callable[[], Any], *, runs: int = 5, warmup: int = 1, memory: PeakMemory | None = None) -> Timing:
    """Median wall time of ``fn`` over ``runs`` runs after ``warmup`` untimed ones."""
    return measure_interleaved({"fn": fn}, runs=runs, warmup=warmup, memory=memory)["fn"]


def command_wall_time(argv: Sequence[str], *, runs: int = 7, env: dict[str, str] | None = None) -> Timing:
    """Median wall time of a subprocess (e.g. ``mlmh --help``), output discarded; one untimed warm-up."""
    environment = {**os.environ, **(env or {})}

    def run() -> int:
        done = subprocess.run(list(argv), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=environment)
        if done.returncode != 0:
            from mlmh.errors import MlmhError

            raise MlmhError(f"{' '.join(argv)} exited with {done.returncode}: {done.stderr.decode()[-300:]}")
        return done.returncode

    return measure(run, runs=runs, warmup=1)


def mlmh_command() -> list[str]:
    """How to launch the installed ``mlmh`` console script (next to this Python, else ``python -m mlmh``)."""
    script = Path(sys.executable).with_name("mlmh")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mlmh"]


def as_json_ready(value: Any) -> Any:
    """Dataclasses and tuples to plain JSON types (floats rounded to 6 significant digits)."""
    if hasattr(value, "__dataclass_fields__"):
        value = asdict(value)
    if isinstance(value, dict):
        return {str(k): as_json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json_ready(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.6g}")
    return value


# -- matched random models ------------------------------------------------------------------------


#: Sizes come from :data:`mlmh.training.SIZES`: the bench times the shapes that ``mlmh train`` builds.
BENCH_SIZES = ("tiny", "small", "base")

_ONSETS = "b c d f g h j k l m n p r s t v w z".split()
_NUCLEI = "a e i o u".split()


def bench_vocabulary(size: int) -> list[str]:
    """``size - 5`` distinct pronounceable words: each is one word for split_words and one token."""
    syllables = [o + n for o in _ONSETS for n in _NUCLEI]
    words: list[str] = []
    stack = [""]
    while len(words) < size - len(SPECIAL_TOKENS):
        stack = [prefix + s for prefix in stack for s in syllables]
        words.extend(stack)
    return words[: size - len(SPECIAL_TOKENS)]


def build_bench_tokenizer(vocab_size: int):
    """A BERT-style WordPiece tokenizer whose vocabulary holds the bench words whole (1 word = 1 token)."""
    from mlmh.training import wordpiece_tokenizer

    return wordpiece_tokenizer({token: i for i, token in enumerate(SPECIAL_TOKENS + bench_vocabulary(vocab_size))})


def build_bench_model(kind: str, size: str, tokenizer, *, window: int, seed: int = 0):
    """A random-weight ``kind`` model ("mlm", "clm", "seq2seq") of training size ``size``, in eval mode.

    Uses the training module's own configs (matched parameter counts across kinds); only the position
    table is widened to ``window`` so the bench can time texts longer than training used.
    """
    import dataclasses

    import torch

    from mlmh.errors import SpecError
    from mlmh.training import SIZES, build_model

    if size not in SIZES:
        raise SpecError(f"unknown bench size '{size}' (valid: {', '.join(SIZES)})")
    shape = dataclasses.replace(SIZES[size], seq_len=max(window, SIZES[size].seq_len))
    torch.manual_seed(seed)
    return build_model(kind, shape, tokenizer).eval()


def parameter_count(model) -> int:
    """Distinct parameters (tied embeddings counted once)."""
    seen: set[int] = set()
    total = 0
    for p in model.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            total += p.numel()
    return total


def save_bench_models(size: str, out: Path, *, window: int, kinds: Sequence[str] = ("mlm", "clm", "seq2seq"),
                      seed: int = 0) -> dict[str, Path]:
    """Write random ``size`` models of each kind, with the bench tokenizer, as standard HF directories."""
    from mlmh.training import SIZES

    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tokenizer = build_bench_tokenizer(SIZES[size].vocab_size)
    paths = {}
    for kind in kinds:
        path = Path(out) / f"{size}-{kind}"
        path.mkdir(parents=True, exist_ok=True)
        build_bench_model(kind, size, tokenizer, window=window, seed=seed).save_pretrained(path)
        tokenizer.save_pretrained(path)
        paths[kind] = path
    return paths


# -- bare baselines: the model alone doing a sampler's work ---------------------------------------


def exact_choice(logits):
    """Greedy tokens with their exact probabilities, the plain PyTorch way: (probabilities, ids) of the
    softmax's max over the last dimension."""
    return logits.softmax(-1).max(-1)


def bare_masked_passes(model, input_ids, passes: int, chosen: Sequence[int] | None = None, first: int = 0) -> int:
    """``passes`` full forward passes of a masked LM over the batch (mask-predict T=passes, one-shot...).

    With ``chosen`` the lean loop: pass t runs the encoder, then the MLM head (``model.cls``) on the
    hidden states of ``chosen[t]`` positions of every row from position ``first`` on (where the
    sampler's masked span starts), and an :func:`exact_choice` there.
    """
    import torch

    attention_mask = torch.ones_like(input_ids)
    with torch.inference_mode():
        for t in range(passes):
            if chosen is None:
                logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
            else:
                hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                logits = model.cls(hidden[:, first:first + chosen[t]])
                exact_choice(logits)
            del logits
    return passes


def next_token(last_logits, exact: bool):
    """The greedy next token of each row, (rows, 1): argmax, or through :func:`exact_choice`."""
    ids = exact_choice(last_logits).indices if exact else last_logits.argmax(-1)
    return ids.unsqueeze(-1)


def last_only(model, lean: bool) -> dict[str, Any]:
    """Keywords of a lean pass that reads its last token only: ``logits_to_keep=1`` where the model takes it."""
    from mlmh.adapters import keeps_logits

    return {"logits_to_keep": 1} if lean and keeps_logits(model) else {}


def bare_causal_infill(model, prefix_ids, new_tokens: int, *, use_cache: bool = True, cache_name: str = "",
                       lean: bool = False) -> int:
    """Greedy continuation of ``prefix_ids`` by ``new_tokens`` tokens, as clm-infill fills one span.

    With the cache: one prefill pass, then one single-token step per further token. Without it: the whole
    prefix is recomputed for every token. ``cache_name``: the model's cache keyword
    (:func:`mlmh.adapters.cache_argument`), looked up here when not given; a timed caller decides it
    once, outside the timing. ``lean``: each pass computes its last token's logits only (where the model
    allows) and chooses through :func:`exact_choice`. Returns the number of forward passes made.
    """
    import torch

    from mlmh.adapters import cache_argument, returned_cache

    passes = 0
    name = cache_name or cache_argument(model)
    keep = last_only(model, lean)
    with torch.inference_mode():
        if not use_cache:
            ids = prefix_ids
            for _ in range(new_tokens):
                logits = model(input_ids=ids, use_cache=False, **keep).logits
                passes += 1
                ids = torch.cat([ids, next_token(logits[:, -1], lean)], dim=1)
            return passes
        out = model(input_ids=prefix_ids, use_cache=True, **keep)
        passes += 1
        past = returned_cache(out)
        for _ in range(new_tokens - 1):
            out = model(input_ids=next_token(out.logits[:, -1], lean), **{name: past}, use_cache=True)
            passes += 1
            past = returned_cache(out)
        next_token(out.logits[:, -1], lean)  # the span's last token, as the sampler picks it
    return passes


def bare_seq2seq_infill(model, source_ids, decoder_prefix_ids, new_tokens: int, *, cache_name: str = "",
                        lean: bool = False) -> int:
    """One encoder pass, a decoder prefill of ``decoder_prefix_ids``, then one cached step per further token
    (``cache_name`` and ``lean`` as for :func:`bare_causal_infill`)."""
    import torch

    from mlmh.adapters import cache_argument, returned_cache

    name = cache_name or cache_argument(model)
    keep = last_only(model, lean)
    with torch.inference_mode():
        encoded = model.get_encoder()(input_ids=source_ids, attention_mask=torch.ones_like(source_ids))
        if lean and not keep:  # BART takes no logits_to_keep: its decoder, then its head on the last position
            out = model.model(encoder_outputs=encoded, decoder_input_ids=decoder_prefix_ids, use_cache=True)
            out.logits = model.lm_head(out.last_hidden_state[:, -1:]) + model.final_logits_bias
        else:
            out = model(encoder_outputs=encoded, decoder_input_ids=decoder_prefix_ids, use_cache=True, **keep)
        passes = 2
        for _ in range(new_tokens - 1):
            out = model(encoder_outputs=encoded, decoder_input_ids=next_token(out.logits[:, -1], lean),
                        **{name: returned_cache(out)}, use_cache=True)
            passes += 1
        next_token(out.logits[:, -1], lean)  # the span's last token, as the sampler picks it
    return passes


# -- the workload: documents, sampler cases and their bare counterparts ----------------------------


@dataclass(frozen=True)
class SamplerCase:
    """One row of the sampler table: a label, a command-line key, the sampler spec and its model kind."""

    label: str
    key: str
    spec: str
    kind: str


#: The samplers the bench times, in table order.
SAMPLER_CASES: tuple[SamplerCase, ...] = (
    SamplerCase("one-shot", "one-shot", "one-shot", "mlm"),
    SamplerCase("mask-predict T=1", "mask-predict-1", "mask-predict:steps=1", "mlm"),
    SamplerCase("mask-predict T=4", "mask-predict-4", "mask-predict:steps=4", "mlm"),
    SamplerCase("mask-predict T=10", "mask-predict-10", "mask-predict:steps=10", "mlm"),
    SamplerCase("left-to-right", "left-to-right", "left-to-right", "mlm"),
    SamplerCase("gibbs", "gibbs", "gibbs", "mlm"),
    SamplerCase("clm-infill (KV cache)", "clm-infill", "clm-infill:use_cache=true", "clm"),
    SamplerCase("clm-infill (no cache)", "clm-infill-nocache", "clm-infill:use_cache=false", "clm"),
    SamplerCase("seq2seq-infill", "seq2seq-infill", "seq2seq-infill", "seq2seq"),
)
CASE_BY_LABEL = {case.label: case for case in SAMPLER_CASES}
CASE_BY_KEY = {case.key: case for case in SAMPLER_CASES}
MASKED_CASE, CAUSAL_CASE = "mask-predict T=4", "clm-infill (KV cache)"
#: The speedup/crossover workload of the issue: batch 1, 128 masked tokens (the middle half of 256).
SPEEDUP_LENGTH = 256


def masked_span(length: int) -> range:
    """The masked words of a bench document: the middle half, one contiguous span."""
    masked = max(1, length // 2)
    start = (length - masked) // 2
    return range(start, start + masked)


def bench_items(length: int, batch: int, vocabulary: Sequence[str], *, seed: int = 0) -> list:
    """``batch`` documents of ``length`` one-token words each, the middle half masked.

    Equal lengths mean no padding, so harness and bare model process exactly the same token counts.
    """
    import numpy as np

    from mlmh.seeding import sample_seed
    from mlmh.types import MaskedItem, MaskPlan
    from mlmh.words import split_words

    rng = np.random.default_rng(seed)
    plan = MaskPlan(masking=f"bench:middle-half,length={length}", word_indices=tuple(masked_span(length)))
    items = []
    for n in range(batch):
        text = " ".join(vocabulary[i] for i in rng.integers(0, len(vocabulary), size=length))
        words = split_words(text)
        if len(words) != length:
            raise AssertionError(f"bench text split into {len(words)} words, expected {length}")
        doc_id = f"bench-{length}-{n}"
        items.append(MaskedItem(doc_id=doc_id, words=words, plan=plan, seed=sample_seed(seed, "bench", doc_id)))
    return items


def expected_forward_passes(sampler, masked_tokens: int, spans: int = 1) -> int:
    """Forward passes the sampler's algorithm needs for one batch (equal-length items, greedy).

    This is what the bare baseline does; the harness's own count is reported next to it.
    """
    name, params = sampler.name, sampler.params
    if name == "one-shot":
        return 1
    if name == "mask-predict":
        return int(params["steps"])
    if name == "confidence":
        return min(int(params["steps"]), masked_tokens) if params["threshold"] == 0 else int(params["steps"])
    if name == "left-to-right":
        return masked_tokens
    if name == "gibbs":
        wanted = int(params["steps"]) or 2 * masked_tokens
        return max(wanted, masked_tokens) if params["init"] == "mask" else wanted + 1
    if name == "clm-infill":
        return masked_tokens  # per span: a prefill that predicts the first token, then one step per token
    if name == "seq2seq-infill":
        return 1 + masked_tokens  # the encoder, then as clm-infill on the decoder
    raise ValueError(f"no forward-pass model for sampler '{name}'")


def chosen_per_pass(sampler, masked_tokens: int) -> list[int]:
    """Positions of each item the sampler chooses a token at after each forward pass (greedy, one
    span): what an exact choice reads. Mask-predict re-predicts n = N(T-t)/T at step t; the seq2seq
    encoder pass chooses nothing."""
    name, passes = sampler.name, expected_forward_passes(sampler, masked_tokens)
    if name == "one-shot":
        return [masked_tokens]
    if name == "mask-predict":
        steps = int(sampler.params["steps"])
        return [masked_tokens * (steps - t) // steps for t in range(steps)]
    if name in ("left-to-right", "gibbs", "clm-infill"):
        return [1] * passes
    if name == "seq2seq-infill":
        return [0] + [1] * (passes - 1)
    raise ValueError(f"no choice model for sampler '{name}'")


def bare_work(sampler, adapter, items: Sequence[Any], *, lean: bool = False) -> tuple[Callable[[], int], int]:
    """The bare-model function doing ``sampler``'s work on ``items``, and its forward-pass count;
    ``lean``: the lean loop (output layer only where the sampler reads, and an :func:`exact_choice` there).

    Token ids come from the adapter's own encoding, so the bare model sees the same shapes.
    """
    import torch

    from mlmh.adapters import cache_argument

    encodings = [adapter.encode(item.words, item.plan) for item in items]
    masked_tokens = len(encodings[0].masked)
    passes = expected_forward_passes(sampler, masked_tokens, spans=len(encodings[0].spans()))
    model = adapter.model
    first = encodings[0].masked[0]
    cache_name = cache_argument(model)  # decided here, not inside the timed function
    if sampler.name == "clm-infill":
        prefix = torch.tensor([e.ids[:first] for e in encodings])
        use_cache = bool(sampler.params["use_cache"])
        return (lambda: bare_causal_infill(model, prefix, masked_tokens, use_cache=use_cache,
                                           cache_name=cache_name, lean=lean)), passes
    if sampler.name == "seq2seq-infill":
        source = torch.tensor([e.source_ids for e in encodings])
        prefix = torch.tensor([e.ids[:first] for e in encodings])
        return (lambda: bare_seq2seq_infill(model, source, prefix, masked_tokens, cache_name=cache_name,
                                            lean=lean)), passes
    ids = torch.tensor([e.ids for e in encodings])
    chosen = chosen_per_pass(sampler, masked_tokens) if lean else None
    return (lambda: bare_masked_passes(model, ids, passes, chosen, first)), passes


def measure_sampler(case: SamplerCase, sampler, adapter, items: Sequence[Any], *, runs: int,
                    memory: PeakMemory | None = None) -> dict[str, Any]:
    """Harness generation vs bare forward passes (and vs the lean bare loop) for one
    sampler on one batch, interleaved runs."""
    from mlmh.generation import generate

    bare_fn, bare_passes = bare_work(sampler, adapter, items)
    lean_fn, _ = bare_work(sampler, adapter, items, lean=True)

    def harness() -> tuple[int, list]:
        generations = generate(adapter, sampler, items, batch_size=len(items))
        return adapter.forward_passes, generations

    def precise(seconds: dict[str, list[float]]) -> bool:
        low, high = timing_ci(overhead_ratio, (seconds["harness"], seconds["bare"]))
        return low is not None and high - low <= CELL_CI_WIDTH

    timings = measure_interleaved({"harness": harness, "bare": bare_fn, "lean": lean_fn}, runs=runs,
                                  memory=memory, min_seconds=CELL_SECONDS, precise=precise,
                                  max_seconds=CELL_MAX_SECONDS)
    harness_t, bare_t, lean_t = timings["harness"], timings["bare"], timings["lean"]
    harness_passes, generations = harness_t.result
    generated = sum(g.generated_tokens for g in generations)
    batch = len(items)
    runs = {"harness_runs": harness_t.runs, "bare_runs": bare_t.runs, "lean_runs": lean_t.runs}
    return {
        "sampler": case.label,
        "spec": sampler.spec,
        "kind": case.kind,
        "length": len(items[0].words),
        "batch": batch,
        "masked_tokens": generated // batch,
        "harness_seconds": harness_t.seconds,
        "bare_seconds": bare_t.seconds,
        "overhead": overhead_ratio(harness_t.seconds, bare_t.seconds),
        "overhead_ci": cell_ci(overhead_ratio, (runs, "harness"), (runs, "bare")),
        "harness_cpu_seconds": harness_t.cpu_seconds,
        "bare_cpu_seconds": bare_t.cpu_seconds,
        "overhead_cpu": overhead_ratio(harness_t.cpu_seconds, bare_t.cpu_seconds),
        "bare_lean_seconds": lean_t.seconds,
        "lean_cost": overhead_ratio(lean_t.seconds, bare_t.seconds),
        "lean_cost_ci": cell_ci(overhead_ratio, (runs, "lean"), (runs, "bare")),
        "overhead_over_lean": overhead_ratio(harness_t.seconds, lean_t.seconds),
        "forward_passes": harness_passes,
        "bare_forward_passes": bare_passes,
        "tokens_per_s": generated / harness_t.seconds,
        "samples_per_s": batch / harness_t.seconds,
        "bare_samples_per_s": batch / bare_t.seconds,
        "peak_mib": harness_t.peak_mib,
        "bare_peak_mib": bare_t.peak_mib,
        **runs,
    }


# -- whole-harness figures: startup, scaling, metric throughput -----------------------------------


def measure_startup(*, runs: int = 7) -> dict[str, Any]:
    """Wall time of ``mlmh --help`` in a fresh process (what a user waits for), median of ``runs``."""
    timing = command_wall_time([*mlmh_command(), "--help"], runs=runs)
    return {"seconds": timing.seconds, "runs": timing.runs, "command": "mlmh --help"}


def scaling_config(model_dirs: dict[str, Path], documents: int):
    """The tiny eval of the scaling ratio: PAN sample, random tiny MLM and CLM, 3 samplers, BLEU + ROUGE."""
    from mlmh.config import from_table

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
    return from_table(table, name="bench-scaling", source="mlmh bench (scaling)")


def prepare_scaling_models(size: str, out: Path) -> dict[str, Path]:
    """Random ``size`` MLM and CLM sharing a WordPiece vocabulary trained on the PAN sample's train split."""
    from mlmh.registry import get_registry
    from mlmh.training import SIZES, train_tokenizer

    corpus = get_registry().build("dataset", "pan").load(None)
    tokenizer = train_tokenizer([d.text for d in corpus.split("train")], SIZES[size].vocab_size)
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
    from mlmh.runner import run_experiment

    work_dir = Path(work_dir)
    models = prepare_scaling_models(size, work_dir)
    counter = iter(range(10_000))

    def run(n: int) -> Callable[[], Any]:
        config = scaling_config(models, n)
        return lambda: run_experiment(config, output_path=work_dir / f"run-{n}-{next(counter)}", use_cache=False)

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


METRIC_NAMES = ("bleu", "rouge", "meteor", "bertscore")


def measure_metric_throughput(names: Sequence[str] = METRIC_NAMES, *, pairs: int = 64, runs: int = 5) -> dict[str, Any]:
    """Pairs scored per second by each metric plugin (including its bootstrap CI), median of ``runs``.

    The warm-up run pays one-time costs (model loading for BERTScore, WordNet for METEOR).
    """
    from mlmh.registry import get_registry

    items = metric_pairs(pairs)
    out: dict[str, Any] = {}
    for name in names:
        try:
            metric = get_registry().build("metric", name)
            score = (lambda: metric.score(items, seed=0)) if name != "bertscore" else cold_bertscore(metric, items)
            timing = measure(score, runs=runs, warmup=1)
            extra = bertscore_cached_figures(metric, pairs, runs=runs) if name == "bertscore" else {}
        except Exception as exc:  # a metric that cannot run here (e.g. WordNet missing) is reported, not fatal
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        errors = [r.error for r in timing.result if getattr(r, "error", None)]
        out[name] = {"pairs": pairs, "seconds": timing.seconds, "pairs_per_s": pairs / timing.seconds, "runs": timing.runs,
                     **extra}
        if errors:
            out[name]["error"] = errors[0]
    return out


def cold_bertscore(metric, items: Sequence[Any]) -> Callable[[], Any]:
    """BERTScore with its embedding cache emptied first: every text reaches the encoder."""
    from mlmh_builtins.metrics_bertscore import clear_embedding_caches

    def score() -> Any:
        clear_embedding_caches()
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

    from mlmh_builtins.metrics_bertscore import get_encoder

    model, layer, _ = metric.resolve()
    encoder = get_encoder(model, layer)
    batch_size = metric.params["batch_size"]
    variants = itertools.count(1)

    def cached() -> Any:
        return metric.score(metric_pairs(pairs, variant=next(variants)), seed=0)

    def bare_encoder() -> None:
        ids = sorted((sent_encode(encoder.tokenizer, item.prediction) for item in metric_pairs(pairs, variant=next(variants))),
                     key=len, reverse=True)
        with torch.inference_mode():
            for start in range(0, len(ids), batch_size):
                padded, _, mask = padding(ids[start:start + batch_size], encoder.tokenizer.pad_token_id)
                encoder.model(padded, attention_mask=mask)

    timings = measure_interleaved({"cached": cached, "encoder": bare_encoder}, runs=runs)
    return {"pairs_per_s_references_cached": pairs / timings["cached"].seconds,
            "encoder_pairs_per_s": pairs / timings["encoder"].seconds,
            "references_cached_runs": timings["cached"].runs}


# -- ratios and goals -----------------------------------------------------------------------------

#: The issue's goals: (comparison, threshold); None = reported only. Overhead is judged on the worst cell
#: of each sampler, per model size ("overhead tiny", ...): the fixed per-item cost weighs most on tiny models.
GOALS: dict[str, tuple[str, float] | None] = {
    "overhead tiny": ("<=", 1.20),
    "overhead small": ("<=", 1.10),
    "overhead base": ("<=", 1.10),
    "speedup": None,
    "speedup kept": (">=", 0.95),
    "batching": (">=", 0.90),
    "crossover": None,
    "startup": ("<=", 0.15),
    "scaling": ("<=", 2.2),
    "bertscore": (">=", 200.0),
}


def meets(name: str, value: float | None) -> bool | None:
    """Whether ``value`` meets goal ``name`` (None when there is no goal or no value)."""
    goal = GOALS.get(name)
    if goal is None or value is None:
        return None
    op, threshold = goal
    return value <= threshold if op == "<=" else value >= threshold


def _cell(cells: Sequence[dict], label: str, length: int, batch: int) -> dict | None:
    for cell in cells:
        if cell["sampler"] == label and cell["length"] == length and cell["batch"] == batch:
            return cell
    return None


def summarize_overhead(cells: Sequence[dict]) -> dict[str, dict[str, Any]]:
    """Per sampler: the median overhead over its cells (lengths x batches) and its worst cell, with what
    the lean bare loop costs in that cell (``worst_lean_cost``) and the harness over it; 95 %
    intervals of both (``worst_ci``, ``worst_lean_ci``)."""
    out: dict[str, dict[str, Any]] = {}
    for label in dict.fromkeys(c["sampler"] for c in cells):
        measured = [c for c in cells if c["sampler"] == label and c["overhead"] is not None]
        cpu = [c["overhead_cpu"] for c in measured if c.get("overhead_cpu") is not None]
        if measured:
            worst = max(measured, key=lambda c: c["overhead"])
            out[label] = {"median": median([c["overhead"] for c in measured]), "worst": worst["overhead"],
                          "cells": len(measured), "median_cpu": median(cpu) if cpu else None,
                          "worst_cell": {"length": worst["length"], "batch": worst["batch"]},
                          "worst_lean_cost": worst.get("lean_cost"),
                          "worst_over_lean": worst.get("overhead_over_lean"),
                          "worst_ci": worst.get("overhead_ci"), "worst_lean_ci": worst.get("lean_cost_ci")}
    return out


def summarize_batching(cells: Sequence[dict], small: int, large: int, side: str = "harness_seconds",
                       ci: bool = False) -> dict[str, dict[int, Any]]:
    """Per sampler and length: the share of the bare model's batching gain (small -> large batch) kept
    by ``side`` (the harness, or ``bare_lean_seconds``: the lean bare loop); with
    ``ci``, its 95 % interval instead."""
    out: dict[str, dict[int, Any]] = {}
    runs_side = "harness" if side == "harness_seconds" else "lean"

    def kept(side_small: float, bare_small: float, side_large: float, bare_large: float) -> float | None:
        return batching_ratio(side_small, side_large, bare_small, bare_large, small, large)

    for cell in cells:
        if cell["batch"] != large:
            continue
        base = _cell(cells, cell["sampler"], cell["length"], small)
        if base is None or base.get(side) is None or cell.get(side) is None:
            continue
        out.setdefault(cell["sampler"], {})[cell["length"]] = (
            cell_ci(kept, (base, runs_side), (base, "bare"), (cell, runs_side), (cell, "bare")) if ci
            else kept(base[side], base["bare_seconds"], cell[side], cell["bare_seconds"]))
    return out


def summarize_crossover(cells: Sequence[dict], length: int) -> dict[str, Any]:
    """Samples/s of clm-infill (cache) and mask-predict T=4 per batch, and where the causal LM overtakes."""
    rates: dict[str, dict[str, dict[int, float]]] = {"harness": {}, "bare": {}}
    for side, key in (("harness", "samples_per_s"), ("bare", "bare_samples_per_s")):
        for label in (CAUSAL_CASE, MASKED_CASE):
            rates[side][label] = {c["batch"]: c[key] for c in cells if c["sampler"] == label and c["length"] == length}
    return {
        "length": length,
        "batch": crossover_batch(rates["harness"][CAUSAL_CASE], rates["harness"][MASKED_CASE]),
        "bare_batch": crossover_batch(rates["bare"][CAUSAL_CASE], rates["bare"][MASKED_CASE]),
        "samples_per_s": {label: {str(b): v for b, v in sorted(r.items())} for label, r in rates["harness"].items()},
        "bare_samples_per_s": {label: {str(b): v for b, v in sorted(r.items())} for label, r in rates["bare"].items()},
    }


def summarize_size(cells: Sequence[dict], batches: Sequence[int], speedup_length: int = SPEEDUP_LENGTH) -> dict[str, Any]:
    """The issue's ratios for one model size, from its measured cells."""
    small, large = min(batches), max(batches)
    masked = _cell(cells, MASKED_CASE, speedup_length, 1)
    causal = _cell(cells, CAUSAL_CASE, speedup_length, 1)
    speedup = speedup_ratio(causal["harness_seconds"], masked["harness_seconds"]) if masked and causal else None
    bare_speedup = speedup_ratio(causal["bare_seconds"], masked["bare_seconds"]) if masked and causal else None

    def speedup_kept(causal_harness: float, causal_bare: float, masked_harness: float, masked_bare: float) -> float | None:
        return safe_ratio(speedup_ratio(causal_harness, masked_harness), speedup_ratio(causal_bare, masked_bare))

    overhead = summarize_overhead(cells)
    batching = summarize_batching(cells, small, large) if large > small else {}
    lean_batching = summarize_batching(cells, small, large, "bare_lean_seconds") if large > small else {}
    batching_ci = summarize_batching(cells, small, large, ci=True) if large > small else {}
    worst_batching = [v for per in batching.values() for v in per.values() if v is not None]
    return {
        "overhead": overhead,
        "overhead_worst_sampler": max((v["median"] for v in overhead.values()), default=None),
        "speedup": {"value": speedup, "bare": bare_speedup, "length": speedup_length,
                    "masked_tokens": masked["masked_tokens"] if masked else None,
                    "kept_ci": cell_ci(speedup_kept, (causal, "harness"), (causal, "bare"), (masked, "harness"),
                                       (masked, "bare"))},
        "batching": {"small_batch": small, "large_batch": large,
                     "by_sampler": _by_length_key(batching), "lean_by_sampler": _by_length_key(lean_batching),
                     "ci_by_sampler": _by_length_key(batching_ci),
                     "worst": min(worst_batching) if worst_batching else None},
        "crossover": summarize_crossover(cells, speedup_length),
    }


def _by_length_key(per_sampler: dict[str, dict[int, Any]]) -> dict[str, dict[str, Any]]:
    """``{sampler: {length: value}}`` with the lengths as strings, as JSON keeps them."""
    return {label: {str(length): value for length, value in per.items()} for label, per in per_sampler.items()}


def interval_text(ci: Sequence[float | None] | None) -> str:
    """`` [low, high]`` of a 95 % interval, or nothing when there is none."""
    return f" [{ci[0]:.3g}, {ci[1]:.3g}]" if ci and None not in ci else ""


def verdict_text(row: dict[str, Any]) -> str:
    """A goal row's result: pass, FAIL or report, and "(CI spans the goal)" where this run cannot decide it."""
    text = {True: "pass", False: "FAIL", None: "report"}[row["passed"]]
    return text + (" (CI spans the goal)" if row.get("settled") is False else "")


def goal_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per goal (per size for the model ratios): name, value, goal text, pass/fail, and for the
    timing ratios their 95 % interval (``ci``) and whether all of it lies on one side of the goal
    (``settled``: False means this run cannot tell pass from fail)."""
    rows: list[dict[str, Any]] = []

    def add(name: str, label: str, value: float | None, detail: str = "",
            ci: Sequence[float | None] | None = None) -> None:
        goal = GOALS.get(name)
        row = {"name": label, "ratio": name, "value": value, "goal": f"{goal[0]} {goal[1]:g}" if goal else "report",
               "passed": meets(name, value), "detail": detail}
        if ci and None not in ci:
            row["ci"] = list(ci)
            row["settled"] = meets(name, ci[0]) == meets(name, ci[1])
            row["detail"] = f"95% CI{interval_text(ci)}" + (f"; {detail}" if detail else "")
        rows.append(row)

    for size, block in report.get("sizes", {}).items():
        ratios = block["ratios"]
        for label, over in ratios["overhead"].items():
            cpu = f", CPU-time ratio {over['median_cpu']:.3g}" if over.get("median_cpu") else ""
            lean = ""
            if over.get("worst_lean_cost"):
                cell = over["worst_cell"]
                lean = (f"; worst cell (L={cell['length']}, B={cell['batch']}): lean bare "
                        f"{over['worst_lean_cost']:.3g}{interval_text(over.get('worst_lean_ci'))}, "
                        f"harness over it {over['worst_over_lean']:.3g}")
            add(f"overhead {size}", f"overhead {label} [{size}]", over["worst"],
                f"median cell {over['median']:.3g}{cpu}{lean}", over.get("worst_ci"))
        speedup = ratios["speedup"]
        add("speedup", f"speedup clm-infill/mask-predict T=4 [{size}]", speedup["value"],
            f"bare models {speedup['bare']:.3g}" if speedup["bare"] else "")
        add("speedup kept", f"speedup kept (harness/bare) [{size}]", safe_ratio(speedup["value"], speedup["bare"]),
            ci=speedup.get("kept_ci"))
        batching = ratios["batching"]
        for label, per in batching["by_sampler"].items():
            for length, value in per.items():
                lean = batching.get("lean_by_sampler", {}).get(label, {}).get(length)
                add("batching", f"batching {label} L={length} [{size}]", value,
                    f"batch {batching['small_batch']} -> {batching['large_batch']}"
                    + (f"; lean bare {lean:.3g}" if lean is not None else ""),
                    batching.get("ci_by_sampler", {}).get(label, {}).get(length))
        cross = ratios["crossover"]
        add("crossover", f"crossover batch [{size}]", cross["batch"], f"bare models: {cross['bare_batch']}")
    if "startup" in report:
        add("startup", "startup: mlmh --help (s)", report["startup"]["seconds"])
    if "scaling" in report and "ratio" in report["scaling"]:
        add("scaling", "scaling: eval 2x docs / 1x", report["scaling"]["ratio"])
    bertscore = report.get("metrics", {}).get("bertscore", {})
    if "pairs_per_s_references_cached" in bertscore:
        add("bertscore", "bertscore pairs/s, references cached", bertscore["pairs_per_s_references_cached"],
            f"cold {bertscore['pairs_per_s']:.3g}; encoder alone {bertscore['encoder_pairs_per_s']:.3g} "
            "(references cached)")
    return rows


# -- the whole bench ------------------------------------------------------------------------------


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass
class BenchOptions:
    """What ``mlmh bench`` measures. The defaults finish in about 5 minutes on 2 cores."""

    sizes: tuple[str, ...] = ("tiny",)
    lengths: tuple[int, ...] = (32,)
    batches: tuple[int, ...] = (1, 8, 32)
    runs: int = 5
    threads: int = field(default_factory=available_cores)
    samplers: tuple[str, ...] = tuple(case.key for case in SAMPLER_CASES)  # SamplerCase.key
    metrics: tuple[str, ...] = METRIC_NAMES
    metric_pairs: int = 64
    scaling_documents: int = 12
    startup: bool = True
    scaling: bool = True
    seed: int = 0
    speedup_length: int = SPEEDUP_LENGTH  # tokens of the speedup/crossover workload (half masked)

    def cells(self) -> list[tuple[int, int, SamplerCase]]:
        """(length, batch, case) to measure: the grid, plus the speedup/crossover workload."""
        cases = [CASE_BY_KEY[key] for key in self.samplers]
        grid = [(length, batch, case) for length in self.lengths for batch in self.batches for case in cases]
        for batch in sorted(set(self.batches) | {1}):
            for label in (MASKED_CASE, CAUSAL_CASE):
                cell = (self.speedup_length, batch, CASE_BY_LABEL[label])
                if cell not in grid:
                    grid.append(cell)
        return grid


Progress = Callable[[str, int, int], None]  # (what, done, total)


def run_bench(options: BenchOptions, progress: Progress | None = None, work_dir: Path | None = None) -> dict[str, Any]:
    """Measure everything ``options`` asks for and return one JSON-ready report."""
    import tempfile

    import torch

    from mlmh.adapters import load_adapter
    from mlmh.allocator import retain_freed_memory
    from mlmh.registry import get_registry
    from mlmh.training import SIZES

    notify = progress or (lambda what, done, total: None)
    cells_plan = options.cells()
    stages = len(options.sizes) * len(cells_plan) + int(options.startup) + int(options.scaling) + len(options.metrics)
    done = 0
    memory = PeakMemory()
    report: dict[str, Any] = {
        "machine": {"cores": available_cores(), "threads": options.threads, "torch": torch.__version__,
                    "load_average_before": list(os.getloadavg()), "peak_memory_method": memory.method},
        "options": as_json_ready(options),
        "method": {"warmup_runs": 1, "timed_runs": options.runs, "statistic": "median",
                   "interleaved": "harness and bare runs alternate",
                   "sampler_cells": f"at least {options.runs} runs, and on until each side has run {CELL_SECONDS} s "
                                    f"in all, doubling up to {CELL_MAX_SECONDS} s while the overhead's 95% "
                                    f"interval is wider than {CELL_CI_WIDTH} (at most {CELL_MAX_RUNS} runs)"},
        "sizes": {},
    }
    retain_freed_memory()  # what the mlmh command line runs with (mlmh.cli.main)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="mlmh-bench-", dir=work_dir) as tmp, pinned_threads(options.threads):
        for size in options.sizes:
            window = max([*options.lengths, options.speedup_length]) + 2
            paths = save_bench_models(size, Path(tmp) / "models", window=window, seed=options.seed)
            adapters = {kind: load_adapter(kind, path, identity=f"bench-{size}-{kind}") for kind, path in paths.items()}
            vocabulary = bench_vocabulary(SIZES[size].vocab_size)
            cells = []
            for length, batch, case in cells_plan:
                notify(f"{size} {case.label} L={length} B={batch}", done, stages)
                sampler = get_registry().build("sampler", case.spec)
                items = bench_items(length, batch, vocabulary, seed=options.seed)
                cells.append(as_json_ready(measure_sampler(case, sampler, adapters[case.kind], items,
                                                           runs=options.runs, memory=memory)))
                done += 1
            report["sizes"][size] = {
                "parameters": {kind: parameter_count(a.model) for kind, a in adapters.items()},
                "cells": cells,
                "ratios": as_json_ready(summarize_size(cells, options.batches, options.speedup_length)),
            }
            del adapters
        if options.startup:
            notify("startup: mlmh --help", done, stages)
            report["startup"] = as_json_ready(measure_startup(runs=max(options.runs, 7)))
            done += 1
        if options.scaling:
            notify("scaling: eval 1x vs 2x documents", done, stages)
            try:
                report["scaling"] = as_json_ready(measure_scaling(Path(tmp) / "scaling", documents=options.scaling_documents,
                                                                  runs=3, size="tiny"))
            except Exception as exc:  # the runner failing must not hide the other figures
                report["scaling"] = {"error": f"{type(exc).__name__}: {exc}"}
            done += 1
        report["metrics"] = {}
        for name in options.metrics:
            notify(f"metric throughput: {name}", done, stages)
            report["metrics"].update(as_json_ready(measure_metric_throughput([name], pairs=options.metric_pairs,
                                                                             runs=options.runs)))
            done += 1
    notify("done", done, stages)
    report["machine"]["load_average_after"] = list(os.getloadavg())
    report["wall_seconds"] = round(time.perf_counter() - started, 2)
    report["goals"] = as_json_ready(goal_rows(report))
    return report


def report_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown tables (docs/PERFORMANCE.md keeps the latest real run in this form)."""
    def fmt(value: Any) -> str:
        return "-" if value is None else f"{value:.3g}" if isinstance(value, float) else str(value)

    lines: list[str] = []
    machine = report["machine"]
    lines.append(f"{machine['threads']} torch threads on {machine['cores']} cores, torch {machine['torch']}; load average "
                 f"{machine['load_average_before'][0]:.1f} before, {machine['load_average_after'][0]:.1f} after; "
                 f"{report['method']['timed_runs']} timed runs after 1 warm-up (sampler cells: "
                 f"{report['method'].get('sampler_cells', 'as many')}); whole bench {report['wall_seconds']:.0f} s.")
    lines += ["", "| figure | value | goal | result | detail |", "|---|---:|---|---|---|"]
    for row in report["goals"]:
        verdict = verdict_text(row).replace("FAIL", "**FAIL**", 1)
        lines.append(f"| {row['name']} | {fmt(row['value'])} | {row['goal']} | {verdict} | {row['detail']} |")
    for size, block in report["sizes"].items():
        params = ", ".join(f"{k} {v / 1e6:.2f}M" for k, v in block["parameters"].items())
        lines += ["", f"Samplers, size {size} ({params} parameters):", "",
                  "| sampler | L | batch | passes (harness/bare) | harness s | bare s | overhead [95% CI] | CPU overhead | "
                  "lean bare / bare | harness / lean bare | tokens/s | samples/s | peak MiB |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for c in block["cells"]:
            lines.append(f"| {c['sampler']} | {c['length']} | {c['batch']} | {c['forward_passes']}/{c['bare_forward_passes']} | "
                         f"{fmt(c['harness_seconds'])} | {fmt(c['bare_seconds'])} | {fmt(c['overhead'])}"
                         f"{interval_text(c.get('overhead_ci'))} | "
                         f"{fmt(c.get('overhead_cpu'))} | {fmt(c.get('lean_cost'))} | {fmt(c.get('overhead_over_lean'))} | "
                         f"{fmt(c['tokens_per_s'])} | {fmt(c['samples_per_s'])} | {fmt(c['peak_mib'])} |")
    if report.get("metrics"):
        lines += ["", "| metric | pairs | seconds | pairs/s | pairs/s, references cached | encoder alone |",
                  "|---|---:|---:|---:|---:|---:|"]
        for name, m in report["metrics"].items():
            lines.append(f"| {name} | {fmt(m.get('pairs'))} | {fmt(m.get('seconds'))} | {fmt(m.get('pairs_per_s'))} | "
                         f"{fmt(m.get('pairs_per_s_references_cached'))} | {fmt(m.get('encoder_pairs_per_s'))} |"
                         + (f" {m['error']}" if m.get("error") else ""))
    return "\n".join(lines) + "\n"
