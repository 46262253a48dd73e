"""Third-party plugins through real entry points: the example package is pip-installed into a
directory on PYTHONPATH, and `mlmh` runs in a subprocess as a user would run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mlmh-example-plugin"
MLMH = [sys.executable, "-m", "mlmh"]


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory) -> Path:
    target = tmp_path_factory.mktemp("site")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation", "--target", str(target), str(EXAMPLE)],
        check=True,
        cwd=tmp_path_factory.mktemp("build"),
    )
    return target


def _broken_dist(site: Path) -> None:
    """A distribution whose entry point raises on import."""
    info = site / "mlmh_broken_plugin-1.0.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mlmh-broken-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[mlmh]\nbroken = mlmh_broken_plugin\n")
    (site / "mlmh_broken_plugin.py").write_text("raise ImportError('this plugin is broken on purpose')\n")


def run(args, site: Path | None, **env_extra):
    env = {k: v for k, v in os.environ.items() if k != "MLMH_LOAD_PLUGINS"}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    env.update(env_extra)
    return subprocess.run(MLMH + args, capture_output=True, text=True, env=env, timeout=120)


def test_example_plugin_is_listed_with_its_hooks(plugin_site):
    out = run(["plugins"], plugin_site)
    assert out.returncode == 0, out.stderr
    plugins = {p["name"]: p for p in json.loads(out.stdout)}
    example = plugins["mlmh-example-plugin"]
    assert example["version"] == "0.1.0"
    assert example["hooks"] == ["mlmh_run_event", "register_commands", "register_maskings", "register_metrics"]
    assert any(p.get("builtin") for p in plugins.values())


def test_example_components_appear_in_ls_and_vanish_when_not_allowed(plugin_site):
    listed = json.loads(run(["ls", "maskings", "--json"], plugin_site).stdout)
    assert {"name": "every-nth", "plugin": "mlmh-example-plugin"}.items() <= next(r for r in listed if r["name"] == "every-nth").items()
    metrics = json.loads(run(["ls", "metrics", "--json"], plugin_site).stdout)
    assert next(r for r in metrics if r["name"] == "length-ratio")["higher_is_better"] is False
    assert run(["hello-example"], plugin_site).stdout.strip() == "hello from mlmh-example-plugin"

    hidden = run(["ls", "maskings", "--json"], plugin_site, MLMH_LOAD_PLUGINS="")
    assert "every-nth" not in {r["name"] for r in json.loads(hidden.stdout)}
    names = {p["name"] for p in json.loads(run(["plugins"], plugin_site, MLMH_LOAD_PLUGINS="").stdout)}
    assert "mlmh-example-plugin" not in names
    allowed = run(["ls", "maskings", "--json"], plugin_site, MLMH_LOAD_PLUGINS="mlmh-example-plugin")
    assert "every-nth" in {r["name"] for r in json.loads(allowed.stdout)}


def test_a_plugin_failing_on_import_is_named_and_the_others_load(plugin_site, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    for item in plugin_site.iterdir():
        (site / item.name).symlink_to(item)
    _broken_dist(site)
    out = run(["ls", "maskings", "--json"], site)
    assert out.returncode == 0
    assert "every-nth" in {r["name"] for r in json.loads(out.stdout)}
    assert "plugin 'mlmh-broken-plugin' failed to load: ImportError: this plugin is broken on purpose" in out.stderr
    assert len([l for l in out.stderr.splitlines() if "broken" in l]) == 1
