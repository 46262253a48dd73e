"""An output vocabulary cut to the tokens the training corpus uses, while a pretrained start fine-tunes.

A pretrained start brings its whole vocabulary (MiniLM: 30,522 WordPiece tokens), while a corpus uses a few
thousand of them (the bundled PAN sample: 698). The output layer scores every vocabulary entry at every
supervised position, so for the CLM and the seq2seq decoder it is most of a training step. Cutting the output
layer to the corpus's tokens is the field's way to make that cheap (a softmax over the vocabulary the data can
need); the input embeddings stay whole.

Design decision: the saved model is the trained one. While training, the output layer's rows of the kept tokens
are its weights (a view that trains the tied embedding rows in place) and the loss is a softmax over them. After
training, the layer is put back whole and the bias of every token outside the cut is set to
:data:`MASKED_LOGIT`, so the full model's distribution is the cut model's (their probability underflows to 0):
generation, evaluation and the saved weights give the results of the model that trained. Tokens outside the cut
never appear in a training target; a validation target outside it is left out of validation's loss and accuracy
(selection only; the card's held-out accuracy is measured on the whole model, where such a target counts as
missed). A head without a bias (GPT-2's) cannot carry the cut into the saved model, so it is not cut.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

if TYPE_CHECKING:
    import torch

#: the bias of the tokens outside the cut once the layer is whole again: exp(-1e4) is 0 in float32 and bf16
MASKED_LOGIT = -1e4
#: a cut that keeps more than this share of the vocabulary saves too little to change the model
MAX_KEPT_SHARE = 0.5


class OutputVocabulary:
    """The cut of one model's output layer to ``kept`` token ids; a context manager that swaps the layer in and
    back (:meth:`__exit__` masks the tokens outside it)."""

    def __init__(self, model: Any, kept: "torch.Tensor") -> None:
        import torch

        self.model, self.layer = model, model.get_output_embeddings()
        self.kept = kept
        self.size = int(self.layer.weight.shape[0])
        self.position = torch.full((self.size,), -100, dtype=torch.long, device=kept.device)
        self.position[kept] = torch.arange(len(kept), device=kept.device)
        self._parent, self._attribute = _owner(model, self.layer)

    @classmethod
    def fitted(cls, model: Any, token_ids: Iterable[int], special_ids: Iterable[int]) -> "OutputVocabulary | None":
        """The cut of ``model``'s output layer to ``token_ids`` and ``special_ids``, or None where nothing is
        gained (a head without a bias, or a cut keeping more than :data:`MAX_KEPT_SHARE` of the vocabulary)."""
        import torch

        layer = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
        if layer is None or not isinstance(layer, torch.nn.Linear) or layer.bias is None:
            return None
        size = layer.weight.shape[0]
        kept = sorted({int(t) for t in token_ids} | {int(t) for t in special_ids if 0 <= int(t) < size})
        if len(kept) > MAX_KEPT_SHARE * size or _owner(model, layer)[0] is None:
            return None
        return cls(model, torch.tensor(kept, dtype=torch.long, device=layer.weight.device))

    def __enter__(self) -> "OutputVocabulary":
        from mlmh.adapters.readout import forget

        setattr(self._parent, self._attribute, _cut_linear(self.layer, self.kept))
        forget(self.model)  # a sparse reader hooks the layer the model names now
        return self

    def __exit__(self, *exc: object) -> None:
        import torch

        from mlmh.adapters.readout import forget

        setattr(self._parent, self._attribute, self.layer)
        forget(self.model)
        with torch.no_grad():
            outside = torch.ones(self.size, dtype=torch.bool, device=self.kept.device)
            outside[self.kept] = False
            self.layer.bias[outside] = MASKED_LOGIT

    def labels(self, labels: "torch.Tensor") -> "torch.Tensor":
        """``labels`` (token ids, -100 ignored) as positions in the cut; a token outside it becomes -100."""
        return self.position[labels.clamp(min=0)].masked_fill(labels < 0, -100)

    def logits_and_labels(self, objective: str, batch: dict[str, "torch.Tensor"]) -> tuple["torch.Tensor", "torch.Tensor"]:
        """The CLM's or the seq2seq decoder's logits over the cut, aligned with its targets as positions in the cut
        (the CLM's shifted: position i predicts token i+1). The model's own loss is not used: it assumes the
        whole vocabulary."""
        labels = batch["labels"]
        if objective == "clm":
            logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            return logits[:, :-1], self.labels(labels[:, 1:])
        config = self.model.config
        decoder_inputs = labels.masked_fill(labels < 0, config.pad_token_id).roll(1, dims=1)
        decoder_inputs[:, 0] = config.decoder_start_token_id
        logits = self.model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                            decoder_input_ids=decoder_inputs).logits
        return logits, self.labels(labels)


def _cut_linear(layer: Any, kept: "torch.Tensor") -> Any:
    """What stands in for the output layer while training: its rows of the kept tokens only (the whole layer is
    held outside the module tree, so the model's parameters stay the whole layer's, listed once)."""
    import torch

    class CutLinear(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.whole = [layer]
            self.kept = kept

        def forward(self, hidden: "torch.Tensor") -> "torch.Tensor":
            whole = self.whole[0]
            return torch.nn.functional.linear(hidden, whole.weight.index_select(0, self.kept),
                                              whole.bias.index_select(0, self.kept))

    return CutLinear()


def _owner(model: Any, layer: Any) -> tuple[Any, str]:
    """(the module holding ``layer`` as an attribute, that attribute's name), or (None, "")."""
    for name, module in model.named_modules():
        if module is layer and name:
            parent_name, _, attribute = name.rpartition(".")
            return (model.get_submodule(parent_name) if parent_name else model), attribute
    return None, ""


__all__ = ["MASKED_LOGIT", "OutputVocabulary"]
