"""mlmh study: random-effects pooling against a hand-computed example, the verdict across datasets, the study built
from runs' results, and the command end to end on the three bundled samples (resumable, a failing dataset named)."""

from __future__ import annotations

import json
import math

import pytest

from cli_helpers import run_cli
from mlmh.findings.pooling import EVERY, MIXED, NONE, POOLED, UNDECIDED, UNTESTED, Pooled, across, random_effects
from mlmh.types.study import StudyDataset, StudyResults
from mlmh.findings.study import summarise
from mlmh.types import FAILS, HOLDS, INCONCLUSIVE, NOT_TESTED, Finding, RunResults
from mlmh.types.result_blocks import ConfigRecord


def test_random_effects_matches_a_hand_computed_dersimonian_laird_example():
    # y = (1.0, 3.0, -0.5), se = (0.5, 0.8, 0.6), by hand:
    #   w = 1/se^2 = (4, 1.5625, 2.7778); sum 8.3403; fixed mean = 7.2986 / 8.3403 = 0.87510
    #   Q = 4(0.1249)^2 + 1.5625(2.1249)^2 + 2.7778(-1.3751)^2 = 0.0624 + 7.0550 + 5.2525 = 12.3699
    #   C = 8.3403 - (16 + 2.4414 + 7.7160) / 8.3403 = 5.2040; tau^2 = (12.3699 - 2) / 5.2040 = 1.99268
    #   I^2 = (12.3699 - 2) / 12.3699 = 0.8383
    #   w* = 1/(se^2 + tau^2) = (0.44590, 0.37984, 0.42504); sum 1.25078; mu = 1.37290 / 1.25078 = 1.09763
    #   Hartung-Knapp: sum w*(y - mu)^2 / (k - 1) = 2.46377 / 2 = 1.23189 (> 1, kept); se = sqrt(1.23189 / 1.25078)
    #   = 0.99242; t(0.975, 2) = 4.30265; interval 1.09763 +- 4.27006
    found = random_effects([1.0, 3.0, -0.5], [0.5, 0.8, 0.6])
    assert found.k == 3
    assert found.q == pytest.approx(12.3699, abs=1e-3)
    assert found.tau2 == pytest.approx(1.99268, abs=1e-4)
    assert found.i2 == pytest.approx(0.8383, abs=1e-4)
    assert found.value == pytest.approx(1.09763, abs=1e-4)
    assert found.se == pytest.approx(0.99242, abs=1e-4)
    assert (found.low, found.high) == pytest.approx((1.09763 - 4.27006, 1.09763 + 4.27006), abs=1e-3)


def test_homogeneous_datasets_have_no_heterogeneity_and_the_interval_is_never_narrower_than_dersimonian_lairds():
    found = random_effects([0.1, 0.3, 0.35], [0.1, 0.15, 0.2])  # Q = 1.99 < k - 1: tau^2 = 0, I^2 = 0
    assert found.tau2 == 0 and found.i2 == 0
    w = [1 / 0.1 ** 2, 1 / 0.15 ** 2, 1 / 0.2 ** 2]
    assert found.se == pytest.approx(math.sqrt(1 / sum(w)))  # the spread is below 1: DerSimonian-Laird's variance


def test_pooling_refuses_what_cannot_be_weighted():
    with pytest.raises(ValueError, match="at least 2"):
        random_effects([1.0], [0.5])
    with pytest.raises(ValueError, match="positive"):
        random_effects([1.0, 2.0], [0.5, 0.0])


def _pooled(low: float, high: float) -> Pooled:
    return Pooled((low + high) / 2, low, high, 1.0, 0.0, 0.0, 0.0, 3)


@pytest.mark.parametrize(("verdicts", "pooled", "expected"), [
    ([HOLDS, HOLDS, HOLDS], None, EVERY),
    ([FAILS, FAILS], None, NONE),
    ([HOLDS, INCONCLUSIVE, HOLDS], _pooled(0.2, 1.0), POOLED),
    ([HOLDS, FAILS, INCONCLUSIVE], _pooled(-1.0, 1.0), MIXED),
    ([HOLDS, INCONCLUSIVE, NOT_TESTED], _pooled(-1.0, 1.0), UNDECIDED),
    ([NOT_TESTED, "not comparable"], None, UNTESTED),
    ([HOLDS, NOT_TESTED], None, UNDECIDED),  # "every dataset" means every one, the untested too
])
def test_the_verdict_across_datasets(verdicts, pooled, expected):
    assert across(verdicts, pooled) == expected


