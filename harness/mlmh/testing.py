"""Contract checks a plugin author runs on their own component, and the inputs they need.

Each ``check_*`` function runs a component the way the runner does and raises ``AssertionError``
naming the component and the broken rule of docs/PLUGINS.md; it returns what it produced, so a test
can look further. Inputs: :func:`sample_items` masks texts as a run does, :func:`tiny_adapter` builds
a small random model of any kind (nothing is downloaded), :func:`scoring_items` turns generations
into what metrics score.
"""

from __future__ import annotations

import math
import random
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np

from mlmh.components import Dataset, Masking, Metric, Sampler, ScoringItem, Task
from mlmh.data.splits import ROLES
from mlmh.errors import DataError
from mlmh.toolkit import Adapter
from mlmh.types import Corpus, Document, Generation, MaskedItem, MaskPlan, MetricResult, TaskResult, to_dict
from mlmh.words import split_words

#: A few sentences for tiny tokenizers and models, and a default corpus to mask.
TINY_TEXTS = [
    "The cat sat on the mat and looked at the door.",
    "A quick brown fox jumps over the lazy dog, again and again.",
    "She walked to the market; he stayed home with the children.",
    "Patient was given aspirin 81 mg by mouth daily for chest pain.",
    "In the film, a detective hunts a thief across the old city at night.",
    "I think that style matters more than plot, don't you?",
    "They said the draft belongs on the rubbish tip of history.",
    "Everything is very fast in football, and the crowd loves it.",
]


# -- inputs -------------------------------------------------------------------------------------------
def documents(texts: Sequence[str] = TINY_TEXTS, split: str = "test") -> list[Document]:
    """Plain documents ``d0, d1, ...`` of ``texts``."""
    return [Document(id=f"d{i}", text=text, split=split) for i, text in enumerate(texts)]


def sample_items(texts: Sequence[str] | Sequence[Document], masking: Masking | str = "random:ratio=0.4",
                 seed: int = 0) -> list[MaskedItem]:
    """Mask ``texts`` (or documents) exactly as a run does (:func:`mlmh.generation.prepare_items`)."""
    from mlmh.generation import prepare_items
    from mlmh.registry import get_registry

    given: Sequence[str | Document] = texts
    docs = [t if isinstance(t, Document) else Document(id=f"d{i}", text=t) for i, t in enumerate(given)]
    chosen: Masking = get_registry().build("masking", masking) if isinstance(masking, str) else masking
    return prepare_items(docs, chosen, seed)


def scoring_items(generations: Sequence[Generation]) -> list[ScoringItem]:
    """What the runner hands to metrics: each generation's text against its original."""
    return [ScoringItem(prediction=g.text, reference=g.original, generation=g) for g in generations]


def build_tokenizer(out: Path, texts: Sequence[str] | None = None, vocab_size: int = 300) -> Any:
    """A small WordPiece tokenizer (BERT-style specials) trained on ``texts``, saved in ``out``.

    One vocabulary for the three model kinds, so the word-to-token mapping is the same for each.
    """
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, special_tokens=specials)
    tok.train_from_iterator(list(texts or TINY_TEXTS) * 4, trainer=trainer)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]", special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)]
    )
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]",
        mask_token="[MASK]", bos_token="[CLS]", eos_token="[SEP]",
    )
    fast.save_pretrained(out)
    return fast


def build_tiny_model(kind: str, out: Path, seed: int = 0) -> Path:
    """Save a random tiny ``kind`` model ("mlm", "clm", "seq2seq") with its tokenizer in ``out``."""
    import torch
    from transformers import (BartConfig, BartForConditionalGeneration, BertConfig, BertForMaskedLM, GPT2Config,
                              GPT2LMHeadModel)

    if kind not in ("mlm", "clm", "seq2seq"):
        raise ValueError(f"model kind must be mlm, clm or seq2seq; got {kind!r}")
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tok = build_tokenizer(out)
    vocab = len(tok)
    torch.manual_seed(seed)
    config: Any
    model: Any
    if kind == "mlm":
        config = BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=64, max_position_embeddings=128, pad_token_id=tok.pad_token_id)
        model = BertForMaskedLM(config)
    elif kind == "clm":
        config = GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=128,
                            bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id, pad_token_id=tok.pad_token_id)
        model = GPT2LMHeadModel(config)
    else:
        config = BartConfig(vocab_size=vocab, d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
                            decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64, max_position_embeddings=128,
                            pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                            decoder_start_token_id=tok.cls_token_id, forced_eos_token_id=tok.sep_token_id)
        model = BartForConditionalGeneration(config)
    model.save_pretrained(out, safe_serialization=True)
    return out


