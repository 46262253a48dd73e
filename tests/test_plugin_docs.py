"""docs/PLUGINS.md stays honest: every hook is documented under its signature, and the example under
each hook is executed here as a real plugin and checked to do what the text says."""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from mlmh.components import ScoringItem
from mlmh.events import EventBus, Message
from mlmh.plugins import hookspecs
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry
from mlmh.types import Corpus, Document
from mlmh.words import split_words

DOC = (Path(__file__).resolve().parents[1] / "docs" / "PLUGINS.md").read_text(encoding="utf-8")
HOOKS = {name: fn for name, fn in vars(hookspecs).items() if callable(fn) and hasattr(fn, "mlmh_spec")}
SECTION = re.compile(r"^## `(\w+)\((.*?)\)`\n(.*?)(?=^## |\Z)", re.S | re.M)
SECTIONS = {m.group(1): (m.group(2), m.group(3)) for m in SECTION.finditer(DOC)}


def example_plugin(hook: str) -> types.ModuleType:
    body = SECTIONS[hook][1]
    code = re.search(r"```python\n(.*?)```", body, re.S)
    assert code, f"docs/PLUGINS.md: no python example under {hook}"
    module = types.ModuleType(f"doc_example_{hook}")
    exec(compile(code.group(1), f"PLUGINS.md:{hook}", "exec"), module.__dict__)
    get_plugin_manager().register(module, name=module.__name__)
    return module


def new_names(kind: str, module: types.ModuleType) -> list:
    registry = get_registry()
    return [c for c in registry.all(kind) if registry.owner(kind, c.name) == module.__name__]


def check_maskings(module):
    (masking,) = new_names("masking", module)
    words = split_words("Extraordinary claims require extraordinary evidence.")
    plan = masking.mask(Document("d", words.text), words, None)
    assert [words[i] for i in plan.word_indices] == ["Extraordinary", "require", "extraordinary", "evidence"]


def check_samplers(module, tiny_mlm):
    from mlmh.adapters import load_adapter
    from mlmh.generation import generate, prepare_items

    (sampler,) = new_names("sampler", module)
    adapter = load_adapter("mlm", str(tiny_mlm))
    masking = get_registry().build("masking", "random:ratio=0.4")
    items = prepare_items([Document("d1", "The cat sat on the mat and looked at the door.")], masking, seed=3)
    (generation,) = generate(adapter, sampler, items)
    words = split_words(generation.original)
    assert generation.masked_words
    assert len(generation.steps) == generation.forward_passes == generation.generated_tokens
    new = split_words(generation.text)
    assert len(new) >= 1
    for i, word in enumerate(words):
        if i not in generation.masked_words:
            assert word in generation.text


def check_models(module):
    (model,) = new_names("model", module)
    assert model.model_kind in {"mlm", "clm", "seq2seq"}
    assert model.configured(path="/x").identity(None) == "lab-bert@/x"


def check_datasets(module):
    (dataset,) = new_names("dataset", module)
    corpus = dataset.load(None)
    assert isinstance(corpus, Corpus) and corpus.split("test") and corpus.split("train")


def check_metrics(module):
    (metric,) = new_names("metric", module)
    (result,) = metric.score([ScoringItem("a b", "a b"), ScoringItem("a", "b")])
    assert result.value == 0.5 and result.per_sample == [1.0, 0.0]
    assert metric.cache_identity() == ""  # the text: it reads nothing but the items, so a run may keep its scores


def check_tasks(module):
    (task,) = new_names("task", module)
    train = Corpus("t", [Document("a", "x", labels=["drama"]), Document("b", "y", labels=["drama", "war"])], "mem")
    test = Corpus("t", [Document("c", "z", split="test", labels=["war"]), Document("d", "w", split="test", labels=["drama"])], "mem")
    assert task.applies_to(train)
    assert task.run(train, test).scores == {"accuracy": 0.5}
    assert task.cache_identity() == ""  # InputsOnly: a run may keep its results


def check_presets(module):
    preset = get_registry().get("preset", "my-pan")
    assert preset.description == "Two maskings on the PAN sample"


def check_commands(module):
    group = click.Group()
    get_plugin_manager().hook.register_commands(cli=group)
    result = CliRunner().invoke(group, ["count-words", "Hello, world!"])
    assert result.output.strip() == "4"


