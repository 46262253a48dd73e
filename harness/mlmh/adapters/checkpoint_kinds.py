"""What kind of model a saved checkpoint was built for, and whether it may be loaded as another kind.

Why: transformers loads many checkpoints under any Auto class without a word (a BERT masked LM loads as
``AutoModelForCausalLM``), and the model then generates with a head that never learned the task. mlmh says
so once, where every ``hf-*`` model and ``load_adapter`` load: a refusal where the head predicts the wrong
position, a note where generation works but not as the checkpoint was trained.
"""

from __future__ import annotations

from typing import Any

from mlmh.errors import ModelError

_SPEC = {"mlm": "hf-mlm", "clm": "hf-clm", "seq2seq": "hf-seq2seq"}


def checkpoint_objective(config: Any) -> str | None:
    """The objective a saved checkpoint was built for, from its architecture (None when unknown)."""
    built = _by_architecture(config)
    if built is not None:
        return built
    if getattr(config, "is_encoder_decoder", False):
        return "seq2seq"
    if getattr(config, "is_decoder", False):
        return "clm"
    from transformers.models.auto.modeling_auto import (MODEL_FOR_CAUSAL_LM_MAPPING_NAMES,
                                                        MODEL_FOR_MASKED_LM_MAPPING_NAMES)

    if config.model_type in MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        return "mlm"
    if config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "clm"
    return None


def _by_architecture(config: Any) -> str | None:
    for arch in getattr(config, "architectures", None) or []:
        if arch.endswith("ForMaskedLM"):
            return "mlm"
        if arch.endswith("ForConditionalGeneration") or getattr(config, "is_encoder_decoder", False):
            return "seq2seq"
        if arch.endswith(("LMHeadModel", "ForCausalLM")):
            return "clm"
    return None


def kind_note(kind: str, config: Any, what: str) -> str | None:
    """None when the checkpoint (``config``) was built as ``kind`` or its architecture is not named; a note
    when another kind can still generate with it; a one-line ModelError naming ``what`` where it cannot.

    Only the saved architecture decides (a config without one, e.g. built in code, is taken as asked).
    """
    built = _by_architecture(config)
    if built is None or built == kind:
        return None
    arch = ", ".join(config.architectures)
    where = f"{what}: a {arch} checkpoint, trained as {built}, loaded as {kind}"
    if kind == "clm":
        if built == "mlm":
            raise ModelError(f"{where}: it never learned to predict the next word (its output at a position is that "
                             f"position's own word), so it cannot generate causally; load it as {_SPEC[built]}, or "
                             "train it causally first (mlmh train --init PATH --objective clm)")
        return f"{where}: its decoder generates alone, without the encoder it was trained with; {_SPEC[built]} " \
               "uses the checkpoint as trained"
    if kind == "mlm" and built == "clm":
        raise ModelError(f"{where}: its output at a position predicts the next word, not the masked one; load it as "
                         f"{_SPEC[built]}")
    return f"{where}: it fills masks as its {built} head predicts them; {_SPEC[built]} uses the checkpoint as trained"


def require_causal(config: Any, what: str) -> None:
    """A checkpoint a judge scores with (gen-ppl's reference LM) must be a causal LM: the judge reads each word's
    probability given the words before it. A masked LM is refused as ``hf-clm`` refuses it (:func:`kind_note`); an
    encoder-decoder, whose decoder never read a text alone, or a type transformers has no causal LM of, is refused
    too (``hf-clm`` only notes the first, as it can still generate). One ModelError line naming ``what``."""
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    kind_note("clm", config, what)
    built = checkpoint_objective(config)
    model_type = getattr(config, "model_type", "") or "?"
    if built == "clm" or (built is None and model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES):
        return
    named = ", ".join(getattr(config, "architectures", None) or []) or f"type {model_type}"
    trained = f", trained as {built}" if built else ""
    raise ModelError(f"{what}: a {named} checkpoint{trained}, not a causal LM: a judge scores each word given the "
                     "words before it, so it must be one (a GPT-2, Llama or Gemma checkpoint; hf-clm loads the same)")