def tiny_adapter(kind: str, directory: str | Path | None = None, seed: int = 0) -> Adapter:
    """The adapter of a random tiny ``kind`` model, built in ``directory`` (a fresh temp dir if None)."""
    from mlmh.adapters import load_adapter

    out = Path(directory) if directory is not None else Path(tempfile.mkdtemp(prefix=f"mlmh-tiny-{kind}-"))
    if not (out / "config.json").is_file():
        build_tiny_model(kind, out, seed=seed)
    return load_adapter(kind, out, identity=f"tiny-{kind}")


# -- rules --------------------------------------------------------------------------------------------
def _expect(condition: bool, component: Any, rule: str) -> None:
    if not condition:
        raise AssertionError(f"{component.kind} '{component.spec}': {rule}")


@contextmanager
def _global_rngs_reseeded(seed: int) -> Iterator[None]:
    """Reseed Python's, numpy's and torch's global generators, so code drawing from them is caught;
    their states are restored afterwards."""
    import torch

    saved = random.getstate(), np.random.get_state(), torch.get_rng_state()
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(saved[0])
        np.random.set_state(saved[1])
        torch.set_rng_state(saved[2])


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# -- samplers -----------------------------------------------------------------------------------------
def check_sampler(sampler: Sampler, adapter: Adapter, items: Sequence[MaskedItem]) -> list[Generation]:
    """Run ``sampler`` on ``items`` in one batch and one at a time; raise AssertionError on a broken rule.

    Rules: one Generation per item, in order, naming the item; every masked word in the model window
    filled and nothing else changed; no mask token left; the same outputs and ``forward_passes`` at
    any batch size, in any order, whatever the global random state; ``forward_passes`` equal to the
    model calls the item costs when run alone.
    """
    from mlmh.generation import generate

    _expect(bool(items), sampler, "check_sampler needs at least one item (see mlmh.testing.sample_items)")
    _expect(adapter.kind in sampler.model_kinds, sampler,
            f"model_kinds {sorted(sampler.model_kinds)} does not include the adapter's kind '{adapter.kind}'")
    with _global_rngs_reseeded(1):
        together = generate(adapter, sampler, items, batch_size=len(items))
    _expect(len(together) == len(items), sampler, f"returned {len(together)} generations for {len(items)} items")
    (mask_string,) = adapter.tokens_to_strings([adapter.mask_id])
    for item, gen in zip(items, together):
        _check_generation(sampler, adapter, item, gen, mask_string)

    alone_passes: list[int] = []
    with _global_rngs_reseeded(2):
        alone = generate(adapter, sampler, items, batch_size=1,
                         on_batch=lambda index, batch: alone_passes.append(adapter.forward_passes))
    with _global_rngs_reseeded(3):
        reversed_order = generate(adapter, sampler, list(items)[::-1], batch_size=len(items))[::-1]
    for item, gen, single, passes, flipped in zip(items, together, alone, alone_passes, reversed_order):
        where = f"item '{item.doc_id}'"
        _expect(single.forward_passes == passes, sampler,
                f"{where}: forward_passes is {single.forward_passes} but the model ran {passes} time(s) for it alone")
        for other, how in ((single, "in a batch of 1"), (flipped, "in reversed order")):
            _expect(other.output_words == gen.output_words, sampler,
                    f"{where}: output differs {how} ({other.output_words} vs {gen.output_words}); "
                    "outputs must depend only on the item and its seed")
            _expect(other.forward_passes == gen.forward_passes, sampler,
                    f"{where}: forward_passes {other.forward_passes} {how} vs {gen.forward_passes} in one batch")
    return together


