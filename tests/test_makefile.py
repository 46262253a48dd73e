"""The Makefile installs what each target uses: the demo the package alone, the tests their extras."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def planned(tmp_path: Path, *args: str) -> str:
    """The commands ``make ARGS`` would run for a fresh venv (make -n runs nothing). Run under ``make test
    EXTRAS=test,ray`` (CI), make hands its variables to sub-makes through the environment: they are left out,
    so the plan is the one a user's own ``make ARGS`` gets."""
    inherited = ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "EXTRAS", "PYTHON", "VENV")
    env = {k: v for k, v in os.environ.items() if k not in inherited}
    done = subprocess.run(["make", "-n", f"VENV={tmp_path / 'venv'}", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("target", ["setup", "demo", "quick"])
def test_the_demo_targets_install_the_package_alone(tmp_path, target):
    plan = planned(tmp_path, target)
    assert "pip install --quiet -e '.'" in plan and "[test" not in plan and "[judge" not in plan
    assert "mlmh doctor --fix --problems ||" in plan and "doctor --fix >/dev/null" not in plan  # a failing fix is shown


def test_the_test_targets_install_the_test_extras_and_ci_adds_ray(tmp_path):
    assert "-e '.[test]'" in planned(tmp_path, "test")
    ci = planned(tmp_path, "test", "EXTRAS=test,ray")  # what .ci/run runs
    assert "-e '.[test,ray]'" in ci and ci.rstrip().endswith("pytest -n 2 -q")
    fast = planned(tmp_path, "test-fast")
    assert "-e '.[test]'" in fast and fast.rstrip().endswith('pytest -n 2 -q -m "not slow"')


def test_make_judge_adds_the_judge_extra_and_shows_the_doctor(tmp_path):
    plan = planned(tmp_path, "judge")
    assert "pip install --quiet -e '.[judge]'" in plan and "[test" not in plan
    assert plan.rstrip().splitlines()[-1].startswith(f"{tmp_path / 'venv'}/bin/mlmh doctor --fix --problems ||")


def test_make_test_type_checks_before_the_suite(tmp_path):
    plan = planned(tmp_path, "test")
    assert "python -m mypy" in plan and plan.index("python -m mypy") < plan.index("python -m pytest")


@pytest.mark.slow
def test_make_test_fast_says_how_many_tests_it_deselected(tmp_path):
    """README: "pytest prints how many, and how many it deselected". Under -n 2 the workers deselect and the
    controller's summary never counted them; tests/conftest.py's hooks (tests/xdist_deselected.py) add them. The
    Makefile's own pytest flags, on a suite of one fast and one slow test, with that conftest line."""
    import shlex
    import sys

    command = planned(tmp_path, "test-fast").rstrip().splitlines()[-1]
    flags = shlex.split(command.split("python -m pytest", 1)[1])
    hooks = next(line for line in (ROOT / "tests" / "conftest.py").read_text(encoding="utf-8").splitlines()
                 if line.startswith("from xdist_deselected import"))
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "conftest.py").write_text(hooks + "\n")
    (suite / "test_two.py").write_text("import pytest\n\ndef test_fast():\n    pass\n\n"
                                       "@pytest.mark.slow\ndef test_slow():\n    pass\n")
    (suite / "pytest.ini").write_text("[pytest]\nmarkers = slow: slow\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "tests")}
    done = subprocess.run([sys.executable, "-m", "pytest", *flags, "-p", "no:cacheprovider"], cwd=suite,
                          capture_output=True, text=True, timeout=300, env=env)
    assert "-n" in flags and done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1].startswith("1 passed, 1 deselected"), done.stdout
