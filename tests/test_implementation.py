"""A component's implementation identity (part of every sample's cache key) follows its code."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from mlmh.implementation import engine_id, implementation_id

PRINT_ID = "from mlmh.implementation import implementation_id; from kit.sampler import Fill; print(implementation_id(Fill()))"


def kit(root, helper_body="def pick(x):\n    return x\n", other_body="X = 1\n"):
    package = root / "kit"
    package.mkdir(exist_ok=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "helper.py").write_text(helper_body, encoding="utf-8")
    (package / "other.py").write_text(other_body, encoding="utf-8")
    (package / "sampler.py").write_text(textwrap.dedent("""
        from kit.helper import pick


        class Fill:
            def generate(self, x):
                return pick(x)
    """), encoding="utf-8")


def identity(root) -> str:
    done = subprocess.run([sys.executable, "-c", PRINT_ID], cwd=root, capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(root), "PATH": ""})
    return done.stdout.strip()


def test_editing_the_module_or_a_helper_it_imports_changes_the_identity(tmp_path):
    kit(tmp_path)
    first = identity(tmp_path)
    assert first.startswith("kit==unknown+") and identity(tmp_path) == first  # stable across processes
    kit(tmp_path, other_body="X = 2\n")  # a module the sampler does not reach
    assert identity(tmp_path) == first
    kit(tmp_path, other_body="X = 2\n", helper_body="def pick(x):\n    return x[::-1]\n")
    assert identity(tmp_path) != first


def test_builtin_ids_name_the_distribution_and_the_engine_is_separate():
    from mlmh.registry import get_registry

    sampler = get_registry().build("sampler", "mask-predict")
    assert implementation_id(sampler).startswith("mlmh==")
    assert implementation_id(get_registry().build("sampler", "gibbs")) == implementation_id(
        get_registry().build("sampler", "gibbs:steps=3"))  # parameters are keyed separately, not in the code id
    assert engine_id().startswith("mlmh==") and engine_id() != implementation_id(sampler)


def test_the_engine_covers_every_adapter_module_whatever_was_imported_before():
    """The model adapters are a package; the engine's identity reaches each of its modules from ``mlmh.adapters``
    alone (before any model loads), so editing any of them changes the identity of every cached sample."""
    code = ("import mlmh.adapters, mlmh.generation, mlmh.toolkit, mlmh.types, mlmh.words\n"
            "from mlmh.implementation import ENGINE_MODULES, _reachable\n"
            "print(*sorted(set().union(*(_reachable(m) for m in ENGINE_MODULES))))")
    reached = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    adapters = {"mlmh.adapters", "mlmh.adapters.base", "mlmh.adapters.decoding", "mlmh.adapters.readout",
                "mlmh.adapters.sentinels", "mlmh.adapters.checkpoints", "mlmh.adapters.checkpoint_kinds"}
    assert adapters <= set(reached), sorted(adapters - set(reached))
    assert not any(name.startswith("mlmh.training") for name in reached)


def _module_level_imports(name: str) -> set[str]:
    """The core modules ``name`` imports when it is imported: its top-level import statements (not those inside
    functions or under ``TYPE_CHECKING``, which its identity cannot reach and its import does not run)."""
    import ast
    import importlib.util

    spec = importlib.util.find_spec(name)
    found = set()
    for node in ast.parse(open(spec.origin, encoding="utf-8").read()).body:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:  # the core imports absolutely
            found.update(f"{node.module}.{a.name}" if _is_module(f"{node.module}.{a.name}") else node.module
                         for a in node.names)
    return {module for module in found if module.startswith("mlmh.")}


def _is_module(name: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module, not a package
        return False


def test_the_engine_covers_every_core_module_it_imports_whichever_package_holds_it():
    """The engine's identity follows the engine's own imports: every core module an engine module imports on
    import, and theirs in turn (the run's seeds in ``mlmh.machine``, the results' blocks in ``mlmh.types``...), is
    part of it, so moving a module into a package never drops it from the cache keys."""
    from mlmh.implementation import ENGINE_MODULES

    closure, todo = set(), list(ENGINE_MODULES)
    while todo:
        name = todo.pop()
        if name not in closure:
            closure.add(name)
            todo.extend(_module_level_imports(name))
    assert {"mlmh.machine.seeding", "mlmh.types.result_blocks"} <= closure  # the walk sees the moved modules
    code = (f"import {', '.join(ENGINE_MODULES)}\n"
            "from mlmh.implementation import ENGINE_MODULES, _reachable\n"
            "print(*sorted(set().union(*(_reachable(m) for m in ENGINE_MODULES))))")
    reached = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert closure <= set(reached), sorted(closure - set(reached))
