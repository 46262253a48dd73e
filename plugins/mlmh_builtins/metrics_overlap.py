"""Reference-overlap metrics of the paper: BLEU (sacrebleu), ROUGE (rouge-score), METEOR (nltk).

Each is a thin wrapper over the field's library; what the library computed (signature, version,
tokenizer) travels with the score so a reader can cite it.
"""

from __future__ import annotations

import functools
import logging
import re
from typing import Any, Sequence

import numpy as np

from mlmh import hookimpl
from mlmh.components import Headline, InputsOnly, Metric, ScoringItem
from mlmh.errors import MlmhError
from mlmh.params import Param
from mlmh.stats import method_info, resample_ci
from mlmh.types import MetricResult
from mlmh.words import split_words
from mlmh_builtins.metrics_common import SPANS_ONLY, base_info, failed_result, mean_result, texts

log = logging.getLogger("mlmh.metrics")


class BleuMetric(InputsOnly, Metric):
    """Corpus BLEU (Papineni et al. 2002) with sacrebleu (Post 2018), 0-100, plus smoothed sentence BLEU."""

    name = "bleu"
    description = "sacrebleu corpus BLEU (0-100, signature recorded); per-sample smoothed sentence BLEU"
    headlines = (Headline("bleu", 10, label="BLEU", unit="points", findings=True, sweep=True, baselines=True),)
    parameters = (
        Param("tokenize", str, "13a", "sacrebleu tokenizer", choices=("13a", "intl", "char", "none", "zh", "ja-mecab", "ko-mecab", "flores101", "flores200")),
        Param("lowercase", bool, False, "lowercase before scoring"),
        Param("sentence_smooth", str, "exp", "smoothing of per-sample sentence BLEU (Chen & Cherry 2014 names)", choices=("exp", "floor", "add-k", "none")),
        SPANS_ONLY,
    )

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from sacrebleu.metrics import BLEU

        preds, refs = texts(items, self.params["spans_only"])
        if not preds:
            return [failed_result("bleu", True, "no samples to score", base_info(self, "sacrebleu", "sacrebleu"))]
        common = {"tokenize": self.params["tokenize"], "lowercase": self.params["lowercase"]}
        corpus_bleu = BLEU(**common)
        sentence_bleu = BLEU(**common, smooth_method=self.params["sentence_smooth"], effective_order=True)
        # Per-sentence sufficient statistics, extracted once: the corpus score is their sum (what
        # corpus_score computes), a sentence score is one row, a bootstrap resample is a sum of rows.
        # These two methods are private to sacrebleu (pinned below 2.7 in pyproject.toml): the public
        # corpus_score re-tokenizes every resample, 300x slower for 64 pairs (docs/PERFORMANCE.md);
        # tests tie every value, the CI included, to the public API.
        stats = np.asarray(corpus_bleu._extract_corpus_statistics(preds, [refs]), dtype=np.int64)
        corpus = corpus_bleu._compute_score_from_stats(stats.sum(axis=0).tolist())

        def resampled(indices: np.ndarray) -> float:
            return corpus_bleu._compute_score_from_stats(stats[indices].sum(axis=0).tolist()).score

        low, high = resample_ci(len(preds), resampled, seed=seed)
        per_sample: list[float | None] = [sentence_bleu._compute_score_from_stats(row.tolist()).score for row in stats]
        sentence_bleu.sentence_score(preds[0], [refs[0]])  # records the reference count its signature shows
        info = base_info(
            self,
            "sacrebleu.metrics.BLEU.corpus_score",
            "sacrebleu",
            signature=str(corpus_bleu.get_signature()),
            sentence_signature=str(sentence_bleu.get_signature()),
            tokenizer=f"sacrebleu {self.params['tokenize']}",
            aggregation="corpus BLEU over all samples (not a mean of sentence BLEU)",
            per_sample_note="sentence BLEU with effective order and the declared smoothing",
            **method_info("resample", seed=seed),
        )
        return [MetricResult("bleu", corpus.score, True, per_sample, low, high, info)]


def split_sentences_for_lsum(text: str) -> str:
    """One sentence a line, as rougeLsum expects: break after . ! ? followed by whitespace."""
    return re.sub(r"(?<=[.!?])\s+", "\n", text.strip())


