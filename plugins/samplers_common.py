"""What every builtin sampler shares: token choice (greedy / temperature / top-k / top-p), per-item
random generators, a cheap step-trace recorder and the assembly of :class:`~mlmh.types.Generation`.

Third-party samplers may import these helpers; nothing here is specific to one algorithm.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from mlmh.adapters import MASK_MARKER, BaseAdapter, Encoding
from mlmh.params import Param
from mlmh.types import Generation, MaskedItem, Step

SAMPLING_PARAMS: tuple[Param, ...] = (
    Param("temperature", float, 0.0, "0 = greedy (argmax); > 0 samples from softmax(logits / temperature)", min=0.0),
    Param("top_k", int, 0, "sample only among the k most likely tokens (0 = all)", min=0),
    Param("top_p", float, 1.0, "nucleus sampling: smallest set of tokens with this much probability", min=0.01, max=1.0),
)


def choose_tokens(logits: Any, uniforms: Any, temperature: float, top_k: int, top_p: float) -> tuple[Any, Any]:
    """Pick one token per row of ``logits`` (n, vocab); returns (ids, probability of each pick).

    Greedy when ``temperature`` is 0 (``uniforms`` unused); otherwise inverse-CDF sampling with the
    given uniforms (one per row, drawn from each item's own generator, so batching cannot change them).
    """
    import torch

    if logits.shape[0] == 0:
        return torch.zeros(0, dtype=torch.long), torch.zeros(0)
    if temperature <= 0:
        probs = torch.softmax(logits, dim=-1)
        conf, ids = probs.max(dim=-1)
        return ids, conf
    scaled = logits / temperature
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
    targets = (uniforms.to(cdf.dtype) * cdf[:, -1]).unsqueeze(-1)
    ids = torch.searchsorted(cdf, targets, right=True).squeeze(-1).clamp_(max=probs.shape[-1] - 1)
    return ids, probs.gather(-1, ids.unsqueeze(-1)).squeeze(-1)


def item_generators(items: Sequence[MaskedItem]) -> list[Any]:
    """One ``torch.Generator`` per item, seeded by the item's seed: outputs do not depend on batching."""
    import torch

    return [torch.Generator().manual_seed(int(item.seed) % (2**63)) for item in items]


def draw_uniforms(generators: Sequence[Any], rows: Sequence[int], counts: Sequence[int], needed: bool) -> Any:
    """Uniforms for ``counts[i]`` picks of item ``rows[i]``, drawn from that item's generator."""
    import torch

    total = int(sum(counts))
    if not needed or total == 0:
        return torch.zeros(total)
    return torch.cat([torch.rand(int(n), generator=generators[r]) for r, n in zip(rows, counts)])


@dataclass
class TraceRecorder:
    """Per-item step changes as plain ints; token strings are made once, at the end."""

    initial: list[list[int]]
    masked: list[set[int]]
    events: list[list[tuple[list[int], list[int], list[float], list[int]]]] = field(default_factory=list)

    @classmethod
    def for_encodings(cls, encodings: Sequence[Encoding]) -> "TraceRecorder":
        return cls([list(e.ids) for e in encodings], [set(e.masked) for e in encodings], [[] for _ in encodings])

    def step(self, item: int, positions: list[int], ids: list[int], confidences: list[float], remasked: Sequence[int] = ()) -> None:
        """Item ``item`` got ``ids`` at ``positions`` (with those probabilities); ``remasked`` went back to the mask."""
        self.events[item].append((positions, ids, confidences, list(remasked)))

    def steps(self, item: int, adapter: BaseAdapter) -> list[Step]:
        current = list(self.initial[item])
        masked = set(self.masked[item])
        out: list[Step] = []
        for positions, ids, confs, remasked in self.events[item]:
            changed = []
            for pos, tid in zip(positions, ids):
                if current[pos] != tid or pos in masked:
                    changed.append(pos)
                current[pos] = tid
                masked.discard(pos)
            for pos in remasked:
                current[pos] = adapter.mask_id
                masked.add(pos)
                changed.append(pos)
            out.append(Step(
                tokens=adapter.tokens_to_strings(current),
                changed=sorted(set(changed)),
                confidences={p: round(float(c), 6) for p, c in zip(positions, confs)},
                masked=sorted(masked),
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
    adapter: BaseAdapter,
    sampler_spec: str,
    items: Sequence[MaskedItem],
    encodings: Sequence[Encoding],
    final_ids: Sequence[Sequence[int]],
    trace: TraceRecorder,
    counters: ItemCounters,
    started: float,
    info: dict[str, Any] | None = None,
) -> list[Generation]:
    """Decode every masked word (one batched decode) and assemble the items' Generations."""
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
