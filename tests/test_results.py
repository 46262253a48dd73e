"""The typed results (mlmh.types.RunResults): the JSON round trip, old and newer schemas, and the report's
seen/unseen findings drawn from them."""

from __future__ import annotations

import pytest

from mlmh.findings.comparisons import baselines, disagreements, judged, memorisation
from mlmh.report.markdown import render_markdown
from mlmh.types import RESULTS_SCHEMA, RunResults


def score(value, half=1.0, **extra):
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "higher_is_better": True, **extra}


def gap(seen, unseen, half):
    value = seen - unseen
    return {"value": value, "ci_low": value - half, "ci_high": value + half, "significant": abs(value) > half}


def condition(kind, ratio, seen, unseen):
    model = f"trained-{kind}"
    masking = f"random:ratio={ratio}"
    sampler = "mask-predict:steps=4" if kind == "mlm" else "clm-infill"
    role = lambda v: {"documents": 10, "scored": 10, "metrics": {"bleu": score(v)},  # noqa: E731
                      "verbatim_recall": score(v / 100, 0.01), "filler": {"bleu": score(20.0)},
                      "deletion": {"bleu": score(31.0)}}
    return {"id": f"{model} | {masking} | {sampler} | seed=0", "model": model, "model_kind": kind, "masking": masking,
            "masking_ratio": ratio, "sampler": sampler, "seed": 0, "seen": role(seen), "unseen": role(unseen),
            "gap": {"bleu": gap(seen, unseen, 2.0)}, "metrics": {"bleu": score(unseen)}, "downstream": {},
            "generation": {"samples": 20}}


@pytest.fixture
def results():
    """The CLM recites its training text (wins on seen), the MLM wins on unseen documents."""
    rows = [condition("mlm", 0.5, 36.0, 34.0), condition("clm", 0.5, 76.0, 30.0),
            condition("mlm", 0.8, 20.0, 22.0), condition("clm", 0.8, 56.0, 18.0)]
    card = {"objective": "clm", "budget": "tokens", "tokens_seen": 1024000, "steps_run": 500, "step_kept": 100,
            "validation_loss": 8.0, "final_loss": 0.69, "stopped_early": True,
            "accuracy_at_ratio": {"0.5": {"accuracy": 0.3, "unigram_baseline_accuracy": 0.05, "targets": 100}},
            "train_curve": [{"step": s, "loss": 5.0 / s ** 0.3} for s in range(50, 501, 50)],
            "validation_curve": [{"step": s, "loss": 8.0 + (s - 100) / 200} for s in range(50, 501, 50)]}
    return {"schema_version": RESULTS_SCHEMA, "run_id": "r", "config": {"preset": "t", "seeds": [0]},
            # documents without groups: the unseen ones are drawn as control documents would be (memorisation judged)
            "dataset": {"name": "pan", "source": "official files", "grouped": False}, "headline": "unseen",
            "filler_word": "the",
            "documents": {"seen": {"split": "train", "documents": 10}, "unseen": {"split": "test", "documents": 10}},
            "n_samples": 20, "conditions": rows, "models": {"trained-clm": {"model_kind": "clm", "training": card}},
            "errors": [{"component": "metric 'boom'", "during": "scoring", "error": "RuntimeError: no"}],
            "timings": {"total": 12.5}}


def test_json_round_trip_is_lossless(results):
    typed = RunResults.from_dict(results)
    again = RunResults.from_dict(typed.to_dict())
    assert again == typed
    assert typed.conditions[1].gap["bleu"].extra["significant"] is True
    assert typed.conditions[0].value("bleu", "seen") == 36.0 and typed.conditions[0].value("bleu") == 34.0


