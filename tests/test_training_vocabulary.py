"""The parts of a pretrained start's fine-tuning recipe (mlmh.training.vocabulary, LP-FT warm-up in
mlmh.training.loop): the cut output layer gives the loss of a softmax over the kept tokens, trains the rows it keeps,
and leaves a whole model whose distribution is the cut one's; the warm-up moves only the fresh parameters."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mlmh.training.data import loss_and_predictions  # noqa: E402
from mlmh.training.vocabulary import MASKED_LOGIT, OutputVocabulary  # noqa: E402

VOCAB, KEPT = 120, [0, 1, 2, 3, 4, 7, 11, 19, 30, 42, 55]


def _bert(kind: str):
    from transformers import BertConfig, BertForMaskedLM, BertLMHeadModel, EncoderDecoderConfig, EncoderDecoderModel

    torch.manual_seed(0)
    config = dict(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=32, pad_token_id=0)
    if kind == "mlm":
        return BertForMaskedLM(BertConfig(**config)).eval()
    if kind == "clm":
        return BertLMHeadModel(BertConfig(**config, is_decoder=True)).eval()
    both = EncoderDecoderConfig.from_encoder_decoder_configs(BertConfig(**config),
                                                             BertConfig(**config, is_decoder=True, add_cross_attention=True))
    model = EncoderDecoderModel(both)
    model.config.decoder_start_token_id, model.config.pad_token_id = 2, 0
    return model.eval()


def _batch(kind: str):
    gen = torch.Generator().manual_seed(1)
    ids = torch.tensor(KEPT[2:])[torch.randint(0, len(KEPT) - 2, (3, 9), generator=gen)]
    if kind == "mlm":
        labels = ids.clone()
        labels[:, ::2] = -100
        return {"input_ids": ids.masked_fill(labels != -100, 4), "attention_mask": torch.ones_like(ids), "labels": labels}
    if kind == "clm":
        return {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": ids.clone()}
    hidden = torch.zeros_like(ids, dtype=torch.bool)
    hidden[:, 3:6] = True
    return {"input_ids": ids.masked_fill(hidden, 4), "attention_mask": torch.ones_like(ids), "labels": ids.clone(),
            "hidden": hidden}


def _reference(model, kind: str, batch) -> float:
    """The cross-entropy of a softmax over the kept tokens, from the whole model's logits."""
    with torch.no_grad():
        return _reference_loss(model, kind, batch)


def _reference_loss(model, kind: str, batch) -> float:
    labels = batch["labels"]
    if kind == "seq2seq":
        start = torch.full_like(labels[:, :1], model.config.decoder_start_token_id)
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                       decoder_input_ids=torch.cat([start, labels[:, :-1]], 1)).logits
    else:
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    if kind == "clm":
        logits, labels = logits[:, :-1], labels[:, 1:]
    kept = torch.tensor(KEPT)
    where = labels != -100
    sub = logits[where][:, kept]
    gold = torch.searchsorted(kept, labels[where])
    return float(torch.nn.functional.cross_entropy(sub, gold, reduction="sum"))


@pytest.mark.parametrize("kind", ["mlm", "clm", "seq2seq"])
def test_the_cut_layer_gives_the_loss_of_a_softmax_over_the_kept_tokens(kind):
    model, batch = _bert(kind), _batch(kind)
    expected = _reference(model, kind, batch)
    vocabulary = OutputVocabulary.fitted(model, KEPT[2:], KEPT[:2])
    assert vocabulary is not None and vocabulary.kept.tolist() == KEPT
    with vocabulary, torch.no_grad():
        summed, count, predicted, gold = loss_and_predictions(model, kind, batch, vocabulary)
        assert model.get_output_embeddings()(torch.zeros(1, 16)).shape == (1, len(KEPT))  # the layer is cut
    assert float(summed) == pytest.approx(expected, rel=1e-5)
    assert count == int((batch["labels"][:, 1:] if kind == "clm" else batch["labels"]).ne(-100).sum())
    assert int(gold.max()) < len(KEPT) and predicted.shape == gold.shape  # positions in the cut
    whole = model.get_output_embeddings()
    assert whole.weight.shape[0] == VOCAB and not isinstance(whole, type(None))  # put back whole


def test_after_the_cut_the_whole_model_is_the_model_that_trained():
    model, batch = _bert("mlm"), _batch("mlm")
    vocabulary = OutputVocabulary.fitted(model, KEPT[2:], KEPT[:2])
    optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
    embeddings = model.bert.embeddings.word_embeddings.weight
    before = embeddings.detach().clone()
    with vocabulary:
        summed, count, _, _ = loss_and_predictions(model, "mlm", batch, vocabulary)
        (summed / count).backward()
        optimizer.step()
        with torch.no_grad():
            cut = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    outside = torch.tensor([t for t in range(VOCAB) if t not in KEPT])
    assert not torch.equal(embeddings[KEPT[3]], before[KEPT[3]])  # the kept (tied) rows trained
    with torch.no_grad():
        whole = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    assert torch.allclose(whole[..., KEPT], cut, atol=1e-5)
    assert (model.cls.predictions.bias[outside] == MASKED_LOGIT).all()
    assert torch.softmax(whole, -1)[..., outside].max() < 1e-30  # the cut tokens cannot be generated
    assert torch.equal(torch.softmax(whole, -1)[..., KEPT].argmax(-1), cut.argmax(-1))


def test_no_cut_where_it_cannot_be_kept_or_saves_little():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(vocab_size=VOCAB, n_embd=16, n_layer=1, n_head=2))
    assert OutputVocabulary.fitted(gpt2, KEPT, []) is None  # no output bias to mask the cut tokens with
    assert OutputVocabulary.fitted(_bert("mlm"), range(VOCAB // 2 + 5), []) is None  # keeps most of it


def test_the_head_warms_up_alone_before_the_body_moves(tiny_mlm, tmp_path):
    from mlmh.training.config import make_config
    from mlmh.training.loop import head_warmup_steps, train

    assert head_warmup_steps(200, frozenset()) == 0 and head_warmup_steps(200, frozenset({"x"})) == 20
    assert head_warmup_steps(3, frozenset({"x"})) == 1
    texts = [f"the cat number {i} sat on the mat and looked at the dog number {i + 1} for a while." for i in range(24)]
    config = make_config("seq2seq", init=str(tiny_mlm), max_steps=2, eval_every=1, hidden=32, layers=2, heads=2, ffn=64,
                         seq_len=24, batch_size=4, patience_tokens=0)
    seen = []
    original = torch.optim.AdamW.step

    def step(self, *args, **kwargs):  # which parameters have gradients at each step
        seen.append({id(p) for group in self.param_groups for p in group["params"] if p.grad is not None})
        return original(self, *args, **kwargs)

    torch.optim.AdamW.step = step
    try:
        card = train(texts, config, tmp_path, threads=1)  # 2 steps: the first warms the fresh parameters up alone
    finally:
        torch.optim.AdamW.step = original
    assert card["head_warmup_steps"] == 1 and any(".crossattention." in n for n in card["fresh_parameters"])
    assert 0 < len(seen[0]) < len(seen[1])  # the fresh parameters alone, then the whole model
