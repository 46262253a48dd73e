"""Executors: where a run plan's work units are generated.

The driver (the runner) alone decides what to generate, writes the sample cache and emits events; an
executor only turns work units into generations and hands each finished unit back through
``on_done(unit, generations)`` on the driver's thread, so the event bus, the cache and the results
are the same whichever executor ran.

- :class:`InProcessExecutor` (the default): the driver's own loaded models, one unit after another.
- :class:`LocalWorkersExecutor` (``--workers N``): N spawned processes on this machine.
- :class:`RayExecutor` (``--backend ray``): Ray tasks on a local Ray started on demand, or on the
  cluster at ``--ray-address``.

Executors are made from the driver's :class:`~mlmh.config.plan.RunPlan`; a worker process builds its own copy from
the plan's :class:`~mlmh.types.runconfig.RunConfig` through :func:`mlmh.config.plan.build_plan` (:class:`Worker`, once per
process) and loads each model once, from the model cache the driver filled in its models stage: a worker
never trains. Every executor
generates a unit through :func:`run_unit`, and every sample's randomness comes from its item's seed,
so results do not depend on the executor, on unit order, or on a worker dying and its units running again.
"""

from __future__ import annotations

import hashlib
import inspect
import os
import pickle
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol, Sequence

from mlmh.config.plan import RunPlan, WorkUnit
from mlmh.errors import MlmhError, ModelError, PluginError, SpecError
from mlmh.machine.devices import inference_threads
from mlmh.machine.worker_pool import FORWARDED_ENV
from mlmh.types import Generation

if TYPE_CHECKING:
    from mlmh.components import Sampler
    from mlmh.toolkit import Adapter
    from mlmh.types.runconfig import RunConfig

OnDone = Callable[[WorkUnit, list[Generation]], None]
#: called with a unit whose generation raised (the plugin's error, from any process); None re-raises it
OnFailed = Callable[[WorkUnit, BaseException], None] | None
BACKENDS = ("local", "ray")
#: times the units of a dead worker run again before the run stops (Ray: ``max_retries`` per task)
MAX_RETRIES = 3
#: seconds between looks at the cancel event while the workers generate
POLL_S = 0.2
RAY_MISSING = "--backend ray needs Ray: pip install 'mlmh[ray]'"


class Executor(Protocol):
    """Generates work units; calls ``on_done`` once per finished unit, or ``on_failed`` once per unit
    whose generation raised (a plugin's fault, contained to its unit), on the caller's thread."""

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event,
            on_failed: OnFailed = None) -> None: ...

    def close(self) -> None: ...


def run_unit(adapter: Adapter, sampler: Sampler, unit: WorkUnit) -> list[Generation]:
    """Generate one unit: the one generation call of every executor (one batch per unit)."""
    from mlmh.generation import generate

    return generate(adapter, sampler, list(unit.items), batch_size=max(1, len(unit.items)))


class InProcessExecutor:
    """Runs each unit with the driver's own adapters and samplers (``{spec: object}``)."""

    def __init__(self, adapters: dict[str, Any], samplers: dict[str, Any]) -> None:
        self.adapters = adapters
        self.samplers = samplers

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event,
            on_failed: OnFailed = None) -> None:
        for unit in units:
            if cancel.is_set():
                return
            adapter = self.adapters[unit.model]
            try:
                with inference_threads(getattr(adapter, "model", None)):
                    generations = run_unit(adapter, self.samplers[unit.sampler], unit)
            except Exception as exc:
                if on_failed is None:
                    raise
                on_failed(unit, exc)
                continue
            on_done(unit, generations)

    def close(self) -> None:
        return None


# -- the worker side -------------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkerSpec:
    """What a worker process needs to rebuild the driver's plan: plain data, so it pickles anywhere."""

    config: dict[str, Any]
    env: dict[str, str]
    sys_path: tuple[str, ...]
    plugin_modules: tuple[tuple[str, str], ...]  # (registered name, module) of plugins registered at run time
    plugin_objects: bytes  # pickled [(registered name, object)], loaded after sys.path is set
    threads: int
    key: str = field(default="", compare=False)


def worker_spec(config: "RunConfig", threads: int) -> WorkerSpec:
    """The driver's configuration, environment and run-time plugins, for :class:`Worker`."""
    from mlmh.machine.paths import cache_dir

    env = {k: v for k, v in os.environ.items() if k.startswith(FORWARDED_ENV)}
    env["MLMH_CACHE_DIR"] = str(cache_dir().resolve())  # the model cache the driver trained into
    modules, objects = _run_time_plugins()
    try:
        blob = pickle.dumps(objects)
    except Exception as exc:
        names = ", ".join(name for name, _ in objects)
        raise PluginError(f"plugin(s) {names} were registered in this process and cannot be sent to worker "
                          f"processes ({exc}); register a module or an entry point instead") from None
    data = {**config.to_dict(), "overridden": list(config.overridden)}
    key = hashlib.sha256(pickle.dumps((data, sorted(env.items()), modules, blob, threads))).hexdigest()[:16]
    path = tuple(os.path.abspath(p or os.curdir) for p in sys.path)  # a Ray worker runs in another directory
    return WorkerSpec(data, env, path, tuple(modules), blob, threads, key)


