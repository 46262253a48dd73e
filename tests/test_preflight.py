"""Every model checked for the role it plays, and every tracker setting tried, before the run (issue 60, item 3):
gen-ppl's judge must be a model folder of a causal LM (the check hf-clm makes), tracker settings their library would
refuse stop the run at prepare, each in one line with exit 2 and no run folder made. Also: gen-ppl says why it has no
value, and the trackers' comparison lines say which documents they are about."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlmh.cli import main
from mlmh.components import ScoringItem
from mlmh.errors import ModelError, SpecError
from mlmh.registry import get_registry
from mlmh.testing import build_tiny_model, build_tokenizer


@pytest.fixture(scope="module")
def roformer_mlm(tmp_path_factory) -> Path:
    """A tiny RoFormerForMaskedLM (the masked LM mlmh trains) with its tokenizer."""
    from transformers import RoFormerConfig, RoFormerForMaskedLM

    out = tmp_path_factory.mktemp("roformer-mlm")
    tokenizer = build_tokenizer(out)
    config = RoFormerConfig(vocab_size=len(tokenizer), embedding_size=32, hidden_size=32, num_hidden_layers=1,
                            num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                            pad_token_id=tokenizer.pad_token_id)
    RoFormerForMaskedLM(config).save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def t5_folder(tmp_path_factory) -> Path:
    """A folder whose config is a T5 (an encoder-decoder), with tokenizer files: the check reads no weights."""
    from transformers import T5Config

    out = tmp_path_factory.mktemp("t5")
    build_tokenizer(out)
    config = T5Config(vocab_size=64, d_model=16, d_kv=8, d_ff=32, num_layers=1, num_heads=2)
    config.architectures = ["T5ForConditionalGeneration"]
    config.save_pretrained(out)
    return out


def eval_refused(args: list[str], tmp_path: Path, capsys) -> str:
    """``mlmh eval --preset quick ARGS`` into tmp_path/run: exits 2 with one line, and makes no run folder."""
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "quick", "--limit", "2", "--output-path", str(out), *args])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and "Error:" in err, err
    assert not out.exists()
    return err


@pytest.mark.parametrize("judge, said", [
    ("roformer", "RoFormerForMaskedLM checkpoint, trained as mlm, loaded as clm: it never learned to predict the next"),
    ("t5", "T5ForConditionalGeneration checkpoint, trained as seq2seq, not a causal LM"),
    ("/nonexistent/judge", "model directory /nonexistent/judge does not exist"),
    ("/dev/null", "/dev/null is not a directory"),
    ("tmp", "is not a model directory (no config.json)"),
])
def test_a_judge_that_is_not_a_causal_lm_folder_stops_the_run_before_any_work(judge, said, roformer_mlm, t5_folder,
                                                                                tmp_path, capsys):
    path = {"roformer": str(roformer_mlm), "t5": str(t5_folder), "tmp": str(tmp_path)}.get(judge, judge)
    err = eval_refused(["--metric", f"gen-ppl:path={path}"], tmp_path, capsys)
    assert err.startswith(f"Error: --metric gen-ppl:path={path}: its judge") and said in err, err


def test_the_judge_is_checked_where_it_loads_too(roformer_mlm, tiny_clm):
    """``mlmh score`` and a run's scoring load the judge through one function, which makes the same check."""
    from mlmh_builtins.metrics_ppl import load_reference_lm

    with pytest.raises(ModelError, match="RoFormerForMaskedLM checkpoint, trained as mlm"):
        load_reference_lm(str(roformer_mlm))
    metric = get_registry().build("metric", f"gen-ppl:path={roformer_mlm},precision=float32")
    with pytest.raises(ModelError, match="never learned to predict the next word"):
        metric.score([ScoringItem("the cat sat", "the cat sat")])
    get_registry().build("metric", f"gen-ppl:path={tiny_clm}").preflight()  # a causal LM passes