def test_every_block_is_typed_and_writes_back_the_keys_it_read(results):
    """A file read and written again (``mlmh human import``) keeps every key of its blocks, a newer writer's too,
    and adds none; each block reads as its type."""
    from mlmh.types import (Correlation, Crossover, DatasetInfo, DocumentSet, HumanRatings, HumanScore, ModelRecord,
                            RunError, Score, SweepPoint)

    results = {**results, "versions": {"mlmh": "9", "torch": "2", "plugins": {"mine": None}},
               "correlations": [{"metric": "bleu", "task": "ner", "score": "f1", "n": 3, "spearman": None,
                                 "summary": "not enough conditions", "kendall": 0.1}],
               "human": {"criteria": ["coherence"], "n_raters": 2, "agreement": {"coherence": None}, "conditions": {
                   "c": {"coherence": {"value": 4.0, "ci_low": 3.0, "ci_high": 5.0, "n": 6, "higher_is_better": True}}}},
               "crossover": {"points": [{"unique_tokens": 1000, "epochs": 2.0, "objective": "mlm", "validation_loss": 4.5,
                                         "unseen": {"bleu": score(30.0)}, "filler": {}, "deletion": {}, "later": True}],
                             "metrics": ["bleu"], "crossovers": [], "answer": "No sweep.", "new": 1}}
    results["models"]["trained-clm"]["future_fact"] = [1, 2]
    typed = RunResults.from_dict(results)
    written = typed.to_dict()
    assert {k: written[k] for k in results if k != "conditions"} == {k: v for k, v in results.items() if k != "conditions"}
    assert isinstance(typed.dataset, DatasetInfo) and typed.dataset.name == "pan"
    assert isinstance(typed.documents["seen"], DocumentSet) and typed.documents["unseen"].split == "test"
    model = typed.models["trained-clm"]
    assert isinstance(model, ModelRecord) and model.training["objective"] == "clm" and model.extra == {"future_fact": [1, 2]}
    assert typed.errors == [RunError("metric 'boom'", "scoring", "RuntimeError: no")]
    assert isinstance(typed.correlations[0], Correlation) and typed.correlations[0].extra == {"kendall": 0.1}
    assert typed.versions.libraries == {"mlmh": "9", "torch": "2"} and typed.versions.plugins == {"mine": None}
    assert isinstance(typed.human, HumanRatings) and typed.human.n_raters == 2
    assert typed.human.conditions["c"]["coherence"] == HumanScore(4.0, 3.0, 5.0, n=6)
    assert isinstance(typed.crossover, Crossover) and typed.crossover.answer == "No sweep."
    (point,) = typed.crossover.points
    assert isinstance(point, SweepPoint) and point.validation_loss == 4.5 and point.extra == {"later": True}
    assert isinstance(point.unseen["bleu"], Score) and point.unseen["bleu"].ci_low == 29.0


def test_schema_1_reads_as_seen_only_and_a_newer_schema_is_refused(results):
    old = {"run_id": "o", "config": {}, "n_samples": 4, "conditions": [
        {"id": "a", "model": "m", "model_kind": "mlm", "masking": "random", "sampler": "s", "seed": 0,
         "metrics": {"bleu": score(10.0)}}]}
    typed = RunResults.from_dict(old)
    assert typed.headline == "seen" and typed.conditions[0].value("bleu", "seen") == 10.0
    with pytest.raises(ValueError, match="newer"):
        RunResults.from_dict({**results, "schema_version": RESULTS_SCHEMA + 1})


def test_the_report_leads_with_unseen_and_says_where_seen_disagrees(results):
    for row in results["conditions"]:  # every condition beats both baselines, so only memorization is a caveat
        for role in ("seen", "unseen"):
            row[role]["filler"]["bleu"], row[role]["deletion"]["bleu"] = score(12.0), score(15.0)
    typed = judged(results)
    text = render_markdown(typed, [])
    assert text.index("on unseen documents") < text.index("on seen documents")
    (found,) = disagreements(typed)
    line = found.statement
    # the CLM's seen lead is its memorization (gap outside the CI), so it wins nothing there
    assert "on unseen documents MLM beats CLM, but on seen documents CLM ahead of MLM (not comparable)" in line
    assert "12 s in all" in text and "metric 'boom'" in text


def test_memorization_is_flagged_only_where_the_gap_ci_excludes_zero(results):
    lines = [m.statement for m in memorisation(RunResults.from_dict(results))]
    clm = next(line for line in lines if line.startswith("trained-clm "))
    mlm = next(line for line in lines if line.startswith("trained-mlm:"))
    assert "flagged as memorization" in clm and "2 of 2" in clm and "verbatim: 76.0% seen, 30.0% unseen" in clm
    assert "no seen - unseen gap of bleu outside its CI" in mlm


def test_filler_and_training_card_are_reported(results):
    typed = judged(results)
    first, second = [b.statement for b in baselines(typed)[:2]]
    assert first.startswith("bleu, random:ratio=0.5: the best condition (trained-mlm / mask-predict:steps=4) scores 34.00")
    assert 'filling every mask with "the" scores 20.00' in first and "deleting the masked words 31.00" in first
    assert "no better than" not in first
    assert "best condition (trained-mlm / mask-predict:steps=4) scores 22.00" in second
    assert "no better than deletion" in second and "no better than the filler" not in second
    text = render_markdown(typed, [])
    assert "## Training" in text and "step kept 100" in text and "budget matched on tokens" in text
    assert "validation loss at the step kept 8.000" in text and "0.5: 0.300 (0.050)" in text
    assert "| 500 |" in text and "stopped early on validation loss" in text


def test_the_reading_example_of_docs_results_runs(results, tmp_path, capsys):
    import json
    import re
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "RESULTS.md").read_text(encoding="utf-8")
    (code,) = re.findall(r"```python\n(.*?)```", doc, re.S)
    (tmp_path / "results.json").write_text(json.dumps(results), encoding="utf-8")
    exec(code.replace("runs/20260101-120000-pan", str(tmp_path)), {})
    assert "trained-clm random:ratio=0.5 30.0 76.0" in capsys.readouterr().out


