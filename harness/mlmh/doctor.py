"""Readiness checks for ``mlmh doctor``: each says what it found and, when not ready, the fix.

The core modules of :data:`CHECK_MODULES` add checks with :func:`check` when imported; every plugin,
builtin or not, registers its own through the ``register_checks`` hook, so the doctor names no plugin
module and a plugin that replaces a builtin brings its own checks. ``mlmh doctor --fix`` runs the fixers
that exist.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Callable


@dataclass
class CheckResult:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    #: an optional extra (a judge model): not ready, it is shown with its fix but the doctor still passes
    optional: bool = False

    @property
    def blocking(self) -> bool:
        """Not ready, and not optional: what makes ``mlmh doctor`` fail."""
        return not self.ok and not self.optional


@dataclass
class Check:
    name: str
    run: Callable[[], CheckResult]
    fixer: Callable[[], str] | None = None


CHECKS: list[Check] = []

#: Core modules that register more checks when imported (model cache, training, WordNet); the plugins'
#: checks (bundled samples, BERTScore model, taggers...) come with loading the plugins.
CHECK_MODULES: list[str] = [
    "mlmh.storage.modelcache",
    "mlmh.training.models",
    "mlmh.data.wordnet",
]


def check(name: str, fixer: Callable[[], str] | None = None):
    """Decorator registering a readiness check (and optionally the function that fixes it)."""

    def wrap(fn: Callable[[], CheckResult]) -> Callable[[], CheckResult]:
        CHECKS.append(Check(name, fn, fixer))
        return fn

    return wrap


def _version(module: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return None
    from importlib import metadata

    try:
        return metadata.version(module.replace("_", "-"))
    except metadata.PackageNotFoundError:
        return "installed"


@check("python packages")
def _packages() -> CheckResult:
    wanted = ["torch", "transformers", "tokenizers", "sacrebleu", "rouge_score", "nltk", "bert_score", "sklearn", "scipy", "textual"]
    missing = [m for m in wanted if importlib.util.find_spec(m) is None]
    if missing:
        return CheckResult("python packages", False, "missing: " + ", ".join(missing), "pip install -e . (or: make demo)")
    import torch

    return CheckResult("python packages", True, f"torch {torch.__version__}, transformers {_version('transformers')}")


@check("plugins")
def _plugins() -> CheckResult:
    from mlmh.plugins.plugin_manager import describe_plugins, load_errors, missing_builtins

    names = [p["name"] for p in describe_plugins()]
    if load_errors:
        return CheckResult("plugins", False, "; ".join(load_errors), "reinstall or uninstall the failing plugin, or set MLMH_LOAD_PLUGINS")
    missing = missing_builtins()
    if missing:
        return CheckResult("plugins", False, f"builtin plugin(s) not loaded: {', '.join(missing)}",
                           "reinstall mlmh (pip install -e .) and run mlmh doctor again")
    return CheckResult("plugins", True, f"{len(names)} loaded")


@check("cache")
def _cache() -> CheckResult:
    from mlmh.machine.paths import cache_dir

    root = cache_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        probe = root / ".write-test"
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return CheckResult("cache", False, f"{root} is not writable: {exc}", "set MLMH_CACHE_DIR to a writable directory")
    models = root / "models"
    n = len([p for p in models.iterdir() if p.is_dir()]) if models.exists() else 0
    return CheckResult("cache", True, f"{root} ({n} trained model(s) cached)")


def _all_checks() -> list[Check]:
    """The core's checks, then each plugin's (``register_checks``) in plugin order; a plugin whose hook
    raises is a failed check naming it, and the others still register."""
    import importlib

    from mlmh.plugins.plugin_manager import get_plugin_manager, plugin_label

    for name in CHECK_MODULES:
        importlib.import_module(name)
    manager = get_plugin_manager()  # loads every plugin: one that still uses @check adds to CHECKS as it loads
    found = list(CHECKS)
    for impl in manager.hook.register_checks.get_hookimpls():
        def register(name: str, run: Callable[[], CheckResult], fixer: Callable[[], str] | None = None) -> None:
            found.append(Check(name, run, fixer))

        label = plugin_label(impl.plugin_name)
        try:
            impl.function(register=register)
        except Exception as exc:
            failed = CheckResult(f"plugin {label}", False,
                                 f"plugin '{label}' failed in register_checks: {type(exc).__name__}: {exc}")
            found.append(Check(failed.name, _known(failed)))
    return found


def _known(result: CheckResult) -> Callable[[], CheckResult]:
    """A check whose result is already decided (a plugin that failed to register its checks)."""
    return lambda: result


def run_checks() -> list[CheckResult]:
    out = []
    for c in _all_checks():
        try:
            out.append(c.run())
        except Exception as exc:  # a check must never crash the doctor
            out.append(CheckResult(c.name, False, f"check failed: {exc or type(exc).__doc__}"))
    return out


def run_fixes() -> list[str]:
    messages = []
    for c in _all_checks():
        if c.fixer is None:
            continue
        result = c.run()
        if result.ok:
            continue
        try:
            messages.append(f"{c.name}: {c.fixer()}")
        except Exception as exc:
            messages.append(f"{c.name}: fix failed: {exc}")
    return messages
