"""pytest's "N deselected" under pytest-xdist: ``make test-fast`` runs ``pytest -n 2 -m "not slow"``, whose workers
collect and deselect while the controller prints the summary, so the line said "1643 passed" and never how many
slow tests were left out. Each worker hands its count back (``workeroutput``); the controller adds it to the count
pytest's own summary line reads. tests/conftest.py imports these hooks."""

from __future__ import annotations

from typing import Any

import pytest

DESELECTED = pytest.StashKey[int]()


class Deselected:
    """One test a worker deselected, as the summary counts it (other plugins read each entry's ``__dict__``)."""

    count_towards_summary = True


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items:
        config = items[0].config
        config.stash[DESELECTED] = config.stash.get(DESELECTED, 0) + len(items)


def pytest_sessionfinish(session: pytest.Session) -> None:
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: its count goes back to the controller
        workeroutput["deselected"] = session.config.stash.get(DESELECTED, 0)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """A worker finished: its deselected count (every worker collects the same tests) is the run's, once."""
    config = node.config
    count = getattr(node, "workeroutput", {}).get("deselected", 0)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.stash.get(DESELECTED, 0) >= count:
        return
    config.stash[DESELECTED] = count
    reporter.stats["deselected"] = [Deselected() for _ in range(count)]
