"""Playground driven with Pilot on tiny models: pick options, run, step through the traces."""

from __future__ import annotations

import os
import threading

import pytest

from mlmh.tui import create_app
from mlmh.tui.screens.playground import PlaygroundScreen
from mlmh.tui.widgets.token_view import MASK_GLYPH
from mlmh.tui.widgets.trace_view import TraceView

pytestmark = pytest.mark.anyio

TEXT = "The cat sat on the mat and looked at the door, again and again."


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def specs(tiny_mlm, tiny_clm):
    return [f"hf-mlm:path={tiny_mlm}", f"hf-clm:path={tiny_clm}"]


async def until(pilot, condition, timeout: float = 10.0) -> bool:
    """Let the app handle its messages until ``condition()`` holds (a loaded machine is slow)."""
    import time

    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        await pilot.pause(0.02)
    return condition()


async def wait_for_traces(pilot, screen: PlaygroundScreen, timeout: float = 180.0) -> list[TraceView]:
    """Until both sides have a generation (the worker posts them) or the run failed."""
    import time

    deadline = time.monotonic() + timeout
    traces = list(screen.query(TraceView))
    while time.monotonic() < deadline:
        await pilot.pause(0.05)
        if all(t.generation is not None for t in traces) and not screen.query_one("#pg-run").disabled:
            return traces
    raise AssertionError(f"no generations within {timeout}s: {[t.status for t in traces]}")


async def test_playground_runs_mlm_and_clm_on_the_same_masked_input_and_steps_through(specs):
    app = create_app(models=specs, text=TEXT)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        assert isinstance(screen, PlaygroundScreen)
        traces = await wait_for_traces(pilot, screen)
        mlm, clm = (t.generation for t in traces)
        assert (mlm.model_kind, clm.model_kind) == ("mlm", "clm")
        assert mlm.sampler.startswith("mask-predict") and clm.sampler.startswith("clm-infill")
        assert mlm.masked_words == clm.masked_words and mlm.masked_words  # same MaskPlan
        assert mlm.masked_text == clm.masked_text
        for trace in traces:
            assert trace.frames and trace.frames[0].masked
            assert "passes" in str(trace.query_one(".trace-stats").render())

        # stepping through both traces together
        await pilot.press("end")
        assert not screen.playing and all(t.at_end for t in traces)
        last = [t.index for t in traces]
        await pilot.press("left")
        assert [t.index for t in traces] == [max(0, i - 1) for i in last]
        await pilot.press("home")
        assert [t.index for t in traces] == [0, 0]
        assert MASK_GLYPH in str(traces[0].query_one(".token-view").render())
        await pilot.press("right")
        assert [t.index for t in traces] == [min(1, t.last) for t in traces]
        speed = screen.speed_index
        await pilot.press("plus")
        assert screen.speed_index == speed + 1
        await pilot.press("minus", "minus")
        assert screen.speed_index == speed - 1
        before = [t.index for t in traces]
        await pilot.press("space")
        assert screen.playing
        await pilot.pause(1.5)  # 2 steps/s: the animation moves on by itself
        assert [t.index for t in traces] != before
        await pilot.press("space")
        assert not screen.playing


