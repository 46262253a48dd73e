"""The registry: every component that plugins registered, by kind and name.

Order is deterministic (builtins, then plugins sorted by distribution name). On a duplicate name the
first registration keeps it and a warning names both plugins: an accidental clash changes nothing. A
plugin replaces a component on purpose with ``register(component, replace=True)``: it takes the name
over from whoever registered it before (a builtin, since builtins register first), silently; a name is
replaced once, and a second ``replace=True`` for it is a clash like any other. A plugin that raises
inside a ``register_*`` hook is reported by name; the others still register.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pluggy

from mlmh.components import KINDS, Preset
from mlmh.errors import SpecError
from mlmh.params import Component, parse_spec, unknown_message

HOOK_OF_KIND = {
    "model": "register_models",
    "dataset": "register_datasets",
    "masking": "register_maskings",
    "sampler": "register_samplers",
    "metric": "register_metrics",
    "task": "register_tasks",
    "tracker": "register_trackers",
    "preset": "register_presets",
}
PLURAL = {f"{k}s": k for k in HOOK_OF_KIND}

_registry: "Registry | None" = None


class Registry:
    """The components of one plugin manager's plugins, loaded kind by kind on first use."""

    def __init__(self) -> None:
        #: the plugin manager the loaded kinds came from (set on first use)
        self.manager: pluggy.PluginManager | None = None
        self._items: dict[str, dict[str, Any]] = {k: {} for k in HOOK_OF_KIND}
        self._owner: dict[tuple[str, str], str] = {}
        #: (kind, name) -> the plugin whose component a ``replace=True`` registration took the name from
        self.replaced: dict[tuple[str, str], str] = {}
        self.warnings: list[str] = []
        self.errors: list[str] = []
        self._loaded: set[str] = set()

    # -- loading -----------------------------------------------------------------------------
    def _ensure(self, kind: str) -> None:
        if kind in self._loaded:
            return
        from mlmh.plugins.plugin_manager import get_plugin_manager, load_errors, plugin_label

        if self.manager is None:
            self.manager = get_plugin_manager()
        pm = self.manager
        for msg in load_errors:
            if msg not in self.errors:
                self.errors.append(msg)
        caller = getattr(pm.hook, HOOK_OF_KIND[kind])
        # get_hookimpls() is in registration order: builtins, then plugins sorted by distribution.
        for impl in caller.get_hookimpls():
            owner = plugin_label(impl.plugin_name)

            def register(obj: Any, source: Any = None, *, replace: bool = False, _owner: str = owner) -> None:
                self._add(kind, obj, source, _owner, replace)

            try:
                impl.function(register=register)
            except Exception as exc:
                self.errors.append(f"plugin '{owner}' failed in {HOOK_OF_KIND[kind]}: {type(exc).__name__}: {exc}")
        self._loaded.add(kind)

    def _add(self, kind: str, obj: Any, source: Any, owner: str, replace: bool = False) -> None:
        if kind == "preset":
            obj = _make_preset(obj, source, owner)
        else:
            base: type[Component] = KINDS[kind]  # a preset is made above
            if isinstance(obj, type) and issubclass(obj, base):
                obj = obj()
            if not isinstance(obj, base):
                raise TypeError(f"{HOOK_OF_KIND[kind]} expects a {base.__module__}.{base.__name__}, got {obj!r}")
            if not obj.name:
                raise TypeError(f"{type(obj).__name__} has no name")
        name = obj.name
        key = (kind, name)
        if name in self._items[kind]:
            first = self._owner[key]
            if replace and key not in self.replaced:
                self.replaced[key] = first
            else:
                how = "replaced" if key in self.replaced else "registered"
                self.warnings.append(f"{kind} '{name}' from plugin '{owner}' ignored: already {how} by plugin '{first}'")
                return
        self._items[kind][name] = obj
        self._owner[key] = owner

    # -- queries -----------------------------------------------------------------------------
    def all(self, kind: str) -> list[Any]:
        self._ensure(kind)
        return list(self._items[kind].values())

    def names(self, kind: str) -> list[str]:
        self._ensure(kind)
        return list(self._items[kind])

    def owner(self, kind: str, name: str) -> str:
        self._ensure(kind)
        return self._owner[(kind, name)]

    def get(self, kind: str, name: str) -> Any:
        self._ensure(kind)
        try:
            return self._items[kind][name]
        except KeyError:
            raise SpecError(unknown_message(kind, name, self._items[kind])) from None

    def build(self, kind: str, spec: str | dict[str, Any]) -> Any:
        """A configured component from ``NAME:key=value,...`` (or a ``{"name": ..., **params}`` table)."""
        if isinstance(spec, dict):
            params = dict(spec)
            name = str(params.pop("name", ""))
            if not name:
                raise SpecError(f"{kind} table {spec!r} has no 'name'")
        else:
            name, params = parse_spec(spec)
        component = self.get(kind, name)
        if kind == "preset":
            if params:
                raise SpecError(f"preset '{name}' takes no parameters")
            return component
        return component.configured(**params)


def _make_preset(name: Any, source: Any, owner: str) -> Preset:
    if isinstance(name, Preset):
        return name
    if source is None:
        raise TypeError("register_presets: call register(name, path_or_toml_text)")
    if isinstance(source, Path) or (isinstance(source, str) and "\n" not in source and source.endswith(".toml")):
        path = Path(source)
        text = path.read_text(encoding="utf-8")
        where = str(path)
    else:
        text, where = str(source), f"<preset {name} from {owner}>"
    try:
        config = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{where}: invalid TOML: {exc}") from None
    return Preset(name=str(name), description=str(config.get("description", "")), config=config, source=where)


def get_registry() -> Registry:
    """The registry of the process's plugin manager: after :func:`mlmh.plugins.plugin_manager.reset` the next
    manager gets a new registry."""
    global _registry
    from mlmh.plugins.plugin_manager import current_manager

    if _registry is None or _registry.manager not in (None, current_manager()):
        _registry = Registry()
    return _registry


def reset() -> None:
    global _registry
    _registry = None
