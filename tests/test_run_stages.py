"""Each stage of a run (:mod:`mlmh.run`) called as a function, without a Runner: tiny inputs from the runner's
fake components, a :class:`RunContext` whose bus records the events, and the stage's value checked."""

from __future__ import annotations

import threading
import time
from contextlib import closing
from types import SimpleNamespace

import pytest

import fault_fakes
import runner_fakes
from mlmh.config.plan import RunPlan, build_plan
from mlmh.config.presets import from_table
from mlmh.data import splits
from mlmh.data.selection import subcorpus
from mlmh.errors import MlmhError, RunCancelled
from mlmh.events import EventBus, Message, Progress, SampleGenerated, StageStarted
from mlmh.generation import prepare_items
from mlmh.report.markdown import render_markdown
from mlmh.run import results as results_module
from mlmh.run.context import RunContext, RunLog
from mlmh.run.correlate import correlate
from mlmh.run.data import RunData, load_data
from mlmh.run.downstream import REAL_TRAIN, run_tasks
from mlmh.run.files import write_run
from mlmh.run.generate import generate
from mlmh.run.mask import Masked, mask_documents
from mlmh.run.models import LoadedModel, load_models
from mlmh.run.results import build_results
from mlmh.run.score import score
from mlmh.storage.cache import SampleCache
from mlmh.storage.rundir import RunDir
from mlmh.types import Corpus, Document, RoleQuality, RunResults, Score, Versions

#: two models, one masking, a sampler for each, one metric and one task, two documents of each set
TINY = {**runner_fakes.FAKE_PRESET, "maskings": ["every-nth:ratio=0.5"], "samplers": ["fake-fill", "fake-clm-fill"],
        "tasks": ["label-task"], "limit": 2}
MASKING = ("every-nth:ratio=0.5", 0)


@pytest.fixture(autouse=True)
def fakes():
    fault_fakes.install()


def tiny_plan(**overrides) -> RunPlan:
    return build_plan(from_table({**TINY, **overrides}, name="tiny", source="tiny.toml"))


def context() -> tuple[RunContext, list]:
    events: list = []
    return RunContext(EventBus(events.append, plugins=False), threading.Event(), "mlmh eval --resume"), events


def corpus_of(texts: dict[str, tuple[str, str]]) -> Corpus:
    """``{doc id: (split, text)}`` as a corpus."""
    return Corpus(dataset="tiny", source="the test", documents=[Document(id=i, text=t, split=s, labels=["x"])
                                                                 for i, (s, t) in texts.items()])


def data_of(corpus: Corpus) -> RunData:
    documents = {"seen": corpus.split("train"), "unseen": corpus.split("test")}
    return RunData(corpus=corpus, documents=documents,
                   role_of={d.id: role for role, docs in documents.items() for d in docs},
                   headline="unseen", test=subcorpus(corpus, corpus.split("test")))


def loaded(plan: RunPlan) -> dict[str, LoadedModel]:
    return {m.spec: LoadedModel(m, f"{m.spec}@test", runner_fakes.FakeAdapter(m.model_kind)) for m in plan.models}


def masked_of(plan: RunPlan, data: RunData) -> Masked:
    every = [d for docs in data.documents.values() for d in docs]
    return Masked(documents=data.documents, cut={"seen": 0, "unseen": 0}, train=subcorpus(data.corpus, data.documents["seen"]),
                  items={(m.spec, seed): prepare_items(every, m, seed) for m in plan.maskings for seed in plan.config.seeds})


TEXTS = {"a": ("train", "alpha beta gamma delta epsilon zeta."), "b": ("train", "eta theta iota kappa lambda mu."),
         "c": ("test", "beta delta zeta theta kappa mu."), "d": ("test", "alpha gamma epsilon eta iota lambda.")}


