"""Samplers on tiny models: only masked words change, forward-pass budgets follow the papers, outputs do
not depend on batch size, and the per-step rules (mask-predict, confidence, Gibbs, stutter) hold."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlmh.adapters import load_adapter
from mlmh.adapters.readout import full_passes_only, reader_of
from mlmh.errors import SpecError
from mlmh.generation import generate, prepare_items
from mlmh.toolkit import TraceRecorder, choose_at, choose_tokens
from mlmh_builtins.samplers_mlm import MaskedBatch
from mlmh.registry import get_registry
from mlmh.types import Document
from mlmh.words import split_words
from tiny_models import TEXTS as TINY_TEXTS
from tiny_models import output_rows

TEXTS = [*TINY_TEXTS, "Short.", ""]
DOCS = [Document(id=f"d{i}", text=t) for i, t in enumerate(TEXTS)]

MLM_SAMPLERS = [
    "one-shot", "left-to-right", "mask-predict:steps=3", "mask-predict:steps=4,stutter=true", "confidence:steps=3",
    "confidence:steps=4,schedule=linear,threshold=0.5,stutter=true", "gibbs:steps=0", "gibbs:init=one-shot,steps=5,top_k=5",
    "one-shot:temperature=1.0,top_p=0.9", "mask-predict:temperature=0.7,top_k=20",
]
INFILL = [("clm", "clm-infill"), ("clm", "clm-infill:use_cache=false"), ("clm", "clm-infill:temperature=1.0"),
          ("seq2seq", "seq2seq-infill"), ("seq2seq", "seq2seq-infill:use_cache=false")]
ALL = [("mlm", s) for s in MLM_SAMPLERS] + INFILL


@pytest.fixture(scope="module")
def adapters(tiny_mlm, tiny_clm, tiny_seq2seq):
    return {"mlm": load_adapter("mlm", tiny_mlm, threads=1), "clm": load_adapter("clm", tiny_clm, threads=1),
            "seq2seq": load_adapter("seq2seq", tiny_seq2seq, threads=1)}


def build(kind: str, spec: str):
    return get_registry().build(kind, spec)


def items_for(masking: str = "random:ratio=0.4", seed: int = 3, docs=DOCS):
    return prepare_items(docs, build("masking", masking), seed)


def assert_only_masked_words_change(items, generations, adapter):
    for item, gen in zip(items, generations):
        masked = set(item.plan.word_indices)
        assert set(gen.output_words) <= masked
        assert set(gen.masked_words) == set(gen.output_words)
        assert gen.text == item.words.replace(gen.output_words)
        enc = adapter.encode(item.words, item.plan)
        fixed = [p for p in range(len(enc.ids)) if p not in set(enc.masked)]
        fixed_tokens = adapter.tokens_to_strings([enc.ids[p] for p in fixed])
        for step in gen.steps:  # no step ever touches an unmasked position
            assert set(step.changed) <= set(enc.masked)
            assert [step.tokens[p] for p in fixed] == fixed_tokens


@pytest.mark.parametrize("kind, spec", ALL)
def test_unmasked_words_never_change_and_batching_changes_nothing(adapters, kind, spec):
    adapter, sampler = adapters[kind], build("sampler", spec)
    items = items_for()
    by_eight = generate(adapter, sampler, items, batch_size=8)
    by_one = generate(adapter, sampler, items, batch_size=1)
    assert_only_masked_words_change(items, by_eight, adapter)
    assert [g.text for g in by_one] == [g.text for g in by_eight]
    assert [g.forward_passes for g in by_one] == [g.forward_passes for g in by_eight]
    for gen in by_eight:
        assert gen.model_kind == kind and gen.sampler == sampler.spec
        if gen.masked_words:
            assert gen.forward_passes > 0 and gen.steps and gen.tokens_processed > 0


def test_one_shot_is_one_pass_per_batch(adapters):
    adapter = adapters["mlm"]
    generate(adapter, build("sampler", "one-shot"), items_for()[:8], batch_size=8)
    assert adapter.forward_passes == 1


@pytest.mark.parametrize("steps", [1, 3, 6])
def test_mask_predict_makes_exactly_T_passes_and_remasks_floor_N_T_minus_t_over_T(adapters, steps):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.5")[:8]
    gens = generate(adapter, build("sampler", f"mask-predict:steps={steps}"), items, batch_size=8)
    assert adapter.forward_passes == steps
    for gen in gens:
        n = gen.generated_tokens
        assert len(gen.steps) == steps
        predicted = [len(step.confidences) for step in gen.steps]
        assert predicted == [n] + [n * (steps - t) // steps for t in range(1, steps)]
        assert gen.steps[-1].masked == []


def test_left_to_right_is_one_pass_per_masked_token_in_order(adapters):
    adapter = adapters["mlm"]
    for item in items_for()[:4]:
        (gen,) = generate(adapter, build("sampler", "left-to-right"), [item], batch_size=1)
        assert adapter.forward_passes == gen.generated_tokens == gen.forward_passes
        order = [next(iter(step.confidences)) for step in gen.steps]
        assert order == sorted(order)


@pytest.mark.parametrize("schedule", ["linear", "cosine"])
def test_confidence_commits_on_schedule(adapters, schedule):
    adapter = adapters["mlm"]
    steps = 4
    gens = generate(adapter, build("sampler", f"confidence:steps={steps},schedule={schedule}"), items_for("random:ratio=0.6")[:8])
    for gen in gens:
        n = gen.generated_tokens
        remaining = n
        for t, step in enumerate(gen.steps):
            x = (t + 1) / steps
            frac = 1 - x if schedule == "linear" else math.cos(math.pi / 2 * x)
            keep = 0 if t == steps - 1 else int(math.floor(n * max(frac, 0.0)))
            assert len(step.confidences) == max(remaining - keep, 1)
            remaining -= len(step.confidences)
            assert len(step.masked) == remaining
        assert remaining == 0 and len(gen.steps) <= steps


def test_confidence_threshold_commits_confident_tokens_early(adapters):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.6")[:4]
    strict = generate(adapter, build("sampler", "confidence:steps=8,threshold=0.0001"), items)
    assert all(g.forward_passes == 1 for g in strict if g.generated_tokens)


def test_gibbs_resamples_one_originally_masked_position_per_step(adapters):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.5")[:4]
    gens = generate(adapter, build("sampler", "gibbs"), items)
    for item, gen in zip(items, gens):
        enc = adapter.encode(item.words, item.plan)
        n = len(enc.masked)
        assert gen.forward_passes == len(gen.steps) == 2 * n
        assert all(len(step.confidences) == 1 for step in gen.steps)
        visited = [next(iter(step.confidences)) for step in gen.steps]
        assert sorted(visited[:n]) == enc.masked  # the first sweep fills every mask once
        assert set(visited) <= set(enc.masked)
        assert gen.info["gibbs_start"] == "all positions masked"


def test_stutter_finds_tokens_equal_to_their_left_neighbour(adapters):
    adapter = adapters["mlm"]
    (item,) = items_for("random:ratio=1.0", docs=[Document(id="s", text="again and again and again")])
    batch = MaskedBatch(adapter, [item])
    again = adapter.tokenizer.convert_tokens_to_ids("again")
    positions = batch.original[0].nonzero().flatten()
    batch.ids[0, positions] = again
    batch.masked[:] = False
    repeats = batch.stutters(torch.tensor([0]))[0].nonzero().flatten().tolist()
    assert repeats == positions[1:].tolist()


def test_clm_infill_with_cache_is_one_prefill_per_span_plus_one_pass_per_further_token(adapters):
    adapter = adapters["clm"]
    for item in items_for("random:ratio=0.5")[:6]:
        cached = generate(adapter, build("sampler", "clm-infill"), [item], batch_size=1)[0]
        spans = len(adapter.encode(item.words, item.plan).spans())
        assert cached.forward_passes == adapter.forward_passes == spans + (cached.generated_tokens - spans)
        assert cached.info["prefills"] == spans
        plain = generate(adapter, build("sampler", "clm-infill:use_cache=false"), [item], batch_size=1)[0]
        assert plain.text == cached.text
        if cached.generated_tokens > 1:
            assert plain.tokens_processed > cached.tokens_processed


def test_mlm_and_clm_see_the_same_masked_words(adapters):
    items = items_for("random:ratio=0.3", seed=11)
    mlm = generate(adapters["mlm"], build("sampler", "one-shot"), items)
    clm = generate(adapters["clm"], build("sampler", "clm-infill"), items)
    s2s = generate(adapters["seq2seq"], build("sampler", "seq2seq-infill"), items)
    assert [g.masked_words for g in mlm] == [g.masked_words for g in clm] == [g.masked_words for g in s2s]
    assert [g.masked_text for g in mlm] == [g.masked_text for g in clm]
    assert any(g.masked_words for g in mlm)


def test_sampling_is_seeded_per_item(adapters):
    adapter = adapters["mlm"]
    sampler = build("sampler", "one-shot:temperature=1.5")
    first = generate(adapter, sampler, items_for(seed=1))
    again = generate(adapter, sampler, items_for(seed=1))
    other = generate(adapter, sampler, items_for(seed=2))
    assert [g.text for g in first] == [g.text for g in again]
    assert [g.text for g in first] != [g.text for g in other]


def test_choose_tokens_greedy_top_k_top_p():
    logits = torch.tensor([[0.0, 3.0, 1.0, 2.0], [5.0, 0.0, 0.0, 4.9]])
    ids, probs = choose_tokens(logits, torch.zeros(2), 0.0, 0, 1.0)
    assert ids.tolist() == [1, 0] and torch.allclose(probs, torch.softmax(logits, -1).max(-1).values)
    for u in (0.0, 0.5, 0.999):
        assert choose_tokens(logits, torch.full((2,), u), 1.0, 1, 1.0)[0].tolist() == [1, 0]
        assert choose_tokens(logits, torch.full((2,), u), 1.0, 0, 0.01)[0].tolist() == [1, 0]
        assert set(choose_tokens(logits, torch.full((2,), u), 1.0, 2, 1.0)[0].tolist()) <= {0, 1, 3}
    spread = {choose_tokens(logits[1:], torch.tensor([u]), 1.0, 0, 1.0)[0].item() for u in (0.1, 0.9)}
    assert spread == {0, 3}


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_choosing_in_chunks_or_in_place_equals_choosing_gathered_rows(temperature, monkeypatch):
    import mlmh.toolkit as common

    generator = torch.Generator().manual_seed(0)
    flat = torch.randn(40, 50, generator=generator)
    uniforms = torch.rand(40, generator=generator)
    for index in (torch.arange(3, 30), torch.tensor([0, 2, 3, 9, 10, 11, 39]), torch.arange(40)):
        expected = choose_tokens(flat[index], uniforms[: len(index)], temperature, 0, 1.0)
        for chunk in (4, 256):
            monkeypatch.setattr(common, "CHOICE_CHUNK", chunk)
            got = choose_at(flat, index, uniforms[: len(index)], temperature, 0, 1.0)
            assert torch.equal(got[0], expected[0]) and torch.equal(got[1], expected[1])


def test_trace_marks_a_position_changed_only_when_its_token_changes(adapters):
    adapter = adapters["mlm"]
    trace = TraceRecorder([[2, 10, 11, 3]], [{1, 2}], [[]])
    trace.step(0, [1], [20], [0.5])  # fills a mask
    trace.step(0, [1], [20], [0.6])  # resampled to the same token (Gibbs): nothing changes
    trace.step(0, [1, 2], [21, 22], [0.7, 0.8], remasked=[1])
    first, same, both = trace.steps(0, adapter)
    assert (first.changed, first.masked) == ([1], [2])
    assert (same.changed, same.masked, same.tokens) == ([], [2], first.tokens)
    assert (both.changed, both.masked) == ([1, 2], [1])
    assert both.tokens[1] == adapter.tokens_to_strings([adapter.mask_id])[0]
    assert both.tokens[2] == adapter.tokens_to_strings([22])[0]


def test_one_token_steps_are_the_same_whichever_way_they_are_recorded(adapters):
    adapter = adapters["mlm"]
    by_step, by_step_one = (TraceRecorder([[2, 10, 11, 3]], [{1, 2}], [[]]) for _ in range(2))
    assert by_step.last_confidences(0) == []
    by_step.step(0, [2], [30], [0.25])
    by_step_one.step_one(0, 2, 30, 0.25)
    assert by_step.last_confidences(0) == by_step_one.last_confidences(0) == [(2, 0.25)]
    by_step.step(0, [1, 2], [21, 22], [0.7, 0.8])
    by_step_one.step(0, [1, 2], [21, 22], [0.7, 0.8])
    assert by_step.last_confidences(0) == [(1, 0.7), (2, 0.8)]
    assert by_step.steps(0, adapter) == by_step_one.steps(0, adapter)
    (first, _) = by_step.steps(0, adapter)
    assert (first.changed, first.masked, first.confidences) == ([2], [1], {2: 0.25})


def test_masked_words_beyond_the_window_are_refused_not_scored_as_kept(adapters):
    """A sampler reports the masked words it could not reach; generate() refuses them naming the window instead of
    handing on their original text as if the model had written it."""
    from mlmh.errors import ModelError

    text = " ".join(["the cat sat on the mat"] * 40)
    items = items_for("random:ratio=0.5", docs=[Document(id="long", text=text)])
    for kind, spec in (("mlm", "one-shot"), ("clm", "clm-infill")):
        sampler = build("sampler", spec)
        (gen,) = sampler.generate(adapters[kind], items)
        assert gen.truncated_tokens > 0 and "longer than the model window" in gen.info["truncated"]
        unfilled = gen.info["unfilled_masked_words"]
        assert unfilled and not set(unfilled) & set(gen.output_words)
        with pytest.raises(ModelError, match=r"masked word\(s\) lie beyond the window of model .* \(128 tokens\)"):
            generate(adapters[kind], sampler, items)


def test_incompatible_sampler_is_a_spec_error_naming_the_right_ones(adapters):
    with pytest.raises(SpecError, match="samplers for clm: clm-infill"):
        generate(adapters["clm"], build("sampler", "mask-predict"), items_for()[:1])
    with pytest.raises(SpecError, match="must be >= 1"):
        build("sampler", "mask-predict:steps=0")


WORDS = st.sampled_from(["the", "cat", "sat", "on", "mat", "again", "fox", "dog", ",", ".", ";", "quick", "children", "xyzzy"])


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(WORDS, min_size=0, max_size=30), ratio=st.floats(0.0, 1.0), seed=st.integers(0, 2**31))
def test_property_random_texts_and_ratios(adapters, words, ratio, seed):
    text = " ".join(words)
    items = prepare_items([Document(id="p", text=text)], build("masking", f"random:ratio={ratio}"), seed)
    n = len(split_words(text))
    assert len(items[0].plan.word_indices) == int(round(ratio * n))
    for kind, spec in (("mlm", "mask-predict:steps=2"), ("clm", "clm-infill")):
        gens = generate(adapters[kind], build("sampler", spec), items)
        assert_only_masked_words_change(items, gens, adapters[kind])
        if not items[0].plan.word_indices:
            assert gens[0].text == text and gens[0].forward_passes == 0


READ_SAMPLERS = [*MLM_SAMPLERS, "mdlm:steps=5", "remdm:steps=5,eta=0.2", "llada:steps=4,block_length=3",
                 "adaptive-gibbs:steps=6"]


@pytest.fixture(scope="module")
def full_pass_mlm(tiny_mlm):
    """The tiny MLM with its output layer left alone: every pass computes every position's logits."""
    adapter = load_adapter("mlm", tiny_mlm, threads=1)
    full_passes_only(adapter.model)
    return adapter