def test_rows_flatten_each_condition_per_document_set_and_each_finding(results):
    results["findings"] = [{"claim": "paper-1:bleu", "source": "paper", "text": "MLM beats CLM", "verdict": "holds",
                            "statement": "MLM higher.", "statistic": 4.0, "ci_low": 1.0, "ci_high": 7.0,
                            "conditions": ["a", "b"], "caveats": [], "parts": [{"label": "x"}]}]
    typed = RunResults.from_dict(results)
    rows = typed.to_rows()
    assert [(r["condition"], r["role"]) for r in rows["conditions"][:2]] == [(typed.conditions[0].id, "unseen"),
                                                                             (typed.conditions[0].id, "seen")]
    first = rows["conditions"][0]
    assert first["headline"] is True and first["documents"] == 10 and first["masking_ratio"] == 0.5
    assert (first["bleu"], first["bleu_ci_low"], first["bleu_ci_high"]) == (34.0, 33.0, 35.0)
    assert (first["filler_bleu"], first["deletion_bleu"], first["verbatim_recall"]) == (20.0, 31.0, 0.34)
    assert rows["conditions"][1]["bleu"] == 36.0 and len(rows["conditions"]) == 8
    (finding,) = rows["findings"]
    assert finding["verdict"] == "holds" and finding["conditions"] == "a; b" and "parts" not in finding


def test_rows_give_each_comparison_statement_with_its_kind(results):
    """``comparisons``: a row per verdict report.md states, in its order, its kind the verdict's list in results.json,
    its lists joined and a score (a memorisation gap) as its value and CI, as the conditions' metrics."""
    typed = judged(results)
    rows = typed.to_rows()["comparisons"]
    assert [row["statement"] for row in rows] == typed.comparisons.statements() and len(rows) >= 4
    assert {"kinds", "disagreements", "memorisation", "baselines"} <= {row["kind"] for row in rows}
    kind = next(row for row in rows if row["kind"] == "kinds")
    assert kind["kinds"] == "mlm; clm" and kind["role"] in ("unseen", "seen") and isinstance(kind["settings"], int)
    clm = next(row for row in rows if row["kind"] == "memorisation" and row["model"] == "trained-clm")
    gap = typed.comparisons.memorisation[[m.model for m in typed.comparisons.memorisation].index("trained-clm")].gap
    assert (clm["gap"], clm["gap_ci_low"], clm["gap_ci_high"]) == (gap.value, gap.ci_low, gap.ci_high)
    assert all(not isinstance(value, (dict, list)) for row in rows for value in row.values())
    results.pop("conditions")
    assert RunResults.from_dict({**results, "conditions": []}).to_rows()["comparisons"] == []


def test_to_pandas_gives_dataframes_or_says_how_to_get_pandas(results, monkeypatch):
    import sys

    from mlmh.errors import MlmhError

    typed = RunResults.from_dict(results)
    frames = typed.to_pandas()
    conditions = frames["conditions"]
    assert len(conditions) == 8 and conditions.query("role == 'unseen'")["bleu"].tolist() == [34.0, 30.0, 22.0, 18.0]
    assert frames["findings"].empty
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(MlmhError, match=r"^RunResults.to_pandas needs pandas: pip install 'mlmh\[notebook\]'"):
        typed.to_pandas()


def test_the_training_section_names_a_model_by_its_short_spec(results):
    from mlmh.report.markdown import training_section

    full = "trained-clm:batch_size=0,budget=tokens,dataset=,device=auto,size=tiny,max_steps=40"
    results["models"] = {full: {**results["models"]["trained-clm"], "label": "trained-clm:max_steps=40"}}
    lines = training_section(judged(results))
    assert "### trained-clm:max_steps=40" in lines and not [line for line in lines if "batch_size=0" in line]


def test_the_terminal_table_breaks_names_only_between_parameters(results):
    """At 80 columns a long model spec goes on several lines, each a whole piece of it; never folded mid-word."""
    import re

    from rich.console import Console

    from mlmh.commands.eval import break_name, summary_table

    long = "trained-mlm:size=tiny,max_steps=40,mask_schedule=mdlm,init=minilm"
    for row in results["conditions"]:
        row["model"] = long if row["model_kind"] == "mlm" else row["model"]
    console = Console(width=80, record=True, color_system=None)
    console.print(summary_table(RunResults.from_dict(results), console.width))
    cells = [re.split(r"\s*[│┃]\s*", line)[1] for line in console.export_text().splitlines() if line[:1] in "│┃"]
    pieces = ["trained-mlm:", "size=tiny,", "max_steps=40,", "mask_schedule=mdlm,", "init=minilm"]
    lines = [c for c in cells if c and not c.startswith("model")]
    assert "".join(lines[:lines.index("init=minilm") + 1]) == long
    assert all(any(line.startswith(p) or p in line for p in pieces) or line.startswith("trained-clm")
               for line in lines), lines
    assert break_name(long, 200) == long and break_name("x" * 30, 5) == "x" * 30
