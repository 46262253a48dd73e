"""The data-constrained sweep: its axes from the command line, and the crossover computed on constructed runs
(a known crossover, none, a CI that straddles)."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from mlmh.config.sweep import expand_models, parse_axis
from mlmh.findings.crossover import crossover_epoch, summarise
from mlmh.errors import SpecError
from mlmh.types import RunResults

EPOCHS = (1.0, 2.0, 4.0, 8.0)
BLOCKS, DOCS = 40, 30


def test_expansion_replaces_both_axes_of_every_swept_model_and_keeps_the_rest():
    preset = ["trained-mlm:mask_schedule=mdlm,unique_tokens=16000,epochs=1,keep=last",
              "trained-mlm:mask_schedule=mdlm,unique_tokens=16000,epochs=2,keep=last",
              "trained-clm:unique_tokens=16000,epochs=1,keep=last", "hf-mlm:model=x"]
    assert expand_models(preset, epochs=[1, 4, 16]) == [
        "trained-mlm:mask_schedule=mdlm,keep=last,unique_tokens=16000,epochs=1",
        "trained-mlm:mask_schedule=mdlm,keep=last,unique_tokens=16000,epochs=4",
        "trained-mlm:mask_schedule=mdlm,keep=last,unique_tokens=16000,epochs=16",
        "trained-clm:keep=last,unique_tokens=16000,epochs=1",
        "trained-clm:keep=last,unique_tokens=16000,epochs=4",
        "trained-clm:keep=last,unique_tokens=16000,epochs=16",
        "hf-mlm:model=x"]
    out = expand_models(preset, epochs=[1, 4], tokens=[8000, 32000])
    assert "hf-mlm:model=x" in out and len(out) == 2 * 2 * 2 + 1  # 2 objectives x 2 U x 2 epochs
    assert "trained-clm:keep=last,unique_tokens=32000,epochs=4" in out
    # an axis not given keeps the preset's values; no axis at all leaves a spec's other parameters alone
    kept = expand_models(preset, tokens=[500])
    assert {s.rsplit("epochs=", 1)[1] for s in kept if "epochs=" in s} == {"1", "2"}
    assert expand_models(["trained-clm:size=tiny"]) == ["trained-clm:size=tiny"]


def test_axis_values_are_positive_numbers():
    assert parse_axis("1,2.5,4", float, "--sweep-epochs") == [1.0, 2.5, 4.0]
    assert parse_axis("8000,16e3", int, "--sweep-tokens") == [8000, 16000]
    assert parse_axis(None, int, "x") is None
    for bad in ("0,1", "a,b", "-2"):
        with pytest.raises(SpecError, match="--sweep-epochs"):
            parse_axis(bad, float, "--sweep-epochs")


def test_crossover_is_where_the_mlm_gets_ahead_and_stays():
    assert crossover_epoch(EPOCHS, [False, False, True, True]) == 4.0
    assert crossover_epoch(EPOCHS, [True, True, True, True]) == 1.0
    assert crossover_epoch(EPOCHS, [False, True, False, True]) == 8.0  # ahead at 2, behind again at 4
    assert crossover_epoch(EPOCHS, [False, True, True, False]) is None  # behind at the last epoch: no crossover


def sweep(mlm_loss, clm_loss, mlm_rouge, clm_rouge, *, noise=0.05, seed=0):
    """A finished sweep's results: per epoch one MLM and one CLM with per-block validation losses around the
    given means and per-document ROUGE-L around the given values, on shared blocks and documents."""
    rng = np.random.default_rng(seed)
    block_effect = rng.normal(0, 0.3, BLOCKS)  # blocks differ in difficulty alike for both models: pairing helps
    doc_effect = rng.normal(0, 0.1, DOCS)
    models, conditions, per_document = {}, [], {}
    for kind, losses, rouge in (("mlm", mlm_loss, mlm_rouge), ("clm", clm_loss, clm_rouge)):
        for e, loss, r in zip(EPOCHS, losses, rouge):
            name = f"trained-{kind}"
            spec = f"{name}:epochs={e},keep=last,unique_tokens=1000"
            tokens = rng.integers(60, 120, BLOCKS)
            per_block = loss + block_effect + rng.normal(0, noise, BLOCKS)
            models[spec] = {"identity": spec, "model_kind": kind, "training": {
                "validation_loss": float((per_block * tokens).sum() / tokens.sum()), "approx_train_flops": 6e9 * e,
                "train_seconds": 3.0 * e, "tokens_seen": 1000 * e, "parameters": 10**6,
                "validation_block_losses": [[float(b * t), int(t)] for b, t in zip(per_block, tokens)]}}
            cid = f"{kind}-{e:g}"
            docs = {f"d{i}": float(r + doc_effect[i] + rng.normal(0, noise)) for i in range(DOCS)}
            value = float(np.mean(list(docs.values())))
            conditions.append({"id": cid, "model": spec, "model_kind": kind, "masking": "random:ratio=0.3",
                               "sampler": "s", "seed": 0, "unseen": {"documents": DOCS, "scored": DOCS, "metrics": {
                                   "rougeL": {"value": value, "ci_low": value - 0.02, "ci_high": value + 0.02}},
                                   "filler": {"rougeL": {"value": 0.5}}, "deletion": {"rougeL": {"value": 0.4}}}})
            per_document[cid] = {"rougeL": docs}
    return RunResults.from_dict({"schema_version": 2, "conditions": conditions, "models": models}), per_document


def by_measure(block):
    return {f["measure"]: f for f in block.crossovers}


def test_a_known_crossover_with_its_paired_ci():
    results, docs = sweep([5.0, 4.6, 4.2, 4.0], [4.5, 4.4, 4.5, 4.7], [0.60, 0.62, 0.70, 0.72], [0.66, 0.68, 0.66, 0.64])
    block = summarise(results, docs, n_resamples=400)
    loss, rouge = by_measure(block)["validation_loss"], by_measure(block)["rougeL"]
    assert loss["epochs"] == 4.0 and loss["approx_train_flops"] == 6e9 * 4
    at = next(p for p in loss["per_epoch"] if p["epochs"] == 4.0)
    assert at["difference"] == pytest.approx(-0.3, abs=0.05) and at["ci_high"] < 0  # paired over blocks: tight
    assert loss["epochs_ci"] == [4.0, 4.0] and loss["no_crossover_share"] == 0
    assert loss["paired_over"] == "validation blocks" and loss["n"] == BLOCKS
    assert rouge["epochs"] == 4.0 and rouge["per_epoch"][2]["ci_low"] > 0
    assert "U=1,000" in block.answer and "from 4 epochs" in block.answer
    # every point is there, with FLOPs, seconds and the baselines beside the scores
    assert len(block.points) == 8 and block.metrics == ["rougeL"]
    point = next(p for p in block.points if p.objective == "clm" and p.epochs == 8.0)
    assert point.validation_loss == pytest.approx(4.7, abs=0.1) and point.train_seconds == 24.0
    assert point.filler["rougeL"].value == 0.5 and point.deletion["rougeL"].value == 0.4


def test_no_crossover_within_the_sweep():
    results, docs = sweep([5.0, 4.8, 4.6, 4.5], [4.0, 3.9, 3.9, 4.0], [0.5] * 4, [0.7] * 4)
    block = summarise(results, docs, n_resamples=200)
    loss = by_measure(block)["validation_loss"]
    assert loss["epochs"] is None and loss["approx_train_flops"] is None and loss["no_crossover_share"] == 1.0
    assert "no crossover on validation loss beyond its CI within the sweep (1-8 epochs)" in block.answer


def test_a_crossover_within_the_noise_has_a_ci_that_says_so():
    results, docs = sweep([4.50, 4.50, 4.49, 4.49], [4.49, 4.50, 4.51, 4.50], [0.6] * 4, [0.6] * 4, noise=0.3)
    loss = by_measure(summarise(results, docs, n_resamples=300))["validation_loss"]
    last = loss["per_epoch"][-1]
    assert last["ci_low"] < 0 < last["ci_high"]  # the difference's CI straddles 0
    assert 0 < loss["no_crossover_share"] < 1  # and in some resamples there is no crossover at all
    # so no crossover is stated, whatever the point estimates say
    assert loss["epochs"] is None and loss["approx_train_flops"] is None


def test_a_crossover_of_the_point_estimates_alone_is_not_stated():
    # ahead by 0.02 nats at the last two epochs, inside noise of sd 0.3 per block: the point estimates cross
    results, docs = sweep([4.6, 4.6, 4.48, 4.48], [4.5, 4.5, 4.5, 4.5], [0.6] * 4, [0.6] * 4, noise=0.3, seed=2)
    loss = by_measure(summarise(results, docs, n_resamples=300))["validation_loss"]
    assert loss["ahead_from"] is not None and loss["per_epoch"][-1]["ci_high"] > 0
    assert loss["epochs"] is None and "but not beyond its CI" in loss["statement"]


def test_a_run_that_is_no_sweep_has_no_block_and_reads_back():
    results, docs = sweep([5.0] * 4, [4.0] * 4, [0.5] * 4, [0.6] * 4)
    results.models = {k: v for k, v in results.models.items() if "epochs=1.0" in k}
    assert summarise(results, docs) is None
    full, docs = sweep([5.0, 4.0, 3.0, 2.0], [4.0] * 4, [0.5] * 4, [0.6] * 4)
    full.crossover = summarise(full, docs, n_resamples=50)
    again = RunResults.from_dict(full.to_dict())
    assert again.crossover == full.crossover and "crossover" not in RunResults.from_dict({"conditions": []}).to_dict()


def test_the_cli_expands_the_sweep_axes():
    from mlmh.cli import cli

    out = CliRunner().invoke(cli, ["eval", "--preset", "crossover", "--sweep-epochs", "1,3", "--sweep-tokens",
                                    "5000", "--show-config"])
    assert out.exit_code == 0, out.output
    assert "trained-mlm:mask_schedule=mdlm,keep=last,patience_tokens=0,unique_tokens=5000,epochs=3" in out.output
    assert out.output.count("trained-") == 4
    bad = CliRunner().invoke(cli, ["eval", "--preset", "crossover", "--sweep-epochs", "0", "--show-config"])
    assert bad.exit_code != 0 and "--sweep-epochs 0: expected a number > 0" in str(bad.exception)