@pytest.mark.parametrize("spec", READ_SAMPLERS)
def test_reading_only_the_masked_positions_changes_no_token_and_no_probability(adapters, full_pass_mlm, spec):
    items = items_for("random:ratio=0.5")
    read = generate(adapters["mlm"], build("sampler", spec), items, batch_size=4)
    full = generate(full_pass_mlm, build("sampler", spec), items, batch_size=4)
    assert [g.text for g in read] == [g.text for g in full]
    assert [g.forward_passes for g in read] == [g.forward_passes for g in full]
    for a, b in zip(read, full):
        assert [s.changed for s in a.steps] == [s.changed for s in b.steps]
        for sa, sb in zip(a.steps, b.steps):
            assert sorted(sa.confidences) == sorted(sb.confidences)
            assert [sa.confidences[p] for p in sorted(sa.confidences)] == pytest.approx(
                [sb.confidences[p] for p in sorted(sb.confidences)], abs=1e-5)


def test_the_output_layer_sees_only_the_positions_a_sampler_reads(adapters):
    adapter = adapters["mlm"]
    items = [item for item in items_for("random:ratio=0.4") if item.plan.word_indices][:3]
    with output_rows(adapter.model) as rows:
        generate(adapter, build("sampler", "one-shot"), items, batch_size=3)
        generate(adapter, build("sampler", "left-to-right"), items[:1], batch_size=1)
    masked = [len(adapter.encode(item.words, item.plan).masked) for item in items]
    assert rows == [sum(masked)] + [1] * masked[0]  # one-shot: one pass, a row per masked token; then one per pass


