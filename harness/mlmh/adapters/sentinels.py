"""T5's sentinels: which ``<extra_id_N>`` tokens a tokenizer has, and masked spans merged to fit them.

One sentinel test for both sides of a seq2seq model: the seq2seq adapter regenerates through these tokens
(:class:`mlmh.adapters.decoding.Seq2SeqAdapter`), and training chooses T5 span corruption by them
(:func:`mlmh.training.corruption.corruption_for`), so a model trains and generates through the same tokens.
"""

from __future__ import annotations

from typing import Any, Sequence


def sentinel_ids(tokenizer: Any) -> list[int]:
    """The ids of ``<extra_id_0>``, ``<extra_id_1>``, ... in order, as far as the vocabulary has them."""
    unknown = tokenizer.unk_token_id
    ids: list[int] = []
    while True:
        tid = tokenizer.convert_tokens_to_ids(f"<extra_id_{len(ids)}>")
        if tid is None or tid == unknown:
            return ids
        ids.append(int(tid))


def spans_to_fit(spans: Sequence[tuple[int, int]], limit: int) -> list[tuple[int, int]]:
    """Masked runs ``[start, end)`` merged until at most ``limit`` remain, the two closest first (fewest kept
    tokens between them; the leftmost pair on a tie).

    Why: T5 writes one span per sentinel, and a checkpoint may have fewer sentinels than a masking makes
    spans. A merged span hides the kept tokens between its runs from the encoder under one sentinel; the
    decoder is given those tokens back as they are and writes only the masked ones, so every masked token
    is still the model's own and no kept word changes.
    """
    merged = [tuple(span) for span in spans]
    if limit < 1:
        raise ValueError(f"at least one sentinel is needed to merge spans into; got {limit}")
    while len(merged) > limit:
        gaps = [merged[i + 1][0] - merged[i][1] for i in range(len(merged) - 1)]
        i = gaps.index(min(gaps))
        merged[i: i + 2] = [(merged[i][0], merged[i + 1][1])]
    return merged  # type: ignore[return-value]  # pairs built from the spans' own int bounds
