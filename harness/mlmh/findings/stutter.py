"""Stutter (Li et al. 2024, "Promises and pitfalls of generative masked language modeling"): generated
positions equal to their left neighbour. One definition, shared by the ``stutter`` metric (a builtin
plugin) and the claims the core checks (:mod:`mlmh.findings.claims`), so the two cannot drift apart."""

from __future__ import annotations

from typing import Sequence

from mlmh.types import Generation
from mlmh.words import split_words


def generated_words(generation: Generation) -> list[tuple[str, bool]]:
    """(word, generated?) along the generation's final text: each masked word's output, split into
    words, marked generated; every other word as the original had it."""
    masked = set(generation.masked_words)
    out: list[tuple[str, bool]] = []
    for index, word in enumerate(split_words(generation.original)):
        if index in masked:
            out.extend((w, True) for w in split_words(generation.output_words.get(index, "")))
        else:
            out.append((word, False))
    return out


def repeats_left_neighbour(sequence: Sequence[str], generated: Sequence[bool]) -> tuple[int, int]:
    """(generated positions equal to their left neighbour, generated positions that have one)."""
    hits = total = 0
    for p in range(1, len(sequence)):
        if generated[p]:
            total += 1
            hits += sequence[p] == sequence[p - 1]
    return hits, total
