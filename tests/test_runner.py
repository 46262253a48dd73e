"""The runner's bookkeeping on fast fake components: grid, events, notes, cache, cancel, batch size."""

from __future__ import annotations

import threading

import pytest

import runner_fakes
from mlmh.config.plan import build_plan
from mlmh.config.presets import from_table
from mlmh.data.selection import select_documents
from mlmh.errors import RunCancelled, SpecError
from mlmh.events import Message, Progress, RunFinished, RunStarted, SampleGenerated, StageFinished, StageStarted
from mlmh.run.results import strip_timings
from mlmh.run.runner import run_experiment


@pytest.fixture(autouse=True)
def fakes():
    runner_fakes.install()


def config(**overrides):
    return from_table({**runner_fakes.FAKE_PRESET, **overrides}, name="fake", source="fake.toml")


def run(tmp_path, name="run", listener=None, **kwargs):
    kwargs.setdefault("cache_path", tmp_path / "cache.sqlite")
    cfg = kwargs.pop("cfg", None) or config()
    return run_experiment(build_plan(cfg), listener, output_path=tmp_path / name, **kwargs).to_dict()


def n_docs(results):
    """Documents regenerated per condition: the seen (train) and the unseen (test) sets."""
    return sum(role["documents"] for role in results["documents"].values())


def test_grid_skips_samplers_that_do_not_fit_the_model(tmp_path):
    events = []
    results = run(tmp_path, listener=events.append)
    ids = [c["id"] for c in results["conditions"]]
    assert len(ids) == 3 * 2 + 3 * 1  # mlm: 3 maskings x 2 samplers; clm: 3 maskings x clm sampler
    assert not any("fake-clm-fill" in i and i.startswith("fake-mlm") for i in ids)
    notes = " ".join(results["notes"])
    assert "fake-mlm: skipped sampler(s) fake-clm-fill (they do not drive mlm models)" in notes
    assert "fake-clm: skipped sampler(s) fake-fill, fake-fill:steps=4 (they do not drive clm models)" in notes
    assert "task author-task skipped" in notes
    assert any(isinstance(e, Message) and "bundled sample" in e.text for e in events)


def test_events_come_in_stage_order(tmp_path):
    events = []
    results = run(tmp_path, listener=events.append)
    assert isinstance(events[0], RunStarted) and events[0].n_conditions == 9
    assert isinstance(events[-1], RunFinished) and events[-1].results is not None
    started = [e.stage for e in events if isinstance(e, StageStarted)]
    assert started == ["data", "models", "mask", "generate", "metrics", "downstream", "correlation", "report"]
    finished = [e.stage for e in events if isinstance(e, StageFinished)]
    assert finished == started
    samples = [e for e in events if isinstance(e, SampleGenerated)]
    assert len(samples) == 9 * n_docs(results) and all(e.generation.doc_id for e in samples)
    training = [e for e in events if isinstance(e, Progress) and e.stage == "train"]
    assert training and training[-1].info["loss"] == pytest.approx(1 / 3)
    generate = [e for e in events if isinstance(e, Progress) and e.stage == "generate"]
    assert generate[-1].completed == generate[-1].total == 9 * n_docs(results)


def test_results_have_the_documented_shape(tmp_path):
    results = run(tmp_path)
    assert {"config", "versions", "n_samples", "conditions", "baseline", "correlations", "notes"} <= set(results)
    assert results["documents"]["seen"]["documents"] == 8 and results["documents"]["unseen"]["documents"] > 0
    assert results["n_samples"] == n_docs(results) and results["versions"]["mlmh"]
    from mlmh.types import RunResults

    assert RunResults.from_dict(results).to_dict() == results  # the typed value is the whole schema
    row = results["conditions"][0]
    assert {"id", "model", "model_kind", "masking", "masking_ratio", "sampler", "seed", "metrics", "downstream",
            "generation"} <= set(row)
    assert row["masking_ratio"] == 0.3 and row["model_kind"] == "mlm"
    match = row["metrics"]["word-match"]
    assert {"value", "ci_low", "ci_high", "higher_is_better"} <= set(match) and match["ci_low"] <= match["value"]
    assert results["documents"]["seen"]["documents"] == 8 and results["documents"]["unseen"]["documents"] == 4
    assert row["generation"]["forward_passes"] == 12 and row["generation"]["samples"] == 12
    for role in ("seen", "unseen"):
        assert {"documents", "metrics", "verbatim_recall", "filler"} <= set(row[role])
    assert row["metrics"] == row["unseen"]["metrics"] and results["headline"] == "unseen"
    assert "word-match" in row["gap"] and "verbatim_recall" in row["gap"]
    assert "label-task" in results["baseline"] and "label-task" in row["downstream"]
    steps = {r["sampler"]: r.get("steps") for r in results["conditions"]}
    assert steps["fake-fill:steps=4"] == 4
    out = tmp_path / "run"
    for name in ("results.json", "report.md", "generations.jsonl", "config.json"):
        assert (out / name).is_file(), name
    assert not (out / "samples.jsonl").exists()