def test_data_loads_the_corpus_and_picks_each_set():
    plan, (ctx, events) = tiny_plan(tasks=["label-task", "author-task"]), context()
    data = load_data(plan, ctx)
    assert [len(data.documents[role]) for role in ("seen", "unseen")] == [2, 2]
    assert data.headline == "unseen" and data.test.documents == data.corpus.split("test")
    assert {data.role_of[d.id] for d in data.documents["unseen"]} == {"unseen"}
    assert any("bundled sample" in n for n in ctx.log.notes)
    assert [t.name for t in plan.tasks] == ["label-task"]  # the plan's check ran on the corpus, and said so
    assert "task author-task skipped" in " ".join(ctx.log.notes)
    assert [type(e) for e in events if not isinstance(e, Message)] == [StageStarted, Progress]


def test_data_says_when_train_documents_repeat_a_text(monkeypatch):
    repeated = corpus_of({**TEXTS, "a2": ("train", TEXTS["a"][1])})  # PAN puts one text in several pairs
    monkeypatch.setattr(RunPlan, "load_corpus", lambda self: repeated)
    ctx, _ = context()
    load_data(tiny_plan(), ctx)
    assert "1 train document(s) repeat the text of another" in " ".join(ctx.log.notes)
    monkeypatch.setattr(RunPlan, "load_corpus", lambda self: corpus_of(TEXTS))
    ctx, _ = context()
    load_data(tiny_plan(), ctx)
    assert "repeat the text" not in " ".join(ctx.log.notes)


def test_data_names_the_plugin_of_a_dataset_that_fails_to_load(monkeypatch):
    monkeypatch.setenv("MLMH_TEST_FAULT", "dataset")
    with pytest.raises(MlmhError, match=r"dataset 'faulty-data' \(plugin fault-fakes\) failed to load"):
        load_data(tiny_plan(dataset="faulty-data"), context()[0])


def test_models_loads_each_model_and_fails_only_the_conditions_of_one_that_breaks(monkeypatch):
    monkeypatch.setenv("MLMH_TEST_FAULT", "model")
    plan, (ctx, events) = tiny_plan(models=["faulty-mlm", "fake-clm"]), context()
    models = load_models(plan, corpus_of(TEXTS), ctx)
    assert list(models) == ["fake-clm"] and models["fake-clm"].adapter.kind == "clm"
    assert set(ctx.log.failed) == {c.id for c in plan.conditions if c.model.spec == "faulty-mlm"}
    assert ctx.log.errors[0].component == "model 'faulty-mlm' (plugin fault-fakes)"
    assert any(isinstance(e, Progress) and e.stage == "train" for e in events)  # training progress is forwarded


def test_models_stops_when_the_run_is_cancelled():
    plan, (ctx, _) = tiny_plan(), context()
    ctx.cancel.set()
    with pytest.raises(RunCancelled, match="resume with: mlmh eval --resume"):
        load_models(plan, corpus_of(TEXTS), ctx)


def test_mask_cuts_documents_to_the_narrowest_window_then_masks_every_set():
    class Windowed(runner_fakes.FakeAdapter):
        max_length = 3

        def encode_batch(self, pairs):
            return [SimpleNamespace(truncated_tokens=max(0, len(words) - 3), word_of=list(range(min(3, len(words)))))
                    for words, _ in pairs]

    plan, (ctx, _) = tiny_plan(), context()
    models = {m.spec: LoadedModel(m, "test", Windowed(m.model_kind)) for m in plan.models}
    masked = mask_documents(plan, data_of(corpus_of(TEXTS)), models, ctx)
    assert dict(masked.cut) == {"seen": 2, "unseen": 2}
    assert [d.text for d in masked.documents["seen"]] == ["alpha beta gamma", "eta theta iota"]
    assert [d.text for d in masked.train.documents] == ["alpha beta gamma", "eta theta iota"]
    (items,) = masked.items.values()
    assert [i.doc_id for i in items] == ["a", "b", "c", "d"] and items[0].words.text == "alpha beta gamma"
    assert any("(3 tokens, the window of fake-mlm" in n for n in ctx.log.notes)


