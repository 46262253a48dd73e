"""The Python API: what ``mlmh eval`` and ``mlmh generate`` do, as functions for notebooks and scripts.

The two commands are thin faces over this module (they add flags, progress bars and printing), so a
call here and the command with the same configuration run the same code and give the same results::

    import mlmh

    results = mlmh.evaluate("quick", limit=4)          # a typed mlmh.types.RunResults
    generation = mlmh.generate("The cat sat on the mat.", model="trained-mlm")

docs/API.md is the guide; each function's docstring has an example that the tests run.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from mlmh import options
from mlmh.errors import SpecError

if TYPE_CHECKING:
    from mlmh.components import Model
    from mlmh.executors import Executor
    from mlmh.toolkit import Adapter
    from mlmh.config import RunConfig
    from mlmh.events import Listener
    from mlmh.plan import RunPlan
    from mlmh.types import Document, Generation, RunResults

#: the dataset a trained-* model learns from when it regenerates a given text and its spec names no dataset
TEXT_TRAINING_DATASET = "pan"


# -- evaluate ---------------------------------------------------------------------------------------
def evaluate(preset: str | None = "quick", *, progress: "Listener | None" = None, output_path: str | Path | None = None,
             resume: bool = False, use_cache: bool = True, workers: int = 1, backend: str = "local",
             ray_address: str | None = None, cancel: threading.Event | None = None, **overrides: Any) -> "RunResults":
    """Run an experiment, as ``mlmh eval`` does, and return its typed results.

    ``preset`` is a preset name (``mlmh ls presets``) or a TOML file; ``overrides`` take the keys a preset
    has (``dataset``, ``data``, ``models``, ``maskings``, ``samplers``, ``metrics``, ``tasks``, ``trackers``,
    ``seeds``, ``limit``, ``batch_size``, ``log_samples``: the run options :class:`mlmh.runconfig.RunConfig`
    declares) and replace the preset's values: a list, or one spec as a string. ``progress`` receives every event of the run (:mod:`mlmh.events`); ``output_path`` is the run
    directory (default ``runs/<timestamp>-<preset>/``), which gets results.json, report.md and plots as
    with the command. ``resume=True`` continues an interrupted run (with ``preset=None`` and an
    ``output_path``: as that run was configured); ``use_cache=False`` is ``--no-cache``; ``workers``,
    ``backend`` and ``ray_address`` are the command's options; setting ``cancel`` stops the run between
    batches (:class:`mlmh.runner.RunCancelled`).

    Bad input raises :class:`mlmh.errors.SpecError` or :class:`~mlmh.errors.DataError` with the one-line
    message the command prints.

    >>> import mlmh
    >>> results = mlmh.evaluate("quick", limit=2, maskings="random:ratio=0.3", tasks=[],
    ...                         models=["trained-mlm:size=tiny,max_steps=3", "trained-clm:size=tiny,max_steps=3"],
    ...                         output_path="runs/doctest")
    >>> [(row.model_kind, row.sampler) for row in results.conditions]
    [('mlm', 'one-shot'), ('mlm', 'mask-predict:steps=4'), ('clm', 'clm-infill')]
    >>> results.headline, results.conditions[0].unseen.documents
    ('unseen', 2)
    """
    _check_run_arguments(progress=progress, resume=resume, use_cache=use_cache, workers=workers, backend=backend,
                         ray_address=ray_address, cancel=cancel)
    checked = plan(preset, overrides, resume=resume, output_path=output_path)
    out = place_run(checked, output_path, resume=resume)
    return run(checked, out, progress=progress, resume=resume, use_cache=use_cache, workers=workers,
               backend=backend, ray_address=ray_address, cancel=cancel)


def plan(preset: str | None, overrides: dict[str, Any] | None = None, *, resume: bool = False,
         output_path: str | Path | None = None, sweep_epochs: str | None = None,
         sweep_tokens: str | None = None) -> "RunPlan":
    """The checked plan of a run: ``preset`` with ``overrides`` (keys left None are not set), or, to resume a run
    directory with no preset named, the configuration that run saved. ``sweep_epochs`` and ``sweep_tokens``
    ("1,2,4", "8000,16000") expand every trained-mlm / trained-clm into a data-constrained sweep
    (:func:`mlmh.crossover.expand_models`). Building the plan (:func:`mlmh.plan.build_plan`) is the check, and
    it is the plan :func:`run` runs, so a run builds its components once (a sweep included)."""
    from mlmh.config import resolve
    from mlmh.plan import build_components, build_plan
    from mlmh.registry import get_registry
    from mlmh.rundir import RunDir

    preset = options.check_path(preset, "preset")
    output_path = options.check_path(output_path, "output_path")
    options.check_flag(resume, "resume")
    options.check_text(sweep_epochs, "sweep_epochs", optional=True, empty=True)  # empty: parse_axis says what
    options.check_text(sweep_tokens, "sweep_tokens", optional=True, empty=True)
    if overrides is not None and not isinstance(overrides, dict):
        raise SpecError(f"overrides {overrides!r}: expected a dict of preset keys, or None")
    overrides = dict(overrides or {})
    if resume and output_path and not preset:  # the run directory knows its own configuration
        given = sorted(k for k, v in overrides.items() if v is not None)
        given += [flag for flag, v in (("--sweep-epochs", sweep_epochs), ("--sweep-tokens", sweep_tokens)) if v is not None]
        if given:
            raise SpecError(f"--resume continues {output_path} as it was configured; drop {', '.join(given)}")
        return build_plan(RunDir(output_path).saved_config())
    if not preset:
        names = ", ".join(get_registry().names("preset"))
        raise SpecError(f"pass --preset NAME (one of: {names}) or --preset FILE.toml")
    config = resolve(preset, overrides)
    if sweep_epochs is not None or sweep_tokens is not None:
        from mlmh.crossover import expand_models, parse_axis
        from mlmh.declared import swept_models
        from mlmh.params import parse_spec

        build_components(config, "models")  # the preset's own models are checked before the sweep expands them
        epochs = parse_axis(sweep_epochs, float, "--sweep-epochs")
        tokens = parse_axis(sweep_tokens, int, "--sweep-tokens")
        swept = swept_models()
        if not any(parse_spec(spec)[0] in swept for spec in config.models):
            flags = " and ".join(f for f, v in (("--sweep-epochs", sweep_epochs), ("--sweep-tokens", sweep_tokens))
                                 if v is not None)
            raise SpecError(f"{flags}: the run has no {' or '.join(swept)} model to sweep (models: "
                            f"{', '.join(config.models) or 'none'})")
        config.models = expand_models(config.models, epochs=epochs, tokens=tokens)
        config.overridden = sorted({*config.overridden, "models"})
    return build_plan(config)


def place_run(checked: "RunPlan", output_path: str | Path | None = None, *, resume: bool = False) -> Path:
    """The last checks before anything is made, then where the run writes: checkpoints the offline hub lacks
    are refused in one line (:meth:`mlmh.plan.RunPlan.require_checkpoints`) before :func:`run_directory`
    places the run. Every face calls it between its plan and its run: :func:`evaluate`, ``mlmh eval`` and the
    TUI's run screen."""
    from mlmh.plan import expect_plan

    expect_plan(checked, "mlmh.api.place_run: checked")
    checked.require_checkpoints()
    return run_directory(checked.config, output_path, resume=resume)


