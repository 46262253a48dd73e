"""Presets parsed safely into a typed run configuration, with command-line overrides.

A preset is a TOML table (``tomllib``: data only, nothing executes). Every key is checked: an unknown
key or a bad value is a :class:`~mlmh.errors.SpecError` naming the key and the file. Component specs are
checked against the registry where the configuration is planned (:func:`mlmh.config.plan.build_plan`, which
every run path calls once, before anything runs), so a typo fails in a second instead of after
training three models.

Preset keys (all optional except ``dataset`` and ``models``/``maskings``/``samplers``): the run options
:class:`~mlmh.types.runconfig.RunConfig` declares (:func:`mlmh.types.runconfig.run_options`), and the preset's ``cost``::

    description = "..."
    dataset     = "pan"              # a registered dataset
    data        = "path"             # official-format files; leave out for the bundled sample
    models      = ["trained-mlm:size=tiny", {name = "hf-mlm", path = "bert-base-uncased"}]
    maskings    = ["random:ratio=0.3", "stopwords"]
    samplers    = ["one-shot", "mask-predict:steps=4", "clm-infill"]
    metrics     = ["bleu", "rouge"]
    tasks       = ["authorship-verification"]
    trackers    = ["tensorboard", "mlflow:experiment=pan"]   # experiment trackers (mlmh.tracking)
    seeds       = [0]
    limit       = 40                 # documents per condition: N, a fraction 0.x, or 0 for all
    control     = 0.1                # train documents held out as the memorisation control: N, 0.x, or 0 for none
    batch_size  = 8
    log_samples = false
    cost        = {cold_cpu_s = 402, warm_cpu_s = 10, measured = "where"}   # what a run costs (mlmh ls presets)

    [datasets.mimic]                 # settings for one dataset, over the keys above when the run is on it
    maskings    = ["random:ratio=0.3", "ner"]

A ``[datasets.NAME]`` table holds run options (not ``dataset`` or ``data``) that replace the preset's own when the run's
dataset, the preset's or ``--dataset``'s, is NAME; what the command line names replaces both. The paper masked entities
on its clinical notes only: one preset says so without a second file.
"""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

from mlmh import bounds
from mlmh.errors import SpecError
from mlmh.params import unknown_message
from mlmh.storage.inputs import check_input_file
from mlmh.storage.rundir import RunDir
from mlmh.types.runconfig import RunConfig, RunOption, run_options

#: list keys holding component specs, with the registry kind of each
COMPONENT_LISTS = {key: declared.component for key, declared in run_options().items() if declared.shape == "specs"}
#: a preset's keys: the run options, its declared cost, and its per-dataset settings
KEYS = {*run_options(), "cost", "datasets"}
#: run options a ``[datasets.NAME]`` table cannot hold: the dataset it is chosen by, and the files of one corpus
NOT_PER_DATASET = ("dataset", "data")
#: a preset's declared cost: CPU seconds of a cold run (models trained, nothing cached), of a warm rerun, and where
#: and how they were measured; declared once, in the preset, and shown by ``mlmh ls presets`` and ``eval --help``
COST_KEYS = ("cold_cpu_s", "warm_cpu_s", "measured")


def load_preset(name_or_path: str) -> tuple[dict[str, Any], str, str]:
    """(raw table, preset name, where it came from) for a registered preset name or a ``.toml`` path."""
    path = Path(name_or_path)
    if name_or_path.endswith(".toml") or path.is_file():
        if path.exists():
            check_input_file(path, "preset file")  # a device or a FIFO is named as one (mlmh.storage.inputs), never read
        if not path.is_file():
            raise SpecError(f"preset file '{name_or_path}' does not exist")
        try:
            table = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SpecError(f"{path}: invalid TOML: {exc}") from None
        return table, path.stem, str(path)
    from mlmh.registry import get_registry

    preset = get_registry().get("preset", name_or_path)
    source = preset.source
    if source.startswith("<preset"):
        source = f"preset '{preset.name}'"
    return dict(preset.config), preset.name, source


def resolve(name_or_path: str, overrides: dict[str, Any] | None = None) -> RunConfig:
    """Parse a preset and apply command-line ``overrides`` (same keys as the file), checking every key and
    value; :func:`mlmh.config.plan.build_plan` checks the component specs."""
    table, name, source = load_preset(name_or_path)
    return from_table(table, name=name, source=source, overrides=overrides)


