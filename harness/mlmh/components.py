"""Base classes of the things plugins register. Builtins and third-party plugins subclass these.

Each kind names the one method the runner calls; everything else is the plugin's business. A component also
declares what the core would otherwise have to know of it by name (the way an HF ``evaluate`` module describes
itself in ``_info``): a metric its main results (:class:`Headline`) and whether it judges fluency, a sampler the
model kinds it is the default for and the settings ``mlmh bench`` times (:class:`BenchCase`), a model whether it
is its kind's default, whether it loads any checkpoint of its kind, and whether a data-constrained sweep varies it,
a dataset whether it is the one a face falls back on.
The core reads these declarations from the registry (:mod:`mlmh.config.declared`), never a builtin's name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Generic, Sequence, TypeVar, cast

from mlmh.params import Component

if TYPE_CHECKING:
    import numpy as np

    from mlmh.events import RunEvent, RunFinished
    from mlmh.toolkit import Adapter
    from mlmh.tracking import TrackedRun
    from mlmh.types import Corpus, Document, Generation, MaskedItem, MaskPlan, MetricResult, TaskResult, Words


class Masking(Component):
    """Chooses which words of a document to hide. Must depend only on (document, words, rng).

    Any component may define ``unavailable(corpus) -> str | None``: the reason it cannot run on a loaded
    corpus (a missing tagger, WordNet, annotations), checked by the run plan before any model trains.
    """

    kind: ClassVar[str] = "masking"

    def mask(self, document: "Document", words: "Words", rng: "np.random.Generator") -> "MaskPlan":
        raise NotImplementedError


@dataclass
class LoadContext:
    """What a model needs to load or train itself: the run's dataset and a progress callback."""

    dataset: str | None = None
    data_path: str | None = None
    corpus: "Corpus | None" = None
    seed: int = 0
    cache_dir: str | None = None
    progress: Callable[[dict[str, Any]], None] | None = None  # {"step", "total", "loss", ...}
    options: dict[str, Any] = field(default_factory=dict)
    #: a model may read its weights at its adapter's first pass (``load_adapter(defer_weights=True)``): a run
    #: asks for this and calls the adapter's ``load_weights()`` where it has samples to generate
    defer_weights: bool = False


class Model(Component):
    """A language model. ``model_kind`` is "mlm", "clm" or "seq2seq"; ``load`` returns an adapter."""

    kind: ClassVar[str] = "model"
    model_kind: ClassVar[str] = ""
    #: the model of its kind a face opens with when none is named (the TUI playground's panes)
    default: ClassVar[bool] = False
    #: a data-constrained sweep (``--sweep-epochs``/``--sweep-tokens``, :mod:`mlmh.findings.crossover`) expands this
    #: model over its ``unique_tokens`` and ``epochs`` parameters, which it must declare
    swept: ClassVar[bool] = False

    def identity(self, context: LoadContext) -> str:
        """A stable string naming exactly these weights (path + revision or training hash)."""
        return self.spec

    def load(self, context: LoadContext) -> "Adapter":
        """Return the adapter of :mod:`mlmh.adapters` matching ``model_kind`` (typed for plugins:
        :class:`mlmh.toolkit.Adapter`)."""
        raise NotImplementedError

    def training_card(self, context: LoadContext) -> dict[str, Any]:
        """How these weights were trained, when mlmh trained them (budget, checkpoint kept, curves); {} otherwise."""
        return {}

    def checkpoints(self) -> tuple[str, ...]:
        """The checkpoints (hub names or directories) these weights are read from: the run plan refuses a run,
        before any work, whose hub names are neither cached nor downloadable
        (:func:`mlmh.adapters.checkpoints.uncached`)."""
        return ()


#: the adapter protocol a sampler takes (``Sampler[MaskedLM]``): the run hands it only adapters of its ``model_kinds``
AdapterT = TypeVar("AdapterT", bound="Adapter")


