"""The sampler toolkit, public plugin API: token choice (greedy / temperature / top-k / top-p), per-item
random generators, a cheap step-trace recorder and the assembly of :class:`~mlmh.types.Generation`.

The builtin samplers use it as any third-party sampler does (docs/PLUGINS.md); nothing here is specific
to one algorithm. Its old paths, ``mlmh.plugins.samplers_common`` and ``mlmh_builtins.samplers_common``,
still work for one release, with a DeprecationWarning (:func:`moved_here`).
"""

from __future__ import annotations

import bisect
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Literal, Protocol, Sequence, TypeAlias, overload, runtime_checkable

from mlmh.adapters.base import MASK_MARKER, Encoding, Seq2SeqEncoding
from mlmh.adapters.decoding import PrefixState
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem, MaskPlan, Step, Words
from mlmh.words import sentence_cased

if TYPE_CHECKING:
    import torch

__all__ = ["Adapter", "MaskedLM", "Decoder", "Seq2Seq", "Encoding", "Seq2SeqEncoding", "PrefixState", "MASK_MARKER",
           "SAMPLING_PARAMS", "choose_tokens", "choose_at", "row_argmax", "picked", "lowest_scores", "encode_items",
           "ItemGenerators", "item_generators", "draw_uniforms", "TraceRecorder", "ItemCounters", "build_generations",
           "moved_here"]

# -- the adapter a sampler drives ---------------------------------------------------------------------------
# A sampler's ``generate(adapter, items)`` gets the run's adapter of one model (:mod:`mlmh.adapters` builds
# them). These protocols are its public face, typed: what a sampler may call, and nothing else it needs.


@runtime_checkable
class Adapter(Protocol):
    """What every adapter offers: encoding masked items, decoding words, banned ids, counters."""

    kind: str  # "mlm", "clm" or "seq2seq"
    identity: str  # the exact weights (a path or a hash)
    device: "torch.device"
    mask_id: int  # the placeholder at every masked position of an encoding
    vocab_size: int
    banned_ids: "torch.Tensor"  # (vocab,) bool: ids a sampler must never generate
    max_length: int  # the model's window in tokens
    forward_passes: int
    tokens_processed: int

    @property
    def pad_id(self) -> int: ...

    @property
    def token_table(self) -> list[str]: ...

    def encode(self, words: Words, plan: MaskPlan) -> Encoding: ...

    def encode_batch(self, pairs: Sequence[tuple[Words, MaskPlan]]) -> list[Encoding]: ...

    def decode_words(self, token_lists: Sequence[Sequence[int]]) -> list[str]: ...

    def suppress(self, logits: "torch.Tensor") -> "torch.Tensor": ...

    def right_padded(self, sequences: Sequence[Sequence[int]]) -> tuple["torch.Tensor", "torch.Tensor"]: ...

    def tokens_to_strings(self, ids: Sequence[int]) -> list[str]: ...

    def reset_counters(self) -> None: ...


@runtime_checkable
class MaskedLM(Adapter, Protocol):
    """kind "mlm": logits of every (or chosen) position of a right-padded batch, one forward pass each call."""

    def batch(self, sequences: Sequence[Sequence[int]]) -> tuple["torch.Tensor", "torch.Tensor"]: ...

    def logits(self, input_ids: "torch.Tensor", attention_mask: "torch.Tensor", tokens: int | None = None,
               at: "torch.Tensor | None" = None) -> "torch.Tensor": ...


@runtime_checkable
class Decoder(Adapter, Protocol):
    """kinds "clm" and "seq2seq": next-token logits of growing prefixes, with a KV cache when asked."""

    supports_holes: bool  # whether rows may carry padding holes in the middle

    def new_state(self, rows: int, use_cache: bool) -> PrefixState: ...

    def next_logits(self, chunks: Sequence[Sequence[int]], state: PrefixState, rows: Sequence[int]) -> "torch.Tensor": ...


@runtime_checkable
class Seq2Seq(Decoder, Protocol):
    """kind "seq2seq": the encoder reads the sources once, the decoder writes the targets."""

    style: str  # "sentinel" (T5) or "mask" (BART)

    def sentinel_id(self, k: int) -> int: ...

    def encode_sources(self, sources: Sequence[Sequence[int]]) -> None: ...