async def test_choosing_masking_ratio_and_sampler_changes_the_run(specs):
    app = create_app(models=specs, text=TEXT, autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.query_one("#pg-masking").value = "stopwords"
        stopwords_has_ratio = "ratio" in [p.name for p in _masking("stopwords").parameters]
        assert await until(pilot, lambda: screen.query_one("#pg-ratio").disabled != stopwords_has_ratio)
        screen.query_one("#pg-masking").value = "random"
        screen.query_one("#pg-ratio").value = "0.5"
        screen.query_one("#pg-sampler-0").value = "one-shot"
        assert await until(pilot, lambda: screen.masking_spec() == "random:ratio=0.5")
        await pilot.press("ctrl+r")
        traces = await wait_for_traces(pilot, screen)
        assert traces[0].generation.sampler.startswith("one-shot")
        assert traces[0].generation.masking.startswith("random") and "ratio=0.5" in traces[0].generation.masking


async def test_unknown_model_leaves_no_sampler_and_refuses_to_run(specs):
    app = create_app(models=specs, text=TEXT, autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        screen.query_one("#pg-model-1").value = "hf-clmm"
        assert await until(pilot, lambda: not screen.query_one("#pg-sampler-1")._options[1:])  # only the blank entry
        await pilot.press("ctrl+r")
        await pilot.pause()
        traces = list(screen.query(TraceView))
        assert all(t.generation is None for t in traces)
        assert "model 2: unknown model 'hf-clmm'; did you mean 'hf-clm'?" in str(traces[1].query_one(".token-view").render())


def _masking(name: str):
    from mlmh.registry import get_registry

    return get_registry().get("masking", name)


async def test_question_mark_lists_the_keys_and_q_quits():
    app = create_app(models=["hf-mlm:path=x", "hf-clm:path=y"], autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        from mlmh.tui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        actions = {action for _, action in app.screen.rows}
        assert {"Play/pause", "Back", "Forward", "Faster", "New mask", "Quit"} <= actions
        await pilot.press("escape")
        assert isinstance(app.screen, PlaygroundScreen)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code == 0


async def test_dataset_documents_join_the_examples():
    app = create_app(models=["hf-mlm:path=x", "hf-clm:path=y"], autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        select = screen.query_one("#pg-example")
        for _ in range(100):
            await pilot.pause(0.05)
            if len(select._options) > 4:
                break
        labels = [str(label) for label, _ in select._options]
        assert any(label.startswith("pan ") for label in labels), labels
        value = select._options[-1][1]
        select.value = value
        assert await until(pilot, lambda: screen.query_one("#pg-text").value == value)


def test_example_excerpt_ends_at_a_sentence():
    from mlmh.tui.screens.playground import example_excerpt

    text = "First sentence here. " * 40
    excerpt = example_excerpt(text, limit=100)
    assert excerpt.endswith("here.") and len(excerpt) <= 100
    assert example_excerpt("short  text\n") == "short text"
    assert example_excerpt("x" * 300, limit=100) == "x" * 100


async def test_a_third_party_masking_is_offered_and_used(specs):
    """The example plugin registers 'every-nth' through the public hooks; the playground lists and runs it."""
    import importlib
    import sys
    from pathlib import Path

    from mlmh.plugins.plugin_manager import get_plugin_manager
    from mlmh.registry import reset

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "mlmh-example-plugin"))
    try:
        plugin = importlib.import_module("mlmh_example_plugin")
    finally:
        sys.path.pop(0)
    get_plugin_manager().register(plugin, name="mlmh-example-plugin")
    reset()
    app = create_app(models=specs, text=TEXT, autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        masking = screen.query_one("#pg-masking")
        assert "every-nth" in [value for _, value in masking._options]
        masking.value = "every-nth"
        assert await until(pilot, lambda: screen.query_one("#pg-ratio").disabled)  # every-nth has no ratio parameter
        await pilot.press("ctrl+r")
        traces = await wait_for_traces(pilot, screen)
        assert traces[0].generation.masking.startswith("every-nth")
        # 16 words (the comma and the full stop are words): every third from the first
        assert traces[0].generation.masked_words == [0, 3, 6, 9, 12, 15]


async def test_help_lists_both_quit_keys_and_every_screen_key():
    app = create_app(models=["hf-mlm:path=x", "hf-clm:path=y"], autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("question_mark")
        rows = app.screen.rows
        assert ("q", "Quit") in rows and ("f2", "Run") in rows and ("^r", "Run") in rows


class _AnyModelSampler:
    """A plugin whose sampler declares no model kinds: it fits every model (mlmh.config.plan.fits)."""

    from mlmh import hookimpl

    @hookimpl
    def register_samplers(self, register):
        from mlmh.components import Sampler

        class Echo(Sampler):
            name = "echo-any"
            description = "declares no model kinds"

        register(Echo())


async def test_sampler_choices_follow_the_plan_rules(monkeypatch):
    """The playground offers what mlmh.config.plan.fits allows and preselects mlmh.config.plan.default_sampler: the sampler
    that declares itself the default for the pane's model kind."""
    from mlmh.plugins.plugin_manager import get_plugin_manager
    from mlmh.registry import get_registry, reset

    get_plugin_manager().register(_AnyModelSampler(), name="any-model-sampler")
    reset()
    for name, kinds in (("mask-predict", frozenset()), ("one-shot", frozenset({"mlm"}))):
        monkeypatch.setattr(type(get_registry().get("sampler", name)), "default_for", kinds)
    app = create_app(models=["hf-mlm:path=x", "hf-clm:path=y"], autorun=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        selects = [screen.query_one(f"#pg-sampler-{side}") for side in (0, 1)]
        assert await until(pilot, lambda: all(s._options[1:] for s in selects))
        options = [[value for _, value in s._options[1:]] for s in selects]
        assert "echo-any" in options[0] and "echo-any" in options[1]  # no model kinds: any model
        assert "one-shot" in options[0] and "one-shot" not in options[1]
        assert (selects[0].value, selects[1].value) == ("one-shot", "clm-infill")


async def test_the_playground_generates_through_mlmh_api(specs, monkeypatch):
    """The playground's run is mlmh.api.compare: swapped out, the API is what the screen reaches, with the
    screen's text, sides and masking (first every side, checked before any model loads; then each side as soon as
    its model is ready), and what it returns is what the traces show."""
    from mlmh import api

    real_compare = api.compare
    calls: list[dict] = []

    def compare(text, sides, **kwargs):
        calls.append({"text": text, "sides": list(sides), "masking": kwargs["masking"], "seed": kwargs["seed"]})
        return real_compare(text, sides, **kwargs)

    monkeypatch.setattr(api, "compare", compare)
    app = create_app(models=specs, text=TEXT)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        traces = await wait_for_traces(pilot, screen)
        assert [call["text"] for call in calls] == [TEXT] * 3
        assert [call["sides"] for call in calls[1:]] == [[side] for side in calls[0]["sides"]]
        assert [model for model, _ in calls[0]["sides"]] == specs
        assert [sampler.split(":")[0] for _, sampler in calls[0]["sides"]] == ["mask-predict", "clm-infill"]
        assert [t.generation.model for t in traces] == [g.model for g in real_compare(
            TEXT, calls[0]["sides"], masking=calls[0]["masking"], seed=calls[0]["seed"])]


# -- a playground that moves at once ---------------------------------------------------------------------------
async def test_each_pane_animates_as_soon_as_its_own_model_is_ready(specs, monkeypatch):
    """The CLM is still training (its load held here, after a first step): the MLM pane already animates, and
    only the CLM's pane says what is training, how far and how long is left."""
    from mlmh.events import Progress, StageStarted
    from mlmh.tui import playground_job

    real_load, release = playground_job.load_model, threading.Event()

    def load_model(model, dataset, cache, emit, cancel=None):
        if model.model_kind == "clm":  # a model training on first use: started, a step, then the rest
            stage = f"load {model.short_spec}"
            emit(StageStarted(stage=stage, total=None, description=model.short_spec))
            emit(Progress(stage=stage, completed=5, total=500, info={"stage": "train", "step": 5, "total": 500}))
            while not release.wait(0.05):
                if cancel is not None and cancel.is_set():
                    raise playground_job.Cancelled("cancelled")
        return real_load(model, dataset, cache, emit, cancel)

    monkeypatch.setattr(playground_job, "load_model", load_model)
    app = create_app(models=specs, text=TEXT)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = app.screen
        mlm, clm = screen.query(TraceView)
        statuses: list[str] = []
        assert await until(pilot, lambda: statuses.append(mlm.status) or mlm.generation is not None, timeout=60)
        assert await until(pilot, lambda: mlm.index > 0)  # it plays while the CLM trains
        assert screen.playing and clm.generation is None
        assert clm.status.startswith("training hf-clm:") and clm.status.endswith(
            " on pan: first use only, then kept in the model cache · step 5/500 · eta …")
        assert not any("hf-clm" in status for status in statuses)  # the MLM pane never spoke of the CLM
        release.set()
        traces = await wait_for_traces(pilot, screen)
        assert traces[0].generation.masked_words == traces[1].generation.masked_words


def test_a_training_pane_says_how_long_is_left():
    from mlmh.events import Progress, StageFinished, StageStarted
    from mlmh.run.eta import Eta
    from mlmh.tui.screens.playground import loading_status

    eta = Eta()
    assert loading_status("trained-mlm", "pan", StageStarted(stage="load trained-mlm", total=None,
                                                               description="trained-mlm"), eta) == "loading trained-mlm …"
    assert loading_status("trained-mlm", "pan", Progress(stage="load trained-mlm", completed=0, total=None), eta) == (
        "training trained-mlm on pan: first use only, then kept in the model cache · starting")  # a child started
    for step, now in ((10, 100.0), (20, 101.0), (30, 102.0), (40, 103.0)):  # 10 steps a second
        status = loading_status("trained-mlm", "pan", Progress(stage="load trained-mlm", completed=step, total=500),
                                eta, now=now)
    assert status == ("training trained-mlm on pan: first use only, then kept in the model cache · step 40/500 · "
                      "eta 46.0s")
    assert loading_status("trained-mlm", "pan", StageFinished(stage="load trained-mlm", seconds=50.0), eta) == \
        "trained-mlm ready: generating …"


def test_the_default_text_speaks_the_playground_models_language():
    """The README's generate example's rule: every word of the text the playground opens with is one token of the
    vocabulary its default models learn (trained-* on the default dataset, size tiny), and it starts with that
    example's sentence."""
    from test_readme_generate import _example_text, words_in_pieces

    from mlmh.config.declared import default_dataset
    from mlmh.registry import get_registry
    from mlmh.tui.playground_job import DEFAULT_TEXT, default_models

    assert default_dataset() == "pan" and default_models() == ("trained-mlm", "trained-clm")
    assert all(get_registry().build("model", name).params["size"] == "tiny" for name in default_models())
    assert words_in_pieces(DEFAULT_TEXT) == {} and DEFAULT_TEXT.startswith(_example_text())
    assert len(DEFAULT_TEXT.split()) >= 20  # enough words that a 0.3 masking hides several


def test_a_training_past_its_last_step_is_kept_when_the_user_quits():
    """Quitting (the app's cancel event set) stops a training at its next step, never after its last: that one
    is saved into the model cache. Beside another training (children side by side), the others stop once it is."""
    from mlmh.registry import get_registry
    from mlmh.tui.playground_job import AdapterCache, Cancelled, SideBySide, load_model

    cancel = threading.Event()

    class TrainsOnFirstUse:  # the training's progress as trained-* models report it; quit during the given step
        spec = short_spec = "trained-mlm:max_steps=3"

        def __init__(self, quit_at: int) -> None:
            self.quit_at = quit_at

        def load(self, context):
            for step in (1, 2, 3):
                if step == self.quit_at:
                    cancel.set()
                context.progress({"stage": "train", "step": step, "total": 3})
            return "adapter"  # the saved model, loaded

    cache = AdapterCache()
    assert load_model(TrainsOnFirstUse(quit_at=3), "pan", cache, lambda event: None, cancel) == "adapter"
    assert cache.adapters == {"trained-mlm:max_steps=3": "adapter"}
    cancel.clear()
    with pytest.raises(Cancelled):
        load_model(TrainsOnFirstUse(quit_at=2), "pan", AdapterCache(), lambda event: None, cancel)

    cancel.clear()
    mlm, clm = (get_registry().build("model", f"trained-{kind}:size=tiny,max_steps=3") for kind in ("mlm", "clm"))
    side_by_side = SideBySide([mlm, clm], "pan", lambda model: lambda event: None, cancel)
    side_by_side.progress(mlm, {"stage": "train", "step": 3, "total": 3})  # the MLM's last step: it saves now
    cancel.set()  # the user quits
    side_by_side.progress(clm, {"stage": "train", "step": 1, "total": 3})  # its child goes on while the MLM saves
    with pytest.raises(Cancelled):  # the MLM saved: the CLM's child is stopped
        side_by_side.progress(mlm, {"stage": "train", "state": "finished", "step": 3, "total": 3})
    assert side_by_side.is_ready(mlm) and not side_by_side.is_ready(clm)


async def test_a_cold_start_trains_each_model_once_and_keeps_it():
    """On an empty model cache the playground trains its two trained-* models (side by side where the cores allow),
    once, though a new mask is asked for meanwhile; each pane regenerates the default text, and both trainings are
    in the cache for the next start."""
    from mlmh.storage.modelcache import ModelCache
    from mlmh.tui.playground_job import DEFAULT_TEXT

    models = ["trained-mlm:size=tiny,max_steps=3", "trained-clm:size=tiny,max_steps=3"]
    assert ModelCache().entries() == []
    app = create_app(models=models)
    async with app.run_test(size=(100, 24)) as pilot:
        assert await until(pilot, lambda: len(app.adapters.trainings) == 2, timeout=60)
        trainings = dict(app.adapters.trainings)
        assert all(training.thread.is_alive() for training in trainings.values())
        await pilot.press("m")  # a new mask while they train: the run waits for the trainings under way
        traces = await wait_for_traces(pilot, app.screen, timeout=600)
        assert app.adapters.trainings == trainings  # no second training was started
        (training,) = set(trainings.values())
        assert training.error is None
        if len(os.sched_getaffinity(0)) >= 2:  # side by side, in child processes under the running app
            assert sorted(training.trained) == sorted(model.short_spec for model in training.models)
        assert [t.generation.original for t in traces] == [DEFAULT_TEXT] * 2
        assert traces[0].generation.masked_words == traces[1].generation.masked_words
    assert sorted(card["objective"] for card in ModelCache().entries()) == ["clm", "mlm"]


async def test_a_text_one_window_cuts_shorter_is_regenerated_by_both_sides(tiny_mlm, tiny_clm, tmp_path, monkeypatch):
    """Each side regenerates alone as soon as it can, masked as far as its own window reads; a text longer than
    the MLM's window (64 positions here, the CLM's 128) is cut shorter for it, so at the end both sides regenerate
    the text cut for both windows and the panes show the same masked words."""
    import shutil

    from transformers import BertConfig, BertForMaskedLM

    from mlmh import api

    short = shutil.copytree(tiny_mlm, tmp_path / "short-mlm")
    config = BertConfig.from_pretrained(short)
    config.max_position_embeddings = 64
    BertForMaskedLM(config).save_pretrained(short)
    real_compare, asked = api.compare, []
    monkeypatch.setattr(api, "compare", lambda text, sides, **kwargs: asked.append(len(sides)) or
                        real_compare(text, sides, **kwargs))
    text = " ".join(["The cat sat on the mat and looked at the door, again and again."] * 12)
    app = create_app(models=[f"hf-mlm:path={short}", f"hf-clm:path={tiny_clm}"], text=text)
    async with app.run_test(size=(100, 24)) as pilot:
        traces = await wait_for_traces(pilot, app.screen)
        await until(pilot, lambda: len(asked) == 4)
        await until(pilot, lambda: set(app.screen.shown) == {0, 1} and not app.screen.waiting, timeout=30)
        mlm, clm = (t.generation for t in traces)  # each pane's trace played to its end before the new one
        assert asked == [2, 1, 1, 2]  # checked, each side alone, then both again: their cuts differed
        assert mlm.original == clm.original and len(mlm.original) < len(text)
        assert mlm.masked_words == clm.masked_words


async def test_a_pane_refines_with_its_trainings_previews_before_the_training_ends(specs, tmp_path, monkeypatch):
    """While the models train (held here until released), the MLM's training has a preview (its weights at step 20
    of 500, a real model): the MLM pane regenerates with it and animates at once, its title says the step, its bottom
    line the validation accuracy; the older preview is removed once the newer is loaded. Released, the models
    themselves replace the previews, each pane's trace played to its end first."""
    import shutil

    from mlmh.tui import playground_job
    from mlmh.tui.playground_job import Preview
    from mlmh.tui.screens import playground

    folder = tmp_path / "previews" / "pan-mlm-tiny-0"
    older, newer = (shutil.copytree(specs[0].split("=", 1)[1], folder / f"step-{step:06d}") for step in (10, 20))
    release = threading.Event()

    class Training:  # the side-by-side training of both models, under way until released, a preview of the MLM's
        def __init__(self, models, dataset, emit_for, closing, folder=None):
            self.models, self.error, self.trained = list(models), None, []
            self.previews = {models[0].spec: Preview(str(newer), step=20, total=500, validation_loss=5.1,
                                                     validation_accuracy=0.31, constant_accuracy=0.05)}
            self.thread = threading.Thread(target=release.wait, daemon=True)

        def start(self):
            self.thread.start()
            return self

        def is_ready(self, model):
            return release.is_set()

    monkeypatch.setattr(playground_job, "SideBySide", Training)
    replaced: list[bool] = []  # whether a pane's trace was at its end (or empty) when a generation replaced it
    show = playground.PlaygroundScreen._show

    def shown(screen, message):
        trace = screen.query_one(f"#pg-trace-{message.side}", TraceView)
        replaced.append(trace.generation is None or trace.at_end or not screen.playing)
        show(screen, message)

    monkeypatch.setattr(playground.PlaygroundScreen, "_show", shown)
    app = create_app(models=specs, text=TEXT)
    async with app.run_test(size=(100, 24)) as pilot:
        screen = app.screen
        mlm, clm = screen.query(TraceView)
        assert await until(pilot, lambda: mlm.index > 0, timeout=60)  # a refinement step, the training under way
        assert not release.is_set() and clm.generation is None and screen.shown == {0: screen.shown[0]}
        assert screen.shown[0].step == 20 and mlm.generation.masked_words
        assert str(mlm.border_title).endswith(" · preview at step 20/500")
        assert mlm.border_subtitle == "validation accuracy 0.31 (constant 0.05) · training goes on"
        assert not older.exists() and newer.exists()
        release.set()
        assert await until(pilot, lambda: screen.shown == {0: None, 1: None}, timeout=60)
        assert all(replaced) and len(replaced) == 3
        assert (str(mlm.border_title), mlm.border_subtitle) == (playground.short_spec(specs[0]), "")
        assert mlm.generation.masked_words == clm.generation.masked_words
