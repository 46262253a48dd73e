"""The decoding adapters: a causal LM and a seq2seq model, both fed prefixes with a KV cache (prefill once,
then one token per pass), their logits read at the last token only where the model allows it.

See :mod:`mlmh.adapters` for the whole picture.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Sequence

from mlmh.adapters.base import BaseAdapter, Encoding, Seq2SeqEncoding
from mlmh.adapters.readout import output_at
from mlmh.adapters.sentinels import sentinel_ids, spans_to_fit
from mlmh.errors import ModelError

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
        it, else through :func:`mlmh.adapters.readout.output_at` (logits (rows, vocab) then)."""
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

    @cached_property
    def supports_holes(self) -> bool:  # type: ignore[override]  # cached: a protocol attribute
        """Whether the model's forward takes position ids (asked of the model, so its weights are read)."""
        return "position_ids" in inspect.signature(self.model.forward).parameters

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
        config = self.config
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

    def _finish_encoding(self, base: Encoding) -> Seq2SeqEncoding:
        """Source with one sentinel/<mask> per span; the decoder target for the sampler to write.

        T5: a text with more masked runs than the checkpoint has sentinels gets its closest runs merged
        (:func:`mlmh.adapters.sentinels.spans_to_fit`); the decoder is fed the kept tokens inside a merged span
        and writes its masked ones, so every masked word is generated."""
        spans = base.spans() if self.style == "mask" else spans_to_fit(base.spans(), len(self.sentinels))
        masked_set = set(base.masked)
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
                masked += [len(ids) + p - s for p in range(s, e) if p in masked_set]
                ids += base.ids[s:e]
                word_of += base.word_of[s:e]
        return Seq2SeqEncoding(ids, masked, word_of, base.filled_words, base.dropped_words, base.truncated_tokens,
                               words_in_window=base.words_in_window, source_ids=source)

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