# -- token choice, random streams, traces, generations ------------------------------------------------------

SAMPLING_PARAMS: tuple[Param, ...] = (
    Param("temperature", float, 0.0, "0 = greedy (argmax); > 0 samples from softmax(logits / temperature)", min=0.0),
    Param("top_k", int, 0, "sample only among the k most likely tokens (0 = all)", min=0),
    Param("top_p", float, 1.0, "nucleus sampling: smallest set of tokens with this much probability", min=0.01, max=1.0),
)


def choose_tokens(logits: "torch.Tensor", uniforms: "torch.Tensor | None", temperature: float, top_k: int,
                  top_p: float) -> tuple["torch.Tensor", "torch.Tensor"]:
    """Pick one token per row of ``logits`` (n, vocab); returns (ids, probability of each pick).

    Greedy when ``temperature`` is 0 (``uniforms`` unused, may be None); otherwise inverse-CDF sampling with the
    given uniforms (one per row, drawn from each item's own generator, so batching cannot change them).
    """
    import torch

    if logits.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0)
    if temperature <= 0:  # greedy: the first most probable token of each row
        probs = torch.softmax(logits, dim=-1)
        if probs.numel() < _SMALL_CHOICE:  # one op is cheapest for a few rows
            conf, ids = probs.max(dim=-1)
            return ids, conf
        # numpy's argmax over the fresh, contiguous probabilities, then reading the picked ones: cheaper
        # than torch's indexed reduction, and than an argmax over the logits (often a strided view)
        ids = row_argmax(probs)
        return ids, picked(probs, ids)
    assert uniforms is not None, "sampling at a temperature above 0 draws from the given uniforms"
    scaled = logits if temperature == 1.0 else logits / temperature  # x / 1.0 is x: no copy (Gibbs burn-in)
    if top_k and top_k < scaled.shape[-1]:
        kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
        scaled = scaled.masked_fill(scaled < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        sorted_probs = torch.softmax(sorted_logits, dim=-1)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs  # mass strictly above each token
        drop_sorted = before >= top_p
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    probs = torch.softmax(scaled, dim=-1)
    cdf = probs.cumsum(dim=-1)
    targets = (uniforms.to(device=cdf.device, dtype=cdf.dtype) * cdf[:, -1]).unsqueeze(-1)  # drawn on the CPU
    ids = torch.searchsorted(cdf, targets, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)
    return ids, probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)


#: Below this many probabilities (about 20 rows of a 6000-token vocabulary), greedy choice uses torch's
#: max; numpy's argmax pays off above it. Both pick the first most probable token. Timed in place, after a
#: pass of the tiny MLM: torch's max took 84 us for 16 rows where numpy's path took 107.
_SMALL_CHOICE = 1 << 17
#: Rows of logits handled at a time by :func:`choose_at`: 256 x a 6000-token vocabulary is 6 MB.
CHOICE_CHUNK = 256


def choose_at(flat_logits: "torch.Tensor", index: "torch.Tensor | list[int] | range", uniforms: "torch.Tensor | None",
              temperature: float, top_k: int, top_p: float) -> tuple["torch.Tensor", "torch.Tensor"]:
    """:func:`choose_tokens` on rows ``index`` (ascending, unique; a tensor, a list or a range) of ``flat_logits``
    (rows, vocab), a chunk at a time; a contiguous run of rows is read in place.

    Gathering every selected row first and then taking the softmax streams the whole (selected x
    vocab) block through memory twice; in chunks that stay in the cache the same work ran about three
    times faster (mask-predict, 256 tokens, batch 32). Rows are independent, so results are identical.
    """
    import torch

    def rows(part: "torch.Tensor | list[int] | range") -> "torch.Tensor":
        first, last = (int(v) for v in ((part[0], part[-1]) if isinstance(part, (list, range)) else part[[0, -1]].tolist()))
        if last - first + 1 == len(part):  # ascending and unique: a contiguous run, no copy
            return flat_logits if first == 0 and last + 1 == flat_logits.shape[0] else flat_logits[first:last + 1]
        if not torch.is_tensor(part):
            part = torch.as_tensor(part, dtype=torch.long)
        return flat_logits.index_select(0, part.to(flat_logits.device))

    def draws(start: int) -> "torch.Tensor | None":
        return None if uniforms is None else uniforms[start:start + CHOICE_CHUNK]

    if len(index) == 0:
        return choose_tokens(flat_logits[:0], uniforms, temperature, top_k, top_p)
    if len(index) <= CHOICE_CHUNK:
        return choose_tokens(rows(index), uniforms, temperature, top_k, top_p)
    parts = [choose_tokens(rows(index[start:start + CHOICE_CHUNK]), draws(start), temperature, top_k, top_p)
             for start in range(0, len(index), CHOICE_CHUNK)]
    return torch.cat([ids for ids, _ in parts]), torch.cat([probs for _, probs in parts])