def run_directory(config: "RunConfig", output_path: str | Path | None, *, resume: bool = False) -> Path:
    """Where the run writes: ``output_path``; else, resuming, the newest unfinished run of the preset;
    else a new ``runs/<timestamp>-<preset>/`` (the names are :mod:`mlmh.rundir`'s)."""
    from mlmh.config import RunConfig
    from mlmh.rundir import latest_unfinished, new_run_path

    options.check_instance(config, "config", RunConfig, "a RunConfig (mlmh.config.resolve(preset))")
    output_path = options.check_path(output_path, "output_path")
    options.check_flag(resume, "resume")
    if output_path:
        return Path(output_path)
    if resume:
        found = latest_unfinished(config.preset)
        if found is None:
            raise SpecError(f"--resume: no unfinished run of preset '{config.preset}' under runs/; pass --output-path")
        return found
    return new_run_path(config.preset)


def run(checked: "RunPlan", out: Path, *, progress: "Listener | None" = None, resume: bool = False,
        use_cache: bool = True, workers: int = 1, backend: str = "local", ray_address: str | None = None,
        cancel: threading.Event | None = None, executor: "Executor | None" = None) -> "RunResults":
    """Run the plan :func:`plan` checked into ``out`` (so the run builds its components once) on the executor
    ``backend``/``workers`` ask for, or on ``executor`` when one is given already made (checked before any
    progress display starts); closed afterwards."""
    from mlmh.executors import make_executor
    from mlmh.plan import expect_plan
    from mlmh.runner import run_experiment

    expect_plan(checked, "mlmh.api.run: checked")
    out = Path(options.check_path(out, "out", optional=False))  # type: ignore[arg-type]  # optional=False: never None
    _check_run_arguments(progress=progress, resume=resume, use_cache=use_cache, workers=workers, backend=backend,
                         ray_address=ray_address, cancel=cancel)
    options.check_has(executor, "executor", ("run", "close"), "an executor (mlmh.executors.make_executor)",
                      optional=True)
    if executor is None:
        executor = make_executor(backend, workers, ray_address, checked)
    try:
        return run_experiment(checked, progress, cancel, output_path=out, resume=resume, use_cache=use_cache,
                              executor=executor)
    finally:
        if executor is not None:
            executor.close()


