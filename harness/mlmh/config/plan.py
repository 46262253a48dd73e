"""The run plan: a :class:`~mlmh.types.runconfig.RunConfig` resolved once into built components, conditions and
work units, so the runner, the executors, ``mlmh generate``, the TUI and the bench all run the same thing.

This is the only module on the run path that asks the registry for components, and it owns the rules
that used to be decided in several places:

- which samplers fit a model (:func:`fits`; a sampler that declares no model kinds fits any),
- the default sampler of each model kind (:func:`default_sampler`: the sampler that declares ``default_for`` it),
- the seed of each sample: :func:`mlmh.generation.prepare_items` with no ``condition`` keys the mask and
  the sampler's random stream on (run seed, masking spec, document id) only, so every model and sampler
  of a masking sees the same masked words and the same random numbers (paired comparisons), and
  ``mlmh generate`` with the same seed reproduces a run's sample,
- the label of a metric result when two specs of one metric are in a run (:meth:`RunPlan.metric_label`),
- what the grid can run on the loaded corpus (:meth:`RunPlan.check`): a component the user named that
  cannot run stops the run before any model trains; a preset default that cannot apply is dropped
  with a note.

A work unit is one condition x one batch of documents: the grain the executors distribute.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from mlmh.errors import SpecError
from mlmh.plugins.contracts import describe_error
from mlmh.types.runconfig import RunConfig, run_options

if TYPE_CHECKING:
    from mlmh.types import Corpus, MaskedItem

#: a sampler asked for more refinement steps than this is named in a warning (each step is a forward pass)
MANY_STEPS = 256
#: the component kind each component key of a config names (as the run options declare it): preset key -> kind
KINDS = {key: declared.component for key, declared in run_options().items() if declared.component}
#: where each of those keys comes from, for error messages: preset key -> command-line flag
FLAGS = {key: run_options()[key].flag for key in KINDS}


def set_by(config: "RunConfig", key: str) -> str:
    """Where ``config``'s component list ``key`` was set, as errors name it: its flag, or the preset file's key."""
    return FLAGS[key] if key in config.overridden else f"{config.source}: key '{key}'"


def fits(sampler: Any, model_kind: str) -> bool:
    """Whether ``sampler`` can drive a ``model_kind`` model. A sampler that declares no kinds fits any."""
    return not sampler.model_kinds or model_kind in sampler.model_kinds


def many_steps(sampler: Any) -> str | None:
    """The warning a sampler asked for more than :data:`MANY_STEPS` refinement steps gets (a run's and
    ``mlmh generate``'s); more than :data:`mlmh.bounds.STEPS` is refused where the spec is parsed."""
    steps = sampler.params.get("steps")
    if isinstance(steps, int) and steps > MANY_STEPS:
        return (f"sampler {sampler.short_spec}: {steps} refinement steps means {steps} forward passes per batch of "
                "documents; is that intended?")
    return None


def default_sampler(model_kind: str) -> str:
    """The sampler spec a ``model_kind`` model generates with when none is named (``mlmh generate``, the TUI
    playground): the sampler that declares itself the default for that kind (:mod:`mlmh.config.declared`)."""
    from mlmh.config.declared import default_samplers

    try:
        return default_samplers()[model_kind]
    except KeyError:
        raise SpecError(f"no default sampler for model kind '{model_kind}'; name one with --sampler") from None


def check_fits(sampler: Any, model_kind: str) -> None:
    """One-line SpecError when ``sampler`` cannot drive a ``model_kind`` model, naming those that can."""
    if fits(sampler, model_kind):
        return
    from mlmh.registry import get_registry

    fitting = sorted(s.name for s in get_registry().all("sampler") if fits(s, model_kind))
    raise SpecError(
        f"sampler '{sampler.name}' works with {'/'.join(sorted(sampler.model_kinds))} models, not a {model_kind} "
        f"model; samplers for {model_kind}: {', '.join(fitting) or 'none registered'}"
    )


@dataclass
class Condition:
    """One cell of the grid: a model, a masking, a sampler and a seed."""

    id: str
    model: Any
    masking: Any
    sampler: Any
    seed: int

    def row(self) -> dict[str, Any]:
        row: dict[str, Any] = {
            "id": self.id,
            "model": self.model.short_spec,
            "model_kind": self.model.model_kind,
            "masking": self.masking.short_spec,
            "sampler": self.sampler.short_spec,
            "seed": self.seed,
        }
        if "ratio" in self.masking.params:
            row["masking_ratio"] = self.masking.params["ratio"]
        if "steps" in self.sampler.params:
            row["steps"] = self.sampler.params["steps"]
        return row


@dataclass(frozen=True)
class WorkUnit:
    """One condition x one batch of documents: what an executor hands to a worker.

    Carries specs, not components, so it pickles to another process or machine; the worker builds
    the components from the registry and keeps each loaded model for every later unit.
    """

    index: int
    condition: str
    model: str
    sampler: str
    items: tuple["MaskedItem", ...]


def condition_id(model: Any, masking: Any, sampler: Any, seed: int) -> str:
    return f"{model.short_spec} | {masking.short_spec} | {sampler.short_spec} | seed={seed}"


@dataclass
class RunPlan:
    """Built components and the grid of a run; see the module docstring."""

    config: "RunConfig"
    dataset: Any
    models: list[Any]
    maskings: list[Any]
    samplers: list[Any]
    metrics: list[Any]
    tasks: list[Any]
    trackers: list[Any] = field(default_factory=list)  # observers of this run (mlmh.components.Tracker)
    conditions: list[Condition] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    owners: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> plugin

    def describe(self, component: Any) -> str:
        """How errors name a component: its kind, spec and the plugin that registered it."""
        owner = self.owners.get((component.kind, component.name))
        return f"{component.kind} '{component.short_spec}'" + (f" (plugin {owner})" if owner else "")

    # -- the grid ------------------------------------------------------------------------------
    def expand(self) -> None:
        """(Re)build the conditions: models x maskings x fitting samplers x seeds."""
        self.conditions = []
        for model in self.models:
            usable = [s for s in self.samplers if fits(s, model.model_kind)]
            unfit = [s.short_spec for s in self.samplers if s not in usable]
            if unfit:
                self._note(f"{model.short_spec}: skipped sampler(s) {', '.join(unfit)} (they do not drive "
                           f"{model.model_kind} models)")
            for masking in self.maskings:
                for sampler in usable:
                    for seed in self.config.seeds:
                        self.conditions.append(Condition(condition_id(model, masking, sampler, seed), model,
                                                         masking, sampler, seed))
        if not self.conditions:
            raise SpecError(f"{self.config.source}: no condition left: no sampler fits any model "
                            f"(models: {', '.join(m.short_spec for m in self.models)}; "
                            f"samplers: {', '.join(s.short_spec for s in self.samplers)})")

    def units(self, items: Mapping[tuple[str, int], Sequence["MaskedItem"]], batch_size: int,
              skip: Iterable[tuple[str, str]] = ()) -> list[WorkUnit]:
        """The work units of every condition, in grid order; ``items[(masking spec, seed)]`` are the
        masked documents, and ``skip`` holds (condition id, doc id) pairs already generated (cached)."""
        done = set(skip)
        out: list[WorkUnit] = []
        for condition in self.conditions:
            todo = [i for i in items[(condition.masking.spec, condition.seed)] if (condition.id, i.doc_id) not in done]
            for start in range(0, len(todo), batch_size):
                out.append(WorkUnit(len(out), condition.id, condition.model.spec, condition.sampler.spec,
                                    tuple(todo[start:start + batch_size])))
        return out

    def condition(self, cid: str) -> Condition:
        for condition in self.conditions:
            if condition.id == cid:
                return condition
        raise KeyError(cid)

    # -- results naming ------------------------------------------------------------------------
    def metric_label(self, metric: Any, result_name: str) -> str:
        """The name a metric result is reported under: its own name, or ``name[params]`` when another
        spec of the same metric is in the run, named by the parameters it sets (``bleu`` and
        ``bleu[lowercase=true]`` both survive)."""
        twins = [m for m in self.metrics if m.name == metric.name]
        if len(twins) < 2 or ":" not in metric.short_spec:
            return result_name
        return f"{result_name}[{metric.short_spec.split(':', 1)[1]}]"

    def load_corpus(self) -> "Corpus":
        """The run's corpus with its validation split set, and its control split where the run holds one: what
        trained-* recipes hash, so the runner, the executors' workers and ``mlmh generate --run`` must all build it
        this one way."""
        from mlmh.data.splits import with_control, with_validation

        return with_control(with_validation(self.dataset.load(self.config.data)), self.config.control)

    # -- fail fast -----------------------------------------------------------------------------
    def require_checkpoints(self) -> None:
        """Refuse the run in one line when the hub is offline and checkpoints its models read are not cached
        (every one named): not one of those models could train or load. Every face asks before the run directory
        is made (:func:`mlmh.api.prepare`); :meth:`check` asks on every run path."""
        from mlmh.adapters.checkpoints import uncached

        missing = uncached(name for model in self.models for name in getattr(model, "checkpoints", tuple)())
        if missing:
            where = "--model" if "models" in self.config.overridden else self.config.source
            raise SpecError(f"{where}: the hub is offline and these checkpoints are not cached: {', '.join(missing)}; "
                            "run once with network access, or save them to directories of those names (or name "
                            "the directories in the models' path= / init=)")

    def require_ready(self) -> None:
        """Refuse the run in one line, before any work, where a component's own check says it cannot run as configured
        (:meth:`mlmh.params.Component.preflight`: a judge that is not a causal LM, a tracker setting its library would
        refuse), naming the flag or preset key and the component. Every face asks before the run directory is made
        (:func:`mlmh.api.prepare`); :meth:`check` asks on every run path."""
        from mlmh.errors import MlmhError

        for key in KINDS:
            for component in [self.dataset] if key == "dataset" else getattr(self, key):
                try:
                    component.preflight()
                except MlmhError as exc:
                    reason = str(exc)
                except Exception as exc:  # a plugin's own check failing is itself a reason, as in unavailable()
                    reason = f"its check failed: {describe_error(exc)}"
                else:
                    continue
                raise SpecError(f"{set_by(self.config, key)} {component.short_spec}: {reason}")

    def check(self, corpus: "Corpus") -> None:
        """Check every component against the loaded corpus, before any model trains.

        A component the user named on the command line that cannot run raises one SpecError naming
        the flag and the reason; a preset default that cannot run is dropped with a note.
        """
        self.require_checkpoints()
        self.require_ready()
        for key, kind in (("models", "model"), ("maskings", "masking"), ("samplers", "sampler"),
                          ("metrics", "metric"), ("tasks", "task")):
            kept = []
            for component in getattr(self, key):
                reason = self._not_own(component) or unavailable(component, corpus)
                if reason is None:
                    kept.append(component)
                    continue
                if key in self.config.overridden:
                    raise SpecError(f"{FLAGS[key]} {component.short_spec}: {reason}")
                self._note(f"{kind} {component.short_spec} skipped: {reason} (a default of {self.config.source})")
            if not kept and key in ("models", "maskings", "samplers"):
                raise SpecError(f"{self.config.source}: no {kind} can run on dataset {corpus.dataset}: "
                                + "; ".join(n for n in self.notes if n.startswith(kind)))
            setattr(self, key, kept)
        self.expand()

    def _not_own(self, task: Any) -> str | None:
        """Why a task is no part of the dataset's own evaluation (:attr:`mlmh.components.Dataset.tasks`); None when
        it is, when the dataset names none, when the user named the tasks, or for any other component."""
        own = getattr(self.dataset, "tasks", ())
        if getattr(task, "kind", "") != "task" or not own or task.name in own or "tasks" in self.config.overridden:
            return None
        return f"not the downstream task of dataset {self.dataset.name} ({', '.join(own)})"

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)