def row_argmax(values: "torch.Tensor") -> "torch.Tensor":
    """Index of the first maximum of every row of a 2-D tensor (as ``values.max(dim=-1).indices``).

    On the CPU numpy's vectorised argmax is about ten times faster than torch's indexed reduction.
    """
    import numpy as np
    import torch

    if values.device.type != "cpu" or values.dtype != torch.float32:
        return values.argmax(dim=-1)
    return torch.from_numpy(np.argmax(values.numpy(), axis=-1).astype(np.int64, copy=False))


def picked(values: "torch.Tensor", ids: "torch.Tensor") -> "torch.Tensor":
    """``values[i, ids[i]]`` for every row i of a 2-D tensor (numpy's indexing on the CPU: one cheap call)."""
    import numpy as np
    import torch

    if values.device.type != "cpu":
        return values.gather(-1, ids.to(values.device).unsqueeze(-1)).squeeze(-1)
    return torch.from_numpy(values.numpy()[np.arange(len(ids)), ids.numpy()])


def lowest_scores(scores: "torch.Tensor", count: "torch.Tensor") -> "torch.Tensor":
    """Boolean mask of the ``count[r]`` lowest scores of each row (ties: leftmost first): the positions
    confidence-ordered samplers (mask-predict, MaskGIT, LLaDA, MDLM) commit or re-mask."""
    import torch

    order = torch.sort(scores, dim=1, stable=True).indices
    ranks = torch.empty_like(order)
    ranks.scatter_(1, order, torch.arange(scores.shape[1]).expand_as(order).contiguous())
    return ranks < count.unsqueeze(1)


def encode_items(adapter: Adapter, items: Sequence[MaskedItem]) -> list[Encoding]:
    """The items' encodings, in one batched tokenizer call when the adapter offers it."""
    if hasattr(adapter, "encode_batch"):
        return adapter.encode_batch([(item.words, item.plan) for item in items])
    return [adapter.encode(item.words, item.plan) for item in items]


class ItemGenerators:
    """One ``torch.Generator`` per item, seeded by the item's seed: outputs do not depend on batching.

    Each is made on first use: greedy decoding never draws, and making them cost as much as a
    small batch's token choice.
    """

    def __init__(self, seeds: Sequence[int]) -> None:
        self.seeds = [int(seed) % (2**63) for seed in seeds]
        self._made: dict[int, "torch.Generator"] = {}

    def __len__(self) -> int:
        return len(self.seeds)

    def __getitem__(self, item: int) -> "torch.Generator":
        generator = self._made.get(item)
        if generator is None:
            import torch

            generator = self._made[item] = torch.Generator().manual_seed(self.seeds[item])
        return generator


def item_generators(items: Sequence[MaskedItem]) -> ItemGenerators:
    """The items' random generators (see :class:`ItemGenerators`)."""
    return ItemGenerators([item.seed for item in items])


_Generators: TypeAlias = "Sequence[torch.Generator] | ItemGenerators"  # what draw_uniforms draws from


@overload
def draw_uniforms(generators: _Generators, rows: Sequence[int], counts: Sequence[int],
                  needed: Literal[True]) -> "torch.Tensor":
    ...


