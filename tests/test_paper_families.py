"""The paper's checkpoint families as users bring them (BERT, RoBERTa, GPT-2, T5, BART, each with a tokenizer of
its own kind: tests/paper_families.py): generation through hf-*, ``mlmh train --init`` with every objective the
family starts and a one-line refusal of the others, the trained result loading with its Auto class and
regenerating, a short ``mlmh eval``; T5's span corruption; the ``paper-hub`` preset offline."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from cli_helpers import run_cli
from paper_families import FAMILIES, HUB_NAMES, KINDS

from mlmh.training.corruption import noise_spans, span_corruption_example

TEXT = "The cat sat on the mat and looked at the door, then the dog came in."
AUTO = {"mlm": "AutoModelForMaskedLM", "clm": "AutoModelForCausalLM", "seq2seq": "AutoModelForSeq2SeqLM"}
MASKS = ("[MASK]", "<mask>", "<extra_id_")
STARTS = [(family, objective) for family, objectives in FAMILIES.items() for objective in objectives]
REFUSED = [(family, objective) for family, objectives in FAMILIES.items() for objective in AUTO
           if objective not in objectives]


def regenerates(model: str) -> None:
    """``model`` fills every masked word with text of its own (no mask token or sentinel left in it)."""
    import mlmh

    generation = mlmh.generate(TEXT, model=model, masking="random:ratio=0.3", seed=1)
    assert generation.masked_words and set(generation.output_words) == set(generation.masked_words)
    assert not any(mark in generation.text for mark in MASKS), generation.text
    assert generation.text != generation.masked_text


# -- generation -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("family", list(FAMILIES))
def test_every_family_generates_through_its_hf_model(family, paper_families):
    regenerates(f"hf-{KINDS[family]}:path={paper_families[family]}")


def test_the_tokenizers_cover_prefix_space_and_plain_pieces(paper_families):
    from transformers import AutoTokenizer

    pieces = {family: AutoTokenizer.from_pretrained(path).tokenize("the cat sat") for family, path in paper_families.items()}
    assert all("Ġcat" in pieces[f] for f in ("roberta", "gpt2", "bart"))  # byte-level BPE: the space in the piece
    assert pieces["bert"] == ["the", "cat", "sat"]  # WordPiece: no space marker
    assert pieces["t5"][0].startswith("▁")  # SentencePiece-style unigram


def test_hf_models_run_where_trained_models_do():
    from mlmh.machine.devices import resolve_device
    from mlmh.registry import get_registry

    for kind in KINDS.values():
        model = get_registry().build("model", f"hf-{kind}:path=./x")
        assert model.params["device"] == "auto"
    assert get_registry().build("model", "trained-mlm").params["device"] == "auto"
    assert resolve_device("auto") in ("cpu", "cuda")


def test_t5_with_fewer_sentinels_than_spans_merges_spans_and_writes_every_masked_word(paper_families):
    """The tiny T5 has 20 sentinels (t5-base 100): a text with more masked spans gets its closest spans merged
    under one sentinel, and every masked word is still the model's output (none kept as it was)."""
    import mlmh
    from paper_families import SENTINELS

    generation = mlmh.generate(" ".join([TEXT] * 8), model=f"hf-seq2seq:path={paper_families['t5']}",
                               masking="random:ratio=0.5", seed=0)
    assert "unfilled_masked_words" not in generation.info
    assert generation.info["prefills"] > SENTINELS  # more masked runs than sentinels, all of them written
    assert set(generation.output_words) == set(generation.masked_words) and len(generation.masked_words) > SENTINELS
    assert "<extra_id_" not in generation.text


def test_merged_spans_keep_the_closest_runs_together():
    from mlmh.adapters.sentinels import spans_to_fit

    runs = [(0, 1), (3, 4), (5, 6), (10, 12), (13, 14)]
    assert spans_to_fit(runs, 5) == runs
    assert spans_to_fit(runs, 3) == [(0, 1), (3, 6), (10, 14)]  # gaps of one token merged first, leftmost first
    assert spans_to_fit(runs, 1) == [(0, 14)]


