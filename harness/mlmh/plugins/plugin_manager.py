"""The pluggy plugin manager: the entry points of group ``mlmh``, the builtins first.

The builtins (package ``mlmh_builtins``) are the ``mlmh`` distribution's own entry points of that group,
loaded first and registered under their module names; then every other distribution's, sorted by
distribution and entry-point name. ``MLMH_LOAD_PLUGINS``
(comma-separated distribution names) limits which of those others load; set but empty loads none; a
name no installed distribution has is named in a warning. Builtins always load. A plugin that fails to
import is recorded and reported by name; the others still load.

Commands come from entry-point plugins only (the builtins' commands are :mod:`mlmh.cli`'s table), so
:func:`get_command_manager` lets ``mlmh --help`` list plugin commands without importing the builtins.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import pluggy

from mlmh.plugins import hookspecs

ENTRY_POINT_GROUP = "mlmh"
BUILTIN_DISTRIBUTION = "mlmh"  # its entry points of the group are the builtins

_pm: pluggy.PluginManager | None = None
_command_pm: pluggy.PluginManager | None = None
_entry_plugins: dict[str, Any] | None = None  # registered name -> plugin (None: failed), loaded once per process
_entry_rows: list[tuple[bool, str, str, str | None, str]] | None = None  # what _entry_plugins may load
load_errors: list[str] = []
_DIST_OF: dict[str, tuple[str, str | None]] = {}  # registered plugin name -> (distribution, version)


def _normal(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def _is_builtin(dist: str) -> bool:
    return _normal(dist) == BUILTIN_DISTRIBUTION


def _allowed(installed: set[str]) -> set[str] | None:
    """The distributions ``MLMH_LOAD_PLUGINS`` allows (None: all); names not ``installed`` are warned about."""
    raw = os.environ.get("MLMH_LOAD_PLUGINS")
    if raw is None:
        return None
    allowed = {_normal(name) for name in raw.split(",") if name.strip()}
    unknown = sorted(allowed - installed)
    if unknown:
        print(f"mlmh: MLMH_LOAD_PLUGINS names plugins that are not installed: {', '.join(unknown)} "
              f"(installed: {', '.join(sorted(installed)) or 'none'})", file=sys.stderr)
    return allowed


def get_plugin_manager() -> pluggy.PluginManager:
    """The process-wide plugin manager, created on first use."""
    global _pm
    if _pm is None:
        _pm = _create()
    return _pm


def current_manager() -> pluggy.PluginManager | None:
    """The process-wide plugin manager if one was created since the last :func:`reset`, else None."""
    return _pm


def get_command_manager() -> pluggy.PluginManager:
    """A manager of the entry-point plugins alone: what ``register_commands`` is called on."""
    global _command_pm
    if _command_pm is None:
        _command_pm = pluggy.PluginManager("mlmh")
        _command_pm.add_hookspecs(hookspecs)
        for name, plugin in _entry_point_plugins(builtins=False):
            _command_pm.register(plugin, name=name)
    return _command_pm


def reset() -> None:
    """Forget the managers (tests, or after installing a plugin in-process); the registry, built from the
    manager it was given, is built again from the next one (:func:`mlmh.registry.get_registry`)."""
    global _pm, _command_pm, _entry_plugins, _entry_rows
    _pm = _command_pm = _entry_plugins = _entry_rows = None
    load_errors.clear()


def registered_by_hand() -> list[tuple[str, Any]]:
    """``(name, plugin)`` of every plugin registered in this process with ``register`` (neither a builtin
    nor an entry point): what another process must register itself to build the same registry."""
    known = {name for name, _ in _entry_point_plugins()}
    return [(name, plugin) for name, plugin in get_plugin_manager().list_name_plugin()
            if name not in known and plugin is not None]


def _create() -> pluggy.PluginManager:
    pm = pluggy.PluginManager("mlmh")
    pm.add_hookspecs(hookspecs)
    for name, plugin in _entry_point_plugins():
        pm.register(plugin, name=name)
    return pm


def _entry_point_plugins(builtins: bool = True) -> list[tuple[str, Any]]:
    """``(registered name, plugin)`` of the allowed entry-point plugins of group ``mlmh``, the builtins
    first, each imported once per process; ``builtins=False`` leaves the builtins out, unimported."""
    global _entry_plugins, _entry_rows
    if _entry_plugins is None or _entry_rows is None:
        _entry_plugins, _entry_rows = {}, _allowed_entry_points()
    out = []
    for builtin, plugin_name, dist, version, value in _entry_rows:
        if not builtins and builtin:
            continue
        if plugin_name not in _entry_plugins:
            try:
                _entry_plugins[plugin_name] = _load_entry_point(value)
            except Exception as exc:  # a broken plugin must not take the others down
                _entry_plugins[plugin_name] = None
                load_errors.append(f"plugin '{plugin_name if builtin else dist}' failed to load: "
                                   f"{type(exc).__name__}: {exc}")
            if not builtin:
                _DIST_OF[plugin_name] = (dist, version)
        if _entry_plugins[plugin_name] is not None:
            out.append((plugin_name, _entry_plugins[plugin_name]))
    return out


def _allowed_entry_points() -> list[tuple[bool, str, str, str | None, str]]:
    """``(builtin, registered name, distribution, version, value)`` of each entry point to load: the
    builtins always (registered under their module names), the others as ``MLMH_LOAD_PLUGINS`` allows
    (under ``distribution:name``, since entry-point names alone may clash across distributions)."""
    table = entry_point_table()
    if not any(_is_builtin(dist) for dist, _, _, _ in table):
        raise RuntimeError("mlmh's builtin plugins are not registered: no entry point of group 'mlmh' comes from "
                           "the mlmh distribution (install it with: pip install -e .)")
    allowed = _allowed({_normal(dist) for dist, _, _, _ in table if not _is_builtin(dist)})
    out: list[tuple[bool, str, str, str | None, str]] = []
    for dist, version, name, value in table:
        builtin = _is_builtin(dist)
        if not builtin and allowed is not None and _normal(dist) not in allowed:
            continue
        plugin_name = value.partition(":")[0].strip() if builtin else f"{dist}:{name}"
        if all(known != plugin_name for _, known, _, _, _ in out):
            out.append((builtin, plugin_name, dist, version, value))
    return out


def entry_point_table() -> list[list[Any]]:
    """``[distribution, version, name, "module:attr"]`` of each entry point of group ``mlmh``: the mlmh
    distribution's (the builtins) first, then the others; each distribution's sorted by name.

    Importing :mod:`importlib.metadata` and reading every distribution's metadata costs more than the
    rest of ``mlmh --help``, so the table is kept in the cache dir under a fingerprint of what that scan
    reads: the ``*.dist-info`` / ``*.egg-info`` folders on ``sys.path`` and their ``entry_points.txt``
    modification times (stevedore keeps its entry-point cache the same way).

    The file decides which modules are imported, so it is trusted for nothing: its rows must be exactly
    the entry points of group ``mlmh`` that the installed distributions' ``entry_points.txt`` declare
    (read here, a few small files), name and value alike, none added and none left out, or the table is
    scanned again.
    """
    from mlmh.machine.paths import cache_dir

    stamps = []
    folders: list[str] = []
    for entry in sys.path:
        try:
            names = sorted(n for n in os.listdir(entry or ".") if n.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        for name in names:
            folders.append(os.path.join(entry or ".", name))
            try:
                stamps.append(f"{entry}/{name}:{os.stat(os.path.join(entry or '.', name, 'entry_points.txt')).st_mtime_ns}")
            except OSError:
                stamps.append(f"{entry}/{name}:-")
    path = cache_dir() / "entry-points.json"
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached["stamps"] == stamps and _all_declared(cached["table"], folders):
            return cached["table"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    from importlib import metadata

    rows = [[ep.dist.name if ep.dist else ep.name, ep.dist.version if ep.dist else None, ep.name, ep.value]
            for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)]
    table = sorted(rows, key=lambda row: (not _is_builtin(str(row[0])), row[0], row[2]))
    try:
        from mlmh.machine.paths import private_dir

        private_dir(path.parent)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600), "w",
                       encoding="utf-8") as fh:
            fh.write(json.dumps({"stamps": stamps, "table": table}))
        tmp.replace(path)
    except OSError:  # a read-only cache only costs speed
        pass
    return table


def _all_declared(table: Any, folders: list[str]) -> bool:
    """Whether the rows ``[distribution, version, name, value]`` of a cached table are exactly the entry
    points of group ``mlmh`` that the installed distributions declare: none added, none missing (a row
    deleted from the file would hide a plugin, a builtin included). Like importlib.metadata, the first
    folder of a distribution on ``sys.path`` is the one that counts."""
    if not isinstance(table, list):
        return False
    rows = set()
    for row in table:
        if not (isinstance(row, list) and len(row) == 4 and all(isinstance(v, str) for v in (row[0], row[2], row[3]))):
            return False
        rows.add((_normal(row[0]).replace("-", "_"), row[2], row[3]))
    declared, seen = set(), set()
    for folder in folders:
        base = os.path.basename(folder).rsplit(".", 1)[0]  # name-version.dist-info, name.egg-info
        dist = _normal(base.split("-", 1)[0]).replace("-", "_")
        if dist in seen:
            continue
        seen.add(dist)
        declared |= {(dist, name, value) for name, value in _group_entries(os.path.join(folder, "entry_points.txt"))}
    return rows == declared


def _group_entries(path: str) -> set[tuple[str, str]]:
    """``(name, value)`` of the entry points of group ``mlmh`` in one ``entry_points.txt``."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return set()
    out, section = set(), None
    for line in lines:
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == ENTRY_POINT_GROUP and "=" in line and not line.startswith(("#", ";")):
            name, _, value = line.partition("=")
            out.add((name.strip(), value.strip()))
    return out


def _load_entry_point(value: str) -> Any:
    """The object an entry point's ``module:attr.attr`` value names (extras in brackets ignored)."""
    module_name, _, attrs = value.split("[")[0].strip().partition(":")
    target: Any = importlib.import_module(module_name.strip())
    for attr in filter(None, attrs.strip().split(".")):
        target = getattr(target, attr)
    return target


def missing_builtins() -> list[str]:
    """The builtin plugin modules the mlmh distribution declares (read from its metadata, not from the
    discovery cache) that the plugin manager did not load: what ``mlmh doctor`` reports."""
    from importlib import metadata

    declared = sorted({ep.value.partition(":")[0].strip() for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)
                       if ep.dist is not None and _is_builtin(ep.dist.name)})
    loaded = {name for name, plugin in get_plugin_manager().list_name_plugin() if plugin is not None}
    return [name for name in declared if name not in loaded]


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

