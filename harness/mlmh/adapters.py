"""Uniform adapters around a Hugging Face model + fast tokenizer, one per model kind.

Samplers (builtin and third-party) talk only to these: they turn masked *words* into model tokens the
same way for every kind, batch with padding, and count forward passes and tokens processed.

Word-to-token mapping: the text is cut at the boundaries of every masked word (the whitespace before
a masked word travels with it, so byte-level BPE keeps its ``Ġword`` tokens) and the pieces are
tokenized in one batched call; the fast tokenizer's offset mapping then names the word of every token.
Cutting guarantees that no token straddles a masked and an unmasked word (byte-level BPE merges runs
of punctuation), so generation can never change an unmasked word.

Texts longer than the model window are truncated at a word boundary: the masked words beyond the
window are not generated (they keep their original text), and the count of dropped tokens is kept in
:attr:`Encoding.truncated_tokens` and said in ``Generation.info``.
"""

from __future__ import annotations

import bisect
import hashlib
import inspect
import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Sequence

from mlmh.errors import ModelError
from mlmh.readout import logits_at, output_at
from mlmh.span_corruption import sentinel_ids
from mlmh.types import MaskPlan, Words

MODEL_KINDS = ("mlm", "clm", "seq2seq")
_DTYPES = ("float32", "bfloat16", "float16")
#: The marker shown in ``Generation.masked_text`` for every masked word, whatever the model.
MASK_MARKER = "[MASK]"
#: From this many texts on, tokenize/decode with the Rust tokenizer's parallel batch call.
_PARALLEL_BATCH = 256
#: Masked-word pieces (" word") whose tokenization an adapter keeps; a full table is emptied before the
#: next encoding call.
_MASKED_PIECES_KEPT = 100_000
#: Tokens of the encodings an adapter keeps (about 100 bytes each); a full table is emptied likewise.
_ENCODED_TOKENS_KEPT = 1_000_000


@dataclass
class Encoding:
    """One item as model tokens. ``ids`` holds a placeholder (the mask id) at every masked position."""

    ids: list[int]
    masked: list[int]  # positions of masked tokens, ascending
    word_of: list[int]  # word index of every position; -1 for special tokens
    filled_words: tuple[int, ...]  # masked words inside the window: these get generated
    dropped_words: tuple[int, ...] = ()  # masked words beyond the window: kept as they were
    truncated_tokens: int = 0

    def copy(self) -> "Encoding":
        """A copy whose lists the caller may change (an adapter keeps its encodings and hands them out again)."""
        clone = object.__new__(type(self))
        clone.__dict__.update((name, list(value) if type(value) is list else value) for name, value in vars(self).items())
        return clone

    def spans(self) -> list[tuple[int, int]]:
        """Maximal runs ``[start, end)`` of consecutive masked positions."""
        runs: list[tuple[int, int]] = []
        for pos in self.masked:
            if runs and runs[-1][1] == pos:
                runs[-1] = (runs[-1][0], pos + 1)
            else:
                runs.append((pos, pos + 1))
        return runs


@dataclass
class Seq2SeqEncoding(Encoding):
    """Seq2seq item: ``ids``/``masked`` describe the decoder target; the encoder sees ``source_ids``."""

    source_ids: list[int] = field(default_factory=list)


