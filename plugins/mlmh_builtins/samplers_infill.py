"""Prefix-only infilling for causal LMs and seq2seq decoders.

Each masked span is written left to right, conditioned on everything before it (original unmasked
tokens and the spans already written), with exactly the span's token count as budget. Tokens after
the span are kept as they were. With the KV cache each span costs one prefill (which also predicts
the span's first token) plus one pass per further token; a seq2seq decoder additionally attends to
its encoder, which sees the whole text with one mask/sentinel per span (so it knows the right context).
"""

from __future__ import annotations

import time
from typing import ClassVar, Sequence, cast

from mlmh.components import BenchCase, Sampler
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem

from mlmh.toolkit import (SAMPLING_PARAMS, Decoder, Encoding, ItemCounters, ItemGenerators, Seq2Seq, Seq2SeqEncoding,
                          TraceRecorder, build_generations, choose_tokens, draw_uniforms, encode_items, item_generators)

USE_CACHE = Param("use_cache", bool, True, "reuse the KV cache (false: recompute the whole prefix every step)")


class PrefixInfill(Sampler[Decoder]):
    """Shared loop of ``clm-infill`` and ``seq2seq-infill``."""

    parameters = (USE_CACHE, *SAMPLING_PARAMS)

    def generate(self, adapter: Decoder, items: Sequence[MaskedItem]) -> list[Generation]:
        started = time.perf_counter()
        encodings = encode_items(adapter, items)
        sequences = [list(e.ids) for e in encodings]
        trace = TraceRecorder.for_encodings(encodings)
        counters = ItemCounters.zeros(len(items))
        generators = item_generators(items)
        active = [n for n, e in enumerate(encodings) if e.masked]
        use_cache = self.params["use_cache"]
        if active and adapter.kind == "seq2seq":
            sources = [cast(Seq2SeqEncoding, e).source_ids for e in encodings]  # a seq2seq adapter's encodings
            cast(Seq2Seq, adapter).encode_sources(sources)
            for n in active:  # the encoder pass, counted for every item it served
                counters.add(n, len(sources[n]))
        groups = [active] if (adapter.supports_holes or not use_cache) else lockstep_groups(encodings, active)
        for group in groups:
            if group:
                self._fill(adapter, group, encodings, sequences, generators, trace, counters, use_cache)
        generations = build_generations(adapter, self.spec, items, encodings, sequences, trace, counters, started,
                                        {"use_cache": use_cache})
        for generation, encoding in zip(generations, encodings):
            generation.info["prefills"] = len(encoding.spans())  # one per masked span
        return generations

    def _fill(self, adapter: Decoder, group: list[int], encodings: Sequence[Encoding], sequences: list[list[int]],
              generators: ItemGenerators, trace: TraceRecorder, counters: ItemCounters, use_cache: bool) -> None:
        """Generate every masked position of the items in ``group``, one token per item per pass."""
        temperature, top_k, top_p = self.params["temperature"], self.params["top_k"], self.params["top_p"]
        state = adapter.new_state(len(group), use_cache)
        targets = [list(encodings[n].masked) for n in group]
        cursor = [0] * len(group)  # next target index per row
        fed = [0] * len(group)  # tokens already in the cache per row
        while True:
            live = [i for i in range(len(group)) if cursor[i] < len(targets[i])]
            if not live:
                return
            chunks: list[list[int]] = []
            for i in range(len(group)) if use_cache else live:
                seq = sequences[group[i]]
                if cursor[i] >= len(targets[i]):
                    chunks.append([])
                    continue
                position = targets[i][cursor[i]]
                chunks.append(seq[fed[i]:position] if use_cache else seq[:position])
                fed[i] = position
            rows = group if use_cache else [group[i] for i in live]
            logits = adapter.next_logits(chunks, state, rows)
            if use_cache and len(live) < len(group):
                logits = logits[live]
                chunks = [chunks[i] for i in live]
            uniforms = draw_uniforms(generators, [group[i] for i in live], [1] * len(live), temperature > 0)
            ids, probs = choose_tokens(logits, uniforms, temperature, top_k, top_p)
            for i, chunk, tid, prob in zip(live, chunks, ids.tolist(), probs.tolist()):
                n = group[i]
                position = targets[i][cursor[i]]
                sequences[n][position] = tid
                cursor[i] += 1
                counters.add(n, len(chunk))
                trace.step_one(n, position, tid, prob)
            del logits  # a view of the pass's full logits (the prefill's are large): free before the next pass


def lockstep_groups(encodings: Sequence[Encoding], active: Sequence[int]) -> list[list[int]]:
    """Rows whose masked positions are identical, in first-seen order.

    Such rows feed chunks of equal length at every step, so they share one cache without padding
    holes: decoders whose positions come from the cache length (BART) can then batch them.
    """
    groups: dict[tuple[int, ...], list[int]] = {}
    for n in active:
        groups.setdefault(tuple(encodings[n].masked), []).append(n)
    return list(groups.values())


class ClmInfill(PrefixInfill):
    """Causal-LM infilling conditioned on the prefix only (the paper's CLM generation), KV-cached."""

    name = "clm-infill"
    description = "Fill each masked span left to right from its prefix, keeping unmasked tokens; KV cache."
    model_kinds: ClassVar[frozenset[str]] = frozenset({"clm"})
    default_for = frozenset({"clm"})
    bench = (BenchCase("clm-infill (KV cache)", "clm-infill", 50, "use_cache=true", reference=True),
             BenchCase("clm-infill (no cache)", "clm-infill-nocache", 51, "use_cache=false"))


class Seq2SeqInfill(PrefixInfill):
    """Denoising infilling (T5 sentinels or BART <mask> spans): the decoder writes each span's tokens."""

    name = "seq2seq-infill"
    description = "Encoder sees one sentinel/<mask> per span; the decoder writes each span (T5/BART denoising)."
    model_kinds: ClassVar[frozenset[str]] = frozenset({"seq2seq"})
    default_for = frozenset({"seq2seq"})
    bench = (BenchCase("seq2seq-infill", "seq2seq-infill", 60),)
