"""The typed values that flow through a run. All are dataclasses that round-trip through JSON,
so the cache, the CLI, the TUI and the tests see the same things.

The results' other blocks are typed in :mod:`mlmh.types.result_blocks` (and importable from here), and the run's
configuration, each run option declared on its field, in :mod:`mlmh.types.runconfig`."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence, TypeVar, cast

from mlmh.errors import MlmhError
# the results' blocks besides conditions and findings, typed where RunResults is and importable from here
from mlmh.types.result_blocks import (FLAT, Block, Comparisons, ConfigRecord, Contrast, Correlation, Crossover,
                                      DatasetInfo, Declared, DeclaredResult, DocumentSet, DownstreamTest, HumanRatings,
                                      HumanScore, ModelRecord, RunError, Score, SweepPoint, Versions)

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
    split: str = "train"  # "train" | "validation" | "test" (roles: mlmh.data.splits)
    labels: list[str] = field(default_factory=list)  # e.g. MPST tags
    author: str | None = None  # e.g. PAN author id
    #: who or what the document belongs to (an author, a patient, a source); no group sits in two splits
    #: (mlmh.data.splits); None = the document is a group of its own
    group: str | None = None
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

    def texts(self, name: str) -> list[str]:
        """The distinct texts of split ``name`` in document order, what a language model learns from: PAN
        repeats a text in several pairs, and a text learned twice a pass is half memorised before it is scored."""
        return list(dict.fromkeys(d.text for d in self.split(name)))

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
    """JSON-ready form of any of the dataclasses above (tuples become lists); one with a ``to_dict`` of its own
    (the results' blocks) is written by it."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        own = getattr(value, "to_dict", None)
        if callable(own):
            return own()
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
        return cast(T, Generation(**data))
    if cls is Document:
        data = dict(data)
        data["entities"] = [from_dict(EntitySpan, e) for e in data.get("entities", [])]
        return cast(T, Document(**data))
    if cls is EntitySpan:
        data = dict(data)
        data["fragments"] = tuple(tuple(f) for f in data.get("fragments", ()))
        return cast(T, EntitySpan(**data))
    if cls is Words:
        return cast(T, Words(text=data["text"], spans=tuple(tuple(s) for s in data["spans"])))
    if cls is MaskPlan:
        return cast(T, MaskPlan(masking=data["masking"], word_indices=tuple(data["word_indices"]),
                                note=data.get("note", "")))
    return cls(**data)


# -- a run's JSON Lines files (their reads and writes: mlmh.storage.rundir.RunDir) --------------------------------
#: the fields of a generations.jsonl row that are text (``role`` may be null)
GENERATION_FIELDS = ("sample", "condition", "doc_id", "original", "masked_text", "text")


@dataclass(frozen=True)
class GenerationRow:
    """One line of generations.jsonl: a regenerated text, its sample id (``CONDITION:DOC_ID``), condition,
    document and document set; a text field a damaged line lacks reads as None."""

    sample: str | None
    condition: str | None
    doc_id: str | None
    role: str | None = None
    original: str | None = None
    masked_text: str | None = None
    text: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "GenerationRow":
        role = data.get("role")
        return cls(**{f: data[f] if isinstance(data.get(f), str) else None for f in GENERATION_FIELDS},
                   role=role if isinstance(role, str) else None)

    def checked(self, name: str) -> str:
        """Text field ``name`` of a row its reader required it of (:meth:`mlmh.storage.rundir.RunDir.read_generations`)."""
        value = getattr(self, name)
        if not isinstance(value, str):
            raise ValueError(f"generations row {self.sample}: {name} was not read as text")
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"sample": self.sample, "condition": self.condition, "doc_id": self.doc_id, "role": self.role,
                "original": self.original, "masked_text": self.masked_text, "text": self.text}


@dataclass
class SampleRow:
    """One line of samples.jsonl (a run that logged samples): a generation with its step trace, its condition,
    its document set (``seen``/``unseen``, None if unknown) and its per-sample scores."""

    condition: str
    generation: Generation
    metrics: dict[str, Any] = field(default_factory=dict)
    role: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SampleRow":
        return cls(str(data["condition"]), from_dict(Generation, data["generation"]), data.get("metrics") or {},
                   data.get("role"))

    def to_dict(self) -> dict[str, Any]:
        return {"condition": self.condition, "role": self.role, "generation": to_dict(self.generation),
                "metrics": self.metrics}