class BaseAdapter:
    """What every adapter shares: tokenizer, window, counters, special-token handling."""

    kind = ""

    def __init__(self, model: Any, tokenizer: Any, *, identity: str = "", device: str = "cpu") -> None:
        import torch

        if not getattr(tokenizer, "is_fast", False):
            raise ModelError(f"model '{identity}': a fast (Rust) tokenizer is needed for offset mapping")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.identity = identity or getattr(model.config, "_name_or_path", "") or type(model).__name__
        self.device = torch.device(device)
        self.forward_passes = 0
        self.tokens_processed = 0
        self._decoded_ids: dict[int, str] = {}  # one-token words, decoded once (decode_words)
        self._masked_pieces: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}  # tokenized once (encode_batch)
        self._encodings: dict[tuple[str, tuple[int, ...]], Encoding] = {}  # encoded once (encode_batch)
        self._encoded_tokens = 0
        self.max_length = model_window(model.config, tokenizer)
        self.prefix_ids, self.suffix_ids = _special_affixes(tokenizer)
        self.mask_id = self._placeholder_id()
        special = sorted({i for i in tokenizer.all_special_ids if i is not None} | set(_added_special_ids(tokenizer)))
        vocab = int(self.model.get_output_embeddings().weight.shape[0]) if self.model.get_output_embeddings() is not None else len(tokenizer)
        self.vocab_size = vocab
        #: ids a sampler must never generate (specials, mask, sentinels, padding rows of the embedding)
        banned = torch.zeros(vocab, dtype=torch.bool)
        banned[[i for i in special if i < vocab]] = True
        if len(tokenizer) < vocab:
            banned[len(tokenizer):] = True
        self.banned_ids = banned.to(self.device)

    # -- counters ---------------------------------------------------------------------------
    def reset_counters(self) -> None:
        self.forward_passes = 0
        self.tokens_processed = 0

    def _count(self, attention_mask: Any, tokens: int | None = None) -> None:
        self.forward_passes += 1
        self.tokens_processed += int(attention_mask.sum()) if tokens is None else tokens

    # -- encoding -----------------------------------------------------------------------------
    def _placeholder_id(self) -> int:
        tok = self.tokenizer
        for candidate in (tok.mask_token_id, tok.unk_token_id, tok.pad_token_id, tok.eos_token_id):
            if candidate is not None:
                return int(candidate)
        return 0

    def encode(self, words: Words, plan: MaskPlan) -> Encoding:
        """Tokens of ``words`` with every sub-token of the plan's masked words replaced by a placeholder."""
        return self.encode_batch([(words, plan)])[0]

    def encode_batch(self, pairs: Sequence[tuple[Words, MaskPlan]]) -> list[Encoding]:
        """:meth:`encode` for many items: the pieces of all of them go through the tokenizer in one call
        (one call per item cost more than the tokenization itself on short texts).

        An encoding is a pure function of the text and its masked words, and a run encodes the same
        items again for every sampler of a masking: each is made once per adapter and then copied
        (making one cost about a tenth of a tiny model's pass, docs/PERFORMANCE.md).
        """
        kept = self._encodings
        keys = [(words.text, tuple(plan.word_indices)) for words, plan in pairs]
        found = [kept.get(key) for key in keys]
        missing = [n for n, hit in enumerate(found) if hit is None]
        if missing:
            if self._encoded_tokens >= _ENCODED_TOKENS_KEPT:
                kept.clear()
                self._encoded_tokens = 0
            for n, encoding in zip(missing, self._encode_fresh([pairs[n] for n in missing])):
                found[n] = kept[keys[n]] = encoding
                self._encoded_tokens += len(encoding.ids)
        return [hit.copy() for hit in found]  # type: ignore[union-attr]

    def _encode_fresh(self, pairs: Sequence[tuple[Words, MaskPlan]]) -> list[Encoding]:
        """The encodings of ``pairs``, made from the text.

        A masked word's piece (" word") is tokenized once per adapter and then looked up: tokenization is
        a pure function of the text, words repeat, and the same items are encoded again for every
        sampler of a run; tokenizing those pieces was 40 % of encoding a tiny batch (docs/PERFORMANCE.md).
        """
        cut = [_cut_pieces(words, plan) for words, plan in pairs]
        texts = [[words.text[s:e] for s, e, _ in pieces] for (words, _), pieces in zip(pairs, cut)]
        known = self._masked_pieces
        if len(known) >= _MASKED_PIECES_KEPT:
            known.clear()
        masked = {text for pieces, piece_texts in zip(cut, texts) for (_, _, wi), text in zip(pieces, piece_texts) if wi >= 0}
        # this call's pieces, looked up once: the build below reads only this mapping, so the shared
        # table may change meanwhile (another thread's call) without harm
        found = {text: hit for text in masked if (hit := known.get(text)) is not None}
        wanted = list({text for piece_texts in texts for text in piece_texts if text not in found})
        fresh = dict(zip(wanted, self._tokenize_pieces(wanted)))
        known.update((text, fresh[text]) for text in masked if text in fresh)
        found.update(fresh)
        out = []
        for (words, plan), pieces, piece_texts in zip(pairs, cut, texts):
            tokenized = [found[text] for text in piece_texts]
            content = _content_of(words, pieces, tokenized)
            out.append(self._finish_encoding(self._encoding(*self._truncated(*content))))
        return out

    def _encoding(self, content: list[int], content_words: list[int], masked_flags: list[bool], truncated: int,
                  dropped: tuple[int, ...]) -> Encoding:
        prefix, suffix = list(self.prefix_ids), list(self.suffix_ids)
        mask_id = self.mask_id
        ids = prefix + [mask_id if m else t for t, m in zip(content, masked_flags)] + suffix
        word_of = [-1] * len(prefix) + content_words + [-1] * len(suffix)
        masked = [len(prefix) + i for i, m in enumerate(masked_flags) if m]
        filled = tuple(sorted({content_words[i] for i, m in enumerate(masked_flags) if m}))
        return Encoding(ids, masked, word_of, filled, dropped, truncated)

    def _finish_encoding(self, encoding: Encoding) -> Encoding:
        """Kind-specific layout on top of the shared token mapping (CLM: a BOS; seq2seq: source/target)."""
        return encoding

    def _tokenize_pieces(self, texts: list[str]) -> list[tuple[list[int], list[tuple[int, int]]]]:
        """(ids, character offsets) of every text, without special tokens, in one tokenizer call.

        The Rust tokenizer is called directly when the wrapper would do nothing else (plain
        ``TokenizersBackend``, no truncation/padding state to reset); its per-encoding Python conversion
        cost more than the tokenization of short pieces.
        """
        if not texts:
            return []
        tok = self.tokenizer
        backend = getattr(tok, "backend_tokenizer", None)
        if self._direct_backend and backend.truncation is None and backend.padding is None and \
                backend.encode_special_tokens == bool(getattr(tok, "split_special_tokens", False)):
            if len(texts) < _PARALLEL_BATCH:  # small batches: the thread pool's hand-off costs more than it saves
                encodings = [backend.encode(text, add_special_tokens=False) for text in texts]
            else:
                encodings = backend.encode_batch(texts, add_special_tokens=False)
            return [(e.ids, e.offsets) for e in encodings]
        batch = tok(texts, add_special_tokens=False, return_offsets_mapping=True)
        return list(zip(batch["input_ids"], batch["offset_mapping"]))

    @cached_property
    def _direct_backend(self) -> bool:
        """Whether the tokenizer's encode/decode are the plain backend calls (no subclass overrides)."""
        try:
            from transformers.tokenization_utils_tokenizers import TokenizersBackend
        except ImportError:  # older transformers: always go through the wrapper
            return False
        cls = type(self.tokenizer)
        return all(getattr(cls, name, None) is getattr(TokenizersBackend, name, None)
                   for name in ("__call__", "_encode_plus", "_decode", "batch_decode", "decode"))

    def _truncated(self, ids: list[int], word_of: list[int], flags: list[bool]) -> tuple[list[int], list[int], list[bool], int, tuple[int, ...]]:
        """Content tokens cut to the window, never inside a word; the masked words that fell off."""
        budget = self.max_length - len(self.prefix_ids) - len(self.suffix_ids) - self._extra_window_tokens()
        truncated = 0
        dropped: tuple[int, ...] = ()
        if len(ids) > budget:
            cut = max(budget, 0)
            # never split a word: back off to the first token of the word at the cut
            while 0 < cut < len(ids) and word_of[cut] == word_of[cut - 1] and word_of[cut] >= 0:
                cut -= 1
            dropped = tuple(sorted({word_of[i] for i in range(cut, len(ids)) if flags[i]}))
            truncated = len(ids) - cut
            ids, word_of, flags = ids[:cut], word_of[:cut], flags[:cut]
        return ids, word_of, flags, truncated, dropped

    def _extra_window_tokens(self) -> int:
        return 0

    def suppress(self, logits: Any) -> Any:
        """Float32 logits with the banned ids (specials, mask, padding rows) set to -inf.

        Writes only the banned columns, in place when ``logits`` is already float32 (the model's fresh
        output): a masked copy of the whole (batch, length, vocab) tensor cost about a quarter of an
        MLM forward pass of the tiny models (see docs/PERFORMANCE.md).
        """
        out = logits.float()
        runs = self._banned_runs
        if len(runs) <= 8:  # a few contiguous runs (specials, padding rows): slice fills, no index tensor
            for start, end in runs:
                if start < out.shape[-1]:
                    out.narrow(-1, start, min(end, out.shape[-1]) - start).fill_(float("-inf"))
        else:
            index = self._banned_index
            out[..., index[index < out.shape[-1]]] = float("-inf")
        return out

    @cached_property
    def _banned_index(self) -> Any:
        return self.banned_ids.nonzero().flatten()

    @cached_property
    def _banned_runs(self) -> list[tuple[int, int]]:
        """The banned ids as maximal runs ``[start, end)`` of consecutive ids."""
        runs: list[tuple[int, int]] = []
        for i in self._banned_index.tolist():
            if runs and runs[-1][1] == i:
                runs[-1] = (runs[-1][0], i + 1)
            else:
                runs.append((i, i + 1))
        return runs

    def decode_words(self, token_lists: Sequence[Sequence[int]]) -> list[str]:
        """Decode each list of ids as one word: one batched call, WordPiece ``##`` and spaces stripped.

        A word of one token (most words) is read from a table of decoded ids filled as ids are first
        met: decoding is a pure function of the ids, and the tokenizer call per word cost as much as
        a tiny model's pass over the batch.
        """
        known = self._decoded_ids
        out: list[str | None] = [known.get(t[0]) if len(t) == 1 else None for t in token_lists]
        missing = [n for n, text in enumerate(out) if text is None]
        if missing:
            texts = self._decode_lists([list(token_lists[n]) for n in missing])
            for n, text in zip(missing, texts):
                out[n] = text
                if len(token_lists[n]) == 1:
                    known[int(token_lists[n][0])] = text
        return out  # type: ignore[return-value]

    def _decode_lists(self, lists: list[list[int]]) -> list[str]:
        if self._direct_backend:  # the wrapper's batch_decode is this call plus Python per text
            backend = self.tokenizer.backend_tokenizer
            if len(lists) < _PARALLEL_BATCH:
                texts = [backend.decode(ids, skip_special_tokens=True) for ids in lists]
            else:
                texts = backend.decode_batch(lists, skip_special_tokens=True)
        else:
            texts = self.tokenizer.batch_decode(lists, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        continuing = self._continuing_prefix
        out = []
        for text in texts:
            text = text.strip()
            if continuing and text.startswith(continuing):
                text = text[len(continuing):]
            out.append(text)
        return out

    @cached_property
    def _continuing_prefix(self) -> str:
        """WordPiece's continuation marker (``##``), read once from the tokenizer model."""
        model = getattr(getattr(self.tokenizer, "backend_tokenizer", None), "model", None)
        return getattr(model, "continuing_subword_prefix", None) or "##"

    @property
    def pad_id(self) -> int:
        return int(self.tokenizer.pad_token_id) if self.tokenizer.pad_token_id is not None else 0

    def right_padded(self, sequences: Sequence[Sequence[int]]) -> tuple[Any, Any]:
        """Right-padded ids and attention mask for ``sequences``, on the adapter's device."""
        import torch

        width = max(len(s) for s in sequences)
        pad = self.pad_id
        ids = torch.tensor([[*seq, *([pad] * (width - len(seq)))] for seq in sequences], dtype=torch.long)
        mask = torch.tensor([[1] * len(seq) + [0] * (width - len(seq)) for seq in sequences], dtype=torch.long)
        return ids.to(self.device), mask.to(self.device)

    @cached_property
    def token_table(self) -> list[str]:
        """The token string of every id of the tokenizer, built once."""
        return self.tokenizer.convert_ids_to_tokens(list(range(len(self.tokenizer))))

    def tokens_to_strings(self, ids: Sequence[int]) -> list[str]:
        """Token strings of ``ids`` through a table built once: step traces call this once per step."""
        table = self.token_table
        size = len(table)
        out = [table[i] if 0 <= i < size else None for i in ids]
        if None in out:  # ids beyond the tokenizer (padding rows of the embedding): ask the tokenizer
            out = [t if t is not None else self.tokenizer.convert_ids_to_tokens(int(i)) for t, i in zip(out, ids)]
        return out


class MaskedLMAdapter(BaseAdapter):
    """kind "mlm": logits for every position of a right-padded batch."""

    kind = "mlm"

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        if tokenizer.mask_token_id is None:
            raise ModelError(f"model '{self.identity}' has no mask token, so it cannot fill masks (use hf-clm or hf-seq2seq)")

    def batch(self, sequences: Sequence[Sequence[int]]) -> tuple[Any, Any]:
        """Right-padded ids and attention mask for ``sequences``."""
        return self.right_padded(sequences)

    def logits(self, input_ids: Any, attention_mask: Any, tokens: int | None = None, at: Any = None) -> Any:
        """(batch, length, vocab) float32 logits, banned ids suppressed; one forward pass. ``tokens``: the
        real tokens of the batch when the caller knows them (else counted from the mask).

        ``at``: flat indices into the (batch x length) positions a sampler reads; then (len(at), vocab)
        logits of those positions alone, the output layer computed only there (:mod:`mlmh.readout`).
        """
        import torch

        with torch.inference_mode():
            if at is None:
                raw = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
            else:
                raw = logits_at(self.model, at.to(self.device), input_ids=input_ids, attention_mask=attention_mask)
            out = self.suppress(raw)
        self._count(attention_mask, tokens)
        return out


class _IncrementalAdapter(BaseAdapter):
    """Shared by CLM and seq2seq decoders: next-token logits for a batch of growing prefixes."""

    #: whether rows may carry padding holes in the middle (needs explicit position ids)
    supports_holes = False

    def _target_forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any, rows: Any,
                        last_only: bool = False) -> Any:
        """One decoder pass; ``last_only``: only the last column's logits are read (every row ends there)."""
        raise NotImplementedError

    @cached_property
    def _cache_argument(self) -> str:
        return cache_argument(self.model)

    @cached_property
    def _keeps_logits(self) -> bool:
        return keeps_logits(self.model)

    def _run(self, kwargs: dict[str, Any], input_ids: Any, last_only: bool) -> Any:
        """The model on ``kwargs``. With ``last_only`` (every row ends at the last column) a prefill
        computes its output layer for that column alone: ``logits_to_keep`` where the forward takes
        it, else through :func:`mlmh.readout.output_at` (logits (rows, vocab) then)."""
        import torch

        rows, width = input_ids.shape
        if not last_only or width == 1:
            return self.model(**kwargs)
        if self._keeps_logits:
            return self.model(**kwargs, logits_to_keep=1)
        last = torch.arange(rows, device=input_ids.device) * width + (width - 1)
        return output_at(self.model, last, **kwargs)[0]

    def next_logits(self, chunks: Sequence[Sequence[int]], state: "PrefixState", rows: Sequence[int]) -> Any:
        """Feed each row's ``chunk`` and return (rows, vocab) logits of its last token.

        With ``state.use_cache`` the chunks extend the KV cache: one chunk per row of the state, in
        order (an empty chunk for a row that is done). Without, ``chunks`` are the full prefixes and
        all is recomputed (the no-cache path the bench compares against). ``rows`` names the items
        (seq2seq: which encoder outputs to attend to).
        """
        import torch

        lengths = [len(c) for c in chunks]
        width = max(lengths)
        padded = min(lengths) != width
        mask = positions = None
        if not padded and (state.mask is None or not state.use_cache):
            ids = torch.tensor([list(c) for c in chunks], dtype=torch.long)  # the common case: no padding at all
        else:
            pad = self.pad_id
            fed = state.fed if state.use_cache else [0] * len(chunks)
            # cached: left-pad the chunk so every row's last token is the last column (holes need explicit
            # position ids); uncached: right-pad, positions stay 0..n-1 with no holes. Built as Python
            # lists and converted once: a tensor op per row cost more than a decoder step at batch 32.
            if state.use_cache:
                ids = torch.tensor([[pad] * (width - len(c)) + list(c) for c in chunks], dtype=torch.long)
                new_mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in chunks], dtype=torch.long)
                history = state.mask if state.mask is not None else torch.ones((len(chunks), state.width), dtype=torch.long)
                mask = torch.cat([history, new_mask], dim=1)
            else:
                ids = torch.tensor([list(c) + [pad] * (width - len(c)) for c in chunks], dtype=torch.long)
                mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in chunks], dtype=torch.long)
            positions = torch.tensor([[0] * (width - len(c)) + list(range(done, done + len(c))) if state.use_cache
                                      else list(range(len(c))) + [0] * (width - len(c)) for c, done in zip(chunks, fed)],
                                     dtype=torch.long).to(self.device)
        # Without any padding hole the model derives the all-ones mask and the positions itself, as a
        # plain cached decode does: the same result, without building attention masks every step.
        mask_d = None if mask is None else mask.to(self.device)
        last_column = state.use_cache or not padded  # cached chunks are left-padded: every row ends at the last column
        with torch.inference_mode():
            out = self._target_forward(ids.to(self.device), mask_d, positions, state.cache if state.use_cache else None,
                                       rows, last_only=last_column)
            return self._last_logits(out, chunks, lengths, state, width, mask, last_column)

    def _last_logits(self, out: Any, chunks: Sequence[Sequence[int]], lengths: list[int], state: "PrefixState",
                     width: int, mask: Any, last_column: bool) -> Any:
        """Counters and cache bookkeeping after a pass; the suppressed logits of each row's last token."""
        import torch

        self.forward_passes += 1
        self.tokens_processed += sum(lengths)
        if state.use_cache:
            state.cache = returned_cache(out)
            state.mask = mask
            state.width += width
            state.fed = [done + n for done, n in zip(state.fed, lengths)]
        if last_column:
            last_logits = out.logits if out.logits.dim() == 2 else out.logits[:, -1, :]  # read at the last column already
        else:
            last = torch.as_tensor([n - 1 for n in lengths], device=out.logits.device)
            last_logits = out.logits[torch.arange(len(chunks), device=last.device), last, :]
        return self.suppress(last_logits)