def unavailable(component: Any, corpus: "Corpus") -> str | None:
    """Why ``component`` cannot run on ``corpus`` (None when it can): its own ``unavailable`` check,
    or for a task the corpus features it needs."""
    check = getattr(component, "unavailable", None)
    if check is not None:
        try:
            reason = check(corpus)
        except Exception as exc:  # a plugin's own check failing is itself a reason
            reason = f"its availability check failed: {describe_error(exc)}"
        if reason:
            return str(reason)
    if getattr(component, "kind", "") == "task" and not component.applies_to(corpus):
        return f"dataset {corpus.dataset} lacks {', '.join(sorted(component.requires))}"
    return None


def load_context(config: "RunConfig", corpus: Any, progress: Any = None, *, defer_weights: bool = False) -> Any:
    """What every model of a run loads with: its dataset, corpus, first seed and the model cache (one rule for
    the runner, executors' workers and ``mlmh generate --run``); ``defer_weights``: see LoadContext."""
    from mlmh.components import LoadContext
    from mlmh.machine.paths import models_dir

    return LoadContext(dataset=config.dataset, data_path=config.data, corpus=corpus, seed=config.seeds[0],
                       cache_dir=str(models_dir()), progress=progress, defer_weights=defer_weights)


def expect_plan(value: Any, taker: str) -> RunPlan:
    """``value`` when it is a :class:`RunPlan`; else the one-line SpecError saying ``taker`` runs only a plan
    built by :func:`build_plan` (so every path builds its plan once, and runs the plan it checked)."""
    if not isinstance(value, RunPlan):
        raise SpecError(f"{taker} runs a plan, not a {type(value).__name__}: pass mlmh.config.plan.build_plan(config)")
    return value


