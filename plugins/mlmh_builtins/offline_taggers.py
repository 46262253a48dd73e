"""Offline taggers for the ``ner`` and ``pos`` maskings, used when no spaCy English model is installed.

Entities: a linear-chain CRF (Lafferty et al. 2001, via sklearn-crfsuite) with the ``ner`` task's word-shape
and context features (:func:`mlmh_builtins.tasks_ner.featurize`), trained once on the bundled annotated
samples and cached under ``<cache>/taggers`` keyed by a hash of its training data, a fingerprint of the
features and the CRF settings. The samples use few names, so every sentence is trained twice: as written, and
with the identity of its entity words removed (the view in which every name is unseen), so the CRF learns
names from their shape and context instead of memorising the samples' names.

Parts of speech: the most frequent WordNet part of speech of each content word (summed sense counts of its
lemmas, NLTK's WordNet reader from :mod:`mlmh.data.wordnet`), a closed-class list for function words, three
context rules (no verb right after a determiner; a verb after an auxiliary, "to" or a subject pronoun), and
capitalised words inside a sentence as proper nouns.

Neither registers anything; :mod:`mlmh_builtins.maskings` decides when they are used.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mlmh.errors import MlmhError
from mlmh.types import Document, Words
from mlmh.words import is_punctuation

#: The bundled samples whose ``entities.jsonl`` teach the entity tagger (general-domain PERSON/LOC spans).
ENTITY_TRAINING_DATASETS = ("pan", "mpst")
CRF_SETTINGS = {"algorithm": "lbfgs", "c1": 0.1, "c2": 0.05, "max_iterations": 30, "all_possible_transitions": True}
ENTITY_TAGGER_NOTE = (
    f"entities from the offline CRF tagger trained on the bundled {' and '.join(ENTITY_TRAINING_DATASETS)} "
    "samples (not spaCy)"
)
#: Features that carry a word's identity; removed for entity words in the "unseen names" training view.
_IDENTITY_FEATURES = ("lower", "suffix3", "suffix2", "prefix3")
#: Sentences whose features fingerprint the feature function in the cache key (a feature change retrains).
_FEATURE_PROBE = [["Dr.", "Ada", "O'Neill", "flew", "to", "Oslo", "on", "12", "May", "1999", ",", "didn't", "she", "?"]]


def entity_training_documents() -> list[Document]:
    """The annotated documents of the bundled samples, read by their own dataset loaders."""
    from mlmh.registry import get_registry

    documents: list[Document] = []
    for name in ENTITY_TRAINING_DATASETS:
        corpus = get_registry().build("dataset", name).load(None)
        documents += [d for d in corpus.documents if d.entities]
    if not documents:
        raise MlmhError(f"the bundled samples {', '.join(ENTITY_TRAINING_DATASETS)} carry no entities to train the offline entity tagger on")
    return documents


def unseen_name_view(features: list[dict[str, Any]], tags: list[str]) -> list[dict[str, Any]]:
    """``features`` of one sentence without the identity of its entity words (their own and as neighbours)."""
    view = []
    for i, word_features in enumerate(features):
        kept = dict(word_features)
        if tags[i] != "O":
            for key in _IDENTITY_FEATURES:
                kept.pop(key, None)
        for offset in (-2, -1, 1, 2):
            if 0 <= i + offset < len(tags) and tags[i + offset] != "O":
                kept.pop(f"{offset}:lower", None)
        view.append(kept)
    return view


def entity_tagger_key(documents: list[Document]) -> str:
    """Hash of the training data (texts and labelled spans), the feature fingerprint and the CRF settings."""
    from mlmh_builtins.tasks_ner import featurize

    digest = hashlib.sha256()
    for document in sorted(documents, key=lambda d: d.id):
        spans = sorted(((s, e, ent.label) for ent in document.entities for s, e in (ent.fragments or ((ent.start, ent.end),))))
        digest.update(json.dumps([document.text, spans], ensure_ascii=False).encode("utf-8"))
    digest.update(json.dumps([featurize(_FEATURE_PROBE), CRF_SETTINGS, _IDENTITY_FEATURES], sort_keys=True).encode("utf-8"))
    return digest.hexdigest()[:16]


def train_entity_tagger(documents: list[Document], target: Path) -> Path:
    """Train the CRF on ``documents`` (as written + the unseen-name view) into ``target``, atomically."""
    import sklearn_crfsuite

    from mlmh_builtins.tasks_ner import corpus_sequences, featurize

    sentences, tags, _ = corpus_sequences(documents)
    features = featurize(sentences)
    features += [unseen_name_view(f, t) for f, t in zip(features, tags)]
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, staging = tempfile.mkstemp(prefix=f".{target.name}-", dir=target.parent)
    os.close(handle)
    try:
        sklearn_crfsuite.CRF(**CRF_SETTINGS, model_filename=staging).fit(features, tags + tags)
        os.replace(staging, target)  # a concurrent process sees the whole model or none
    finally:
        if os.path.exists(staging):
            os.remove(staging)
    return target


def entity_tagger_path() -> Path:
    """Where the trained tagger lives (``<cache>/taggers/entity-crf-<key>.crfsuite``); trains it if absent."""
    from mlmh.machine.paths import cache_dir

    documents = entity_training_documents()
    target = cache_dir() / "taggers" / f"entity-crf-{entity_tagger_key(documents)}.crfsuite"
    if not target.is_file():
        train_entity_tagger(documents, target)
    return target


@functools.lru_cache(maxsize=4)
def _load_entity_tagger(path: str) -> Any:
    import sklearn_crfsuite

    return sklearn_crfsuite.CRF(model_filename=path)


def entity_tags(text: str) -> list[str]:
    """BIO tag of each word of ``split_words(text)`` from the offline CRF tagger (deterministic)."""
    from mlmh_builtins.tasks_ner import bio_sequences, featurize

    sentences, _, _ = bio_sequences(Document(id="untagged", text=text))
    if not sentences:
        return []
    crf = _load_entity_tagger(str(entity_tagger_path()))
    return [tag for sentence_tags in crf.predict(featurize(sentences)) for tag in sentence_tags]


# ---------------------------------------------------------------------------------------------- parts of speech

POS_TAGGER_NOTE = ("POS from the offline WordNet tagger (most frequent WordNet part of speech, closed-class "
                   "word list; not spaCy)")

_CLOSED_CLASS_WORDS = {
    "DET": "a an the this that these those some any each every no another either neither all both such what which "
           "whatever whichever my your his her its our their",
    "PRON": "i me mine myself you yours yourself yourselves he him himself she hers herself it itself we us ours "
            "ourselves they them theirs themselves who whom whose someone somebody something anyone anybody anything "
            "everyone everybody everything nobody nothing none",
    "ADP": "about above across after against along among amongst around at before behind below beneath beside besides "
           "between beyond by despite down during except for from in inside into near of off on onto out outside over "
           "past per since through throughout till toward towards under underneath until unlike up upon via with "
           "within without",
    "CCONJ": "and or but nor",
    "SCONJ": "although because if unless whereas whether while though than",
    "AUX": "be am is are was were been being have has had having do does did will would shall should can could may "
           "might must",
    "PART": "not to",
    "ADV": "here there then now when where why how never very also just too",
    "NUM": "zero one two three four five six seven eight nine ten eleven twelve twenty thirty hundred thousand million",
}
#: Function word -> Universal POS tag.
CLOSED_CLASS = {word: tag for tag, words in _CLOSED_CLASS_WORDS.items() for word in words.split()}
_MODALS = frozenset("will would shall should can could may might must".split())
_SUBJECT_PRONOUNS = frozenset("i you he she we they".split())
_WORDNET_POS = {"NOUN": "n", "VERB": "v", "ADJ": "a", "ADV": "r"}
#: Suffix guesses for words WordNet does not know (checked in order).
_UNKNOWN_SUFFIXES = (("ly", "ADV"), ("ing", "VERB"), ("ed", "VERB"), ("ous", "ADJ"), ("ful", "ADJ"), ("ive", "ADJ"),
                     ("able", "ADJ"), ("ible", "ADJ"), ("al", "ADJ"), ("less", "ADJ"))
_SENTENCE_END = frozenset(".!?…")


def wordnet_reader() -> Any:
    """NLTK's WordNet reader (present, or assembled from local Debian files); the fix when it is missing."""
    from mlmh.data.wordnet import wordnet_for_scoring

    try:
        return wordnet_for_scoring()
    except MlmhError as exc:
        raise MlmhError(f"masking 'pos' without spaCy or NLTK's tagger uses WordNet, which is not usable: {exc} "
                        "(fix: mlmh doctor --fix)") from None


