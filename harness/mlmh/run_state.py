"""What a run's stages hand each other (:class:`RunState`) and what the run records as it goes (:class:`RunLog`),
apart from the stages themselves (:mod:`mlmh.runner`) and the results built from them (:mod:`mlmh.run_results`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mlmh.types import Correlation, Corpus, Document, Generation, MaskedItem, MetricResult, RoleQuality, RunError

if TYPE_CHECKING:
    from mlmh.components import Model
    from mlmh.toolkit import Adapter


@dataclass
class LoadedModel:
    component: Model
    identity: str
    adapter: Adapter | None = None
    training: dict[str, Any] = field(default_factory=dict)  # the card of a model mlmh trained


#: the two document sets of every run: regenerations of train documents (the synthetic corpus of the
#: paper's protocol) and of test documents that no model trained on or was selected on
ROLES = ("seen", "unseen")
SPLIT_OF_ROLE = {"seen": "train", "unseen": "test"}
REAL_TRAIN = "real train split"  # what the downstream baseline trains on


@dataclass
class RunState:
    """What each stage hands to the next (the stage that fills a field is named beside it)."""

    corpus: Corpus | None = None  # data
    documents: dict[str, list[Document]] = field(default_factory=dict)  # data, cut to the windows by mask: role -> docs
    role_of: dict[str, str] = field(default_factory=dict)  # data: doc id -> role
    cut: dict[str, int] = field(default_factory=dict)  # mask: role -> documents cut to the narrowest model window
    headline: str = "seen"  # data, decided once: the set the comparison leads with (unseen when there is a test split)
    test: Corpus | None = None  # data: the real test split the downstream tasks test on
    models: dict[str, LoadedModel] = field(default_factory=dict)  # models: spec -> loaded
    train: Corpus | None = None  # mask: the real train documents the synthetic corpora replace
    items: dict[tuple[str, int], list[MaskedItem]] = field(default_factory=dict)  # mask: (masking, seed) -> items
    generations: dict[str, list[Generation]] = field(default_factory=dict)  # generate: condition -> generations
    filler_word: str = ""  # metrics
    # metrics: condition -> role -> quality, the baselines of its masking and seed beside it
    quality: dict[str, dict[str, RoleQuality]] = field(default_factory=dict)
    metric_results: dict[str, list[MetricResult]] = field(default_factory=dict)  # metrics: condition -> headline set's
    # metrics: (baseline name, masking, seed) -> the headline set's results and the generations they score, in order
    baseline_results: dict[tuple[str, str, int], tuple[list[MetricResult], list[Generation]]] = field(default_factory=dict)
    downstream: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)  # downstream: condition -> scores
    baseline: dict[str, dict[str, float | None]] = field(default_factory=dict)  # downstream: task -> scores on the real train split
    correlations: list[Correlation] = field(default_factory=list)  # correlation
    # downstream: "real" | "chance" | condition -> task -> score -> per-test-item values (tasks that report them)
    task_items: dict[str, dict[str, dict[str, list[float]]]] = field(default_factory=dict)


@dataclass
class RunLog:
    """What the run records as it goes, whichever stage is running: notes, failed components, the conditions
    they left without results, and each stage's time."""

    notes: list[str] = field(default_factory=list)
    errors: list[RunError] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # condition id -> why it has no results
    timings: dict[str, float] = field(default_factory=dict)


@dataclass
class Scoring:
    """What each scoring call of the metrics stage shares: the result cache and the stage's progress count."""

    lookup: Any  # mlmh.cache.ResultLookup of MetricResult
    total: int
    done: int = 0
