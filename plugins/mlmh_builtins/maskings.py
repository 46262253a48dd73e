"""Builtin masking strategies. Each works on the shared word spans only, so every model of a condition
sees exactly the same masked words; each is deterministic under the ``numpy`` generator it is given.

``ratio`` is the fraction of the *maskable* words (those the strategy targets) that get masked,
rounded to the nearest whole word: 0 masks nothing, 1 masks every maskable word.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING, Any, ClassVar

from mlmh import hookimpl
from mlmh.components import Masking
from mlmh.errors import MlmhError
from mlmh.params import Param
from mlmh.types import Document, MaskPlan, Words
from mlmh.words import is_punctuation

if TYPE_CHECKING:
    from mlmh.doctor import CheckResult

RATIO = Param("ratio", float, 0.15, "fraction of the maskable words to mask", min=0.0, max=1.0, headline=True)
FULL_RATIO = Param("ratio", float, 1.0, "fraction of the maskable words to mask", min=0.0, max=1.0)


def pick(candidates: list[int], ratio: float, rng: Any) -> tuple[int, ...]:
    """``round(ratio * len(candidates))`` of ``candidates`` chosen uniformly without replacement."""
    count = int(round(ratio * len(candidates)))
    if count <= 0:
        return ()
    if count >= len(candidates):
        return tuple(sorted(candidates))
    chosen = rng.choice(len(candidates), size=count, replace=False)
    return tuple(sorted(candidates[int(i)] for i in chosen))


class RatioMasking(Masking):
    """A strategy defined by which words are maskable; masks a ``ratio`` of them at random."""

    parameters: ClassVar[tuple[Param, ...]] = (RATIO,)

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        """The candidate word indices and a note saying where they came from."""
        raise NotImplementedError

    def mask(self, document: Document, words: Words, rng: Any) -> MaskPlan:
        candidates, note = self.maskable(document, words)
        return MaskPlan(masking=self.spec, word_indices=pick(candidates, self.params["ratio"], rng), note=note)


class RandomMasking(RatioMasking):
    """Any word, punctuation included (the paper's random-ratio condition)."""

    name = "random"
    description = "Mask a random ratio of all words."

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        return list(range(len(words))), ""


def stopword_list() -> frozenset[str]:
    """scikit-learn's English stop-word list (a fixed list in the library: no download)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS)


class StopwordMasking(RatioMasking):
    """Function words only: tests whether a model restores grammar rather than content."""

    name = "stopwords"
    description = "Mask a ratio of the stopwords (scikit-learn's English list)."
    parameters = (FULL_RATIO,)

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        stops = stopword_list()
        return [i for i, w in enumerate(words) if w.lower() in stops], "stopwords: scikit-learn ENGLISH_STOP_WORDS"


class PunctuationMasking(RatioMasking):
    """Punctuation marks only."""

    name = "punctuation"
    description = "Mask a ratio of the punctuation marks."
    parameters = (FULL_RATIO,)

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        return [i for i, w in enumerate(words) if is_punctuation(w)], ""


def _overlapping_words(words: Words, ranges: list[tuple[int, int]]) -> list[int]:
    """Indices of the words that overlap any character range."""
    return sorted({i for i, (s, e) in enumerate(words.spans) for a, b in ranges if s < b and a < e})


def spacy_pipeline() -> Any | None:
    """An installed spaCy English model (loaded offline), or None."""
    if importlib.util.find_spec("spacy") is None:
        return None
    import spacy

    for name in ("en_core_web_sm", "en_core_web_md", "en_core_web_lg", "en_core_web_trf"):
        if importlib.util.find_spec(name) is not None:
            return spacy.load(name)
    return None


class NerMasking(RatioMasking):
    """Named-entity words: from an installed spaCy model, else the dataset's annotations, else the offline CRF
    tagger trained on the bundled samples (:mod:`mlmh_builtins.offline_taggers`); the note says which."""

    name = "ner"
    description = ("Mask a ratio of the named-entity words (spaCy model if installed, else dataset annotations, "
                   "else the offline CRF tagger trained on the bundled samples).")
    parameters = (FULL_RATIO,)

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        nlp = spacy_pipeline()
        if nlp is not None:
            ranges = [(ent.start_char, ent.end_char) for ent in nlp(words.text).ents]
            return _overlapping_words(words, ranges), f"entities from spaCy model {nlp.meta.get('name', '?')}"
        if document.entities:
            ranges = [f for ent in document.entities for f in (ent.fragments or ((ent.start, ent.end),))]
            return _overlapping_words(words, list(ranges)), "entities from dataset annotations (no spaCy model installed)"
        if document.meta.get("entities_annotated") or document.meta.get("annotations"):  # annotated, no entity here
            return [], "entities from dataset annotations (none in this document)"
        from mlmh_builtins.offline_taggers import ENTITY_TAGGER_NOTE, entity_tags

        return [i for i, tag in enumerate(entity_tags(words.text)) if tag != "O"], ENTITY_TAGGER_NOTE


POS_GROUPS = {
    "noun": ("NOUN", "PROPN"),
    "verb": ("VERB", "AUX"),
    "adj": ("ADJ",),
}
_PTB_TO_UPOS = {"NN": "NOUN", "NNS": "NOUN", "NNP": "PROPN", "NNPS": "PROPN", "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ",
                "VB": "VERB", "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB", "MD": "AUX"}


@functools.lru_cache(maxsize=1)
def nltk_tagger() -> Any:  # a PerceptronTagger or None (Any: NLTK has no type hints)
    """NLTK's perceptron tagger when its data loads here, else None. Finding a data folder is not
    enough: a machine may hold only the legacy ``averaged_perceptron_tagger`` data, which current NLTK
    cannot read (LookupError), and the offline tagger must then take over."""
    try:
        from nltk.tag import PerceptronTagger

        return PerceptronTagger()
    except (ImportError, LookupError, OSError, ValueError):
        return None


def nltk_perceptron_installed() -> bool:
    return nltk_tagger() is not None


def pos_tags(words: Words) -> tuple[list[str], str]:
    """Universal POS tag per word and which tagger gave it: a spaCy model, else NLTK's perceptron data,
    else the offline WordNet tagger (:mod:`mlmh_builtins.offline_taggers`)."""
    nlp = spacy_pipeline()
    if nlp is not None:
        from spacy.tokens import Doc

        doc = nlp(Doc(nlp.vocab, words=list(words)))
        return [t.pos_ for t in doc], f"POS from spaCy model {nlp.meta.get('name', '?')}"
    if nltk_perceptron_installed():
        tagged = nltk_tagger().tag(list(words))
        return [_PTB_TO_UPOS.get(tag, tag) for _, tag in tagged], "POS from NLTK averaged perceptron tagger"
    from mlmh_builtins.offline_taggers import POS_TAGGER_NOTE, wordnet_pos_tags

    return wordnet_pos_tags(words), POS_TAGGER_NOTE


class PosMasking(RatioMasking):
    """Content words of chosen parts of speech (nouns, verbs, adjectives)."""

    name = "pos"
    description = ("Mask a ratio of the nouns/verbs/adjectives (spaCy model if installed, else NLTK's perceptron "
                   "tagger, else the offline WordNet tagger).")
    parameters = (
        FULL_RATIO,
        Param("tags", str, "noun+verb+adj", "'+'-separated groups among noun, verb, adj"),
    )

    def __post_configure__(self) -> None:
        from mlmh.errors import SpecError

        groups = [g for g in self.params["tags"].split("+") if g]
        bad = [g for g in groups if g not in POS_GROUPS]
        if bad or not groups:
            raise SpecError(f"masking 'pos': parameter 'tags' must be '+'-separated among {', '.join(POS_GROUPS)}; got {self.params['tags']!r}")

    def unavailable(self, corpus: Any) -> str | None:
        """Why no POS tagger can run here (None when one can): the WordNet tagger is the last resort."""
        if spacy_pipeline() is not None or nltk_perceptron_installed():
            return None
        from mlmh.data import wordnet

        reason = wordnet.wordnet_unavailable()
        return f"no spaCy model or NLTK tagger data, and the offline tagger {reason}" if reason else None

    def maskable(self, document: Document, words: Words) -> tuple[list[int], str]:
        if len(words) == 0:
            return [], ""
        wanted = {tag for g in self.params["tags"].split("+") if g for tag in POS_GROUPS[g]}
        tags, note = pos_tags(words)
        return [i for i, tag in enumerate(tags) if tag in wanted], note


class SpanMasking(Masking):
    """T5-style span corruption (Raffel et al., 2020): contiguous spans of geometric length with a given mean."""

    name = "span"
    description = "Mask contiguous spans (T5-style) of mean length L until a ratio of the words is masked."
    parameters = (RATIO, Param("mean_length", float, 3.0, "mean span length in words", min=1.0))

    def mask(self, document: Document, words: Words, rng: Any) -> MaskPlan:
        n = len(words)
        target = int(round(self.params["ratio"] * n))
        masked: set[int] = set()
        if target >= n:
            masked = set(range(n))
        mean = self.params["mean_length"]
        attempts = 0
        while len(masked) < target and attempts < 10 * n + 10:
            attempts += 1
            length = min(int(rng.geometric(1.0 / mean)), target - len(masked))
            start = int(rng.integers(0, max(n - length, 0) + 1))
            masked.update(range(start, min(start + length, n)))
        for i in range(n):  # rare: random spans kept overlapping; top up left to right
            if len(masked) >= target:
                break
            masked.add(i)
        return MaskPlan(masking=self.spec, word_indices=tuple(sorted(masked)))


@hookimpl
def register_maskings(register):
    for masking in (RandomMasking, StopwordMasking, PunctuationMasking, NerMasking, PosMasking, SpanMasking):
        register(masking())


def _tagger_status() -> "CheckResult":
    """Doctor check: which tagger the pos and ner maskings will use."""
    from mlmh.doctor import CheckResult

    name = "pos/ner tagger"
    if spacy_pipeline() is not None:
        return CheckResult(name, True, "spaCy English model installed: pos and ner maskings tag with it")
    ner = "ner: dataset entity annotations, else the offline CRF tagger trained on the bundled samples"
    if nltk_perceptron_installed():
        return CheckResult(name, True, f"pos: NLTK perceptron tagger; {ner}")
    from mlmh.data.wordnet import debian_files_present, find_wordnet

    if find_wordnet() or debian_files_present():
        return CheckResult(name, True, f"pos: the offline WordNet tagger (no spaCy model, no NLTK tagger data); {ner}")
    return CheckResult(name, False, f"no spaCy model, NLTK tagger data or WordNet: pos masking cannot run; {ner}",
                       "mlmh doctor --fix (WordNet for the offline pos tagger), or pip install spacy en_core_web_sm")


@hookimpl
def register_checks(register):
    register("pos/ner tagger", _tagger_status)
