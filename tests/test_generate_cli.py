"""``mlmh generate`` end to end on tiny models: output, JSON, traces, datasets and one-line errors."""

from __future__ import annotations

import json

import pytest
from cli_helpers import run_cli

TEXT = "The cat sat on the mat and looked at the door."


def test_generate_prints_masked_input_steps_and_result(capsys, tiny_mlm):
    code, out, err = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tiny_mlm},threads=1", "--masking",
                             "random:ratio=0.5", "--sampler", "mask-predict:steps=3", "--text", TEXT, "--trace",
                             "--seed", "4")
    assert code == 0, err
    assert "masked:" in out and "[MASK]" in out
    assert out.count("step ") == 3 and "generated:" in out
    assert "3 forward passes" in out


def test_generate_json_is_a_generation(capsys, tiny_clm):
    code, out, err = run_cli(capsys, "generate", "--model", f"hf-clm:path={tiny_clm},threads=1", "--masking",
                             "random:ratio=0.3", "--text", TEXT, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["model_kind"] == "clm" and data["sampler"].startswith("clm-infill")
    assert data["original"] == TEXT and data["forward_passes"] == data["generated_tokens"]
    assert len(data["steps"]) == data["generated_tokens"]
    from mlmh.types import Generation, from_dict

    assert from_dict(Generation, data).output_words.keys() == {int(k) for k in data["output_words"]}


def test_generate_same_seed_same_output(capsys, tiny_mlm):
    args = ("--model", f"hf-mlm:path={tiny_mlm},threads=1", "--masking", "random:ratio=0.5", "--sampler",
            "one-shot:temperature=1.0", "--text", TEXT, "--json", "--seed", "9")
    first, second = (json.loads(run_cli(capsys, "generate", *args)[1]) for _ in range(2))
    assert first["text"] == second["text"]


def test_generate_on_dataset_documents(capsys, tiny_seq2seq):
    code, out, err = run_cli(capsys, "generate", "--model", f"hf-seq2seq:path={tiny_seq2seq},threads=1", "--masking",
                             "random:ratio=0.2", "--dataset", "pan", "--limit", "2", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert len(data) == 2 and all(g["model_kind"] == "seq2seq" for g in data)


def test_empty_text_is_refused_naming_the_flag_and_the_argument(capsys, tiny_mlm):
    """An empty --text (an unset shell variable) is refused like every empty value (issue 41), in both faces."""
    import mlmh
    from mlmh.errors import SpecError

    code, out, err = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tiny_mlm}", "--text", "", "--json")
    assert code == 2 and "--text '': empty" in err and not out
    with pytest.raises(SpecError, match="^text ' ': empty"):
        mlmh.generate(" ", model=f"hf-mlm:path={tiny_mlm}")


def test_ratio_zero_leaves_the_text_unchanged(capsys, tiny_mlm):
    code, out, _ = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tiny_mlm}", "--masking", "random:ratio=0",
                           "--text", TEXT, "--json")
    assert code == 0 and json.loads(out)["text"] == TEXT


def test_too_long_text_is_cut_to_the_window_before_masking(capsys, tiny_mlm):
    """As a run does: every masked word is then one the model writes (none kept beyond the window)."""
    long_text = " ".join([TEXT] * 20)
    code, out, _ = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tiny_mlm}", "--masking", "random:ratio=0.3",
                           "--text", long_text, "--json")
    assert code == 0
    generation = json.loads(out)
    assert "the last that fits the model window of 128 tokens" in generation["info"]["cut_to_window"]
    assert long_text.startswith(generation["original"]) and len(generation["original"]) < len(long_text)
    assert "unfilled_masked_words" not in generation["info"]


@pytest.mark.parametrize("args, code, message", [
    (["--sampler", "mask-predict"], 2, "samplers for clm: clm-infill"),
    (["--masking", "random:ratio=2"], 2, "must be <= 1.0"),
    (["--sampler", "gibs"], 2, "did you mean 'gibbs'"),
])
def test_bad_specs_are_one_line_usage_errors(capsys, tiny_clm, args, code, message):
    got, _, err = run_cli(capsys, "generate", "--model", f"hf-clm:path={tiny_clm}", "--text", TEXT, *args)
    assert got == code and message in err and len(err.strip().splitlines()) == 1


def test_text_or_dataset_is_required(capsys, tiny_mlm):
    code, _, err = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tiny_mlm}")
    assert code == 2 and "exactly one of --text or --dataset" in err


def test_missing_model_is_a_one_line_runtime_error(capsys, tmp_path):
    code, _, err = run_cli(capsys, "generate", "--model", f"hf-mlm:path={tmp_path}", "--text", TEXT)
    assert code == 1 and "not a model directory" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("sampler, diagnostics", [
    ("mdlm:steps=6", ("unmasked_per_step", "steps_without_pass")),
    ("remdm:steps=6", ("unmasked_per_step", "steps_without_pass", "remasked_per_step")),
    ("llada:steps=1,block_length=2", ("blocks", "llada_steps_raised")),
    ("adaptive-gibbs:steps=8", ("gibbs_start", "gibbs_pick")),
])
def test_trace_shows_every_step_and_the_samplers_diagnostics(capsys, tiny_mlm, sampler, diagnostics):
    args = ["--model", f"hf-mlm:path={tiny_mlm},threads=1", "--masking", "random:ratio=0.5", "--sampler", sampler,
            "--text", TEXT, "--seed", "2"]
    code, out, err = run_cli(capsys, "generate", *args, "--json")
    assert code == 0, err
    generation = json.loads(out)
    assert set(diagnostics) <= set(generation["info"]) and generation["steps"]
    code, out, err = run_cli(capsys, "generate", *args, "--trace")
    assert code == 0, err
    lines = out.splitlines()
    assert sum(line.startswith("step ") for line in lines) == len(generation["steps"])
    for key in diagnostics:
        value = generation["info"][key]
        shown = "[" + ", ".join(map(str, value)) + "]" if isinstance(value, list) else str(value)
        assert any(line.startswith(f"{key}: ") for line in lines), (key, out)
        assert shown.replace(" ", "") in out.replace(" ", "").replace("\n", "")
    code, out, err = run_cli(capsys, "generate", *args)  # without --trace: no steps, and only the notes
    assert not any(line.startswith("step ") for line in out.splitlines())
    assert "unmasked_per_step" not in out and "gibbs_pick" not in out