def test_a_head_that_does_not_end_in_its_output_layer_is_read_from_full_passes(tiny_mlm, full_pass_mlm):
    adapter = load_adapter("mlm", tiny_mlm, threads=1)
    stray = torch.nn.Linear(4, 4)  # named as the output layer, never called by the model's forward
    adapter.model.get_output_embeddings = lambda: stray
    items = items_for("random:ratio=0.5")
    read = generate(adapter, build("sampler", "mask-predict:steps=3"), items)
    full = generate(full_pass_mlm, build("sampler", "mask-predict:steps=3"), items)
    assert [g.text for g in read] == [g.text for g in full]
    assert reader_of(adapter.model) is None and not stray._forward_pre_hooks


@pytest.mark.parametrize("kind, spec", [("clm", "clm-infill"), ("seq2seq", "seq2seq-infill")])
def test_a_decoder_prefill_computes_the_output_layer_for_its_last_token_only(adapters, tiny_clm, tiny_seq2seq,
                                                                             kind, spec):
    adapter = adapters[kind]
    items = [item for item in items_for("random:ratio=0.4") if item.plan.word_indices][:3]
    with output_rows(adapter.model) as rows:
        read = generate(adapter, build("sampler", spec), items, batch_size=3)
    full_adapter = load_adapter(kind, {"clm": tiny_clm, "seq2seq": tiny_seq2seq}[kind], threads=1)
    full_passes_only(full_adapter.model)
    full_adapter.__dict__["_keeps_logits"] = False
    with output_rows(full_adapter.model) as full_rows:
        full = generate(full_adapter, build("sampler", spec), items, batch_size=3)
    assert rows and max(rows) <= len(items) < max(full_rows)  # a row per item and pass, prefills of many tokens included
    assert [g.text for g in read] == [g.text for g in full]
    for a, b in zip(read, full):
        for sa, sb in zip(a.steps, b.steps):
            assert list(sa.confidences.values()) == pytest.approx(list(sb.confidences.values()), abs=1e-5)