class RougeMetric(InputsOnly, Metric):
    """ROUGE-1/2/L/Lsum F1 (Lin 2004) with Google's rouge-score; our own seeded bootstrap CI."""

    name = "rouge"
    description = "rouge-score ROUGE-1, ROUGE-2, ROUGE-L, ROUGE-Lsum F1 (four results)"
    higher_is_better = True
    ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")
    # ROUGE's F-measure has no length penalty: a candidate that only drops words has precision 1
    headlines = (Headline("rouge1", 20, label="ROUGE-1", rewards_deletion=True),
                 Headline("rouge2", 21, label="ROUGE-2", rewards_deletion=True),
                 Headline("rougeL", 22, label="ROUGE-L", findings=True, sweep=True, baselines=True, rewards_deletion=True))
    parameters = (
        Param("use_stemmer", bool, False, "Porter-stem tokens before matching (rouge-score option)"),
        Param("lsum_split", str, "punct", "sentence breaks for rougeLsum: after . ! ? (punct) or existing newlines only", choices=("punct", "newline")),
        SPANS_ONLY,
    )

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from rouge_score import rouge_scorer

        preds, refs = texts(items, self.params["spans_only"])
        scorer = rouge_scorer.RougeScorer(list(self.ROUGE_TYPES), use_stemmer=self.params["use_stemmer"])
        prepare = split_sentences_for_lsum if self.params["lsum_split"] == "punct" else (lambda t: t)
        per_type: dict[str, list[float]] = {t: [] for t in self.ROUGE_TYPES}
        for pred, ref in zip(preds, refs):
            # rouge-score's signature is score(target, prediction).
            scores = scorer.score(prepare(ref), prepare(pred))
            for rouge_type in self.ROUGE_TYPES:
                per_type[rouge_type].append(scores[rouge_type].fmeasure)
        info = base_info(
            self,
            "rouge_score.rouge_scorer.RougeScorer",
            "rouge-score",
            tokenizer="rouge-score default tokenizer (lowercase, non-alphanumerics removed)",
            use_stemmer=self.params["use_stemmer"],
            lsum_sentence_split=self.params["lsum_split"],
            statistic="F1",
        )
        return [
            mean_result(t, per_type[t], higher_is_better=True, info=info) for t in self.ROUGE_TYPES
        ]


_WORDNET_WARNED = False


class CachedStemmer:
    """nltk's PorterStemmer with memory: METEOR stems every word of every pair, mostly the same words."""

    def __init__(self) -> None:
        from nltk.stem.porter import PorterStemmer

        self.stem = functools.lru_cache(maxsize=200_000)(PorterStemmer().stem)


class CachedWordNet:
    """The WordNet reader with ``synsets`` memoised; METEOR asks it about the same words again and again."""

    def __init__(self, reader: Any) -> None:
        self.reader = reader
        self.synsets = functools.lru_cache(maxsize=200_000)(reader.synsets)


class MeteorMetric(Metric):
    """METEOR (Banerjee & Lavie 2005) with nltk's meteor_score and WordNet synonyms."""

    name = "meteor"
    description = "nltk METEOR with WordNet synonyms; mean of per-sample scores"
    headlines = (Headline("meteor", 30, label="METEOR", findings=True),)
    parameters = (
        Param("alpha", float, 0.9, "precision/recall weight (nltk default)", min=0.0, max=1.0),
        Param("beta", float, 3.0, "fragmentation penalty shape (nltk default)", min=0.0),
        Param("gamma", float, 0.5, "fragmentation penalty weight (nltk default)", min=0.0, max=1.0),
        SPANS_ONLY,
    )

    def unavailable(self, corpus: Any) -> str | None:
        """Why METEOR cannot run here (None when it can): it needs WordNet present, or the Debian files
        :func:`mlmh.data.wordnet.wordnet_for_scoring` assembles it from. Checked before a run trains anything."""
        from mlmh.data import wordnet

        return wordnet.wordnet_unavailable()

    def cache_identity(self) -> str | None:
        """The WordNet files NLTK reads (None before they are in place: nothing is cached then)."""
        from mlmh.data.wordnet import find_wordnet
        from mlmh.implementation import files_identity

        found = find_wordnet()
        return None if found is None else f"wordnet:{files_identity(found)}"

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        info = base_info(
            self,
            "nltk.translate.meteor_score.meteor_score",
            "nltk",
            tokenizer="mlmh.words.split_words, lowercased by nltk",
            stemmer="nltk PorterStemmer",
        )
        try:
            from mlmh.data.wordnet import wordnet_for_scoring

            wordnet = wordnet_for_scoring()
        except MlmhError as exc:
            return [self._without_wordnet(str(exc), info)]
        from nltk.translate.meteor_score import meteor_score

        info["wordnet"] = f"WordNet {wordnet.get_version()} at {wordnet.root}"
        preds, refs = texts(items, self.params["spans_only"])
        weights: dict[str, Any] = {k: self.params[k] for k in ("alpha", "beta", "gamma")}
        stemmer, synonyms = CachedStemmer(), CachedWordNet(wordnet)
        per_sample = [
            meteor_score(
                [list(split_words(ref))], list(split_words(pred)), stemmer=stemmer, wordnet=synonyms, **weights
            )
            for pred, ref in zip(preds, refs)
        ]
        return [mean_result("meteor", per_sample, higher_is_better=True, info=info)]

    def _without_wordnet(self, message: str, info: dict[str, Any]) -> MetricResult:
        global _WORDNET_WARNED
        if not _WORDNET_WARNED:
            log.warning("meteor skipped: %s", message)
            _WORDNET_WARNED = True
        return failed_result("meteor", True, f"WordNet unavailable: {message}", info)


@hookimpl
def register_metrics(register):
    register(BleuMetric())
    register(RougeMetric())
    register(MeteorMetric())
