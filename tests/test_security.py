"""Security rules (issue 31, item 5): checkpoint code never runs on any loading path, the plugin discovery
cache cannot name a module that no installed distribution declares, caches are private to the user, and
no message advises turning a safety check off."""

from __future__ import annotations

import ast
import builtins
import json
import os
import stat
from pathlib import Path

import pytest

from mlmh.errors import ModelError
from mlmh.testing import build_tiny_model

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "harness").rglob("*.py"), *(ROOT / "plugins").rglob("*.py")])
#: the one function through which user checkpoints load; it passes trust_remote_code on
WRAPPER = ROOT / "harness" / "mlmh" / "adapters" / "checkpoints.py"


def _from_pretrained_calls():
    for path in SOURCES:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                if name == "from_pretrained":
                    yield path, node


def test_every_from_pretrained_call_names_trust_remote_code():
    """Every loading path, found by reading the source: each from_pretrained call (the library's, or
    mlmh.adapters.checkpoints.from_pretrained, which defaults it to False) says trust_remote_code, and only the
    wrapper and an hf-* model's own declared parameter pass anything but the literal False."""
    calls = list(_from_pretrained_calls())
    assert len(calls) >= 10  # adapters, training (--init and its tokenizer), gen-ppl, tokenizers, the wrapper
    for path, call in calls:
        where = f"{path.relative_to(ROOT)}:{call.lineno}"
        keywords = {k.arg: k.value for k in call.keywords}
        library_call = isinstance(call.func, ast.Attribute)
        if not library_call:  # mlmh.adapters.checkpoints.from_pretrained: False unless passed, never a literal True
            value = keywords.get("trust_remote_code")
            assert value is None or not (isinstance(value, ast.Constant) and value.value is True), where
            continue
        spread = [k.value for k in call.keywords if k.arg is None]
        loader = ROOT / "harness" / "mlmh" / "adapters" / "__init__.py"
        assert "trust_remote_code" in keywords or (path == loader and spread), where
        value = keywords.get("trust_remote_code")
        if value is not None and not (isinstance(value, ast.Constant) and value.value is False):
            assert path == WRAPPER, f"{where}: trust_remote_code is not the literal False"


def test_libraries_that_load_models_on_their_own_are_checked_first():
    """bert-score calls from_pretrained without trust_remote_code: its loader runs only after the
    checkpoint checks (which refuse shipped code)."""
    source = (ROOT / "plugins" / "mlmh_builtins" / "metrics_bertscore.py").read_text(encoding="utf-8")
    before = source[:source.index("_ENCODERS[key] = Encoder(model, layer)")]
    assert "local_checkpoint(model, \"bertscore\"" in before[before.rindex("def get_encoder"):]