def test_mask_fails_the_conditions_of_a_masking_that_breaks(monkeypatch):
    monkeypatch.setenv("MLMH_TEST_FAULT", "masking")
    plan, (ctx, _) = tiny_plan(maskings=["faulty-masking:ratio=0.5", "every-nth:ratio=0.5"]), context()
    masked = mask_documents(plan, data_of(corpus_of(TEXTS)), loaded(plan), ctx)
    assert masked.items[("faulty-masking:ratio=0.5", 0)] == [] and len(masked.items[MASKING]) == 4
    assert set(ctx.log.failed) == {c.id for c in plan.conditions if c.masking.name == "faulty-masking"}


def test_generate_regenerates_each_condition_and_caches_every_sample(tmp_path):
    plan = tiny_plan()
    data = data_of(corpus_of(TEXTS))
    masked, models = masked_of(plan, data), loaded(plan)
    with closing(SampleCache(tmp_path / "cache.sqlite")) as cache:
        ctx, events = context()
        first = generate(plan, masked.items, models, cache, None, ctx)
        assert set(first) == {c.id for c in plan.conditions}
        assert all([g.doc_id for g in gens] == ["a", "b", "c", "d"] for gens in first.values())
        assert ctx.log.generated and sum(isinstance(e, SampleGenerated) for e in events) == 4 * len(plan.conditions)
        again, events = context()
        assert generate(plan, masked.items, models, cache, None, again) == first
        assert not again.log.generated and not any(isinstance(e, SampleGenerated) for e in events)
        assert [e.info for e in events if isinstance(e, Progress)] == [{"cached": 4 * len(plan.conditions)}]


def _generated(tmp_path):
    """The tiny plan, its data, masked documents and generations: the inputs of the stages after generate."""
    plan = tiny_plan()
    data = data_of(corpus_of(TEXTS))
    masked = masked_of(plan, data)
    with closing(SampleCache(tmp_path / "generations.sqlite")) as cache:
        return plan, data, masked, generate(plan, masked.items, loaded(plan), cache, None, context()[0])


def test_score_gives_each_set_its_quality_beside_the_baselines(tmp_path):
    plan, data, masked, generations = _generated(tmp_path)
    with closing(SampleCache(tmp_path / "cache.sqlite")) as cache:
        ctx, events = context()
        scores = score(plan, data, masked, generations, cache, ctx)
    assert scores.filler_word and set(scores.quality) == {c.id for c in plan.conditions}
    for by_role in scores.quality.values():
        assert set(by_role) == {"seen", "unseen"} and by_role["unseen"].documents == 2
        assert "word-match" in by_role["unseen"].metrics and "word-match" in by_role["unseen"].filler
        assert by_role["unseen"].verbatim_recall is not None
        for role in by_role.values():  # the paired difference to each baseline, per document
            for name in ("filler", "deletion"):
                paired, own, baseline = (getattr(role, f"above_{name}")["word-match"], role.metrics["word-match"],
                                         getattr(role, name)["word-match"])
                assert paired.extra["documents"] == role.scored == 2
                assert abs(paired.value - (own.value - baseline.value)) < 1e-9  # a mean over documents: same weights
    assert set(scores.baselines) == {(name, *MASKING) for name in ("filler", "deletion")}
    assert all(len(results[0].per_sample) == 2 for results in scores.headline.values())  # the unseen set's
    progress = [e for e in events if isinstance(e, Progress)]
    assert progress[-1].completed == progress[-1].total == (len(plan.conditions) + 2) * 2


def test_downstream_trains_each_task_on_the_real_and_each_synthetic_corpus(tmp_path):
    plan, data, masked, generations = _generated(tmp_path)
    with closing(SampleCache(tmp_path / "cache.sqlite")) as cache:
        tasks = run_tasks(plan, data, masked.train, generations, cache, context()[0])
        assert set(tasks.baseline) == {"label-task"} and set(tasks.conditions) == set(generations)
        assert all(set(scores) == {"label-task"} for scores in tasks.conditions.values())
        no_test = RunData(data.corpus, data.documents, data.role_of, "seen", subcorpus(data.corpus, []))
        ctx, _ = context()
        skipped = run_tasks(plan, no_test, masked.train, generations, cache, ctx)
    assert not skipped.baseline and not skipped.conditions
    assert "downstream skipped: dataset tiny has no test split" in ctx.log.notes
    assert REAL_TRAIN == "real train split"