# -- results of a run (results.json) ---------------------------------------------------------------
#: Version of the results.json schema (docs/RESULTS.md). 1: one quality block per condition;
#: 2: quality on ``seen`` and ``unseen`` documents, their gap, verbatim recall and the filler baseline;
#: 3: typed findings (both papers' claims, caveats, parts), model labels, the best-constant check on cards;
#: 4: the run's comparisons (MLM against CLM and seq2seq, disagreements, memorisation, baselines, ratio trends,
#: correlations, models on the plateau), decided by the run; a file without them gets them when it is read.
RESULTS_SCHEMA = 4


def _scores(data: dict[str, Any] | None) -> dict[str, Score]:
    return {name: score for name, entry in (data or {}).items() if (score := Score.from_dict(entry)) is not None}


@dataclass
class RoleQuality:
    """A condition's quality on one document set: ``seen`` (train, what models learned from), ``unseen`` (test) or
    ``control`` (train authors' texts no model learned, where the run holds them)."""

    documents: int
    scored: int
    metrics: dict[str, Score]
    verbatim_recall: Score | None = None  # share of masked words regenerated exactly
    filler: dict[str, Score] = field(default_factory=dict)  # every mask filled with the filler word
    deletion: dict[str, Score] = field(default_factory=dict)  # every masked word dropped
    # the condition's score minus the baseline's on the same document, averaged (paired), with a CI
    above_filler: dict[str, Score] = field(default_factory=dict)
    above_deletion: dict[str, Score] = field(default_factory=dict)
    nothing_masked: int = 0
    truncated_documents: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RoleQuality":
        return cls(documents=data.get("documents", 0), scored=data.get("scored", 0), metrics=_scores(data.get("metrics")),
                   verbatim_recall=Score.from_dict(data.get("verbatim_recall")), filler=_scores(data.get("filler")),
                   deletion=_scores(data.get("deletion")), above_filler=_scores(data.get("above_filler")),
                   above_deletion=_scores(data.get("above_deletion")),
                   nothing_masked=data.get("nothing_masked", 0), truncated_documents=data.get("truncated_documents", 0))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"documents": self.documents, "scored": self.scored,
                               "metrics": {k: v.to_dict() for k, v in self.metrics.items()}}
        if self.verbatim_recall is not None:
            out["verbatim_recall"] = self.verbatim_recall.to_dict()
        out["filler"] = {k: v.to_dict() for k, v in self.filler.items()}
        out["deletion"] = {k: v.to_dict() for k, v in self.deletion.items()}
        for name in ("above_filler", "above_deletion"):
            if getattr(self, name):
                out[name] = {k: v.to_dict() for k, v in getattr(self, name).items()}
        if self.nothing_masked:
            out["nothing_masked"] = self.nothing_masked
        if self.truncated_documents:
            out["truncated_documents"] = self.truncated_documents
        return out


@dataclass
class GenerationCosts(Block):
    """What generating one condition's documents cost (results.json's ``generation``): samples, forward passes,
    tokens generated and processed, tokens and documents cut at a model window, seconds and throughput."""

    samples: int = 0
    forward_passes: int = 0
    generated_tokens: int = 0
    tokens_processed: int = 0
    truncated_tokens: int = 0
    truncated_documents: int = 0
    seconds: float = 0.0
    tokens_per_s: float | None = None  # None: no time measured
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)

    @classmethod
    def of(cls, generations: list[Generation]) -> "GenerationCosts":
        seconds = sum(g.seconds for g in generations)
        processed = sum(g.tokens_processed for g in generations)
        return cls(samples=len(generations), forward_passes=sum(g.forward_passes for g in generations),
                   generated_tokens=sum(g.generated_tokens for g in generations), tokens_processed=processed,
                   truncated_tokens=sum(g.truncated_tokens for g in generations),
                   truncated_documents=sum(1 for g in generations if g.truncated_tokens), seconds=round(seconds, 4),
                   tokens_per_s=round(processed / seconds, 1) if seconds > 0 else None)


