"""The seq2seq objective's corruption, chosen by the tokenizer: BART text infilling or T5 span corruption.

Design decision: a seq2seq checkpoint trains with the corruption it was pre-trained with. A tokenizer with T5's
sentinels (``<extra_id_0>``, ``<extra_id_1>``, ...) gets span corruption; one with a mask token (BART, and the
WordPiece vocabularies mlmh trains) gets BART's text infilling (:func:`mlmh.training.data.infill_example`); one
with neither cannot be corrupted and is refused. The sentinel test is the one the seq2seq adapter uses to regenerate
(:mod:`mlmh.adapters.sentinels`), so a model trains and generates through the same tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from mlmh.adapters.sentinels import sentinel_ids
from mlmh.errors import SpecError

if TYPE_CHECKING:
    import numpy as np

SPAN_CORRUPTION = "span corruption"
TEXT_INFILLING = "text infilling"
NOISE_DENSITY = 0.15  # T5's share of corrupted tokens
MEAN_NOISE_SPAN = 3.0  # T5's mean corrupted span length
CORRUPTION_NOTES = {
    SPAN_CORRUPTION: "T5 span corruption (Raffel et al. 2020): spans of mean length 3 replaced by sentinels "
                     "<extra_id_N> in the input; the target lists each sentinel with its span",
    TEXT_INFILLING: "BART text infilling (Lewis et al. 2020): Poisson(3) spans each replaced by one mask token; "
                    "the decoder rebuilds the whole block",
}


def corruption_for(tokenizer: Any, what: str) -> str:
    """:data:`SPAN_CORRUPTION` for a tokenizer with T5 sentinels, :data:`TEXT_INFILLING` for one with a mask
    token; anything else refused in one line naming ``what`` (e.g. ``--init DIR``) and what it lacks."""
    if len(sentinel_ids(tokenizer)) >= 2:  # at least one span and the closing sentinel
        return SPAN_CORRUPTION
    if tokenizer.mask_token_id is not None:
        return TEXT_INFILLING
    raise SpecError(f"{what}: its tokenizer has neither a mask token (BART text infilling) nor T5 sentinels "
                    "<extra_id_0>, <extra_id_1>, ... (span corruption); objective 'seq2seq' needs one of them")


def random_segmentation(items: int, segments: int, rng: "np.random.Generator") -> list[int]:
    """``items`` split into ``segments`` positive lengths, every such split equally likely."""
    cuts = sorted((rng.choice(items - 1, size=segments - 1, replace=False) + 1).tolist()) if segments > 1 else []
    bounds = [0, *cuts, items]
    return [b - a for a, b in zip(bounds, bounds[1:])]


def noise_spans(n: int, rng: "np.random.Generator", density: float = NOISE_DENSITY,
                mean_span: float = MEAN_NOISE_SPAN, max_spans: int | None = None) -> list[tuple[int, int]]:
    """T5's corrupted spans ``(start, length)`` over ``n`` tokens (Raffel et al. 2020, sec. 3.1.4).

    ``round(density * n)`` noise tokens (at least 1, at most n - 1) in ``round(noise / mean_span)`` spans
    (at least 1, at most ``max_spans``); the noise and the kept tokens are each cut into that many random
    positive lengths and interleaved kept, noise, kept, noise, ..., so the text starts with a kept stretch.
    """
    if n < 2:
        return []
    noise = min(max(int(round(n * density)), 1), n - 1)
    spans = max(int(round(noise / mean_span)), 1)
    spans = min(spans, noise, n - noise, max_spans or spans)
    noise_lengths = random_segmentation(noise, spans, rng)
    kept_lengths = random_segmentation(n - noise, spans, rng)
    out, position = [], 0
    for kept, hidden in zip(kept_lengths, noise_lengths):
        position += kept
        out.append((position, hidden))
        position += hidden
    return out


def span_corruption_example(block: Sequence[int], start_id: int | None, end_id: int | None, sentinels: Sequence[int],
                            density: float, rng: "np.random.Generator") -> tuple[list[int], list[int], list[bool]]:
    """``(source, target, hidden)`` of one block ``[start] content [end]``: the source keeps the content with
    each noise span replaced by the next sentinel; the target is ``sentinel_0 span_0 sentinel_1 span_1 ...
    sentinel_k [end]``; ``hidden`` marks the target's span tokens (not its sentinels or end), the tokens a
    model is judged on."""
    head = 1 if start_id is not None and block and block[0] == start_id else 0
    tail = 1 if end_id is not None and len(block) > head and block[-1] == end_id else 0
    content = list(block[head: len(block) - tail])
    spans = noise_spans(len(content), rng, density, max_spans=len(sentinels) - 1)
    source: list[int] = list(block[:head])
    target: list[int] = []
    hidden: list[bool] = []
    cursor = 0
    for k, (s, length) in enumerate(spans):
        source += content[cursor:s] + [sentinels[k]]
        target += [sentinels[k], *content[s:s + length]]
        hidden += [False] + [True] * length
        cursor = s + length
    source += content[cursor:] + list(block[len(block) - tail:])
    target.append(sentinels[len(spans)])
    hidden.append(False)
    if tail:
        target.append(block[-1])
        hidden.append(False)
    return source, target, hidden
