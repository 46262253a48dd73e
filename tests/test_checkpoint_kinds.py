"""A checkpoint loaded as another kind than it was built for (mlmh.adapters.checkpoint_kinds): refused in one line
where its head cannot generate that way (a masked LM as hf-clm), a note where it can, silence where the kinds
agree."""

from __future__ import annotations

import pytest
from cli_helpers import run_cli
from paper_families import KINDS

from mlmh.adapters import load_adapter
from mlmh.errors import ModelError

TEXT = "The cat sat on the mat and looked at the door."


@pytest.mark.parametrize("family", ["bert", "roberta"])
def test_a_masked_lm_as_hf_clm_is_refused_in_one_line(family, paper_families, capsys):
    path = paper_families[family]
    code, out, err = run_cli(capsys, "generate", "--model", f"hf-clm:path={path}", "--text", TEXT)
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert code != 0 and len(errors) == 1 and not out, err
    assert "ForMaskedLM checkpoint, trained as mlm, loaded as clm: it never learned to predict the next word" in errors[0]
    assert "load it as hf-mlm" in errors[0] and "Traceback" not in err


@pytest.mark.parametrize("kind", ["clm", "mlm"])
def test_a_seq2seq_checkpoint_as_another_kind_generates_with_a_note(kind, paper_families, capsys):
    code, out, err = run_cli(capsys, "generate", "--model", f"hf-{kind}:path={paper_families['bart']}", "--text", TEXT,
                             "--masking", "random:ratio=0.3", "--json")
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert code == 0 and out, err
    assert any(f"BartForConditionalGeneration checkpoint, trained as seq2seq, loaded as {kind}" in n
               and "hf-seq2seq uses the checkpoint as trained" in n for n in notes), err


@pytest.mark.parametrize("family", list(KINDS))
def test_a_checkpoint_loaded_as_built_has_no_note(family, paper_families):
    for defer in (False, True):
        assert load_adapter(KINDS[family], paper_families[family], defer_weights=defer).notes == []


def test_the_refusal_comes_before_any_weights_are_read(paper_families, tmp_path):
    """A masked LM whose weights file is damaged is still refused for what it is, not for its weights."""
    import shutil

    broken = tmp_path / "bert"
    shutil.copytree(paper_families["bert"], broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not weights")
    with pytest.raises(ModelError, match="trained as mlm, loaded as clm"):
        load_adapter("clm", broken)
