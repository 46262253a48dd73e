"""Every registered builtin passes the contract checks of mlmh.testing (so a new builtin is checked
automatically), and one deliberately broken component per kind fails its check naming the rule."""

from __future__ import annotations

import random

import pytest

from mlmh.components import Dataset, Masking, Metric, Sampler, Task
from mlmh.errors import DataError, MlmhError
from mlmh.generation import generate
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry
from mlmh.testing import (TINY_TEXTS, check_dataset, check_masking, check_metric, check_sampler, check_task, documents,
                          sample_items, scoring_items)
from mlmh.types import Corpus, Document, MaskPlan, MetricResult, TaskResult

#: slow to load (a sentence encoder), so left to tests/test_metrics.py
SLOW_METRICS = {"bertscore"}


def builtin_names(kind: str) -> list[str]:
    get_plugin_manager()
    registry = get_registry()
    return [n for n in registry.names(kind) if registry.owner(kind, n).startswith("mlmh_builtins")]


def build(kind: str, spec: str):
    return get_registry().build(kind, spec)


@pytest.fixture(scope="module")
def adapters(tiny_mlm, tiny_clm, tiny_seq2seq):
    from mlmh.adapters import load_adapter

    return {kind: load_adapter(kind, path, threads=1) for kind, path in
            (("mlm", tiny_mlm), ("clm", tiny_clm), ("seq2seq", tiny_seq2seq))}


@pytest.fixture(scope="module")
def items():
    """Tiny texts, plus one too short to mask at this ratio and one empty."""
    return sample_items([*TINY_TEXTS, "Short.", ""], "random:ratio=0.4", seed=3)


@pytest.fixture(scope="module")
def generations(adapters, items):
    return generate(adapters["mlm"], build("sampler", "mask-predict:steps=2"), items[: len(TINY_TEXTS)])