@dataclass(frozen=True)
class BenchCase:
    """A setting of a sampler that ``mlmh bench`` times: a row of its sampler table.

    ``label`` names the row, ``key`` is what ``--samplers`` takes (both unique: a later setting with a key taken is
    left out), ``params`` the spec's parameters (``steps=4``; empty: the sampler's defaults), ``kind`` the model kind
    it is timed on (empty: the sampler's only one); ``rank`` places the row among every plugin's (lower first, ties
    in registration order). ``reference``: the row that stands for its model kind where the bench compares kinds
    (the masked-vs-causal speedup)."""

    label: str
    key: str
    rank: int
    params: str = ""
    kind: str = ""
    reference: bool = False


class Sampler(Component, Generic[AdapterT]):
    """Regenerates the masked words of a batch of items with one adapter."""

    kind: ClassVar[str] = "sampler"
    model_kinds: ClassVar[frozenset[str]] = frozenset()
    #: the model kinds this sampler is the default for, when no sampler is named (``mlmh generate``, the playground);
    #: the first declaration of a kind in registration order wins (a plugin takes a builtin's by replacing it)
    default_for: ClassVar[frozenset[str]] = frozenset()
    #: the settings ``mlmh bench`` times (:class:`BenchCase`); none: the bench leaves this sampler out
    bench: ClassVar[tuple[BenchCase, ...]] = ()

    def generate(self, adapter: AdapterT, items: Sequence["MaskedItem"]) -> list["Generation"]:
        """The items' generations; ``adapter`` is one of :mod:`mlmh.toolkit`'s protocols by its ``kind``
        (:class:`~mlmh.toolkit.MaskedLM`, :class:`~mlmh.toolkit.Decoder`, :class:`~mlmh.toolkit.Seq2Seq`)."""
        raise NotImplementedError


class Cached:
    """A metric or task whose results a run may keep in its cache (:mod:`mlmh.storage.cache`)."""

    def cache_identity(self) -> str | None:
        """What the results depend on beyond the input, the spec, the seed, this plugin's code and the
        libraries of :data:`mlmh.implementation.LIBRARIES` (the files of a scoring model, a data
        package), as a string; "" when nothing else. None, the default, keeps the results out of the
        cache: a component that reads files it does not name here would be served stale results."""
        return None


class InputsOnly:
    """Mixed into a metric or task whose results follow from its input, spec, seed, code and libraries
    alone (no model or data files), so the run cache may keep them."""

    def cache_identity(self) -> str | None:
        return ""


@dataclass
class ScoringItem:
    """One prediction/reference pair; ``generation`` is there when it came from a run."""

    prediction: str
    reference: str
    generation: "Generation | None" = None


@dataclass(frozen=True)
class Headline:
    """A result a metric declares main: comparison tables lead with it (:func:`mlmh.results.main_metrics`).

    ``rank`` orders the main results of every plugin (lower first; ties in registration order). ``label`` is how
    a sentence names it ("BLEU"); ``unit`` how a finding counts a difference in it ("points": "bleu points").
    ``findings``: the papers' claims are tested on it (:mod:`mlmh.findings.paper_claims`); ``sweep``: a
    data-constrained sweep compares the models on it (:mod:`mlmh.findings.crossover`); ``baselines``: the run's
    best condition is set against the filler and deletion baselines on it, as on the first main result
    (:func:`mlmh.findings.comparisons.baselines`). ``rewards_deletion``: the result scores output shorter than the
    reference well by construction (an F-measure without a length penalty gives words kept from the reference a
    precision of 1), so deleting the masked words outscores any fill that is not mostly right; a condition is then
    held to the deletion baseline on a main result that does not reward it (:func:`mlmh.findings.verdicts.deletion_bar`)."""

    result: str
    rank: int
    label: str = ""
    unit: str = ""
    findings: bool = False
    sweep: bool = False
    baselines: bool = False
    rewards_deletion: bool = False