def build_components(config: "RunConfig", key: str) -> list[Any]:
    """The components of ``config``'s list ``key`` (``models``, ``maskings``, ... as in :data:`FLAGS`; or the one
    ``dataset``), each built through the registry, once per spec: a bad spec is a SpecError naming the preset
    key or the flag. :func:`build_plan` builds every list with it; a caller that needs one list checked (the
    preset's own models before a sweep expands them) calls it alone rather than building a plan to discard."""
    from mlmh.registry import get_registry

    registry = get_registry()
    specs = [config.dataset] if key == "dataset" else getattr(config, key)
    built: dict[str, Any] = {}
    for spec in specs:  # a spec: NAME or NAME:key=value,...
        try:
            component = registry.build(KINDS[key], spec)
        except SpecError as exc:
            raise SpecError(f"{set_by(config, key)}: {exc}") from None
        built.setdefault(component.spec, component)
    return list(built.values())


def build_plan(config: "RunConfig") -> RunPlan:
    """Build every component of ``config`` once and expand the grid (the registry's one caller).

    This is the validation of a configuration: an unknown name or a bad parameter is a SpecError naming
    the preset key or the flag, and the plan it returns is the one checked, which the runner runs
    (:func:`mlmh.run.runner.run_experiment`), so a run builds its components once.
    """
    from mlmh.config.options import check_instance
    from mlmh.registry import get_registry

    check_instance(config, "config", RunConfig, "a RunConfig (mlmh.config.presets.resolve(preset))")
    lists: dict[str, Any] = {key: build_components(config, key) for key in KINDS}
    plan = RunPlan(config=config, dataset=lists.pop("dataset")[0], **lists)
    registry = get_registry()
    plan.warnings.extend(registry.errors)
    for component in (plan.dataset, *plan.models, *plan.maskings, *plan.samplers, *plan.metrics, *plan.tasks):
        plan.owners[(component.kind, component.name)] = registry.owner(component.kind, component.name)
    plan.warnings += [warning for sampler in plan.samplers if (warning := many_steps(sampler))]
    plan.expand()
    return plan
