"""Training the trained-* models of a run at once, one spawned process per model, before they are loaded.

A cold preset trains three tiny models (the paper preset three pretrained starts beside them); each one trains
on a single torch thread (:func:`mlmh.training.loop.default_threads`), so on a machine with two or more cores they can
train side by side. Every child trains with the thread count the model would have alone, so its weights and card equal
a sequential training's, and writes the model cache through the same :meth:`TrainingJob.ensure` as the
sequential path (the cache's per-key lock keeps concurrent runs from training one model twice). The
children's progress (start, steps with their loss, finish) reaches the driver's progress callbacks. A
child ends with its driver (:func:`mlmh.machine.worker_pool.exit_with_parent`): a driver killed with SIGKILL
leaves a ``.partial-`` directory, never a training that runs on for nobody.
"""

from __future__ import annotations

import dataclasses
import json
import os
import queue as queue_module
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

#: seconds between two step events a child forwards (evaluations, start and finish are always sent)
STEP_EVENT_S = 0.5
#: seconds between looks at the children while waiting (cancel and crashed children are noticed here)
POLL_S = 0.2
#: at most this many one-thread trainings per core at once (bounds memory; more gains nothing)
OVERSUBSCRIBE = 2

ProgressFn = Callable[[dict[str, Any]], None]


