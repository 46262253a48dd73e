"""The typed run configuration: everything a run needs, resolved from a preset (:mod:`mlmh.config.presets`) or
read back from the run's ``config.json`` (:func:`mlmh.config.presets.saved`, by a preset's rules).

Each run option is declared once, on its field (:func:`option`): the preset key is the field's name, and the
declaration (:class:`RunOption`) drives ``mlmh eval``'s click option (:func:`mlmh.config.options.run_option`), how a preset
value is read (:func:`mlmh.config.presets.from_table`), how config.json's key is checked
(:func:`mlmh.storage.schema.run_config_shape`) and what the Python API documents (``mlmh.evaluate``'s keyword
arguments; tests/test_run_options.py and tests/test_schema.py check they agree).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from mlmh import bounds
from mlmh.bounds import Bound
from mlmh.machine.escape import terminal, toml_string

#: how a run option's value is written, in a preset and on the command line
SHAPES = {
    "spec": "one component spec (NAME:key=value,...)",
    "path": "a path; left out: the bundled sample",
    "text": "text",
    "specs": "a list of component specs; a flag repeats or takes a comma list",
    "seeds": "a list of integers >= 0; a flag repeats or takes a comma list",
    "limit": "a number of documents, a fraction 0.x, or 0 for all",
    "share": "a number of documents, a fraction 0.x, or 0 for none",
    "count": "an integer >= 1",
    "flag": "true or false",
}


@dataclass(frozen=True)
class RunOption:
    """How a run option is set. ``flag``: its ``mlmh eval`` flag (empty: a preset key only); ``shape``: how its value
    is written (:data:`SHAPES`); ``component``: the registry kind its specs name; ``required``: a preset must set it
    (a list: to at least one spec); ``none``: a lone ``none`` on the command line means an empty list; ``bound``: the
    largest value of a count (:mod:`mlmh.bounds`); ``affects_results``: False for an option that changes how a run
    goes but not what it finds (a batch size, logging), which a resumed run may change."""

    help: str
    shape: str
    flag: str = ""
    metavar: str = ""
    component: str = ""
    required: bool = False
    none: bool = False
    bound: Bound | None = None
    affects_results: bool = True


def option(help: str, shape: str, *, default: Any = dataclasses.MISSING, default_factory: Any = dataclasses.MISSING,
           **declaration: Any) -> Any:
    """A :class:`RunConfig` field that is a run option, declared as :class:`RunOption` in the field's metadata."""
    if shape not in SHAPES:
        raise ValueError(f"run option shape {shape!r}: expected one of {', '.join(SHAPES)}")
    return field(default=default, default_factory=default_factory,
                 metadata={"option": RunOption(help, shape, **declaration)})


def run_options() -> dict[str, RunOption]:
    """Every run option by its preset key (the field's name), in field order."""
    return {f.name: f.metadata["option"] for f in dataclasses.fields(RunConfig) if "option" in f.metadata}


def _specs(noun: str, help: str, **declaration: Any) -> Any:
    """A list of component specs: ``--NOUN SPEC``, repeated or a comma list."""
    return option(help, "specs", default_factory=list, flag=f"--{noun}", metavar="SPEC[,SPEC...]", component=noun,
                  **declaration)


@dataclass
class RunConfig:
    """Everything a run needs, resolved: what the runner reads and what results.json records."""

    preset: str
    source: str
    dataset: str = option("Override the dataset: a registered dataset with its parameters (text:group_field=author).",
                          "spec", flag="--dataset", metavar="SPEC", component="dataset", required=True)
    data: str | None = option("Dataset files in their official format (default: bundled sample); for text, your corpus.",
                              "path", default=None, flag="--data", metavar="PATH")
    models: list[str] = _specs("model", "Model spec; repeat or separate with commas (replaces the preset's).", required=True)
    maskings: list[str] = _specs("masking", "Masking spec; repeat or separate with commas.", required=True)
    samplers: list[str] = _specs("sampler", "Sampler spec; repeat or separate with commas.", required=True)
    metrics: list[str] = _specs("metric", "Metric spec; repeat or separate with commas ('none' alone for no metrics).",
                                none=True)
    tasks: list[str] = _specs("task", "Downstream task; repeat or separate with commas ('none' alone to skip "
                              "downstream).", none=True)
    trackers: list[str] = _specs("tracker", "Log the run to an experiment tracker: wandb, mlflow, tensorboard (see mlmh "
                                 "ls trackers); repeat or separate with commas ('none' for none).", none=True,
                                 affects_results=False)
    seeds: list[int] = option("Run seed; repeat or separate with commas (one condition per seed).", "seeds",
                              default_factory=lambda: [0], flag="--seed", metavar="N[,N...]")
    limit: int | float = option("Documents per condition: a count, a fraction, or 0 for all.", "limit", default=0,
                                flag="--limit", metavar="N|0.x")
    control: int | float = option("Train documents held out of training as the control memorisation is judged "
                                  "against (texts of the train authors no model learns): a count, a fraction of train, "
                                  "or 0 for none (then against the unseen documents).", "share", default=0,
                                  flag="--control", metavar="N|0.x")
    batch_size: int = option("Generation batch size (results do not depend on it).", "count", default=8,
                             flag="--batch-size", bound=bounds.BATCH, affects_results=False)
    log_samples: bool = option("Write samples.jsonl with every step trace and per-sample scores.", "flag",
                               default=False, flag="--log-samples", affects_results=False)
    description: str = option("What the preset runs, in a sentence (mlmh ls presets).", "text", default="",
                              affects_results=False)
    #: keys set on the command line rather than by the preset (errors then name the flag, not the file)
    overridden: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("overridden")
        return out

    def experiment(self) -> dict[str, Any]:
        """The keys that decide results, for resume checks: every run option but those declared
        ``affects_results=False``, without ``source`` (where the configuration was read from)."""
        out = self.to_dict()
        out.pop("source")
        for key, declared in run_options().items():
            if not declared.affects_results:
                out.pop(key)
        return out

    def changed(self, other: "RunConfig") -> list[str]:
        """The keys that decide results (:meth:`experiment`) on which ``other`` differs from this configuration."""
        mine, theirs = self.experiment(), other.experiment()
        return sorted(key for key in {*mine, *theirs} if mine.get(key) != theirs.get(key))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        """The configuration a run saved (``config.json``), for ``--resume``."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_toml(self) -> str:
        """The resolved configuration as a preset file (``--show-config``) that ``tomllib`` reads back, every text
        escaped (:func:`mlmh.machine.escape.toml_string`)."""
        lines = [f"# resolved from {terminal(self.source, line=True)}"]  # a comment ends at a line break
        for key, value in self.to_dict().items():
            if key in ("preset", "source") or value is None:
                continue
            lines.append(f"{key} = {_toml_value(value)}")
        return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + "".join(f"    {_toml_value(v)},\n" for v in value) + "]"
    raise TypeError(value)
