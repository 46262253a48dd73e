"""``mlmh bench --training``: training tokens per CPU-second per kind, float32 against bf16 autocast, timed on the
steps alone. Micro shapes here; the figures of the paper preset's shapes are in docs/PERFORMANCE.md."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mlmh.bench import training
from mlmh.cli import cli

MICRO = dict(hidden=32, layers=2, heads=2, ffn=64, encoder_layers=1, decoder_layers=1, seq_len=24, batch_size=4,
             vocab_size=120)


def test_each_kind_is_timed_in_both_precisions_on_its_steps_alone(monkeypatch, tmp_path):
    monkeypatch.setattr(training, "STARTS", {"micro": MICRO})
    calls = []
    real = training.time_training

    def counted(kind, start, precision, *args, **kwargs):
        calls.append((kind, precision))
        return real(kind, start, precision, *args, **kwargs)

    monkeypatch.setattr(training, "time_training", counted)
    report = training.run_training_bench(kinds=("clm", "seq2seq"), starts=("micro",), steps=5, rounds=2)
    # interleaved: float32, bf16, then bf16, float32, so that a change in load hits both alike
    assert calls == [("clm", "float32"), ("clm", "bf16"), ("clm", "bf16"), ("clm", "float32"),
                     ("seq2seq", "float32"), ("seq2seq", "bf16"), ("seq2seq", "bf16"), ("seq2seq", "float32")]
    rows = report["training"]
    assert [(r["start"], r["kind"]) for r in rows] == [("micro", "clm"), ("micro", "seq2seq")]
    for row in rows:
        rate = row["tokens_per_cpu_second"]
        assert rate["float32"] > 0 and rate["bf16"] > 0 and row["steps_timed"] == 3
        assert row["bf16_gain"] == round(rate["bf16"] / rate["float32"], 3)
    assert {"cpu", "kernels", "reference_cpu_seconds"} <= set(report["machine"]) and isinstance(report["bf16_units"], bool)


def test_training_and_preset_are_one_or_the_other(tmp_path):
    result = CliRunner().invoke(cli, ["bench", "--training", "--preset", "pan"])
    assert result.exit_code != 0 and "--preset and --training: give one of them" in str(result.exception)


def test_the_cli_prints_a_table_and_writes_its_report(monkeypatch, tmp_path):
    monkeypatch.setattr(training, "STARTS", {"micro": MICRO})
    monkeypatch.setattr(training, "KINDS", ("clm",))
    monkeypatch.setattr(training, "STEPS", 4)
    monkeypatch.setattr(training, "ROUNDS", 1)
    monkeypatch.setattr(training.run_training_bench, "__defaults__", (("clm",), ("micro",), 4, 1, None))
    out = tmp_path / "training.json"
    result = CliRunner().invoke(cli, ["bench", "--training", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "tokens per CPU-second" in result.output and "bf16 / float32" in result.output
    assert json.loads(out.read_text())["training"][0]["kind"] == "clm"