def small(corpus: Corpus, per_split: int = 24) -> Corpus:
    """The first documents of each split (whole pairs kept), so a task check takes seconds."""
    keep: set[str] = set()
    for split in ("train", "test"):
        pairs = [p for p in corpus.pairs if p.split == split]
        for pair in pairs[: per_split // 2]:
            keep.update((pair.a, pair.b))
        if not pairs:
            keep.update(d.id for d in corpus.split(split)[:per_split])
    docs = [d for d in corpus.documents if d.id in keep]
    return Corpus(corpus.dataset, docs, corpus.source, [p for p in corpus.pairs if {p.a, p.b} <= keep], list(corpus.notes))


# -- every builtin --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", builtin_names("sampler"))
def test_builtin_sampler_keeps_the_contract(name, adapters, items):
    sampler = build("sampler", name)
    for kind in sorted(sampler.model_kinds):
        generations = check_sampler(sampler, adapters[kind], items)
        assert any(g.output_words for g in generations)


@pytest.mark.parametrize("name", builtin_names("masking"))
def test_builtin_masking_keeps_the_contract(name):
    annotated = build("dataset", "mimic").load(None).documents[:8]  # entity annotations, for ner
    docs = [*annotated, Document("empty", "", meta={"entities_annotated": True})]
    try:
        plans = check_masking(build("masking", name), docs)
    except MlmhError as exc:  # a tagger the masking needs is not installed: its one-line error says which
        pytest.skip(str(exc))
    assert any(plan.word_indices for plan in plans)


@pytest.mark.parametrize("name", sorted(set(builtin_names("metric")) - SLOW_METRICS))
def test_builtin_metric_keeps_the_contract(name, generations, tiny_clm):
    spec = f"gen-ppl:path={tiny_clm}" if name == "gen-ppl" else name
    results = check_metric(build("metric", spec), scoring_items(generations))
    assert results


@pytest.fixture(scope="module")
def data_paths(tmp_path_factory) -> dict[str, str | None]:
    """What each builtin dataset loads: its bundled sample (None), or for ``text``, which has none, a jsonl
    file of real prose with authors and labels (tests/realdata.py)."""
    from realdata import text_corpus

    text = text_corpus(tmp_path_factory.mktemp("text"), "jsonl", 40)
    return {name: str(text) if name == "text" else None for name in builtin_names("dataset")}


DATASET_SPECS = {"text": "text:group_field=author,label_field=section"}


@pytest.mark.parametrize("name", builtin_names("dataset"))
def test_builtin_dataset_keeps_the_contract(name, data_paths):
    corpus = check_dataset(build("dataset", DATASET_SPECS.get(name, name)), data_paths[name])
    assert corpus.dataset == name


@pytest.mark.parametrize("name", builtin_names("task"))
def test_builtin_task_keeps_the_contract(name, data_paths):
    corpora = [build("dataset", DATASET_SPECS.get(d, d)).load(data_paths[d]) for d in builtin_names("dataset")]
    task = build("task", name)
    fitting = [c for c in corpora if task.applies_to(c)]
    assert fitting, f"no builtin dataset has what task {name} requires"
    result = check_task(task, small(fitting[0]))
    assert result.n_test > 0


# -- one broken component per kind -----------------------------------------------------------------
class GlobalRandomSampler(Sampler):
    """Draws from Python's global generator instead of the item's seed."""

    name = "global-random"
    model_kinds = frozenset({"mlm"})

    def generate(self, adapter, items):
        generations = build("sampler", "one-shot").generate(adapter, items)
        for item, g in zip(items, generations):
            g.output_words = {i: random.choice(["cat", "dog", "fox"]) for i in g.output_words}
            g.text, g.sampler = item.words.replace(g.output_words), self.spec
        return generations


class UnsortedMasking(Masking):
    name = "unsorted"

    def mask(self, document, words, rng):
        return MaskPlan(self.spec, tuple(range(len(words)))[::-1])


class ShortPerSampleMetric(Metric):
    name = "short-per-sample"

    def score(self, items, *, seed=0):
        return [MetricResult(self.name, 1.0, True, per_sample=[1.0])]


class OneSplitDataset(Dataset):
    name = "one-split"

    def load(self, path):
        if path is not None:
            raise DataError(f"{path}: not found")
        return Corpus(self.name, documents(split="train"), "built in")


class UnseededTask(Task):
    name = "unseeded"

    def run(self, train, test, *, seed=0):
        return TaskResult(self.name, {"accuracy": random.random()}, len(train.documents), len(test.documents))


def test_broken_sampler_fails_naming_the_seed_rule(adapters, items):
    with pytest.raises(AssertionError, match="global-random.*depend only on the item and its seed"):
        check_sampler(GlobalRandomSampler(), adapters["mlm"], items)


def test_sampler_for_another_model_kind_fails(adapters, items):
    with pytest.raises(AssertionError, match="does not include the adapter's kind 'clm'"):
        check_sampler(build("sampler", "one-shot"), adapters["clm"], items)


def test_broken_masking_fails_naming_the_order_rule():
    with pytest.raises(AssertionError, match="masking 'unsorted'.*not sorted and unique"):
        check_masking(UnsortedMasking(), documents())


def test_broken_metric_fails_naming_the_alignment_rule(generations):
    with pytest.raises(AssertionError, match="1 per-sample values for 8 items"):
        check_metric(ShortPerSampleMetric(), scoring_items(generations))


def test_broken_dataset_fails_naming_the_missing_split():
    with pytest.raises(AssertionError, match="dataset 'one-split': no 'test' documents"):
        check_dataset(OneSplitDataset())


def test_broken_task_fails_naming_the_seed_rule():
    corpus = Corpus("c", documents(TINY_TEXTS[:4], "train") + [Document("t", "x", "test")], "mem")
    with pytest.raises(AssertionError, match="task 'unseeded': a second run with seed=0"):
        check_task(UnseededTask(), corpus)
