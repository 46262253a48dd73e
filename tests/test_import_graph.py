"""No import circle in the project: the graph of every import in ``harness/`` and ``plugins/`` — at module
level, inside functions and under ``TYPE_CHECKING`` alike — has no cycle.

Imports inside functions hide a circle from Python (it never fails to import), not from the reader: a
module that imports another inside a function still depends on it. A module's import of a package that
contains it (``import mlmh`` for ``mlmh.__version__``) is no edge: Python runs a package before anything
inside it.

The core's top level shows its layers: condensed to the entries of ``harness/mlmh`` (a package stands for every
module in it), the graph has no circle either, and docs/ARCHITECTURE.md's table of the top level names every entry
once, in a row below every row that imports it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = (ROOT / "harness", ROOT / "plugins")
CORE = ROOT / "harness" / "mlmh"
ARCHITECTURE = ROOT / "docs" / "ARCHITECTURE.md"
#: the most entries the core's top level may hold (issue: "about 30, not 72")
MOST_ENTRIES = 35


def modules(folders: tuple[Path, ...]) -> dict[str, Path]:
    """Every module under ``folders`` by its import name (a package by its ``__init__.py``)."""
    out = {}
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def imported(name: str, path: Path, known: dict[str, Path]) -> dict[str, int]:
    """The project modules that module ``name`` imports anywhere in its text, with the first line of each."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out: dict[str, int] = {}

    def add(target: str, line: int) -> None:
        if target in known and target != name and not name.startswith(target + "."):
            out.setdefault(target, line)

    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:  # `from pkg import sub` imports the submodule pkg.sub
                submodule = f"{source}.{alias.name}"
                add(submodule if submodule in known else source, node.lineno)
    return out


def import_graph(folders: tuple[Path, ...] = SOURCES) -> dict[str, dict[str, int]]:
    """module -> {module it imports: line}, for every module under ``folders``."""
    known = modules(folders)
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """One cycle (``[a, b, ..., a]``) through each strongly connected group of modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(group)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [_cycle_in(group, graph) for group in groups]


def _cycle_in(group: set[str], graph: dict[str, dict[str, int]]) -> list[str]:
    """A shortest cycle through the group's first module, by breadth-first search inside the group."""
    start = min(group)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for target in sorted(graph[node]):
                if target not in group:
                    continue
                if target == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if target not in came_from:
                    came_from[target] = node
                    following.append(target)
        frontier = following
    raise AssertionError(f"no cycle in strongly connected group {sorted(group)}")


def describe(cycle: list[str], graph: dict[str, dict[str, int]]) -> str:
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(cycle, cycle[1:])) + f" -> {cycle[-1]}"


def test_the_project_has_no_import_cycle():
    graph = import_graph()
    assert "mlmh.run.runner" in graph and "mlmh_builtins.samplers_mlm" in graph
    assert sum(len(targets) for targets in graph.values()) > 300  # the walk sees function-level imports too
    found = cycles(graph)
    assert not found, "import cycles:\n" + "\n".join(describe(cycle, graph) for cycle in found)


def test_a_planted_cycle_through_a_function_level_import_is_found_and_named(tmp_path):
    package = tmp_path / "src" / "pkg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "sub" / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n")
    (package / "b.py").write_text("from .sub import c\n")
    (package / "sub" / "c.py").write_text("def later():\n    from ..a import x\n")
    (package / "d.py").write_text("import pkg.a\nimport pkg\n")
    graph = import_graph((tmp_path / "src",))
    assert graph["pkg.d"] == {"pkg.a": 1}
    found = cycles(graph)
    assert found == [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]]
    assert describe(found[0], graph) == "pkg.a (line 1) -> pkg.b (line 1) -> pkg.sub.c (line 2) -> pkg.a"

    (package / "sub" / "c.py").write_text("def later():\n    return 1\n")
    assert cycles(import_graph((tmp_path / "src",))) == []


def entry_of(module: str) -> str | None:
    """The entry of the core's top level that holds ``module`` (``run`` for ``mlmh.run.runner``, ``mlmh`` for the
    package itself); None for a module outside the core."""
    parts = module.split(".")
    if parts[0] != "mlmh":
        return None
    return parts[1] if len(parts) > 1 else "mlmh"


def top_level_entries() -> set[str]:
    """What ``ls harness/mlmh`` shows, caches aside: each module by its name, ``__init__.py`` as ``mlmh``."""
    return {"mlmh" if path.name == "__init__.py" else path.stem if path.suffix == ".py" else path.name
            for path in CORE.iterdir() if path.name != "__pycache__"}


def entry_graph(graph: dict[str, dict[str, int]]) -> tuple[dict[str, dict[str, int]], dict[tuple[str, str], str]]:
    """The import graph condensed to the core's top-level entries, and for each edge the first import that makes it."""
    condensed: dict[str, dict[str, int]] = {}
    evidence: dict[tuple[str, str], str] = {}
    for module, targets in sorted(graph.items()):
        entry = entry_of(module)
        if entry is None:
            continue
        condensed.setdefault(entry, {})
        for target, line in sorted(targets.items()):
            other = entry_of(target)
            if other is not None and other != entry:
                condensed[entry].setdefault(other, line)
                evidence.setdefault((entry, other), f"{module} (line {line}) imports {target}")
    return condensed, evidence


def architecture_rows() -> list[tuple[str, set[str]]]:
    """The rows of ARCHITECTURE.md's table of the core's top level, faces first: each layer and its entries."""
    section = ARCHITECTURE.read_text(encoding="utf-8").split("## The core's top level", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|") for line in section.splitlines() if line.startswith("| ") and not line.startswith("| layer")]
    return [(cells[1].strip(), {name.rstrip("/") for name in re.findall(r"`([\w/]+)`", cells[2])}) for cells in rows]


def test_the_core_s_top_level_entries_import_each_other_without_a_circle():
    condensed, evidence = entry_graph(import_graph())
    assert {"run", "storage", "config", "types"} <= set(condensed)
    found = cycles(condensed)
    assert not found, "circles between the core's top-level entries:\n" + "\n".join(
        " -> ".join(cycle) + ": " + "; ".join(evidence[a, b] for a, b in zip(cycle, cycle[1:])) for cycle in found)


def test_the_core_s_top_level_is_the_layers_architecture_md_draws():
    entries = top_level_entries()
    assert len(entries) <= MOST_ENTRIES, f"{len(entries)} entries in harness/mlmh: group modules into the packages"
    rows = architecture_rows()
    named = [entry for _, row in rows for entry in row]
    assert sorted(named) == sorted(entries), (
        f"in harness/mlmh, not in ARCHITECTURE.md's table: {sorted(entries - set(named))}; "
        f"in the table, not in harness/mlmh: {sorted(set(named) - entries)}; "
        f"named twice: {sorted({e for e in named if named.count(e) > 1})}")
    row_of = {entry: index for index, (_, row) in enumerate(rows) for entry in row}
    condensed, evidence = entry_graph(import_graph())
    upward = [f"{evidence[entry, other]}: {rows[row_of[entry]][0]} reaches up to {rows[row_of[other]][0]}"
              for entry, targets in condensed.items() for other in targets if row_of[other] < row_of[entry]]
    assert not upward, "a lower layer imports a higher one:\n" + "\n".join(upward)
