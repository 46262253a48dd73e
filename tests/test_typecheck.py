"""The type checker's configuration covers both source folders, and what it is told to ignore stays few and
explained: at most 15 ``# type: ignore``, each with its error code and, after it, why (``make typecheck`` runs
mypy itself, as the first step of ``make test``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
IGNORE = re.compile(r"#\s*type:\s*ignore")
EXPLAINED = re.compile(r"# type: ignore\[[a-z-]+(, [a-z-]+)*\]  # \S")
BUDGET = 15


def test_mypy_checks_both_source_folders():
    mypy = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["files"] == ["harness/mlmh", "plugins/mlmh_builtins"]
    assert mypy["warn_unused_ignores"] and "ignore-without-code" in mypy["enable_error_code"]


def test_type_ignores_are_few_and_each_says_why():
    found = [(path.relative_to(ROOT), number, line)
             for folder in ("harness", "plugins") for path in sorted((ROOT / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if IGNORE.search(line)]
    unexplained = [f"{path}:{number}" for path, number, line in found if not EXPLAINED.search(line)]
    assert not unexplained, f"a type: ignore without its code and reason: {unexplained}"
    assert len(found) <= BUDGET, f"{len(found)} type: ignore comments (at most {BUDGET}): fix the types instead"
