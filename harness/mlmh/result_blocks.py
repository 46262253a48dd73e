"""The typed blocks of a run's results besides its conditions and findings (:class:`mlmh.types.RunResults`):
versions, the dataset, the document sets, the models, correlations, failed components, human ratings and a
sweep's crossover. Each one's ``to_dict`` is exactly its block of results.json (docs/RESULTS.md) and its
``from_dict`` reads it back, keys it does not know kept in ``extra`` (every block but :class:`RunError`) and keys
the file lacked left absent, so a results file read and written again (``mlmh human import``) neither loses nor
adds a key."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

B = TypeVar("B", bound="Block")

#: field metadata: the field is left out of ``to_dict`` when empty (None, 0, "", {} or [])
OMIT_EMPTY = {"omit_empty": True}
#: field metadata: the field's keys sit in the block's own object, not under its name (``extra``)
FLAT = {"flat": True}


class Block:
    """A results.json block as a dataclass: its keys are its fields, in their order, then ``extra``'s. A block read
    from a file that lacked some of its keys (an older writer's) writes them back absent, not as defaults."""

    _absent: frozenset[str] = frozenset()  # the fields the object read had no key for
    if TYPE_CHECKING:  # every Block is a dataclass: what dataclasses.fields takes
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_dict(cls: type[B], data: dict[str, Any]) -> B:
        fields = dataclasses.fields(cls)
        flat = next((f.name for f in fields if f.metadata.get("flat")), None)
        named = {f.name for f in fields if not f.metadata.get("flat")}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in named}
        if flat is not None:
            values[flat] = {k: v for k, v in data.items() if k not in named}
        block = cls(**values)
        if named - data.keys():
            object.__setattr__(block, "_absent", frozenset(named - data.keys()))  # frozen blocks too
        return block

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("flat"):
                out |= value
            elif f.name not in self._absent and not (f.metadata.get("omit_empty") and not value):
                out[f.name] = value
        return out


@dataclass
class Versions(Block):
    """mlmh's, Python's and the model and metric libraries' versions (``libraries``, in results.json's own object,
    mlmh first), and every loaded plugin's (``plugins``)."""

    libraries: dict[str, Any] = field(default_factory=dict, metadata=FLAT)
    plugins: dict[str, str | None] = field(default_factory=dict)


@dataclass
class DatasetInfo(Block):
    """The dataset a run read: its name, where it came from and how many documents each split held."""

    name: str = ""
    source: str = ""
    train_documents: int = 0
    validation_documents: int = 0
    test_documents: int = 0
    validation_groups: int = field(default=0, metadata=OMIT_EMPTY)  # the groups validation holds (mlmh.splits)
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class DocumentSet(Block):
    """A document set the run regenerated (``seen``, ``unseen``): the split it came from, its size and ids, how
    many groups (authors, patients, sources: :mod:`mlmh.splits`) its documents come from and how many were cut to
    the narrowest model window: what a finding on the set can stand for."""

    split: str = ""
    documents: int = 0
    ids: list[str] = field(default_factory=list)
    groups: int = field(default=0, metadata=OMIT_EMPTY)
    cut: int = field(default=0, metadata=OMIT_EMPTY)
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


#: what results.json keeps of a trained model's card (its training_card.json): the budget rule, the checkpoint
#: kept, the curves and how training ended; the report's "Training" section reads these
TRAINING_FACTS = ("objective", "mask_schedule", "mask_ratio", "budget", "budget_note", "steps", "steps_run", "step_kept",
                  "stopped_early", "selection", "validation_accuracy", "tokens_seen", "supervised_targets",
                  "approx_train_flops", "validation_loss", "final_loss", "heldout_accuracy",
                  "unigram_baseline_accuracy", "best_constant_accuracy", "beats_constant", "accuracy_at_ratio", "train_curve", "validation_curve", "heldout_source",
                  "validation_holds", "stop_reason", "left_plateau_at_step", "patience_tokens", "parameters", "init",
                  "init_path", "learning_rate", "fresh_parameters", "fresh_learning_rate", "head_warmup_steps",
                  "output_vocabulary", "architecture", "device",
                  "precision", "train_seconds", "train_cpu_seconds", "keep", "unique_tokens", "epochs", "validation_block_losses")


@dataclass
class ModelRecord(Block):
    """A model's entry in ``RunResults.models``: its identity, kind, short spec (``label``, as the conditions name
    it) and, when mlmh trained it, the :data:`TRAINING_FACTS` of its training card (``training``); keys an
    older or newer writer added stay in ``extra``."""

    identity: str = ""
    model_kind: str = ""
    label: str = field(default="", metadata=OMIT_EMPTY)
    training: dict[str, Any] = field(default_factory=dict, metadata=OMIT_EMPTY)
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)

    @classmethod
    def of(cls, identity: str, model_kind: str, card: dict[str, Any] | None = None, label: str = "") -> "ModelRecord":
        """The record of a loaded model: the training facts of its card when it has one."""
        return cls(identity=identity, model_kind=model_kind, label=label,
                   training={k: card[k] for k in TRAINING_FACTS if k in card} if card else {})

    def called(self, spec: str) -> str:
        """What a reader calls the model recorded under ``spec``: its short spec (``label``), else ``spec``."""
        return self.label or spec


@dataclass
class Correlation(Block):
    """Quality of the seen regenerations vs one downstream score across conditions (:mod:`mlmh.analysis`):
    Spearman and Pearson with p-values and bootstrap CIs (None without enough data), and a one-line summary."""

    metric: str = ""
    task: str = ""
    score: str = ""
    n: int = 0
    spearman: float | None = None
    spearman_p: float | None = None
    spearman_ci: list[float] | None = None
    pearson: float | None = None
    pearson_p: float | None = None
    pearson_ci: list[float] | None = None
    summary: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass(frozen=True)
class RunError(Block):
    """A component that failed during a run, by name; the rest of the run completed."""

    component: str = ""
    during: str = ""
    error: str = ""

    def __str__(self) -> str:
        return f"{self.component} ({self.during}): {self.error}"


@dataclass
class HumanRatings(Block):
    """Blinded human ratings imported into a run (:mod:`mlmh.human`): per condition and criterion a mean with its
    bootstrap CI (``value``, ``ci_low``, ``ci_high``, ``n``), and the raters' agreement per criterion."""

    criteria: list[str] = field(default_factory=list)
    n_raters: int = 0
    raters: list[str] = field(default_factory=list)
    n_items: int = 0
    conditions: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    agreement: dict[str, float | None] = field(default_factory=dict)
    agreement_method: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class Crossover(Block):
    """Where masked overtakes causal in a data-constrained sweep (:mod:`mlmh.crossover`): every swept point, the
    metrics compared, one crossover finding per budget and measure, the answer in one sentence, and what the two
    validation losses are."""

    points: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    crossovers: list[dict[str, Any]] = field(default_factory=list)
    answer: str = ""
    comparability: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)
