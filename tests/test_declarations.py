"""Defaults are declared by the components, never named by the core (mlmh.config.declared, mlmh.components).

The core (harness/mlmh) reads what it needs to know of a metric, sampler or model from the component's own
declaration: the main results and their order, the fluency judge, the default sampler of a model kind, the
playground's models, the models a sweep varies, the bench's sampler settings, the dataset a face falls back on. A scan of every string literal
of the core keeps it so; a third-party plugin's declarations take part exactly as a builtin's do.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mlmh import hookimpl
from mlmh.components import BenchCase, Dataset, Headline, Metric, Model, Sampler
from mlmh.config import declared
from mlmh.errors import SpecError
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry, reset

CORE = Path(__file__).resolve().parents[1] / "harness" / "mlmh"
#: builtin names the core may still hold as literals, by module, with why; everything else is refused
ALLOWED = {
    # Li et al.'s claims are about named methods: the claim states which sampler and model it tests
    "findings/claims.py": {"trained-mlm", "mask-predict", "gibbs", "one-shot", "adaptive-gibbs",
                  "stutter"},  # the claims' own measure (mlmh.findings.stutter), named as the metric's word level
    # a training mask schedule, named after the paper (MDLM) as the sampler that decodes it is
    "training/config.py": {"mdlm"},
    "training/data.py": {"mdlm"},
    "commands/train.py": {"mdlm"},
    # the adapter layer sits below the registry (asking it would close an import circle): its refusals name the
    # model that loads a checkpoint as it was trained
    "adapters/__init__.py": {"hf-mlm", "hf-clm", "hf-seq2seq"},
    "adapters/checkpoint_kinds.py": {"hf-mlm", "hf-clm", "hf-seq2seq"},
    # the bench's fixed reference workloads (metric throughput and the eval-scaling run): figures in
    # docs/PERFORMANCE.md compare across releases only while the workload stays the same
    "bench/goals.py": {"bertscore"},
    "commands/bench.py": {"bleu", "rouge", "meteor", "bertscore"},
    "bench/harness_figures.py": {"hf-mlm", "hf-clm", "one-shot", "mask-predict", "clm-infill", "bleu", "rouge", "pan"},
    "bench/metrics.py": {"bleu", "rouge", "meteor", "bertscore", "gen-ppl", "pan"},
    # the CPU goals of the pan and paper presets, by preset name (which the dataset's name shares)
    "bench/preset.py": {"pan"},
    # a downstream test's confidence level (results.json's downstream_tests), not the sampler of that name
    "storage/schema.py": {"confidence"},
}
#: builtin names that are also words the core uses for other things (the "text" shape of a run option, a
#: ``check_text`` argument): the scan cannot tell them apart, so it leaves them out
ORDINARY_WORDS = {"text"}


def builtin_names() -> set[str]:
    """Every builtin metric, sampler, model and dataset name, and every result name a builtin metric declares."""
    registry = get_registry()
    names: set[str] = set()
    for kind in ("metric", "sampler", "model", "dataset"):
        for component in registry.all(kind):
            if registry.owner(kind, component.name).startswith("mlmh_builtins."):
                names.add(component.name)
                names.update(h.result for h in getattr(component, "headlines", ()))
                names.update(getattr(component, "fluency", None) or ())
    return names - ORDINARY_WORDS


def docstrings(tree: ast.AST) -> set[int]:
    """The ids of the docstring nodes of a module, its classes and functions (they may name anything)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def named(text: str, names: set[str]) -> set[str]:
    """The builtin names ``text`` is or starts as a spec of (``mask-predict:steps=4``), itself or as an item of
    a comma list without spaces (``bleu,rouge``): what a constant or a default holds, not what a sentence says."""
    items = text.split(",") if " " not in text else [text]
    return {name for item in items for name in names if item == name or item.startswith(name + ":")}


