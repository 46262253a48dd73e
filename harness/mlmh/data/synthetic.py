"""Synthetic corpora: the train documents rewritten by a condition's generations, for downstream tasks.

The paper's protocol trains each downstream model on synthetic text and tests it on real text
(:func:`synthetic_corpus`); augmentation, as Kumar, Choudhary & Cho 2020 and SSMBA (Ng et al. 2020) measure it,
trains on the real text and the synthetic together (:func:`augmented_corpus`). A
generation only changes the masked words, so annotations follow the words: unmasked words keep their
characters (offsets shifted by the length changes before them) and a generated word that replaces a word
inside an entity is inside that entity in the new text. That keeps NER labels, tags, authors and pairs
usable on the synthetic documents.
"""

from __future__ import annotations

import dataclasses

from mlmh.types import Corpus, Document, EntitySpan, Generation, Words
from mlmh.words import split_words


def rewritten_spans(words: Words, outputs: dict[int, str]) -> tuple[str, list[tuple[int, int]]]:
    """The text with ``outputs`` in place of their words, and every word's span in that text."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    position = last = 0
    for index, (start, end) in enumerate(words.spans):
        gap = words.text[last:start]
        piece = outputs.get(index, words.text[start:end])
        parts += [gap, piece]
        position += len(gap)
        spans.append((position, position + len(piece)))
        position += len(piece)
        last = end
    parts.append(words.text[last:])
    return "".join(parts), spans


def _trimmed(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def realign_entity(entity: EntitySpan, words: Words, new_text: str, new_spans: list[tuple[int, int]], masked: set[int]) -> EntitySpan | None:
    """``entity`` moved into the rewritten text, or None when nothing of it is left."""
    fragments: list[tuple[int, int]] = []
    for start, end in entity.fragments or ((entity.start, entity.end),):
        covered = [i for i, (ws, we) in enumerate(words.spans) if ws < end and we > start]
        if not covered:
            continue
        first, last = covered[0], covered[-1]
        if first in masked:
            new_start = _trimmed(new_text, *new_spans[first])[0]
        else:
            new_start = new_spans[first][0] + max(0, start - words.spans[first][0])
        if last in masked:
            new_end = _trimmed(new_text, *new_spans[last])[1]
        else:
            new_end = new_spans[last][0] + (min(end, words.spans[last][1]) - words.spans[last][0])
        new_start, new_end = _trimmed(new_text, new_start, new_end)
        if new_end > new_start:
            fragments.append((new_start, new_end))
    if not fragments:
        return None
    text = " ".join(new_text[s:e] for s, e in fragments)
    return EntitySpan(fragments[0][0], fragments[-1][1], entity.label, text, tuple(fragments))


def synthetic_document(document: Document, generation: Generation) -> tuple[Document, int, bool]:
    """The document rewritten by ``generation``; also the number of entities lost and whether the
    generation's text matched its word alignment (if not, its text is kept and its entities are dropped)."""
    words = split_words(document.text)
    valid = all(0 <= i < len(words) for i in generation.output_words)
    new_text, new_spans = rewritten_spans(words, generation.output_words) if valid else (generation.text, [])
    meta = {**document.meta, "synthetic": {"model": generation.model, "sampler": generation.sampler, "masking": generation.masking, "seed": generation.seed}}
    if not valid or new_text != generation.text:
        return dataclasses.replace(document, text=generation.text, entities=[], meta=meta), len(document.entities), False
    masked = set(generation.output_words)
    entities = [realign_entity(e, words, new_text, new_spans, masked) for e in document.entities]
    kept = [e for e in entities if e is not None]
    return dataclasses.replace(document, text=new_text, entities=kept, meta=meta), len(entities) - len(kept), True


def synthetic_corpus(corpus: Corpus, generations: dict[str, Generation]) -> Corpus:
    """``corpus`` with each train document that has a generation replaced by it; pairs, labels and
    authors kept. Train documents without a generation stay real and are counted in ``notes``."""
    documents: list[Document] = []
    real = lost = unaligned = 0
    for document in corpus.documents:
        generation = generations.get(document.id)
        if document.split != "train" or generation is None:
            real += document.split == "train"
            documents.append(document)
            continue
        rewritten, entities_lost, aligned = synthetic_document(document, generation)
        lost += entities_lost
        unaligned += not aligned
        documents.append(rewritten)
    notes = list(corpus.notes)
    if real:
        notes.append(f"synthetic: {real} train document(s) had no generation and stay real")
    if unaligned:
        notes.append(f"synthetic: {unaligned} generation(s) did not match their word alignment; their entities were dropped")
    if lost:
        notes.append(f"synthetic: {lost} entity span(s) vanished (generated as empty text)")
    return Corpus(dataset=corpus.dataset, documents=documents, source=f"synthetic from {corpus.source}", pairs=list(corpus.pairs), notes=notes)


#: the id a train document's regeneration takes beside the real document in an augmented corpus
SYNTHETIC_ID = "{id}~synthetic"


def augmented_corpus(corpus: Corpus, generations: dict[str, Generation]) -> Corpus:
    """``corpus``'s train documents and, beside each that has a generation, its rewrite (:func:`synthetic_document`)
    under a new id (``meta["origin"]`` names the real one);
    each train pair also comes a second time between the rewrites (a document without one keeps its real text
    there), so the corpus holds the real training data and the synthetic together. Other splits stay as they are."""
    documents = list(corpus.documents)
    renamed: dict[str, str] = {}
    lost = unaligned = 0
    for document in corpus.documents:
        generation = generations.get(document.id)
        if document.split != "train" or generation is None:
            continue
        rewritten, entities_lost, aligned = synthetic_document(document, generation)
        lost += entities_lost
        unaligned += not aligned
        renamed[document.id] = SYNTHETIC_ID.format(id=document.id)
        documents.append(dataclasses.replace(rewritten, id=renamed[document.id],
                                             meta={**rewritten.meta, "origin": document.id}))
    pairs = list(corpus.pairs)
    pairs += [dataclasses.replace(p, id=SYNTHETIC_ID.format(id=p.id), a=renamed.get(p.a, p.a), b=renamed.get(p.b, p.b))
              for p in corpus.pairs if p.split == "train" and (p.a in renamed or p.b in renamed)]
    notes = list(corpus.notes) + [f"augmented: {len(renamed)} regenerated train document(s) beside the real ones"]
    if unaligned:
        notes.append(f"synthetic: {unaligned} generation(s) did not match their word alignment; their entities were dropped")
    if lost:
        notes.append(f"synthetic: {lost} entity span(s) vanished (generated as empty text)")
    return Corpus(dataset=corpus.dataset, documents=documents, source=f"real and synthetic from {corpus.source}",
                  pairs=pairs, notes=notes)