def _results(dataset: str, value: float, se: float, verdict: str) -> RunResults:
    low, high = value - 2 * se, value + 2 * se
    claim = Finding("paper-1:bleu", "arXiv 2405.12630", "(1) MLM beats CLM on bleu", verdict, "s", value, low, high,
                    extra={"estimate": {"what": "every MLM arm minus every CLM arm", "value": value, "se": se,
                                        "df": 31}})
    other = Finding("paper-5", "arXiv 2405.12630", "(5) useful at high masking", NOT_TESTED, "no task")
    return RunResults(run_id=dataset, config=ConfigRecord(preset="paper", dataset=dataset), conditions=[],
                      findings=[claim, other])


def test_a_study_pools_claim_one_from_each_datasets_estimate_and_sets_the_other_claims_side_by_side():
    runs = {"pan": _results("pan", 1.0, 0.5, HOLDS), "mpst": _results("mpst", 3.0, 0.8, HOLDS),
            "mimic": _results("mimic", -0.5, 0.6, INCONCLUSIVE)}
    datasets = [StudyDataset(label, label, None, label) for label in runs]
    study = summarise("paper", datasets, runs)
    first = study.claim("paper-1:bleu")
    assert [v.verdict for v in first.datasets.values()] == [HOLDS, HOLDS, INCONCLUSIVE]
    assert first.pooled["value"] == pytest.approx(random_effects([1.0, 3.0, -0.5], [0.5, 0.8, 0.6]).value)
    assert first.across == UNDECIDED  # the pooled interval covers 0 and one dataset is inconclusive
    assert "tau^2 1.99" in first.statement and "I^2 84%" in first.statement
    assert study.claim("paper-5").pooled is None and study.claim("paper-5").across == UNTESTED
    again = StudyResults.from_dict(json.loads(json.dumps(study.to_dict())))
    assert again == study


TINY = """
description = "the paper's setting, tiny, for tests"
dataset = "pan"
models = ["trained-mlm:size=tiny,max_steps=2", "trained-clm:size=tiny,max_steps=2"]
maskings = ["random:ratio=0.15", "random:ratio=0.5"]
samplers = ["mask-predict:steps=2", "clm-infill"]
metrics = ["bleu", "bertscore"]
tasks = ["authorship-verification", "text-classification", "ner"]
seeds = [0]
limit = 2
control = 0
"""