def _check_run_arguments(*, progress: Any, resume: Any, use_cache: Any, workers: Any, backend: Any,
                         ray_address: Any, cancel: Any) -> None:
    """The run's arguments by the rules of ``mlmh eval``'s flags (:mod:`mlmh.options`), before any folder is made."""
    from mlmh.executors import BACKENDS

    options.check_callable(progress, "progress")
    options.check_flag(resume, "resume")
    options.check_flag(use_cache, "use_cache")
    options.check_number(workers, "workers", options.WORKERS)
    options.check_choice(backend, "backend", BACKENDS)
    options.check_text(ray_address, "ray_address", optional=True)
    options.check_cancel(cancel, "cancel")


def _check_generate_arguments(*, seed: Any, progress: Any) -> None:
    """``seed`` and ``progress`` of the generate functions, by ``mlmh generate``'s rules."""
    options.check_number(seed, "seed", options.SEED)
    options.check_callable(progress, "progress")


# -- generate ---------------------------------------------------------------------------------------
def generate(text: str, *, model: str, masking: str = "random:ratio=0.15", sampler: str | None = None, seed: int = 0,
             progress: Callable[[dict[str, Any]], None] | None = None) -> "Generation":
    """Mask ``text`` and regenerate the masked words with one model and sampler, as
    ``mlmh generate --text`` does; returns the :class:`~mlmh.types.Generation` with every step.

    ``model``, ``masking`` and ``sampler`` are specs (``mlmh ls models``); ``sampler`` defaults by the
    model's kind. ``seed`` fixes the mask and the sampling, as a run's seed does. A trained-* model that
    names no ``dataset=`` trains on the bundled ``pan`` sample (once; cached). ``progress`` receives that
    training's progress (``{"step", "total", "loss"}``) and notes (``{"note": text}``).

    >>> import mlmh
    >>> generation = mlmh.generate("The cat sat on the mat and looked at the door.",
    ...                            model="trained-mlm:size=tiny,max_steps=3", masking="random:ratio=0.3",
    ...                            sampler="mask-predict:steps=2", seed=1)
    >>> generation.masked_text
    'The [MASK] sat [MASK] the mat and [MASK] [MASK] the door.'
    >>> len(generation.steps), generation.masked_words
    (2, [1, 3, 7, 8])
    """
    from mlmh.types import Document

    options.check_text(text, "text")
    _check_generate_arguments(seed=seed, progress=progress)
    built = _components(model, masking, sampler)
    return _regenerate(built, [Document(id="text", text=text)], dataset=None, data=None, seed=seed, batch_size=1,
                       progress=progress)[0]


