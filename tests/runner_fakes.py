"""Small, fast, deterministic components for the runner tests, registered as a third-party plugin would.

They exercise the runner's bookkeeping (grid, cache, events, resume, cancel) without models; the
end-to-end test runs the real builtins.
"""

from __future__ import annotations

import time
from typing import Sequence

import numpy as np

from mlmh import hookimpl
from mlmh.components import Dataset, Masking, Metric, Model, Sampler, ScoringItem, Task
from mlmh.params import Param
from mlmh.types import Corpus, Document, Generation, MaskedItem, MaskPlan, MetricResult, TaskResult

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


class FakeData(Dataset):
    name = "fake-data"
    description = "twelve labelled train documents and four test documents"

    def load(self, path):
        docs = []
        for i in range(16):
            words = [WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(12)]
            docs.append(Document(id=f"d{i:02d}", text=" ".join(words) + ".", split="train" if i < 12 else "test",
                                 labels=["even" if i % 2 == 0 else "odd"]))
        return Corpus(dataset="fake-data", documents=docs, source="bundled sample (synthetic, written by the tests)")


class EveryNth(Masking):
    name = "every-nth"
    description = "masks each word with probability ratio"
    parameters = (Param("ratio", float, 0.5, "share of words", min=0.0, max=1.0),)

    def mask(self, document, words, rng):
        chosen = tuple(i for i in range(len(words)) if rng.random() < self.params["ratio"])
        return MaskPlan(masking=self.spec, word_indices=chosen)


class FakeAdapter:
    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.tokenizer = None
        self.forward_passes = 0

    def reset_counters(self) -> None:
        self.forward_passes = 0


class FakeMLM(Model):
    name = "fake-mlm"
    model_kind = "mlm"
    description = "no weights: the sampler decides"

    def load(self, context):
        if context.progress:
            for step in range(3):
                context.progress({"stage": "train", "step": step + 1, "total": 3, "loss": 1.0 / (step + 1)})
        return FakeAdapter(self.model_kind)


class FakeCLM(FakeMLM):
    name = "fake-clm"
    model_kind = "clm"


class FakeFill(Sampler):
    """Fills each masked word from WORDS with the item's own seed, so batching cannot matter."""

    name = "fake-fill"
    model_kinds = frozenset({"mlm"})
    parameters = (Param("steps", int, 1, "pretend refinement steps", min=1),
                  Param("delay", float, 0.0, "seconds per item, to make room for a kill", min=0.0))

    def generate(self, adapter, items: Sequence[MaskedItem]) -> list[Generation]:
        out = []
        for item in items:
            time.sleep(self.params["delay"])
            rng = np.random.default_rng(item.seed)
            outputs = {i: WORDS[int(rng.integers(len(WORDS)))] for i in item.plan.word_indices}
            out.append(Generation(
                doc_id=item.doc_id, model=adapter.kind, model_kind=adapter.kind, sampler=self.spec,
                masking=item.plan.masking, seed=item.seed, original=item.words.text,
                masked_text=item.words.replace({i: "[MASK]" for i in item.plan.word_indices}),
                text=item.words.replace(outputs), masked_words=list(item.plan.word_indices), output_words=outputs,
                forward_passes=self.params["steps"], generated_tokens=len(outputs), tokens_processed=len(item.words),
                seconds=0.001))
        return out


class FakeCLMFill(FakeFill):
    name = "fake-clm-fill"
    model_kinds = frozenset({"clm"})


class WordMatch(Metric):
    name = "word-match"
    description = "share of words equal to the original"

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from mlmh.stats import mean_ci

        # an empty text (the deletion baseline's) has no words to match: None, never NaN (the metric contract)
        per = [float(np.mean([a == b for a, b in pairs])) if (pairs := list(zip(i.prediction.split(), i.reference.split())))
               else None for i in items]
        value, low, high = mean_ci(per)
        return [MetricResult(name="word-match", value=value, higher_is_better=True, per_sample=per,
                             ci_low=low, ci_high=high)]


class KeptWordMatch(WordMatch):
    """word-match that names what its scores depend on (``identity``), so the score cache keeps them;
    counts its calls."""

    name = "kept-word-match"
    identity: str | None = ""
    calls = 0

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        type(self).calls += 1
        results = super().score(items, seed=seed)
        results[0].name = self.name
        return results

    def cache_identity(self) -> str | None:
        return type(self).identity


class AlwaysFails(KeptWordMatch):
    """A cacheable metric whose every result is an error (a model that is not there yet)."""

    name = "always-fails"

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        type(self).calls += 1
        return [MetricResult(name=self.name, value=None, higher_is_better=True, error="scoring model missing")]


class BrokenIdentity(KeptWordMatch):
    """A metric whose cache_identity() raises: it must still score, every time, and be named."""

    name = "broken-identity"

    def cache_identity(self) -> str | None:
        raise RuntimeError("identity file unreadable")


class LabelTask(Task):
    name = "label-task"
    requires = frozenset({"labels"})

    def run(self, train, test, *, seed=0):
        vocab = sum(len(set(d.text.split())) for d in train.documents) / max(len(train.documents), 1)
        return TaskResult(task=self.name, scores={"vocab": float(vocab)}, n_train=len(train.documents),
                          n_test=len(test.documents))


class KeptLabelTask(LabelTask):
    """label-task that names what its results depend on, so the run cache keeps them; counts its runs."""

    name = "kept-label-task"
    calls = 0

    def run(self, train, test, *, seed=0):
        type(self).calls += 1
        return super().run(train, test, seed=seed)

    def cache_identity(self) -> str | None:
        return ""


class AuthorTask(Task):
    name = "author-task"
    requires = frozenset({"author"})


@hookimpl
def register_datasets(register):
    register(FakeData())


@hookimpl
def register_maskings(register):
    register(EveryNth())


@hookimpl
def register_models(register):
    register(FakeMLM())
    register(FakeCLM())


@hookimpl
def register_samplers(register):
    register(FakeFill())
    register(FakeCLMFill())


@hookimpl
def register_metrics(register):
    register(WordMatch())
    register(KeptWordMatch())
    register(AlwaysFails())
    register(BrokenIdentity())


@hookimpl
def register_tasks(register):
    register(LabelTask())
    register(KeptLabelTask())
    register(AuthorTask())


FAKE_PRESET = {
    "dataset": "fake-data",
    "models": ["fake-mlm", "fake-clm"],
    "maskings": ["every-nth:ratio=0.3", "every-nth:ratio=0.6", "every-nth:ratio=0.9"],
    "samplers": ["fake-fill", "fake-fill:steps=4", "fake-clm-fill"],
    "metrics": ["word-match"],
    "tasks": ["label-task", "author-task"],
    "seeds": [0],
    "limit": 8,
}


def install() -> None:
    """Register this module with the plugin manager (as an entry point would)."""
    import sys

    from mlmh.plugins.plugin_manager import get_plugin_manager

    pm = get_plugin_manager()
    if not pm.is_registered(sys.modules[__name__]):
        pm.register(sys.modules[__name__], name="runner-fakes")