def test_correlate_relates_seen_quality_to_downstream_scores_when_a_task_scored():
    plan, (ctx, _) = tiny_plan(), context()
    quality = {c.id: {"seen": RoleQuality(documents=2, scored=2, metrics={"word-match": Score(value=0.1 * n)})}
               for n, c in enumerate(plan.conditions)}
    downstream = {c.id: {"label-task": {"vocab": float(n)}} for n, c in enumerate(plan.conditions)}
    (found,) = correlate(plan.conditions, quality, downstream, 0, ctx)
    assert (found.metric, found.task, found.n) == ("word-match", "label-task", len(plan.conditions))
    assert correlate(plan.conditions, quality, {}, 0, ctx) == []


def _every_stage(tmp_path, **overrides):
    """The stage functions one after another, as the runner calls them: (plan, data, every stage's value)."""
    plan, (ctx, _) = tiny_plan(**overrides), context()
    data = load_data(plan, ctx)
    models = load_models(plan, data.corpus, ctx)
    masked = mask_documents(plan, data, models, ctx)
    with closing(SampleCache(tmp_path / "cache.sqlite")) as cache:
        generations = generate(plan, masked.items, models, cache, None, ctx)
        scores = score(plan, data, masked, generations, cache, ctx)
        tasks = run_tasks(plan, data, masked.train, generations, cache, ctx)
    correlations = correlate(ctx.running(plan.conditions), scores.quality, tasks.conditions, 0, ctx)
    made = dict(data=data, models=models, masked=masked, generations=generations, scores=scores, tasks=tasks,
                correlations=correlations)
    return plan, ctx.log, made


def test_build_results_is_a_pure_function_of_the_stages_values(tmp_path):
    plan, log, made = _every_stage(tmp_path)
    before = log.copy()
    args = dict(run_id="tiny", log=log, started=0.0, versions=Versions(libraries={"mlmh": "test"}), **made)
    built = build_results(plan, **args)
    assert built.said == () and log == before
    assert built.results.to_dict() == build_results(plan, **args).results.to_dict()
    assert built.results.started_at == "1970-01-01T00:00:00+00:00" and built.results.versions.libraries == {"mlmh": "test"}
    assert [row.id for row in built.results.conditions] == [c.id for c in plan.conditions]
    assert built.results.documents["unseen"].ids == [d.id for d in made["masked"].documents["unseen"]]
    assert built.results.notes == log.notes and built.results.findings


def test_a_run_with_control_documents_scores_them_and_judges_memorisation_on_the_seen_control_gap(tmp_path,
                                                                                                 small_controls):
    plan, log, made = _every_stage(tmp_path, control=2)
    results = build_results(plan, run_id="tiny", log=log, started=0.0, versions=Versions(), **made).results
    assert results.documents["control"].documents == 2 and results.documents["control"].split == "control"
    row = results.conditions[0]
    assert row.control is not None and row.control.documents == 2
    assert set(row.control_gap) == {*row.gap_above_filler, "verbatim_recall"}
    report = render_markdown(results, [])
    assert "### Seen - control gap" in report and "Memorization (seen - control gap" in report
    assert "### On control documents (train authors' texts held out of training" in report
    assert all("control" in m.statement for m in results.comparisons.memorisation)
    assert "control: 2 documents" in report  # the answer's grounds name the set
    plain, plain_log, plain_made = _every_stage(tmp_path / "plain")
    without = build_results(plain, run_id="tiny", log=plain_log, started=0.0, versions=Versions(), **plain_made).results
    assert "control" not in without.documents and not without.conditions[0].control_gap
    assert "### Seen - unseen gap" in render_markdown(without, [])


