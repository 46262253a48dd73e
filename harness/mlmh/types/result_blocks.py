"""The typed blocks of a run's results besides its conditions and findings (:class:`mlmh.types.RunResults`):
the scores, the configuration, versions, the dataset, the document sets, the models, correlations, failed
components, human ratings, a sweep's crossover and the comparisons the run decided. Each one's ``to_dict`` is
exactly its block of results.json (docs/RESULTS.md) and its ``from_dict`` reads it back, keys it does not know
kept in ``extra`` (every block but :class:`RunError`), keys the file lacked left absent and the keys in the
order read, so a results file read and written again (``mlmh human import``) neither loses nor adds a key."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Sequence, TypeVar

if TYPE_CHECKING:
    from mlmh.types.runconfig import RunConfig

B = TypeVar("B", bound="Block")

#: field metadata: the field is left out of ``to_dict`` when empty (None, 0, "", {} or [])
OMIT_EMPTY = {"omit_empty": True}
#: field metadata: the field's keys sit in the block's own object, not under its name (``extra``)
FLAT = {"flat": True}


class Readable(Protocol):
    """What a results.json value nested in a block is read and written by (a :class:`Block`, a :class:`Score`)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any: ...

    def to_dict(self) -> dict[str, Any]: ...


def nested(kind: type[Readable], *within: str, **options: Any) -> Any:
    """A field holding ``kind`` values, read and written by ``kind``: one (``within`` empty), or inside lists and
    maps, outermost first (``nested(Score, "map")``: a metric -> Score object)."""
    default = list if within[:1] == ("list",) else dict if within else None
    metadata = {"nested": (kind, within), **(options.pop("metadata", {}))}
    if default is None:
        return field(default=options.pop("default", None), metadata=metadata, **options)
    return field(default_factory=default, metadata=metadata, **options)


def _read(kind: type[Readable], within: Sequence[str], value: Any) -> Any:
    if value is None:
        return None
    if not within:
        return kind.from_dict(value)
    if within[0] == "list":
        return [_read(kind, within[1:], v) for v in value]
    return {k: _read(kind, within[1:], v) for k, v in value.items()}


def _written(value: Any) -> Any:
    if isinstance(value, list):
        return [_written(v) for v in value]
    if isinstance(value, dict):
        return {k: _written(v) for k, v in value.items()}
    return value if value is None else value.to_dict()


class Block:
    """A results.json block as a dataclass: its keys are its fields, in their order, then ``extra``'s. A block read
    from a file that lacked some of its keys (an older writer's) writes them back absent, not as defaults, and
    writes its keys in the order the file had them."""

    _absent: frozenset[str] = frozenset()  # the fields the object read had no key for
    _order: tuple[str, ...] = ()  # the keys of the object read, in its order
    if TYPE_CHECKING:  # every Block is a dataclass: what dataclasses.fields takes
        __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @classmethod
    def from_dict(cls: type[B], data: dict[str, Any]) -> B:
        fields = dataclasses.fields(cls)
        flat = next((f.name for f in fields if f.metadata.get("flat")), None)
        named = {f.name for f in fields if not f.metadata.get("flat")}
        values: dict[str, Any] = {k: v for k, v in data.items() if k in named}
        for f in fields:
            if "nested" in f.metadata and f.name in values:
                kind, within = f.metadata["nested"]
                values[f.name] = _read(kind, within, values[f.name])
        if flat is not None:
            values[flat] = {k: v for k, v in data.items() if k not in named}
        block = cls(**values)
        object.__setattr__(block, "_order", tuple(data))  # frozen blocks too
        if named - data.keys():
            object.__setattr__(block, "_absent", frozenset(named - data.keys()))
        return block

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("flat"):
                out |= value
            elif f.name not in self._absent and not (f.metadata.get("omit_empty") and not value):
                out[f.name] = _written(value) if "nested" in f.metadata else value
        return {k: out[k] for k in self._order if k in out} | out if self._order else out


class Measured(Protocol):
    """A metric's result as :meth:`Score.of` reads it (:class:`mlmh.types.MetricResult`)."""

    value: float | None
    ci_low: float | None
    ci_high: float | None
    higher_is_better: bool
    info: dict[str, Any]
    error: str | None


