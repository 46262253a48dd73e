"""The typed run configuration: everything a run needs, resolved from a preset (:mod:`mlmh.config`) or
read back from the run's ``config.json`` (:meth:`mlmh.rundir.RunDir.saved_config`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class RunConfig:
    """Everything a run needs, resolved: what the runner reads and what results.json records."""

    preset: str
    source: str
    dataset: str
    data: str | None = None
    models: list[str] = field(default_factory=list)
    maskings: list[str] = field(default_factory=list)
    samplers: list[str] = field(default_factory=list)
    metrics: list[str] = field(default_factory=list)
    tasks: list[str] = field(default_factory=list)
    trackers: list[str] = field(default_factory=list)
    seeds: list[int] = field(default_factory=lambda: [0])
    limit: int | float = 0
    batch_size: int = 8
    log_samples: bool = False
    description: str = ""
    #: keys set on the command line rather than by the preset (errors then name the flag, not the file)
    overridden: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("overridden")
        return out

    def experiment(self) -> dict[str, Any]:
        """The keys that decide results (batch size, logging and trackers do not), for resume checks."""
        out = self.to_dict()
        for key in ("batch_size", "log_samples", "trackers", "source", "description"):
            out.pop(key)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "RunConfig":
        """The configuration a run saved (``config.json``), for ``--resume``."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})

    def to_toml(self) -> str:
        """The resolved configuration as a preset file (``--show-config``)."""
        lines = [f"# resolved from {self.source}"]
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
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        if not value:
            return "[]"
        return "[\n" + "".join(f"    {_toml_value(v)},\n" for v in value) + "]"
    raise TypeError(value)
