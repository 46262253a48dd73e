"""The typed values that flow through a run. All are dataclasses that round-trip through JSON,
so the cache, the CLI, the TUI and the tests see the same things."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class EntitySpan:
    """A labelled character span (brat-style); ``fragments`` holds discontinuous pieces."""

    start: int
    end: int
    label: str
    text: str = ""
    fragments: tuple[tuple[int, int], ...] = ()


@dataclass
class Document:
    """One text of a dataset with whatever labels the downstream tasks need."""

    id: str
    text: str
    split: str = "train"  # "train" | "validation" | "test" (roles: mlmh.splits)
    labels: list[str] = field(default_factory=list)  # e.g. MPST tags
    author: str | None = None  # e.g. PAN author id
    entities: list[EntitySpan] = field(default_factory=list)  # e.g. drug/dose spans
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Pair:
    """An authorship-verification pair of two document ids; ``same`` is the truth."""

    id: str
    a: str
    b: str
    same: bool
    split: str = "train"


@dataclass
class Corpus:
    """What a dataset plugin loads: documents (+ pairs for verification) and where they came from."""

    dataset: str
    documents: list[Document]
    source: str  # a path, or "bundled sample"
    pairs: list[Pair] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # dropped rows etc., shown to the user

    def split(self, name: str) -> list[Document]:
        return [d for d in self.documents if d.split == name]

    def by_id(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}


@dataclass(frozen=True)
class Words:
    """The shared, model-independent pre-tokenization: word spans with character offsets."""

    text: str
    spans: tuple[tuple[int, int], ...]

    def __len__(self) -> int:
        return len(self.spans)

    def __getitem__(self, i: int) -> str:
        s, e = self.spans[i]
        return self.text[s:e]

    def __iter__(self) -> Iterator[str]:
        return (self.text[s:e] for s, e in self.spans)

    def replace(self, outputs: dict[int, str]) -> str:
        """The text with word ``i`` replaced by ``outputs[i]``; whitespace between words is kept.

        Visits only the replaced words, not every word of the text (generation builds two texts per
        sample). Indices outside the text are ignored.
        """
        parts: list[str] = []
        last = 0
        for i in sorted(outputs):
            if 0 <= i < len(self.spans):
                start, end = self.spans[i]
                parts.append(self.text[last:start])
                parts.append(outputs[i])
                last = end
        parts.append(self.text[last:])
        return "".join(parts)


@dataclass(frozen=True)
class MaskPlan:
    """Which words a masking strategy hides: the same for every model of a condition."""

    masking: str  # canonical spec of the masking
    word_indices: tuple[int, ...]  # sorted, unique
    note: str = ""  # e.g. "entities from dataset annotations"


@dataclass(frozen=True)
class MaskedItem:
    """A document ready for generation: its words, the mask plan and the per-sample seed."""

    doc_id: str
    words: Words
    plan: MaskPlan
    seed: int


@dataclass
class Step:
    """One refinement step: the tokens of the masked region after the step."""

    tokens: list[str]  # token strings at every position of the encoded input
    changed: list[int]  # positions changed at this step
    confidences: dict[int, float] = field(default_factory=dict)  # position -> probability
    masked: list[int] = field(default_factory=list)  # positions still masked after this step


@dataclass
class Generation:
    """What a sampler returns for one item: final text, word-aligned outputs and its step trace."""

    doc_id: str
    model: str
    model_kind: str  # "mlm" | "clm" | "seq2seq"
    sampler: str
    masking: str
    seed: int
    original: str
    masked_text: str  # the input shown with mask markers
    text: str  # final generated text
    masked_words: list[int]  # word indices that were masked
    output_words: dict[int, str]  # word index -> generated string (masked words only)
    steps: list[Step] = field(default_factory=list)
    forward_passes: int = 0
    tokens_processed: int = 0
    generated_tokens: int = 0
    seconds: float = 0.0
    truncated_tokens: int = 0  # tokens beyond the model window that were left as they were
    info: dict[str, Any] = field(default_factory=dict)


@dataclass
class MetricResult:
    """One score: corpus value with a seeded bootstrap 95% CI, per-sample values and provenance."""

    name: str
    value: float | None
    higher_is_better: bool
    per_sample: list[float | None] = field(default_factory=list)
    ci_low: float | None = None
    ci_high: float | None = None
    info: dict[str, Any] = field(default_factory=dict)  # implementation, version, signature...
    error: str | None = None  # set when the metric could not run (e.g. WordNet missing)


@dataclass
class TaskResult:
    """A downstream task trained on one corpus and tested on the real test split."""

    task: str
    scores: dict[str, float]
    n_train: int
    n_test: int
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def to_dict(value: Any) -> Any:
    """JSON-ready form of any of the dataclasses above (tuples become lists)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_dict(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): to_dict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_dict(v) for v in value]
    return value


def from_dict(cls: type[T], data: dict[str, Any]) -> T:
    """Inverse of :func:`to_dict` for the dataclasses of this module."""
    if cls is Generation:
        data = dict(data)
        data["steps"] = [Step(**{**s, "confidences": {int(k): v for k, v in s.get("confidences", {}).items()}}) for s in data.get("steps", [])]
        data["output_words"] = {int(k): v for k, v in data.get("output_words", {}).items()}
        return cls(**data)  # type: ignore[return-value]
    if cls is Document:
        data = dict(data)
        data["entities"] = [from_dict(EntitySpan, e) for e in data.get("entities", [])]
        return cls(**data)  # type: ignore[return-value]
    if cls is EntitySpan:
        data = dict(data)
        data["fragments"] = tuple(tuple(f) for f in data.get("fragments", ()))
        return cls(**data)  # type: ignore[return-value]
    if cls is Words:
        return cls(text=data["text"], spans=tuple(tuple(s) for s in data["spans"]))  # type: ignore[return-value]
    if cls is MaskPlan:
        return cls(masking=data["masking"], word_indices=tuple(data["word_indices"]), note=data.get("note", ""))  # type: ignore[return-value]
    return cls(**data)
