"""Texts are regenerated outside a run one way, :func:`mlmh.generation.regenerate`: ``mlmh generate`` (and its
dataset form), the TUI playground's :func:`mlmh.api.compare`, ``mlmh generate --run`` (:mod:`mlmh.run.reproduce`) and
``mlmh bench``'s sampler cells all reach it; each side generates only when asked for, so a caller stops between
sides."""

from __future__ import annotations

import pytest
import runner_fakes
from test_bench import bench_adapters, vocabulary  # noqa: F401  # the fixtures: the bench's random models

from mlmh import api, generation
from mlmh.registry import get_registry
from mlmh.types import Document

TEXT = "The cat sat on the mat and looked at the door for a while."


@pytest.fixture
def regenerations(monkeypatch):
    """Each call of mlmh.generation.regenerate, as (model kinds of its sides, items), the real one doing the work."""
    calls: list[tuple[list[str], int]] = []
    real = generation.regenerate

    def recorded(sides, masked, batch_size=8):
        calls.append(([adapter.kind for adapter, _ in sides], len(masked.items)))
        yield from real(sides, masked, batch_size)

    monkeypatch.setattr(generation, "regenerate", recorded)
    return calls


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory, tiny_mlm):
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve
    from mlmh.run.runner import run_experiment

    out = tmp_path_factory.mktemp("regenerate") / "run"
    config = resolve("quick", {"models": [f"hf-mlm:path={tiny_mlm}"], "maskings": ["random:ratio=0.5"],
                               "samplers": ["one-shot"], "metrics": ["bleu"], "tasks": [], "limit": 1})
    run_experiment(build_plan(config), output_path=out)
    return out


@pytest.mark.parametrize("face", ["generate", "generate_from_dataset", "compare", "reproduce", "bench"])
def test_every_regeneration_outside_a_run_goes_through_regenerate(face, regenerations, tiny_mlm, tiny_clm,
                                                                  request):
    mlm, clm = f"hf-mlm:path={tiny_mlm}", f"hf-clm:path={tiny_clm}"
    if face == "generate":
        assert api.generate(TEXT, model=mlm, masking="random:ratio=0.3", seed=1).masked_words
        assert regenerations == [(["mlm"], 1)]
    elif face == "generate_from_dataset":
        assert len(api.generate_from_dataset("pan", model=clm, masking="random:ratio=0.3", limit=2)) == 2
        assert regenerations == [(["clm"], 2)]
    elif face == "compare":
        left, right = api.compare(TEXT, [(mlm, "one-shot"), (clm, "clm-infill")], masking="random:ratio=0.3")
        assert left.masked_words == right.masked_words
        assert regenerations == [(["mlm", "clm"], 1)]  # one call: both sides, the same masked words
    elif face == "reproduce":
        from mlmh.run.reproduce import reproduce

        run = request.getfixturevalue("finished_run")
        sample = (run / "generations.jsonl").read_text(encoding="utf-8").splitlines()[0].split('"sample": "')[1]
        assert reproduce(run, sample.split('"')[0]).identical
        assert regenerations == [(["mlm"], 1)]
    else:
        from mlmh.bench.samplers import bench_items, case_by_key, measure_sampler

        items = bench_items(12, 2, request.getfixturevalue("vocabulary"))
        cell = measure_sampler(case_by_key()["one-shot"], get_registry().build("sampler", "one-shot"),
                               request.getfixturevalue("bench_adapters")["mlm"], items, runs=1)
        assert cell["masked_tokens"] == 6
        assert len(regenerations) >= 2 and all(call == (["mlm"], 2) for call in regenerations)  # its plan, each run


def test_a_side_generates_only_when_its_generations_are_asked_for():
    runner_fakes.install()
    registry = get_registry()
    masking = registry.build("masking", "every-nth:ratio=0.5")
    masked = generation.mask_texts([Document(id="d", text=TEXT)], masking, 0, [])
    assert masked.items[0].plan.word_indices and not masked.cuts  # nothing to fit: the fakes have no window
    sampler = registry.build("sampler", "fake-fill")
    left, right = runner_fakes.FakeAdapter("mlm"), runner_fakes.FakeAdapter("mlm")
    left.forward_passes = right.forward_passes = -1  # a side's counters are reset when it generates
    sides = generation.regenerate([(left, sampler), (right, sampler)], masked)
    assert (left.forward_passes, right.forward_passes) == (-1, -1)
    first = next(sides)
    assert (left.forward_passes, right.forward_passes) == (0, -1) and first[0].doc_id == "d"
    assert next(sides)[0].text == first[0].text and right.forward_passes == 0  # the same items, the same seed