@functools.lru_cache(maxsize=65536)
def wordnet_pos_scores(word: str) -> tuple[tuple[str, float], ...]:
    """(Universal POS, score) for each part of speech WordNet knows ``word`` (lower case) in: the summed
    SemCor sense counts of its lemmas, plus half a point per sense so that uncounted words still rank."""
    reader = wordnet_reader()
    scores = []
    for tag, pos in _WORDNET_POS.items():
        # the word itself and its base forms by WordNet's exception list and by its suffix rules:
        # "saw" -> saw, see; "provides" -> provide
        forms = {word, reader.morphy(word, pos), reader.morphy(word, pos, check_exceptions=False)} - {None}
        lemmas = {lemma.key(): lemma for form in sorted(forms) for lemma in reader.lemmas(form, pos)}.values()
        if lemmas:
            scores.append((tag, sum(lemma.count() for lemma in lemmas) + 0.5 * len(lemmas)))
    return tuple(scores)


def _closed_class_tag(lower: str) -> str | None:
    if lower in CLOSED_CLASS:
        return CLOSED_CLASS[lower]
    if lower.endswith(("n't", "n’t")):
        return "AUX"  # don't, can't, isn't
    for apostrophe in ("'", "’"):
        head = lower.split(apostrophe)[0]
        if apostrophe in lower and head in CLOSED_CLASS:
            return CLOSED_CLASS[head]  # it's, they're, I'd
    return None