@dataclass
class TrainingJob:
    """Everything one trained-* model's weights depend on, plain data so that it pickles to a child."""

    key: str  # directory name in the model cache
    root: str  # the model cache's root
    texts: list[str]
    validation_texts: list[str]
    config: Any  # mlmh.training.config.TrainingConfig
    dataset: str
    data_digest: str
    test_texts: list[str] = field(default_factory=list)  # what the card's held-out accuracy is measured on
    label: str = field(default="", compare=False)  # the model's short spec, for progress and errors
    validation_holds: str = field(default="", compare=False)  # what validation holds, for the card
    previews: str = field(default="", compare=False)  # a folder for its previews (mlmh.training.previews); "" = none

    def cached(self) -> bool:
        from mlmh.storage.modelcache import ModelCache

        return ModelCache(Path(self.root)).lookup(self.key) is not None

    def threads(self) -> int:
        """Torch threads this model trains with, alone or beside others (the weights depend on them)."""
        from mlmh.training.loop import default_threads

        return default_threads(self.config)

    def ensure(self, progress: ProgressFn | None = None) -> tuple[Path, bool]:
        """The cached model, trained into the cache first on a miss: ``(path, built)``."""
        from mlmh.storage.modelcache import ModelCache, ensure_free_space
        from mlmh.training.loop import estimated_bytes, train
        from mlmh.training.previews import Previews

        cache = ModelCache(Path(self.root))

        def build(tmp: Path) -> None:
            ensure_free_space(cache.root, estimated_bytes(self.config))
            train(self.texts, self.config, tmp, validation_texts=self.validation_texts, dataset=self.dataset,
                  data_digest=self.data_digest, progress=progress, threads=self.threads(),
                  validation_holds=self.validation_holds, test_texts=self.test_texts,
                  checkpoint=Previews(self.previews) if self.previews else None)

        return cache.get_or_build(self.key, build)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def parallel_slots(jobs: Sequence[TrainingJob], cores: int | None = None) -> int:
    """How many of ``jobs`` train at once, each on the threads it would use alone: 1 when two do not fit
    the cores; else all of them, up to twice the cores (three one-thread models on two cores finish in
    about 1.5 trainings' time side by side, in 2 as two then one)."""
    cores = cores or _cores()
    widest = max((job.threads() for job in jobs), default=1)
    if cores // widest < 2:
        return 1
    return min(len(jobs), OVERSUBSCRIBE * cores // widest)


def train_missing(models: Sequence[Any], context_for: Callable[[Any], Any], *, cores: int | None = None,
                  previews: str | os.PathLike[str] | None = None) -> list[str]:
    """Train the models of ``models`` that are not cached yet, several at once, before they are loaded.

    ``context_for(model)`` gives the model's ``LoadContext`` (its ``progress`` receives that model's
    training events). Models that take every core (a pretrained start) are left to the sequential load; the
    others train side by side. Does nothing when fewer than two of them need training or only one fits the cores;
    the caller's sequential load then trains them. A child that fails is left to that load too, which
    trains the model again in the driver and raises its error there. Returns the labels trained here.

    With ``previews`` (a folder), each child saves previews of its model into a folder of its own there (its cache
    key's name; :mod:`mlmh.training.previews`) and says so in its progress events (``preview``), and a model trains in
    a child also alone, or one after another where two do not fit the cores.
    """
    pending: list[tuple[TrainingJob, ProgressFn | None]] = []
    for model in models:
        job_of = getattr(model, "training_job", None)
        if job_of is None:
            continue
        context = context_for(model)
        job = job_of(context)
        if previews is not None:
            job = dataclasses.replace(job, previews=str(Path(previews) / job.key))
        if not job.cached() and job.threads() < (cores or _cores()):
            pending.append((job, context.progress))  # a model that takes every core trains alone, in the load
    if len(pending) < (1 if previews is not None else 2):
        return []
    slots = parallel_slots([job for job, _ in pending], cores)
    if slots < 2 and previews is None:
        return []
    return _run_children(pending, slots)


def _child_environment() -> tuple[dict[str, str], list[str]]:
    """The driver's mlmh / Hugging Face settings (cache dir pinned) and import path, for the children."""
    from mlmh.machine.paths import cache_dir
    from mlmh.machine.worker_pool import FORWARDED_ENV

    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
    env["MLMH_CACHE_DIR"] = str(cache_dir().resolve())
    return env, [os.path.abspath(p or os.curdir) for p in sys.path]


def _run_children(pending: list[tuple[TrainingJob, ProgressFn | None]], slots: int) -> list[str]:
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    events = context.Queue()
    env, path = _child_environment()
    waiting = list(enumerate(pending))
    running: dict[int, Any] = {}
    finished: list[str] = []
    try:
        while waiting or running:
            while waiting and len(running) < slots:
                index, (job, _) = waiting.pop(0)
                child = context.Process(target=_child_main, args=(index, job, env, path, events, os.getpid()),
                                        name=f"mlmh-train-{job.label or job.key}", daemon=True)
                child.start()
                running[index] = child
            try:
                index, kind, payload = events.get(timeout=POLL_S)
            except queue_module.Empty:
                for index, child in list(running.items()):
                    if not child.is_alive() and events.empty():  # died without a word (killed, out of memory)
                        child.join()
                        del running[index]
                continue
            job, progress = pending[index]
            if kind in ("done", "failed"):
                running.pop(index).join()
                if kind == "done":
                    finished.append(job.label or job.key)
            if progress is not None:
                progress(payload)  # may raise RunCancelled: the finally below stops the children
    finally:
        for child in running.values():
            child.terminate()  # an unfinished entry stays a .partial- directory, never a model
        for child in running.values():
            child.join()
        events.close()
    return finished


def _child_main(index: int, job: TrainingJob, env: dict[str, str], path: list[str], events: Any, driver: int) -> None:
    """A child process: the driver's environment, one thread per its share, then ``job.ensure``; it ends
    when the ``driver`` process is gone."""
    from mlmh.machine.worker_pool import FORWARDED_ENV, exit_with_parent
    from mlmh.plugins.contracts import describe_error
    from mlmh.storage.modelcache import CARD_NAME

    exit_with_parent(driver)

    for key in [k for k in os.environ if k.startswith(FORWARDED_ENV) and k not in env]:
        del os.environ[key]
    os.environ.update(env)
    sys.path[:0] = [p for p in path if p not in sys.path]
    threads = str(job.threads())
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # read when torch is imported
        os.environ[var] = threads
    started = time.perf_counter()
    last = [0.0]

    def forward(event: dict[str, Any]) -> None:
        now = time.perf_counter()
        if "validation_loss" in event or event.get("step") == event.get("total") or now - last[0] >= STEP_EVENT_S:
            last[0] = now
            events.put((index, "progress", event))

    events.put((index, "progress", {"stage": "train", "state": "started", "step": 0, "total": None}))
    try:
        folder, built = job.ensure(forward)
        card = json.loads((folder / CARD_NAME).read_text(encoding="utf-8"))
    except BaseException as exc:  # reported; the driver's own load trains it again and raises there
        events.put((index, "failed", {"stage": "train", "state": "failed", "error": describe_error(exc)}))
        return
    steps = card.get("steps_run", 0)
    events.put((index, "done", {"stage": "train", "state": "finished" if built else "cached", "step": steps,
                                "total": steps, "loss": card.get("final_loss"),
                                "seconds": round(time.perf_counter() - started, 2)}))
