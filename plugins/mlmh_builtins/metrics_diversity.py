"""Repetition and diversity of generations: stutter, seq-rep-n, distinct-n, self-BLEU, novelty.

These need no reference model; they read the generated words (and, for stutter and novelty, which
positions were generated, from the run's :class:`mlmh.types.Generation`).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from mlmh import hookimpl
from mlmh.components import InputsOnly, Metric, ScoringItem
from mlmh.findings.stutter import generated_words, repeats_left_neighbour
from mlmh.params import Param
from mlmh.stats import method_info, resample_ci
from mlmh.types import Generation, MetricResult
from mlmh.words import split_words
from mlmh_builtins.metrics_common import SPANS_ONLY, base_info, failed_result, masked_spans, mean_result, texts


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def scored_words(items: Sequence[ScoringItem], spans_only: bool) -> list[list[str]]:
    """The words of each prediction, or of its generated spans only."""
    if spans_only:
        return [masked_spans(item)[0] for item in items]
    return [list(split_words(item.prediction)) for item in items]


def pooled_share_result(
    name: str, hits: np.ndarray, totals: np.ndarray, *, higher_is_better: bool, seed: int, info: dict[str, Any]
) -> MetricResult:
    """Corpus value = sum(hits) / sum(totals) (position-weighted), CI by resampling samples."""
    per_sample = [float(h / t) if t else None for h, t in zip(hits, totals)]
    total = totals.sum()
    value = float(hits.sum() / total) if total else None

    def resampled(indices: np.ndarray) -> float:
        t = totals[indices].sum()
        return float(hits[indices].sum() / t) if t else float("nan")

    low, high = resample_ci(len(hits), resampled, seed=seed)
    info = {**info, "aggregation": "pooled over positions (sum of hits / sum of positions)", **method_info("resample", seed=seed)}
    return MetricResult(name, value, higher_is_better, per_sample, low, high, info)


# -- stutter ------------------------------------------------------------------------------------


def word_sequence(item: ScoringItem) -> list[tuple[str, bool]]:
    """(word, generated?) along the final text. Without a generation every word counts as generated."""
    if item.generation is None:
        return [(w, True) for w in split_words(item.prediction)]
    return generated_words(item.generation)


def subword_sequence(generation: Generation | None) -> tuple[list[str], list[bool]] | None:
    """Final sub-word tokens of a step trace and which positions any step changed (were generated)."""
    if generation is None or not generation.steps:
        return None
    tokens = generation.steps[-1].tokens
    generated_positions: set[int] = set()
    for step in generation.steps:
        generated_positions.update(step.changed)
        generated_positions.update(step.masked)
    return tokens, [p in generated_positions for p in range(len(tokens))]


class StutterMetric(InputsOnly, Metric):
    """Stutter: generated positions repeating their left neighbour (Li et al. 2024, ICML, "Promises and
    pitfalls of generative masked language modeling"), at word and sub-word level."""

    name = "stutter"
    description = "share of generated positions equal to their left neighbour (word, sub-word) and % samples with any"
    higher_is_better = False
    parameters = (
        Param("tokenizer", str, "", "HF tokenizer (dir or name) for sub-word stutter when generations have no step trace"),
    )

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        info = base_info(self, "mlmh (Li et al. 2024 definition)", None, tokenizer="mlmh.words.split_words")
        word_hits, word_totals = [], []
        for item in items:
            sequence = word_sequence(item)
            hits, total = repeats_left_neighbour([w for w, _ in sequence], [g for _, g in sequence])
            word_hits.append(hits)
            word_totals.append(total)
        hits_arr, totals_arr = np.asarray(word_hits), np.asarray(word_totals)
        results = [pooled_share_result("stutter_word", hits_arr, totals_arr, higher_is_better=False, seed=seed, info=info)]
        results.append(self._subword(items, seed, info))
        any_stutter = [100.0 * (h > 0) if t else None for h, t in zip(word_hits, word_totals)]
        results.append(
            mean_result("stutter_any_pct", any_stutter, higher_is_better=False,
                        info={**info, "unit": "% of samples with at least one word-level stutter"})
        )
        return results

    def _subword(self, items: Sequence[ScoringItem], seed: int, info: dict[str, Any]) -> MetricResult:
        traces = [subword_sequence(item.generation) for item in items]
        source = "the generation's step trace (final tokens; positions any step changed)"
        if any(t is None for t in traces):
            if not self.params["tokenizer"]:
                return failed_result(
                    "stutter_subword", False,
                    "no sub-word tokens: generations carry no step trace; give stutter:tokenizer=PATH",
                    info,
                )
            tokenizer = load_tokenizer(self.params["tokenizer"])
            traces = [
                trace if trace is not None else self._tokenize(tokenizer, item.prediction)
                for trace, item in zip(traces, items)
            ]
            source = f"tokenizer {self.params['tokenizer']} on the prediction (every position counted) where no step trace"
        counts = [repeats_left_neighbour(tokens, generated) for tokens, generated in traces]  # type: ignore[misc]  # no None left: tokenized above
        hits, totals = np.asarray([c[0] for c in counts]), np.asarray([c[1] for c in counts])
        return pooled_share_result(
            "stutter_subword", hits, totals, higher_is_better=False, seed=seed, info={**info, "subword_tokens": source}
        )

    @staticmethod
    def _tokenize(tokenizer: Any, text: str) -> tuple[list[str], list[bool]]:
        tokens = tokenizer.tokenize(text)
        return tokens, [True] * len(tokens)


def load_tokenizer(name_or_path: str) -> Any:
    from transformers import AutoTokenizer

    from mlmh.adapters.checkpoints import from_pretrained, local_checkpoint

    local_checkpoint(name_or_path, "tokenizer", model=False, param="tokenizer")
    return from_pretrained(AutoTokenizer, name_or_path, what="tokenizer")


# -- seq-rep-n, distinct-n ----------------------------------------------------------------------

_N = Param("n", int, 4, "n-gram order", min=1, max=4)


class SeqRepMetric(InputsOnly, Metric):
    """seq-rep-n = 1 - unique/total n-grams within each sequence (Welleck et al. 2020, ICLR, unlikelihood)."""

    name = "seq-rep-n"
    description = "1 - unique/total word n-grams per generation (repetition); mean over samples"
    higher_is_better = False
    parameters = (_N, SPANS_ONLY)

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        n = self.params["n"]
        per_sample: list[float | None] = []
        for words in scored_words(items, self.params["spans_only"]):
            grams = ngrams(words, n)
            per_sample.append(1.0 - len(set(grams)) / len(grams) if grams else None)
        info = base_info(self, "mlmh", None, n=n, tokenizer="mlmh.words.split_words")
        return [mean_result(f"seq-rep-{n}", per_sample, higher_is_better=False, info=info)]


class DistinctMetric(InputsOnly, Metric):
    """distinct-n = unique/total n-grams over the whole corpus of generations (Li et al. 2016, NAACL)."""

    name = "distinct-n"
    description = "unique/total word n-grams over all generations (corpus level); per sample within each"
    parameters = (_N, SPANS_ONLY)

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from scipy.sparse import csr_matrix

        n = self.params["n"]
        ids: dict[tuple[str, ...], int] = {}
        rows: list[int] = []
        cols: list[int] = []
        totals: list[int] = []
        per_sample: list[float | None] = []
        for row, words in enumerate(scored_words(items, self.params["spans_only"])):
            grams = ngrams(words, n)
            unique = {ids.setdefault(g, len(ids)) for g in grams}
            rows.extend([row] * len(unique))
            cols.extend(unique)
            totals.append(len(grams))
            per_sample.append(len(unique) / len(grams) if grams else None)
        total_arr = np.asarray(totals, dtype=float)
        value = len(ids) / total_arr.sum() if total_arr.sum() else None
        # item x n-gram incidence: a resample's unique n-grams are those present in any drawn item.
        incidence = csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(len(totals), max(len(ids), 1))).T.tocsr()

        def resampled(indices: np.ndarray) -> float:
            weights = np.bincount(indices, minlength=len(totals)).astype(float)
            total = weights @ total_arr
            return float(np.count_nonzero(incidence @ (weights > 0)) / total) if total else float("nan")

        low, high = resample_ci(len(totals), resampled, seed=seed)
        info = base_info(
            self, "mlmh", None, n=n, tokenizer="mlmh.words.split_words",
            aggregation="corpus: unique n-grams of all generations / all n-grams", **method_info("resample", seed=seed),
            ci_note="resamples repeat generations, which repeats their n-grams: the CI leans low",
        )
        return [MetricResult(f"distinct-{n}", value, True, per_sample, low, high, info)]


