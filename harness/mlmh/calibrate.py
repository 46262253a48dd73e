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

Simulated here: claims (1), (2) as the paper states it and beyond the baselines, (3), (5), and the memorisation rule
(the comparisons' MLM-against-CLM verdict on unseen documents is claim (1)'s). One metric is simulated; a run that
tests claim (1) on several metrics widens each interval further (its family counts them), so its rate is lower.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from mlmh.types import (FAILS, HOLDS, ConditionResult, ConfigRecord, DatasetInfo, DocumentSet, ModelRecord,
                        RoleQuality, RunResults, Score)

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
    tasks: bool = True  # whether the run trains a downstream model (claim 5)
    label: str = ""

    def kinds(self, kind: str) -> int:
        return len({(a.model, a.sampler) for a in self.arms if a.kind == kind})

    def describe(self) -> str:
        maskings = len({a.masking for a in self.arms})
        return (f"{self.label + ': ' if self.label else ''}{self.kinds('mlm')} MLM arm(s), {self.kinds('clm')} CLM "
                f"arm(s), {maskings} masking(s), {self.documents} unseen / {self.seen} seen / {self.control} control "
                "documents")


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
    return Structure(arms, limit, limit, held, tasks=bool(plan.tasks), label=label)


def of_results(results: RunResults, label: str = "") -> Structure:
    """The structure of a finished run: its conditions and the sizes of its document sets."""
    arms = tuple(dict.fromkeys(Arm(r.model, r.model_kind, r.sampler, r.masking, r.masking_ratio)
                               for r in results.conditions))
    size = {role: block.documents for role, block in results.documents.items()}
    return Structure(arms, size.get("unseen", 32), size.get("seen", 32), size.get("control", 0),
                     tasks=any(r.downstream for r in results.conditions), label=label)


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
    return results, per_document, tasks


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
    if shape.control:
        out.append(Rule("memorisation (Holm over the run's conditions)", "memorisation", "memorised", NOMINAL_FLAG,
                        Scenario("seen +3", seen=EFFECT)))
    return out


def outcome(rule: Rule, results: RunResults, per_document: dict, tasks: dict) -> str:
    """What ``rule`` says of one simulated run: a finding's verdict, or "memorised" where any condition is flagged."""
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
    said = Counter(outcome(rule, *simulated(shape, scenario, rng)) for _ in range(runs))
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
           "annotate_null_rates", "calibrate", "of_plan", "of_results", "rate", "rules_for", "shrink", "simulated", "structure"]


def annotate_null_rates(results: RunResults, findings: Sequence[Any], *, runs: int = DEFAULT_RUNS, seed: int = 0) -> None:
    """Keep, on each decided claim a rule here simulates, how often that rule says "holds" under a null of this run's
    own structure (``extra["false_holds"]``: rate, Monte-Carlo CI, runs), so the answer can say it beside the
    verdict. A claim (1) on another metric is the same rule on the same arms: it gets the first one's rate."""
    shape = of_results(results)
    simulated_rules = {rule.claim: rule for rule in rules_for(shape)}
    for finding in findings:
        claim = f"paper-1:{_METRIC}" if finding.claim.startswith("paper-1:") else finding.claim
        rule = simulated_rules.get(claim)
        if rule is None or finding.verdict not in (HOLDS, FAILS, "inconclusive"):
            continue
        found = _null_rate(shape, claim, runs, seed)
        finding.extra["false_holds"] = {"rate": found.positive, "ci_low": found.low, "ci_high": found.high,
                                        "runs": found.runs, "nominal": found.nominal}


@lru_cache(maxsize=64)
def _null_rate(shape: Structure, claim: str, runs: int, seed: int) -> Rate:
    """One rule's null rate on one structure, once per process (runs of one shape share it)."""
    rule = next(r for r in rules_for(shape) if r.claim == claim)
    return rate(rule, shape, rule.null, runs, seed, null=True)
