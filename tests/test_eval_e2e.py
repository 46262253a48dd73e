"""`mlmh eval` end to end with the real builtins: trained tiny models (a few steps), real maskings,
samplers, metrics and the authorship-verification task on the bundled PAN sample."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from mlmh.run.results import strip_timings

PRESET = '''
description = "end-to-end test: three tiny models trained for a few steps"
dataset = "pan"
models = ["trained-mlm:size=tiny,max_steps=4", "trained-clm:size=tiny,max_steps=4", "trained-seq2seq:size=tiny,max_steps=4"]
maskings = ["random:ratio=0.3", "stopwords"]
samplers = ["one-shot", "mask-predict:steps=3", "clm-infill", "seq2seq-infill"]
metrics = ["bleu", "rouge", "stutter", "novelty"]
tasks = ["authorship-verification", "ner"]
limit = 6
batch_size = 4
'''
CONDITIONS = 2 * 2 + 2 + 2  # mlm: 2 maskings x 2 samplers; clm and seq2seq: 2 maskings x 1 sampler
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    root = tmp_path_factory.mktemp("e2e")
    (root / "e2e.toml").write_text(PRESET, encoding="utf-8")
    env = {**os.environ, "MLMH_CACHE_DIR": str(root / "cache"), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1",
           "COLUMNS": "200"}
    return root, env


def mlmh_eval(workspace, name, *extra):
    root, env = workspace
    done = subprocess.run([sys.executable, "-m", "mlmh", "eval", "--preset", str(root / "e2e.toml"),
                           "--output-path", str(root / name), *extra], env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done, json.loads((root / name / "results.json").read_text(encoding="utf-8"))


@pytest.mark.slow
def test_eval_end_to_end_then_warm_rerun_and_batch_size(workspace):
    root, _ = workspace
    done, results = mlmh_eval(workspace, "cold", "--log-samples")
    # the CLI: the bundled-sample line, the comparison table, where the results are
    assert "bundled sample" in done.stderr
    # output that is not a terminal (here a pipe; a log file alike) gets plain progress lines with counts
    assert "[generate] started" in done.stderr and "[metrics] done in" in done.stderr
    assert re.search(r"^\[generate\] \d+/\d+ \(\d+%\)  elapsed ", done.stderr, re.MULTILINE)
    assert re.search(r"^\[train:mlm \(scratch\)\] \d+/\d+ ", done.stderr, re.MULTILINE)  # a model by kind and start
    assert "trained-seq2seq" in done.stdout and "bleu" in done.stdout and "results.json" in done.stdout
    # results.json
    assert results["n_samples"] == len({json.loads(x)["doc_id"] for x in (root / "cold" / "generations.jsonl").open()})
    assert len(results["conditions"]) == CONDITIONS
    kinds = {row["model_kind"] for row in results["conditions"]}
    assert kinds == {"mlm", "clm", "seq2seq"}
    for row in results["conditions"]:
        bleu = row["metrics"]["bleu"]
        assert bleu["value"] is not None and bleu["ci_low"] <= bleu["value"] <= bleu["ci_high"]
        assert {"rouge1", "rouge2", "rougeL"} <= set(row["metrics"])
        assert row["generation"]["forward_passes"] > 0 and row["generation"]["samples"] == results["n_samples"]
        assert "authorship-verification" in row["downstream"]
    assert "authorship-verification" in results["baseline"]
    assert results["correlations"] and results["versions"]["torch"]
    assert any("ner" in note for note in results["notes"]) or "ner" in results["baseline"]
    out = root / "cold"
    report = (out / "report.md").read_text(encoding="utf-8")
    assert report.index("MLM against CLM on unseen documents") < report.index("MLM against CLM on seen documents")
    assert "Memorization (seen - unseen gap" in report and "## Training" in report and "## Downstream tasks" in report
    assert "validation loss" in report and "verbatim recall" in report
    cards = [m["training"] for m in results["models"].values()]  # the card's facts reach results.json by name
    assert cards and all({"validation_loss", "step_kept", "validation_curve"} <= set(c) for c in cards)
    assert any("accuracy_at_ratio" in c for c in cards)
    assert (out / "quality_vs_downstream.png").read_bytes()[:8] == PNG_MAGIC
    samples = [json.loads(x) for x in (out / "samples.jsonl").open()]
    assert len(samples) == CONDITIONS * results["n_samples"]
    mask_predict = [s for s in samples if s["generation"]["sampler"].startswith("mask-predict")]
    assert mask_predict and all(len(s["generation"]["steps"]) == 3 for s in mask_predict)
    assert all(s["generation"]["text"] != s["generation"]["masked_text"] for s in samples)

    # warm: the models and every sample come from the caches, results are the same
    warm_done, warm = mlmh_eval(workspace, "warm")
    assert "training trained-" not in warm_done.stderr  # no training bar: models came from the cache
    strip = lambda r: {**strip_timings(r), "run_id": None, "config": None}  # noqa: E731
    assert strip(warm) == strip(results)

    # batch size changes nothing (fresh private caches, so generation really runs)
    _, one = mlmh_eval(workspace, "bs1", "--batch-size", "1", "--no-cache")
    assert strip(one) == strip(results)