def test_a_judge_with_no_token_to_predict_says_why(tiny_clm):
    with pytest.raises(SpecError, match="max_tokens=1 leaves no word to score"):
        get_registry().build("metric", f"gen-ppl:path={tiny_clm},max_tokens=1")
    metric = get_registry().build("metric", f"gen-ppl:path={tiny_clm},precision=float32")
    for result in metric.score([ScoringItem("", ""), ScoringItem("", "")]):
        assert result.value is None and "no text had a token to predict" in (result.error or ""), result


@pytest.mark.parametrize("tracker, said", [
    ("wandb:project=../../x", "--tracker wandb:project=../../x: the project name holds /; W&B takes names"),
    ("wandb:entity=a:b", "the entity name holds :"),
    ("wandb:mode=online", "mode=online needs a W&B API key: run `wandb login` or set WANDB_API_KEY"),
    ("tensorboard:log_dir=/dev/null", "--tracker tensorboard:log_dir=/dev/null: log_dir /dev/null is not a folder"),
    ("tensorboard:log_dir={file}/x", "{file}, on its way, is not a folder"),
    ("mlflow:tracking_uri=file://{file}/x", "tracking_uri {file}/x: {file}, on its way, is not a folder"),
    ("mlflow:tracking_uri=sqlite:///{file}/x.db", "tracking_uri {file} is not a folder"),
    ("mlflow:tracking_uri=sqlite:///{tmp}", "is a folder, not a SQLite database file"),
])
def test_tracker_settings_their_library_refuses_stop_the_run_at_prepare(tracker, said, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("NETRC", str(tmp_path / "no-netrc"))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    planted = tmp_path / "notes.txt"
    planted.write_text("mine\n")
    fill = {"file": str(planted), "tmp": str(tmp_path)}
    err = eval_refused(["--tracker", tracker.format(**fill)], tmp_path, capsys)
    assert said.format(**fill) in err, err
    assert planted.read_text() == "mine\n"


def test_an_api_key_lets_online_wandb_through(tmp_path, monkeypatch):
    from mlmh_builtins.trackers_wandb import has_api_key

    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    netrc = tmp_path / "netrc"
    monkeypatch.setenv("NETRC", str(netrc))
    assert not has_api_key()
    netrc.write_text("machine api.wandb.ai\n  login user\n  password " + "k" * 40 + "\n")
    netrc.chmod(0o600)
    assert has_api_key()
    get_registry().build("tracker", "wandb:mode=online").preflight()
    get_registry().build("tracker", f"mlflow:tracking_uri=sqlite:///{tmp_path}/new/../m.db").preflight()
    get_registry().build("tracker", f"tensorboard:log_dir={tmp_path}/new/tb").preflight()


def test_a_plugin_s_own_check_is_asked_through_the_public_api(tmp_path, monkeypatch):
    """preflight() is a method any component may define; one that raises anything else is named too."""
    from mlmh.config.plan import build_plan
    from mlmh.config.presets import resolve

    plan = build_plan(resolve("quick", {"limit": 2}))
    monkeypatch.setattr(type(plan.metrics[0]), "preflight", lambda self: 1 / 0, raising=False)
    with pytest.raises(SpecError, match=r"key 'metrics' .*: its check failed: .*ZeroDivisionError"):
        plan.require_ready()


def test_the_trackers_comparison_lines_name_their_documents():
    from mlmh.findings.comparisons import judged
    from mlmh.tracking import comparison_statements
    from mlmh.types import RunResults

    fixture = Path(__file__).parent / "fixtures" / "results_fixture_run.json"
    results = judged(RunResults.from_dict(json.loads(fixture.read_text(encoding="utf-8"))))
    verdicts = results.comparisons.verdicts()
    lines = comparison_statements(results.comparisons)
    for (kind, item), line in zip(verdicts, lines, strict=True):
        if kind in ("kinds", "baselines"):
            assert line == f"{item.role} documents: {item.statement}"
        if kind == "correlations":
            assert line == f"seen documents' regenerations (the synthetic corpus): {item.statement}"
    # the same sentence on both sets, told apart only by the set each line names
    assert len(set(lines)) == len(lines) > len({item.statement for _, item in verdicts})
