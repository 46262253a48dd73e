"""The adapter every model kind shares: words to model tokens (cut at masked words, tokenized in one batch,
mapped back by offsets), the model window, banned tokens, decoding, and the masked LM's adapter.

See :mod:`mlmh.adapters` for the whole picture; this module holds what the kinds have in common.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable, Sequence

from mlmh.adapters.readout import logits_at
from mlmh.errors import ModelError
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
class DeferredWeights:
    """A model known by its config now, its weights read at the first forward pass (:meth:`BaseAdapter.load_weights`):
    a run whose samples are all cached tokenizes and fits its windows without building the model."""

    config: Any
    load: Callable[[], Any]


@dataclass
class Encoding:
    """One item as model tokens. ``ids`` holds a placeholder (the mask id) at every masked position."""

    ids: list[int]
    masked: list[int]  # positions of masked tokens, ascending
    word_of: list[int]  # word index of every position; -1 for special tokens
    filled_words: tuple[int, ...]  # masked words inside the window: these get generated
    dropped_words: tuple[int, ...] = ()  # masked words beyond the window: kept as they were
    truncated_tokens: int = 0
    #: the leading words whole inside the window, on the side the model reads the text (a seq2seq model's source:
    #: its decoder target holds the masked spans only); -1 when not counted
    words_in_window: int = -1

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
        """``model``: a transformers model, or :class:`DeferredWeights` to read its weights at the first pass."""
        import torch

        if not getattr(tokenizer, "is_fast", False):
            raise ModelError(f"model '{identity}': a fast (Rust) tokenizer is needed for offset mapping")
        deferred = isinstance(model, DeferredWeights)
        self._model = None if deferred else model.eval()
        self._deferred = model if deferred else None
        self.config = model.config
        self.tokenizer = tokenizer
        self.identity = identity or getattr(self.config, "_name_or_path", "") or type(model).__name__
        self.device = torch.device(device)
        self.forward_passes = 0
        self.tokens_processed = 0
        # what the user should know about this model as loaded (mlmh.adapters.checkpoint_kinds)
        self.notes: list[str] = []
        self._decoded_ids: dict[int, str] = {}  # one-token words, decoded once (decode_words)
        self._masked_pieces: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}  # tokenized once (encode_batch)
        self._encodings: dict[tuple[str, tuple[int, ...]], Encoding] = {}  # encoded once (encode_batch)
        self._encoded_tokens = 0
        self.max_length = model_window(self.config, tokenizer)
        self.prefix_ids, self.suffix_ids = _special_affixes(tokenizer)
        self.mask_id = self._placeholder_id()
        self._set_vocab(_config_vocab(self.config, tokenizer) if deferred else _model_vocab(model, tokenizer))

    def _set_vocab(self, vocab: int) -> None:
        """The output layer's size and the ids a sampler must never generate (specials, mask, sentinels,
        padding rows of the embedding)."""
        import torch

        tokenizer = self.tokenizer
        special = sorted({i for i in tokenizer.all_special_ids if i is not None} | set(_added_special_ids(tokenizer)))
        self.vocab_size = vocab
        banned = torch.zeros(vocab, dtype=torch.bool)
        banned[[i for i in special if i < vocab]] = True
        if len(tokenizer) < vocab:
            banned[len(tokenizer):] = True
        self.banned_ids = banned.to(self.device)

    # -- weights ----------------------------------------------------------------------------
    @property
    def model(self) -> Any:
        """The transformers model, its weights read now if they were deferred (:meth:`load_weights`)."""
        if self._model is None:
            self.load_weights()
        return self._model

    @property
    def weights_loaded(self) -> bool:
        return self._model is not None

    def load_weights(self) -> None:
        """Read deferred weights (no-op once read). The output layer's real size replaces the config's if they
        differ, so the banned ids are those an eagerly loaded adapter has."""
        if self._model is not None or self._deferred is None:
            return
        model = self._deferred.load().eval()
        self._model, self._deferred = model, None
        vocab = _model_vocab(model, self.tokenizer)
        if vocab != self.vocab_size:
            self._set_vocab(vocab)

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
        return [hit.copy() for hit in found]  # type: ignore[union-attr]  # each miss was encoded above

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
        inside = max((w for w in content_words if w >= 0), default=-1) + 1
        return Encoding(ids, masked, word_of, filled, dropped, truncated, words_in_window=inside)

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
        backend: Any = getattr(tok, "backend_tokenizer", None)  # read only when _direct_backend says it is there
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
        import torch

        out = logits if logits.dtype is torch.float32 else logits.float()  # the model's own output: no call
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
        return out  # type: ignore[return-value]  # each None was decoded above

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

    @cached_property
    def folds_case(self) -> bool:
        """Whether the tokenizer reads "Zebra" and "zebra" as the same tokens (an uncased vocabulary): such a model
        writes every word in lowercase, so its generated words are sentence-cased (:func:`mlmh.words.sentence_cased`)."""
        def ids(text: str) -> list[int]:
            return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        return ids("Zebra Quartz Jumps") == ids("zebra quartz jumps")

    @cached_property
    def mask_token(self) -> str | None:
        """The text of the tokenizer's mask token (None where it has none), read once: every batch's check
        (:func:`mlmh.generation.check_filled`) asks, and the tokenizer's property is slow."""
        return self.tokenizer.mask_token

    @cached_property
    def pad_id(self) -> int:
        """The padding id, read once: the tokenizer's property costs more than building a small batch."""
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
        # ids beyond the tokenizer (padding rows of the embedding): ask the tokenizer
        return [table[i] if 0 <= i < size else self.tokenizer.convert_ids_to_tokens(int(i)) for i in ids]


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
        logits of those positions alone, the output layer computed only there (:mod:`mlmh.adapters.readout`).
        """
        import torch

        with torch.inference_mode():
            if at is None:
                raw = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
            else:
                index = at if at.device == self.device else at.to(self.device)
                raw = logits_at(self.model, index, input_ids=input_ids, attention_mask=attention_mask)
            out = self.suppress(raw)
        self._count(attention_mask, tokens)
        return out


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


#: model types whose position ids start after the padding index (RoBERTa's embeddings and their descendants): a
#: table of N positions holds N - pad_token_id - 1 tokens (roberta-base: 514 -> 512)
PADDING_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "roberta-prelayernorm", "camembert", "longformer", "xmod",
                            "data2vec-text", "ibert")


def _model_vocab(model: Any, tokenizer: Any) -> int:
    """Rows of the model's output layer (the tokenizer's size for a model without one)."""
    out = model.get_output_embeddings()
    return int(out.weight.shape[0]) if out is not None else len(tokenizer)


def _config_vocab(config: Any, tokenizer: Any) -> int:
    """The output layer's size as the config gives it (an encoder-decoder's decoder's), before the weights
    are read; :meth:`BaseAdapter.load_weights` corrects it if the model says otherwise."""
    for part in (config, getattr(config, "decoder", None)):
        value = getattr(part, "vocab_size", None)
        if isinstance(value, int) and value > 0:
            return value
    return len(tokenizer)


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