def _run_time_plugins() -> tuple[list[tuple[str, str]], list[tuple[str, Any]]]:
    """Plugins registered in this process by hand (neither builtin nor an entry point): a worker
    process registers the same, modules by import name and other objects by pickle."""
    from mlmh.plugins.plugin_manager import registered_by_hand

    modules, objects = [], []
    for name, plugin in registered_by_hand():
        if inspect.ismodule(plugin):
            modules.append((name, plugin.__name__))
        else:
            objects.append((name, plugin))
    return modules, objects


class Worker:
    """A worker process's copy of the run: the plan built once from the RunConfig, each model loaded
    on the first unit that needs it and kept for every later unit."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.spec = spec
        _enter(spec)
        from mlmh.config.plan import build_plan
        from mlmh.types.runconfig import RunConfig

        self.plan = build_plan(RunConfig.from_dict(spec.config))
        self.models = {m.spec: m for m in self.plan.models}
        self.samplers = {s.spec: s for s in self.plan.samplers}
        self.adapters: dict[str, Any] = {}
        self._corpus: Any = None

    def run(self, unit: WorkUnit) -> list[Generation]:
        return run_unit(self.adapter(unit.model), self.samplers[unit.sampler], unit)

    def adapter(self, spec: str) -> Any:
        if spec not in self.adapters:
            self.adapters[spec] = self._load(self.models[spec])
        return self.adapters[spec]

    def _load(self, model: Any) -> Any:
        from mlmh.config.plan import load_context
        from mlmh.machine.paths import models_dir
        from mlmh.storage.modelcache import ModelCache

        if self._corpus is None:  # the run's corpus, as the runner builds it: trained-* recipes hash it
            self._corpus = self.plan.load_corpus()
        context = load_context(self.plan.config, self._corpus)
        cache_name = getattr(model, "cache_name", None)
        if cache_name is not None and ModelCache().lookup(cache_name(context)) is None:
            raise ModelError(f"worker: model {model.short_spec} is not in the model cache {models_dir()}; the "
                             "driver trains every model before generating, so a worker on another machine needs "
                             "the same cache directory (a shared filesystem)")
        return model.load(context)


def _enter(spec: WorkerSpec) -> None:
    """Make this process look like the driver: environment, import path, threads, run-time plugins."""
    for key in [k for k in os.environ if k.startswith(FORWARDED_ENV) and k not in spec.env]:
        del os.environ[key]
    os.environ.update(spec.env)
    sys.path[:0] = [p for p in spec.sys_path if p not in sys.path]
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # read when torch is imported
        os.environ[var] = str(spec.threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(spec.threads)
    import importlib

    from mlmh.plugins import plugin_manager

    plugin_manager.reset()  # a reused process (Ray) may hold an earlier run's plugins
    pm = plugin_manager.get_plugin_manager()
    for name, module in spec.plugin_modules:
        pm.register(importlib.import_module(module), name=name)
    for name, plugin in pickle.loads(spec.plugin_objects):
        pm.register(plugin, name=name)


_worker: Worker | None = None


def work(spec: WorkerSpec, unit: WorkUnit) -> list[Generation]:
    """Run ``unit`` in this worker process, building its :class:`Worker` on first use (or for a new run)."""
    global _worker
    if _worker is None or _worker.spec.key != spec.key:
        _worker = None  # free the previous run's models first
        _worker = Worker(spec)
    return _worker.run(unit)


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


# -- N local processes -----------------------------------------------------------------------------
class LocalWorkersExecutor:
    """``workers`` spawned processes on this machine, each with ``cores // workers`` torch threads.

    A worker that dies breaks the pool: the units not yet finished run again on a fresh pool, at most
    :data:`MAX_RETRIES` times, then the run stops with an error.
    """

    def __init__(self, plan: RunPlan, workers: int, *, max_retries: int = MAX_RETRIES) -> None:
        if workers < 1:
            raise SpecError(f"--workers {workers}: expected 1 or more")
        self.workers = workers
        self.max_retries = max_retries
        self.spec = worker_spec(plan.config, threads=max(1, _cores() // workers))
        self._pool: Any = None

    def _new_pool(self) -> Any:
        from mlmh.machine.worker_pool import spawn_pool

        return spawn_pool(self.workers)

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event,
            on_failed: OnFailed = None) -> None:
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool

        todo, deaths = list(units), 0
        while todo and not cancel.is_set():
            if self._pool is None:
                self._pool = self._new_pool()
            futures = {self._pool.submit(work, self.spec, unit): unit for unit in todo}
            pending, todo, died = set(futures), [], None
            try:
                while pending and not cancel.is_set():
                    finished, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                    for future in finished:
                        try:
                            generations = future.result()
                        except BrokenProcessPool as exc:
                            died = exc
                            todo.append(futures[future])
                            continue
                        except Exception as exc:  # the unit's own error, raised in the worker
                            if on_failed is None:
                                raise
                            on_failed(futures[future], exc)
                            continue
                        on_done(futures[future], generations)
            except BaseException:
                self.close()
                raise
            if died is None:
                continue
            deaths += 1
            self.close()
            if deaths > self.max_retries:
                raise MlmhError(f"a worker process died {deaths} time(s) ({died}); {len(todo)} work unit(s) "
                                f"unfinished; try fewer --workers (out of memory?) or run in-process")
        if cancel.is_set():
            self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def __enter__(self) -> "LocalWorkersExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# -- Ray -------------------------------------------------------------------------------------------
def import_ray() -> Any:
    """Ray, or the one-line error saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SpecError(RAY_MISSING) from None
    return ray


