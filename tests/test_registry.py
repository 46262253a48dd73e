"""The registry through the real plugin manager: builtins, duplicates, failing plugins."""

import types

import pytest

from mlmh import hookimpl
from mlmh.components import Masking
from mlmh.errors import SpecError
from mlmh.params import Param
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry
from mlmh.types import MaskPlan


class FirstHalf(Masking):
    name = "first-half"
    description = "mask the first half of the words"
    parameters = (Param("ratio", float, 0.5, "share", min=0, max=1),)

    def mask(self, document, words, rng):
        return MaskPlan(self.spec, tuple(range(int(len(words) * self.params["ratio"]))))


def _plugin(name, **hooks):
    module = types.ModuleType(name)
    for hook_name, fn in hooks.items():
        setattr(module, hook_name, hookimpl(fn))
    return module


def test_plugin_registration_build_and_spec_errors():
    get_plugin_manager().register(_plugin("p1", register_maskings=lambda register: register(FirstHalf())), name="p1")
    registry = get_registry()
    built = registry.build("masking", "first-half:ratio=0.25")
    assert isinstance(built, FirstHalf) and built.params["ratio"] == 0.25
    assert registry.owner("masking", "first-half") == "p1"
    with pytest.raises(SpecError, match="unknown masking 'frst-half'; did you mean 'first-half'"):
        registry.build("masking", "frst-half")
    with pytest.raises(SpecError, match="unknown parameter of masking 'first-half' 'ration'"):
        registry.build("masking", "first-half:ration=0.3")
    assert registry.build("masking", {"name": "first-half", "ratio": 0.1}).params["ratio"] == 0.1


def test_duplicate_names_keep_first_and_warn_naming_both():
    pm = get_plugin_manager()
    pm.register(_plugin("alpha", register_maskings=lambda register: register(FirstHalf())), name="alpha")
    pm.register(_plugin("beta", register_maskings=lambda register: register(FirstHalf)), name="beta")
    registry = get_registry()
    assert registry.owner("masking", "first-half") == "alpha"
    assert any("'beta'" in w and "'alpha'" in w and "first-half" in w for w in registry.warnings)


def test_a_plugin_raising_is_reported_and_others_still_register():
    def broken(register):
        raise RuntimeError("boom")

    pm = get_plugin_manager()
    pm.register(_plugin("broken", register_maskings=broken), name="broken")
    pm.register(_plugin("good", register_maskings=lambda register: register(FirstHalf())), name="good")
    registry = get_registry()
    assert "first-half" in registry.names("masking")
    assert any("plugin 'broken' failed in register_maskings: RuntimeError: boom" in e for e in registry.errors)


def test_registering_the_wrong_type_is_reported():
    pm = get_plugin_manager()
    pm.register(_plugin("wrong", register_maskings=lambda register: register(object())), name="wrong")
    registry = get_registry()
    registry.all("masking")
    assert any("plugin 'wrong'" in e and "expects a mlmh.components.Masking" in e for e in registry.errors)


def test_presets_registered_from_toml_text_and_bad_toml():
    pm = get_plugin_manager()
    pm.register(_plugin("presets-x", register_presets=lambda register: register("mine", 'description = "mine"\n[run]\nseed = 1\n')), name="presets-x")
    pm.register(_plugin("presets-bad", register_presets=lambda register: register("bad", "this is = = not toml\n")), name="presets-bad")
    registry = get_registry()
    assert registry.get("preset", "mine").config["run"]["seed"] == 1
    assert registry.get("preset", "mine").description == "mine"
    assert any("presets-bad" in e and "invalid TOML" in e for e in registry.errors)