@dataclass
class Score:
    """A value with its bootstrap 95% CI, as results.json stores every quality figure."""

    value: float | None
    ci_low: float | None = None
    ci_high: float | None = None
    higher_is_better: bool = True
    info: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)  # e.g. matched/masked counts, significant

    @classmethod
    def of(cls, result: Measured) -> "Score":
        """What results.json keeps of a metric's result: its value, CI, direction, provenance and error."""
        return cls(value=result.value, ci_low=result.ci_low, ci_high=result.ci_high,
                   higher_is_better=result.higher_is_better, info=result.info, error=result.error)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Score | None":
        if data is None:
            return None
        known = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        return cls(**{k: v for k, v in data.items() if k in known},
                   extra={k: v for k, v in data.items() if k not in known})

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"value": self.value, "ci_low": self.ci_low, "ci_high": self.ci_high}
        out["higher_is_better"] = self.higher_is_better
        if self.info:
            out["info"] = self.info
        if self.error:
            out["error"] = self.error
        return {**out, **self.extra}

    @property
    def has_ci(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    def overlaps(self, other: "Score") -> bool | None:
        """Whether the two CIs overlap; None when either has none."""
        if self.ci_low is None or self.ci_high is None or other.ci_low is None or other.ci_high is None:
            return None
        return not (self.ci_high < other.ci_low or other.ci_high < self.ci_low)


@dataclass
class ConfigRecord(Block):
    """The run's resolved configuration as results.json records it (:meth:`mlmh.types.runconfig.RunConfig.to_dict`): the
    keys the faces read typed, every other key (the specs, the limit, the batch size...) in ``extra`` as the
    run wrote it. A key a file lacks reads as None (``seeds`` as [])."""

    preset: str | None = None
    dataset: str | None = None
    data: str | None = None  # the dataset's files, when given
    seeds: list[int] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)

    @classmethod
    def of(cls, config: RunConfig) -> "ConfigRecord":
        """What results.json records of the configuration a run ran: its ``to_dict``, keys in its order."""
        return cls.from_dict(config.to_dict())


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
    validation_groups: int = field(default=0, metadata=OMIT_EMPTY)  # the groups validation holds (mlmh.data.splits)
    # whether the dataset names groups (authors, patients): then unseen documents are other groups' texts, and their
    # gap to the seen ones is no measure of memorisation (mlmh.findings.verdicts.memorisation_check); a file written
    # before it existed reads as grouped
    grouped: bool = True
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class DocumentSet(Block):
    """A document set the run regenerated (``seen``, ``unseen``): the split it came from, its size and ids, how
    many groups (authors, patients, sources: :mod:`mlmh.data.splits`) its documents come from and how many were cut to
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
                  "output_vocabulary", "embeddings_frozen", "architecture", "device",
                  "precision", "train_seconds", "train_cpu_seconds", "keep", "unique_tokens", "epochs", "validation_block_losses")


def brief_model_name(kind: str, start: str) -> str:
    """A model in a few words, its kind and where it starts (``mlm (minilm)``, ``clm (scratch)``): the last part of
    ``start``'s path, "scratch" when it has none. Progress, the answer and the study name models so."""
    return f"{kind} ({str(start).rstrip('/').rsplit('/', 1)[-1] or 'scratch'})"


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
    """Quality of the seen regenerations vs one downstream score across conditions (:mod:`mlmh.findings.correlation`):
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


@dataclass
class Contrast(Block):
    """A paired difference over a downstream task's test items (one training set's model minus another's, per item,
    averaged) with its Student's t 95% CI (:func:`mlmh.stats.t_interval`) and the number of items."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    items: int = 0
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class DownstreamTest(Block):
    """What one downstream task's test can tell (:mod:`mlmh.findings.downstream`), on the score it reports per test
    item: whether its model trained on the real documents learns (beats no training data and the best constant
    predictor beyond their CIs, and scores differently on different training sets), and how small a difference
    between two training sets its test detects (``mdd``: at ``power``, two-sided ``1 - confidence``, from the per-item
    ``sd`` of the paired differences at its ``items`` test items). ``reason`` says why it does not learn, in words."""

    task: str = ""
    score: str = ""
    items: int = 0
    learns: bool | None = None
    reason: str = ""
    real_vs_none: Contrast | None = nested(Contrast)
    real_vs_constant: Contrast | None = nested(Contrast)
    training_sets: int = 0  # the real documents and each synthetic set it was trained on
    varies: bool | None = None  # whether its per-item scores differ between those training sets
    sd: float | None = None
    sd_of: str = ""  # which paired differences ``sd`` is of
    mdd: float | None = None
    power: float = 0.8
    confidence: float = 0.95
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class DeclaredResult(Block):
    """A main result as a metric declared it when the run ran (:class:`mlmh.components.Headline`): its rank, label
    and unit, and which rules read it (the papers' claims, a sweep, the baselines, and whether it rewards deletion)."""

    result: str = ""
    rank: int = 0
    label: str = ""
    unit: str = ""
    findings: bool = False
    sweep: bool = False
    baselines: bool = False
    rewards_deletion: bool = False
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class Declared(Block):
    """What the registered components declared about themselves that the run's verdicts read, recorded when it ran
    (:func:`mlmh.config.declared.record`), so the same results.json gives the same verdicts whatever plugins are
    installed when it is read again: the main results (in rank order), the models a sweep varies (name -> model
    kind) and the fluency judge's pair of results."""

    headlines: list[DeclaredResult] = nested(DeclaredResult, "list")
    swept_models: dict[str, str] = field(default_factory=dict)
    fluency: list[str] | None = None
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
class HumanScore(Block):
    """One criterion's mean human rating of one condition, with its bootstrap 95% CI and how many ratings it holds."""

    value: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    n: int = 0
    higher_is_better: bool = True
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class HumanRatings(Block):
    """Blinded human ratings imported into a run (:mod:`mlmh.human`): per condition and criterion a mean with its
    bootstrap CI (:class:`HumanScore`), and the raters' agreement per criterion."""

    criteria: list[str] = field(default_factory=list)
    n_raters: int = 0
    raters: list[str] = field(default_factory=list)
    n_items: int = 0
    conditions: dict[str, dict[str, HumanScore]] = nested(HumanScore, "map", "map")
    agreement: dict[str, float | None] = field(default_factory=dict)
    agreement_method: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class SweepPoint(Block):
    """One model of a data-constrained sweep (:mod:`mlmh.findings.crossover`): its unique-token budget U, epochs and
    objective, what its training card says (validation loss, FLOPs, seconds, tokens, parameters), and its first
    condition's unseen scores beside the filler's and deletion's."""

    unique_tokens: int = 0
    epochs: float = 0.0
    objective: str = ""
    model: str | None = None
    unique_tokens_trained: int | None = None
    validation_loss: float | None = None
    approx_train_flops: float | None = None
    train_seconds: float | None = None
    tokens_seen: int | None = None
    parameters: int | None = None
    condition: str | None = None
    unseen: dict[str, Score] = nested(Score, "map")
    filler: dict[str, Score] = nested(Score, "map")
    deletion: dict[str, Score] = nested(Score, "map")
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class Crossover(Block):
    """Where masked overtakes causal in a data-constrained sweep (:mod:`mlmh.findings.crossover`): every swept
    point, the metrics compared, one crossover finding per budget and measure, the answer in one sentence, and
    what the two validation losses are."""

    points: list[SweepPoint] = nested(SweepPoint, "list")
    metrics: list[str] = field(default_factory=list)
    crossovers: list[dict[str, Any]] = field(default_factory=list)
    answer: str = ""
    comparability: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


