"""report.md findings and plots from results.json's data (judged as a reader gets it); `mlmh report` rebuilds
them."""

from __future__ import annotations

import json

import pytest

from mlmh.cli import main
from mlmh.findings.comparisons import judged, kind_cells
from mlmh.report.markdown import render_markdown, write_report
from mlmh.results import best_conditions
from mlmh.types import RunResults

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def entry(value, half=1.0, higher=True):
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "higher_is_better": higher}


def condition(kind, masking, ratio, sampler, bleu, rouge, steps=None, down=None):
    model = {"mlm": "trained-mlm", "clm": "trained-clm"}[kind]
    row = {"id": f"{model} | {masking} | {sampler} | seed=0", "model": model, "model_kind": kind, "masking": masking,
           "sampler": sampler, "seed": 0, "metrics": {"bleu": entry(bleu), "rouge1": entry(rouge, half=0.3),
                                                       "stutter_word": entry(0.1, 0.01, higher=False)},
           "downstream": {"av": {"auc": down}} if down is not None else {}, "generation": {"forward_passes": 1}}
    if ratio is not None:
        row["masking_ratio"] = ratio
    if steps is not None:
        row["steps"] = steps
    return row


@pytest.fixture
def results():
    rows = []
    for ratio, base in ((0.15, 60.0), (0.3, 50.0), (0.5, 40.0), (0.8, 20.0)):
        masking = f"random:ratio={ratio}"
        rows.append(condition("mlm", masking, ratio, "one-shot", base, 0.5, down=0.6 + base / 1000))
        rows.append(condition("mlm", masking, ratio, "mask-predict:steps=4", base + 2, 0.5, steps=4, down=0.7))
        rows.append(condition("mlm", masking, ratio, "mask-predict:steps=10", base + 3, 0.5, steps=10, down=0.71))
        # CLM well below on BLEU (CIs apart), equal within CI on rouge1
        rows.append(condition("clm", masking, ratio, "clm-infill", base - 10, 0.6, down=0.5))
    return {"run_id": "r1", "config": {"preset": "t", "seeds": [0]}, "dataset": {"name": "pan", "source": "x"},
            "n_samples": 8, "conditions": rows, "baseline": {"av": {"auc": 0.8}},
            "correlations": [{"metric": "bleu", "task": "av", "score": "auc", "n": 16, "spearman": 0.71,
                              "spearman_ci": [0.2, 0.9], "pearson": 0.6,
                              "summary": "strong positive correlation (rho=+0.71, 95% CI +0.20..+0.90, n=16)"}], "notes": ["a note"],
            "versions": {"mlmh": "0.1.0"}}


def test_mlm_vs_clm_findings_say_which_wins_and_when_cis_overlap(results):
    text = render_markdown(judged(results), [])
    bleu_line = next(line for line in text.splitlines() if line.startswith("- **bleu**"))
    assert "MLM beats CLM" in bleu_line and "MLM higher in 4 of 4" in bleu_line and "4 with non-overlapping" in bleu_line
    rouge_line = next(line for line in text.splitlines() if line.startswith("- **rouge1**"))
    # CLM higher everywhere, but inside the CIs: no difference established, so a tie
    assert "MLM and CLM tie" in rouge_line and "CLM higher in 4" in rouge_line and "overlapping CIs" in rouge_line


def test_comparison_uses_the_best_mlm_sampler(results):
    cells = kind_cells(RunResults.from_dict(results), "bleu")
    assert all(c.a.sampler == "mask-predict:steps=10" for c in cells)


def test_ratio_trend_and_correlation_in_words(results):
    text = render_markdown(judged(results), [])
    assert "**bleu** as the masking ratio grows" in text and "falls" in text
    assert "bleu vs av auc: strong positive correlation (rho=+0.71" in text and "a note" in text
    assert "| bleu | av auc | 16 | +0.71 | [+0.20, +0.90] | +0.60 |" in text


def test_best_per_column_respects_direction(results):
    results = RunResults.from_dict(results)
    best = best_conditions(results, "bleu")
    assert best == {"trained-mlm | random:ratio=0.15 | mask-predict:steps=10 | seed=0"}
    assert len(best_conditions(results, "stutter_word")) == len(results.conditions)  # all tied


def test_write_report_makes_markdown_and_three_pngs(results, tmp_path):
    path = write_report(judged(results), tmp_path)
    text = path.read_text()
    for name in ("quality_by_masking.png", "quality_vs_steps.png", "quality_vs_downstream.png"):
        assert (tmp_path / name).read_bytes()[:8] == PNG_MAGIC
        assert f"({name})" in text
    assert "| real train split (baseline) |" in text


def test_report_command_rebuilds_from_results_json(results, tmp_path, capsys):
    (tmp_path / "results.json").write_text(json.dumps(results))
    main(["report", str(tmp_path)])
    assert (tmp_path / "report.md").is_file() and "wrote" in capsys.readouterr().out


def test_report_command_on_a_missing_run_exits_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["report", str(tmp_path / "nowhere")])
    assert exit_info.value.code == 2 and "does not exist" in capsys.readouterr().err