def test_the_window_is_what_the_position_tables_hold(paper_families):
    """RoBERTa's positions start after its padding index; a warm-started encoder-decoder has no table of its own."""
    from transformers import AutoConfig, EncoderDecoderConfig

    from mlmh.adapters.base import model_window

    class Unlimited:
        model_max_length = 10**30

    bert, roberta = (AutoConfig.from_pretrained(paper_families[f]) for f in ("bert", "roberta"))
    assert model_window(bert, Unlimited()) == 130 and model_window(roberta, Unlimited()) == 128
    warm = EncoderDecoderConfig.from_encoder_decoder_configs(roberta, roberta)
    assert model_window(warm, Unlimited()) == 128


# -- what a family starts ------------------------------------------------------------------------------------

@pytest.mark.parametrize("family, objective", REFUSED)
def test_objectives_a_family_cannot_start_are_refused_in_one_line(family, objective, paper_families, tmp_path, capsys):
    code, _, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", objective, "--init",
                           str(paper_families[family]), "--max-steps", "1", "--out", str(tmp_path / "m"))
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert code == 2 and len(errors) == 1 and f"train it with objective {FAMILIES[family][0]}" in errors[0], err
    assert not (tmp_path / "m").exists()


def test_a_seq2seq_tokenizer_with_neither_mask_nor_sentinels_is_refused(paper_families, tmp_path, capsys):
    """A T5 model saved with GPT-2's tokenizer: nothing to corrupt spans with."""
    odd = tmp_path / "t5-with-gpt2-tokenizer"
    shutil.copytree(paper_families["t5"], odd)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "spiece.model"):
        (odd / name).unlink(missing_ok=True)
    for path in paper_families["gpt2"].iterdir():
        if path.name.startswith(("tokenizer", "vocab", "merges", "special_tokens")):
            shutil.copy(path, odd / path.name)
    code, _, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "seq2seq", "--init", str(odd),
                           "--max-steps", "1", "--out", str(tmp_path / "m"))
    assert code == 2 and "neither a mask token" in err and "<extra_id_0>" in err and len(err.strip().splitlines()) <= 2


@pytest.mark.slow
@pytest.mark.parametrize("family, objective", STARTS)
def test_every_objective_a_family_starts_trains_loads_and_regenerates(family, objective, paper_families, tmp_path,
                                                                      capsys):
    import transformers

    out = tmp_path / f"{family}-{objective}"
    code, stdout, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", objective, "--init",
                                str(paper_families[family]), "--max-steps", "2", "--eval-every", "1", "--out", str(out),
                                "--json")
    assert code == 0, err
    card = json.loads(stdout)
    assert card["objective"] == objective and card["steps_run"] == 2 and card["validation_loss"] is not None
    if family == "t5":
        assert card["corruption"].startswith("T5 span corruption")
    elif objective == "seq2seq":
        assert card["corruption"].startswith("BART text infilling")
    getattr(transformers, AUTO[objective]).from_pretrained(out)
    regenerates(f"hf-{objective}:path={out}")


@pytest.mark.slow
def test_a_short_eval_with_the_five_families(paper_families, tmp_path, capsys):
    models = ",".join(f"hf-{KINDS[f]}:path={paper_families[f]}" for f in FAMILIES)
    code, _, err = run_cli(capsys, "eval", "--preset", "quick", "--model", models, "--metric",
                           "bleu,bleu:lowercase=true", "--masking", "random:ratio=0.3", "--sampler",
                           "mask-predict:steps=2,clm-infill,seq2seq-infill", "--task", "none", "--limit", "2",
                           "--output-path", str(tmp_path / "run"))
    assert code == 0, err
    results = json.loads((tmp_path / "run" / "results.json").read_text(encoding="utf-8"))
    assert not results["errors"]
    assert {row["model"] for row in results["conditions"]} == {
        f"hf-{KINDS[f]}:path={paper_families[f]}" for f in FAMILIES}
    assert all(row["generation"]["samples"] == results["n_samples"] for row in results["conditions"])
    report = (tmp_path / "run" / "report.md").read_text(encoding="utf-8")
    assert "| bleu[lowercase=true] ↑ |" in report and "| bleu ↑ |" in report  # both, each under its own label


# -- T5 span corruption ---------------------------------------------------------------------------------------

def test_span_corruption_hides_15_percent_in_spans_of_mean_3():
    rng = np.random.default_rng(0)
    hidden = spans = 0
    for _ in range(300):
        found = noise_spans(200, rng)
        assert all(a + la < b for (a, la), (b, _) in zip(found, found[1:]))  # never touching: one sentinel each
        assert found[0][0] > 0  # a kept stretch first, as in T5
        hidden += sum(length for _, length in found)
        spans += len(found)
    assert hidden / (300 * 200) == pytest.approx(0.15, abs=0.005)
    assert hidden / spans == pytest.approx(3.0, abs=0.1)