@overload
def draw_uniforms(generators: _Generators, rows: Sequence[int], counts: Sequence[int],
                  needed: bool) -> "torch.Tensor | None":
    ...


def draw_uniforms(generators: _Generators, rows: Sequence[int], counts: Sequence[int],
                  needed: bool) -> "torch.Tensor | None":
    """Uniforms for ``counts[i]`` picks of item ``rows[i]``, drawn from that item's generator; None when
    not ``needed`` (greedy choice draws nothing)."""
    import torch

    if not needed:
        return None
    total = int(sum(counts))
    if total == 0:
        return torch.zeros(0)
    return torch.cat([torch.rand(int(n), generator=generators[r]) for r, n in zip(rows, counts)])


@dataclass
class TraceRecorder:
    """Per-item step changes as plain ints; token strings are made once, at the end."""

    initial: list[list[int]]
    masked: list[set[int]]
    #: per item, in order: (positions, ids, confidences, remasked) lists, or (position, id, confidence)
    #: for a one-token step (:meth:`step_one`)
    events: list[list[tuple]] = field(default_factory=list)

    @classmethod
    def for_encodings(cls, encodings: Sequence[Encoding]) -> "TraceRecorder":
        return cls([list(e.ids) for e in encodings], [set(e.masked) for e in encodings], [[] for _ in encodings])

    def step(self, item: int, positions: list[int], ids: list[int], confidences: list[float], remasked: Sequence[int] = ()) -> None:
        """Item ``item`` got ``ids`` at ``positions`` (with those probabilities); ``remasked`` went back to the mask."""
        if len(positions) == 1 and not remasked:
            self.step_one(item, positions[0], ids[0], confidences[0])
        else:
            self.events[item].append((positions, ids, confidences, list(remasked)))

    def step_one(self, item: int, position: int, tid: int, confidence: float) -> None:
        """:meth:`step` for one token and no re-masking (a decoder's step), without the lists."""
        self.events[item].append((position, tid, confidence))

    def last_confidences(self, item: int) -> list[tuple[int, float]]:
        """(position, probability) of each token the item's latest step placed; [] before the first."""
        events = self.events[item]
        if not events:
            return []
        event = events[-1]
        return [(event[0], event[2])] if len(event) == 3 else list(zip(event[0], event[2]))

    def steps(self, item: int, adapter: Adapter) -> list[Step]:
        """The item's Steps. Token strings are updated in place and copied per step (a C-level list
        copy), so a long trace costs O(changes) Python work rather than O(steps x length)."""
        ids = list(self.initial[item])
        strings = adapter.tokens_to_strings(ids)
        table, size = adapter.token_table, len(adapter.token_table)
        mask_id = adapter.mask_id
        (mask_string,) = adapter.tokens_to_strings([mask_id])
        masked = set(self.masked[item])
        masked_sorted = sorted(masked)
        out: list[Step] = []

        def fill(pos: int, tid: int) -> bool:
            """Put ``tid`` at ``pos``; whether the position changed (a new token, or a mask filled)."""
            changed = ids[pos] != tid or pos in masked
            ids[pos] = tid
            strings[pos] = table[tid] if 0 <= tid < size else adapter.tokens_to_strings([tid])[0]
            if pos in masked:
                masked.discard(pos)
                del masked_sorted[bisect.bisect_left(masked_sorted, pos)]
            return changed

        for event in self.events[item]:
            if len(event) == 3:  # one token (decoders, left-to-right, Gibbs): no sets
                pos, tid, conf = event
                changed_one = [pos] if fill(pos, tid) else []
                out.append(Step(strings.copy(), changed_one, {pos: round(float(conf), 6)}, masked_sorted.copy()))
                continue
            positions, new_ids, confs, remasked = event
            changed = set()
            masked_before = len(masked)
            for pos, tid in zip(positions, new_ids):  # fill() inlined: one call per token was most of a step
                if pos in masked:
                    masked.discard(pos)
                    changed.add(pos)
                elif ids[pos] != tid:
                    changed.add(pos)
                ids[pos] = tid
                strings[pos] = table[tid] if 0 <= tid < size else adapter.tokens_to_strings([tid])[0]
            for pos in remasked:
                ids[pos] = mask_id
                strings[pos] = mask_string
                masked.add(pos)
                changed.add(pos)
            if remasked or len(masked) != masked_before:
                masked_sorted[:] = sorted(masked)
            out.append(Step(
                tokens=strings.copy(),
                changed=sorted(changed),
                confidences={p: round(float(c), 6) for p, c in zip(positions, confs)},
                masked=masked_sorted.copy(),
            ))
        return out