def generate_from_dataset(dataset: str, *, model: str, data: str | None = None, limit: int = 1,
                          masking: str = "random:ratio=0.15", sampler: str | None = None, seed: int = 0,
                          batch_size: int = 8, progress: Callable[[dict[str, Any]], None] | None = None) -> list["Generation"]:
    """Regenerate the first ``limit`` documents of ``dataset`` (its test split first), as
    ``mlmh generate --dataset`` does; ``data`` is the dataset's files (default: its bundled sample).

    >>> import mlmh
    >>> generations = mlmh.generate_from_dataset("pan", model="trained-clm:size=tiny,max_steps=3",
    ...                                          masking="stopwords", limit=2)
    >>> len(generations), generations[0].model_kind, generations[0].sampler.split(":")[0]
    (2, 'clm', 'clm-infill')
    """
    from mlmh.options import build_spec

    options.check_text(dataset, "dataset")
    data = options.check_path(data, "data", left_out="for the bundled sample")
    options.check_number(limit, "limit", options.COUNT)
    options.check_number(batch_size, "batch_size", options.BATCH_SIZE)
    _check_generate_arguments(seed=seed, progress=progress)
    built = _components(model, masking, sampler)  # bad specs fail before the corpus loads
    corpus = build_spec("dataset", dataset, "--dataset").load(data)
    documents = (corpus.split("test") or corpus.documents)[:limit]
    return _regenerate(built, documents, dataset=dataset, data=data, corpus=corpus, seed=seed, batch_size=batch_size,
                       progress=progress)


def compare(text: str, sides: Sequence[tuple[str, str]], *, masking: str = "random:ratio=0.15", seed: int = 0,
            dataset: str = TEXT_TRAINING_DATASET, load: "Callable[[Model], Adapter] | None" = None,
            on_generation: "Callable[[int, Generation], object] | None" = None,
            cancel: threading.Event | None = None) -> list["Generation"]:
    """Mask ``text`` once and let each ``(model, sampler)`` spec pair of ``sides`` regenerate the same masked
    words, in order, as the TUI playground does; ``on_generation(side, generation)`` hears each as it ends.

    ``load(model)`` returns a built model's adapter (default: the model loads, a trained-* one training on
    ``dataset``); the playground's keeps models between calls and shows their training. A set ``cancel``
    stops before the next side (:class:`mlmh.runner.RunCancelled`).

    >>> import mlmh.api
    >>> left, right = mlmh.api.compare("The cat sat on the mat and looked at the door.",
    ...                                [("trained-mlm:size=tiny,max_steps=3", "one-shot"),
    ...                                 ("trained-clm:size=tiny,max_steps=3", "clm-infill")],
    ...                                masking="random:ratio=0.3", seed=1)
    >>> left.masked_words == right.masked_words, left.model_kind, right.model_kind
    (True, 'mlm', 'clm')
    """
    from mlmh.components import LoadContext
    from mlmh.generation import fit_to_windows, generate as run_generation, prepare_items
    from mlmh.registry import get_registry
    from mlmh.runner import RunCancelled
    from mlmh.types import Document

    if isinstance(text, str) and not text.strip():
        raise SpecError("the text is empty: type or pick a text first")
    options.check_text(text, "text")
    sides = options.check_pairs(sides, "sides", "(model spec, sampler spec)")
    options.check_text(masking, "masking")
    options.check_number(seed, "seed", options.SEED)
    options.check_text(dataset, "dataset")
    options.check_callable(load, "load")
    options.check_callable(on_generation, "on_generation")
    options.check_cancel(cancel, "cancel")
    registry = get_registry()
    built_masking = registry.build("masking", masking)
    samplers = [registry.build("sampler", sampler) for _, sampler in sides]
    items = prepare_items([Document(id="playground", text=text, split="test")], built_masking, seed=seed)
    if not items or not items[0].plan.word_indices:
        raise SpecError(f"masking '{built_masking.short_spec}' hid no word of this text; raise the ratio or pick "
                        "another masking")
    load = load or (lambda model: model.load(LoadContext(dataset=dataset)))
    adapters = []
    for model_spec, _ in sides:
        if cancel is not None and cancel.is_set():
            raise RunCancelled("regeneration cancelled")
        adapters.append(load(registry.build("model", model_spec)))
    # cut to every side's window as a run cuts its documents, so each masked word is one every model writes
    documents, cut = fit_to_windows([Document(id="playground", text=text, split="test")], adapters)
    if cut:
        items = prepare_items(documents, built_masking, seed=seed)
        if not items[0].plan.word_indices:
            raise SpecError(f"masking '{built_masking.short_spec}' hid no word of the text's first "
                            f"{len(items[0].words)} words, all that fit the models' windows; raise the ratio")
    results: list[Generation] = []
    for index, (adapter, sampler) in enumerate(zip(adapters, samplers)):
        if cancel is not None and cancel.is_set():
            raise RunCancelled("regeneration cancelled")
        generation = run_generation(adapter, sampler, items)[0]
        _note_cuts([generation], documents, adapters)
        results.append(generation)
        if on_generation is not None:
            on_generation(index, generation)
    return results


