"""METEOR says before a run whether it can run here (``unavailable``): without WordNet a preset default is
dropped with a note and a metric the user named stops the run before any model loads, naming the flag."""

from __future__ import annotations

import pytest

import runner_fakes
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.data import wordnet
from mlmh.errors import SpecError
from mlmh.registry import get_registry
from mlmh.run.runner import run_experiment
from mlmh.types import Corpus


@pytest.fixture
def no_wordnet(monkeypatch):
    monkeypatch.setattr(wordnet, "find_wordnet", lambda: None)
    monkeypatch.setattr(wordnet, "debian_files_present", lambda source=None: False)


def meteor():
    return get_registry().build("metric", "meteor")


def test_meteor_is_available_with_wordnet_or_the_debian_files(monkeypatch):
    corpus = Corpus(dataset="x", documents=[], source="test")
    monkeypatch.setattr(wordnet, "find_wordnet", lambda: "/somewhere/corpora/wordnet")
    monkeypatch.setattr(wordnet, "debian_files_present", lambda source=None: False)
    assert meteor().unavailable(corpus) is None
    monkeypatch.setattr(wordnet, "find_wordnet", lambda: None)
    monkeypatch.setattr(wordnet, "debian_files_present", lambda source=None: True)  # assembled on first use
    assert meteor().unavailable(corpus) is None


def test_without_wordnet_meteor_says_why_and_how_to_fix(no_wordnet):
    reason = meteor().unavailable(Corpus(dataset="x", documents=[], source="test"))
    assert reason.startswith("needs WordNet") and "mlmh doctor --fix" in reason and "wordnet-base" in reason


def run(tmp_path, overrides=None):
    runner_fakes.install()
    table = {**runner_fakes.FAKE_PRESET, "metrics": ["word-match", "meteor"]}
    cfg = from_table(table, name="fake", source="fake.toml", overrides=overrides)
    return run_experiment(build_plan(cfg), None, output_path=tmp_path / "run", cache_path=tmp_path / "cache.sqlite")


def test_a_preset_default_meteor_is_dropped_with_a_note(tmp_path, no_wordnet):
    results = run(tmp_path).to_dict()
    assert any(note.startswith("metric meteor skipped: needs WordNet") and "a default of fake.toml" in note
               for note in results["notes"])
    assert {name for row in results["conditions"] for name in row["metrics"]} == {"word-match"}


def test_a_named_meteor_fails_fast_naming_the_flag(tmp_path, no_wordnet, monkeypatch):
    loaded = []
    monkeypatch.setattr(runner_fakes.FakeMLM, "load", lambda self, context: loaded.append(self) or None)
    with pytest.raises(SpecError, match=r"^--metric meteor: needs WordNet"):
        run(tmp_path, overrides={"metrics": ["meteor"]})
    assert loaded == []  # before any model loaded


def test_pos_masking_needs_a_tagger_and_says_which_is_missing(monkeypatch, no_wordnet):
    from mlmh_builtins import maskings

    corpus = Corpus(dataset="x", documents=[], source="test")
    pos = get_registry().build("masking", "pos")
    monkeypatch.setattr(maskings, "spacy_pipeline", lambda: None)
    monkeypatch.setattr(maskings, "nltk_perceptron_installed", lambda: False)
    assert "needs WordNet" in pos.unavailable(corpus) and "NLTK tagger" in pos.unavailable(corpus)
    monkeypatch.setattr(maskings, "nltk_perceptron_installed", lambda: True)
    assert pos.unavailable(corpus) is None