@dataclass
class PrefixState:
    """Bookkeeping of an incremental decode over a fixed set of rows: cache + attention history."""

    use_cache: bool
    fed: list[int]  # real tokens fed so far per row (= next position id)
    cache: Any = None
    mask: Any = None  # attention history; None while it is all ones (no padding hole yet)
    width: int = 0  # columns fed so far (the cache length)


class CausalLMAdapter(_IncrementalAdapter):
    """kind "clm": prefill, then next-token logits one token per step with a ``DynamicCache``."""

    kind = "clm"

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        params = inspect.signature(model.forward).parameters
        self.supports_holes = "position_ids" in params

    def _finish_encoding(self, enc: Encoding) -> Encoding:
        """A BOS token in front when the very first token is masked (a prefix is needed)."""
        if enc.masked and enc.masked[0] == 0:
            bos = self.tokenizer.bos_token_id if self.tokenizer.bos_token_id is not None else self.tokenizer.eos_token_id
            if bos is None:
                raise ModelError(f"model '{self.identity}' has no BOS/EOS token to start a text whose first word is masked")
            enc.ids.insert(0, int(bos))
            enc.word_of.insert(0, -1)
            enc.masked = [p + 1 for p in enc.masked]
        return enc

    def _extra_window_tokens(self) -> int:
        return 0 if self.prefix_ids else 1

    def new_state(self, rows: int, use_cache: bool) -> PrefixState:
        from transformers import DynamicCache

        return PrefixState(use_cache=use_cache, fed=[0] * rows, cache=DynamicCache(config=self.model.config) if use_cache else None)

    def _target_forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any, rows: Any,
                        last_only: bool = False) -> Any:
        kwargs: dict[str, Any] = {"input_ids": input_ids, "attention_mask": attention_mask, "use_cache": cache is not None}
        if self.supports_holes:
            kwargs["position_ids"] = position_ids
        if cache is not None:
            kwargs[self._cache_argument] = cache
        return self._run(kwargs, input_ids, last_only)