def _check_generation(sampler: Sampler, adapter: Adapter, item: MaskedItem, gen: Generation, mask_string: str) -> None:
    where = f"item '{item.doc_id}'"
    _expect(isinstance(gen, Generation), sampler, f"{where}: returned {type(gen).__name__}, not a Generation")
    _expect(gen.doc_id == item.doc_id, sampler, f"{where}: generation names document '{gen.doc_id}' (order kept?)")
    _expect(gen.seed == item.seed and gen.masking == item.plan.masking and gen.original == item.words.text, sampler,
            f"{where}: seed, masking or original text differ from the item's")
    _expect(gen.sampler == sampler.spec and gen.model_kind == adapter.kind, sampler,
            f"{where}: sampler/model_kind are {gen.sampler!r}/{gen.model_kind!r}, expected {sampler.spec!r}/{adapter.kind!r}")
    unfilled = set(gen.info.get("unfilled_masked_words", []))
    expected = set(item.plan.word_indices) - unfilled
    _expect(set(gen.masked_words) == expected, sampler,
            f"{where}: masked_words {sorted(gen.masked_words)} are not the plan's {sorted(expected)}")
    _expect(set(gen.output_words) == expected, sampler,
            f"{where}: filled words {sorted(gen.output_words)}, but every masked word {sorted(expected)} must be filled")
    _expect(gen.text == item.words.replace(gen.output_words), sampler,
            f"{where}: text is not the original with only the masked words replaced")
    left = [i for i, word in gen.output_words.items() if mask_string and mask_string in word]
    _expect(not left, sampler, f"{where}: mask token {mask_string!r} left in word(s) {left}")
    _expect(not gen.steps or not gen.steps[-1].masked, sampler,
            f"{where}: the last step still has masked positions {gen.steps[-1].masked if gen.steps else []}")
    _expect(isinstance(gen.forward_passes, int) and gen.forward_passes >= 0, sampler,
            f"{where}: forward_passes must be a count, got {gen.forward_passes!r}")
    _expect(bool(expected) or gen.forward_passes == 0, sampler, f"{where}: nothing masked but {gen.forward_passes} forward passes")


# -- maskings -----------------------------------------------------------------------------------------
def check_masking(masking: Masking, documents: Sequence[Document], seed: int = 0) -> list[MaskPlan]:
    """Mask each document twice under the same seed (global random state changed between); raise
    AssertionError unless the plans are equal MaskPlans of sorted, unique, valid word indices."""
    _expect(bool(documents), masking, "check_masking needs at least one document")
    plans = []
    for document in documents:
        words = split_words(document.text)
        where = f"document '{document.id}'"
        with _global_rngs_reseeded(1):
            plan = masking.mask(document, words, np.random.default_rng(seed))
        _expect(isinstance(plan, MaskPlan), masking, f"{where}: mask() returned {type(plan).__name__}, not a MaskPlan")
        indices = plan.word_indices
        _expect(isinstance(indices, tuple) and all(isinstance(i, int) and not isinstance(i, bool) for i in indices),
                masking, f"{where}: word_indices must be a tuple of ints, got {indices!r}")
        _expect(list(indices) == sorted(set(indices)), masking, f"{where}: word_indices {indices} are not sorted and unique")
        _expect(all(0 <= i < len(words) for i in indices), masking,
                f"{where}: word_indices {indices} fall outside the document's {len(words)} words")
        _expect(plan.masking == masking.spec, masking, f"{where}: plan names masking {plan.masking!r}, not its spec")
        plans.append(plan)
    for document, plan in zip(documents, plans):  # again, in reverse order: no state kept between calls
        with _global_rngs_reseeded(2):
            again = masking.mask(document, split_words(document.text), np.random.default_rng(seed))
        _expect(again == plan, masking, f"document '{document.id}': a second call with the same rng seed gave "
                f"{again.word_indices}, not {plan.word_indices}; use only the rng it is given")
    return plans


