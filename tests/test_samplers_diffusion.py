"""Diffusion-line samplers (mdlm, llada, remdm, adaptive-gibbs) on tiny models: the sampler contract
(only masked words change, all filled, batching and neighbours change nothing, exact pass counts) and
each paper's rule."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from mlmh.generation import generate
from mlmh_builtins.samplers_diffusion import alpha
from mlmh_builtins.samplers_mlm import MaskedBatch
from mlmh.types import Document
from test_samplers import adapters, assert_only_masked_words_change, build, items_for  # noqa: F401 (fixture)
from tiny_models import TEXTS

SPECS = [
    "mdlm", "mdlm:steps=5,schedule=cosine", "mdlm:steps=6,temperature=1.0,top_k=10",
    "llada", "llada:steps=4,block_length=2,remasking=random", "llada:steps=3,block_length=3,temperature=0.8,top_p=0.9",
    "remdm", "remdm:steps=10,eta=0.5,sigma=rescale,temperature=1.0", "remdm:steps=8,eta=0.3,schedule=cosine",
    "adaptive-gibbs", "adaptive-gibbs:init=one-shot,steps=6,pick=proportional", "adaptive-gibbs:memory=3,stutter=true,temperature=1.0",
]


@pytest.mark.parametrize("spec", SPECS)
def test_contract_only_masked_words_change_all_filled_batching_changes_nothing(adapters, spec):
    adapter, sampler = adapters["mlm"], build("sampler", spec)
    items = items_for("random:ratio=0.5")
    by_eight = generate(adapter, sampler, items, batch_size=8)
    by_one = generate(adapter, sampler, items, batch_size=1)
    reversed_order = generate(adapter, sampler, items[::-1], batch_size=8)[::-1]  # other neighbours, same seeds
    assert_only_masked_words_change(items, by_eight, adapter)
    mask = adapter.tokenizer.mask_token
    for item, gen in zip(items, by_eight):
        assert set(gen.output_words) == set(item.plan.word_indices)  # every masked word filled
        assert mask not in gen.text
        if gen.masked_words:
            assert gen.steps[-1].masked == [] and gen.forward_passes > 0
        else:
            assert gen.forward_passes == 0 and not gen.steps
    for other in (by_one, reversed_order):
        assert [g.text for g in other] == [g.text for g in by_eight]
        assert [g.forward_passes for g in other] == [g.forward_passes for g in by_eight]
        assert [[s.changed for s in g.steps] for g in other] == [[s.changed for s in g.steps] for g in by_eight]


@pytest.mark.parametrize("spec", ["mdlm:steps=7", "llada:steps=5,block_length=3", "remdm:steps=9,eta=0.4", "adaptive-gibbs:steps=5"])
def test_forward_passes_are_counted_exactly_per_item(adapters, spec):
    adapter = adapters["mlm"]
    for item in items_for("random:ratio=0.5")[:6]:
        (gen,) = generate(adapter, build("sampler", spec), [item], batch_size=1)
        assert gen.forward_passes == adapter.forward_passes  # the adapter's own counter, one item alone
        assert gen.tokens_processed == adapter.tokens_processed


@pytest.mark.parametrize("spec", ["mdlm:steps=6", "remdm:steps=6", "llada:steps=6,remasking=random", "adaptive-gibbs:temperature=1.0"])
def test_draws_are_seeded_per_item(adapters, spec):
    adapter, sampler = adapters["mlm"], build("sampler", spec)
    first = generate(adapter, sampler, items_for("random:ratio=0.6", seed=1))
    again = generate(adapter, sampler, items_for("random:ratio=0.6", seed=1))
    assert [[s.changed for s in g.steps] for g in first] == [[s.changed for s in g.steps] for g in again]
    items = [replace(item, seed=item.seed + 1) for item in items_for("random:ratio=0.6", seed=1)]  # same masks
    other = generate(adapter, sampler, items)
    assert [[s.changed for s in g.steps] for g in first] != [[s.changed for s in g.steps] for g in other]


def _masked_counts(gen):
    return [len(step.masked) for step in gen.steps]


def test_mdlm_unmasks_on_its_schedule_and_everything_by_the_last_step(adapters):
    adapter = adapters["mlm"]
    docs = [Document(id=f"d{i}", text=t) for i, t in enumerate(TEXTS)]
    for schedule in ("linear", "cosine"):
        steps = 5
        unmasked_by_step = [0.0] * steps
        total = 0
        for seed in range(6):
            items = items_for("random:ratio=1.0", seed=seed, docs=docs)
            for gen in generate(adapter, build("sampler", f"mdlm:steps={steps},schedule={schedule}"), items):
                per_step = gen.info["unmasked_per_step"]
                n = gen.generated_tokens
                assert len(per_step) == steps and sum(per_step) == n and gen.steps[-1].masked == []
                assert _masked_counts(gen) == sorted(_masked_counts(gen), reverse=True)  # never remasks
                assert gen.forward_passes == len(gen.steps) == sum(1 for k in per_step if k)  # no pass when nothing unmasks
                assert gen.info["steps_without_pass"] == steps - gen.forward_passes
                for i in range(steps):
                    unmasked_by_step[i] += sum(per_step[: i + 1])
                total += n
        for i in range(steps - 1):  # share unmasked after step i+1 ~ alpha at s = 1 - (i+1)/T
            expected = alpha(1 - (i + 1) / steps, schedule)
            assert abs(unmasked_by_step[i] / total - expected) < 0.05, (schedule, i)
        assert unmasked_by_step[-1] == total


def test_mdlm_skips_passes_and_one_step_is_one_shot(adapters):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.5")[:8]
    many = generate(adapter, build("sampler", "mdlm:steps=200"), items)
    for gen in many:  # each pass unmasks at least one token: at most one pass per masked token
        assert 0 < gen.forward_passes <= gen.generated_tokens
    single = generate(adapter, build("sampler", "mdlm:steps=1"), items)
    one_shot = generate(adapter, build("sampler", "one-shot"), items)
    assert [g.text for g in single] == [g.text for g in one_shot]
    assert all(g.forward_passes == 1 for g in single)


def _blocks(positions, size):
    return [positions[i:i + size] for i in range(0, len(positions), size)]


@pytest.mark.parametrize("steps, size", [(4, 3), (12, 2), (2, 4), (5, 100)])
def test_llada_commits_block_by_block_left_to_right_on_the_transfer_schedule(adapters, steps, size):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.6")[:8]
    for remasking in ("low_confidence", "random"):
        gens = generate(adapter, build("sampler", f"llada:steps={steps},block_length={size},remasking={remasking}"), items)
        for item, gen in zip(items, gens):
            masked = adapter.encode(item.words, item.plan).masked
            if not masked:
                continue
            blocks = _blocks(masked, size)
            expected_counts = []
            for b, block in enumerate(blocks):
                share = steps // len(blocks) + (b < steps % len(blocks))
                block_steps = min(max(share, 1), len(block))
                expected_counts += [len(block) // block_steps + (k < len(block) % block_steps) for k in range(block_steps)]
            committed = [sorted(step.confidences) for step in gen.steps]
            assert [len(c) for c in committed] == expected_counts
            assert gen.forward_passes == len(expected_counts)
            owner = [next(b for b, block in enumerate(blocks) if set(c) <= set(block)) for c in committed]
            assert owner == sorted(owner)  # each step inside one block, blocks in order
            for b, block in enumerate(blocks):  # a block is finished before the next begins
                last = max(i for i, o in enumerate(owner) if o == b)
                assert not set(gen.steps[last].masked) & set(block)
                assert set(gen.steps[last].masked) == set(masked[(b + 1) * size:])
            assert gen.info["blocks"] == len(blocks)


def test_llada_low_confidence_commits_the_most_confident_predictions(adapters):
    adapter = adapters["mlm"]
    (item,) = items_for("random:ratio=1.0", docs=[Document(id="x", text=TEXTS[1])])
    (gen,) = generate(adapter, build("sampler", "llada:steps=4,block_length=100"), [item])
    batch = MaskedBatch(adapter, [item])  # replay step 1: predict all, commit the top n/4
    logits = batch.forward(torch.tensor([0]))
    probs = torch.softmax(logits[0], dim=-1).amax(dim=-1)
    masked = adapter.encode(item.words, item.plan).masked
    first = sorted(gen.steps[0].confidences)
    best = sorted(sorted(masked, key=lambda p: -float(probs[p]))[: len(first)])
    assert first == best


def test_remdm_with_eta_zero_is_mdlm(adapters):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.6")
    for extra in ("", ",schedule=cosine,temperature=1.0"):
        mdlm = generate(adapter, build("sampler", f"mdlm:steps=7{extra}"), items)
        remdm = generate(adapter, build("sampler", f"remdm:steps=7,eta=0{extra}"), items)
        assert [g.text for g in remdm] == [g.text for g in mdlm]
        assert [g.forward_passes for g in remdm] == [g.forward_passes for g in mdlm]
        assert [[s.changed for s in g.steps] for g in remdm] == [[s.changed for s in g.steps] for g in mdlm]


@pytest.mark.parametrize("sigma", ["cap", "rescale"])
def test_remdm_remasks_only_committed_originally_masked_positions(adapters, sigma):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.6")
    gens = generate(adapter, build("sampler", f"remdm:steps=12,eta=0.6,sigma={sigma}"), items)
    remasks = 0
    for item, gen in zip(items, gens):
        masked = adapter.encode(item.words, item.plan).masked
        previous = set(masked)
        for step in gen.steps:
            now = set(step.masked)
            back = now - previous  # went back to the mask in this step
            assert back <= set(masked) and not back & set(step.confidences)
            remasks += len(back)
            previous = now
        if masked:
            assert gen.steps[-1].masked == []
            assert sum(gen.info["remasked_per_step"]) == sum(gen.info["unmasked_per_step"]) - len(masked)
            assert gen.forward_passes == sum(1 for k in gen.info["unmasked_per_step"] if k)
    assert remasks > 0


def test_adaptive_gibbs_picks_the_least_confident_position_not_just_resampled(adapters):
    adapter = adapters["mlm"]
    (item,) = items_for("random:ratio=1.0", docs=[Document(id="x", text="the cat sat on the mat")])
    sampler = build("sampler", "adaptive-gibbs:memory=1")
    sampler._state = {}
    batch = MaskedBatch(adapter, [item])
    positions = batch.original[0].nonzero().flatten().tolist()
    confidences = [0.9, 0.2, 0.6, 0.05, 0.7, 0.4][: len(positions)]
    batch.trace.step(0, positions, [5] * len(positions), confidences)  # a one-shot fill with these probabilities
    n = len(positions)
    least = positions[confidences.index(min(confidences))]
    assert sampler._pick(batch, 0, n, positions, list(range(n))) == least
    batch.trace.step(0, [least], [5], [0.01])  # resampled, still the least confident: memory excludes it
    second = sorted(zip(confidences, positions))[1][1]
    assert sampler._pick(batch, 0, n + 1, positions, list(range(n))) == second


def test_adaptive_gibbs_follows_its_rule_and_spends_the_passes_of_gibbs(adapters):
    adapter = adapters["mlm"]
    items = items_for("random:ratio=0.5")[:8]
    for params in ("", "steps=5", "init=one-shot,steps=7", "burnin=0.2,temperature=1.0"):
        gibbs = generate(adapter, build("sampler", f"gibbs:{params}" if params else "gibbs"), items, batch_size=8)
        gibbs_batch = adapter.forward_passes
        adaptive = generate(adapter, build("sampler", f"adaptive-gibbs:{params}" if params else "adaptive-gibbs"), items, batch_size=8)
        assert adapter.forward_passes == gibbs_batch
        assert [g.forward_passes for g in adaptive] == [g.forward_passes for g in gibbs]
    for item, gen in zip(items, generate(adapter, build("sampler", "adaptive-gibbs"), items)):
        n = gen.generated_tokens
        confidence: dict[int, float] = {}
        previous = None
        for t, step in enumerate(gen.steps):
            (pick,) = step.confidences
            if t >= n:  # after the first sweep: the least confident, except the one just resampled
                others = {p: c for p, c in confidence.items() if p != previous or n == 1}
                assert confidence[pick] <= min(others.values()) + 1e-6 and (pick != previous or n == 1)
            confidence[pick] = step.confidences[pick]
            previous = pick
        assert gen.info["gibbs_pick"].startswith("least-confident")


def test_bad_parameters_name_the_parameter():
    from mlmh.errors import SpecError

    for spec, words in (("mdlm:schedule=square", "schedule"), ("llada:block_length=0", "block_length"),
                        ("remdm:eta=2", "eta"), ("adaptive-gibbs:pick=best", "pick")):
        with pytest.raises(SpecError, match=words):
            build("sampler", spec)
    assert math.isclose(alpha(1.0, "cosine"), 0.0, abs_tol=1e-12) and alpha(0.0, "cosine") == 1.0