# -- self-BLEU ----------------------------------------------------------------------------------


class SelfBleuMetric(InputsOnly, Metric):
    """Self-BLEU: each generation scored against all the others (Zhu et al. 2018, Texygen); lower = more diverse."""

    name = "self-bleu"
    description = "sacrebleu sentence BLEU of each generation against all other generations (lower = more diverse)"
    higher_is_better = False
    parameters = (SPANS_ONLY,)

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        from sacrebleu.metrics import BLEU

        preds, _ = texts(items, self.params["spans_only"])
        bleu = BLEU(effective_order=True)
        per_sample = leave_one_out_bleu(bleu, preds)
        if len(preds) > 1:
            bleu.sentence_score(preds[0], preds[1:])  # the direct call once: records nrefs for the signature
        info = base_info(
            self, "sacrebleu BLEU sentence statistics, each generation vs all others", "sacrebleu",
            signature=str(bleu.get_signature()) if len(preds) > 1 else "",
            tokenizer="sacrebleu 13a",
        )
        return [mean_result("self-bleu", per_sample, higher_is_better=False, info=info)]


def leave_one_out_bleu(bleu: Any, texts_: Sequence[str]) -> list[float | None]:
    """``bleu.sentence_score(texts_[i], all other texts)`` for every i, in O(total n-grams).

    sacrebleu clips each hypothesis n-gram by its largest count in any reference. Keeping, per n-gram,
    the largest count, which text holds it, and the second largest gives that maximum over "all but
    i" without rebuilding n-gram tables for every i (n times faster; equal to the direct call).
    """
    from sacrebleu.metrics.helpers import extract_all_word_ngrams

    if len(texts_) < 2:
        return [None] * len(texts_)
    order = bleu.max_ngram_order
    segments = [bleu._preprocess_segment(t) for t in texts_]
    counts = [extract_all_word_ngrams(segment, 1, order) for segment in segments]
    best: dict[tuple[str, ...], list[int]] = {}  # n-gram -> [top count, its text, second count]
    for owner, (counter, _) in enumerate(counts):
        for gram, count in counter.items():
            entry = best.get(gram)
            if entry is None:
                best[gram] = [count, owner, 0]
            elif count > entry[0]:
                entry[2], entry[0], entry[1] = entry[0], count, owner
            elif count > entry[2]:
                entry[2] = count
    lengths = [length for _, length in counts]
    scores: list[float | None] = []
    for i, (counter, _) in enumerate(counts):
        reference_max = {}
        for gram in counter:
            top, owner, second = best[gram]
            other = second if owner == i else top
            if other:
                reference_max[gram] = other
        reference_info = {"ref_ngrams": reference_max, "ref_lens": lengths[:i] + lengths[i + 1 :]}
        stats = bleu._compute_segment_statistics(segments[i], reference_info)
        scores.append(bleu._compute_score_from_stats(stats).score)
    return scores