@dataclass
class ConditionResult:
    """One model x masking x sampler x seed: its quality per document set, gap, downstream scores, costs."""

    id: str
    model: str
    model_kind: str
    masking: str
    sampler: str
    seed: int
    masking_ratio: float | None = None
    steps: int | None = None
    seen: RoleQuality | None = None
    unseen: RoleQuality | None = None
    gap: dict[str, Score] = field(default_factory=dict)  # seen - unseen, with a CI
    control: RoleQuality | None = None
    # seen - unseen of the quality above the filler (RoleQuality.above_filler): what memorisation is judged on
    # where the run holds no control documents
    gap_above_filler: dict[str, Score] = field(default_factory=dict)
    # seen - control of the quality above the filler, and of the verbatim recall: what memorisation is judged on
    control_gap: dict[str, Score] = field(default_factory=dict)
    metrics: dict[str, Score] = field(default_factory=dict)  # the headline set's (RunResults.headline)
    downstream: dict[str, dict[str, float]] = field(default_factory=dict)  # task -> score, trained on the synthetic set
    # task -> score, trained on the real documents and the synthetic set together (augmentation)
    downstream_augmented: dict[str, dict[str, float]] = field(default_factory=dict)
    # "synthetic" | "augmented" -> task -> score -> "vs_real" | "vs_none" -> the paired difference over test items
    downstream_contrasts: dict[str, dict[str, dict[str, dict[str, Contrast]]]] = field(default_factory=dict)
    generation: GenerationCosts = field(default_factory=GenerationCosts)
    failed: str | None = None  # the component failure that left this condition without results

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ConditionResult":
        roles = {role: RoleQuality.from_dict(data[role]) if data.get(role) else None
                 for role in ("seen", "unseen", "control")}
        return cls(id=data["id"], model=data["model"], model_kind=data["model_kind"], masking=data["masking"],
                   sampler=data["sampler"], seed=data["seed"], masking_ratio=data.get("masking_ratio"),
                   steps=data.get("steps"), **roles, gap=_scores(data.get("gap")),
                   gap_above_filler=_scores(data.get("gap_above_filler")), control_gap=_scores(data.get("control_gap")),
                   metrics=_scores(data.get("metrics")),
                   downstream=data.get("downstream") or {},
                   downstream_augmented=data.get("downstream_augmented") or {},
                   downstream_contrasts={mode: {task: {score: {k: Contrast.from_dict(v) for k, v in against.items()}
                                                       for score, against in scores.items()}
                                                for task, scores in tasks.items()}
                                         for mode, tasks in (data.get("downstream_contrasts") or {}).items()},
                   generation=GenerationCosts.from_dict(data.get("generation") or {}),
                   failed=data.get("failed"))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "model": self.model, "model_kind": self.model_kind,
                               "masking": self.masking, "sampler": self.sampler, "seed": self.seed}
        if self.masking_ratio is not None:
            out["masking_ratio"] = self.masking_ratio
        if self.steps is not None:
            out["steps"] = self.steps
        for role in ("seen", "unseen", "control"):
            if getattr(self, role) is not None:
                out[role] = getattr(self, role).to_dict()
        if self.gap:
            out["gap"] = {k: v.to_dict() for k, v in self.gap.items()}
        if self.gap_above_filler:
            out["gap_above_filler"] = {k: v.to_dict() for k, v in self.gap_above_filler.items()}
        if self.control_gap:
            out["control_gap"] = {k: v.to_dict() for k, v in self.control_gap.items()}
        out["metrics"] = {k: v.to_dict() for k, v in self.metrics.items()}
        out["downstream"] = self.downstream
        if self.downstream_augmented:
            out["downstream_augmented"] = self.downstream_augmented
        if self.downstream_contrasts:
            out["downstream_contrasts"] = {
                mode: {task: {score: {k: v.to_dict() for k, v in against.items()} for score, against in scores.items()}
                       for task, scores in tasks.items()} for mode, tasks in self.downstream_contrasts.items()}
        out["generation"] = self.generation.to_dict()
        if self.failed:
            out["failed"] = self.failed
        return out

    def quality(self, role: str | None = None) -> dict[str, Score]:
        """Metric scores on ``role`` ("seen"/"unseen"); the headline set's when ``role`` is None."""
        if role is None:
            return self.metrics
        block = getattr(self, role, None)
        return block.metrics if block is not None else {}

    def value(self, metric: str, role: str | None = None) -> float | None:
        score = self.quality(role).get(metric)
        return None if score is None else score.value

    def scored(self, metric: str, role: str | None = None) -> float:
        """:meth:`value` of a row kept for having one (a sort key over such rows); ValueError if it has none."""
        value = self.value(metric, role)
        if value is None:
            raise ValueError(f"condition {self.id} has no {metric} value")
        return value


#: the verdicts a finding can carry, defined once (mlmh.findings decides them)
HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
NOT_COMPARABLE, NOT_TESTED = "not comparable", "not tested"
VERDICTS = (HOLDS, FAILS, INCONCLUSIVE, NOT_COMPARABLE, NOT_TESTED)