# -- the comparisons: what report.md's Findings state beside the claims, decided once by the run -------------
# (mlmh.findings.comparisons decides them; each item's ``statement`` is the sentence every face shows)
class Stated(Protocol):
    """A comparison verdict as a face lists it: its sentence, and its object of results.json."""

    statement: str

    def to_dict(self) -> dict[str, Any]: ...


@dataclass
class KindVerdict(Block):
    """One main metric, one model kind against another (MLM against CLM or seq2seq) on one document set: per
    masking setting and seed the best condition of each kind; only wins with non-overlapping CIs count, and a
    lead resting on a condition a caveat rules out is "not comparable" (``caveats``)."""

    role: str = ""
    metric: str = ""
    kinds: list[str] = field(default_factory=list)  # [a, b]
    verdict: str = ""  # "MLM beats CLM", "MLM and CLM tie", "MLM ahead of CLM (not comparable)"
    settings: int = 0  # masking settings (x seeds) where both kinds have a condition
    wins: list[int] = field(default_factory=list)  # [a, b]: settings where each kind scores better
    sure: list[int] = field(default_factory=list)  # [a, b]: of those, the ones with non-overlapping CIs
    caveats: list[str] = field(default_factory=list)
    detail: str = ""
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class Disagreement(Block):
    """A main metric whose MLM-against-CLM verdict on seen documents is not the one on unseen documents."""

    metric: str = ""
    unseen: str = ""  # the verdict on unseen documents
    seen: str = ""
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


