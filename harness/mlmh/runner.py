"""The experiment runner: one preset in, results.json + report out, events all the way.

Public API (the CLI, the TUI and the bench call these)::

    from mlmh.config import resolve
    from mlmh.plan import build_plan
    from mlmh.runner import run_experiment
    from mlmh.errors import RunCancelled

    plan = build_plan(resolve("quick", {"limit": 4}))   # checks the RunConfig: a RunPlan
    results = run_experiment(plan, listener=print,          # any callable taking a RunEvent
                             cancel=threading.Event(),      # set() it to stop between batches
                             output_path="runs/x", resume=False, use_cache=True)

``run_experiment`` takes only a checked plan (every path builds its plan once) and returns the typed
results (:class:`~mlmh.types.RunResults`): each stage hands typed values to the next, and results.json is
their serialisation, written once, atomically (:class:`~mlmh.rundir.RunDir`). It raises
:class:`~mlmh.errors.RunCancelled` when ``cancel`` is set and :class:`~mlmh.errors.MlmhError` subclasses on bad input.

Stages: data -> models (train on first use) -> mask -> generate -> metrics -> downstream -> correlation
-> report. The grid is models x maskings x samplers x seeds; a sampler that cannot drive a model's kind is
skipped with a note. Generations are cached per sample as each batch finishes, and the results of metrics
and tasks per input (:mod:`mlmh.cache`), so a killed run resumes where it stopped; every sample's randomness
comes from :mod:`mlmh.seeding`, so results do not depend on batch size or on what was cached.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any, Callable, Sequence

from mlmh.config import RunConfig
from mlmh.errors import MlmhError, RunCancelled, SpecError
from mlmh.events import (EventBus, Listener, Message, Progress, RunFinished, RunStarted, SampleGenerated,
                         StageFinished, StageStarted)
from mlmh.plan import RunPlan, expect_plan
from mlmh.run_results import TIMING_KEYS, ResultsStage, strip_timings, versions
from mlmh.run_state import REAL_TRAIN, ROLES, SPLIT_OF_ROLE, LoadedModel, RunLog, RunState, Scoring
from mlmh.rundir import RunDir, RunDirError, new_run_path
from mlmh.selection import subcorpus, select_documents
from mlmh.types import Corpus, Generation, MetricResult, RoleQuality, RunError, RunResults, Score, TaskResult

__all__ = ["RunCancelled", "Runner", "run_experiment", "select_documents", "strip_timings", "versions", "TIMING_KEYS",
           "LoadedModel", "RunLog", "RunState", "Scoring", "ROLES", "SPLIT_OF_ROLE", "REAL_TRAIN"]


def run_experiment(plan: RunPlan, listener: Listener | None = None, cancel: threading.Event | None = None,
                   *, output_path: str | Path | None = None, resume: bool = False, use_cache: bool = True,
                   cache_path: str | Path | None = None, executor: Any = None) -> RunResults:
    """Run every condition of ``plan`` (:func:`mlmh.plan.build_plan`) and write results.json, report.md and
    plots to ``output_path``.

    ``executor`` generates the work units (default: in this process; see :mod:`mlmh.executors`).
    """
    expect_plan(plan, "run_experiment")
    out = Path(output_path) if output_path else new_run_path(plan.config.preset)
    runner = Runner(plan, EventBus(listener), cancel or threading.Event(), out, resume=resume,
                    use_cache=use_cache, cache_path=cache_path, executor=executor)
    return runner.run()


class Runner(ResultsStage):
    """One run of a plan: the stages in order, each handing its results to the next through :class:`RunState`."""

    def __init__(self, plan: RunPlan, bus: EventBus, cancel: threading.Event, out: Path, *, resume: bool,
                 use_cache: bool, cache_path: str | Path | None, executor: Any = None) -> None:
        self.plan = plan
        self.config: RunConfig = plan.config
        self.bus = bus
        self.cancel = cancel
        self.out = out
        self.run_dir = RunDir(out)
        self.resume = resume
        self.use_cache = use_cache
        self.cache_path = cache_path
        self.executor = executor
        self.state = RunState()
        self.log = RunLog()
        self._generated_any = False

    @property
    def conditions(self) -> list[Any]:
        return self.plan.conditions

    # -- orchestration -------------------------------------------------------------------------
    def run(self) -> RunResults:
        started = time.time()
        self.bus.trackers = self.plan.trackers
        self._prepare_output()
        try:
            return self._run(started)
        except RunDirError as exc:  # a run file could not be written (a full disk): what is done stays
            raise RunDirError(f"{exc}; continue with `{self.resume_hint()}`") from None
        except MlmhError as exc:
            if not isinstance(exc, RunCancelled):
                self._forget_if_nothing_generated()
            raise

    def _run(self, started: float) -> RunResults:
        self.bus.emit(RunStarted(run_id=self.out.name, config=self.config.to_dict(), n_conditions=len(self.conditions),
                                 output_path=str(self.out)))
        for warning in self.plan.warnings:
            self._note(warning, "warning")
        cache = self._open_cache()
        try:
            self._stage("data", self._load_data)
            self._stage("models", self._load_models)
            self._stage("mask", self._mask)
            self._stage("generate", lambda: self._generate(cache))
            self._stage("metrics", lambda: self._score(cache))
            self._stage("downstream", lambda: self._downstream(cache))
            self._stage("correlation", self._correlate)
            self.log.timings["total"] = round(time.time() - started, 3)
            results = self._results(started)
            self._stage("report", lambda: self._write(results, cache))
        finally:
            cache.close()
        self.bus.emit(RunFinished(output_path=str(self.out), results=results, seconds=time.time() - started))
        return results

    def _stage(self, name: str, body: Callable[[], None]) -> None:
        self._check_cancel()
        t0 = time.time()
        body()
        seconds = time.time() - t0
        self.log.timings[name] = round(seconds, 3)
        self.bus.emit(StageFinished(stage=name, seconds=seconds))

    def resume_hint(self) -> str:
        """The command that continues this run (with --no-cache when its cache is the run directory's own)."""
        private = not self.use_cache and not self.cache_path
        return f"mlmh eval --resume --output-path {self.out}" + (" --no-cache" if private else "")

    def _check_cancel(self) -> None:
        if self.cancel.is_set():
            self.bus.emit(Message(level="warning", text="run cancelled; finished batches are cached (use --resume)"))
            raise RunCancelled(f"run cancelled; resume with: {self.resume_hint()}")

    def _note(self, text: str, level: str = "info", emit: bool = True) -> None:
        if text not in self.log.notes:
            self.log.notes.append(text)
            if emit:
                self.bus.emit(Message(level=level, text=text))

    def _error(self, component: str, what: str, exc: BaseException | str) -> None:
        """A component that failed: recorded by name in results.json and said once; the run goes on."""
        from mlmh.contracts import describe_error

        message = exc if isinstance(exc, str) else describe_error(exc)
        entry = RunError(component=component, during=what, error=message)
        if entry not in self.log.errors:
            self.log.errors.append(entry)
            self._note(f"{component} failed ({what}): {message}", "warning")

    def _fail(self, conditions: Sequence[Any], component: Any, what: str, exc: BaseException | str) -> None:
        """``component`` failed, so ``conditions`` (those that need it) have no results: each is marked
        failed in results.json with the reason, and the run goes on with the others. Nothing left to run
        stops the run with the errors."""
        from mlmh.contracts import describe_error

        name = self.plan.describe(component)
        self._error(name, what, exc)
        message = exc if isinstance(exc, str) else describe_error(exc)
        for condition in conditions:
            self.log.failed.setdefault(condition.id, f"{name} failed ({what}): {message}")
        if all(c.id in self.log.failed for c in self.conditions):
            raise MlmhError("every condition failed: " + "; ".join(str(e) for e in self.log.errors))

    @property
    def running(self) -> list[Any]:
        """The conditions no component failure has stopped."""
        return [c for c in self.conditions if c.id not in self.log.failed]

    # -- setup ---------------------------------------------------------------------------------
    def _prepare_output(self) -> None:
        record = {"config": self.config.to_dict(), "experiment": self.config.experiment()}
        if self.resume:
            self.run_dir.resume()
            before = self.run_dir.saved_config()
            if before.experiment() != self.config.experiment():
                after = self.config.experiment()
                changed = sorted(k for k in set(before.experiment()) | set(after)
                                 if before.experiment().get(k) != after.get(k))
                raise SpecError(f"--resume: the configuration differs from the run in {self.out} "
                                f"(changed: {', '.join(changed)}); resume with `{self.resume_hint()}` alone, "
                                "or start a new run")
            self.run_dir.write_config(record)
        else:
            self.run_dir.start(record, self.resume_hint())

    def _forget_if_nothing_generated(self) -> None:
        """A new run that failed on its input before generating anything leaves no run behind, so the
        corrected command can use the same output path. An interrupted one (Ctrl-C, SIGTERM, cancel) or one
        that could not write stays, so its ``--resume`` hint works."""
        if not self._generated_any and not self.run_dir.finished:
            self.run_dir.forget()

    def _open_cache(self):
        from mlmh.cache import SampleCache
        from mlmh.paths import samples_db

        if self.cache_path:
            return SampleCache(self.cache_path)
        # --no-cache: a private cache in the run directory, so the run is still resumable
        return SampleCache(samples_db() if self.use_cache else self.run_dir.private_cache_path())

    # -- stages --------------------------------------------------------------------------------
    def _load_data(self) -> None:
        self.bus.emit(StageStarted(stage="data", total=1, description=f"loading dataset {self.config.dataset}"))
        try:
            corpus = self.plan.load_corpus()
        except MlmhError:
            raise
        except Exception as exc:  # the run's one dataset: nothing can run without it, but say whose fault
            from mlmh.contracts import describe_error

            raise MlmhError(f"{self.plan.describe(self.plan.dataset)} failed to load "
                            f"{self.config.data or 'its bundled sample'}: {describe_error(exc)}") from None
        self.state.corpus = corpus
        if self.config.data is None:
            self._note(f"dataset {self.config.dataset}: using its {corpus.source} (pass --data PATH for the real files)")
        for note in corpus.notes:
            self._note(f"dataset {self.config.dataset}: {note}")
        for role in ROLES:
            self.state.documents[role] = select_documents(corpus, self.config.limit, SPLIT_OF_ROLE[role])
        if not self.state.documents["seen"]:
            raise MlmhError(f"dataset {self.config.dataset} has no train documents to generate from ({corpus.source})")
        if not self.state.documents["unseen"]:
            self._note(f"dataset {self.config.dataset} has no test split: quality is measured on seen (train) "
                       "documents only, and cannot separate generation from memorization", "warning")
        self.state.role_of = {d.id: role for role in ROLES for d in self.state.documents[role]}
        self.state.headline = "unseen" if self.state.documents["unseen"] else "seen"
        self.state.test = subcorpus(corpus, corpus.split("test"))
        if any(not m.name.startswith("trained-") for m in self.plan.models):
            self._note("seen / unseen are the dataset's train / test splits; mlmh does not know what a user "
                       "checkpoint (hf-*) was trained on")
        self.plan.check(corpus)
        for note in self.plan.notes:
            self._note(note)
        self.bus.emit(Progress(stage="data", completed=1, total=1,
                               info={role: len(docs) for role, docs in self.state.documents.items()}))

    def _load_models(self) -> None:
        from mlmh.plan import load_context
        from mlmh.training.jobs import train_missing

        models = self.plan.models
        self.bus.emit(StageStarted(stage="models", total=len(models), description="loading models (training on first use)"))
        train_missing(models, lambda m: load_context(self.config, self.state.corpus, self._training_progress(m.short_spec)))
        for done, model in enumerate(models):
            self._check_cancel()
            # weights are read in the generate stage, and only for a model with samples left to generate
            context = load_context(self.config, self.state.corpus, self._training_progress(model.short_spec),
                                   defer_weights=True)
            try:
                identity = model.identity(context)
                adapter = model.load(context)
                card = model.training_card(context)
            except (RunCancelled, KeyboardInterrupt):
                raise
            except Exception as exc:  # this model's conditions fail; the other models still run
                self._fail([c for c in self.conditions if c.model.spec == model.spec], model, "loading", exc)
                continue
            for note in getattr(adapter, "notes", ()):
                self._note(f"{model.short_spec}: {note}", "warning")
            self.state.models[model.spec] = LoadedModel(model, identity, adapter, card)
            self.bus.emit(Progress(stage="models", completed=done + 1, total=len(models), info={"model": model.short_spec}))

    def _training_progress(self, model: str) -> Callable[[dict[str, Any]], None]:
        def forward(info: dict[str, Any]) -> None:
            self._check_cancel()
            self.bus.emit(Progress(stage="train", completed=int(info.get("step", 0)), total=info.get("total"),
                                   info={**info, "model": model}))

        return forward

    def _window(self) -> str:
        """The narrowest model window in tokens and how to widen it, for the note on cut documents."""
        windows = {m.component.short_spec: window for m in self.state.models.values()
                   if isinstance(window := getattr(m.adapter, "max_length", None), int)}
        if not windows:
            return ""
        model, tokens = min(windows.items(), key=lambda kv: kv[1])
        return (f" ({tokens:,} tokens, the window of {model}; a trained-* model's grows with seq_len=N or a larger "
                "size=, a pretrained model's is its position table)")

    def _mask(self) -> None:
        from mlmh.generation import fit_to_windows, prepare_items

        for role in ROLES:
            fitted, cut = fit_to_windows(self.state.documents[role], [m.adapter for m in self.state.models.values()])
            self.state.documents[role] = fitted
            self.state.cut[role] = cut
            if cut:
                self._note(f"{cut} of {len(fitted)} {role} documents were cut after the last word that fits every "
                           f"model's window{self._window()}, so no masked word goes ungenerated and no unseen text "
                           "pads the scores")
        # the real-text baseline of the downstream tasks trains on the same (cut) documents as the synthetic corpora
        assert self.state.corpus is not None  # the data stage ran
        self.state.train = subcorpus(self.state.corpus, self.state.documents["seen"])
        documents = [d for role in ROLES for d in self.state.documents[role]]
        pairs = [(m, seed) for m in self.plan.maskings for seed in self.config.seeds]
        self.bus.emit(StageStarted(stage="mask", total=len(pairs), description="masking documents"))
        for done, (masking, seed) in enumerate(pairs):
            self._check_cancel()
            try:
                self.state.items[(masking.spec, seed)] = prepare_items(documents, masking, seed)
            except (RunCancelled, KeyboardInterrupt):
                raise
            except Exception as exc:  # this masking's conditions (of this seed) fail; the others still run
                self.state.items[(masking.spec, seed)] = []
                self._fail([c for c in self.conditions if c.masking.spec == masking.spec and c.seed == seed],
                           masking, f"masking with seed {seed}", exc)
            self.bus.emit(Progress(stage="mask", completed=done + 1, total=len(pairs), info={"masking": masking.short_spec}))

    def _generate(self, cache: Any) -> None:
        from mlmh.cache import sample_key
        from mlmh.executors import InProcessExecutor
        from mlmh.implementation import engine_id, implementation_id

        engine = engine_id()
        keys: dict[tuple[str, str], str] = {}
        for condition in self.running:
            loaded = self.state.models[condition.model.spec]
            code = f"{implementation_id(condition.sampler)}|{engine}"
            for item in self.state.items[(condition.masking.spec, condition.seed)]:
                keys[(condition.id, item.doc_id)] = sample_key(
                    model=f"{condition.model.spec}@{loaded.identity}", tokenizer=_tokenizer_identity(loaded),
                    doc_id=item.doc_id, text=item.words.text, masked_words=item.plan.word_indices,
                    masking=condition.masking.spec, sampler=condition.sampler.spec, code=code, seed=item.seed)
        total = len(keys)
        self.bus.emit(StageStarted(stage="generate", total=total, description="generating"))
        cached = cache.get_many(keys.values())
        self._cache_notes(cache)
        found: dict[tuple[str, str], Generation] = {k: cached[key] for k, key in keys.items() if key in cached}
        completed = len(found)
        if found:
            self.bus.emit(Progress(stage="generate", completed=completed, total=total, info={"cached": len(found)}))
        running = {c.id for c in self.running}
        units = self._with_weights([u for u in self.plan.units(self.state.items, self.config.batch_size, skip=found)
                                    if u.condition in running])

        def done(unit: Any, batch: list[Generation]) -> None:
            nonlocal completed
            if unit.condition in self.log.failed:
                return
            cache.put_many({keys[(unit.condition, g.doc_id)]: g for g in batch})
            self._generated_any = True
            for g in batch:
                found[(unit.condition, g.doc_id)] = g
                self.bus.emit(SampleGenerated(condition=unit.condition, generation=g))
            completed += len(batch)
            self.bus.emit(Progress(stage="generate", completed=completed, total=total, info={"condition": unit.condition}))
            self._check_cancel()

        def failed(unit: Any, exc: BaseException | str) -> None:
            """A unit that raised (in this process, a worker or on Ray) or broke the contract: its
            condition fails under its sampler's name; the other conditions go on."""
            condition = self.plan.condition(unit.condition)
            self._fail([condition], condition.sampler, f"generating with model {condition.model.short_spec}", exc)

        executor = self.executor or InProcessExecutor(
            {spec: m.adapter for spec, m in self.state.models.items()}, {s.spec: s for s in self.plan.samplers})
        if units:
            executor.run(units, done, self.cancel, on_failed=failed)
        self._check_cancel()
        for condition in self.running:
            items = self.state.items[(condition.masking.spec, condition.seed)]
            self.state.generations[condition.id] = [found[(condition.id, item.doc_id)] for item in items]

    def _with_weights(self, units: list[Any]) -> list[Any]:
        """Read the deferred weights of each model with ``units`` to generate (the models stage read their
        tokenizers and configs only); a model whose weights fail to load fails its conditions as at loading,
        and their units are dropped."""
        for spec in dict.fromkeys(u.model for u in units):
            loaded = self.state.models[spec]
            load_weights = getattr(loaded.adapter, "load_weights", None)  # a plugin's own adapter may load eagerly
            if load_weights is None:
                continue
            try:
                load_weights()
            except (RunCancelled, KeyboardInterrupt):
                raise
            except Exception as exc:
                self._fail([c for c in self.conditions if c.model.spec == spec], loaded.component, "loading", exc)
        return [u for u in units if u.condition not in self.log.failed]

    def _score(self, cache: Any) -> None:
        from mlmh.cache import ResultLookup
        from mlmh.memorization import baseline_words, filler_generations, filler_word

        assert self.state.corpus is not None  # the data stage ran
        self.state.filler_word = filler_word(self.state.corpus.split("train"))
        baselines = baseline_words(self.state.filler_word)
        keys = list(self.state.items)
        roles = sum(1 for role in ROLES if self.state.documents.get(role))
        scoring = Scoring(ResultLookup(cache, MetricResult),
                          (len(self.conditions) + len(keys) * len(baselines)) * len(self.plan.metrics) * roles)
        self.bus.emit(StageStarted(stage="metrics", total=scoring.total, description="scoring"))
        # baseline name ("filler", "deletion": RoleQuality's fields) -> (masking, seed) -> role -> metric -> Score
        scored_baselines: dict[str, dict[tuple[str, int], dict[str, Any]]] = {}
        for name, word in baselines.items():
            for key in keys:
                generations = filler_generations(self.state.items[key], word)
                scored, raw = self._score_roles(generations, key[1], f"{name} baseline", scoring, filler=True)
                scored_baselines.setdefault(name, {})[key] = {role: block.metrics for role, block in scored.items()}
                self.state.baseline_results[(name, *key)] = (raw, generations)
        for condition in self.running:
            quality, headline = self._score_roles(self.state.generations[condition.id], condition.seed, condition.id,
                                                  scoring)
            key = (condition.masking.spec, condition.seed)  # each set's quality beside its baselines
            self.state.quality[condition.id] = {
                role: dataclasses.replace(block, **{name: by_key.get(key, {}).get(role, {})
                                                    for name, by_key in scored_baselines.items()})
                for role, block in quality.items()}
            self.state.metric_results[condition.id] = headline
        self._say_cached(scoring.lookup, "metrics")

    def _score_roles(self, generations: list[Generation], seed: int, what: str, scoring: Scoring, *,
                     filler: bool = False) -> tuple[dict[str, RoleQuality], list[MetricResult]]:
        """Quality of ``generations`` on each document set; also the headline set's raw results.

        The ``filler`` baseline has no step traces, so metrics that need one are left out of it quietly.
        """
        from mlmh.memorization import verbatim_recall

        out: dict[str, RoleQuality] = {}
        raw: dict[str, list[MetricResult]] = {}
        for role in ROLES:
            gens = [g for g in generations if self.state.role_of.get(g.doc_id) == role]
            if not gens:
                continue
            scorable = [g for g in gens if g.masked_words]
            results = self._metrics_of(scorable, seed, what, scoring, quiet=filler) if scorable else []
            if filler:
                results = [r for r in results if not r.error]
            out[role] = RoleQuality(
                documents=len(gens), scored=len(scorable), metrics={r.name: Score.of(r) for r in results},
                verbatim_recall=None if filler else verbatim_recall(scorable, seed=seed),
                nothing_masked=len(gens) - len(scorable), truncated_documents=sum(1 for g in gens if g.truncated_tokens))
            raw[role] = results
            if not scorable and not filler:
                self._note(f"{what}: nothing was masked in any {role} document, so its {role} quality is not "
                           "scored", "warning")
        return out, raw.get(self.state.headline, [])

    def _metrics_of(self, gens: list[Generation], seed: int, what: str, scoring: Scoring,
                    quiet: bool = False) -> list[MetricResult]:
        from mlmh.cache import content_digest
        from mlmh.components import ScoringItem

        items = [ScoringItem(prediction=g.text, reference=g.original, generation=g) for g in gens]
        digest = content_digest(items)
        results: list[MetricResult] = []
        for metric in self.plan.metrics:
            self._check_cancel()
            name = self.plan.describe(metric)
            key = self._result_key(scoring.lookup, metric, seed, digest)
            scored = scoring.lookup.get(key)
            if scored is None:
                from mlmh.contracts import score_metric

                # a failing metric, or one breaking its contract, is an error result; the others still score
                scored = score_metric(metric, items, seed=seed)
                scoring.lookup.put(key, scored)
            for result in scored:
                result.name = self.plan.metric_label(metric, result.name)
                if result.error and not quiet:
                    self._error(name, f"scoring {what}", result.error)
            results.extend(scored)
            scoring.done += 1
            self.bus.emit(Progress(stage="metrics", completed=scoring.done, total=scoring.total,
                                   info={"condition": what, "metric": metric.short_spec}))
        return results

    def _result_key(self, lookup: Any, component: Any, seed: int, digest: str) -> str | None:
        """The cache key of a metric's or task's result; a plugin whose cache_identity() fails is named
        and computes its results, uncached."""
        try:
            return lookup.key(component, seed, digest)
        except Exception as exc:
            self._error(self.plan.describe(component), "naming its cache identity (its results are not cached)", exc)
            return None

    def _cache_notes(self, cache: Any) -> None:
        """What the sample cache set aside as unreadable (it is computed again), said once each."""
        for note in cache.notes:
            self._note(note, "warning")

    def _say_cached(self, lookup: Any, stage: str) -> None:
        self._cache_notes(lookup.cache)
        summary = lookup.summary(stage)
        if summary:
            self.bus.emit(Message(level="info", text=summary))

    def _downstream(self, cache: Any) -> None:
        from mlmh.cache import ResultLookup

        lookup = ResultLookup(cache, TaskResult)
        corpus, train, test = self.state.corpus, self.state.train, self.state.test
        assert corpus is not None and train is not None and test is not None
        tasks = self.plan.tasks
        total = len(tasks) * (len(self.running) + 1)
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
            self.state.baseline[task.name] = dict(self._task_scores(task, train, test, seed, REAL_TRAIN, lookup))
            done += 1
            self.bus.emit(Progress(stage="downstream", completed=done, total=total, info={"task": task.name}))
        for condition in self.running:
            # only regenerations of seen (train) documents become training data; never a test document
            gens = {g.doc_id: g for g in self.state.generations[condition.id]
                    if self.state.role_of.get(g.doc_id) == "seen"}
            synthetic = synthetic_corpus(train, gens)
            scores = {}
            for task in tasks:
                self._check_cancel()
                scores[task.name] = self._task_scores(task, synthetic, test, condition.seed, condition.id,
                                                     lookup)
                done += 1
                self.bus.emit(Progress(stage="downstream", completed=done, total=total,
                                       info={"task": task.name, "condition": condition.id}))
            self.state.downstream[condition.id] = scores
        self._say_cached(lookup, "downstream")

    def _task_scores(self, task: Any, train: Corpus, test: Corpus, seed: int, what: str,
                     lookup: Any) -> dict[str, float]:
        from mlmh.cache import content_digest

        name = self.plan.describe(task)
        key = self._result_key(lookup, task, seed, content_digest([train, test]))
        kept = lookup.get(key)
        if kept is not None:
            result: TaskResult = kept[0]
        else:
            try:
                result = task.run(train, test, seed=seed)
            except Exception as exc:  # a failing task is reported by name; the rest of the run completes
                self._error(name, f"on {what}", exc)
                return {}
            from mlmh.contracts import task_problem

            problem = task_problem(result)
            if problem:
                self._error(name, f"on {what}", f"ContractError: {problem}")
                return {}
            lookup.put(key, [result])
        if result.error:
            self._error(name, f"on {what}", result.error)
            return {}
        self._keep_items(task.name, what, result)
        return {k: float(v) for k, v in result.scores.items()}

    def _keep_items(self, task: str, what: str, result: TaskResult) -> None:
        """Per-test-item scores a task reports (``info["per_item"]``, each averaging to its score) and, for the
        real-data baseline, the chance level of each (``info["chance"]``) as per-item values: claim 5's CI."""
        items = result.info.get("per_item") or {}
        if not items:
            return
        who = "real" if what == REAL_TRAIN else what
        self.state.task_items.setdefault(who, {})[task] = {k: [float(x) for x in v] for k, v in items.items()}
        chance = result.info.get("chance") or {}
        if who == "real":
            self.state.task_items.setdefault("chance", {})[task] = {
                k: [float(chance[k])] * len(v) for k, v in items.items() if isinstance(chance.get(k), (int, float))}

    def _correlate(self) -> None:
        """Quality of the synthetic corpus (seen regenerations) against its downstream usefulness."""
        self.bus.emit(StageStarted(stage="correlation", total=1, description="quality vs downstream"))
        rows = []
        for c in self.running:
            seen = self.state.quality[c.id].get("seen")
            rows.append({"condition": c.id, "metrics": {k: v.value for k, v in (seen.metrics if seen else {}).items()
                                                        if v.value is not None},
                         "downstream": self.state.downstream.get(c.id, {})})
        if any(row["downstream"] for row in rows):
            from mlmh.analysis import correlate

            self.state.correlations = correlate(rows, seed=self.config.seeds[0])
        self.bus.emit(Progress(stage="correlation", completed=1, total=1))


# -- helpers -------------------------------------------------------------------------------------
def _tokenizer_identity(loaded: LoadedModel) -> str:
    tokenizer = getattr(loaded.adapter, "tokenizer", None)
    if tokenizer is None:
        return ""
    return f"{type(tokenizer).__name__}:{len(tokenizer)}:{getattr(tokenizer, 'name_or_path', '')}"