def from_table(table: dict[str, Any], *, name: str, source: str, overrides: dict[str, Any] | None = None) -> RunConfig:
    for key in table:
        if key not in KEYS:
            raise SpecError(f"{source}: " + unknown_message("key", key, KEYS))
    merged = {key: value for key, value in table.items() if key != "datasets"}
    dataset = (overrides or {}).get("dataset") or table.get("dataset")
    merged.update(for_dataset(table, dataset if isinstance(dataset, str) else None, source))
    for key, value in (overrides or {}).items():
        if key not in KEYS:
            raise SpecError(unknown_message("override", key, KEYS))
        if value is not None:
            merged[key] = value
    values = {key: _read(merged, key, declared, source) for key, declared in run_options().items()}
    config = RunConfig(preset=name, source=source, **values)
    config.overridden = sorted(k for k, v in (overrides or {}).items() if v is not None)
    describe_cost(table, source)
    return config


def for_dataset(table: dict[str, Any], dataset: str | None, source: str) -> dict[str, Any]:
    """The run options a preset's ``[datasets.NAME]`` table sets for ``dataset`` (none for another dataset); every
    table is checked, whichever dataset runs, so a typo in one fails on every dataset."""
    tables = table.get("datasets", {})
    if not isinstance(tables, dict) or not all(isinstance(v, dict) for v in tables.values()):
        raise SpecError(f"{source}: key 'datasets' must hold one table per dataset ([datasets.NAME]), got {tables!r}")
    allowed = [key for key in run_options() if key not in NOT_PER_DATASET]
    if tables:
        from mlmh.registry import get_registry

        names = get_registry().names("dataset")
    for name, settings in tables.items():
        if name not in names:
            raise SpecError(f"{source}: [datasets.{name}]: " + unknown_message("dataset", name, names))
        for key in settings:
            if key not in allowed:
                raise SpecError(f"{source}: [datasets.{name}]: " + unknown_message("key", key, allowed))
    return dict(tables.get(dataset, {})) if dataset else {}


def saved(run: RunDir) -> RunConfig:
    """The configuration ``run`` saved (its config.json), read back by the rules it was written under, a preset's: each
    key typed and bounded as its run option declares (:mod:`mlmh.bounds`), a bad one refused naming RUN/config.json
    and the key. What ``--resume`` and ``mlmh generate --run`` rebuild; errors of the plan name the file too."""
    data = run.read_config_record()["config"]
    return from_table({key: value for key, value in data.items() if key in run_options()}, name=data["preset"],
                      source=str(run.config))


def _read(table: dict[str, Any], key: str, declared: RunOption, source: str) -> Any:
    """The value of run option ``key`` in a preset table (with its overrides), read as the option declares."""
    default = RunConfig.__dataclass_fields__[key]
    value = table.get(key, default.default_factory() if callable(default.default_factory) else default.default)
    if declared.shape in ("spec", "path", "text"):
        text = _string(table, key, source, required=declared.required)
        return text or ("" if declared.shape == "text" else None)
    if declared.shape == "specs":
        specs = _specs(table, key, source)
        if declared.required and not specs:
            raise SpecError(f"{source}: key '{key}' must list at least one {declared.component}")
        return specs
    if declared.shape == "seeds":
        return _seeds(value, source)
    if declared.shape in ("limit", "share"):
        return parse_limit(value, source, key)
    if declared.shape == "count":
        count = _positive_int(value, key, source)
        if declared.bound is not None:
            bounds.check(count, declared.bound, f"{source}: key '{key}'")
        return count
    if not isinstance(value, bool):  # a flag
        raise SpecError(f"{source}: key '{key}' must be true or false, got {value!r}")
    return value