# -- metrics ------------------------------------------------------------------------------------------
def check_metric(metric: Metric, items: Sequence[ScoringItem], seed: int = 0) -> list[MetricResult]:
    """Score ``items`` under two seeds; raise AssertionError unless the results follow the metric contract.

    Rules: a non-empty list of MetricResults with unique names; a finite value (no error) on items it
    can score; ``per_sample`` aligned with the items; a bool ``higher_is_better``; both CI bounds or
    none, low <= high; the same results again for the same seed; another seed may move only the CI.
    """
    from mlmh.errors import MlmhError
    from mlmh.plugins.contracts import metric_problem

    _expect(len(items) >= 2, metric, "check_metric needs at least two items (a CI needs two)")

    def score(with_seed: int, global_seed: int) -> list[MetricResult]:
        with _global_rngs_reseeded(global_seed):
            try:
                return metric.score(items, seed=with_seed)
            except MlmhError:
                raise
            except Exception as exc:
                raise AssertionError(f"metric '{metric.spec}': raised {type(exc).__name__}: {exc}; failures must be "
                                     "MetricResult.error or a raised MlmhError with a message for the user") from exc

    results = score(seed, 1)
    _expect(isinstance(results, list) and bool(results) and all(isinstance(r, MetricResult) for r in results), metric,
            "score() must return a non-empty list of MetricResult")
    names = [r.name for r in results]
    _expect(len(set(names)) == len(names), metric, f"result names repeat: {names}")
    for result in results:
        where = f"result '{result.name}'"
        _expect(result.error is None, metric, f"{where}: error on the check items: {result.error}")
        _expect(_finite(result.value), metric, f"{where}: value {result.value!r} is not a finite number")
        _expect(isinstance(result.higher_is_better, bool), metric, f"{where}: higher_is_better must be a bool")
        problem = metric_problem(result, len(items))  # the rule the runner and mlmh score hold metrics to
        _expect(problem is None, metric, f"{where}: {problem}")
        low, high = bounds = (result.ci_low, result.ci_high)
        _expect(bounds == (None, None) or (low is not None and high is not None and _finite(low) and _finite(high)
                                           and low <= high), metric,
                f"{where}: CI {bounds} must be both None or low <= high")
    again = score(seed, 2)
    _expect([to_dict(r) for r in again] == [to_dict(r) for r in results], metric,
            f"a second call with seed={seed} gave other results; the bootstrap must use only the seed it is given")
    other = score(seed + 1, 3)
    _expect([(r.name, r.value, r.per_sample) for r in other] == [(r.name, r.value, r.per_sample) for r in results], metric,
            "another seed changed names, values or per-sample values; the seed may only move the CI")
    return results


# -- datasets -----------------------------------------------------------------------------------------
SPLITS = tuple(ROLES)  # train, validation (a dataset's own, e.g. MPST's val rows), test


