"""The identity of a component's implementation: which code produced a result.

A cached sample is only as good as the code that made it. The identity of a component is its
distribution's name and version plus a hash of the source of its module *and every module of the same
top-level package that module reaches through its globals* (what it imports, transitively). So editing
a sampler's module, or a helper module it imports, changes the identity, while editing an unrelated
plugin does not. Modules without readable source (compiled, frozen) contribute their version only.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import sys
import types
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

#: engine modules every generation passes through, whatever the sampler imports
#: (the sampler toolkit too: a builtin or third-party sampler's package does not reach it, being another's)
ENGINE_MODULES = ("mlmh.generation", "mlmh.words", "mlmh.types", "mlmh.adapters", "mlmh.toolkit")


def implementation_id(component: Any) -> str:
    """``dist==version+sourcehash`` of the class of ``component`` (see the module docstring)."""
    module = type(component).__module__
    return f"{_distribution(module)}+{source_hash(module)}"


def engine_id() -> str:
    """The identity of the generation engine itself (batching, word splitting, the model adapters)."""
    return modules_id(ENGINE_MODULES)


def modules_id(names: Sequence[str]) -> str:
    """``dist==version+hash`` of the source of ``names`` (each imported) and the same-package modules they reach:
    the identity of code that imports what it uses inside its functions, which no one module's globals show."""
    digest = hashlib.sha256()
    for name in names:
        importlib.import_module(name)
        digest.update(source_hash(name).encode())
    return f"{_distribution(names[0])}+{digest.hexdigest()[:16]}"


#: libraries whose version can change a generation or a score (results.json lists them too)
LIBRARIES = ("torch", "transformers", "tokenizers", "sacrebleu", "rouge-score", "nltk", "bert-score",
             "scikit-learn", "scipy", "numpy", "sklearn-crfsuite", "seqeval")


@lru_cache(maxsize=None)
def library_versions() -> tuple[tuple[str, str | None], ...]:
    """``(distribution, version or None)`` of each of :data:`LIBRARIES`."""
    from importlib import metadata

    found: list[tuple[str, str | None]] = []
    for dist in LIBRARIES:
        try:
            found.append((dist, metadata.version(dist)))
        except metadata.PackageNotFoundError:
            found.append((dist, None))
    return tuple(found)


def files_identity(path: str | os.PathLike) -> str:
    """A hash of the relative name, size and modification time of every file under ``path`` (a
    directory or one file): what a data package is, for cache keys, without reading its contents."""
    root = Path(path)
    files = sorted(p for p in root.rglob("*") if p.is_file()) if root.is_dir() else [root]
    digest = hashlib.sha256(str(root.resolve()).encode())
    for file in files:
        stat = file.stat()
        digest.update(f"{file.relative_to(root) if file != root else file.name}|{stat.st_size}|{stat.st_mtime_ns}".encode())
    return digest.hexdigest()[:16]


@lru_cache(maxsize=None)
def source_hash(module_name: str) -> str:
    """A hash of the source of ``module_name`` and the same-package modules it reaches."""
    digest = hashlib.sha256()
    for name in sorted(_reachable(module_name)):
        digest.update(name.encode())
        digest.update(_source(name))
    return digest.hexdigest()[:16]


def _reachable(module_name: str) -> set[str]:
    """``module_name`` and, transitively, the modules of its top-level package referenced by its
    globals (imported modules, and the modules of imported classes and functions)."""
    top = module_name.split(".")[0]
    seen: set[str] = set()
    todo = [module_name]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        module = sys.modules.get(name)
        if module is None:
            continue
        for value in vars(module).values():
            target: str | None
            if isinstance(value, types.ModuleType):
                target = value.__name__
            else:
                target = getattr(value, "__module__", None) if isinstance(value, (type, types.FunctionType)) else None
            if isinstance(target, str) and target.split(".")[0] == top and target not in seen:
                todo.append(target)
    return seen


def _source(module_name: str) -> bytes:
    module = sys.modules.get(module_name)
    if module is None:
        return b""
    try:
        return inspect.getsource(module).encode("utf-8")
    except (OSError, TypeError):
        return b""


def _distribution(module_name: str) -> str:
    """``name==version`` of the installed distribution that provides ``module_name``'s top package."""
    return _top_distribution(module_name.split(".")[0])


@lru_cache(maxsize=None)
def _top_distribution(top: str) -> str:
    from importlib import metadata

    names = _packages_distributions().get(top) or []
    for dist in names:
        try:
            return f"{dist}=={metadata.version(dist)}"
        except metadata.PackageNotFoundError:
            continue
    return f"{top}==unknown"


@lru_cache(maxsize=1)
def _packages_distributions() -> dict[str, list[str]]:
    """Top-level package -> distributions; reads every installed distribution's file list (about 0.5 s).

    An editable install lists only a ``.pth`` file, so its packages are read from the folders that file
    puts on ``sys.path`` (mlmh's own editable install adds ``harness/`` and ``plugins/``); only editable
    installs (``direct_url.json``) have their file lists read for this, which keeps it cheap."""
    from importlib import metadata

    found = {top: list(names) for top, names in metadata.packages_distributions().items()}
    for dist in metadata.distributions():
        try:
            editable = json.loads(dist.read_text("direct_url.json") or "{}").get("dir_info", {}).get("editable")
        except (ValueError, AttributeError):
            editable = False
        if not editable:
            continue
        for file in dist.files or []:
            if file.suffix != ".pth":
                continue
            pth = Path(str(dist.locate_file(file)))
            try:
                lines = pth.read_text(encoding="utf-8").splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in (raw.strip() for raw in lines):
                folder = pth.parent / line  # a .pth line is a folder, absolute or relative to the .pth's own
                if not line or line.startswith(("#", "import")) or not folder.is_dir():
                    continue
                for child in folder.iterdir():
                    top = child.stem if child.suffix == ".py" else child.name
                    if (child.suffix == ".py" or (child / "__init__.py").is_file()) and top.isidentifier():
                        names = found.setdefault(top, [])
                        if dist.metadata["Name"] not in names:
                            names.append(dist.metadata["Name"])
    return found
