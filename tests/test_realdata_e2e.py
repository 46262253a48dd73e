"""`mlmh eval --preset pan|mpst` end to end on official-format files built from real prose nobody here wrote
(tests/realdata.py): every masking, ``ner`` and ``pos`` included, runs without annotations or spaCy."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from realdata import install_entity_tagger, mpst_csv, pan_dir, trained_entity_tagger

MODELS = ["trained-mlm:size=tiny,max_steps=20", "trained-clm:size=tiny,max_steps=20"]
MASKINGS = ["random:ratio=0.3", "stopwords", "ner", "pos"]


@pytest.fixture(scope="module")
def tagger_model(tmp_path_factory):
    return trained_entity_tagger(tmp_path_factory.mktemp("entity-tagger"))


def run_preset(tmp_path, tagger_model, preset: str, data) -> dict:
    cache = tmp_path / "cache"
    install_entity_tagger(tagger_model, cache)
    env = {**os.environ, "MLMH_CACHE_DIR": str(cache), "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    args = [sys.executable, "-m", "mlmh", "eval", "--preset", preset, "--data", str(data), "--limit", "4",
            "--sampler", "one-shot", "--sampler", "clm-infill", "--metric", "bleu", "--output-path", str(tmp_path / "run"),
            *(a for m in MODELS for a in ("--model", m)), *(a for m in MASKINGS for a in ("--masking", m))]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "bundled sample" not in done.stderr
    return json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))


def assert_every_masking_ran(results: dict) -> None:
    ran = {row["masking"].split(":")[0] for row in results["conditions"]}
    assert ran == {m.split(":")[0] for m in MASKINGS}
    for row in results["conditions"]:
        assert row["generation"]["samples"] == results["n_samples"] > 0
        # the fair study on data nobody here wrote: both sets, their CIs, recall, the baselines, the gap
        for role in ("seen", "unseen"):
            if not row[role]["scored"]:  # e.g. no entity in the few documents of a role: flagged, not scored
                assert row[role]["nothing_masked"] == row[role]["documents"]
                continue
            bleu = row[role]["metrics"]["bleu"]
            assert bleu["ci_low"] <= bleu["value"] <= bleu["ci_high"]
            assert "verbatim_recall" in row[role] and "bleu" in row[role]["filler"] and "bleu" in row[role]["deletion"]
        assert "bleu" in row.get("gap", {}) or not (row["seen"]["scored"] and row["unseen"]["scored"]), {
            k: row[k] for k in ("id", "seen", "unseen")}


@pytest.mark.slow
def test_pan_preset_on_official_pan_files(tmp_path, tagger_model):
    results = run_preset(tmp_path, tagger_model, "pan", pan_dir(tmp_path, n_authors=8))
    assert_every_masking_ran(results)
    assert "authorship-verification" in results["baseline"]


@pytest.mark.slow
def test_mpst_preset_on_an_official_mpst_csv(tmp_path, tagger_model):
    results = run_preset(tmp_path, tagger_model, "mpst", mpst_csv(tmp_path, n=20))
    assert_every_masking_ran(results)