def check_dataset(dataset: Dataset, path: str | None = None) -> Corpus:
    """Load ``path`` (None: the bundled sample) twice; raise AssertionError unless the corpus follows
    the dataset contract. Also loads a missing path and an empty directory, which must each raise
    a DataError naming that path."""
    corpus = dataset.load(path)
    _expect(isinstance(corpus, Corpus), dataset, f"load() returned {type(corpus).__name__}, not a Corpus")
    _expect(bool(corpus.documents), dataset, "the corpus has no documents")
    ids = [d.id for d in corpus.documents]
    _expect(len(set(ids)) == len(ids), dataset, "document ids repeat")
    by_id = corpus.by_id()
    groups: dict[str, str] = {}  # no group sits in two splits (mlmh.data.splits)
    for doc in corpus.documents:
        where = f"document '{doc.id}'"
        _expect(isinstance(doc.id, str) and isinstance(doc.text, str), dataset, f"{where}: id and text must be strings")
        _expect(doc.split in SPLITS, dataset, f"{where}: split {doc.split!r} is not one of {', '.join(SPLITS)}")
        _expect(all(isinstance(label, str) for label in doc.labels), dataset, f"{where}: labels must be strings")
        if doc.group is not None:
            first = groups.setdefault(doc.group, doc.split)
            _expect(first == doc.split, dataset, f"{where}: group {doc.group!r} sits in both {first!r} and {doc.split!r}")
        for entity in doc.entities:
            pieces = entity.fragments or ((entity.start, entity.end),)
            _expect(all(0 <= s < e <= len(doc.text) for s, e in pieces), dataset,
                    f"{where}: entity {entity.label} {pieces} is outside the text (length {len(doc.text)})")
    for split in ("train", "test"):  # validation is optional: trained models carve it from train (mlmh.data.splits)
        _expect(bool(corpus.split(split)), dataset, f"no '{split}' documents: the downstream tasks need both splits")
    pair_ids = [p.id for p in corpus.pairs]
    _expect(len(set(pair_ids)) == len(pair_ids), dataset, "pair ids repeat")
    for pair in corpus.pairs:
        _expect(pair.a in by_id and pair.b in by_id, dataset, f"pair '{pair.id}' names a document that is not in the corpus")
        _expect(by_id[pair.a].split == by_id[pair.b].split == pair.split, dataset,
                f"pair '{pair.id}' ({pair.split}) and its documents must be in one split")
    _expect(all(isinstance(n, str) for n in corpus.notes), dataset, "notes must be strings")
    _expect(to_dict(dataset.load(path)) == to_dict(corpus), dataset, "loading twice gave two corpora (is the split seeded?)")
    with tempfile.TemporaryDirectory() as tmp:
        for bad in (Path(tmp) / "missing", Path(tmp)):
            try:
                dataset.load(str(bad))
            except DataError as exc:
                _expect(str(bad) in str(exc), dataset, f"the DataError for {bad} does not name it: {exc}")
            except Exception as exc:
                raise AssertionError(f"dataset '{dataset.spec}': loading {bad} raised {type(exc).__name__} ({exc}), "
                                     "not a DataError naming the file") from exc
            else:
                raise AssertionError(f"dataset '{dataset.spec}': loading {bad} (no data there) raised no DataError")
    return corpus


# -- tasks --------------------------------------------------------------------------------------------
def check_task(task: Task, corpus: Corpus, seed: int = 0) -> TaskResult:
    """Split ``corpus`` as the runner does and run ``task`` twice; raise AssertionError unless it applies,
    scores finite numbers without an error, leaves its inputs alone and repeats itself under one seed."""
    from mlmh.data.selection import subcorpus

    _expect(task.applies_to(corpus), task, f"does not apply to corpus '{corpus.dataset}' (requires {sorted(task.requires)})")
    if task.requires:
        bare = Corpus(corpus.dataset, [Document(d.id, d.text, d.split) for d in corpus.documents], corpus.source)
        _expect(not task.applies_to(bare), task, f"applies to a corpus without {sorted(task.requires)}")
    train, test = subcorpus(corpus, corpus.split("train")), subcorpus(corpus, corpus.split("test"))
    before = to_dict((train, test))
    with _global_rngs_reseeded(1):
        result = task.run(train, test, seed=seed)
    _expect(isinstance(result, TaskResult), task, f"run() returned {type(result).__name__}, not a TaskResult")
    _expect(result.error is None, task, f"reported an error on corpus '{corpus.dataset}': {result.error}")
    _expect(result.task == task.name, task, f"result names task {result.task!r}")
    _expect(bool(result.scores) and all(isinstance(k, str) and _finite(v) for k, v in result.scores.items()), task,
            f"scores must be a non-empty dict of finite numbers, got {result.scores!r}")
    _expect(all(isinstance(n, int) and n >= 0 for n in (result.n_train, result.n_test)) and result.n_test > 0, task,
            f"n_train/n_test must count what was used, got {result.n_train}/{result.n_test}")
    _expect(to_dict((train, test)) == before, task, "run() changed its train or test corpus")
    with _global_rngs_reseeded(2):
        again = task.run(train, test, seed=seed)
    _expect(again.scores == result.scores, task, f"a second run with seed={seed} scored {again.scores}, not {result.scores}")
    return result
