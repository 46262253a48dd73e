"""The generation library the runner, the TUI playground and ``mlmh bench`` call.

Two steps: :func:`prepare_items` masks documents (model-independent, so every model of a condition
sees the same masked words), then :func:`generate` runs a sampler over them in batches.
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import numpy as np

from mlmh.components import Masking, Sampler
from mlmh.errors import SpecError
from mlmh.seeding import mask_seed, sample_seed
from mlmh.types import Document, Generation, MaskedItem
from mlmh.words import split_words


def prepare_items(documents: Sequence[Document], masking: Masking, seed: int, condition: str | None = None) -> list[MaskedItem]:
    """Mask every document: the mask depends on (seed, masking spec, doc id) only.

    ``condition`` keys the per-sample sampler seed (default: the masking spec); pass e.g.
    ``"<masking>|<sampler>"`` to give each sampler its own random stream.
    """
    items = []
    for document in documents:
        words = split_words(document.text)
        rng = np.random.default_rng(mask_seed(seed, masking.spec, document.id))
        plan = masking.mask(document, words, rng)
        items.append(MaskedItem(doc_id=document.id, words=words, plan=plan,
                                seed=sample_seed(seed, condition or masking.spec, document.id)))
    return items


def check_compatible(sampler: Sampler, model_kind: str) -> None:
    """One-line SpecError when ``sampler`` cannot drive a ``model_kind`` model, naming those that can."""
    if model_kind in sampler.model_kinds:
        return
    from mlmh.registry import get_registry

    fitting = sorted(s.name for s in get_registry().all("sampler") if model_kind in s.model_kinds)
    raise SpecError(
        f"sampler '{sampler.name}' works with {'/'.join(sorted(sampler.model_kinds)) or 'no'} models, not a {model_kind} model; "
        f"samplers for {model_kind}: {', '.join(fitting) or 'none registered'}"
    )


def generate(
    adapter: Any,
    sampler: Sampler,
    items: Sequence[MaskedItem],
    batch_size: int = 8,
    on_batch: Callable[[int, list[Generation]], None] | None = None,
) -> list[Generation]:
    """Run ``sampler`` over ``items`` in batches of ``batch_size``; results keep the items' order.

    The adapter's counters are reset before each batch; ``on_batch(batch_index, generations)`` is
    called after each (the runner caches per batch and reports progress there).
    """
    if batch_size < 1:
        raise SpecError(f"batch size must be >= 1; got {batch_size}")
    check_compatible(sampler, adapter.kind)
    retain_freed_memory()
    out: list[Generation] = []
    for index, start in enumerate(range(0, len(items), batch_size)):
        adapter.reset_counters()
        with collection_deferred():
            batch = sampler.generate(adapter, items[start : start + batch_size])
        for generation in batch:
            generation.info.setdefault("batch_forward_passes", adapter.forward_passes)
            generation.info.setdefault("batch_size", len(batch))
        out.extend(batch)
        if on_batch is not None:
            on_batch(index, batch)
    return out


@contextmanager
def collection_deferred() -> Iterator[None]:
    """Pause Python's cyclic garbage collector for one batch, then collect the young generations once.

    A batch allocates many small containers (step traces, token lists), and every automatic pass
    they trigger walks all live objects, models included: 12 % of a long clm-infill batch at size
    tiny (docs/PERFORMANCE.md). Nothing a sampler builds needs cycle collection to be freed.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(1)


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc mallopt parameters
_allocator_tuned = False


def retain_freed_memory() -> None:
    """Ask glibc's allocator to keep freed blocks below 64 MiB in the heap (once per process).

    Every pass allocates and frees the same large blocks (logits of batch x length x vocab). With
    glibc's adaptive defaults the sampler's smaller allocations between passes made those blocks
    return to the OS and come back as fresh pages: about 900 first-touch page faults per mask-predict
    pass at batch 8 (bare passes: none), a tenth of its time at size tiny. The cost: up to 256 MiB of
    freed memory stays with the process. Off glibc, or when MALLOC_MMAP_THRESHOLD_ /
    MALLOC_TRIM_THRESHOLD_ are set in the environment, nothing changes.
    """
    global _allocator_tuned
    if _allocator_tuned:
        return
    _allocator_tuned = True
    if not sys.platform.startswith("linux") or any(
            name in os.environ for name in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")):
        return
    try:
        mallopt = ctypes.CDLL("libc.so.6").mallopt
    except (OSError, AttributeError):  # not glibc (e.g. musl)
        return
    mallopt(_M_MMAP_THRESHOLD, 64 << 20)
    mallopt(_M_TRIM_THRESHOLD, 256 << 20)
