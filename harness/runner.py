"""The experiment runner: one preset in, results.json + report out, events all the way.

Public API (the CLI, the TUI and the bench call these)::

    from mlmh.config import resolve
    from mlmh.runner import run_experiment, RunCancelled

    config = resolve("quick", {"limit": 4})                 # a RunConfig
    results = run_experiment(config, listener=print,        # any callable taking a RunEvent
                             cancel=threading.Event(),      # set() it to stop between batches
                             output_path="runs/x", resume=False, use_cache=True)

``run_experiment`` returns the results dict it wrote to ``<output_path>/results.json``; it raises
:class:`RunCancelled` when ``cancel`` is set and :class:`~mlmh.errors.MlmhError` subclasses on bad input.

Stages: data -> models (train on first use) -> mask -> generate -> metrics -> downstream -> correlation
-> report. The grid is models x maskings x samplers x seeds; a sampler that cannot drive a model's kind is
skipped with a note. Generations are cached per sample as each batch finishes (:mod:`mlmh.cache`), so a
killed run resumes where it stopped, and every sample's randomness comes from :mod:`mlmh.seeding`, so
results do not depend on batch size or on what was cached.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from mlmh.config import RunConfig
from mlmh.errors import MlmhError, SpecError
from mlmh.events import (EventBus, Listener, Message, Progress, RunFinished, RunStarted, SampleGenerated,
                         StageFinished, StageStarted)
from mlmh.seeding import sample_seed
from mlmh.types import Corpus, Document, Generation, MaskedItem, MetricResult, TaskResult, to_dict

RESULTS_FILE = "results.json"
CONFIG_FILE = "config.json"
SAMPLES_FILE = "samples.jsonl"
GENERATIONS_FILE = "generations.jsonl"
#: result fields that measure time, not outcome: resume and batch-size checks ignore them
TIMING_KEYS = frozenset({"seconds", "tokens_per_s", "started_at", "finished_at", "timings"})


class RunCancelled(MlmhError):
    """The run was stopped through its cancel event; cached samples stay for ``--resume``."""

    exit_code = 130


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


@dataclass
class LoadedModel:
    component: Any
    identity: str
    adapter: Any = None


@dataclass
class RunState:
    """What the stages hand to each other."""

    corpus: Corpus | None = None
    documents: list[Document] = field(default_factory=list)
    train: Corpus | None = None
    test: Corpus | None = None
    models: dict[str, LoadedModel] = field(default_factory=dict)
    items: dict[tuple[str, int], list[MaskedItem]] = field(default_factory=dict)
    generations: dict[str, list[Generation]] = field(default_factory=dict)
    metrics: dict[str, list[MetricResult]] = field(default_factory=dict)
    downstream: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)
    baseline: dict[str, Any] = field(default_factory=dict)
    correlations: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def default_output_path(preset: str, root: str | Path = "runs") -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    return Path(root) / f"{stamp}-{preset}"


def latest_run(preset: str, root: str | Path = "runs") -> Path | None:
    """The newest unfinished run directory of ``preset`` (what ``--resume`` picks without a path)."""
    root = Path(root)
    if not root.is_dir():
        return None
    runs = sorted(p for p in root.glob(f"*-{preset}") if (p / CONFIG_FILE).is_file() and not (p / RESULTS_FILE).is_file())
    return runs[-1] if runs else None


def run_experiment(config: RunConfig, listener: Listener | None = None, cancel: threading.Event | None = None, *,
                   output_path: str | Path | None = None, resume: bool = False, use_cache: bool = True,
                   cache_path: str | Path | None = None) -> dict[str, Any]:
    """Run every condition of ``config`` and write results.json, report.md and plots to ``output_path``."""
    out = Path(output_path) if output_path else default_output_path(config.preset)
    runner = Runner(config, EventBus(listener), cancel or threading.Event(), out, resume=resume,
                    use_cache=use_cache, cache_path=cache_path)
    return runner.run()


class Runner:
    def __init__(self, config: RunConfig, bus: EventBus, cancel: threading.Event, out: Path, *, resume: bool,
                 use_cache: bool, cache_path: str | Path | None) -> None:
        self.config = config
        self.bus = bus
        self.cancel = cancel
        self.out = out
        self.resume = resume
        self.use_cache = use_cache
        self.cache_path = cache_path
        self.state = RunState()
        self.conditions: list[Condition] = []

    # -- orchestration -------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        started = time.time()
        self._prepare_output()
        self.conditions = self._expand_grid()
        self.bus.emit(RunStarted(run_id=self.out.name, config=self.config.to_dict(), n_conditions=len(self.conditions),
                                 output_path=str(self.out)))
        for note in self.state.notes:  # the grid's notes, held back until the run has started
            self.bus.emit(Message(level="info", text=note))
        cache = self._open_cache()
        try:
            self._stage("data", self._load_data)
            self._stage("models", self._load_models)
            self._stage("mask", self._mask)
            self._stage("generate", lambda: self._generate(cache))
            self._stage("metrics", self._score)
            self._stage("downstream", self._downstream)
            self._stage("correlation", self._correlate)
            results = self._results(started)
            self._stage("report", lambda: self._write(results))
        finally:
            cache.close()
        results["timings"]["total"] = round(time.time() - started, 3)
        _write_json(self.out / RESULTS_FILE, results)
        self.bus.emit(RunFinished(output_path=str(self.out), results=results, seconds=time.time() - started))
        return results

    def _stage(self, name: str, body: Callable[[], None]) -> None:
        self._check_cancel()
        t0 = time.time()
        body()
        seconds = time.time() - t0
        self.state.timings[name] = round(seconds, 3)
        self.bus.emit(StageFinished(stage=name, seconds=seconds))

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            self.bus.emit(Message(level="warning", text="run cancelled; finished batches are cached (use --resume)"))
            raise RunCancelled(f"run cancelled; resume with: mlmh eval --preset {self.config.preset} --resume "
                               f"--output-path {self.out}")

    def _note(self, text: str, level: str = "info", emit: bool = True) -> None:
        if text not in self.state.notes:
            self.state.notes.append(text)
        if emit:
            self.bus.emit(Message(level=level, text=text))

    # -- setup ---------------------------------------------------------------------------------
    def _prepare_output(self) -> None:
        saved = self.out / CONFIG_FILE
        if self.resume:
            if not saved.is_file():
                raise SpecError(f"--resume: {self.out} holds no interrupted run (no {CONFIG_FILE})")
            before = json.loads(saved.read_text(encoding="utf-8"))
            if before != self.config.experiment():
                changed = sorted(k for k in set(before) | set(self.config.experiment())
                                 if before.get(k) != self.config.experiment().get(k))
                raise SpecError(f"--resume: the configuration differs from the run in {self.out} "
                                f"(changed: {', '.join(changed)}); start a new run instead")
        elif (self.out / RESULTS_FILE).exists() or saved.exists():
            raise SpecError(f"output path {self.out} already holds a run; pass --resume to continue it or choose "
                            "another --output-path")
        self.out.mkdir(parents=True, exist_ok=True)
        _write_json(saved, self.config.experiment())

    def _open_cache(self):
        from mlmh.cache import SampleCache
        from mlmh.paths import samples_db

        if self.cache_path:
            return SampleCache(self.cache_path)
        # --no-cache: a private cache in the run directory, so the run is still resumable
        return SampleCache(samples_db() if self.use_cache else self.out / "samples.sqlite")

    def _expand_grid(self) -> list[Condition]:
        from mlmh.registry import get_registry

        registry = get_registry()
        for message in registry.errors:
            self._note(message, "warning", emit=False)
        build = registry.build
        models = _unique(build("model", s) for s in self.config.models)
        maskings = _unique(build("masking", s) for s in self.config.maskings)
        samplers = _unique(build("sampler", s) for s in self.config.samplers)
        conditions = []
        for model in models:
            usable = [s for s in samplers if model.model_kind in s.model_kinds]
            unfit = [s.short_spec for s in samplers if s not in usable]
            if unfit:
                self._note(f"{model.short_spec}: skipped sampler(s) {', '.join(unfit)} (they do not drive "
                           f"{model.model_kind} models)", emit=False)
            for masking in maskings:
                for sampler in usable:
                    for seed in self.config.seeds:
                        cid = f"{model.short_spec} | {masking.short_spec} | {sampler.short_spec} | seed={seed}"
                        conditions.append(Condition(cid, model, masking, sampler, seed))
        if not conditions:
            raise SpecError(f"{self.config.source}: no condition left: no sampler fits any model "
                            f"(models: {', '.join(self.config.models)}; samplers: {', '.join(self.config.samplers)})")
        return conditions

    # -- stages --------------------------------------------------------------------------------
    def _load_data(self) -> None:
        from mlmh.registry import get_registry

        self.bus.emit(StageStarted(stage="data", total=1, description=f"loading dataset {self.config.dataset}"))
        corpus = get_registry().build("dataset", self.config.dataset).load(self.config.data)
        self.state.corpus = corpus
        if self.config.data is None:
            self._note(f"dataset {self.config.dataset}: using its {corpus.source} (pass --data PATH for the real files)")
        for note in corpus.notes:
            self._note(f"dataset {self.config.dataset}: {note}")
        docs = select_documents(corpus, self.config.limit)
        if not docs:
            raise MlmhError(f"dataset {self.config.dataset} has no train documents to generate from ({corpus.source})")
        self.state.documents = docs
        self.state.train = _subcorpus(corpus, docs)
        self.state.test = _subcorpus(corpus, corpus.split("test"))
        self.bus.emit(Progress(stage="data", completed=1, total=1, info={"documents": len(docs)}))

    def _load_models(self) -> None:
        from mlmh.components import LoadContext
        from mlmh.paths import models_dir

        models = _unique(c.model for c in self.conditions)
        self.bus.emit(StageStarted(stage="models", total=len(models), description="loading models (training on first use)"))
        for done, model in enumerate(models):
            self._check_cancel()
            context = LoadContext(dataset=self.config.dataset, data_path=self.config.data, corpus=self.state.corpus,
                                  seed=self.config.seeds[0], cache_dir=str(models_dir()),
                                  progress=self._training_progress(model.short_spec))
            identity = model.identity(context)
            adapter = model.load(context)
            self.state.models[model.spec] = LoadedModel(model, identity, adapter)
            self.bus.emit(Progress(stage="models", completed=done + 1, total=len(models), info={"model": model.short_spec}))

    def _training_progress(self, model: str) -> Callable[[dict[str, Any]], None]:
        def forward(info: dict[str, Any]) -> None:
            self._check_cancel()
            self.bus.emit(Progress(stage="train", completed=int(info.get("step", 0)), total=info.get("total"),
                                   info={**info, "model": model}))

        return forward

    def _mask(self) -> None:
        from mlmh.generation import prepare_items

        maskings = _unique(c.masking for c in self.conditions)
        pairs = [(m, seed) for m in maskings for seed in self.config.seeds]
        self.bus.emit(StageStarted(stage="mask", total=len(pairs), description="masking documents"))
        for done, (masking, seed) in enumerate(pairs):
            self._check_cancel()
            self.state.items[(masking.spec, seed)] = prepare_items(self.state.documents, masking, seed)
            self.bus.emit(Progress(stage="mask", completed=done + 1, total=len(pairs), info={"masking": masking.short_spec}))

    def _generate(self, cache: Any) -> None:
        from mlmh.cache import sample_key
        from mlmh.generation import generate

        texts = {d.id: d.text for d in self.state.documents}
        total = len(self.conditions) * len(self.state.documents)
        self.bus.emit(StageStarted(stage="generate", total=total, description="generating"))
        completed = 0
        for condition in self.conditions:
            self._check_cancel()
            loaded = self.state.models[condition.model.spec]
            items = self.state.items[(condition.masking.spec, condition.seed)]
            keys = {item.doc_id: sample_key(model=f"{condition.model.spec}@{loaded.identity}",
                                            tokenizer=_tokenizer_identity(loaded), doc_id=item.doc_id,
                                            text=texts[item.doc_id], masking=condition.masking.spec,
                                            sampler=condition.sampler.spec, seed=item.seed)
                    for item in items}
            cached = cache.get_many(keys.values())
            found = {doc: cached[key] for doc, key in keys.items() if key in cached}
            completed += len(found)
            if found:
                self.bus.emit(Progress(stage="generate", completed=completed, total=total,
                                       info={"condition": condition.id, "cached": len(found)}))
            missing = [item for item in items if item.doc_id not in found]

            def store(index: int, batch: Sequence[Generation], condition: Condition = condition) -> None:
                nonlocal completed
                cache.put_many({keys[g.doc_id]: g for g in batch})
                for g in batch:
                    found[g.doc_id] = g
                    self.bus.emit(SampleGenerated(condition=condition.id, generation=g))
                completed += len(batch)
                self.bus.emit(Progress(stage="generate", completed=completed, total=total, info={"condition": condition.id}))
                self._check_cancel()

            if missing:
                generate(loaded.adapter, condition.sampler, missing, self.config.batch_size, on_batch=store)
            self.state.generations[condition.id] = [found[item.doc_id] for item in items]

    def _score(self) -> None:
        from mlmh.components import ScoringItem
        from mlmh.registry import get_registry

        metrics = _unique(get_registry().build("metric", s) for s in self.config.metrics)
        total = len(self.conditions) * len(metrics)
        self.bus.emit(StageStarted(stage="metrics", total=total, description="scoring"))
        done = 0
        reported: set[str] = set()
        for condition in self.conditions:
            gens = self.state.generations[condition.id]
            items = [ScoringItem(prediction=g.text, reference=g.original, generation=g) for g in gens]
            results: list[MetricResult] = []
            for metric in metrics:
                self._check_cancel()
                try:
                    scored = metric.score(items, seed=condition.seed)
                except MlmhError as exc:
                    scored = [MetricResult(name=metric.name, value=None, higher_is_better=metric.higher_is_better,
                                           error=str(exc))]
                for result in scored:
                    if result.error and result.name not in reported:
                        reported.add(result.name)
                        self._note(f"metric {result.name} could not run: {result.error}", "warning")
                results.extend(scored)
                done += 1
                self.bus.emit(Progress(stage="metrics", completed=done, total=total,
                                       info={"condition": condition.id, "metric": metric.short_spec}))
            self.state.metrics[condition.id] = results

    def _downstream(self) -> None:
        from mlmh.registry import get_registry

        corpus, train, test = self.state.corpus, self.state.train, self.state.test
        assert corpus is not None and train is not None and test is not None
        tasks = []
        for task in _unique(get_registry().build("task", s) for s in self.config.tasks):
            if task.applies_to(corpus):
                tasks.append(task)
            else:
                self._note(f"task {task.short_spec} skipped: dataset {corpus.dataset} lacks "
                           f"{', '.join(sorted(task.requires))}")
        total = len(tasks) * (len(self.conditions) + 1)
        self.bus.emit(StageStarted(stage="downstream", total=total, description="downstream tasks"))
        if not tasks:
            return
        if not test.documents:
            self._note(f"downstream skipped: dataset {corpus.dataset} has no test split", "warning")
            return
        from mlmh.synthetic import synthetic_corpus

        done = 0
        seed = self.config.seeds[0]
        for task in tasks:
            self._check_cancel()
            self.state.baseline[task.name] = self._task_scores(task, train, test, seed, "real train split")
            done += 1
            self.bus.emit(Progress(stage="downstream", completed=done, total=total, info={"task": task.name}))
        for condition in self.conditions:
            gens = {g.doc_id: g for g in self.state.generations[condition.id]}
            synthetic = synthetic_corpus(train, gens)
            scores = {}
            for task in tasks:
                self._check_cancel()
                scores[task.name] = self._task_scores(task, synthetic, test, condition.seed, condition.id)
                done += 1
                self.bus.emit(Progress(stage="downstream", completed=done, total=total,
                                       info={"task": task.name, "condition": condition.id}))
            self.state.downstream[condition.id] = scores

    def _task_scores(self, task: Any, train: Corpus, test: Corpus, seed: int, what: str) -> dict[str, float]:
        try:
            result: TaskResult = task.run(train, test, seed=seed)
        except MlmhError as exc:
            self._note(f"task {task.name} on {what}: {exc}", "warning")
            return {}
        if result.error:
            self._note(f"task {task.name} on {what}: {result.error}", "warning")
            return {}
        return {k: float(v) for k, v in result.scores.items()}

    def _correlate(self) -> None:
        self.bus.emit(StageStarted(stage="correlation", total=1, description="quality vs downstream"))
        rows = [{"condition": c.id, "metrics": _metric_values(self.state.metrics[c.id]),
                 "downstream": self.state.downstream.get(c.id, {})} for c in self.conditions]
        if any(row["downstream"] for row in rows):
            from mlmh.analysis import correlate

            self.state.correlations = correlate(rows, seed=self.config.seeds[0])
        self.bus.emit(Progress(stage="correlation", completed=1, total=1))

    # -- results -------------------------------------------------------------------------------
    def _results(self, started: float) -> dict[str, Any]:
        conditions = []
        for condition in self.conditions:
            gens = self.state.generations[condition.id]
            row = condition.row()
            row["metrics"] = {r.name: _metric_entry(r) for r in self.state.metrics[condition.id]}
            row["downstream"] = self.state.downstream.get(condition.id, {})
            row["generation"] = _generation_stats(gens)
            conditions.append(row)
        return {
            "run_id": self.out.name,
            "config": self.config.to_dict(),
            "versions": versions(),
            "dataset": {"name": self.config.dataset, "source": self.state.corpus.source if self.state.corpus else "",
                        "train_documents": len(self.state.documents),
                        "test_documents": len(self.state.test.documents) if self.state.test else 0},
            "n_samples": len(self.state.documents),
            "n_conditions": len(conditions),
            "conditions": conditions,
            "baseline": self.state.baseline,
            "correlations": self.state.correlations,
            "models": {spec: {"identity": m.identity, "model_kind": m.component.model_kind}
                       for spec, m in self.state.models.items()},
            "notes": self.state.notes,
            "started_at": datetime.fromtimestamp(started, timezone.utc).isoformat(timespec="seconds"),
            "timings": self.state.timings,
        }

    def _write(self, results: dict[str, Any]) -> None:
        from mlmh.report import write_report

        self.bus.emit(StageStarted(stage="report", total=1, description="writing results, report and plots"))
        metric_rows = {c.id: self.state.metrics[c.id] for c in self.conditions}
        with open(self.out / GENERATIONS_FILE, "w", encoding="utf-8") as fh:
            for condition in self.conditions:
                for g in self.state.generations[condition.id]:
                    fh.write(json.dumps({"condition": condition.id, "doc_id": g.doc_id, "original": g.original,
                                         "masked_text": g.masked_text, "text": g.text}, ensure_ascii=False) + "\n")
        if self.config.log_samples:
            with open(self.out / SAMPLES_FILE, "w", encoding="utf-8") as fh:
                for condition in self.conditions:
                    for i, g in enumerate(self.state.generations[condition.id]):
                        per_sample = {r.name: (r.per_sample[i] if i < len(r.per_sample) else None)
                                      for r in metric_rows[condition.id]}
                        fh.write(json.dumps({"condition": condition.id, "generation": to_dict(g), "metrics": per_sample},
                                            ensure_ascii=False) + "\n")
        _write_json(self.out / RESULTS_FILE, results)
        write_report(results, self.out)
        self.bus.emit(Progress(stage="report", completed=1, total=1))


# -- helpers -------------------------------------------------------------------------------------
def select_documents(corpus: Corpus, limit: int | float) -> list[Document]:
    """The train documents to generate from: all, the first ``limit`` of a seeded shuffle, or a fraction.

    With verification pairs, whole train pairs are taken (same-author and different-author pairs
    alternating) so the synthetic corpus keeps usable pairs; the selection never depends on the run seeds.
    """
    train = corpus.split("train")
    if not limit:
        return train
    n = int(limit) if isinstance(limit, int) else max(1, round(limit * len(train)))
    if n >= len(train):
        return train
    rng = np.random.default_rng(sample_seed(0, "select", corpus.dataset))
    ids = {d.id for d in train}
    chosen: list[str] = []
    train_pairs = [p for p in corpus.pairs if p.a in ids and p.b in ids]
    if train_pairs:
        same = [train_pairs[i] for i in rng.permutation(len(train_pairs)) if train_pairs[i].same]
        diff = [train_pairs[i] for i in rng.permutation(len(train_pairs)) if not train_pairs[i].same]
        for k in range(max(len(same), len(diff))):
            for group in (same, diff):
                if k < len(group) and len(chosen) < n:
                    chosen.extend(x for x in (group[k].a, group[k].b) if x not in chosen)
    for i in rng.permutation(len(train)):
        if len(chosen) >= n:
            break
        if train[i].id not in chosen:
            chosen.append(train[i].id)
    keep = set(chosen)
    return [d for d in train if d.id in keep]


def _subcorpus(corpus: Corpus, documents: list[Document]) -> Corpus:
    ids = {d.id for d in documents}
    return Corpus(dataset=corpus.dataset, documents=list(documents), source=corpus.source,
                  pairs=[p for p in corpus.pairs if p.a in ids and p.b in ids], notes=list(corpus.notes))


def _unique(components: Any) -> list[Any]:
    """Components in order, without two of the same canonical spec."""
    seen: dict[str, Any] = {}
    for component in components:
        seen.setdefault(component.spec, component)
    return list(seen.values())


def _tokenizer_identity(loaded: LoadedModel) -> str:
    tokenizer = getattr(loaded.adapter, "tokenizer", None)
    if tokenizer is None:
        return ""
    return f"{type(tokenizer).__name__}:{len(tokenizer)}:{getattr(tokenizer, 'name_or_path', '')}"


def _metric_values(results: list[MetricResult]) -> dict[str, float]:
    return {r.name: r.value for r in results if r.value is not None}


def _metric_entry(result: MetricResult) -> dict[str, Any]:
    entry: dict[str, Any] = {"value": result.value, "ci_low": result.ci_low, "ci_high": result.ci_high,
                             "higher_is_better": result.higher_is_better}
    if result.info:
        entry["info"] = result.info
    if result.error:
        entry["error"] = result.error
    return entry


def _generation_stats(gens: list[Generation]) -> dict[str, Any]:
    seconds = sum(g.seconds for g in gens)
    processed = sum(g.tokens_processed for g in gens)
    return {
        "samples": len(gens),
        "forward_passes": sum(g.forward_passes for g in gens),
        "generated_tokens": sum(g.generated_tokens for g in gens),
        "tokens_processed": processed,
        "truncated_tokens": sum(g.truncated_tokens for g in gens),
        "seconds": round(seconds, 4),
        "tokens_per_s": round(processed / seconds, 1) if seconds > 0 else None,
    }


def versions() -> dict[str, Any]:
    """Versions of mlmh, the model and metric libraries, and every loaded plugin."""
    from importlib import metadata

    from mlmh import __version__
    from mlmh.plugin_manager import describe_plugins

    out: dict[str, Any] = {"mlmh": __version__}
    for dist in ("torch", "transformers", "tokenizers", "sacrebleu", "rouge-score", "nltk", "bert-score",
                 "scikit-learn", "scipy", "numpy", "sklearn-crfsuite", "seqeval"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    out["plugins"] = {p["name"]: p.get("version") for p in describe_plugins()}
    return out


def _write_json(path: Path, data: Any) -> None:
    """Write through a temp file and rename, so a kill never leaves half a file."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def strip_timings(results: Any) -> Any:
    """``results`` without the fields that measure time (for comparing two runs of one configuration)."""
    if isinstance(results, dict):
        return {k: strip_timings(v) for k, v in results.items() if k not in TIMING_KEYS}
    if isinstance(results, list):
        return [strip_timings(v) for v in results]
    return results
