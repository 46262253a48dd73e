"""Train matched small MLM, CLM and seq2seq models offline, one concept per module:

- :mod:`mlmh.training.config`: the recipe (objectives, sizes, budgets, rates), :class:`TrainingConfig`; no torch;
- :mod:`mlmh.training.models`: the shared tokenizer, the model builders and the pretrained starts;
- :mod:`mlmh.training.data`: token blocks, the objectives' batches and losses;
- :mod:`mlmh.training.corruption`: the seq2seq objective's corruption (BART text infilling or T5 span corruption);
- :mod:`mlmh.training.vocabulary`: a pretrained start's output layer cut to the corpus's tokens;
- :mod:`mlmh.training.validation`: validation in training and the kept model's metrics;
- :mod:`mlmh.training.stopping`: when training stops and which checkpoint it keeps;
- :mod:`mlmh.training.loop`: one model's training, its step budget and its card (:func:`train`);
- :mod:`mlmh.training.jobs`: a trained-* model trained into the model cache, several at once in child processes;
- :mod:`mlmh.training.previews`: a training's model saved at steps of it, for a face to generate with meanwhile.

Callers import a name from the module that defines it. The one name the package itself gives is :func:`train`
(``mlmh.training.train``, the entry point docs/TRAINING.md documents), imported from :mod:`mlmh.training.loop`
when first asked for, so that reading the recipe (:mod:`mlmh.training.config`, which the trained-* models read
without torch) does not load the loop. The design decisions of the whole recipe are written here.

Design decision: train, select, never test. Models learn from the train texts; validation (every
``eval_every`` steps on fixed, seeded masks, so the curve is comparable across steps) selects the weights
kept and ends training once ``patience_tokens`` training tokens pass without a better validation loss or
accuracy, never while the model sits on the unigram plateau; off the plateau the checkpoint of the highest
validation accuracy is kept (:mod:`mlmh.training.stopping` holds the rule and why). Patience counts tokens, not
evaluations, so the rule does not depend on the budget or the evaluation grid. The card says why training
stopped and how the checkpoint was chosen. Test documents never reach this package through the trained models.

Design decision: the budget is declared (``budget``). ``tokens``: every objective sees the same
steps x batch x seq_len. ``targets``: the MLM (which supervises only its masked tokens) gets as many
steps more as it needs to match the CLM's expected supervised target tokens, at most
``MAX_BUDGET_SCALE`` times. ``compute``: matched training FLOPs (~6 x parameters x tokens), i.e.
steps scaled by the CLM's parameter count over the model's.

Design decision: ONE shared vocabulary for all objectives. A cased WordPiece tokenizer (BERT-style
specials [PAD] [UNK] [CLS] [SEP] [MASK]) is trained with the ``tokenizers`` library on the dataset's
train split, and every objective sees the same token sequences ([CLS] text [SEP] blocks in the same
order), so MLM vs CLM vs seq2seq is a controlled comparison: per size the three models have matched
parameter counts (within 10%) and a declared budget (below).

Design decision: rotary position embeddings for the MLM and the CLM by default (``positions``).
A small BERT with learned absolute positions sits on the unigram plateau for well over 1,500 steps
on a small corpus: before it can use any context it must learn position-to-position attention
from scratch, whereas a causal LM reads bigram statistics off its own residual stream at once.
Rotary positions (Su et al. 2021, RoFormer) make "attend to my neighbours" easy to learn, so the
MLM leaves the plateau within a few hundred steps. The CLM gets rotary positions too, so the pair
differs in attention mask and objective, not in how it encodes positions.
``positions="absolute"`` keeps the classic pair (BERT + GPT-2), e.g. to show that plateau.

- MLM: ``RoFormerForMaskedLM`` (BERT's post-LN layers with rotary positions) or ``BertForMaskedLM``,
  trained with one of three masking schedules (``mask_schedule``):
  ``fixed``: ``mask_ratio`` (15%) of the tokens chosen, 80% [MASK] / 10% random / 10% kept (Devlin et
  al. 2019, via transformers' ``DataCollatorForLanguageModeling``);
  ``uniform``: per sequence k ~ U{1..N} of its N tokens, all [MASK] (CMLM / Mask-Predict,
  Ghazvininejad et al. 2019), so the model sees every masking level that iterative decoding visits;
  ``mdlm``: per sequence t ~ U(0, 1), each token [MASK] with probability t, masked-token cross-entropy
  weighted by 1/t and divided by the token count (MDLM's continuous-time ELBO under the linear
  schedule, Sahoo et al. 2024).
- CLM: next-token prediction on the same blocks; ``GPTNeoXForCausalLM`` with sequential residuals
  and full rotary (GPT-2's pre-LN layers with rotary positions) or ``GPT2LMHeadModel``.
- seq2seq: BART (``BartForConditionalGeneration``, learned absolute positions either way: its
  decoder also sees the previous token) text infilling (Lewis et al. 2020): spans with
  Poisson(3) lengths, each replaced by one [MASK] (0-length spans insert one), until 15% of the
  tokens are hidden; the decoder reconstructs the whole block. A pretrained start whose tokenizer has T5
  sentinels (a T5 checkpoint) trains with T5 span corruption instead (:mod:`mlmh.training.corruption`).

``--init minilm`` starts from the pretrained MiniLM-L6 encoder (22M parameters, uncased vocabulary):
one 16x128 training step costs about 9.5 s of CPU time (roughly 5 s wall on 2 idle cores), against
well under a second for the ``tiny`` models.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlmh.training.loop import train

__all__ = ["train"]


def __getattr__(name: str) -> Any:
    if name == "train":
        from mlmh.training.loop import train

        return train
    raise AttributeError(f"module 'mlmh.training' has no attribute {name!r}")