class Seq2SeqAdapter(_IncrementalAdapter):
    """kind "seq2seq": T5 sentinel or BART ``<mask>``-span infilling.

    The encoder sees the text with one mask token (or one sentinel) per masked span; the decoder is
    teacher-forced on the known tokens and generates exactly the span's token count. Decoders with
    learned absolute positions take no position ids, so cached decoding batches only rows whose
    decoder prefixes grow in lockstep (the same masked positions).
    """

    kind = "seq2seq"
    supports_holes = False

    def __init__(self, model: Any, tokenizer: Any, **kwargs: Any) -> None:
        super().__init__(model, tokenizer, **kwargs)
        config = model.config
        start = getattr(config, "decoder_start_token_id", None)
        if start is None:
            start = config.pad_token_id if config.pad_token_id is not None else tokenizer.pad_token_id
        if start is None:
            raise ModelError(f"model '{self.identity}' has no decoder_start_token_id")
        self.decoder_start_id = int(start)
        self.sentinels = sentinel_ids(tokenizer)
        self.style = "sentinel" if self.sentinels else "mask"
        if self.style == "mask" and tokenizer.mask_token_id is None:
            raise ModelError(f"model '{self.identity}': tokenizer has neither T5 sentinels nor a mask token")
        self._encoder_out: Any = None
        self._encoder_mask: Any = None
        self._encoder_rows: Any = None  # (rows, their encoder outputs, their encoder mask)

    def sentinel_id(self, k: int) -> int:
        if k >= len(self.sentinels):
            raise ModelError(f"model '{self.identity}': text has more masked spans than sentinels (<extra_id_{k}>)")
        return self.sentinels[k]

    def _truncated(self, ids: list[int], word_of: list[int], flags: list[bool]) -> tuple[list[int], list[int], list[bool], int, tuple[int, ...]]:
        """Cut to the window, and for T5 also before the first masked span beyond its sentinels (one per span):
        those masked words are kept as they were, as beyond the window."""
        ids, word_of, flags, truncated, dropped = super()._truncated(ids, word_of, flags)
        if self.style != "sentinel":
            return ids, word_of, flags, truncated, dropped
        starts = [i for i, flag in enumerate(flags) if flag and (i == 0 or not flags[i - 1])]
        if len(starts) <= len(self.sentinels):
            return ids, word_of, flags, truncated, dropped
        cut = starts[len(self.sentinels)]  # a masked word's first token
        more = {word_of[i] for i in range(cut, len(ids)) if flags[i]}
        return ids[:cut], word_of[:cut], flags[:cut], truncated + len(ids) - cut, tuple(sorted(more | set(dropped)))

    def _finish_encoding(self, base: Encoding) -> Seq2SeqEncoding:
        """Source with one sentinel/<mask> per span; the decoder target for the sampler to write."""
        spans = base.spans()
        source: list[int] = []
        cursor = 0
        for k, (s, e) in enumerate(spans):
            source += base.ids[cursor:s]
            source.append(self.sentinel_id(k) if self.style == "sentinel" else int(self.tokenizer.mask_token_id))
            cursor = e
        source += base.ids[cursor:]
        if self.style == "mask":  # BART: the decoder rebuilds the whole text
            ids = [self.decoder_start_id] + base.ids
            masked = [p + 1 for p in base.masked]
            word_of = [-1] + base.word_of
        else:  # T5: the decoder writes "<extra_id_0> span0 <extra_id_1> span1 ..."
            ids, masked, word_of = [self.decoder_start_id], [], [-1]
            for k, (s, e) in enumerate(spans):
                ids.append(self.sentinel_id(k))
                word_of.append(-1)
                masked += list(range(len(ids), len(ids) + e - s))
                ids += base.ids[s:e]
                word_of += base.word_of[s:e]
        return Seq2SeqEncoding(ids, masked, word_of, base.filled_words, base.dropped_words, base.truncated_tokens,
                               source_ids=source)

    def encode_sources(self, sources: Sequence[Sequence[int]]) -> None:
        """Run the encoder once over a right-padded batch; later decoder calls attend to it."""
        import torch

        ids, mask = self.right_padded(sources)
        with torch.inference_mode():
            self._encoder_out = self.model.get_encoder()(input_ids=ids, attention_mask=mask)
        self._encoder_mask = mask
        self._encoder_padded = not bool(mask.all())
        self._encoder_rows = None
        self._count(mask)

    def new_state(self, rows: int, use_cache: bool) -> PrefixState:
        from transformers import DynamicCache, EncoderDecoderCache

        config = self.model.config  # as the model builds its own cache
        cache = EncoderDecoderCache(DynamicCache(config=config), DynamicCache(config=config)) if use_cache else None
        return PrefixState(use_cache=use_cache, fed=[0] * rows, cache=cache)

    def _target_forward(self, input_ids: Any, attention_mask: Any, position_ids: Any, cache: Any, rows: Any,
                        last_only: bool = False) -> Any:
        from transformers.modeling_outputs import BaseModelOutput

        index = tuple(rows)
        if self._encoder_rows is None or self._encoder_rows[0] != index:  # cached decoding asks for the same rows every step
            states = self._encoder_out.last_hidden_state
            every_row = index == tuple(range(states.shape[0]))
            # made once per set of rows (a ModelOutput per step cost as much as a tiny decoder layer); without
            # source padding the decoder needs no cross-attention mask, as in a plain decode
            self._encoder_rows = (index, self._encoder_out if every_row else BaseModelOutput(last_hidden_state=states[list(index)]),
                                  self._encoder_mask[list(index)] if self._encoder_padded else None)
        _, encoder_outputs, encoder_mask = self._encoder_rows
        kwargs: dict[str, Any] = {
            "encoder_outputs": encoder_outputs,
            "attention_mask": encoder_mask,
            "decoder_input_ids": input_ids,
            "decoder_attention_mask": attention_mask,
            "use_cache": cache is not None,
        }
        if cache is not None:
            kwargs[self._cache_argument] = cache
        return self._run(kwargs, input_ids, last_only)