def _built_with_a_failing_step(tmp_path, monkeypatch, step: str, error: str):
    """(the stages' log, the results built) with ``step`` (a function :mod:`mlmh.run.results` calls) raising ``error``."""
    plan, log, made = _every_stage(tmp_path)

    def broken(*args, **kwargs):
        raise ZeroDivisionError(error)

    monkeypatch.setattr(results_module, step, broken)
    return log, build_results(plan, run_id="tiny", log=log, started=0.0, versions=Versions(), **made)


def test_build_results_returns_what_a_failed_step_says_and_keeps_the_other_results(tmp_path, monkeypatch):
    log, built = _built_with_a_failing_step(tmp_path, monkeypatch, "run_findings", "no claims today")
    (said,) = built.said
    assert isinstance(said, Message) and said.level == "warning"
    assert said.text == "findings failed (results): ZeroDivisionError: no claims today"
    assert built.results.findings == [] and built.results.errors[-1].component == "findings"
    assert built.results.notes[-1] == said.text
    assert built.results.conditions and not any(e.component == "findings" for e in log.errors)
    answer = render_markdown(built.results, []).split("## Answer")[1].split("\n## ")[0]
    assert "No claim was decided: the findings step failed (results: ZeroDivisionError: no claims today)" in answer


def test_a_failed_crossover_is_named_in_the_errors_the_notes_and_report_md(tmp_path, monkeypatch):
    _, built = _built_with_a_failing_step(tmp_path, monkeypatch, "summarise", "no sweep today")
    failed = "crossover failed (results): ZeroDivisionError: no sweep today"
    (said,) = built.said
    assert (said.level, said.text) == ("warning", failed)
    results = built.results
    assert results.crossover is None and results.findings and results.notes[-1] == failed
    assert (results.errors[-1].component, results.errors[-1].during) == ("crossover", "results")
    report = render_markdown(results, [])
    assert "- **crossover** (results): ZeroDivisionError: no sweep today" in report
    assert "Not computed: the crossover step failed (results: ZeroDivisionError: no sweep today)" in report
    assert f"- {failed}" in report.split("## Notes")[1]


def test_write_run_writes_every_file_and_results_last(tmp_path):
    plan, log, made = _every_stage(tmp_path)
    results: RunResults = build_results(plan, run_id="tiny", log=log, started=time.time(), versions=Versions(),
                                        **made).results
    run = RunDir(tmp_path / "run")
    write_run(run, results, plan.conditions, made["generations"], made["data"].role_of, made["scores"].headline,
              log_samples=True)
    assert run.read_results().to_dict() == results.to_dict()
    written = {p.name: p.stat().st_mtime_ns for p in run.path.iterdir()}
    assert {"generations.jsonl", "samples.jsonl", "report.md", "results.json"} <= set(written)
    assert written["results.json"] >= max(written.values())
    rows = run.read_generations()
    assert len(rows) == 4 * len(plan.conditions) and rows[0].sample == "1:" + rows[0].doc_id
    assert {s.role for s in run.read_samples()} == {"seen", "unseen"}


def test_a_stage_sees_only_what_it_is_given():
    """The context carries the bus, the cancel event and the log: no stage's values."""
    fields = set(RunContext.__dataclass_fields__)
    assert fields == {"bus", "cancel", "resume_hint", "log"}
    assert set(RunLog.__dataclass_fields__) == {"notes", "errors", "failed", "timings", "generated"}


@pytest.fixture
def small_controls(monkeypatch):
    """Control sets of a document or two (a run holds none under CONTROL_MIN): the fake dataset has 12 train documents."""
    monkeypatch.setattr(splits, "CONTROL_MIN", 1)


def test_data_regenerates_the_control_documents_the_run_holds_out_of_training(small_controls):
    plan, (ctx, _) = tiny_plan(control=1), context()
    data = load_data(plan, ctx)
    control = data.documents["control"]
    assert len(control) == 1 and data.role_of[control[0].id] == "control"
    assert control[0].text not in data.corpus.texts("train")  # what every trained-* recipe learns and hashes
    assert "control split: 1 of" in " ".join(ctx.log.notes)
    assert load_data(tiny_plan(), context()[0]).documents["control"] == []
