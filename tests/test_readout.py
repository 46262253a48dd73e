"""mlmh.adapters.readout on the masked LMs of transformers: logits of chosen positions equal the full logits'
rows, read in part where the head ends in its output layer, else from full passes."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
import transformers

from mlmh.adapters.readout import logits_at, output_at, reader_of

VOCAB = 99
BERT_LIKE = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
                 max_position_embeddings=64)
ARCHITECTURES = {
    "Bert": BERT_LIKE,
    "Roberta": BERT_LIKE,
    "RoFormer": BERT_LIKE,
    "DistilBert": dict(vocab_size=VOCAB, dim=32, n_layers=2, n_heads=2, hidden_dim=37, max_position_embeddings=64),
    "Albert": dict(BERT_LIKE, embedding_size=16),
    "Electra": dict(BERT_LIKE, embedding_size=16),
    "DebertaV2": BERT_LIKE,
    "MPNet": BERT_LIKE,
    "ModernBert": dict(BERT_LIKE, pad_token_id=0, bos_token_id=1, eos_token_id=2, cls_token_id=1, sep_token_id=2),
}


def inputs():
    ids = torch.randint(5, VOCAB, (3, 12), generator=torch.Generator().manual_seed(0))
    attention = torch.ones_like(ids)
    attention[2, 9:] = 0  # a padded row
    return {"input_ids": ids, "attention_mask": attention}


@pytest.mark.parametrize("name", ARCHITECTURES)
def test_logits_at_equal_the_full_logits_rows_and_feed_the_output_layer_those_rows_only(name):
    if not hasattr(transformers, f"{name}ForMaskedLM"):
        pytest.skip(f"transformers {transformers.__version__} has no {name}")
    config = getattr(transformers, f"{name}Config")(**ARCHITECTURES[name])
    torch.manual_seed(0)
    model = getattr(transformers, f"{name}ForMaskedLM")(config).eval()
    index = torch.tensor([1, 5, 13, 20, 30])
    with torch.inference_mode():
        full = model(**inputs()).logits.reshape(-1, VOCAB)[index]
        read = logits_at(model, index, **inputs())
    assert reader_of(model) is not None  # every head here ends in its output layer
    assert read.shape == (len(index), VOCAB)
    assert torch.allclose(read, full, atol=1e-5)


class ReshapingHead(torch.nn.Module):
    """A toy masked LM whose head reshapes after its output layer, so that layer cannot be fed fewer rows."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(VOCAB, 8)
        self.out = torch.nn.Linear(8, VOCAB)

    def get_output_embeddings(self):
        return self.out

    def forward(self, input_ids, attention_mask=None):
        rows, width = input_ids.shape
        return SimpleNamespace(logits=self.out(self.embed(input_ids).reshape(-1, 8)).view(rows, width, VOCAB))


def test_a_head_that_reshapes_after_its_output_layer_is_read_from_full_passes():
    model, index = ReshapingHead(), torch.tensor([0, 7, 30])
    with torch.no_grad():
        full = model(**inputs()).logits.reshape(-1, VOCAB)[index]
        read = logits_at(model, index, **inputs())
    assert torch.equal(read, full)
    assert reader_of(model) is None  # from now on the model runs whole, with no hook to get in the way
    output, was_read = output_at(model, index, **inputs())
    assert not was_read and output.logits.shape == (3, 12, VOCAB)