def cache_argument(model: Any) -> str:
    """The keyword under which ``model.forward`` takes a KV cache: ``cache`` where transformers has
    renamed it (5.x deprecates ``past_key_values`` and announces its removal), else ``past_key_values``."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def keeps_logits(model: Any) -> bool:
    """Whether ``model.forward`` takes ``logits_to_keep`` (most causal LMs of transformers; not BART or T5)."""
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def returned_cache(output: Any) -> Any:
    """The KV cache a forward pass returned, under either name (reading the old one warns in 5.x)."""
    cache = output.get("cache")  # a ModelOutput is a dict of the fields that are set
    return cache if cache is not None else output.past_key_values


def _cut_pieces(words: Words, plan: MaskPlan) -> list[tuple[int, int, int]]:
    """The text cut at the boundaries of every masked word: (char start, char end, masked word or -1).

    The whitespace before a masked word travels with it; pieces of whitespace only are dropped.
    """
    pieces: list[tuple[int, int, int]] = []
    cursor = 0
    spans, text = words.spans, words.text
    n_words = len(spans)
    for i in sorted(set(plan.word_indices)):
        if not 0 <= i < n_words:
            raise ModelError(f"mask plan '{plan.masking}' names word {i} but the text has {n_words} words")
        start = spans[i - 1][1] if i > 0 else 0
        if start > cursor:
            if text[cursor:start].strip():
                pieces.append((cursor, start, -1))
        else:
            start = cursor
        end = spans[i][1]
        pieces.append((start, end, i))
        cursor = end
    if cursor < len(text) and text[cursor:].strip():
        pieces.append((cursor, len(text), -1))
    return pieces


def _content_of(words: Words, pieces: Sequence[tuple[int, int, int]],
                tokenized: Sequence[tuple[Sequence[int], Sequence[tuple[int, int]]]]) -> tuple[list[int], list[int], list[bool]]:
    """Token ids, word index and masked flag of every content token (offsets name the word)."""
    starts = [s for s, _ in words.spans]
    ids: list[int] = []
    word_of: list[int] = []
    flags: list[bool] = []
    find = bisect.bisect_right
    for (s, _e, wi), (piece_ids, offsets) in zip(pieces, tokenized):
        ids.extend(piece_ids)
        n = len(piece_ids)
        if wi >= 0:
            word_of.extend([wi] * n)
            flags.extend([True] * n)
            continue
        if starts:
            # a token's word is the last word starting at or before its first character (an empty
            # token, e.g. a lone space marker, counts from the character before it)
            word_of.extend([(find(starts, s + (a if b > a else (a - 1 if a > 0 else 0))) or 1) - 1 for a, b in offsets])
        else:
            word_of.extend([-1] * n)
        flags.extend([False] * n)
    return ids, word_of, flags


ADAPTERS: dict[str, type[BaseAdapter]] = {"mlm": MaskedLMAdapter, "clm": CausalLMAdapter, "seq2seq": Seq2SeqAdapter}


#: model types whose position ids start after the padding index (RoBERTa's embeddings and their descendants): a
#: table of N positions holds N - pad_token_id - 1 tokens (roberta-base: 514 -> 512)
PADDING_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "roberta-prelayernorm", "camembert", "longformer", "xmod",
                            "data2vec-text", "ibert")


def model_window(config: Any, tokenizer: Any) -> int:
    """The longest input the model takes: position table size (less RoBERTa's padding offset; an encoder-decoder
    assembled from two models, the smaller of their windows), else the tokenizer's limit, else 512."""
    parts = [getattr(config, name, None) for name in ("encoder", "decoder")]
    if all(hasattr(part, "model_type") for part in parts):  # transformers' EncoderDecoderModel
        return min(model_window(part, tokenizer) for part in parts)
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            if getattr(config, "model_type", "") in PADDING_OFFSET_POSITIONS:
                value -= (getattr(config, "pad_token_id", None) or 0) + 1
            return value
    limit = getattr(tokenizer, "model_max_length", None)
    if isinstance(limit, int) and 0 < limit < 1_000_000:
        return limit
    return 512