def wants_gpu(model: Any, gpus_available: bool) -> bool:
    """Whether ``model`` runs on a GPU: a ``device`` of ``cuda...``, or ``auto`` where GPUs are."""
    device = str(model.params.get("device", "cpu")) if hasattr(model, "params") else "cpu"
    return device.startswith("cuda") or (device == "auto" and gpus_available)


class RayExecutor:
    """Ray tasks, one per unit (``max_retries``: a dead worker's units run again); each Ray worker
    process keeps its :class:`Worker`, so it loads each model once. A unit whose model is on a GPU
    asks Ray for one (``num_gpus``).

    Without ``address`` and with no Ray running, a local Ray with ``workers`` CPUs (default: all
    cores) is started here and shut down by :meth:`close`.
    """

    def __init__(self, plan: RunPlan, address: str | None = None, workers: int | None = None, *,
                 max_retries: int = MAX_RETRIES) -> None:
        ray = import_ray()
        self.ray = ray
        self._started = False
        if not ray.is_initialized():
            import logging

            options: dict[str, Any] = {"address": address or None, "log_to_driver": False,
                                       "logging_level": logging.WARNING}
            if not address:
                options.update(num_cpus=workers or _cores(), include_dashboard=False)
            ray.init(**options)
            self._started = True
        self.spec = worker_spec(plan.config, threads=1)  # one CPU per task: Ray sets OMP_NUM_THREADS=1 too
        self._spec_ref = ray.put(self.spec)
        gpus = ray.cluster_resources().get("GPU", 0) > 0
        self.gpu_models = {m.spec for m in plan.models if wants_gpu(m, gpus)}
        self._task = ray.remote(num_cpus=1, max_retries=max_retries)(work)

    def run(self, units: Sequence[WorkUnit], on_done: OnDone, cancel: threading.Event,
            on_failed: OnFailed = None) -> None:
        ray = self.ray
        refs = {}
        for unit in units:
            gpus = 1 if unit.model in self.gpu_models else 0
            refs[self._task.options(num_gpus=gpus).remote(self._spec_ref, unit)] = unit
        pending = list(refs)
        try:
            while pending and not cancel.is_set():
                ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_S)
                for ref in ready:
                    try:
                        generations = ray.get(ref)
                    except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                        raise MlmhError(f"a Ray worker died running {refs[ref].condition} and its retries ran out: "
                                        f"{type(exc).__name__}") from exc
                    except ray.exceptions.RayTaskError as exc:  # the unit's own error, as in-process
                        cause = getattr(exc, "cause", None)
                        error = cause if isinstance(cause, BaseException) else exc
                        if on_failed is None:
                            if error is exc:
                                raise
                            raise error from exc
                        on_failed(refs[ref], error)
                        continue
                    on_done(refs[ref], generations)
        finally:
            for ref in pending:
                ray.cancel(ref)

    def close(self) -> None:
        if self._started and self.ray.is_initialized():
            self.ray.shutdown()
        self._started = False

    def __enter__(self) -> "RayExecutor":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def make_executor(backend: str, workers: int, ray_address: str | None, plan: RunPlan) -> Executor | None:
    """The executor ``--backend`` / ``--workers`` / ``--ray-address`` ask for, for the run of ``plan``; None
    means in-process (the runner then generates with the models it loaded itself)."""
    if backend not in BACKENDS:
        raise SpecError(f"--backend {backend}: expected one of {', '.join(BACKENDS)}")
    if workers < 1:
        raise SpecError(f"--workers {workers}: expected 1 or more")
    if backend == "ray":
        return RayExecutor(plan, address=ray_address, workers=workers if workers > 1 else None)
    if ray_address:
        raise SpecError("--ray-address needs --backend ray")
    return LocalWorkersExecutor(plan, workers) if workers > 1 else None
