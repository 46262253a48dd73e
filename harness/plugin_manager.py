"""The pluggy plugin manager: builtins first, then entry points of group ``mlmh``.

``MLMH_LOAD_PLUGINS`` (comma-separated distribution names) limits which entry points load;
set but empty loads none. Builtins always load. A plugin that fails to import is recorded and
reported by name; the others still load.
"""

from __future__ import annotations

import importlib
import os
import sys
from importlib import metadata
from typing import Any

import pluggy

from mlmh import hookspecs

ENTRY_POINT_GROUP = "mlmh"
BUILTINS_NAME = "mlmh.plugins"

_pm: pluggy.PluginManager | None = None
load_errors: list[str] = []
_DIST_OF: dict[str, tuple[str, str | None]] = {}  # registered plugin name -> (distribution, version)


def _allowed() -> set[str] | None:
    raw = os.environ.get("MLMH_LOAD_PLUGINS")
    if raw is None:
        return None
    return {name.strip().lower().replace("_", "-") for name in raw.split(",") if name.strip()}


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created on first use."""
    global _pm
    if _pm is None:
        _pm = _create()
    return _pm


def reset() -> None:
    """Forget the manager and registry (tests, or after installing a plugin in-process)."""
    global _pm
    _pm = None
    load_errors.clear()
    from mlmh import registry

    registry.reset()


def _create() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("mlmh")
    pm.add_hookspecs(hookspecs)
    builtins = importlib.import_module(BUILTINS_NAME)
    for module_name in builtins.BUILTIN_MODULES:
        module = importlib.import_module(module_name)
        pm.register(module, name=module_name)
    allowed = _allowed()
    eps = sorted(metadata.entry_points(group=ENTRY_POINT_GROUP), key=lambda ep: ((ep.dist.name if ep.dist else ""), ep.name))
    for ep in eps:
        dist = ep.dist.name if ep.dist else ep.name
        if allowed is not None and dist.lower().replace("_", "-") not in allowed:
            continue
        plugin_name = f"{dist}:{ep.name}"  # entry-point names alone may clash across distributions
        if pm.get_plugin(plugin_name) is not None:
            continue
        try:
            plugin = ep.load()
        except Exception as exc:  # a broken plugin must not take the others down
            load_errors.append(f"plugin '{dist}' failed to load: {type(exc).__name__}: {exc}")
            continue
        pm.register(plugin, name=plugin_name)
        _DIST_OF[plugin_name] = (dist, ep.dist.version if ep.dist else None)
    return pm


def plugin_label(plugin_name: str) -> str:
    """The name users see for a registered pluggy plugin: its distribution, or the builtin module."""
    if plugin_name in _DIST_OF:
        return _DIST_OF[plugin_name][0]
    return plugin_name


def describe_plugins() -> list[dict[str, Any]]:
    """``mlmh plugins``: one entry per loaded plugin with its version and implemented hooks."""
    pm = get_plugin_manager()
    out = []
    for name, plugin in pm.list_name_plugin():
        hooks = sorted(caller.name for caller in pm.get_hookcallers(plugin) or [])
        entry: dict[str, Any] = {"name": plugin_label(name), "hooks": hooks}
        if name in _DIST_OF:
            entry["version"] = _DIST_OF[name][1]
        else:
            from mlmh import __version__

            entry["version"] = __version__
            entry["builtin"] = True
        out.append(entry)
    return sorted(out, key=lambda e: (not e.get("builtin", False), e["name"]))


def emit_event(event: Any) -> None:
    """Send a run event to every plugin implementing ``mlmh_run_event``; one failing observer
    is reported on stderr and does not stop the run."""
    pm = get_plugin_manager()
    for impl in pm.hook.mlmh_run_event.get_hookimpls():
        try:
            impl.function(event=event)
        except Exception as exc:
            print(f"mlmh: observer plugin '{plugin_label(impl.plugin_name)}' failed: {exc}", file=sys.stderr)
