"""The hooks a plugin can implement. Each ``register_*`` hook receives a ``register`` callback;
``register(component, replace=True)`` takes over the name of a component registered before it (a
builtin's): how a plugin replaces a builtin (:mod:`mlmh.registry`)."""

from __future__ import annotations

import pluggy

hookspec = pluggy.HookspecMarker("mlmh")


@hookspec
def register_models(register):
    """Register language models: ``register(MyModel())`` with a :class:`mlmh.components.Model`."""


@hookspec
def register_datasets(register):
    """Register datasets: ``register(MyDataset())`` with a :class:`mlmh.components.Dataset`."""


@hookspec
def register_maskings(register):
    """Register masking strategies: ``register(MyMasking())`` with a :class:`mlmh.components.Masking`."""


@hookspec
def register_samplers(register):
    """Register samplers: ``register(MySampler())`` with a :class:`mlmh.components.Sampler`."""


@hookspec
def register_metrics(register):
    """Register metrics: ``register(MyMetric())`` with a :class:`mlmh.components.Metric`."""


@hookspec
def register_tasks(register):
    """Register downstream tasks: ``register(MyTask())`` with a :class:`mlmh.components.Task`."""


@hookspec
def register_trackers(register):
    """Register experiment trackers: ``register(MyTracker())`` with a :class:`mlmh.components.Tracker`."""


@hookspec
def register_presets(register):
    """Register presets: ``register(name, path_or_toml_text)`` for an experiment preset."""


@hookspec
def register_checks(register):
    """Register readiness checks for ``mlmh doctor``: ``register(name, run, fixer=None)`` (see :mod:`mlmh.doctor`)."""


@hookspec
def register_commands(cli):
    """Add click commands to the ``mlmh`` command group: ``@cli.command() def hello(): ...``."""


@hookspec
def mlmh_run_event(event):
    """Observe every event of a run (a :class:`mlmh.events.RunEvent`); return value is ignored."""