class Metric(Cached, Component):
    """Scores predictions against references; returns one or more named results."""

    kind: ClassVar[str] = "metric"
    higher_is_better: ClassVar[bool] = True
    #: the results of this metric that readers lead with (:class:`Headline`)
    headlines: ClassVar[tuple[Headline, ...]] = ()
    #: a fluency judge declares (the result that scores regenerations, the result that scores the originals): a
    #: finding compares fluency beside claim 1 where a run scored them (:mod:`mlmh.findings.fluency`)
    fluency: ClassVar[tuple[str, str] | None] = None

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list["MetricResult"]:
        raise NotImplementedError

    def forget_caches(self) -> None:
        """Forget the per-text work this metric keeps between calls in this process (loaded models
        may stay), so that the next :meth:`score` sees every text anew: ``mlmh bench`` times cold
        scoring this way. Nothing to forget by default."""


class Dataset(Component):
    """Loads a corpus from ``path`` in its official format, or the bundled sample when ``path`` is None."""

    kind: ClassVar[str] = "dataset"
    #: the dataset a face falls back on when none is named: a trained-* model regenerating a given text learns from
    #: it (``mlmh generate --text``, :func:`mlmh.api.compare`), and the TUI playground takes its examples from it
    default: ClassVar[bool] = False
    #: the downstream tasks of the dataset's own evaluation, by name (the paper's: authorship verification on PAN):
    #: of a preset's tasks, only these run on it, so one preset can name every dataset's task (a task the user names
    #: with --task always runs); empty: every task that applies to the corpus
    tasks: ClassVar[tuple[str, ...]] = ()

    def load(self, path: str | None) -> "Corpus":
        raise NotImplementedError


class Task(Cached, Component):
    """A downstream task: train on ``train`` documents, test on ``test`` documents."""

    kind: ClassVar[str] = "task"
    #: corpus features the task needs: any of "pairs", "labels", "entities", "author"
    requires: ClassVar[frozenset[str]] = frozenset()

    def applies_to(self, corpus: "Corpus") -> bool:
        docs = corpus.documents
        checks = {
            "pairs": bool(corpus.pairs),
            "labels": any(d.labels for d in docs),
            "entities": any(d.entities for d in docs),
            "author": any(d.author for d in docs),
        }
        return all(checks.get(r, False) for r in self.requires)

    def run(self, train: "Corpus", test: "Corpus", *, seed: int = 0) -> "TaskResult":
        raise NotImplementedError


class Tracker(Component):
    """An experiment tracker: an observer of the runs that enable it (``--tracker NAME``, a preset's
    ``trackers``). A run builds its own, so an instance's state is that run's.

    ``observe`` gets every event of the run, in order, from the runner's thread. The default checks that
    ``library`` is installed when the run starts (a missing one is said then, naming
    ``pip install 'mlmh[EXTRA]'``) and logs the finished run once, as a :class:`mlmh.tracking.TrackedRun`,
    through ``log``.
    """

    kind: ClassVar[str] = "tracker"
    #: the module the tracker logs through, and the pip extra of mlmh that installs it
    library: ClassVar[str] = ""
    extra: ClassVar[str] = ""

    def observe(self, event: "RunEvent") -> None:
        from mlmh.tracking import check_library, tracked_run

        if event.kind == "run_started" and self.library:
            check_library(self.library, self.extra)
        elif event.kind == "run_finished":
            finished = cast("RunFinished", event)
            self.log(tracked_run(finished.results, finished.output_path))

    def log(self, run: "TrackedRun") -> None:
        """Log a finished run: its configuration, scores, training curves, findings and files."""
        raise NotImplementedError


@dataclass
class Preset:
    """A named experiment: the parsed TOML table plus where it came from."""

    name: str
    description: str
    config: dict[str, Any]
    source: str

    kind: ClassVar[str] = "preset"
    parameters: ClassVar[tuple] = ()

    def describe(self) -> dict[str, Any]:
        return {"kind": "preset", "name": self.name, "description": self.description, "source": self.source, "parameters": []}


KINDS: dict[str, type] = {
    "model": Model,
    "dataset": Dataset,
    "masking": Masking,
    "sampler": Sampler,
    "metric": Metric,
    "task": Task,
    "tracker": Tracker,
    "preset": Preset,
}
