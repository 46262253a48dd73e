"""A deterministic finished run (results.json + samples.jsonl) for the TUI tests, and the tests of
reading runs back and of drawing trace frames."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlmh.errors import DataError, SpecError
from mlmh.api import load
from mlmh.tui.widgets.token_view import MASK_GLYPH, Frame, confidence_color, frames_of, render_frame
from mlmh.types import Generation, Step, to_dict

TOKENS_FINAL = ["[CLS]", "everything", "is", "very", "fast", "in", "foot", "##ball", ".", "[SEP]"]


def mlm_generation(doc_id: str = "d1", model: str = "hf-mlm") -> Generation:
    """Mask-predict style: positions 2 and 6-7 masked, filled over three steps (one re-masked)."""
    m = "[MASK]"
    steps = [
        Step(tokens=["[CLS]", "everything", "football", "very", "fast", "in", "foot", m, ".", "[SEP]"],
             changed=[2, 6], confidences={2: 0.21, 6: 0.9}, masked=[7]),
        Step(tokens=["[CLS]", "everything", m, "very", "fast", "in", "foot", "##ball", ".", "[SEP]"],
             changed=[7], confidences={7: 0.8}, masked=[2]),
        Step(tokens=list(TOKENS_FINAL), changed=[2], confidences={2: 0.7}, masked=[]),
    ]
    return Generation(doc_id=doc_id, model=model, model_kind="mlm", sampler="mask-predict:steps=3", masking="random:ratio=0.3",
                      seed=0, original="Everything is very fast in football.", masked_text="Everything [MASK] very fast in [MASK].",
                      text="everything is very fast in football.", masked_words=[1, 5], output_words={1: "is", 5: "football"},
                      steps=steps, forward_passes=3, generated_tokens=3, seconds=0.5)


def condition(cid: str, model: str, ratio: float, bleu: float, rouge: float, accuracy: float) -> dict:
    return {
        "id": cid, "model": model, "model_kind": "mlm" if "mlm" in model else "clm", "masking": f"random:ratio={ratio}",
        "masking_ratio": ratio, "sampler": "mask-predict" if "mlm" in model else "clm-infill", "steps": 3, "seed": 0,
        "metrics": {
            "bleu": {"value": bleu, "ci_low": bleu - 0.05, "ci_high": bleu + 0.05, "higher_is_better": True},
            "stutter": {"value": 1 - rouge, "ci_low": None, "ci_high": None, "higher_is_better": False},
        },
        "downstream": {"authorship-verification": {"accuracy": accuracy}},
        "generation": {"forward_passes": 30, "tokens_per_s": 100.0, "seconds": 1.0, "samples": 2},
    }


CONDITIONS = [
    condition("hf-mlm | random:ratio=0.15 | mask-predict | seed=0", "hf-mlm", 0.15, 0.61, 0.70, 0.71),
    condition("hf-mlm | random:ratio=0.3 | mask-predict | seed=0", "hf-mlm", 0.3, 0.52, 0.66, 0.68),
    condition("hf-clm | random:ratio=0.15 | clm-infill | seed=0", "hf-clm", 0.15, 0.40, 0.60, 0.64),
    condition("hf-clm | random:ratio=0.3 | clm-infill | seed=0", "hf-clm", 0.3, 0.33, 0.50, 0.60),
]


def with_roles(c: dict) -> dict:
    """A condition as a schema-2 run writes it: its metrics scored on unseen documents, seen scores a little
    higher, and the filler and deletion baselines of its masking."""
    ratio = c["masking_ratio"] or 0.2
    baselines = {"filler": {"bleu": {"value": 0.2 - ratio / 10, "ci_low": None, "ci_high": None, "higher_is_better": True}},
                 "deletion": {"bleu": {"value": 0.45 - ratio / 5, "ci_low": None, "ci_high": None, "higher_is_better": True}}}
    seen = {name: {**score, "value": round(score["value"] + 0.05, 3)} for name, score in c["metrics"].items()}
    return {**c, "unseen": {"documents": 1, "scored": 1, "metrics": c["metrics"], **baselines},
            "seen": {"documents": 1, "scored": 1, "metrics": seen, **baselines}}


FINDINGS = [
    {"claim": "paper-1:bleu", "source": "arXiv 2405.12630", "text": "MLM beats CLM on generation quality",
     "verdict": "holds", "statement": "bleu: MLM beats CLM by +0.20 [+0.15, +0.25] over 2 maskings (1 document).",
     "statistic": 0.2, "ci_low": 0.15, "ci_high": 0.25},
    {"claim": "paper-2:bleu", "source": "arXiv 2405.12630", "text": "Lower masking ratios give better generations",
     "verdict": "not comparable", "statement": "Lower masking ratios give better generations: not comparable, "
     "because hf-clm scores no better than the deletion baseline on bleu."},
    {"claim": "paper-3", "source": "arXiv 2405.12630", "text": "Punctuation masking is best for CLM and worst for MLM",
     "verdict": "not tested", "statement": "", "extra": {"reason": "the run has no punctuation masking"}},
]


def write_run(directory: Path, *, samples: bool = True, generations: bool = True) -> Path:
    """A run directory as the runner writes it, with fixed numbers: one unseen and one seen document per
    condition (generations.jsonl), their step traces when ``samples`` (samples.jsonl)."""
    directory.mkdir(parents=True, exist_ok=True)
    results = {"schema_version": 2, "config": {"preset": "fixture", "dataset": "pan"}, "versions": {}, "n_samples": 2,
               "headline": "unseen", "filler_word": "the", "conditions": [with_roles(c) for c in CONDITIONS],
               "documents": {"unseen": {"split": "test", "documents": 1}, "seen": {"split": "train", "documents": 1}},
               "findings": FINDINGS, "baseline": {"authorship-verification": {"accuracy": 0.7}}, "correlations": [],
               "notes": []}
    (directory / "results.json").write_text(json.dumps(results), encoding="utf-8")
    roles = {"d1": "seen", "d2": "unseen"}
    if generations:
        with (directory / "generations.jsonl").open("w", encoding="utf-8") as fh:
            for index, c in enumerate(CONDITIONS):
                for doc in ("d1", "d2"):
                    g = mlm_generation(doc, c["model"])
                    fh.write(json.dumps({"sample": f"{index}:{doc}", "condition": c["id"], "doc_id": doc, "role": roles[doc],
                                         "original": g.original, "masked_text": g.masked_text, "text": g.text}) + "\n")
    if samples:
        with (directory / "samples.jsonl").open("w", encoding="utf-8") as fh:
            for c in CONDITIONS:
                for doc in ("d1", "d2"):
                    fh.write(json.dumps({"condition": c["id"], "role": roles[doc], "generation": to_dict(mlm_generation(doc, c["model"])),
                                         "metrics": {"bleu": 0.5}}) + "\n")
    return directory


#: what a real run's samples are named by: a UUID and the chunk of the document (36 + 2 characters)
UUIDS = ["64669e46-6b66-47ab-bedb-1fd22fe71799-1", "fcea0911-2c3d-4b5e-8f70-a1b2c3d74405-2"]
WIDE_METRICS = ("bleu", "rouge1", "rouge2", "rougeL", "meteor", "bertscore", "stutter", "novelty")
#: sacreBLEU's 0-100 scale, where a learned and an unlearned model lie an order of magnitude apart
WIDE_BLEU = {"mlm": (71.6, 2.1), "clm": (4.882, 0.9)}


def wide_condition(cid: str, model: str, masking: str, base: float) -> dict:
    """A condition of a real-sized run: eight metrics with CIs (BLEU on its 0-100 scale), three downstream
    scores, a fixed-ratio masking."""
    metrics = {name: {"value": round(base + i / 100, 3), "ci_low": round(base + i / 100 - 0.02, 3),
                      "ci_high": round(base + i / 100 + 0.02, 3), "higher_is_better": name != "stutter"}
               for i, name in enumerate(WIDE_METRICS)}
    kind = "mlm" if "mlm" in model else "clm"
    bleu, half = WIDE_BLEU[kind]
    metrics["bleu"] = {"value": bleu, "ci_low": round(bleu - half, 3), "ci_high": round(bleu + half, 3),
                       "higher_is_better": True}
    scores = {"authorship-verification": {"auc": base, "c@1": base - 0.1, "f1": base - 0.05}}
    return with_roles({"id": cid, "model": model, "model_kind": kind, "masking": masking,
                       "masking_ratio": None, "sampler": "mask-predict:steps=4" if kind == "mlm" else "clm-infill",
                       "steps": 3, "seed": 0, "metrics": metrics, "downstream": scores,
                       "generation": {"forward_passes": 30, "tokens_per_s": 100.0, "seconds": 1.0, "samples": 2}})


def trained(kind: str, accuracy: float) -> dict:
    """A ``models`` entry of a trained-* model whose card says how it did against the best constant (0.095)."""
    return {"identity": f"trained-{kind}:pan-{kind}-tiny-0", "label": f"trained-{kind}:size=tiny,max_steps=40",
            "model_kind": kind, "training": {"heldout_accuracy": accuracy, "best_constant_accuracy": 0.095,
                                             "beats_constant": accuracy > 0.095}}


def write_wide_run(directory: Path, ids: list[str] = UUIDS) -> Path:
    """A run as wide as the quick preset's: more columns than 140 terminal columns hold, no masking swept over
    ratios (so no ratio curve), samples named by ``ids`` (UUIDs), and a CLM that never left the unigram plateau,
    so the answer leaves its conditions out (though it scores best on stutter)."""
    conditions = [wide_condition(f"{model} | {masking} | {sampler} | seed=0", model, masking, base)
                  for model, sampler, base in (("trained-mlm:size=tiny,max_steps=40", "mask-predict:steps=4", 0.6),
                                               ("trained-clm:size=tiny,max_steps=40", "clm-infill", 0.5))
                  for masking in ("stopwords", "punctuation")]
    write_run(directory)
    results = json.loads((directory / "results.json").read_text(encoding="utf-8"))
    results.update(conditions=conditions, baseline={"authorship-verification": {"auc": 0.8, "c@1": 0.7, "f1": 0.75}},
                   models={"trained-mlm:size=tiny,max_steps=40": trained("mlm", 0.31),
                           "trained-clm:size=tiny,max_steps=40": trained("clm", 0.061)})
    (directory / "results.json").write_text(json.dumps(results), encoding="utf-8")
    with (directory / "samples.jsonl").open("w", encoding="utf-8") as fh:
        for c in conditions:
            for doc, role, bleu in zip(ids, ("seen", "unseen"), (71.6, 4.882)):
                generation = to_dict(mlm_generation(doc, c["model"]))
                fh.write(json.dumps({"condition": c["id"], "role": role, "generation": generation,
                                     "metrics": {"bleu": bleu, "rouge1": 0.5}}) + "\n")
    (directory / "generations.jsonl").unlink()
    return directory


def test_load_reads_results_and_samples_with_traces(tmp_path):
    run = load(write_run(tmp_path / "run"))
    assert [c.id for c in run.conditions] == [c["id"] for c in CONDITIONS]
    assert run.conditions[0].metrics["bleu"].ci_low == pytest.approx(0.56)
    samples = run.samples_of(CONDITIONS[0]["id"])
    assert [s.generation.doc_id for s in samples] == ["d1", "d2"]
    assert samples[0].generation.steps[0].confidences == {2: 0.21, 6: 0.9}
    assert load(tmp_path / "run" / "results.json").path == run.path


def test_load_reads_the_texts_of_generations_jsonl_without_samples_jsonl(tmp_path):
    run = load(write_run(tmp_path / "run", samples=False))
    assert not run.traced
    samples = run.samples_of(CONDITIONS[2]["id"])
    assert [(s.generation.doc_id, s.role) for s in samples] == [("d1", "seen"), ("d2", "unseen")]
    first = samples[0].generation
    assert (first.model, first.sampler, first.masking, first.steps) == ("hf-clm", "clm-infill", "random:ratio=0.15", [])
    assert first.masked_text == "Everything [MASK] very fast in [MASK]." and first.text == "everything is very fast in football."
    assert load(write_run(tmp_path / "bare", samples=False, generations=False)).samples == []


def test_load_names_the_bad_file(tmp_path):
    with pytest.raises(SpecError, match="missing does not exist"):
        load(tmp_path / "missing")
    run = write_run(tmp_path / "run")
    loaded = load(run)  # the samples are read when first asked for
    (run / "samples.jsonl").write_text('{"condition": "x"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"samples\.jsonl:1: missing key\(s\) generation"):
        loaded.samples  # noqa: B018
    (run / "samples.jsonl").unlink()
    (run / "generations.jsonl").write_text('{"sample": "0:d9", "condition": "nope", "doc_id": "d9", "original": "a", '
                                           '"masked_text": "a", "text": "a"}\n', encoding="utf-8")
    with pytest.raises(DataError, match=r"generations\.jsonl: sample 0:d9 names condition 'nope'"):
        load(run).samples  # noqa: B018
    (run / "results.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(DataError, match="results.json: not a readable"):
        load(run)


def test_frames_start_from_the_masked_input_and_carry_confidence():
    frames = frames_of(mlm_generation().steps)
    assert len(frames) == 4
    assert frames[0].masked == {2, 6, 7} and frames[0].changed == set()
    assert frames[1].changed == {2, 6} and frames[1].confidences == {2: 0.21, 6: 0.9}
    # position 2 is re-masked at step 2: its old confidence is dropped, position 6 keeps its own
    assert frames[2].masked == {2} and frames[2].confidences == {6: 0.9, 7: 0.8}
    assert frames[3].confidences == {2: 0.7, 6: 0.9, 7: 0.8}


def test_render_frame_joins_subwords_hides_specials_and_styles_changes():
    frames = frames_of(mlm_generation().steps)
    assert render_frame(frames[0]).plain == f"everything {MASK_GLYPH} very fast in {MASK_GLYPH} {MASK_GLYPH} ."
    final = render_frame(frames[3])
    assert final.plain == "everything is very fast in football ."
    styles = {final.plain[span.start:span.end]: span.style for span in final.spans}
    assert styles["is"].bold and styles["is"].underline  # changed at this step
    assert "very" not in styles or not styles["very"]  # untouched original: no style
    assert str(styles["foot"].color.name) == confidence_color(0.9).replace(" ", "")
    gpt = render_frame(Frame(tokens=["The", "Ġcat", "Ġsat", "."], changed={2}))
    assert gpt.plain == "The cat sat."


def test_confidence_colour_goes_from_red_to_green():
    assert confidence_color(0.0) == "rgb(220,60,60)"
    assert confidence_color(1.0) == "rgb(40,220,60)"
    assert confidence_color(2.0) == confidence_color(1.0)


def test_labels_shorten_paths_and_numbers():
    from mlmh.tui.labels import number, short_condition, short_spec

    assert short_spec("hf-mlm:path=/home/me/models/runs/bert-base,revision=main") == "hf-mlm:path=…/runs/bert-base,revision=main"
    assert short_spec("hf-mlm:/home/me/models/runs/bert-base") == "hf-mlm:…/runs/bert-base"
    assert short_spec("random:ratio=0.3") == "random:ratio=0.3"
    assert short_condition("hf-clm:path=/a/very/long/path/to/the/gpt | stopwords | clm-infill | seed=0") == \
        "hf-clm:path=…/the/gpt | stopwords | clm-infill | seed=0"
    assert [number(v) for v in (0.41234, 68.8241, 123.4, -0.5)] == ["0.412", "68.8", "123", "-0.500"]


def test_legend_labels_drop_shared_parameters_and_elide_in_the_middle():
    from mlmh.tui.labels import legend_labels, short_id

    labels = ["trained-mlm:size=tiny,max_steps=40 mask-predict:steps=4", "trained-clm:size=tiny,max_steps=40 clm-infill"]
    assert legend_labels(labels) == ["trained-mlm mask-predict:steps=4", "trained-clm clm-infill"]
    assert legend_labels(["trained-mlm:size=tiny one-shot", "trained-mlm:size=small one-shot"]) == [
        "trained-mlm:size=tiny one-shot", "trained-mlm:size=small one-shot"]  # what differs stays
    long = legend_labels(["hf-mlm:path=…/checkpoints/a-very-long-name mask-predict:steps=10"], width=20)[0]
    assert len(long) == 20 and long.startswith("hf-mlm") and long.endswith("steps=10")
    assert short_id(UUIDS[0]) == UUIDS[0] and short_id("d1") == "d1"


def test_ids_are_cut_at_their_end_and_numbers_in_one_format_per_column():
    from mlmh.tui.labels import distinct_specs, number, short_id

    # cut in the middle, both were "py:sel…egister"
    assert [short_id(i, 16) for i in ("py:selectors.register", "py:selectors.unregister")] == [
        "py:selectors.re…", "py:selectors.un…"]
    assert short_id(UUIDS[0], 12) == "64669e46-6b…"
    assert [number(v, like=71.6) for v in (71.6, 4.882, 0.18)] == ["71.6", "4.9", "0.2"]
    assert [number(v, like=0.61) for v in (0.61, 0.02)] == ["0.610", "0.020"]
    assert distinct_specs(["trained-mlm:size=tiny,max_steps=40", "trained-clm:size=tiny,max_steps=40"]) == {
        "trained-mlm:size=tiny,max_steps=40": "trained-mlm", "trained-clm:size=tiny,max_steps=40": "trained-clm"}
    assert distinct_specs(["mask-predict:steps=4", "clm-infill"])["mask-predict:steps=4"] == "mask-predict:steps=4"
    assert distinct_specs(["trained-mlm:size=tiny"]) == {"trained-mlm:size=tiny": "trained-mlm:size=tiny"}
