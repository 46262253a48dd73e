"""Doctor checks come from the ``register_checks`` hook: a plugin whose hook raises is one failed check
naming it, and the other checks still run."""

from __future__ import annotations

from mlmh import hookimpl
from mlmh.doctor import CheckResult, run_checks, run_fixes
from mlmh.plugins.plugin_manager import get_plugin_manager


class Broken:
    @hookimpl
    def register_checks(self, register):
        raise RuntimeError("no config file")


class Fixable:
    fixed: list[str] = []

    @hookimpl
    def register_checks(self, register):
        register("fixable thing", lambda: CheckResult("fixable thing", bool(self.fixed), "state", "mlmh doctor --fix"),
                 fixer=lambda: self.fixed.append("done") or "made it")


def test_a_plugin_whose_check_hook_raises_is_one_failed_check_and_the_others_run():
    get_plugin_manager().register(Broken(), name="broken-checks")
    results = {r.name: r for r in run_checks()}
    failed = results["plugin broken-checks"]
    assert not failed.ok and "register_checks" in failed.detail and "no config file" in failed.detail
    assert results["cache"].ok and "bundled samples" in results


def test_a_registered_fixer_runs_under_fix_only_while_its_check_fails():
    Fixable.fixed.clear()
    get_plugin_manager().register(Fixable(), name="fixable")
    assert "fixable thing: made it" in run_fixes()
    assert {r.name: r.ok for r in run_checks()}["fixable thing"]
    assert not any(m.startswith("fixable thing") for m in run_fixes())


class NotReady:
    @hookimpl
    def register_checks(self, register):
        register("missing thing", lambda: CheckResult("missing thing", False, "not here", "apt-get install thing"))


def test_problems_shows_only_what_is_not_ready_and_one_line_when_all_is(monkeypatch):
    """What make setup / make demo print: the problems, not the whole table; plain doctor keeps the table."""
    from click.testing import CliRunner

    from mlmh import doctor as doctor_module
    from mlmh.cli import cli

    monkeypatch.setenv("COLUMNS", "200")  # Rich's table width: no cell wraps, whichever optional rows the machine adds
    everything = run_checks()
    ready = [CheckResult(r.name, True, r.detail, "") for r in everything]
    monkeypatch.setattr(doctor_module, "run_checks", lambda: ready)
    quiet = CliRunner().invoke(cli, ["doctor", "--problems"], terminal_width=200)
    assert quiet.exit_code == 0 and quiet.output.strip() == f"mlmh doctor: all {len(ready)} checks ready"
    full = CliRunner().invoke(cli, ["doctor"], terminal_width=200)
    assert full.exit_code == 0 and all(r.name in full.output for r in ready[:3])
    monkeypatch.undo()
    monkeypatch.setenv("COLUMNS", "200")
    get_plugin_manager().register(NotReady(), name="not-ready")
    problems = CliRunner().invoke(cli, ["doctor", "--problems"], terminal_width=200)
    assert problems.exit_code != 0 and "missing thing" in problems.output and "apt-get install thing" in problems.output
    ready_names = [r.name for r in everything if r.ok]
    assert "checks not ready" in problems.output and ready_names
    assert not any(name in problems.output for name in ready_names)  # ready checks are left out
