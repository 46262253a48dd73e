"""The experiment runner: one checked plan in, results.json + report out, events all the way.

Public API (the CLI, the TUI and the bench call these)::

    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve
    from mlmh.errors import RunCancelled
    from mlmh.run.runner import run_experiment

    plan = build_plan(resolve("quick", {"limit": 4}))   # checks the RunConfig: a RunPlan
    results = run_experiment(plan, listener=print,          # any callable taking a RunEvent
                             cancel=threading.Event(),      # set() it to stop between batches
                             output_path="runs/x", resume=False, use_cache=True)

``run_experiment`` takes only a checked plan (every path builds its plan once) and returns the typed
results (:class:`~mlmh.types.RunResults`): each stage is a function of :mod:`mlmh.run` whose arguments are what
it needs and whose value is what it makes, and results.json is their serialisation, written once, atomically
(:class:`~mlmh.storage.rundir.RunDir`). It raises :class:`~mlmh.errors.RunCancelled` when ``cancel`` is set and
:class:`~mlmh.errors.MlmhError` subclasses on bad input.
"""

from __future__ import annotations

import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, TypeVar

from mlmh.config.plan import RunPlan, expect_plan
from mlmh.config.presets import saved
from mlmh.errors import MlmhError, RunCancelled, SpecError
from mlmh.events import EventBus, Listener, Progress, RunFinished, RunStarted, StageFinished, StageStarted
from mlmh.machine.paths import samples_db
from mlmh.run.context import RunContext
from mlmh.run.correlate import correlate
from mlmh.run.data import RunData, load_data
from mlmh.run.downstream import run_tasks
from mlmh.run.executors import Executor
from mlmh.run.files import write_run
from mlmh.run.generate import generate
from mlmh.run.mask import mask_documents
from mlmh.run.models import load_models
from mlmh.run.results import BuiltResults, build_results, versions
from mlmh.run.score import Scores, score
from mlmh.storage.cache import SampleCache
from mlmh.storage.rundir import RunDir, RunDirError, new_run_path
from mlmh.types import Generation, RunResults

if TYPE_CHECKING:
    from mlmh.report.plots import FigureStore

T = TypeVar("T")


def run_experiment(plan: RunPlan, listener: Listener | None = None, cancel: threading.Event | None = None,
                   *, output_path: str | Path | None = None, resume: bool = False, use_cache: bool = True,
                   cache_path: str | Path | None = None, executor: Executor | None = None) -> RunResults:
    """Run every condition of ``plan`` (:func:`mlmh.config.plan.build_plan`) and write results.json, report.md and
    plots to ``output_path``.

    ``executor`` generates the work units (default: in this process; see :mod:`mlmh.run.executors`).
    """
    expect_plan(plan, "run_experiment")
    out = Path(output_path) if output_path else new_run_path(plan.config.preset)
    runner = Runner(plan, EventBus(listener), cancel or threading.Event(), out, resume=resume,
                    use_cache=use_cache, cache_path=cache_path, executor=executor)
    return runner.run()