@pytest.fixture(scope="module")
def code_checkpoint(tmp_path_factory) -> tuple[Path, Path]:
    """A tiny GPT-2 (a causal LM; every path can load it) whose config maps its classes to code shipped
    with it: that code, if ever imported, leaves a marker file."""
    out = tmp_path_factory.mktemp("custom-code") / "ckpt"
    build_tiny_model("clm", out)
    marker = out.parent / "code-ran"
    (out / "modeling_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                          "from transformers import GPT2LMHeadModel as EvilModel\n")
    (out / "configuration_evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n"
                                               "from transformers import GPT2Config as EvilConfig\n")
    config = json.loads((out / "config.json").read_text())
    config["auto_map"] = {"AutoConfig": "configuration_evil.EvilConfig",
                          "AutoModelForCausalLM": "modeling_evil.EvilModel",
                          "AutoModelForMaskedLM": "modeling_evil.EvilModel", "AutoModel": "modeling_evil.EvilModel"}
    (out / "config.json").write_text(json.dumps(config))
    return out, marker


def _loading_paths(path: Path):
    """Every way a user can make mlmh load a checkpoint, each as a call that loads ``path``."""
    from mlmh.adapters import load_adapter
    from mlmh.registry import get_registry
    from mlmh.training.models import init_source, load_init
    from mlmh_builtins import metrics_bertscore, metrics_diversity, metrics_ppl

    registry = get_registry()
    return {
        "hf-clm:path=": lambda: registry.build("model", f"hf-clm:path={path}").load(None),
        "load_adapter mlm": lambda: load_adapter("mlm", path),
        "a run's load (weights deferred)": lambda: load_adapter("clm", path, defer_weights=True),
        "train --init": lambda: (init_source(str(path)), load_init(str(path), "clm")),
        "gen-ppl:path=": lambda: metrics_ppl.load_reference_lm(str(path)),
        "bertscore:model=": lambda: metrics_bertscore.get_encoder(str(path), 1),
        "distinct-n tokenizer": lambda: metrics_diversity.load_tokenizer(str(path)),
    }


@pytest.mark.parametrize("route", list(_loading_paths(Path("x"))))
def test_a_checkpoint_that_ships_code_is_refused_on_every_path(code_checkpoint, route, monkeypatch):
    path, marker = code_checkpoint

    def prompted(*args, **kwargs):
        raise AssertionError("a prompt asked whether to run checkpoint code")

    monkeypatch.setattr(builtins, "input", prompted)
    with pytest.raises(ModelError) as info:
        _loading_paths(path)[route]()
    message = str(info.value)
    assert "ships its own Python code" in message and str(path) in message and "\n" not in message
    assert "trust_remote_code" not in message
    assert not marker.exists()


def test_gen_ppl_from_the_environment_is_refused_too(code_checkpoint, monkeypatch):
    from mlmh.components import ScoringItem
    from mlmh.plugins.contracts import score_metric
    from mlmh.registry import get_registry

    path, marker = code_checkpoint
    monkeypatch.setenv("MLMH_GENPPL_MODEL", str(path))
    metric = get_registry().build("metric", "gen-ppl")
    items = [ScoringItem(prediction="a b c", reference="a b c")] * 2
    results = score_metric(metric, items, seed=0)
    assert results[0].error and "ships its own Python code" in results[0].error and not marker.exists()


# -- the plugin discovery cache ----------------------------------------------------------------------
def _dist(site: Path, name: str, module: str, body: str = "") -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[mlmh]\nplugin = {module}\n")
    (site / f"{module}.py").write_text(body or "LOADED = True\n")


def test_the_discovery_cache_cannot_name_an_undeclared_module(tmp_path, monkeypatch):
    from mlmh.plugins import plugin_manager

    site = tmp_path / "site"
    _dist(site, "good-plugin", "good_plugin_mod")
    marker = tmp_path / "evil-ran"
    (site / "evil_mod.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "cache"))
    table = plugin_manager.entry_point_table()
    assert ["good-plugin", "1.0", "plugin", "good_plugin_mod"] in table
    cache = tmp_path / "cache" / "entry-points.json"
    data = json.loads(cache.read_text())
    for row in data["table"]:  # an attacker with write access to the cache renames the module...
        if row[0] == "good-plugin":
            row[3] = "evil_mod"
    data["table"].append(["not-installed", "1.0", "x", "evil_mod"])  # ...and adds a distribution
    cache.write_text(json.dumps(data))  # the stamps in the file still match
    table = plugin_manager.entry_point_table()
    assert all(row[3] != "evil_mod" for row in table)
    assert ["good-plugin", "1.0", "plugin", "good_plugin_mod"] in table
    plugin_manager.reset()
    try:
        plugin_manager.get_plugin_manager()
    finally:
        plugin_manager.reset()
    assert not marker.exists()


def test_a_valid_discovery_cache_is_used(tmp_path, monkeypatch):
    """The check costs no rescan: a cache whose rows are declared is returned as written."""
    from mlmh.plugins import plugin_manager

    site = tmp_path / "site"
    _dist(site, "good-plugin", "good_plugin_mod")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "cache"))
    first = plugin_manager.entry_point_table()
    import importlib.metadata

    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **kw: pytest.fail("rescanned a valid cache"))
    assert plugin_manager.entry_point_table() == first


def test_the_discovery_cache_cannot_hide_a_plugin(tmp_path, monkeypatch):
    """Rows deleted from the file (stamps kept) hide nothing: a table that lacks a declared entry point
    is scanned again, builtins included (issue 41, item 2)."""
    from mlmh.plugins import plugin_manager

    site = tmp_path / "site"
    _dist(site, "good-plugin", "good_plugin_mod")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "cache"))
    full = plugin_manager.entry_point_table()
    assert any(row[0] == "mlmh" for row in full) and ["good-plugin", "1.0", "plugin", "good_plugin_mod"] in full
    cache = tmp_path / "cache" / "entry-points.json"
    for hidden in ("mlmh", "good-plugin"):
        data = json.loads(cache.read_text())
        data["table"] = [row for row in data["table"] if row[0] != hidden]
        cache.write_text(json.dumps(data))
        assert plugin_manager.entry_point_table() == full, hidden
    data = json.loads(cache.read_text())
    data["table"] = []
    cache.write_text(json.dumps(data))
    assert plugin_manager.entry_point_table() == full


