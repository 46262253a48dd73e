"""Each decision rule run under a null and under a stated effect, on synthetic per-document scores with a run's own
arm structure, through mlmh's own findings code: how often it says "holds" (or flags) when nothing is there, and how
often it finds what is (Dror et al., ACL 2018, ask this of any significance rule used in NLP).

A simulated run has the conditions of a preset or a run (models x maskings x samplers), ``documents`` unseen
documents shared by every arm, and per-document scores ``base + document + masking + arm + noise``: the document's
own difficulty (sd :data:`DOCUMENT_SD`, shared by every arm, as real texts are), noise per arm and document (sd
:data:`NOISE_SD`), and a trivial filler and deletion well below every arm. Under the **null** every arm has the same
quality; under the **effect** the claim's arms differ by :data:`EFFECT` points. The rules read these through
:func:`mlmh.findings.decide.run_findings` and :func:`mlmh.findings.verdicts.memorisation_check` exactly as a run's
results are read. A rule's false rate is judged against its nominal rate with a Monte-Carlo CI (Wilson): a rule whose
CI lies wholly above its nominal rate is miscalibrated.

Simulated here: claims (1), (2) as the paper states it and beyond the baselines, (3), (4), (5), Li et al.'s claims (a)
at inference masking 0.5 and 0.8, (b) for Gibbs and mask-predict and (c), the crossover epoch of a sweep on validation
loss and on unseen quality, and the memorisation rule (the comparisons' MLM-against-CLM verdict on unseen documents is
claim (1)'s). One metric is simulated; a run that tests claim (1) on several metrics widens each interval further (its
family counts them), so its rate is lower.

- Claim (4) reads each condition's seen quality and downstream score through the run's correlation stage
  (:func:`mlmh.findings.correlation.correlate`), drawn with Spearman's rho :data:`~mlmh.findings.correlation.STRONG`
  between them under its null (a strong correlation it must not call weak) and 0 under its effect.
- Li et al.'s claims read per-document hits and positions of masked-word accuracy and stutter
  (:func:`simulated_cells`): the masked words of a masking shared by its arms, each arm's rate per document
  ``level + document + shift + noise`` in points and its hits binomial over the masked words; the effects are +2
  accuracy points per +0.1 of fixed training mask ratio (a), stutter 3 points lower at a series' most forward passes
  than at one (b), adaptive Gibbs 3 accuracy points above Gibbs (c). A claim is simulated where its own rule tests the
  structure's arms.
- The crossover reads a sweep (:func:`simulated_sweep`): per unique-token budget, epochs and objective, per-block
  validation losses and per-document unseen quality, blocks and documents shared by every model; its null puts MLM
  and CLM level at every epoch, its effect 3 points (0.06 nats) behind below the middle epoch count and ahead from it.
  A plan reads no data, so a preset's sweep is given :data:`VALIDATION_BLOCKS` blocks; a run's own count otherwise.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from mlmh.types import (FAILS, HOLDS, ConditionResult, ConfigRecord, DatasetInfo, DocumentSet, ModelRecord,
                        RoleQuality, RunResults, Score)

if TYPE_CHECKING:
    from mlmh.storage.cache import SampleCache

#: per-document difficulty shared by every arm, and per-arm noise, in BLEU points
DOCUMENT_SD, NOISE_SD = 5.0, 3.0
#: the effect a rule must find under the alternative, in the same points
EFFECT = 3.0
#: nominal rates: a one-sided 95% "holds", and the memorisation rule's family-wise 5%
NOMINAL_HOLDS, NOMINAL_FLAG = 0.025, 0.05
DEFAULT_RUNS = 200
_LEARNED = {"heldout_accuracy": 0.30, "best_constant_accuracy": 0.05, "beats_constant": True}
_METRIC = "quality"  # a synthetic per-document score: the rules read any metric alike


@dataclass(frozen=True)
class Arm:
    """One condition of the structure: the model (its kind) and sampler under a masking (with its random ratio)."""

    model: str
    kind: str
    sampler: str
    masking: str
    ratio: float | None = None


@dataclass(frozen=True)
class Structure:
    """What a rule sees of a run: its conditions and how many documents each set holds."""

    arms: tuple[Arm, ...]
    documents: int = 32  # unseen documents per condition
    seen: int = 32
    control: int = 0
    test_items: int = 60  # downstream test items (claim 5)
    tasks: bool = True  # whether the run trains a downstream model (claims 4 and 5)
    label: str = ""
    blocks: int = 0  # validation blocks of a sweep's models (the crossover's loss is paired over them)

    def kinds(self, kind: str) -> int:
        return len({(a.model, a.sampler) for a in self.arms if a.kind == kind})

    def describe(self) -> str:
        maskings = len({a.masking for a in self.arms})
        return (f"{self.label + ': ' if self.label else ''}{self.kinds('mlm')} MLM arm(s), {self.kinds('clm')} CLM "
                f"arm(s), {maskings} masking(s), {self.documents} unseen / {self.seen} seen / {self.control} control "
                "documents" + (f", a sweep paired over {self.blocks} validation blocks" if self.blocks else ""))


def structure(mlm: int = 1, clm: int = 1, maskings: Sequence[str] = ("random:ratio=0.15", "random:ratio=0.5"),
              documents: int = 32, seen: int = 32, control: int = 0) -> Structure:
    """A structure of ``mlm`` MLM samplers and ``clm`` CLM samplers under each of ``maskings``."""
    arms = [Arm(f"trained-{kind}", kind, f"{kind}-sampler-{i}", masking, _ratio(masking))
            for masking in maskings for kind, n in (("mlm", mlm), ("clm", clm)) for i in range(n)]
    return Structure(tuple(arms), documents, seen, control)


def _ratio(masking: str) -> float | None:
    name, _, params = masking.partition(":")
    if name != "random":
        return None
    return next((float(p.split("=")[1]) for p in params.split(",") if p.startswith("ratio=")), None)


def of_plan(plan: Any, label: str = "") -> Structure:
    """The structure of a built plan (:func:`mlmh.config.plan.build_plan`): its conditions, ``limit`` documents per
    set, and about the control set its ``control`` asks for (a fraction of train, taken here as three times ``limit``
    documents: the data is not read)."""
    arms = tuple(dict.fromkeys(Arm(c.model.short_spec, c.model.model_kind, c.sampler.short_spec, c.masking.spec,
                                   _ratio(c.masking.spec)) for c in plan.conditions))
    limit = plan.config.limit or 32
    control = plan.config.control or 0
    held = int(control) if control >= 1 else int(round(control * limit * 3))
    return Structure(arms, limit, limit, held, tasks=bool(plan.tasks), label=label,
                     blocks=VALIDATION_BLOCKS if _sweep(arms) else 0)


def of_results(results: RunResults, label: str = "") -> Structure:
    """The structure of a finished run: its conditions and the sizes of its document sets."""
    arms = tuple(dict.fromkeys(Arm(r.model, r.model_kind, r.sampler, r.masking, r.masking_ratio)
                               for r in results.conditions))
    size = {role: block.documents for role, block in results.documents.items()}
    blocks = max((len(m.training.get("validation_block_losses") or ()) for m in results.models.values()
                  if m.training), default=0)
    return Structure(arms, size.get("unseen", 32), size.get("seen", 32), size.get("control", 0),
                     tasks=any(r.downstream for r in results.conditions), label=label,
                     blocks=(blocks or VALIDATION_BLOCKS) if _sweep(arms) else 0)


# -- one simulated run --------------------------------------------------------------------------------------
@dataclass
class Scenario:
    """Shifts per arm (in points) that make a claim true: ``arm(arm, masking ratio) -> shift``; the models' margin over
    the baselines is shifted alike. ``seen`` shifts the seen documents of every arm (memorisation), ``synthetic`` the
    downstream gain of the regenerations (claim 5)."""

    name: str
    arm: Callable[[Arm], float] = lambda a: 0.0
    seen: float = 0.0
    synthetic: float = 0.0
    correlation: float | None = None  # Spearman's rho of seen quality with downstream score across conditions
    accuracy: Callable[[Arm], float] = lambda a: 0.0  # masked-word accuracy shift, in points (Li et al. a, c)
    stutter: Callable[[Arm], float] = lambda a: 0.0  # stutter shift, in points (Li et al. b)
    crossover: Callable[[float], float] = lambda epochs: 0.0  # MLM minus CLM quality at an epoch count, in points


def simulated(shape: Structure, scenario: Scenario, rng: np.random.Generator) -> tuple[RunResults, dict, dict]:
    """(results, per-document unseen scores, downstream per-item scores) of one simulated run."""
    from mlmh.findings.memorization import above, gap
    from mlmh.findings.paper_claims import HIGH_RATIO, baseline_arm

    docs = [f"d{i}" for i in range(shape.documents)]
    difficulty = rng.normal(0.0, DOCUMENT_SD, len(docs))
    per_document: dict[str, dict[str, dict[str, float]]] = {}
    rows = []
    baselines: dict[str, tuple[float, float]] = {}
    chance = rng.normal(0.5, 0.1, shape.test_items)
    real = chance + 0.2 + rng.normal(0.0, 0.1, shape.test_items)
    tasks: dict[str, dict[str, dict[str, list[float]]]] = {"real": {"task": {"score": list(real)}},
                                                           "chance": {"task": {"score": list(chance)}}}
    for masking in dict.fromkeys(a.masking for a in shape.arms):
        filler = 20.0 + difficulty + rng.normal(0.0, NOISE_SD, len(docs))  # far enough below that no effect meets it
        deletion = filler - 5.0
        for name, values in (("filler", filler), ("deletion", deletion)):
            per_document[baseline_arm(name, masking, 0)] = {_METRIC: dict(zip(docs, map(float, values)))}
        baselines[masking] = (float(filler.mean()), float(deletion.mean()))
    top = max((a.ratio for a in shape.arms if a.ratio is not None), default=None)
    for i, arm in enumerate(shape.arms):
        values = 50.0 + difficulty + scenario.arm(arm) + rng.normal(0.0, NOISE_SD, len(docs))
        cid = f"c{i}"
        per_document[cid] = {_METRIC: dict(zip(docs, map(float, values)))}
        filler_mean, deletion_mean = baselines[arm.masking]
        unseen = RoleQuality(documents=len(docs), scored=len(docs), metrics={_METRIC: Score(float(values.mean()))},
                             filler={_METRIC: Score(filler_mean)}, deletion={_METRIC: Score(deletion_mean)})
        row = ConditionResult(id=cid, model=arm.model, model_kind=arm.kind, masking=arm.masking, sampler=arm.sampler,
                              seed=0, masking_ratio=arm.ratio, unseen=unseen, metrics=unseen.metrics)
        if shape.control:
            margin = lambda n, shift: {f"x{j}": {_METRIC: float(v)} for j, v in enumerate(  # noqa: E731
                shift + rng.normal(10.0, 4.0, n))}
            zero = lambda n: {f"x{j}": {_METRIC: 0.0} for j in range(n)}  # noqa: E731
            seen = above(margin(shape.seen, scenario.seen), zero(shape.seen), {_METRIC: True})[_METRIC]
            control = above(margin(shape.control, 0.0), zero(shape.control), {_METRIC: True})[_METRIC]
            found = gap(seen, control)
            row.control_gap = {_METRIC: found} if found is not None else {}
        if top is not None and top >= HIGH_RATIO and arm.ratio == top:
            row.downstream = {"task": {"score": 0.0}}
            synthetic = chance + scenario.synthetic + rng.normal(0.0, 0.1, shape.test_items)
            tasks[cid] = {"task": {"score": list(synthetic)}}
        rows.append(row)
    models = {model: ModelRecord(identity=model, model_kind=kind, label=model, training=dict(_LEARNED))
              for model, kind in dict.fromkeys((a.model, a.kind) for a in shape.arms)}
    documents = {"unseen": DocumentSet(split="test", documents=len(docs), ids=docs)}
    if shape.control:
        documents["control"] = DocumentSet(split="train", documents=shape.control)
    results = RunResults(run_id="calibrate", config=ConfigRecord(preset="calibrate"), conditions=rows, models=models,
                         headline="unseen", filler_word="the", documents=documents, dataset=DatasetInfo(grouped=True))
    if scenario.correlation is not None:
        results.correlations = _correlations(shape, scenario.correlation, rng)
    return results, per_document, tasks


def _correlations(shape: Structure, rho: float, rng: np.random.Generator) -> list[Any]:
    """Claim (4)'s evidence: each condition's seen quality and downstream score, drawn with Spearman's rho ``rho``
    between them (a Gaussian copula: Pearson's r = 2 sin(pi rho / 6)), through the run's own correlation stage."""
    from mlmh.findings.correlation import correlate

    r = 2.0 * np.sin(np.pi * rho / 6.0)
    latent = rng.multivariate_normal([0.0, 0.0], [[1.0, r], [r, 1.0]], len(shape.arms))
    rows = [{"condition": f"c{i}", "metrics": {_METRIC: 50.0 + DOCUMENT_SD * float(x)},
             "downstream": {"task": {"score": 0.7 + 0.05 * float(y)}}} for i, (x, y) in enumerate(latent)]
    return correlate(rows, seed=0)


# -- Li et al.'s claims: per-document counts of masked-word accuracy and stutter ----------------------------
#: masked-word accuracy and stutter, in percentage points: the level, the document's own (shared by every arm) and
#: each arm's noise per document; each document's rate is then drawn word by word (binomial over its masked words)
ACCURACY_LEVEL, STUTTER_LEVEL, STUTTER_SD = 30.0, 8.0, 2.0
WORDS = (60, 120)  # words per unseen document, uniform: a masking of ratio r masks r of them


@lru_cache(maxsize=512)
def _component(kind: str, spec: str) -> tuple[str, tuple[tuple[str, Any], ...], tuple[tuple[str, Any], ...]]:
    """(name, parameters that differ from the defaults, all parameters) of a component spec, as a run's cells read
    them (:func:`mlmh.findings.claims.run_cells`); the spec's own where the component is not installed."""
    from mlmh.findings.claims import _changed
    from mlmh.params import parse_spec
    from mlmh.registry import get_registry

    try:
        built = get_registry().build(kind, spec)
        return built.name, tuple(sorted(_changed(built).items())), tuple(sorted(built.params.items()))
    except Exception:  # noqa: BLE001 - a plugin of a finished run no longer installed: the spec says what it can
        name, raw = parse_spec(spec)
        params = tuple(sorted((k, _number(v)) for k, v in raw.items()))
        return name, params, params


def _number(value: str) -> Any:
    try:
        return float(value)
    except ValueError:
        return value


def _passes(sampler: str) -> int:
    """Forward passes per document of a sampler: its steps, one more where it starts from a one-shot fill."""
    from mlmh.findings.claims import ONE_SHOT

    name, _, full = _component("sampler", sampler)
    params = dict(full)
    if name == ONE_SHOT:
        return 1
    return max(1, int(params.get("steps") or 1)) + (params.get("init") == ONE_SHOT)


def simulated_cells(shape: Structure, scenario: Scenario, rng: np.random.Generator) -> list[Any]:
    """The cells (:class:`mlmh.findings.claims.Cell`) of one simulated run: per arm and unseen document the hits and
    positions of masked-word accuracy and of stutter. The masked words of a masking are the same for every arm (as a
    run's are), each arm's rate per document is ``level + document + shift + noise`` and its hits binomial over them."""
    from mlmh.findings.claims import ACCURACY, STUTTER, Cell

    docs = [f"d{i}" for i in range(shape.documents)]
    words = rng.integers(WORDS[0], WORDS[1] + 1, len(docs))
    own = {ACCURACY: rng.normal(0.0, DOCUMENT_SD, len(docs)), STUTTER: rng.normal(0.0, STUTTER_SD, len(docs))}
    positions = {m: np.maximum(1, np.round((_ratio(m) or 0.3) * words)).astype(int)
                 for m in dict.fromkeys(a.masking for a in shape.arms)}
    cells = []
    for i, arm in enumerate(shape.arms):
        model, model_changed, model_full = _component("model", arm.model)
        masking, masking_changed, _ = _component("masking", arm.masking)
        sampler, sampler_changed, _ = _component("sampler", arm.sampler)
        schedule = {k: v for k, v in model_full if k in ("mask_schedule", "mask_ratio")}
        cell = Cell([f"c{i}"], model, {**dict(model_changed), **schedule}, masking, dict(masking_changed), sampler,
                    dict(sampler_changed))
        n = positions[arm.masking]
        for measure, level, noise, shift in ((ACCURACY, ACCURACY_LEVEL, NOISE_SD, scenario.accuracy(arm)),
                                             (STUTTER, STUTTER_LEVEL, STUTTER_SD, scenario.stutter(arm))):
            rate_ = np.clip((level + own[measure] + shift + rng.normal(0.0, noise, len(docs))) / 100.0, 0.0, 1.0)
            hits = rng.binomial(n, rate_)
            cell.counts[measure] = {d: (float(h), float(t)) for d, h, t in zip(docs, hits, n)}
        cell.passes = {d: _passes(arm.sampler) for d in docs}
        cells.append(cell)
    return cells


# -- the crossover: a sweep of epochs at a budget of unique tokens ------------------------------------------
#: validation blocks a sweep's loss is paired over where the structure does not say (a plan reads no data)
VALIDATION_BLOCKS = 32
#: validation loss per block: its own difficulty (shared by every model) and each model's noise, in nats per token;
#: a quality point of the crossover scenario is LOSS_PER_POINT nats (lower is better)
BLOCK_SD, BLOCK_NOISE_SD, LOSS_PER_POINT = 0.3, 0.05, 0.02


def _swept_metric() -> str | None:
    """The quality a sweep's crossover is simulated on: the first main result a metric declares for sweeps
    (:func:`mlmh.config.declared.sweep_results`), or None where none does (the crossover then reads the loss alone)."""
    from mlmh.config.declared import sweep_results

    return next(iter(sweep_results()), None)


def _sweep(arms: Sequence[Arm]) -> dict[int, dict[str, dict[float, Arm]]]:
    """U -> objective -> epochs -> arm: the sweep points of ``arms`` (the models a sweep expands, with epochs)."""
    from mlmh.config.declared import swept_models

    swept = swept_models()
    out: dict[int, dict[str, dict[float, Arm]]] = {}
    for arm in arms:
        name, _, full = _component("model", arm.model)
        params = dict(full)
        if name in swept and float(params.get("epochs") or 0) > 0:
            u = int(float(params.get("unique_tokens") or 0))
            out.setdefault(u, {}).setdefault(swept[name], {}).setdefault(float(params["epochs"]), arm)
    return {u: kinds for u, kinds in out.items()
            if len(set(kinds.get("mlm", {})) & set(kinds.get("clm", {}))) >= 2}


def simulated_sweep(shape: Structure, scenario: Scenario, rng: np.random.Generator) -> tuple[RunResults, dict]:
    """(results, per-document unseen scores) of one simulated sweep: per U, epochs and objective a model with
    per-block validation losses (``base + block + noise``, the MLM ``LOSS_PER_POINT`` nats lower per point of
    ``scenario.crossover(epochs)``) and per-document unseen quality (``base + document + noise``, the MLM that many
    points higher), blocks and documents shared by every model, as :func:`mlmh.findings.crossover.summarise` reads
    a finished sweep."""
    docs = [f"d{i}" for i in range(shape.documents)]
    blocks = shape.blocks or VALIDATION_BLOCKS
    models: dict[str, ModelRecord] = {}
    rows: list[ConditionResult] = []
    per_document: dict[str, dict[str, dict[str, float]]] = {}
    metric = _swept_metric()
    for u, kinds in _sweep(shape.arms).items():
        difficulty = rng.normal(0.0, DOCUMENT_SD, len(docs))
        hardness = rng.normal(0.0, BLOCK_SD, blocks)
        tokens = rng.integers(400, 513, blocks)
        for kind, points in kinds.items():
            for epochs, arm in points.items():
                lead = scenario.crossover(epochs) if kind == "mlm" else 0.0
                loss = 4.0 + hardness - LOSS_PER_POINT * lead + rng.normal(0.0, BLOCK_NOISE_SD, blocks)
                models[arm.model] = ModelRecord(identity=arm.model, model_kind=kind, label=arm.model, training={
                    "validation_loss": float((loss * tokens).sum() / tokens.sum()),
                    "validation_block_losses": [[float(v * t), int(t)] for v, t in zip(loss, tokens)]})
                values = 50.0 + difficulty + lead + rng.normal(0.0, NOISE_SD, len(docs))
                cid = f"c{len(rows)}"
                per_document[cid] = {metric: dict(zip(docs, map(float, values)))} if metric else {}
                unseen = RoleQuality(documents=len(docs), scored=len(docs),
                                     metrics={metric: Score(float(values.mean()))} if metric else {})
                rows.append(ConditionResult(id=cid, model=arm.model, model_kind=kind, masking=arm.masking,
                                            sampler=arm.sampler, seed=0, masking_ratio=arm.ratio, unseen=unseen,
                                            metrics=unseen.metrics))
    results = RunResults(run_id="calibrate", config=ConfigRecord(preset="calibrate"), conditions=rows, models=models,
                         headline="unseen", documents={"unseen": DocumentSet(split="test", documents=len(docs))})
    return results, per_document


# -- the rules --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """A rule as simulated: the finding (claim id) or ``"memorisation"`` it reads, the verdict that counts as a
    positive, its nominal false rate, the effect that should make it positive, and the nulls under which a positive
    is false (the first: nothing anywhere; others: the least favourable configurations a rule's shortcut must hold
    its rate under, e.g. an arm that beats every other but one, which it ties)."""

    name: str
    claim: str
    positive: str
    nominal: float
    effect: Scenario
    nulls: tuple[Scenario, ...] = (Scenario("null"),)

    @property
    def null(self) -> Scenario:
        return self.nulls[0]


def _slope(arm: Arm) -> float:
    """Quality falling by 2 points per +0.1 of masking ratio beyond the baselines'."""
    return -20.0 * (arm.ratio or 0.0)


def _punctuation(arm: Arm) -> float:
    if not arm.masking.startswith("punctuation"):
        return 0.0
    return EFFECT if arm.kind == "clm" else -EFFECT


def _punctuation_ties(shape: Structure) -> Callable[[Arm], float]:
    """Claim (3) false by one comparison: punctuation far ahead (CLM) and far behind (MLM) of every other masking,
    except that the CLM arms' punctuation ties one other masking; the least favourable null of a rule that reads
    "beats every other" as each comparison beyond its bound (an intersection-union test)."""
    others = [m for m in dict.fromkeys(a.masking for a in shape.arms) if not m.startswith("punctuation")]
    tied = others[0] if others else ""

    def shift(arm: Arm) -> float:
        if arm.kind == "clm":
            return 3 * EFFECT if arm.masking.startswith("punctuation") or arm.masking == tied else 0.0
        return -3 * EFFECT if arm.masking.startswith("punctuation") else 0.0
    return shift


def rules_for(shape: Structure) -> list[Rule]:
    """The rules ``shape`` can test: claim (1) where it has MLM and CLM arms, (2) at two or more random ratios, (3)
    with punctuation masking, (5) at a ratio of 0.5 or more, memorisation with control documents."""
    ratios = {a.ratio for a in shape.arms if a.ratio is not None}
    out = []
    if shape.kinds("mlm") and shape.kinds("clm"):
        out.append(Rule("claim (1) MLM beats CLM", f"paper-1:{_METRIC}", HOLDS, NOMINAL_HOLDS,
                        Scenario("MLM +3", arm=lambda a: EFFECT if a.kind == "mlm" else 0.0)))
    if len(ratios) >= 2:
        out.append(Rule("claim (2) as the paper states it", "paper-2:raw", HOLDS, NOMINAL_HOLDS,
                        Scenario("-2 per +0.1", arm=_slope)))
        out.append(Rule("claim (2) beyond the baselines", "paper-2", HOLDS, NOMINAL_HOLDS,
                        Scenario("-2 per +0.1", arm=_slope)))
    maskings = {a.masking.split(":")[0] for a in shape.arms}
    if "punctuation" in maskings and len(maskings) > 1 and shape.kinds("mlm") and shape.kinds("clm"):
        out.append(Rule("claim (3) punctuation best for CLM, worst for MLM", "paper-3", HOLDS, NOMINAL_HOLDS,
                        Scenario("punctuation +-3", arm=_punctuation),
                        (Scenario("null"), Scenario("CLM ties 1 masking",
                                                    arm=_punctuation_ties(shape)))))
    if shape.tasks and max(ratios, default=0.0) >= 0.5:
        out.append(Rule("claim (5) useful at high masking", "paper-5", HOLDS, NOMINAL_HOLDS,
                        Scenario("synthetic +0.1", synthetic=0.1)))
    from mlmh.findings.correlation import MIN_CONDITIONS, STRONG

    if shape.tasks and len(shape.arms) >= MIN_CONDITIONS:
        out.append(Rule("claim (4) no strong correlation", "paper-4", HOLDS, NOMINAL_HOLDS,
                        Scenario("rho 0", correlation=0.0), (Scenario(f"rho {STRONG:g}", correlation=STRONG),)))
    if shape.control:
        out.append(Rule("memorisation (Holm over the run's conditions)", "memorisation", "memorised", NOMINAL_FLAG,
                        Scenario("seen +3", seen=EFFECT)))
    return out + _li_rules(shape) + _crossover_rules(shape)


#: Li et al.'s claims as simulated: claim id -> (rule name, the effect that makes it true)
def _li_effects(shape: Structure) -> dict[str, tuple[str, Scenario]]:
    return {
        "a@0.5": ("Li (a) more training masking better, at 0.5",
                  Scenario("+2 per +0.1 training ratio", accuracy=_more_masking)),
        "a@0.8": ("Li (a) more training masking better, at 0.8",
                  Scenario("+2 per +0.1 training ratio", accuracy=_more_masking)),
        "b:gibbs": ("Li (b) stutter falls with Gibbs steps", Scenario("-3 at most steps", stutter=_refined(shape))),
        "b:mask-predict": ("Li (b) stutter falls with mask-predict steps",
                           Scenario("-3 at most steps", stutter=_refined(shape))),
        "c": ("Li (c) adaptive Gibbs beats Gibbs", Scenario("adaptive +3", accuracy=_adaptive)),
    }


def _li_rules(shape: Structure) -> list[Rule]:
    """Li et al.'s claims (:data:`mlmh.findings.claims.CLAIMS`) that ``shape``'s arms test: those the claim's own
    rule does not answer "not tested" on a simulated run of them."""
    from mlmh.findings import claims as gmlm

    if not any(_component("model", a.model)[0] == gmlm.TRAINED_MLM for a in shape.arms):
        return []
    cells = simulated_cells(shape, Scenario("null"), np.random.default_rng(0))
    effects = _li_effects(shape)
    return [Rule(effects[claim.id][0], f"li-{claim.id}", HOLDS, NOMINAL_HOLDS, effects[claim.id][1])
            for claim in gmlm.CLAIMS if claim.id in effects and claim.rule(claim, cells, 0).tested]


def _more_masking(arm: Arm) -> float:
    """Masked-word accuracy 2 points higher per +0.1 of a fixed training mask ratio."""
    _, _, full = _component("model", arm.model)
    params = dict(full)
    return 20.0 * float(params.get("mask_ratio") or 0.0) if params.get("mask_schedule") == "fixed" else 0.0


def _adaptive(arm: Arm) -> float:
    from mlmh.findings.claims import ADAPTIVE_GIBBS

    return EFFECT if _component("sampler", arm.sampler)[0] == ADAPTIVE_GIBBS else 0.0


def _refined(shape: Structure) -> Callable[[Arm], float]:
    """Stutter falling linearly in forward passes, by 3 points from the fewest to the most of a refinement series
    (one model, masking and sampler; a one-shot fill is T = 1 of a Gibbs series started from it)."""
    most: dict[tuple[str, str, str], int] = {}
    for arm in shape.arms:
        key = (arm.model, arm.masking, _component("sampler", arm.sampler)[0])
        most[key] = max(most.get(key, 1), _passes(arm.sampler))

    def shift(arm: Arm) -> float:
        top = most.get((arm.model, arm.masking, _component("sampler", arm.sampler)[0]), 1)
        return -EFFECT * (_passes(arm.sampler) - 1) / (top - 1) if top > 1 else 0.0
    return shift


def _crossover_rules(shape: Structure) -> list[Rule]:
    """The crossover epoch of a sweep (:mod:`mlmh.findings.crossover`) on validation loss and on unseen quality: a
    crossover stated where MLM and CLM are equal at every epoch is false; the effect puts the MLM 3 points (0.06
    nats) behind below the middle epoch count and as far ahead from it on."""
    sweep = _sweep(shape.arms)
    if not sweep:
        return []
    epochs = sorted({e for kinds in sweep.values() for e in set(kinds["mlm"]) & set(kinds["clm"])})
    middle = epochs[len(epochs) // 2]
    effect = Scenario(f"MLM -3 below {middle:g} epochs, +3 from it", crossover=lambda e: EFFECT if e >= middle else -EFFECT)
    metric = _swept_metric()
    measures = [("validation_loss", "validation loss")] + ([(metric, f"unseen {metric}")] if metric else [])
    return [Rule(f"crossover epoch on {what}", f"crossover:{measure}", "crossover", NOMINAL_HOLDS, effect)
            for measure, what in measures]


def simulate(rule: Rule, shape: Structure, scenario: Scenario, rng: np.random.Generator) -> str:
    """What ``rule`` says of one run of ``shape`` simulated under ``scenario``."""
    if rule.claim.startswith("crossover:"):
        from mlmh.findings.crossover import summarise

        block = summarise(*simulated_sweep(shape, scenario, rng))
        measure = rule.claim.partition(":")[2]
        found = [f for f in (block.crossovers if block else []) if f["measure"] == measure]
        return "crossover" if any(_stated_crossover(f) is not None for f in found) else "none"
    if rule.claim.startswith("li-"):
        results, _, _ = simulated(shape, Scenario("null"), rng)
        return outcome(rule, results, {}, {}, simulated_cells(shape, scenario, rng))
    return outcome(rule, *simulated(shape, scenario, rng))


def _stated_crossover(found: dict[str, Any]) -> float | None:
    """The crossover epoch a crossover finding states (beyond its CI: ``ahead_from`` is the point estimates')."""
    return found.get("epochs")


def outcome(rule: Rule, results: RunResults, per_document: dict, tasks: dict, cells: Sequence[Any] = ()) -> str:
    """What ``rule`` says of one simulated run: a finding's verdict, or "memorised" where any condition is flagged."""
    if rule.claim.startswith("li-"):
        from mlmh.findings import claims as gmlm
        from mlmh.findings.decide import _gmlm_rule, decide
        from mlmh.findings.paper_claims import Evidence

        claim = next(c for c in gmlm.CLAIMS if c.id == rule.claim.removeprefix("li-"))
        return decide(_gmlm_rule(claim, cells), Evidence(results, per_document, tasks)).verdict
    if rule.claim == "memorisation":
        from mlmh.findings.verdicts import memorisation_check

        states = {memorisation_check(results, row, _METRIC).state for row in results.conditions}
        return "memorised" if "memorised" in states else "no gap"
    from mlmh.findings.decide import decide
    from mlmh.findings.paper_claims import Evidence

    return decide(_claim_rule(rule.claim), Evidence(results, per_document, tasks)).verdict


def _claim_rule(claim: str) -> Callable[[Any], Any]:
    """The rule :func:`mlmh.findings.decide.run_findings` decides ``claim`` by, alone (the others cost time)."""
    from functools import partial

    from mlmh.findings import paper_claims as paper

    return {f"paper-1:{_METRIC}": partial(paper.mlm_beats_clm, metric=_METRIC),
            "paper-2:raw": partial(paper.lower_ratio_better, metric=_METRIC, beyond_baselines=False),
            "paper-2": partial(paper.lower_ratio_better, metric=_METRIC),
            "paper-3": partial(paper.punctuation_extremes, metric=_METRIC),
            "paper-4": partial(paper.no_strong_correlation, metric=_METRIC),
            "paper-5": partial(paper.useful_at_high_masking, metric=_METRIC)}[claim]


@dataclass(frozen=True)
class Rate:
    """One rule under one scenario: how often each verdict came out, the positive rate and its Monte-Carlo CI, and
    (under the null) whether it lies above the nominal rate beyond the Monte-Carlo error: its CI at
    :data:`MONTE_CARLO_CONFIDENCE` (lower end ``floor``) wholly above it."""

    rule: str
    scenario: str
    runs: int
    verdicts: dict[str, int]
    positive: float
    low: float
    high: float
    nominal: float | None  # None: the power row
    floor: float = 0.0  # the lower end of the rate's Monte-Carlo CI at MONTE_CARLO_CONFIDENCE

    @property
    def exceeds(self) -> bool:
        return self.nominal is not None and self.floor > self.nominal


#: a rule exceeds its nominal rate when the Monte-Carlo CI of its null rate at this level lies wholly above it
#: (the rate is shown with its 95% CI): at 99%, a command that checks some ten null rates, each exactly at its
#: nominal rate, still exits 0 about 95% of the time, where at 95% it would fail about one time in five
MONTE_CARLO_CONFIDENCE = 0.99


def _wilson(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    from scipy.stats import binomtest

    found = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(found.low), float(found.high)


def rate(rule: Rule, shape: Structure, scenario: Scenario, runs: int, seed: int, *, null: bool) -> Rate:
    """``runs`` simulated runs of ``shape`` under ``scenario`` through ``rule``."""
    rng = np.random.default_rng(seed)
    said = Counter(simulate(rule, shape, scenario, rng) for _ in range(runs))
    low, high = _wilson(said[rule.positive], runs)
    return Rate(rule.name, scenario.name, runs, dict(said), said[rule.positive] / runs, low, high,
                rule.nominal if null else None, _wilson(said[rule.positive], runs, MONTE_CARLO_CONFIDENCE)[0])


def calibrate(shape: Structure, *, runs: int = DEFAULT_RUNS, seed: int = 0, power: bool = True) -> list[Rate]:
    """Every rule of :func:`rules_for` under each of its nulls (and its effect, with ``power``)."""
    out = []
    for i, rule in enumerate(rules_for(shape)):
        for j, null in enumerate(rule.nulls):
            out.append(rate(rule, shape, null, runs, seed + 2 * i + 1000 * j, null=True))
        if power:
            out.append(rate(rule, shape, rule.effect, runs, seed + 2 * i + 1, null=False))
    return out


def shrink(shape: Structure, documents: int) -> Structure:
    """``shape`` with ``documents`` documents in every set it holds (seen and control alike where it has them)."""
    return replace(shape, documents=documents, seen=documents, control=documents if shape.control else 0)


__all__ = ["Arm", "DEFAULT_RUNS", "EFFECT", "NOMINAL_FLAG", "NOMINAL_HOLDS", "Rate", "Rule", "Scenario", "Structure",
           "VALIDATION_BLOCKS", "annotate_null_rates", "calibrate", "of_plan", "of_results", "rate", "rules_for", "shrink",
           "simulate", "simulated", "simulated_cells", "simulated_sweep", "structure"]


def annotate_null_rates(results: RunResults, findings: Sequence[Any], *, runs: int = DEFAULT_RUNS, seed: int = 0,
                        cache: "SampleCache | None" = None) -> None:
    """Keep, on each decided claim a rule here simulates, how often that rule says "holds" under a null of this run's
    own structure (``extra["false_holds"]``: rate, Monte-Carlo CI, runs), so the answer can say it beside the
    verdict. A claim (1) on another metric is the same rule on the same arms: it gets the first one's rate. With the
    run ``cache`` a rate is simulated once per structure and code (:func:`null_rate_key`): on the paper preset's 30
    conditions the simulations cost about 120 CPU-s, most of a warm rerun."""
    shape = of_results(results)
    simulated_rules = {rule.claim: rule for rule in rules_for(shape)}
    for finding in findings:
        claim = f"paper-1:{_METRIC}" if finding.claim.startswith("paper-1:") else finding.claim
        claim = claim if claim in simulated_rules else f"li-{claim}"  # Li et al.'s claims go by their own ids
        rule = simulated_rules.get(claim)
        if rule is None or finding.verdict not in (HOLDS, FAILS, "inconclusive"):
            continue
        found = _stored_null_rate(cache, shape, claim, runs, seed)
        finding.extra["false_holds"] = {"rate": found.positive, "ci_low": found.low, "ci_high": found.high,
                                        "runs": found.runs, "nominal": found.nominal}


def null_rate_key(shape: Structure, claim: str, runs: int, seed: int) -> str:
    """The run cache's key of one rule's null rate: the structure and the runs simulated, and the identity of the code
    that simulates and decides (this module and the findings modules it reaches), so changed rules simulate again."""
    import pkgutil

    import mlmh.findings
    from mlmh.implementation import library_versions, modules_id
    from mlmh.storage.cache import content_digest, result_key

    rules = [__name__, "mlmh.stats", *(f"mlmh.findings.{m.name}" for m in pkgutil.iter_modules(mlmh.findings.__path__))]
    return result_key(kind="calibration", spec=claim, code=modules_id(rules), libraries=library_versions(),
                      inputs="", seed=seed, content=content_digest([shape, runs]))


def _stored_null_rate(cache: "SampleCache | None", shape: Structure, claim: str, runs: int, seed: int) -> Rate:
    """:func:`_null_rate`, read from and kept in the run ``cache`` where there is one."""
    if cache is None:
        return _null_rate(shape, claim, runs, seed)
    key = null_rate_key(shape, claim, runs, seed)
    stored = cache.get_results(key, Rate)
    if stored and len(stored) == 1:
        return stored[0]
    found = _null_rate(shape, claim, runs, seed)
    cache.put_results(key, [found])
    return found


@lru_cache(maxsize=64)
def _null_rate(shape: Structure, claim: str, runs: int, seed: int) -> Rate:
    """One rule's null rate on one structure, once per process (runs of one shape share it)."""
    rule = next(r for r in rules_for(shape) if r.claim == claim)
    return rate(rule, shape, rule.null, runs, seed, null=True)