def core_literals(names: set[str]) -> dict[str, set[str]]:
    """Module (relative to harness/mlmh) -> the builtin names its string literals hold, docstrings aside."""
    found: dict[str, set[str]] = {}
    for path in sorted(CORE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                hits = named(node.value, names)
                if hits:
                    found.setdefault(path.relative_to(CORE).as_posix(), set()).update(hits)
    return found


def test_no_core_module_names_a_builtin_metric_sampler_or_model():
    names = builtin_names()
    assert {"bleu", "rougeL", "mask-predict", "clm-infill", "trained-mlm", "hf-mlm", "gen-ppl_original", "pan"} <= names
    found = core_literals(names)
    unexpected = {module: sorted(hits - ALLOWED.get(module, set())) for module, hits in found.items()}
    assert not {m: h for m, h in unexpected.items() if h}, "declare these on the component (mlmh.config.declared)"
    stale = {module: sorted(allowed - found.get(module, set())) for module, allowed in ALLOWED.items()}
    assert not {m: s for m, s in stale.items() if s}, "no longer named there: drop them from ALLOWED"


def test_the_scan_finds_a_constant_a_default_and_a_spec_but_not_a_sentence():
    names = {"bleu", "rouge", "mask-predict"}
    tree = ast.parse('"""Leads with bleu."""\nMAIN = ("bleu",)\nDEFAULT = "bleu,rouge"\n'
                     'SPEC = f"mask-predict:steps={4}"\nSAID = "the bleu of it"\n')
    skip = docstrings(tree)
    hits = [named(n.value, names) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in skip]
    assert sorted(sorted(h) for h in hits if h) == [["bleu"], ["bleu", "rouge"], ["mask-predict"]]


def test_the_builtins_declare_what_the_core_used_to_name():
    """The declarations give exactly the defaults and orders the core's constants held before them."""
    assert declared.main_results() == ["bleu", "rouge1", "rouge2", "rougeL", "meteor", "bertscore_f1"]
    assert declared.sweep_results() == ["bleu", "rougeL", "bertscore_f1"]
    assert declared.findings_results() == ["bleu", "rougeL", "meteor", "bertscore_f1"]
    assert declared.baseline_results() == ["bleu", "rougeL", "bertscore_f1"]
    assert declared.fluency_results() == ("gen-ppl", "gen-ppl_original")
    assert declared.default_samplers() == {"mlm": "mask-predict", "clm": "clm-infill", "seq2seq": "seq2seq-infill"}
    assert declared.default_models() == {"mlm": "trained-mlm", "clm": "trained-clm"}
    assert declared.swept_models() == {"trained-mlm": "mlm", "trained-clm": "clm"}
    assert declared.default_dataset() == "pan"
    from mlmh.bench.samplers import causal_case, masked_case, sampler_cases

    assert [(c.label, c.key, c.spec, c.kind) for c in sampler_cases()] == [
        ("one-shot", "one-shot", "one-shot", "mlm"),
        ("mask-predict T=1", "mask-predict-1", "mask-predict:steps=1", "mlm"),
        ("mask-predict T=4", "mask-predict-4", "mask-predict:steps=4", "mlm"),
        ("mask-predict T=10", "mask-predict-10", "mask-predict:steps=10", "mlm"),
        ("left-to-right", "left-to-right", "left-to-right", "mlm"),
        ("gibbs", "gibbs", "gibbs", "mlm"),
        ("clm-infill (KV cache)", "clm-infill", "clm-infill:use_cache=true", "clm"),
        ("clm-infill (no cache)", "clm-infill-nocache", "clm-infill:use_cache=false", "clm"),
        ("seq2seq-infill", "seq2seq-infill", "seq2seq-infill", "seq2seq"),
    ]
    assert (masked_case(), causal_case()) == ("mask-predict T=4", "clm-infill (KV cache)")


# -- a third-party plugin declares the same ---------------------------------------------------------
class Closeness(Metric):
    name = "closeness"
    description = "a main result between ROUGE and METEOR, compared along a sweep"
    headlines = (Headline("closeness", 25, label="Closeness", unit="points", findings=True, sweep=True),)


class Greedy(Sampler):
    name = "greedy-plugin"
    description = "declares itself the MLM default, after mask-predict did"
    model_kinds = frozenset({"mlm"})
    default_for = frozenset({"mlm"})
    bench = (BenchCase("greedy (plugin)", "greedy-plugin", 15, "temperature=0"),)


class Sweepable(Model):
    name = "sweepable-mlm"
    description = "a masked LM a data-constrained sweep expands"
    model_kind = "mlm"
    swept = True


class ClosenessPlugin:
    @hookimpl
    def register_metrics(self, register):
        register(Closeness())

    @hookimpl
    def register_samplers(self, register):
        register(Greedy())

    @hookimpl
    def register_models(self, register):
        register(Sweepable())


@pytest.fixture
def third_party():
    get_plugin_manager().register(ClosenessPlugin(), name="closeness-plugin")
    reset()
    yield
    reset()


def test_a_plugin_declares_main_results_defaults_sweeps_and_bench_settings(third_party):
    from mlmh.bench.samplers import sampler_cases
    from mlmh.config.sweep import expand_models
    from mlmh.findings.paper_claims import _unit
    from mlmh.results import pick_main

    assert declared.main_results() == ["bleu", "rouge1", "rouge2", "rougeL", "closeness", "meteor", "bertscore_f1"]
    assert pick_main(["closeness", "novelty", "bleu"]) == ["bleu", "closeness"]
    assert "closeness" in declared.sweep_results() and "closeness" in declared.findings_results()
    assert _unit("closeness") == "closeness points"
    # the first declaration of a kind's default wins (the builtin's); the plugin takes it by replacing mask-predict
    assert declared.default_samplers()["mlm"] == "mask-predict"
    assert declared.swept_models() == {"trained-mlm": "mlm", "trained-clm": "clm", "sweepable-mlm": "mlm"}
    assert expand_models(["sweepable-mlm", "hf-mlm:path=x"], epochs=[1, 2]) == [
        "sweepable-mlm:epochs=1", "sweepable-mlm:epochs=2", "hf-mlm:path=x"]
    keys = [case.key for case in sampler_cases()]
    assert keys.index("greedy-plugin") == keys.index("one-shot") + 1  # rank 15: between one-shot and mask-predict
    greedy = next(case for case in sampler_cases() if case.key == "greedy-plugin")
    assert (greedy.spec, greedy.kind) == ("greedy-plugin:temperature=0", "mlm")


def test_a_plugin_takes_a_builtin_s_default_by_replacing_it(third_party):
    from mlmh.config.plan import default_sampler

    class PlainMaskPredict(Sampler):
        name = "mask-predict"
        description = "a mask-predict that is no kind's default"
        model_kinds = frozenset({"mlm"})

    class Replacing:
        @hookimpl
        def register_samplers(self, register):
            register(PlainMaskPredict(), replace=True)

    get_plugin_manager().register(Replacing(), name="replacing-plugin")
    reset()
    assert type(get_registry().get("sampler", "mask-predict")) is PlainMaskPredict
    assert default_sampler("mlm") == "greedy-plugin"  # the next declaration of the kind, in registration order
    assert default_sampler("clm") == "clm-infill"


class PlainPan(Dataset):
    name = "pan"
    description = "a pan that is not the default"


class Essays(Dataset):
    name = "essays-plugin"
    description = "declares itself the default dataset, after pan did"
    default = True


def plug_datasets(name: str, *datasets: Dataset, replace: bool = False) -> None:
    """A plugin ``name`` that registers ``datasets`` (``replace``: over the builtin of the same name), registered."""

    class Plugin:
        @hookimpl
        def register_datasets(self, register):
            for dataset in datasets:
                register(dataset, replace=replace)

    get_plugin_manager().register(Plugin(), name=name)
    reset()


def test_a_plugin_dataset_becomes_the_default_when_it_replaces_the_builtin_s(third_party):
    from mlmh.commands.generate import _text_help
    from mlmh.tui.playground_job import PlaygroundRequest

    plug_datasets("essays-plugin", Essays())
    assert declared.default_dataset() == "pan"  # the first declaration wins, as for the other defaults
    plug_datasets("replacing-pan", PlainPan(), replace=True)
    assert declared.default_dataset() == "essays-plugin"
    assert PlaygroundRequest(text="t", masking="random", sides=[]).dataset == "essays-plugin"
    assert "'essays-plugin' sample" in _text_help("The text")


def test_no_dataset_declaring_the_default_is_one_line_naming_the_declaration(third_party):
    plug_datasets("replacing-pan", PlainPan(), replace=True)
    with pytest.raises(SpecError, match="no registered dataset declares itself the default"):
        declared.default_dataset()