#: a model's memorisation verdict (:class:`Memorisation`)
MEMORISED, ON_PLATEAU, NO_GAP = "memorised", "on the unigram plateau", "no gap"
#: a model judged on no gap: the run holds no control documents and the unseen ones are other groups' texts
GROUP_GAP_ONLY = "group gap, not judged"


@dataclass
class Memorisation(Block):
    """One model's seen - unseen gap on the first main metric over its conditions: ``memorised`` where some gap lies
    outside its CI (:func:`mlmh.findings.verdicts.memorised`), ``on the unigram plateau`` where the model never
    learned (its gap is noise about a constant), else ``no gap``; the largest gap and its condition beside."""

    model: str = ""
    metric: str = ""
    verdict: str = ""
    flagged: int = 0  # conditions whose gap lies outside its CI
    conditions: int = 0
    largest: str = ""  # the condition with the largest gap
    gap: Score | None = nested(Score)
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class BaselineVerdict(Block):
    """What the visible context alone earns on one metric and masking (the headline documents): the best
    condition beside filling every mask with the filler word and deleting the masked words."""

    role: str = ""
    metric: str = ""
    masking: str = ""
    condition: str = ""  # the best condition (its scores with their CIs are the condition's)
    value: float | None = None
    filler: float | None = None
    deletion: float | None = None  # None: no deletion score
    beats_filler: bool = True
    beats_deletion: bool | None = None  # None: no deletion score
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class TrendSeries(Block):
    """One model and sampler (and masking family) across the masking ratios: which way the metric moves
    (``falls``, ``rises``, ``shows no clear trend``, ``flat``), its Spearman rho, and its first and last points."""

    series: str = ""
    direction: str = ""
    rho: float | None = None  # None: flat, or no rank correlation defined
    ratios: list[float] = field(default_factory=list)  # [first, last]
    values: list[float] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class RatioTrend(Block):
    """How one main metric moves as the random masking ratio grows, per model and sampler with three or more ratios."""

    role: str | None = None
    metric: str = ""
    series: list[TrendSeries] = nested(TrendSeries, "list")
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class CorrelationVerdict(Block):
    """The verdict of a main quality metric against a downstream task's first score (:class:`Correlation`'s
    summary), the one the findings state; the table has them all."""

    metric: str = ""
    task: str = ""
    score: str = ""
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class PlateauVerdict(Block):
    """A trained model whose card says it never beat the best constant predictor on held-out text: no finding is
    decided on it (:func:`mlmh.findings.verdicts.never_learned`). ``model`` is its spec in ``models``."""

    model: str = ""
    statement: str = ""
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)


@dataclass
class Comparisons(Block):
    """The verdicts report.md's Findings state beside the claims, decided once by the run (or, for results.json
    written before they were kept, when it is read), so every face states the same ones: MLM against CLM
    and seq2seq per main metric and document set, where seen and unseen disagree, memorisation per model, the
    filler and deletion baselines, the masking-ratio trends, the headline correlations and the models still on
    the unigram plateau."""

    kinds: list[KindVerdict] = nested(KindVerdict, "list")
    disagreements: list[Disagreement] = nested(Disagreement, "list")
    memorisation: list[Memorisation] = nested(Memorisation, "list")
    baselines: list[BaselineVerdict] = nested(BaselineVerdict, "list")
    ratio_trends: list[RatioTrend] = nested(RatioTrend, "list")
    correlations: list[CorrelationVerdict] = nested(CorrelationVerdict, "list")
    plateaus: list[PlateauVerdict] = nested(PlateauVerdict, "list")
    extra: dict[str, Any] = field(default_factory=dict, metadata=FLAT)

    def verdicts(self) -> list[tuple[str, "Stated"]]:
        """(kind, verdict) of every verdict, in the blocks' order; its kind is its list's key in results.json
        (``kinds``, ``disagreements``, ``memorisation``...)."""
        return [(f.name, item) for f in dataclasses.fields(self) if not f.metadata.get("flat")
                for item in getattr(self, f.name)]

    def statements(self) -> list[str]:
        """Every verdict's sentence, in the block's order (for faces that list them without report.md's layout)."""
        return [item.statement for _, item in self.verdicts()]