def describe_cost(table: dict[str, Any], source: str, *, how: bool = True) -> str:
    """A preset's ``cost`` in words ("cold 402 CPU-s, warm 10 CPU-s (measured: ...)"; without ``how`` measured, the
    figures alone), or "not measured" when it declares none; a malformed one is a SpecError naming the key."""
    cost = table.get("cost")
    if cost is None:
        return "not measured"
    if not isinstance(cost, dict) or any(key not in COST_KEYS for key in cost):
        raise SpecError(f"{source}: key 'cost' must be a table of {', '.join(COST_KEYS)}, got {cost!r}")
    parts = []
    for key, phase in (("cold_cpu_s", "cold"), ("warm_cpu_s", "warm")):
        value = cost.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
            raise SpecError(f"{source}: cost key '{key}' must be a finite number of CPU seconds >= 0, got {value!r}")
        parts.append(f"{phase} {value:g} CPU-s")
    measured = cost.get("measured")
    if measured is not None and not isinstance(measured, str):
        raise SpecError(f"{source}: cost key 'measured' must be text (where and how it was measured), got {measured!r}")
    if not parts:
        return "not measured"
    return ", ".join(parts) + (f" (measured: {measured})" if measured and how else "")


def preset_summary(name_or_path: str) -> list[tuple[str, str]]:
    """(what, which) rows of what a preset runs, for ``mlmh eval --preset NAME --help``."""
    table, _, source = load_preset(name_or_path)
    config = from_table(table, name=name_or_path, source=source)
    rows = [("source", source), ("dataset", config.dataset + (f" (data: {config.data})" if config.data else ""))]
    for key in COMPONENT_LISTS:
        specs = getattr(config, key) or ["none"]
        if key != "trackers" or config.trackers:
            rows += [(key if i == 0 else "", spec) for i, spec in enumerate(specs)]  # a spec per line, never split
    rows += [("seeds", ", ".join(map(str, config.seeds))), ("limit", str(config.limit or "all documents")),
             ("cost", describe_cost(table, source))]
    return rows


def _string(table: dict[str, Any], key: str, source: str, required: bool = False) -> str | None:
    value = table.get(key)
    if value is None or value == "":
        if required:
            raise SpecError(f"{source}: key '{key}' is required")
        return None
    if not isinstance(value, str):
        raise SpecError(f"{source}: key '{key}' must be a string, got {value!r}")
    return value


def _specs(table: dict[str, Any], key: str, source: str) -> list[str]:
    """Component specs from a list of strings and/or inline tables ``{name = ..., param = ...}``."""
    value = table.get(key, [])
    if isinstance(value, (str, dict)):
        value = [value]
    if not isinstance(value, list):
        raise SpecError(f"{source}: key '{key}' must be a list of component specs, got {value!r}")
    out: list[str] = []
    for item in value:
        if isinstance(item, str) and item.strip():
            out.append(item.strip())
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            params = ",".join(f"{k}={_param_text(v)}" for k, v in item.items() if k != "name")
            out.append(f"{item['name']}:{params}" if params else item["name"])
        else:
            raise SpecError(f"{source}: key '{key}' has a bad entry {item!r}; expected \"name:k=v\" or {{name = ...}}")
    return out


def _param_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _seeds(value: Any, source: str) -> list[int]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list) or not value:
        raise SpecError(f"{source}: key 'seeds' must be a non-empty list of integers, got {value!r}")
    seeds = []
    for seed in value:
        if isinstance(seed, str) and seed.strip().lstrip("-").isdigit():
            seed = int(seed)
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise SpecError(f"{source}: key 'seeds' must hold integers >= 0, got {seed!r}")
        bounds.check(seed, bounds.SEED, f"{source}: a seed of key 'seeds'")
        if seed not in seeds:
            seeds.append(seed)
    return seeds


def parse_limit(value: Any, source: str, key: str = "limit") -> int | float:
    """``N`` documents or a fraction ``0 < x < 1`` of them (0: all for ``limit``, none for ``control``): the one
    rule for a preset's ``limit`` and ``control`` keys and their options; a SpecError names ``source`` and ``key``."""
    expected = f"{source}: key '{key}' must be a number of documents or a fraction 0.x, got {value!r}"
    if isinstance(value, str):
        try:
            value = float(value) if "." in value else int(value)
        except ValueError:
            raise SpecError(expected) from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SpecError(expected)
    bounds.check(value, bounds.COUNT, f"{source}: key '{key}'")
    if isinstance(value, float):
        if value.is_integer() and value >= 1:
            return int(value)
        if not 0 < value < 1:
            raise SpecError(f"{source}: key '{key}' fraction must be between 0 and 1, got {value!r}")
    return value


def _positive_int(value: Any, key: str, source: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SpecError(f"{source}: key '{key}' must be an integer >= 1, got {value!r}")
    return value
