"""Logits of chosen positions only: a masked LM's output layer fed just the hidden states it is read at.

The vocabulary projection is the largest layer of a small masked LM (128 x 6000 at size tiny, about
two thirds of a pass), while a sampler reads only its masked positions and the MLM loss is taken only
at them. fairseq's RoBERTa head does the same with its ``masked_tokens`` argument. transformers'
masked LMs take no such argument, so a forward pre-hook on the layer ``get_output_embeddings()``
names gathers the rows first; a head that does not end in that layer is found out by the shape of its
logits (or an error), and its model is read from full passes from then on.
"""

from __future__ import annotations

import weakref
from typing import Any

_READERS: "weakref.WeakKeyDictionary[Any, OutputReader | None]" = weakref.WeakKeyDictionary()


class OutputReader:
    """A forward pre-hook on a model's output layer that, while ``index`` is set, feeds it only those
    rows of its flattened (batch x length) input; a pass-through otherwise."""

    def __init__(self) -> None:
        self.index: Any = None
        self._handle: Any = None

    @classmethod
    def attach(cls, model: Any) -> "OutputReader | None":
        """A reader hooked on ``model``'s output layer, or None where the model names none."""
        try:
            layer = model.get_output_embeddings()
        except (AttributeError, NotImplementedError):
            return None
        if layer is None or not hasattr(layer, "register_forward_pre_hook"):
            return None
        reader = cls()
        reader._handle = layer.register_forward_pre_hook(reader)
        return reader

    def __call__(self, module: Any, args: tuple) -> tuple | None:
        if self.index is None or not args:
            return None
        hidden = args[0]
        return (hidden.reshape(-1, hidden.shape[-1]).index_select(0, self.index), *args[1:])

    def detach(self) -> None:
        if self._handle is not None:
            self._handle.remove()
            self._handle = None


def reader_of(model: Any) -> OutputReader | None:
    """The model's reader, attached on first use; None where its output layer cannot be read in part."""
    try:
        return _READERS[model]  # one lookup: every pass asks
    except KeyError:
        reader = _READERS[model] = OutputReader.attach(model)
        return reader


def full_passes_only(model: Any) -> None:
    """Read ``model`` from full passes from now on (its head does not end in its output layer)."""
    reader = _READERS.get(model)
    if reader is not None:
        reader.detach()
    _READERS[model] = None


def forget(model: Any) -> None:
    """Drop ``model``'s reader: its output layer was swapped (:mod:`mlmh.training.vocabulary`), so the next read
    hooks the layer it names then."""
    reader = _READERS.pop(model, None)
    if reader is not None:
        reader.detach()


def output_at(model: Any, index: Any, **inputs: Any) -> tuple[Any, bool]:
    """``model(**inputs)`` with its output layer fed only the flat (batch x length) rows ``index`` (a long
    tensor on the model's device); returns (output, read): ``read`` says whether ``output.logits`` are
    those rows alone, (len(index), vocab), or, for a head that does not end in its output layer, every
    position's. The model runs once, so a decoder's cache grows once."""
    return _output_read(model, reader_of(model), index, inputs)


def _output_read(model: Any, reader: OutputReader | None, index: Any, inputs: dict[str, Any]) -> tuple[Any, bool]:
    """:func:`output_at` with the model's reader looked up already."""
    if reader is None:
        return model(**inputs), False
    reader.index = index
    try:
        output = model(**inputs)
    except RuntimeError:  # a head that reshapes after its output layer
        full_passes_only(model)
        raise
    finally:
        reader.index = None
    if tuple(output.logits.shape[:-1]) == (len(index),):
        return output, True
    full_passes_only(model)
    return output, False


def logits_at(model: Any, index: Any, **inputs: Any) -> Any:
    """(len(index), vocab) logits of a masked LM at the flat (batch x length) positions ``index``: the
    same values as the full logits' rows, computed where the model allows with the output layer at
    those rows only (a stateless pass, so a head that cannot be read in part is run again in full)."""
    reader = reader_of(model)
    try:
        output, read = _output_read(model, reader, index, inputs)
    except RuntimeError:
        if reader is None:  # a plain pass failed: nothing to fall back to
            raise
        output, read = model(**inputs), False
    if read:
        return output.logits
    logits = output.logits
    return logits.reshape(-1, logits.shape[-1]).index_select(0, index)
