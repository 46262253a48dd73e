"""Masking strategies: ratios, what counts as maskable, determinism, annotations vs taggers, bad specs."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from mlmh.errors import MlmhError, SpecError
from mlmh.generation import prepare_items
from mlmh.registry import get_registry
from mlmh.types import Document, EntitySpan
from mlmh.words import is_punctuation, split_words

TEXT = "Patient was given aspirin 81 mg by mouth daily, and the pain in the chest eased; he went home."


def mask(spec: str, text: str = TEXT, seed: int = 0, document: Document | None = None):
    masking = get_registry().build("masking", spec)
    words = split_words(text)
    return words, masking.mask(document or Document(id="x", text=text), words, np.random.default_rng(seed))


@pytest.mark.parametrize("name", ["random", "stopwords", "punctuation", "span"])
def test_ratio_zero_masks_nothing(name):
    assert mask(f"{name}:ratio=0").__getitem__(1).word_indices == ()


def test_ratio_one_masks_every_maskable_word():
    words, plan = mask("random:ratio=1")
    assert plan.word_indices == tuple(range(len(words)))
    words, plan = mask("stopwords:ratio=1")
    assert [words[i] for i in plan.word_indices] == [w for w in words if w.lower() in ENGLISH_STOP_WORDS]
    words, plan = mask("punctuation:ratio=1")
    assert [words[i] for i in plan.word_indices] == [",", ";", "."]
    words, plan = mask("span:ratio=1")
    assert plan.word_indices == tuple(range(len(words)))


def test_random_ratio_counts_and_is_deterministic_under_the_seed():
    words, plan = mask("random:ratio=0.3", seed=5)
    assert len(plan.word_indices) == round(0.3 * len(words))
    assert plan.word_indices == mask("random:ratio=0.3", seed=5)[1].word_indices
    assert plan.word_indices != mask("random:ratio=0.3", seed=6)[1].word_indices
    assert list(plan.word_indices) == sorted(set(plan.word_indices))
    assert plan.masking == "random:ratio=0.3"


def test_stopwords_and_punctuation_touch_only_their_words():
    words, plan = mask("stopwords:ratio=0.5", seed=1)
    assert plan.word_indices and all(words[i].lower() in ENGLISH_STOP_WORDS for i in plan.word_indices)
    words, plan = mask("punctuation:ratio=0.7", seed=1)
    assert len(plan.word_indices) == 2 and all(is_punctuation(words[i]) for i in plan.word_indices)


def test_span_masking_makes_contiguous_spans_of_about_the_mean_length():
    text = " ".join(f"w{i}" for i in range(400))
    lengths = []
    for seed in range(5):
        words, plan = mask("span:ratio=0.15,mean_length=3", text=text, seed=seed)
        assert len(plan.word_indices) == round(0.15 * len(words))
        runs = np.split(np.array(plan.word_indices), np.where(np.diff(plan.word_indices) != 1)[0] + 1)
        lengths += [len(r) for r in runs]
    assert 2.0 <= float(np.mean(lengths)) <= 6.0  # merged neighbours make runs a little longer
    assert max(lengths) > 1


def test_ner_uses_dataset_annotations_and_says_so():
    start = TEXT.index("aspirin")
    doc = Document(id="n1", text=TEXT, entities=[EntitySpan(start, start + len("aspirin 81 mg"), "Drug")])
    words, plan = mask("ner", document=doc)
    if importlib.util.find_spec("spacy") is None:
        assert [words[i] for i in plan.word_indices] == ["aspirin", "81", "mg"]
        assert plan.note == "entities from dataset annotations (no spaCy model installed)"
    _, half = mask("ner:ratio=0.34", document=doc)
    assert len(half.word_indices) == 1


NO_SPACY = pytest.mark.skipif(importlib.util.find_spec("spacy") is not None, reason="a spaCy model would tag itself")
UNSEEN = ("Yesterday Margaret Thornton flew from Tbilisi to Oslo with her brother Tomasz. When the rain stopped, "
          "Ingrid walked down to the harbour in Bergen. Last winter Halvard Okonkwo drove to Winnipeg.")


@pytest.fixture(scope="session")
def entity_tagger_model(tmp_path_factory):
    from realdata import trained_entity_tagger

    return trained_entity_tagger(tmp_path_factory.mktemp("entity-tagger"))


@pytest.fixture
def entity_tagger(entity_tagger_model):
    """The session's trained tagger copied into this test's cache dir (training takes ~20 s)."""
    from realdata import install_entity_tagger

    from mlmh.machine.paths import cache_dir

    install_entity_tagger(entity_tagger_model, cache_dir())
    return entity_tagger_model


@NO_SPACY
def test_ner_without_annotations_uses_the_offline_tagger_and_says_so(entity_tagger):
    from mlmh_builtins.offline_taggers import ENTITY_TAGGER_NOTE, entity_training_documents

    names = ["Margaret", "Thornton", "Tbilisi", "Oslo", "Ingrid", "Bergen", "Halvard", "Okonkwo", "Winnipeg"]
    training_words = {w for d in entity_training_documents() for w in split_words(d.text)}
    assert not training_words & set(names)  # names the tagger never saw
    words, plan = mask("ner", text=UNSEEN, document=Document(id="plain", text=UNSEEN))
    masked = [words[i] for i in plan.word_indices]
    assert len(set(names) & set(masked)) >= 7, masked  # most unseen names, from shape and context alone
    assert not {"walked", "the", "rain", "harbour", "."} & set(masked)
    assert plan.note == ENTITY_TAGGER_NOTE and "CRF" in plan.note and "not spaCy" in plan.note
    assert "offline CRF tagger" in get_registry().build("masking", "ner").description


def test_offline_entity_tagger_is_deterministic_and_cached_by_its_training_data(entity_tagger):
    from mlmh.types import EntitySpan
    from mlmh_builtins import offline_taggers

    first = offline_taggers.entity_tags(UNSEEN)
    assert len(first) == len(split_words(UNSEEN))
    offline_taggers._load_entity_tagger.cache_clear()  # reload the model from disk
    assert offline_taggers.entity_tags(UNSEEN) == first
    assert offline_taggers.entity_tagger_path().name == entity_tagger.name  # found in the cache, not retrained
    documents = offline_taggers.entity_training_documents()
    key = offline_taggers.entity_tagger_key(documents)
    changed = Document(id="extra", text="Ada met Bob.", entities=[EntitySpan(0, 3, "PERSON")])
    assert offline_taggers.entity_tagger_key(documents + [changed]) != key
    assert offline_taggers.entity_tagger_key(list(reversed(documents))) == key
    assert offline_taggers.entity_tags("") == []


def test_unseen_name_view_drops_the_identity_of_entity_words_only():
    from mlmh_builtins.offline_taggers import unseen_name_view
    from mlmh_builtins.tasks_ner import featurize

    sentence = ["then", "Ada", "left", "home", "early"]
    tags = ["O", "B-PERSON", "O", "O", "O"]
    features = featurize([sentence])[0]
    view = unseen_name_view(features, tags)
    assert "lower" not in view[1] and "suffix3" not in view[1] and view[1]["shape"] == "Xx"
    assert "1:lower" not in view[0] and "-1:lower" not in view[2] and "-2:lower" not in view[3]
    assert view[4] == features[4] and view[0]["lower"] == "then"


@NO_SPACY
def test_pos_offline_wordnet_tagger_tags_content_words_and_says_which():
    from mlmh_builtins.maskings import nltk_perceptron_installed
    from mlmh_builtins.offline_taggers import POS_TAGGER_NOTE, wordnet_pos_tags

    text = "The old man walked slowly to the harbour, and they can fly kites there. Margaret doesn't run on Mondays."
    words = split_words(text)
    tags = dict(zip(words, wordnet_pos_tags(words)))
    assert [tags[w] for w in ("The", "old", "man", "walked", "slowly", "to", "harbour", "and", "they", "can", "fly", "kites")] == \
        ["DET", "ADJ", "NOUN", "VERB", "ADV", "PART", "NOUN", "CCONJ", "PRON", "AUX", "VERB", "NOUN"]
    assert tags["Mondays"] == "PROPN" and tags["doesn't"] == "AUX" and tags[","] == "PUNCT"
    assert wordnet_pos_tags(words) == wordnet_pos_tags(words)
    if nltk_perceptron_installed():
        return
    words, plan = mask("pos:tags=noun", text=text)
    assert [words[i] for i in plan.word_indices] == ["man", "harbour", "kites", "Margaret", "Mondays"]
    assert plan.note == POS_TAGGER_NOTE and "WordNet" in plan.note
    words, plan = mask("pos:tags=verb+adj", text=text)
    assert [words[i] for i in plan.word_indices] == ["old", "walked", "can", "fly", "doesn't", "run"]


def test_pos_without_wordnet_says_how_to_get_it(monkeypatch):
    from mlmh.data import wordnet
    from mlmh_builtins.offline_taggers import wordnet_reader

    def missing():
        raise MlmhError("WordNet not found: no NLTK data and no Debian files under /usr/share/wordnet")

    monkeypatch.setattr(wordnet, "wordnet_for_scoring", missing)
    with pytest.raises(MlmhError, match=r"masking 'pos' .* WordNet.*mlmh doctor --fix"):
        wordnet_reader()


@pytest.mark.parametrize("spec, message", [
    ("random:ratio=1.5", "must be <= 1.0"),
    ("random:ratio=-0.1", "must be >= 0.0"),
    ("stopwords:ratio=abc", "expects float"),
    ("span:mean_length=0", "must be >= 1.0"),
    ("pos:tags=noun+adverb", "'tags' must be"),
    ("randm", "did you mean 'random'"),
])
def test_bad_specs_are_spec_errors(spec, message):
    with pytest.raises(SpecError, match=message):
        get_registry().build("masking", spec)


@pytest.mark.parametrize("name", ["random", "stopwords", "punctuation", "span"])
def test_empty_text_masks_nothing(name):
    words, plan = mask(f"{name}:ratio=0.5", text="")
    assert len(words) == 0 and plan.word_indices == ()


def test_prepare_items_masks_depend_on_seed_spec_and_doc_only():
    docs = [Document(id=f"d{i}", text=TEXT) for i in range(3)]
    masking = get_registry().build("masking", "random:ratio=0.4")
    first = prepare_items(docs, masking, seed=7)
    again = prepare_items(list(reversed(docs)), masking, seed=7)
    assert [i.plan for i in first] == [i.plan for i in reversed(again)]
    assert len({i.plan.word_indices for i in first}) > 1  # each document its own mask
    assert [i.seed for i in first] == [i.seed for i in reversed(again)]
    reseeded = prepare_items(docs, masking, seed=8)
    assert [i.seed for i in reseeded] != [i.seed for i in first]  # the run seed keys the sampler's stream
    respecced = prepare_items(docs, get_registry().build("masking", "random:ratio=0.5"), seed=7)
    assert [i.seed for i in respecced] != [i.seed for i in first]  # and so does the masking spec


@settings(max_examples=40, deadline=None)
@given(text=st.text(alphabet="ab .,;'-\n", max_size=60), ratio=st.floats(0, 1), seed=st.integers(0, 2**32 - 1))
def test_property_random_plan_is_a_sorted_sample_of_the_right_size(text, ratio, seed):
    words, plan = mask(f"random:ratio={ratio}", text=text, seed=seed)
    assert len(plan.word_indices) == int(round(ratio * len(words)))
    assert all(0 <= i < len(words) for i in plan.word_indices)
    assert list(plan.word_indices) == sorted(set(plan.word_indices))


def test_ner_on_an_annotated_document_without_entities_masks_nothing():
    doc = Document(id="m1", text=TEXT, meta={"annotations": "m1.ann"})
    assert mask("ner", document=doc)[1].word_indices == ()