@dataclass
class Finding:
    """A claim tested on the run's own conditions (mlmh.findings): one sentence a reader takes away, its
    statistic with a paired bootstrap 95% CI on unseen documents, the verdict, and the caveats that decided it.

    ``verdict`` is one of :data:`VERDICTS`: "not comparable" when every condition the claim needs is one a
    caveat rules out (a model on the unigram plateau, no better than the filler or deletion, memorising),
    "not tested" when the run has no conditions for it. ``parts`` are the claim's sub-results (per masking,
    per model kind), each a dict with ``label``, ``statistic``, ``ci_low``, ``ci_high`` and ``verdict``.
    """

    claim: str  # stable id, e.g. "paper-1:bleu" or "gmlm-a@0.5"
    source: str  # the paper the claim comes from
    text: str  # the claim in words
    verdict: str
    statement: str  # one sentence: what was measured, the statistic and CI, the verdict and its caveat
    statistic: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    unit: str = ""
    documents: int = 0
    conditions: list[str] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    parts: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def tested(self) -> bool:
        return self.verdict != NOT_TESTED

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Finding":
        """A finding from results.json; one written before findings were typed (schema 2: no ``source`` or
        ``text``, "skipped" for not tested) reads with its other keys in ``extra``."""
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        fields = {k: v for k, v in data.items() if k in known}
        fields.setdefault("source", "")
        fields.setdefault("text", str(data.get("statement", "")).split(":")[0])
        fields.setdefault("statement", "")
        if fields.get("verdict") == "skipped":
            fields["verdict"] = NOT_TESTED
        return cls(**fields, extra={**data.get("extra", {}), **{k: v for k, v in data.items() if k not in known and k != "extra"}})

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass
class RunResults:
    """What ``mlmh eval`` found: written once as results.json (schema: docs/RESULTS.md), read by the
    report, the CLI summary, human evaluation and the TUI."""

    run_id: str
    config: ConfigRecord  # the resolved RunConfig, as the run recorded it
    conditions: list[ConditionResult]
    schema_version: int = RESULTS_SCHEMA
    versions: Versions = field(default_factory=Versions)
    dataset: DatasetInfo = field(default_factory=DatasetInfo)
    documents: dict[str, DocumentSet] = field(default_factory=dict)  # role -> split, count, ids
    headline: str = "unseen"  # the document set the comparison leads with
    filler_word: str | None = None
    n_samples: int = 0  # documents regenerated per condition (seen + unseen)
    baseline: dict[str, dict[str, float | None]] = field(default_factory=dict)  # task -> score -> value (real train split)
    correlations: list[Correlation] = field(default_factory=list)
    # per downstream task: whether its model learns from the real documents and the difference its test detects
    downstream_tests: list[DownstreamTest] = field(default_factory=list)
    models: dict[str, ModelRecord] = field(default_factory=dict)  # spec -> identity, kind, training card facts
    findings: list[Finding] = field(default_factory=list)  # claims tested by the run (mlmh.findings.decide)
    comparisons: Comparisons | None = None  # None only until decided (mlmh.findings.comparisons.judged)
    notes: list[str] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)  # components that failed, by name
    started_at: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    human: HumanRatings | None = None
    crossover: Crossover | None = None  # a data-constrained sweep's points and crossovers (mlmh.findings.crossover)
    # the components' declarations the verdicts read, as the run recorded them (mlmh.config.declared.record); None in
    # a file written before runs recorded them, whose verdicts read the installed plugins' (mlmh.config.declared.of)
    declared: Declared | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunResults":
        """Typed results from results.json's data; schema 1 files (before seen/unseen) read as seen-only."""
        version = int(data.get("schema_version", 1))
        if version > RESULTS_SCHEMA:
            raise ValueError(f"results schema {version} is newer than this mlmh reads ({RESULTS_SCHEMA}); upgrade mlmh")
        rows = [ConditionResult.from_dict(row) for row in data.get("conditions", [])]
        if version == 1:
            for row in rows:
                row.seen = RoleQuality(documents=data.get("n_samples", 0), scored=data.get("n_samples", 0),
                                       metrics=row.metrics)
        given = {k: v for k, v in data.items() if v is not None}
        return cls(
            run_id=given.get("run_id", ""), config=ConfigRecord.from_dict(given.get("config", {})), conditions=rows,
            schema_version=RESULTS_SCHEMA,
            versions=Versions.from_dict(given.get("versions", {})), dataset=DatasetInfo.from_dict(given.get("dataset", {})),
            documents={role: DocumentSet.from_dict(d) for role, d in given.get("documents", {}).items()},
            headline=given.get("headline", "seen" if version == 1 else "unseen"), filler_word=given.get("filler_word"),
            n_samples=given.get("n_samples", 0), baseline=given.get("baseline", {}),
            correlations=[Correlation.from_dict(c) for c in given.get("correlations", [])],
            downstream_tests=[DownstreamTest.from_dict(t) for t in given.get("downstream_tests", [])],
            models={spec: ModelRecord.from_dict(m) for spec, m in given.get("models", {}).items()},
            findings=[Finding.from_dict(f) for f in given.get("findings", [])],
            comparisons=Comparisons.from_dict(given["comparisons"]) if "comparisons" in given else None,
            notes=given.get("notes", []),
            errors=[RunError.from_dict(e) for e in given.get("errors", [])], started_at=given.get("started_at", ""),
            timings=given.get("timings", {}),
            human=HumanRatings.from_dict(given["human"]) if "human" in given else None,
            crossover=Crossover.from_dict(given["crossover"]) if "crossover" in given else None,
            declared=Declared.from_dict(given["declared"]) if "declared" in given else None)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name in ("comparisons", "human", "crossover", "declared") and value is None:
                continue
            if f.name == "downstream_tests" and not value:  # a run without downstream tasks, or written before them
                continue
            out[f.name] = to_dict(value)
        return out

    # -- tables for notebooks: flat rows, and DataFrames of them -----------------------------------
    def to_rows(self) -> dict[str, list[dict[str, Any]]]:
        """``conditions``: one flat row per condition and document set (``role``), each metric's value with
        ``_ci_low``/``_ci_high``, the filler's and deletion's values, the verbatim recall and the downstream
        scores; ``findings``: one row per finding, its lists joined by "; "; ``comparisons``: one row per
        comparison verdict, its ``kind`` (its list in results.json: ``kinds``, ``memorisation``...) first, then its
        keys as a finding's. A metric named like a fixed column (``role``, ``model``, ``seed``...) is written as
        ``metric:NAME``, so it never overwrites that column."""
        conditions = []
        for row in self.conditions:
            head = {"condition": row.id, "model": row.model, "model_kind": row.model_kind, "masking": row.masking,
                    "masking_ratio": row.masking_ratio, "sampler": row.sampler, "seed": row.seed, "failed": row.failed}
            for role in ("unseen", "seen"):
                block: RoleQuality | None = getattr(row, role)
                if block is None:
                    continue
                out = {**head, "role": role, "headline": role == self.headline, "documents": block.documents,
                       "scored": block.scored}
                for prefix, scores in (("", block.metrics), ("filler_", block.filler), ("deletion_", block.deletion),
                                       ("", {"verbatim_recall": block.verbatim_recall} if block.verbatim_recall else {})):
                    for name, score in scores.items():
                        name = f"metric:{name}" if not prefix and name in out else name  # never over a fixed column
                        out[prefix + name] = score.value
                        if not prefix:
                            out[f"{name}_ci_low"], out[f"{name}_ci_high"] = score.ci_low, score.ci_high
                out |= {f"{task}:{key}": value for task, values in row.downstream.items() for key, value in values.items()}
                conditions.append(out)
        findings = [_flat_row(f.to_dict(), leave_out=("parts", "extra")) for f in self.findings]
        verdicts = self.comparisons.verdicts() if self.comparisons else []
        comparisons = [{"kind": kind} | _flat_row(verdict.to_dict(), leave_out=("kind",)) for kind, verdict in verdicts]
        return {"conditions": conditions, "findings": findings, "comparisons": comparisons}

    def to_pandas(self) -> dict[str, Any]:
        """:meth:`to_rows` as pandas DataFrames (``conditions``, ``findings``, ``comparisons``); pandas is not a
        dependency."""
        try:
            import pandas
        except ImportError:
            raise MlmhError("RunResults.to_pandas needs pandas: pip install 'mlmh[notebook]' (to_rows() needs nothing)") from None
        return {name: pandas.DataFrame(rows) for name, rows in self.to_rows().items()}


def _flat_row(data: dict[str, Any], leave_out: Sequence[str] = ()) -> dict[str, Any]:
    """A finding's or a comparison's object as one flat row of scalars: a list joined by "; ", a score as its value
    with ``_ci_low``/``_ci_high`` beside (as the conditions' metrics), ``leave_out`` and any other nested object left
    out (the row's statement says what they hold)."""
    row: dict[str, Any] = {}
    for key, value in data.items():
        if key in leave_out:
            continue
        if isinstance(value, dict):
            if "value" in value:
                row |= {key: value["value"], f"{key}_ci_low": value.get("ci_low"), f"{key}_ci_high": value.get("ci_high")}
        elif isinstance(value, list):
            if not any(isinstance(v, (dict, list)) for v in value):
                row[key] = "; ".join(map(str, value))
        else:
            row[key] = value
    return row
