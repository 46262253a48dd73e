"""The generation library the runner, the TUI playground and ``mlmh bench`` call.

Two steps: :func:`prepare_items` masks documents (model-independent, so every model of a condition
sees the same masked words), then :func:`generate` runs a sampler over them in batches. Outside a run,
texts are regenerated one way: :func:`mask_texts` cuts them to the models' windows and masks them as a
run does, then :func:`regenerate` lets each model regenerate them in turn.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from mlmh.components import Masking, Sampler
from mlmh.errors import SpecError
from mlmh.machine.seeding import mask_seed, sample_seed
from mlmh.types import Document, Generation, MaskedItem, MaskPlan, Words
from mlmh.words import split_words

if TYPE_CHECKING:
    from mlmh.toolkit import Adapter


def prepare_items(documents: Sequence[Document], masking: Masking, seed: int) -> list[MaskedItem]:
    """Mask every document: the mask and the sampler's random stream depend on (seed, masking spec, doc id)
    only, so every model and sampler of a masking is compared on the same words and random numbers."""
    items = []
    for document in documents:
        words = split_words(document.text)
        rng = np.random.default_rng(mask_seed(seed, masking.spec, document.id))
        plan = masking.mask(document, words, rng)
        items.append(MaskedItem(doc_id=document.id, words=words, plan=plan,
                                seed=sample_seed(seed, masking.spec, document.id)))
    return items


def fit_to_windows(documents: Sequence[Document], adapters: Sequence[Any]) -> tuple[list[Document], int]:
    """Each document cut after the last whole word that fits every model's window, and how many were cut.

    Words beyond a model's window cannot be generated; left in the text they would count as perfectly
    regenerated and inflate every metric (a 1 MB document scored BLEU 99). Cutting before masking keeps
    the comparison fair: every model sees the same words, every masked word is generated, and the
    reference is the text the models saw. Entities past the cut are dropped with it.

    A document fits when the adapter's own encoding of it, every word masked, is not truncated: the cut is
    made before any masking, so it holds for the most tokens a masking can make of the words
    (:func:`every_word_masked`), not for those of the text unmasked.
    """
    import dataclasses

    if not adapters or not documents:
        return list(documents), 0
    splits = [split_words(d.text) for d in documents]
    keep = [len(w) for w in splits]
    for adapter in adapters:
        if not hasattr(adapter, "encode_batch"):  # a plugin adapter that does not tokenize has no window to fit
            continue
        encodings = adapter.encode_batch([(w, every_word_masked(w)) for w in splits])
        for n, encoding in enumerate(encodings):
            if encoding.truncated_tokens:  # the words the model reads whole (a seq2seq model: in its source)
                counted = getattr(encoding, "words_in_window", -1)  # a plugin adapter's encoding may not count
                inside = counted if counted >= 0 else max((i for i in encoding.word_of if i >= 0), default=-1) + 1
                keep[n] = min(keep[n], inside)
    out, cut = [], 0
    for document, words, n in zip(documents, splits, keep):
        if n >= len(words) or n == 0:
            out.append(document)
            continue
        end = words.spans[n - 1][1]
        cut += 1
        out.append(dataclasses.replace(
            document, text=document.text[:end], entities=[e for e in document.entities if e.end <= end],
            meta={**document.meta, "cut_to_window": {"words": n, "of_words": len(words)}}))
    return out, cut


def every_word_masked(words: Words) -> MaskPlan:
    """The plan that masks every word: the longest encoding a masking makes of ``words``.

    An adapter tokenizes each masked word on its own (with the whitespace before it) and the unmasked runs
    between them as they stand, so the tokens of a text depend on its mask: a word glued to a symbol
    ("marmot®") is one [UNK] to a WordPiece tokenizer in the running text and four pieces masked, and a
    SentencePiece tokenizer starts every piece with a word boundary. Cut apart at every word, a text takes
    at least as many tokens as under any masking of its words, wherever joining words never takes a tokenizer
    more tokens than tokenizing them apart (the usual case: pre-tokenizers split at spaces and most
    punctuation); where one does, :func:`check_filled` still fails the batch naming the window."""
    return MaskPlan(masking="", word_indices=tuple(range(len(words))))


def check_compatible(sampler: Sampler, model_kind: str) -> None:
    """One-line SpecError when ``sampler`` cannot drive a ``model_kind`` model (the rule:
    :func:`mlmh.config.plan.fits`)."""
    from mlmh.config.plan import check_fits

    check_fits(sampler, model_kind)


def generate(
    adapter: Adapter,
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
    out: list[Generation] = []
    for index, start in enumerate(range(0, len(items), batch_size)):
        adapter.reset_counters()
        with CollectionDeferred():
            batch = sampler.generate(adapter, items[start : start + batch_size])
        check_filled(sampler, adapter, items[start : start + batch_size], batch)
        for generation in batch:
            generation.info.setdefault("batch_forward_passes", adapter.forward_passes)
            generation.info.setdefault("batch_size", len(batch))
        out.extend(batch)
        if on_batch is not None:
            on_batch(index, batch)
    return out


@dataclass(frozen=True)
class MaskedTexts:
    """Texts ready to regenerate, one :class:`~mlmh.types.MaskedItem` each, masked as a run with the same seed
    masks them; ``cuts`` says, by the item's position, where :func:`mask_texts` cut its text to the models'
    windows and why (empty: nothing was cut)."""

    items: tuple[MaskedItem, ...]
    cuts: Mapping[int, str] = field(default_factory=dict)


def mask_texts(documents: Sequence[Document], masking: Masking, seed: int, adapters: Sequence[Any]) -> MaskedTexts:
    """``documents`` cut after the last whole word every one of ``adapters`` reads, as a run cuts its documents
    (:func:`fit_to_windows`: each masked word is then one every model writes), and masked by ``masking`` as a run
    with ``seed`` masks them (:func:`prepare_items`)."""
    cut, _ = fit_to_windows(documents, adapters)
    windows = [w for w in (getattr(a, "max_length", None) for a in adapters) if isinstance(w, int)]
    cuts = {n: f"text cut after word {kept['words']} of {kept['of_words']}, the last that fits the model window of "
               f"{min(windows, default='?')} tokens; the words after it were neither masked nor generated"
            for n, kept in enumerate(document.meta.get("cut_to_window") for document in cut) if kept}
    return MaskedTexts(tuple(prepare_items(cut, masking, seed)), cuts)


def regenerate(sides: Sequence[tuple[Adapter, Sampler]], masked: MaskedTexts,
               batch_size: int = 8) -> Iterator[list[Generation]]:
    """The one way texts are regenerated outside a run (``mlmh generate``, the TUI's playground through
    :func:`mlmh.api.compare`, :func:`mlmh.run.reproduce.reproduce`, ``mlmh bench``'s sampler cells): each side, an
    (adapter, sampler) pair, regenerates the same ``masked`` items (:func:`generate`), in order, a cut text's
    generations saying so. A side generates when the caller asks for its generations, so a caller may stop
    between sides."""
    for adapter, sampler in sides:
        generations = generate(adapter, sampler, masked.items, batch_size=batch_size)
        for position, note in masked.cuts.items():
            generations[position].info["cut_to_window"] = note
        yield generations


def check_filled(sampler: Sampler, adapter: Adapter, items: Sequence[MaskedItem], batch: Sequence[Generation]) -> None:
    """The rule that makes a scored word a word the model wrote, for every sampler and model kind: the text at
    every masked word is the sampler's output for it. A masked word left as it was (beyond the model window),
    missing, or with a mask token in it fails the batch in one line naming why; never a silently kept original
    that the scorer would count as perfectly regenerated."""
    from mlmh.errors import ModelError, PluginError

    if len(batch) != len(items):
        raise PluginError(f"sampler '{sampler.short_spec}' returned {len(batch)} generations for {len(items)} items")
    # the adapter's copy where it keeps one (BaseAdapter), else its tokenizer's
    mask_token = getattr(adapter, "mask_token") if hasattr(adapter, "mask_token") else \
        getattr(getattr(adapter, "tokenizer", None), "mask_token", None)
    for item, generation in zip(items, batch):
        if not isinstance(generation, Generation) or generation.doc_id != item.doc_id:
            got = generation.doc_id if isinstance(generation, Generation) else type(generation).__name__
            raise PluginError(f"sampler '{sampler.short_spec}' returned {got!r} where document '{item.doc_id}' "
                              "was asked (one Generation per item, in order)")
        unreached = [i for i in generation.info.get("unfilled_masked_words", ()) if i not in generation.output_words]
        if unreached:
            window = getattr(adapter, "max_length", "?")
            raise ModelError(f"document '{item.doc_id}': {len(unreached)} masked word(s) lie beyond the window of "
                             f"model '{generation.model}' ({window} tokens) and were not generated; a run cuts its "
                             "documents to the window before masking, so cut the text or choose a model with a "
                             "larger window")
        missing = [i for i in item.plan.word_indices if i not in generation.output_words]
        if missing:
            raise PluginError(f"sampler '{sampler.short_spec}' left {len(missing)} masked word(s) of document "
                              f"'{item.doc_id}' unfilled (word indices {missing[:5]})")
        if mask_token and any(mask_token in text for text in generation.output_words.values()):
            raise PluginError(f"sampler '{sampler.short_spec}' left a mask token {mask_token} in document "
                              f"'{item.doc_id}'")
        if generation.text != item.words.replace({i: generation.output_words[i] for i in item.plan.word_indices}):
            raise PluginError(f"sampler '{sampler.short_spec}': the text of document '{item.doc_id}' is not the "
                              "original with its masked words replaced by the sampler's output for them")


class CollectionDeferred:
    """Pause Python's cyclic garbage collector for one batch, then collect the young generations once,
    if the batch allocated enough for the collector to have run meanwhile.

    A batch allocates many small containers (step traces, token lists), and every automatic pass
    they trigger walks all live objects, models included: 12 % of a long clm-infill batch at size
    tiny (docs/PERFORMANCE.md). Nothing a sampler builds needs cycle collection to be freed. A small
    batch (one short text) stays below the collector's threshold, and collecting after it anyway
    cost 10-15 us, about 1 % of a tiny model's pass; so did a generator-based context manager.
    """

    def __enter__(self) -> None:
        self.paused = gc.isenabled()
        if self.paused:
            gc.disable()

    def __exit__(self, *exc: object) -> None:
        if self.paused:
            gc.enable()
            if gc.get_count()[0] >= gc.get_threshold()[0]:
                gc.collect(1)
