"""The bare model doing a sampler's work, as a user's own loop would, and the lean loop (output layer
only where the sampler reads, an exact greedy choice there).

How many passes, and how many positions each one chooses, come from a generation of the sampler
itself (:func:`pass_plan`), never from a copy of its arithmetic: a sampler that changes its schedule
changes the bare loop with it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence


def exact_choice(logits):
    """Greedy tokens with their exact probabilities, the plain PyTorch way: (probabilities, ids) of the
    softmax's max over the last dimension."""
    return logits.softmax(-1).max(-1)


def bare_masked_passes(model, input_ids, passes: int, chosen: Sequence[int] | None = None, first: int = 0) -> int:
    """``passes`` full forward passes of a masked LM over the batch (mask-predict T=passes, one-shot...).

    With ``chosen`` the lean loop: pass t runs the encoder, then the MLM head (``model.cls``) on the
    hidden states of ``chosen[t]`` positions of every row from position ``first`` on (where the
    sampler's masked span starts), and an :func:`exact_choice` there.
    """
    import torch

    attention_mask = torch.ones_like(input_ids)
    with torch.inference_mode():
        for t in range(passes):
            if chosen is None:
                logits = model(input_ids=input_ids, attention_mask=attention_mask).logits
            else:
                hidden = model.base_model(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                logits = model.cls(hidden[:, first:first + chosen[t]])
                exact_choice(logits)
            del logits
    return passes


def next_token(last_logits, exact: bool):
    """The greedy next token of each row, (rows, 1): argmax, or through :func:`exact_choice`."""
    ids = exact_choice(last_logits).indices if exact else last_logits.argmax(-1)
    return ids.unsqueeze(-1)


def last_only(model, lean: bool) -> dict[str, Any]:
    """Keywords of a lean pass that reads its last token only: ``logits_to_keep=1`` where the model takes it."""
    from mlmh.adapters.decoding import keeps_logits

    return {"logits_to_keep": 1} if lean and keeps_logits(model) else {}


def bare_causal_infill(model, prefix_ids, new_tokens: int, *, use_cache: bool = True, cache_name: str = "",
                       lean: bool = False) -> int:
    """Greedy continuation of ``prefix_ids`` by ``new_tokens`` tokens, as clm-infill fills one span.

    With the cache: one prefill pass, then one single-token step per further token. Without it: the whole
    prefix is recomputed for every token. ``cache_name``: the model's cache keyword
    (:func:`mlmh.adapters.decoding.cache_argument`), looked up here when not given; a timed caller decides it
    once, outside the timing. ``lean``: each pass computes its last token's logits only (where the model
    allows) and chooses through :func:`exact_choice`. Returns the number of forward passes made.
    """
    import torch

    from mlmh.adapters.decoding import cache_argument, returned_cache

    passes = 0
    name = cache_name or cache_argument(model)
    keep = last_only(model, lean)
    with torch.inference_mode():
        if not use_cache:
            ids = prefix_ids
            for _ in range(new_tokens):
                logits = model(input_ids=ids, use_cache=False, **keep).logits
                passes += 1
                ids = torch.cat([ids, next_token(logits[:, -1], lean)], dim=1)
            return passes
        out = model(input_ids=prefix_ids, use_cache=True, **keep)
        passes += 1
        past = returned_cache(out)
        for _ in range(new_tokens - 1):
            out = model(input_ids=next_token(out.logits[:, -1], lean), **{name: past}, use_cache=True)
            passes += 1
            past = returned_cache(out)
        next_token(out.logits[:, -1], lean)  # the span's last token, as the sampler picks it
    return passes


def bare_seq2seq_infill(model, source_ids, decoder_prefix_ids, new_tokens: int, *, cache_name: str = "",
                        lean: bool = False) -> int:
    """One encoder pass, a decoder prefill of ``decoder_prefix_ids``, then one cached step per further token
    (``cache_name`` and ``lean`` as for :func:`bare_causal_infill`)."""
    import torch

    from mlmh.adapters.decoding import cache_argument, returned_cache

    name = cache_name or cache_argument(model)
    keep = last_only(model, lean)
    with torch.inference_mode():
        encoded = model.get_encoder()(input_ids=source_ids, attention_mask=torch.ones_like(source_ids))
        if lean and not keep:  # BART takes no logits_to_keep: its decoder, then its head on the last position
            out = model.model(encoder_outputs=encoded, decoder_input_ids=decoder_prefix_ids, use_cache=True)
            out.logits = model.lm_head(out.last_hidden_state[:, -1:]) + model.final_logits_bias
        else:
            out = model(encoder_outputs=encoded, decoder_input_ids=decoder_prefix_ids, use_cache=True, **keep)
        passes = 2
        for _ in range(new_tokens - 1):
            out = model(encoder_outputs=encoded, decoder_input_ids=next_token(out.logits[:, -1], lean),
                        **{name: returned_cache(out)}, use_cache=True)
            passes += 1
        next_token(out.logits[:, -1], lean)  # the span's last token, as the sampler picks it
    return passes


@dataclass(frozen=True)
class PassPlan:
    """The forward passes a sampler made for one item, as its generation reports them: how many
    positions each pass chose a token at (0 for a pass that chooses nothing, as a seq2seq encoder's)."""

    chosen: tuple[int, ...]

    @property
    def passes(self) -> int:
        return len(self.chosen)


def pass_plan(generations: Sequence[Any]) -> PassPlan:
    """The passes of one batch from the sampler's own :class:`~mlmh.types.Generation` records: their
    ``forward_passes`` and, per step of their trace, the positions that step chose (its confidences).
    Passes without a step come first (a seq2seq encoder's). The bench's items are equal, so every
    item must report the same passes; anything else is refused."""
    plans = set()
    for generation in generations:
        choices = [len(step.confidences) for step in generation.steps]
        if len(choices) > generation.forward_passes:
            raise ValueError(f"sampler '{generation.sampler}' traced {len(choices)} steps in "
                             f"{generation.forward_passes} forward passes: no bare loop follows that")
        plans.add(PassPlan((0,) * (generation.forward_passes - len(choices)) + tuple(choices)))
    if len(plans) != 1:
        raise ValueError(f"the items of a bench batch made different passes ({len(plans)} plans): "
                         "the bare loop runs the batch as one")
    return plans.pop()


def bare_work(sampler, adapter, items: Sequence[Any], plan: PassPlan, *, lean: bool = False) -> Callable[[], int]:
    """The bare-model function doing ``sampler``'s work on ``items`` (it returns the forward passes it
    made): a masked LM makes ``plan``'s passes; a decoder writes the masked span, a token a pass, after
    a prefill (and an encoder pass). ``lean``: the lean loop (output layer only where the sampler
    reads, and an :func:`exact_choice` there).

    Token ids come from the adapter's own encoding, so the bare model sees the same shapes.
    """
    import torch

    from mlmh.adapters.decoding import cache_argument

    encodings = [adapter.encode(item.words, item.plan) for item in items]
    masked_tokens = len(encodings[0].masked)
    model = adapter.model
    first = encodings[0].masked[0]
    cache_name = cache_argument(model)  # decided here, not inside the timed function
    if adapter.kind == "clm":
        prefix = torch.tensor([e.ids[:first] for e in encodings])
        use_cache = bool(sampler.params.get("use_cache", True))
        return lambda: bare_causal_infill(model, prefix, masked_tokens, use_cache=use_cache, cache_name=cache_name,
                                          lean=lean)
    if adapter.kind == "seq2seq":
        source = torch.tensor([e.source_ids for e in encodings])
        prefix = torch.tensor([e.ids[:first] for e in encodings])
        return lambda: bare_seq2seq_infill(model, source, prefix, masked_tokens, cache_name=cache_name, lean=lean)
    ids = torch.tensor([e.ids for e in encodings])
    return lambda: bare_masked_passes(model, ids, plan.passes, plan.chosen if lean else None, first)
