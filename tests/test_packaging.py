"""The house's layout: a source file's path is its import name, the builtins are entry points, and the
package builds without a warning from the build backend."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SOURCE_ROOTS = {"harness": "mlmh", "plugins": "mlmh_builtins"}


def source_files():
    for folder, package in SOURCE_ROOTS.items():
        for path in sorted((ROOT / folder / package).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            yield path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_every_source_file_is_imported_from_its_own_path():
    files = list(source_files())
    assert len(files) > 60
    for path, name in files:
        spec = importlib.util.find_spec(name)
        assert spec is not None and Path(spec.origin).resolve() == path, f"{path} is not what `import {name}` loads"
    stray = [p for folder in SOURCE_ROOTS for p in (ROOT / folder).glob("*.py")]
    assert not stray, f"source files outside a package folder: {stray}"


def test_every_builtin_module_is_an_entry_point_of_the_mlmh_distribution():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["entry-points"]["mlmh"]
    modules = {path.stem for path, _ in source_files() if path.parent == ROOT / "plugins" / "mlmh_builtins"}
    plugins = {m for m in modules if (ROOT / "plugins" / "mlmh_builtins" / f"{m}.py").read_text(encoding="utf-8").count("@hookimpl")}
    assert plugins and {value for value in declared.values()} == {f"mlmh_builtins.{m}" for m in plugins}
    installed = {ep.value for ep in metadata.entry_points(group="mlmh") if ep.dist and ep.dist.name == "mlmh"}
    assert installed == set(declared.values()), "the installed entry points are stale: pip install -e ."


@pytest.mark.slow
def test_the_wheel_builds_without_backend_warnings_and_holds_code_data_and_presets(tmp_path):
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    backend = [line for line in (done.stdout + done.stderr).splitlines()
               if "warning" in line.lower() and "is ignored: it is neither a file nor a directory" not in line]
    assert not backend, "\n".join(backend)
    names = zipfile.ZipFile(next(tmp_path.glob("mlmh-*.whl"))).namelist()
    assert {n.split("/")[0] for n in names} == {"mlmh", "mlmh_builtins", f"mlmh-{metadata.version('mlmh')}.dist-info"}
    assert "mlmh/tui/mlmh.tcss" in names and "mlmh_builtins/preset_files/pan.toml" in names
    assert "mlmh_builtins/data/pan/pairs.jsonl" in names