def _components(model: str, masking: str, sampler: str | None) -> tuple[Any, Any, Any]:
    """(model, masking, sampler) built from their specs; the sampler defaults by the model's kind and must drive it."""
    from mlmh.generation import check_compatible
    from mlmh.options import build_spec
    from mlmh.plan import default_sampler

    options.check_text(model, "model")
    options.check_text(masking, "masking")
    options.check_text(sampler, "sampler", optional=True)
    built_model = build_spec("model", model, "--model")
    built_masking = build_spec("masking", masking, "--masking")
    built_sampler = build_spec("sampler", sampler or default_sampler(built_model.model_kind), "--sampler")
    check_compatible(built_sampler, built_model.model_kind)
    return built_model, built_masking, built_sampler


def _regenerate(components: tuple[Any, Any, Any], documents: Sequence["Document"], *, dataset: str | None,
                data: str | None, seed: int, batch_size: int, progress: Callable[[dict[str, Any]], None] | None,
                corpus: Any = None) -> list["Generation"]:
    """The one way ``documents`` are masked and regenerated outside a run: the items a run with ``seed``
    would generate, from the adapter the model loads."""
    from mlmh.components import LoadContext
    from mlmh.generation import fit_to_windows, generate as run_generation, prepare_items

    model, masking, sampler = components
    if dataset is None and model.params.get("dataset") == "":  # a trained-* model that trains on the run's dataset
        dataset = TEXT_TRAINING_DATASET
        if progress is not None:
            progress({"note": f"{model.name} trains on the bundled '{dataset}' sample (cached after the first "
                              f"time); set {model.name}:dataset=NAME for another"})
    context = LoadContext(dataset=dataset, data_path=data, corpus=corpus, seed=seed, progress=progress)
    adapter = model.load(context)
    from mlmh.plan import many_steps

    if progress is not None:
        for note in [*getattr(adapter, "notes", ()), many_steps(sampler)]:
            if note:
                progress({"note": note})
    # cut to the window as a run cuts its documents, so every masked word is one the model writes
    documents, _ = fit_to_windows(list(documents), [adapter])
    items = prepare_items(documents, masking, seed)  # the items a run with this seed generates
    generations = run_generation(adapter, sampler, items, batch_size=batch_size)
    _note_cuts(generations, documents, [adapter])
    return generations


def _note_cuts(generations: Sequence["Generation"], documents: Sequence["Document"], adapters: Sequence[Any]) -> None:
    """Say on each generation whose document :func:`mlmh.generation.fit_to_windows` cut where and why."""
    windows = [w for w in (getattr(a, "max_length", None) for a in adapters) if isinstance(w, int)]
    for generation, document in zip(generations, documents):
        kept = document.meta.get("cut_to_window")
        if kept:
            generation.info["cut_to_window"] = (
                f"text cut after word {kept['words']} of {kept['of_words']}, the last that fits the model window "
                f"of {min(windows, default='?')} tokens; the words after it were neither masked nor generated")