def test_source_and_target_rebuild_the_block():
    sentinels = [100 + k for k in range(20)]
    block = list(range(1, 41)) + [99]  # content, then the end token
    source, target, hidden = span_corruption_example(block, None, 99, sentinels, 0.15, np.random.default_rng(3))
    assert source[-1] == 99 and target[-1] == 99 and len(target) == len(hidden)
    rebuilt, spans = [], {}
    key = None
    for token in target[:-1]:
        if token in sentinels:
            key = token
            spans[key] = []
        else:
            spans[key].append(token)
    for token in source[:-1]:
        rebuilt += spans[token] if token in sentinels else [token]
    assert rebuilt == block[:-1]
    assert target[len(target) - 2] == sentinels[len(spans) - 1]  # the closing sentinel ends the spans
    assert sum(hidden) == 6 and all(not h for t, h in zip(target, hidden) if t in sentinels or t == 99)


@pytest.mark.slow
def test_t5_trains_with_span_corruption_and_regenerates_through_its_sentinels(paper_families, tmp_path, capsys):
    """The issue's done-when: ``mlmh train --init T5DIR --objective seq2seq``, AutoModelForSeq2SeqLM, sentinels."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    from mlmh.adapters import load_adapter

    out = tmp_path / "t5-seq2seq"
    code, stdout, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "seq2seq", "--init",
                                str(paper_families["t5"]), "--max-steps", "3", "--out", str(out), "--json")
    assert code == 0, err
    assert "span corruption" in json.loads(stdout)["corruption"]
    assert type(AutoModelForSeq2SeqLM.from_pretrained(out)).__name__ == "T5ForConditionalGeneration"
    adapter = load_adapter("seq2seq", out, identity="t5")
    assert adapter.style == "sentinel"
    sentinel = AutoTokenizer.from_pretrained(out).convert_tokens_to_ids("<extra_id_0>")
    assert adapter.sentinel_id(0) == sentinel
    regenerates(f"hf-seq2seq:path={out}")


# -- the paper-hub preset --------------------------------------------------------------------------------------

def test_paper_hub_offline_is_refused_before_any_work_naming_what_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "eval", "--preset", "paper-hub", "--output-path", str(tmp_path / "run"))
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert "not cached" in lines[0] and all(name in lines[0] for name in HUB_NAMES.values())
    assert not (tmp_path / "run").exists() and not (tmp_path / "models").exists()
    import mlmh
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match="not cached: bert-base-uncased, facebook/bart-base, gpt2, roberta-base"):
        mlmh.evaluate("paper-hub", output_path=tmp_path / "api-run")
    assert not (tmp_path / "api-run").exists()


def test_paper_hub_names_every_objective_each_checkpoint_starts(paper_families, monkeypatch):
    """Checked (validate) where directories named like the checkpoints stand for them."""
    from mlmh.config.presets import resolve

    from mlmh.config.plan import build_plan

    monkeypatch.chdir(paper_families["bert"].parent)
    config = build_plan(resolve("paper-hub")).config
    started = {(spec.split(":")[0].removeprefix("trained-"), spec.split("init=")[1].split(",")[0])
               for spec in config.models}
    assert started == {(objective, HUB_NAMES[family]) for family, objective in STARTS}
    assert "bleu:lowercase=true" in config.metrics and "bleu" in config.metrics


def test_a_t5_window_cuts_documents_by_its_source(paper_families):
    """A T5 encoding's token map is its decoder target's (the masked spans only): the window is read on the
    source, so a document longer than a T5 window is cut before masking like any other."""
    from mlmh.adapters import load_adapter
    from mlmh.generation import fit_to_windows
    from mlmh.types import Document
    from mlmh.words import split_words

    adapter = load_adapter("seq2seq", paper_families["t5"], defer_weights=True)
    long = Document(id="long", text=" ".join(f"word{i % 50}" for i in range(3 * adapter.max_length)))
    (fitted,), cut = fit_to_windows([long], [adapter])
    assert cut == 1 and 0 < len(split_words(fitted.text)) < len(split_words(long.text))