def test_builtin_components_survive_a_pruned_discovery_cache(tmp_path, monkeypatch):
    from mlmh.plugins import plugin_manager
    from mlmh.registry import get_registry

    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "cache"))
    plugin_manager.reset()
    plugin_manager.entry_point_table()
    cache = tmp_path / "cache" / "entry-points.json"
    data = json.loads(cache.read_text())
    data["table"] = [row for row in data["table"] if "samplers" not in row[3] and "metrics" not in row[3]]
    cache.write_text(json.dumps(data))
    plugin_manager.reset()
    try:
        assert "bleu" in get_registry().names("metric") and "mask-predict" in get_registry().names("sampler")
    finally:
        plugin_manager.reset()


def test_doctor_says_when_a_builtin_plugin_did_not_load(monkeypatch):
    from mlmh import doctor
    from mlmh.plugins import plugin_manager

    result = doctor._plugins()
    assert result.ok, result.detail
    monkeypatch.setattr(plugin_manager, "missing_builtins", lambda: ["mlmh_builtins.metrics_overlap"])
    result = doctor._plugins()
    assert not result.ok and "builtin plugin(s) not loaded: mlmh_builtins.metrics_overlap" in result.detail


def test_missing_builtins_reads_the_distributions_metadata_not_the_cache(monkeypatch):
    from mlmh.plugins import plugin_manager

    assert plugin_manager.missing_builtins() == []
    manager = plugin_manager.get_plugin_manager()
    plugin = manager.get_plugin("mlmh_builtins.metrics_overlap")
    manager.unregister(plugin)
    try:
        assert plugin_manager.missing_builtins() == ["mlmh_builtins.metrics_overlap"]
    finally:
        manager.register(plugin, name="mlmh_builtins.metrics_overlap")


# -- private caches ----------------------------------------------------------------------------------
def test_caches_are_created_private_to_the_user(tmp_path, monkeypatch):
    """Under a permissive umask, the sample cache (and its WAL), the model cache and the discovery cache
    are readable by the user alone."""
    from mlmh.plugins import plugin_manager
    from mlmh.storage.cache import SampleCache
    from mlmh.storage.modelcache import ModelCache

    old = os.umask(0o022)
    try:
        monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "cache"))
        cache = SampleCache(tmp_path / "cache" / "samples.sqlite")
        cache.put_results("k", [])
        path, _ = ModelCache(tmp_path / "cache" / "models").get_or_build(
            "entry", lambda tmp: (tmp / "weights.txt").write_text("w"), complete=lambda p: (p / "weights.txt").is_file())
        plugin_manager.entry_point_table()
    finally:
        os.umask(old)
    mode = lambda p: stat.S_IMODE(p.stat().st_mode)  # noqa: E731
    assert mode(tmp_path / "cache") == 0o700
    for name in ("samples.sqlite", "samples.sqlite-wal", "entry-points.json"):
        assert mode(tmp_path / "cache" / name) == 0o600, name
    assert mode(tmp_path / "cache" / "models") == 0o700 and mode(path) == 0o700
    cache.close()


# -- no advice to turn a safety check off ------------------------------------------------------------
def test_no_message_advises_disabling_a_safety_check():
    """Strings in the source never suggest trust_remote_code=True or weights_only=False."""
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value.replace(" ", "")
                assert "weights_only=False" not in text and "trust_remote_code=True" not in text, path


def test_a_pickled_weights_refusal_does_not_repeat_torch_advice():
    from mlmh.adapters.checkpoints import explain

    torch_message = ("Weights only load failed. This file can still be loaded, to do so you have two options, do "
                     "those steps only if you trust the source of the checkpoint.\n(1) Re-running `torch.load` with "
                     "`weights_only` set to `False` will likely succeed")
    text = explain(OSError(torch_message))
    assert "False" not in text and "pickled" in text
    assert "trust_remote_code" not in explain(ValueError("pass the argument `trust_remote_code=True` to allow it"))
