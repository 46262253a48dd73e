"""The sampler cells: which samplers the bench times, their documents, and one cell's harness, bare
and lean timings, interleaved."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from mlmh.bench.bare import bare_work, pass_plan
from mlmh.bench.memory import PeakMemory
from mlmh.bench.ratios import cell_ci, overhead_ratio, timing_ci
from mlmh.bench.timing import CELL_CI_WIDTH, CELL_MAX_SECONDS, CELL_SECONDS, measure_interleaved
from mlmh.config.declared import bench_cases
from mlmh.errors import SpecError


@dataclass(frozen=True)
class SamplerCase:
    """One row of the sampler table: a label, a command-line key, the sampler spec and its model kind;
    ``reference``: the row that stands for its kind in the masked-vs-causal speedup."""

    label: str
    key: str
    spec: str
    kind: str
    reference: bool = False


def sampler_cases() -> tuple[SamplerCase, ...]:
    """The samplers the bench times, in table order: every setting a registered sampler declares
    (:class:`mlmh.components.BenchCase`), third-party ones included."""
    return tuple(SamplerCase(case.label, case.key, f"{sampler.name}:{case.params}" if case.params else sampler.name,
                             case.kind or _only_kind(sampler), case.reference) for sampler, case in bench_cases())


def _only_kind(sampler: Any) -> str:
    if len(sampler.model_kinds) != 1:
        raise SpecError(f"sampler '{sampler.name}': a bench setting of a sampler that drives "
                        f"{len(sampler.model_kinds) or 'any'} model kinds names the one it is timed on (kind=)")
    return next(iter(sampler.model_kinds))


def case_by_key() -> dict[str, SamplerCase]:
    return {case.key: case for case in sampler_cases()}


def case_by_label() -> dict[str, SamplerCase]:
    return {case.label: case for case in sampler_cases()}


def reference_case(kind: str) -> str:
    """The label of the row that stands for model ``kind`` in the masked-vs-causal speedup and crossover."""
    found = [case.label for case in sampler_cases() if case.reference and case.kind == kind]
    if not found:
        raise SpecError(f"no sampler declares a reference bench setting for {kind} models (BenchCase(reference=True))")
    return found[0]


def masked_case() -> str:
    """The masked LM's reference row (the speedup's numerator's side)."""
    return reference_case("mlm")


def causal_case() -> str:
    """The causal LM's reference row."""
    return reference_case("clm")
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

    from mlmh.machine.seeding import sample_seed
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


def measure_sampler(case: SamplerCase, sampler, adapter, items: Sequence[Any], *, runs: int,
                    memory: PeakMemory | None = None) -> dict[str, Any]:
    """Harness generation (:func:`mlmh.generation.regenerate`, the way texts are regenerated outside a run) vs
    bare forward passes (and vs the lean bare loop) for one sampler on one batch, interleaved runs."""
    from mlmh.generation import MaskedTexts, regenerate

    masked = MaskedTexts(tuple(items))  # masked by the bench's own rule (the middle half), so no cut
    (first,) = regenerate([(adapter, sampler)], masked, batch_size=len(items))
    plan = pass_plan(first)  # the sampler's own passes
    bare_fn = bare_work(sampler, adapter, items, plan)
    lean_fn = bare_work(sampler, adapter, items, plan, lean=True)

    def harness() -> tuple[int, list]:
        (generations,) = regenerate([(adapter, sampler)], masked, batch_size=len(items))
        return adapter.forward_passes, generations

    def precise(seconds: dict[str, list[float]]) -> bool:
        low, high = timing_ci(overhead_ratio, (seconds["harness"], seconds["bare"]))
        return low is not None and high is not None and high - low <= CELL_CI_WIDTH

    timings = measure_interleaved({"harness": harness, "bare": bare_fn, "lean": lean_fn}, runs=runs,
                                  memory=memory, min_seconds=CELL_SECONDS, precise=precise,
                                  max_seconds=CELL_MAX_SECONDS)
    harness_t, bare_t, lean_t = timings["harness"], timings["bare"], timings["lean"]
    harness_passes, generations = harness_t.result
    generated = sum(g.generated_tokens for g in generations)
    batch = len(items)
    each_run = {"harness_runs": harness_t.runs, "bare_runs": bare_t.runs, "lean_runs": lean_t.runs}
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
        "overhead_ci": cell_ci(overhead_ratio, (each_run, "harness"), (each_run, "bare")),
        "harness_cpu_seconds": harness_t.cpu_seconds,
        "bare_cpu_seconds": bare_t.cpu_seconds,
        "overhead_cpu": overhead_ratio(harness_t.cpu_seconds, bare_t.cpu_seconds),
        "bare_lean_seconds": lean_t.seconds,
        "lean_cost": overhead_ratio(lean_t.seconds, bare_t.seconds),
        "lean_cost_ci": cell_ci(overhead_ratio, (each_run, "lean"), (each_run, "bare")),
        "overhead_over_lean": overhead_ratio(harness_t.seconds, lean_t.seconds),
        "forward_passes": harness_passes,
        "bare_forward_passes": bare_t.result,
        "tokens_per_s": generated / harness_t.seconds,
        "samples_per_s": batch / harness_t.seconds,
        "bare_samples_per_s": batch / bare_t.seconds,
        "peak_mib": harness_t.peak_mib,
        "bare_peak_mib": bare_t.peak_mib,
        **each_run,
    }