class Runner:
    """One run of a plan in its run directory.

    Stages: data -> models (train on first use) -> mask -> generate -> metrics -> downstream -> correlation
    -> report. The grid is models x maskings x samplers x seeds; a sampler that cannot drive a model's kind is
    skipped with a note. Generations are cached per sample as each batch finishes, and the results of metrics
    and tasks per input (:mod:`mlmh.storage.cache`), so a killed run resumes where it stopped; every sample's randomness
    comes from :mod:`mlmh.machine.seeding`, so results do not depend on batch size or on what was cached.
    """

    def __init__(self, plan: RunPlan, bus: EventBus, cancel: threading.Event, out: Path, *, resume: bool,
                 use_cache: bool, cache_path: str | Path | None, executor: Executor | None = None) -> None:
        self.plan = plan
        self.out = out
        self.run_dir = RunDir(out)
        self.resume = resume
        self.use_cache = use_cache
        self.cache_path = cache_path
        self.executor = executor
        self.ctx = RunContext(bus, cancel, self.resume_hint())

    def run(self) -> RunResults:
        """data -> models (train on first use) -> mask -> generate -> metrics -> downstream -> correlation ->
        report: each stage a function of what the stages before it made (:mod:`mlmh.run`), run once the run is not
        cancelled, and timed."""
        started = time.time()
        plan, ctx = self.plan, self.ctx
        with self._run_directory():
            self._start()
            with closing(self._open_cache()) as cache:
                data = self._stage("data", lambda: load_data(plan, ctx))
                models = self._stage("models", lambda: load_models(plan, data.corpus, ctx))
                masked = self._stage("mask", lambda: mask_documents(plan, data, models, ctx))
                generations = self._stage("generate", lambda: generate(plan, masked.items, models, cache,
                                                                       self.executor, ctx))
                scores = self._stage("metrics", lambda: score(plan, data, masked, generations, cache, ctx))
                tasks = self._stage("downstream", lambda: run_tasks(plan, data, masked.train, generations, cache, ctx))
                correlations = self._stage("correlation", lambda: correlate(
                    ctx.running(plan.conditions), scores.quality, tasks.conditions, plan.config.seeds[0], ctx))
                ctx.log.timings["total"] = round(time.time() - started, 3)
                results = self._results(build_results(
                    plan, run_id=self.out.name, data=data, models=models, masked=masked, generations=generations,
                    scores=scores, tasks=tasks, correlations=correlations, log=ctx.log, started=started,
                    versions=versions(), cache=cache))
                self._stage("report", lambda: self._write(results, data, generations, scores, cache))
            ctx.bus.emit(RunFinished(output_path=str(self.out), results=results, seconds=time.time() - started))
        return results

    def _start(self) -> None:
        self.ctx.bus.emit(RunStarted(run_id=self.out.name, config=self.plan.config.to_dict(),
                                     n_conditions=len(self.plan.conditions), output_path=str(self.out)))
        for warning in self.plan.warnings:
            self.ctx.note(warning, "warning")
        if self.run_dir.took_over is not None:  # a writer killed before it could release the lock
            self.ctx.note(f"run {self.out}: took over the lock of process {self.run_dir.took_over}, which ended "
                          "without releasing it", "warning")

    def _stage(self, name: str, body: Callable[[], T]) -> T:
        """One stage, timed, once the run is not cancelled."""
        self.ctx.check_cancel()
        t0 = time.time()
        made = body()
        seconds = time.time() - t0
        self.ctx.log.timings[name] = round(seconds, 3)
        self.ctx.bus.emit(StageFinished(stage=name, seconds=seconds))
        return made

    def _results(self, built: BuiltResults) -> RunResults:
        """The built results, once what building them found is said, in order."""
        for event in built.said:
            self.ctx.bus.emit(event)
        return built.results

    def _write(self, results: RunResults, data: RunData, generations: Mapping[str, list[Generation]], scores: Scores,
               figures: FigureStore) -> None:
        """The report stage: the run's files, results.json last."""
        self.ctx.bus.emit(StageStarted(stage="report", total=1, description="writing results, report and plots"))
        write_run(self.run_dir, results, self.plan.conditions, generations, data.role_of, scores.headline,
                  log_samples=self.plan.config.log_samples, figures=figures)
        self.ctx.bus.emit(Progress(stage="report", completed=1, total=1))

    def resume_hint(self) -> str:
        """The command that continues this run (with --no-cache when its cache is the run directory's own)."""
        private = not self.use_cache and not self.cache_path
        return f"mlmh eval --resume --output-path {self.out}" + (" --no-cache" if private else "")

    # -- the run directory and its cache -------------------------------------------------------
    @contextmanager
    def _run_directory(self) -> Iterator[None]:
        """Start (or resume) the run in its directory; a run that fails on its input before generating anything
        leaves nothing behind, and one whose files could not be written says how to continue."""
        self.ctx.bus.trackers = self.plan.trackers
        try:
            self._prepare_output()  # takes the run's lock: this process alone writes the run until it ends
            try:
                yield
            except RunDirError as exc:  # a run file could not be written (a full disk): what is done stays
                raise RunDirError(f"{exc}; continue with `{self.resume_hint()}`") from None
            except MlmhError as exc:
                if not isinstance(exc, RunCancelled):
                    self._forget_if_nothing_generated()
                raise
        finally:
            self.run_dir.unlock()

    def _prepare_output(self) -> None:
        config = self.plan.config
        record = {"config": config.to_dict(), "experiment": config.experiment()}
        if self.resume:
            self.run_dir.resume()
            changed = saved(self.run_dir).changed(config)
            if changed:
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
        if not self.ctx.log.generated and not self.run_dir.finished:
            self.run_dir.forget()

    def _open_cache(self) -> SampleCache:
        if self.cache_path:
            return SampleCache(self.cache_path)
        # --no-cache: a private cache in the run directory, so the run is still resumable
        return SampleCache(samples_db() if self.use_cache else self.run_dir.private_cache_path())
