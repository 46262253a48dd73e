"""The sampler toolkit is public plugin API in the core (``mlmh.toolkit``): the adapters a sampler gets
satisfy its typed protocols, and a plugin written against the previous releases' documented paths of the
toolkit still registers and generates, warning with the path to import from instead."""

from __future__ import annotations

import importlib
import sys
import textwrap

import pytest

from mlmh import toolkit
from mlmh.plugins.plugin_manager import get_plugin_manager
from mlmh.registry import get_registry
from mlmh.testing import check_sampler, sample_items, tiny_adapter

#: the sampler example of docs/PLUGINS.md as the release before the builtins' move printed it, importing
#: the toolkit from PATH
OLD_EXAMPLE = '''
import time

import torch

from mlmh import hookimpl
from mlmh.components import Sampler
from PATH import ItemCounters, TraceRecorder, build_generations


class EasyFirst(Sampler):
    """Easy-first decoding: commit the single most confident masked token per forward pass."""

    name = "NAME"
    description = "Fill the most confident masked token, one per forward pass (greedy)."
    model_kinds = frozenset({"mlm"})

    def generate(self, adapter, items):
        started = time.perf_counter()
        encodings = [adapter.encode(item.words, item.plan) for item in items]
        trace, counters = TraceRecorder.for_encodings(encodings), ItemCounters.zeros(len(items))
        ids = [list(e.ids) for e in encodings]
        for n, encoding in enumerate(encodings):
            todo = sorted(encoding.masked)
            while todo:
                input_ids, attention = adapter.batch([ids[n]])
                probs = adapter.logits(input_ids, attention, at=torch.tensor(todo)).softmax(-1)  # one row: index = position
                counters.add(n, len(ids[n]))
                confidence, best = probs.max(-1)
                k = int(confidence.argmax())
                ids[n][todo[k]] = int(best[k])
                trace.step(n, [todo[k]], [int(best[k])], [float(confidence[k])])
                del todo[k]
        return build_generations(adapter, self.spec, items, encodings, ids, trace, counters, started)


@hookimpl
def register_samplers(register):
    register(EasyFirst())
'''


@pytest.mark.parametrize("kind,protocols", [("mlm", (toolkit.MaskedLM,)), ("clm", (toolkit.Decoder,)),
                                            ("seq2seq", (toolkit.Decoder, toolkit.Seq2Seq))])
def test_every_adapter_kind_satisfies_its_toolkit_protocol(kind, protocols, tiny_mlm, tiny_clm, tiny_seq2seq):
    adapter = tiny_adapter(kind, {"mlm": tiny_mlm, "clm": tiny_clm, "seq2seq": tiny_seq2seq}[kind])
    assert isinstance(adapter, toolkit.Adapter) and adapter.kind == kind
    for protocol in protocols:
        assert isinstance(adapter, protocol)
    assert not isinstance(object(), toolkit.Adapter)


@pytest.mark.parametrize("old_path", ["mlmh.plugins.samplers_common", "mlmh_builtins.samplers_common"])
def test_a_sampler_written_against_an_old_toolkit_path_runs_and_warns(old_path, tiny_mlm, tmp_path, monkeypatch):
    name = "old-" + old_path.split(".")[0].replace("_", "-")
    module_name = f"old_api_plugin_{old_path.split('.')[0]}"
    (tmp_path / f"{module_name}.py").write_text(
        textwrap.dedent(OLD_EXAMPLE).replace("PATH", old_path).replace("NAME", name), encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, module_name, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"{old_path} is deprecated: import \w+ from mlmh\.toolkit") as said:
        plugin = importlib.import_module(module_name)
    assert {warning.filename for warning in said} == {str(tmp_path / f"{module_name}.py")}  # the plugin's line
    assert plugin.TraceRecorder is toolkit.TraceRecorder

    get_plugin_manager().register(plugin, name=module_name)
    sampler = get_registry().build("sampler", name)
    assert get_registry().owner("sampler", name) == module_name
    adapter = tiny_adapter("mlm", tiny_mlm)
    generations = check_sampler(sampler, adapter, sample_items(["The cat sat on the mat and looked at the door.",
                                                                "A dog ran to the park with a red ball."]))
    for generation in generations:  # easy-first: one pass, one step and one token per masked token
        assert generation.forward_passes == len(generation.steps) == generation.generated_tokens > 0
        assert set(generation.output_words) == set(generation.masked_words)


def test_an_old_path_forwards_no_dunder_and_no_unknown_name():
    old = importlib.import_module("mlmh.plugins.samplers_common")
    with pytest.raises(AttributeError):
        old.__all__  # noqa: B018
    with pytest.raises(AttributeError):
        old.no_such_helper  # noqa: B018