def test_log_samples_writes_traces_and_per_sample_metrics(tmp_path):
    import json

    results = run(tmp_path, cfg=config(log_samples=True))
    lines = [json.loads(x) for x in (tmp_path / "run" / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 9 * n_docs(results)
    first = next(line for line in lines if line["role"] == "unseen")
    assert {"condition", "generation", "metrics"} <= set(first)
    assert first["generation"]["original"] and "word-match" in first["metrics"]


def test_higher_masking_ratio_lowers_word_match(tmp_path):
    results = run(tmp_path)
    mlm = {r["masking_ratio"]: r["metrics"]["word-match"]["value"] for r in results["conditions"]
           if r["sampler"] == "fake-fill" and r["model"] == "fake-mlm"}
    assert mlm[0.3] > mlm[0.6] > mlm[0.9]


def test_second_run_reuses_the_cache_and_gives_the_same_results(tmp_path):
    first = run(tmp_path, "a")
    events = []
    second = run(tmp_path, "b", listener=events.append)
    assert not [e for e in events if isinstance(e, SampleGenerated)]
    assert strip_timings(first) | {"run_id": 0} == strip_timings(second) | {"run_id": 0}


def test_results_do_not_depend_on_batch_size(tmp_path):
    one = run(tmp_path, "a", cfg=config(batch_size=1), use_cache=False, cache_path=None)
    five = run(tmp_path, "b", cfg=config(batch_size=5), use_cache=False, cache_path=None)
    normalise = lambda r: {**strip_timings(r), "run_id": 0, "config": 0}  # noqa: E731
    assert normalise(one) == normalise(five)
    assert (tmp_path / "a" / "samples.sqlite").is_file()  # --no-cache: private cache inside the run


def test_cancel_then_resume_matches_an_uninterrupted_run(tmp_path):
    reference = run(tmp_path, "ref", use_cache=False, cache_path=None)
    cancel = threading.Event()
    seen = []

    def stop_after_some(event):
        if isinstance(event, SampleGenerated):
            seen.append(event)
            if len(seen) == 20:
                cancel.set()

    with pytest.raises(RunCancelled, match="--resume"):
        run(tmp_path, "cut", listener=stop_after_some, cancel=cancel, use_cache=False, cache_path=None)
    assert not (tmp_path / "cut" / "results.json").exists()
    events = []
    resumed = run(tmp_path, "cut", listener=events.append, resume=True, use_cache=False, cache_path=None)
    regenerated = [e for e in events if isinstance(e, SampleGenerated)]
    assert 0 < len(regenerated) <= 9 * n_docs(reference) - 16  # at least two finished batches were kept
    assert {**strip_timings(resumed), "run_id": 0} == {**strip_timings(reference), "run_id": 0}


def test_resume_refuses_a_changed_configuration(tmp_path):
    run(tmp_path, "a", cfg=config(limit=4))
    (tmp_path / "a" / "results.json").unlink()
    with pytest.raises(SpecError, match="changed: limit"):
        run(tmp_path, "a", cfg=config(limit=5), resume=True)


def test_existing_run_directory_is_not_overwritten(tmp_path):
    run(tmp_path, "a", cfg=config(limit=2))
    with pytest.raises(SpecError, match="already holds a run"):
        run(tmp_path, "a", cfg=config(limit=2))
    with pytest.raises(SpecError, match="no interrupted run"):
        run(tmp_path, "fresh", resume=True)


def test_no_fitting_sampler_is_a_spec_error(tmp_path):
    with pytest.raises(SpecError, match="no condition left"):
        run(tmp_path, cfg=config(models=["fake-clm"], samplers=["fake-fill"]))


def test_selection_takes_a_fraction_and_is_stable():
    corpus = runner_fakes.FakeData().load(None)
    assert len(select_documents(corpus, 0)) == 12
    assert len(select_documents(corpus, 0.5)) == 6
    assert [d.id for d in select_documents(corpus, 5)] == [d.id for d in select_documents(corpus, 5)]
    assert all(d.split == "train" for d in select_documents(corpus, 5))


def test_the_note_on_cut_documents_gives_the_window_in_tokens_and_how_to_widen_it(tmp_path):
    """A model whose window holds 6 of each document's 12 words: every document is cut, and the note says
    the window in tokens, whose it is, and how a trained or pretrained model gets a longer one."""
    from types import SimpleNamespace

    from mlmh import hookimpl
    from mlmh.plugins.plugin_manager import get_plugin_manager

    class Windowed(runner_fakes.FakeAdapter):
        max_length = 6

        def encode_batch(self, pairs):
            return [SimpleNamespace(truncated_tokens=max(0, len(words) - 6), word_of=list(range(min(6, len(words)))))
                    for words, _ in pairs]

    class WindowedMLM(runner_fakes.FakeMLM):
        name = "windowed-mlm"

        def load(self, context):
            return Windowed("mlm")

    class Plugin:
        @hookimpl
        def register_models(self, register):
            register(WindowedMLM())

    if get_plugin_manager().get_plugin("windowed-model") is None:
        get_plugin_manager().register(Plugin(), name="windowed-model")
    results = run(tmp_path, cfg=config(models=["windowed-mlm"], maskings=["every-nth:ratio=0.5"],
                                       samplers=["fake-fill"], tasks=[], limit=2))
    (note,) = [n for n in results["notes"] if "unseen documents were cut" in n]
    assert note.startswith("2 of 2 unseen documents were cut after the last word that fits every model's window "
                           "(6 tokens, the window of windowed-mlm; a trained-* model's grows with seq_len=N")
    assert all(row["unseen"]["documents"] == 2 for row in results["conditions"])