def _content_tag(lower: str, previous: str | None) -> str:
    scores = dict(wordnet_pos_scores(lower))
    if not scores:
        return next((tag for suffix, tag in _UNKNOWN_SUFFIXES if lower.endswith(suffix) and len(lower) > len(suffix) + 2), "NOUN")
    if previous is not None and CLOSED_CLASS.get(previous) == "DET" and set(scores) - {"VERB", "ADV"}:
        scores.pop("VERB", None)  # "the run", "a fly"
        scores.pop("ADV", None)
    elif previous is not None and "VERB" in scores and (previous == "to" or CLOSED_CLASS.get(previous) == "AUX" or previous in _SUBJECT_PRONOUNS):
        scores["VERB"] *= 100 if previous in _MODALS else 5  # "can fly", "to run", "was given", "they walk"
    return max(scores, key=lambda tag: (scores[tag], -list(_WORDNET_POS).index(tag)))


def wordnet_pos_tags(words: Words) -> list[str]:
    """Universal POS tag of each word: closed-class list, else WordNet's most frequent part of speech with the
    context rules; capitalised words inside a sentence are proper nouns (deterministic)."""
    tags: list[str] = []
    previous: str | None = None
    for word in words:
        lower = word.lower()
        sentence_start = previous is None or previous in _SENTENCE_END
        if is_punctuation(word):
            tag = "PUNCT"
        elif any(ch.isdigit() for ch in word):
            tag = "NUM"
        elif (closed := _closed_class_tag(lower)) is not None:
            tag = closed
        elif word[:1].isupper() and not sentence_start:
            tag = "PROPN"
        else:
            tag = _content_tag(lower, previous)
            if tag == "NOUN" and word[:1].isupper() and not wordnet_pos_scores(lower):
                tag = "PROPN"  # an unknown capitalised word at a sentence start: a name
        tags.append(tag)
        previous = lower
    return tags