# -- novelty ------------------------------------------------------------------------------------


class NoveltyMetric(InputsOnly, Metric):
    """Novelty: share of masked positions whose generated word differs from the original one."""

    name = "novelty"
    description = "share of masked words the model really changed (generated != original); needs generations"
    higher_is_better = True
    parameters = (Param("ignore_case", bool, False, "treat 'The' and 'the' as the same word"),)

    def score(self, items: Sequence[ScoringItem], *, seed: int = 0) -> list[MetricResult]:
        info = base_info(self, "mlmh", None, tokenizer="mlmh.words.split_words")
        if any(item.generation is None for item in items):
            return [failed_result("novelty", True, "novelty needs generations from a run (which words were masked)", info)]
        fold = str.lower if self.params["ignore_case"] else (lambda s: s)
        changed, totals = [], []
        for item in items:
            generation = item.generation
            assert generation is not None
            original = split_words(generation.original)
            positions = [i for i in generation.masked_words if 0 <= i < len(original)]
            changed.append(sum(fold(generation.output_words.get(i, "").strip()) != fold(original[i]) for i in positions))
            totals.append(len(positions))
        return [
            pooled_share_result("novelty", np.asarray(changed), np.asarray(totals), higher_is_better=True, seed=seed, info=info)
        ]


@hookimpl
def register_metrics(register):
    for metric in (StutterMetric, SeqRepMetric, DistinctMetric, SelfBleuMetric, NoveltyMetric):
        register(metric())
