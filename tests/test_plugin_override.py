"""A third-party plugin can replace any builtin through the plugin API (``register(..., replace=True)``),
and the core reaches builtins only that way: no module of the core imports a builtin plugin."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Sequence

import pytest

import runner_fakes
from mlmh import hookimpl
from mlmh.components import InputsOnly, Metric, ScoringItem
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry
from mlmh.types import MetricResult

CORE = Path(__file__).resolve().parents[1] / "harness" / "mlmh"
MARK = "unigram overlap, a test's replacement of the builtin bleu"


class UnigramBleu(InputsOnly, Metric):
    """Stands in for the builtin ``bleu``: the share of predicted words found in the reference, on a 0-1
    scale (sacrebleu's BLEU is on 0-100), and says so in its info."""

    name = "bleu"
    description = "share of predicted words found in the reference"

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        per = []
        for item in items:
            words, reference = item.prediction.split(), set(item.reference.split())
            per.append(sum(w in reference for w in words) / len(words) if words else None)
        known = [v for v in per if v is not None]
        value = sum(known) / len(known) if known else None
        return [MetricResult("bleu", value, True, per_sample=per, info={"implementation": MARK})]


class Replacing:
    """A plugin object, as an entry point's module would be: it replaces the builtin bleu on purpose."""

    @hookimpl
    def register_metrics(self, register):
        register(UnigramBleu(), replace=True)


class Clashing:
    """A plugin that registers a metric under a builtin's name without saying it means to replace it."""

    @hookimpl
    def register_metrics(self, register):
        register(UnigramBleu())


def test_replace_takes_the_name_over_from_the_builtin_without_a_warning():
    from mlmh.plugins import plugin_manager

    listed = get_registry().names("metric")
    plugin_manager.reset()
    get_plugin_manager().register(Replacing(), name="replacing")
    registry = get_registry()
    assert isinstance(registry.get("metric", "bleu"), UnigramBleu)
    assert registry.owner("metric", "bleu") == "replacing"
    assert registry.replaced[("metric", "bleu")] == "mlmh_builtins.metrics_overlap"
    assert not [w for w in registry.warnings if "'bleu'" in w]
    assert registry.names("metric") == listed  # in the builtin's place


def test_an_accidental_clash_keeps_the_builtin_and_warns_naming_both():
    get_plugin_manager().register(Clashing(), name="clashing")
    registry = get_registry()
    assert not isinstance(registry.get("metric", "bleu"), UnigramBleu)
    assert any("'bleu'" in w and "'clashing'" in w and "'mlmh_builtins.metrics_overlap'" in w for w in registry.warnings)


def test_a_name_is_replaced_once_a_second_replacement_is_a_clash():
    pm = get_plugin_manager()
    pm.register(Replacing(), name="first-replacement")
    pm.register(Replacing(), name="second-replacement")
    registry = get_registry()
    assert registry.owner("metric", "bleu") == "first-replacement"
    assert any("'second-replacement' ignored: already replaced by plugin 'first-replacement'" in w
               for w in registry.warnings)


def test_a_run_scores_with_the_replacement(tmp_path):
    from mlmh.api import evaluate

    runner_fakes.install()
    get_plugin_manager().register(Replacing(), name="replacing")
    preset = tmp_path / "fake.toml"
    table = {**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill"],
             "metrics": ["bleu"], "tasks": [], "limit": 3}
    preset.write_text("\n".join(f"{k} = {json.dumps(v)}" for k, v in table.items()), encoding="utf-8")
    evaluate(str(preset), output_path=tmp_path / "run", use_cache=False)
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    scored = [c["metrics"]["bleu"] for c in results["conditions"]]
    assert scored and all(m["info"]["implementation"] == MARK for m in scored)
    assert all(0.0 <= m["value"] <= 1.0 for m in scored)  # the replacement's scale, not sacrebleu's 0-100


def test_mlmh_score_and_the_bench_build_the_replacement():
    from mlmh.bench.metrics import measure_metric_throughput
    from mlmh.run.score_files import score_texts

    get_plugin_manager().register(Replacing(), name="replacing")
    (result,) = score_texts(["bleu"], ["the cat sat"], ["the cat ran"])
    assert result.info["implementation"] == MARK and result.value == pytest.approx(2 / 3)
    figures = measure_metric_throughput(["bleu"], pairs=4, runs=1)["bleu"]
    assert "error" not in figures and figures["pairs"] == 4


def _imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) of every import in a file, ``importlib.import_module("...")`` with a literal included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in
              ("import_module", "__import__") and node.args and isinstance(node.args[0], ast.Constant)):
            found.append((node.lineno, str(node.args[0].value)))
    return found


def test_no_core_module_imports_a_builtin_plugin():
    offenders = [f"{path.relative_to(CORE.parent)}:{line}: {module}"
                 for path in sorted(CORE.rglob("*.py")) for line, module in _imports_of(path)
                 if module == "mlmh_builtins" or module.startswith("mlmh_builtins.")]
    assert len(list(CORE.rglob("*.py"))) > 40  # the scan sees the core
    assert offenders == []


def test_the_scan_finds_an_import_of_a_builtin(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import importlib\nfrom mlmh_builtins.metrics_bertscore import minilm_path\n"
                      "def f():\n    import mlmh_builtins\n    return importlib.import_module('mlmh_builtins.maskings')\n",
                      encoding="utf-8")
    assert [module for _, module in sorted(_imports_of(sample)) if module.startswith("mlmh_builtins")] == [
        "mlmh_builtins.metrics_bertscore", "mlmh_builtins", "mlmh_builtins.maskings"]