def _special_affixes(tokenizer: Any) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a text (e.g. [CLS] ... [SEP]; none for GPT-2)."""
    bare = tokenizer("a", add_special_tokens=False)["input_ids"]
    full = tokenizer("a", add_special_tokens=True)["input_ids"]
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return list(full[:start]), list(full[start + len(bare) :])
    return [], []


def _added_special_ids(tokenizer: Any) -> list[int]:
    decoder = getattr(tokenizer, "added_tokens_decoder", {}) or {}
    return [int(i) for i, tok in decoder.items() if getattr(tok, "special", False)]


_AUTO = {"mlm": "AutoModelForMaskedLM", "clm": "AutoModelForCausalLM", "seq2seq": "AutoModelForSeq2SeqLM"}
_SUGGEST = {"mlm": "hf-mlm", "clm": "hf-clm", "seq2seq": "hf-seq2seq"}


def load_adapter(
    kind: str,
    path: str | os.PathLike,
    *,
    device: str = "cpu",
    dtype: str = "float32",
    threads: int | None = None,
    identity: str | None = None,
    trust_remote_code: bool = False,
    revision: str | None = None,
) -> BaseAdapter:
    """Load a transformers checkpoint (hub name or local directory) as the adapter of ``kind``.

    Every failure is a one-line :class:`ModelError` naming the path and what to do.
    """
    import torch
    import transformers
    from transformers.utils import logging as hf_logging

    if kind not in ADAPTERS:
        raise ModelError(f"unknown model kind '{kind}' (valid: {', '.join(MODEL_KINDS)})")
    if dtype not in _DTYPES:
        raise ModelError(f"dtype '{dtype}' not supported (valid: {', '.join(_DTYPES)})")
    if threads:
        torch.set_num_threads(int(threads))
    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    from mlmh.checkpoints import check_device, from_pretrained, local_checkpoint, offline

    name = str(path)
    what = f"{kind} model"
    local = local_checkpoint(name, what)
    is_local = local is not None
    if is_local:
        name = str(local)
    check_device(device, f"{what} {name}")
    common: dict[str, Any] = {"trust_remote_code": trust_remote_code}
    if revision and not is_local:
        common["revision"] = revision
    if not is_local and offline():
        common["local_files_only"] = True  # read now: huggingface_hub reads its env only at import
    try:
        tokenizer = from_pretrained(transformers.AutoTokenizer, name, what=what, use_fast=True, **common)
        auto = getattr(transformers, _AUTO[kind])
        model = from_pretrained(auto, name, what=what, dtype=getattr(torch, dtype),
                                use_safetensors=_has_safetensors(local) if is_local else None, **common)
    except ModelError as exc:
        text = str(exc)
        if "Unrecognized configuration class" in text or "Unrecognized model" in text:
            model_type = _model_type(local) if is_local else "?"
            others = [k for k in MODEL_KINDS if k != kind]
            raise ModelError(
                f"model '{name}' (type {model_type}) does not support the {kind} objective; "
                f"try {' or '.join(_SUGGEST[k] for k in others)}"
            ) from None
        if not is_local and "OSError" in text:
            raise ModelError(
                f"model '{name}' is not cached locally and no network is reachable; pass a local directory with path=..."
            ) from None
        raise
    model.to(device)
    return ADAPTERS[kind](model, tokenizer, identity=identity or name, device=device)


def _has_safetensors(directory: Path) -> bool | None:
    return True if any(directory.glob("*.safetensors")) else None


def _model_type(directory: Path) -> str:
    import json

    try:
        return str(json.loads((directory / "config.json").read_text(encoding="utf-8")).get("model_type", "?"))
    except (OSError, ValueError):
        return "?"


_FINGERPRINTS: dict[tuple[str, float, int], str] = {}


def checkpoint_identity(path: str, revision: str | None = None) -> str | None:
    """Which weights ``path`` names, for cache keys: a local directory's resolved path and weight-content
    hash (computed once per process and files' mtime and size), or a hub name's locally cached snapshot
    commit (``name@revision#commit``); None when a hub name is not cached here (no network is asked)."""
    local = Path(path).expanduser()
    if local.is_dir():
        weights = sorted(p for p in local.iterdir() if p.suffix in (".safetensors", ".bin"))
        stamp = (str(local.resolve()), max((p.stat().st_mtime for p in weights), default=0.0),
                 sum(p.stat().st_size for p in weights))
        if stamp not in _FINGERPRINTS:
            _FINGERPRINTS[stamp] = weights_fingerprint(local)
        return f"{stamp[0]}@{_FINGERPRINTS[stamp]}"
    try:
        from huggingface_hub import snapshot_download

        commit = Path(snapshot_download(path, revision=revision or None, local_files_only=True)).name
    except Exception:  # not cached, or not a valid repo id
        return None
    return f"{path}@{revision or 'main'}#{commit}"


def model_files_identity(path: str) -> str | None:
    """Every file of a scoring model, for the keys of the scores it gives: a local directory's files
    (name, size, modification time: its tokenizer decides a score as much as its weights), or a hub
    name's cached snapshot commit; None when neither is here."""
    from mlmh.implementation import files_identity

    local = Path(path).expanduser()
    if local.exists():
        return f"{local.resolve()}#{files_identity(local)}"
    return checkpoint_identity(path)


def weights_fingerprint(directory: str | os.PathLike) -> str:
    """A short hash of a local model directory's weight files (content), for cache identities."""
    root = Path(directory)
    digest = hashlib.blake2b(digest_size=8)
    files = sorted(p for p in root.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    for path in files:
        digest.update(path.name.encode())
        with path.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()