@pytest.mark.slow
def test_mlmh_study_runs_official_files_and_bundled_samples_resumes_and_names_a_failing_dataset(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from mlmh_builtins import metrics_bertscore

    monkeypatch.setattr(metrics_bertscore, "_ENCODERS", {})
    built = []
    encoder = metrics_bertscore.Encoder
    monkeypatch.setattr(metrics_bertscore, "Encoder", lambda *a: built.append(a) or encoder(*a))
    from realdata import pan_dir

    preset = tmp_path / "tiny.toml"
    preset.write_text(TINY, encoding="utf-8")
    out = tmp_path / "study"
    pan = pan_dir(tmp_path, n_authors=4)  # official-format files of real prose
    args = ["study", "--preset", str(preset), "--data", f"pan={pan}", "--data", "mpst", "--data", "mimic",
            "--output-path", str(out)]
    code, stdout, stderr = run_cli(capsys, *args)
    assert code == 0, stderr
    import mlmh

    study = mlmh.load_study(out)
    assert [d.label for d in study.results.datasets] == ["pan", "mpst", "mimic"]
    assert [d.data for d in study.results.datasets] == [str(pan), None, None]
    tasks = {label: list(study.run(label).results.baseline) for label in ("pan", "mpst", "mimic")}
    assert tasks == {"pan": ["authorship-verification"], "mpst": ["text-classification"], "mimic": ["ner"]}
    assert {c.claim for c in study.results.claims} >= {"paper-1:bleu", "paper-2", "paper-5"}
    report = (out / "study.md").read_text(encoding="utf-8")
    assert "| claim | pan | mpst | mimic | across datasets |" in report
    assert "(1) MLM beats CLM on bleu" in stdout
    assert len(built) == 1  # one BERTScore encoder for the whole study: its runs share the process
    # again: every run is read back, nothing runs
    code, stdout, stderr = run_cli(capsys, *args)
    assert code == 0 and " ".join(stderr.split()).count("read back from") == 3
    # the same folder asked for another experiment: refused per dataset, naming what differs, nothing overwritten
    code, stdout, stderr = run_cli(capsys, *args, "--limit", "3")
    assert code == 1 and "differs in limit" in stderr
    assert mlmh.load_study(out).results == study.results
    # a dataset whose files are bad is named; the others complete and the study is written; exit 1
    bad = tmp_path / "nothing-here"
    args = ["study", "--preset", str(preset), "--data", "pan", "--data", f"mpst={bad}", "--data", "mimic",
            "--output-path", str(tmp_path / "second")]
    code, stdout, stderr = run_cli(capsys, *args)
    assert code == 1 and "mpst" in stderr and str(bad) in stderr
    assert (tmp_path / "second" / "study.json").is_file()


@pytest.mark.parametrize(("args", "needle"), [
    (["--data", "pan"], "at least two datasets"),
    (["--data", "pan", "--data", "nosuch"], "'nosuch' is no dataset"),
    (["--data", "pan", "--data", "pan=x"], "named twice"),
    (["--data", "pan", "--data", "mpst="], "no files after '='"),
])
def test_bad_study_arguments_are_one_line(capsys, args, needle):
    code, _, stderr = run_cli(capsys, "study", *args)
    assert code == 2 and needle in stderr and len(stderr.strip().splitlines()) == 1


def _simulated(effect: float, tau: float, runs: int, seed: int = 0) -> tuple[float, float]:
    """(share of "holds" across datasets, share of pooled intervals above 0) over simulated three-dataset studies:
    each dataset's true effect drawn around ``effect`` with sd ``tau``, measured on 32 documents of sd 3, its own
    verdict by its t interval, as a run decides it."""
    import numpy as np

    from mlmh.findings.verdicts import verdict
    from mlmh.stats import t_interval

    rng = np.random.default_rng(seed)
    holds = above = 0
    for _ in range(runs):
        found = [t_interval(list(rng.normal(rng.normal(effect, tau), 3.0, 32))) for _ in range(3)]
        pooled = random_effects([f.value for f in found], [f.se for f in found])
        holds += across([verdict(f.low, f.high, +1) for f in found], pooled) in (EVERY, POOLED)
        above += pooled.low > 0
    return holds / runs, above / runs


def test_the_verdict_across_datasets_keeps_its_rate_under_a_null_and_finds_a_real_effect():
    # nominal: one-sided 2.5%; 1,000 studies give a Monte-Carlo sd of 0.5 points at that rate
    assert _simulated(0.0, 0.0, 1000)[0] <= 0.025  # no dataset has an effect
    for tau in (1.0, 2.0, 4.0):  # datasets differ, their mean effect is 0: the pooled interval keeps its rate
        assert _simulated(0.0, tau, 1000)[1] <= 0.035, tau
    assert _simulated(2.0, 0.0, 200, seed=1)[0] >= 0.8  # +2 on 32 documents of sd 3, on three datasets


@pytest.mark.parametrize(("edit", "key"), [
    (lambda d: d.update(claims="none"), "claims"),
    (lambda d: d["datasets"].append(dict(d["datasets"][0])), "datasets"),
    (lambda d: d["claims"][0]["datasets"]["pan"].update(verdict="maybe"), "verdict"),
])
def test_a_bad_study_file_is_one_line_naming_the_file_and_the_key(tmp_path, edit, key):
    import mlmh
    from mlmh.errors import DataError
    from mlmh.report.study import render_study
    from mlmh.storage.study import write_study

    runs = {"pan": _results("pan", 1.0, 0.5, HOLDS), "mpst": _results("mpst", 3.0, 0.8, HOLDS)}
    study = summarise("paper", [StudyDataset(label, label, None, label) for label in runs], runs)
    write_study(tmp_path, study, render_study(study))
    data = json.loads((tmp_path / "study.json").read_text(encoding="utf-8"))
    edit(data)
    (tmp_path / "study.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataError) as info:
        mlmh.load_study(tmp_path)
    assert str(tmp_path / "study.json") in str(info.value) and key in str(info.value)
    assert "\n" not in str(info.value)
