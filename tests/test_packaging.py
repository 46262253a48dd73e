"""The house's layout: a source file's path is its import name, the builtins are entry points, the package
builds without a warning from the build backend, and an installed wheel finds the top-level presets."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from mlmh_builtins import presets

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


def test_the_wheel_ships_the_top_level_presets_where_the_presets_plugin_looks():
    build = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["hatch"]["build"]["targets"]
    assert build["wheel"]["force-include"] == {"presets": f"mlmh_builtins/{presets.WHEEL_FOLDER}"}
    assert "presets" in build["sdist"]["include"]
    assert not (ROOT / "plugins" / "mlmh_builtins" / presets.WHEEL_FOLDER).exists(), "the presets live in presets/ only"
    assert Path(str(presets.presets_folder())) == ROOT / "presets"
    assert [p.name for p in presets.preset_files()] == sorted(p.name for p in (ROOT / "presets").glob("*.toml"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheel")
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-w", str(folder)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    return next(folder.glob("mlmh-*.whl")), done.stdout + done.stderr


@pytest.mark.slow
def test_the_wheel_builds_without_backend_warnings_and_holds_code_data_and_presets(wheel):
    path, log = wheel
    backend = [line for line in log.splitlines()
               if "warning" in line.lower() and "is ignored: it is neither a file nor a directory" not in line]
    assert not backend, "\n".join(backend)
    names = zipfile.ZipFile(path).namelist()
    assert {n.split("/")[0] for n in names} == {"mlmh", "mlmh_builtins", f"mlmh-{metadata.version('mlmh')}.dist-info"}
    assert "mlmh/tui/mlmh.tcss" in names
    shipped = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith(f"mlmh_builtins/{presets.WHEEL_FOLDER}/"))
    assert shipped == sorted(p.name for p in (ROOT / "presets").glob("*.toml"))
    assert "mlmh_builtins/data/pan/pairs.jsonl" in names


@pytest.mark.slow
def test_an_installed_wheel_registers_the_shipped_presets(wheel, tmp_path):
    target = tmp_path / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target),
                           str(wheel[0])], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    probe = ("import mlmh_builtins.presets as p\n"
             "print(p.__file__)\n"
             "print(p.presets_folder())\n"
             "for f in p.preset_files(): print(f.name, len(f.read_text(encoding='utf-8')))\n")
    env = {**os.environ, "PYTHONPATH": str(target)}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=tmp_path,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    module, folder, *files = done.stdout.splitlines()
    assert Path(module).is_relative_to(target) and Path(folder) == target / "mlmh_builtins" / presets.WHEEL_FOLDER
    assert files == [f"{p.name} {len(p.read_text(encoding='utf-8'))}" for p in sorted((ROOT / "presets").glob("*.toml"))]