def check_trackers(module, tmp_path):
    import csv

    import runner_fakes
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import from_table
    from mlmh.run.runner import run_experiment

    runner_fakes.install()
    config = from_table({**runner_fakes.FAKE_PRESET, "trackers": ["csv"]}, name="fake", source="fake.toml")
    results = run_experiment(build_plan(config), output_path=tmp_path / "run", cache_path=tmp_path / "cache.sqlite")
    with open(tmp_path / "run" / "scores.csv", encoding="utf-8") as handle:
        rows = {name: float(value) for name, value in csv.reader(handle)}
    unseen = {name: value for name, value in rows.items() if name.startswith("unseen/") and name.endswith("/word-match")}
    assert sorted(unseen.values()) == sorted(row.unseen.metrics["word-match"].value for row in results.conditions)


def check_checks(module, tmp_path, monkeypatch):
    from mlmh.doctor import run_checks

    monkeypatch.setenv("LAB_CORPUS", str(tmp_path))
    assert [r for r in run_checks() if r.name == "lab corpus"] == [module.CheckResult("lab corpus", True, str(tmp_path))]
    monkeypatch.setenv("LAB_CORPUS", str(tmp_path / "missing"))
    (result,) = [r for r in run_checks() if r.name == "lab corpus"]
    assert not result.ok and result.fix == "export LAB_CORPUS=/path/to/corpus"
    assert {"bundled samples", "pos/ner tagger", "BERTScore model"} <= {r.name for r in run_checks()}  # builtins' hooks


def check_run_event(module):
    EventBus().emit(Message(text="hi"))
    assert module.SEEN == ["message"]


CHECKS = {
    "register_maskings": check_maskings,
    "register_samplers": check_samplers,
    "register_models": check_models,
    "register_datasets": check_datasets,
    "register_metrics": check_metrics,
    "register_tasks": check_tasks,
    "register_presets": check_presets,
    "register_commands": check_commands,
    "register_checks": check_checks,
    "register_trackers": check_trackers,
    "mlmh_run_event": check_run_event,
}


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hook_is_documented_under_its_signature(hook):
    assert hook in SECTIONS, f"docs/PLUGINS.md does not document hook {hook}"
    documented = [a.strip() for a in SECTIONS[hook][0].split(",") if a.strip()]
    assert documented == list(inspect.signature(HOOKS[hook]).parameters), f"{hook}: documented signature differs"


@pytest.mark.parametrize("hook", sorted(HOOKS))
def test_hook_example_runs_as_a_plugin(hook, request):
    assert hook in CHECKS, f"hook {hook} has no test of its documented example"
    check = CHECKS[hook]
    fixtures = [request.getfixturevalue(name) for name in list(inspect.signature(check).parameters)[1:]]
    check(example_plugin(hook), *fixtures)


def test_contract_checks_section_runs_and_names_real_functions():
    body = DOC.split("## Checking your component: `mlmh.testing`", 1)[1]
    import mlmh.testing

    named = set(re.findall(r"`((?:check|sample|tiny|scoring)_\w+)\(", body))
    assert named and all(hasattr(mlmh.testing, name) for name in named), named
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    namespace: dict = {}
    exec(compile(code, "PLUGINS.md:mlmh.testing", "exec"), namespace)
    with pytest.raises(AssertionError, match="every-third"):  # the example's masking breaks a rule when altered
        namespace["check_masking"](type("Reversed", (namespace["EveryThirdWord"],), {
            "mask": lambda self, document, words, rng: namespace["MaskPlan"](self.spec, tuple(range(len(words)))[::-1])})(),
            namespace["documents"]())


def test_declarations_section_runs_as_a_plugin():
    """The example of "Declaring defaults" takes part as the text says: its main result between ROUGE-L and
    METEOR, claim 1 tested on it, its bench row right after one-shot."""
    from mlmh.bench.samplers import sampler_cases
    from mlmh.config import declared
    from mlmh.results import pick_main

    body = DOC.split("## Declaring defaults: what a component says of itself", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", body, re.S).group(1)
    module = types.ModuleType("doc_example_declarations")
    exec(compile(code, "PLUGINS.md:declarations", "exec"), module.__dict__)
    get_plugin_manager().register(module, name=module.__name__)
    assert pick_main(["meteor", "chrf-lite", "rougeL", "bleu"]) == ["bleu", "rougeL", "chrf-lite", "meteor"]
    assert "chrf-lite" in declared.findings_results() and "chrf-lite" not in declared.sweep_results()
    keys = [case.key for case in sampler_cases()]
    assert keys[keys.index("one-shot") + 1] == "cheap-one-shot"
    (cheap,) = [case for case in sampler_cases() if case.key == "cheap-one-shot"]
    assert (cheap.spec, cheap.kind, cheap.reference) == ("cheap-one-shot", "mlm", False)