@dataclass
class ItemCounters:
    """Per-item forward passes and tokens processed (the adapter counts per batch)."""

    passes: list[int]
    tokens: list[int]

    @classmethod
    def zeros(cls, n: int) -> "ItemCounters":
        return cls([0] * n, [0] * n)

    def add(self, item: int, tokens: int) -> None:
        self.passes[item] += 1
        self.tokens[item] += int(tokens)


def build_generations(
    adapter: Adapter,
    sampler_spec: str,
    items: Sequence[MaskedItem],
    encodings: Sequence[Encoding],
    final_ids: Sequence[Sequence[int]],
    trace: TraceRecorder,
    counters: ItemCounters,
    started: float,
    info: dict[str, Any] | None = None,
) -> list[Generation]:
    """Decode every masked word (one batched decode), sentence-case those of a model that folds case, and assemble
    the items' Generations."""
    word_tokens: list[list[int]] = []
    owners: list[tuple[int, int]] = []
    for n, (enc, ids) in enumerate(zip(encodings, final_ids)):
        per_word: dict[int, list[int]] = {}
        for pos in enc.masked:
            per_word.setdefault(enc.word_of[pos], []).append(int(ids[pos]))
        for word, toks in per_word.items():
            owners.append((n, word))
            word_tokens.append(toks)
    decoded = adapter.decode_words(word_tokens) if word_tokens else []
    outputs: list[dict[int, str]] = [{} for _ in items]
    for (n, word), text in zip(owners, decoded):
        outputs[n][word] = text
    if getattr(adapter, "folds_case", False):  # an adapter that does not say is taken to write case as it reads it
        outputs = [sentence_cased(item.words, out) for item, out in zip(items, outputs)]
    seconds = (time.perf_counter() - started) / max(len(items), 1)
    generations = []
    for n, (item, enc) in enumerate(zip(items, encodings)):
        item_info = dict(info or {})
        if enc.truncated_tokens:
            item_info["truncated"] = (
                f"text is {enc.truncated_tokens} tokens longer than the model window of {adapter.max_length}; "
                f"those tokens were left as they were and {len(enc.dropped_words)} masked word(s) beyond the window were not generated"
            )
            item_info["unfilled_masked_words"] = list(enc.dropped_words)
        if item.plan.note:
            item_info["masking_note"] = item.plan.note
        masked_text = item.words.replace({w: MASK_MARKER for w in item.plan.word_indices})
        generations.append(Generation(
            doc_id=item.doc_id, model=adapter.identity, model_kind=adapter.kind, sampler=sampler_spec,
            masking=item.plan.masking, seed=item.seed, original=item.words.text, masked_text=masked_text,
            text=item.words.replace(outputs[n]), masked_words=list(enc.filled_words), output_words=outputs[n],
            steps=trace.steps(n, adapter), forward_passes=counters.passes[n], tokens_processed=counters.tokens[n],
            generated_tokens=len(enc.masked), seconds=seconds, truncated_tokens=enc.truncated_tokens, info=item_info,
        ))
    return generations



def moved_here(old: str) -> Callable[[str], Any]:
    """The module ``__getattr__`` of a path this toolkit was documented under before (``old``): each name
    read there is this module's, with a DeprecationWarning naming the path to import it from instead."""
    import sys
    import warnings

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):  # the old module's own dunders only (tools probe for them)
            raise AttributeError(f"module {old!r} has no attribute {name!r}")
        value = getattr(sys.modules[__name__], name)
        warnings.warn(f"{old} is deprecated: import {name} from {__name__}", DeprecationWarning, stacklevel=2)
        return value

    return __getattr__
