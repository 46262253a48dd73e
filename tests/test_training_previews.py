"""A training's previews (mlmh.training.previews): saved once the model is off the unigram plateau and each time its
steps have doubled, loadable as the model's adapter, and changing nothing of the training they look at."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mlmh.training.previews import Previews
from test_training import TEXTS, micro


def test_a_preview_is_due_off_the_plateau_then_each_time_the_steps_doubled_never_at_the_last(tmp_path):
    previews = Previews(tmp_path)
    assert not previews.due(10, 500, off_plateau=False)  # it has learned nothing yet
    assert previews.due(30, 500, off_plateau=True)
    previews.last = 30
    assert not previews.due(50, 500, off_plateau=True) and previews.due(60, 500, off_plateau=True)
    assert not previews.due(500, 500, off_plateau=True)  # the training saves its kept weights then


def test_previews_are_the_trainings_weights_at_their_steps_and_change_nothing_of_it(tmp_path):
    from mlmh.adapters import load_adapter
    from mlmh.training.loop import train

    config = micro("clm", max_steps=80)
    plain = train(TEXTS, config, tmp_path / "plain", validation_texts=TEXTS[:4], threads=1)
    events: list[dict] = []
    previewed = train(TEXTS, config, tmp_path / "previewed", validation_texts=TEXTS[:4], threads=1,
                      progress=events.append, checkpoint=Previews(tmp_path / "previews"))

    said = [event["preview"] for event in events if "preview" in event]
    steps = [preview["step"] for preview in said]
    assert steps and all(later >= 2 * earlier for earlier, later in zip(steps, steps[1:])) and steps[-1] < 80
    curve = {point["step"]: point for point in previewed["validation_curve"]}
    for preview in said:  # the model at that step, as its validation measured it, saved whole
        assert preview["validation_accuracy"] == curve[preview["step"]]["accuracy"]
        assert preview["validation_accuracy"] > preview["constant_accuracy"]  # off the plateau
        assert Path(preview["path"]).name == f"step-{preview['step']:06d}"
    assert sorted(p.name for p in (tmp_path / "previews").iterdir()) == [Path(p["path"]).name for p in said]
    adapter = load_adapter("clm", said[0]["path"], identity="preview")
    assert adapter.model.config.num_hidden_layers == config.shape.layers

    # the training they looked at: the same weights and card (but for its clocks)
    assert (tmp_path / "plain" / "model.safetensors").read_bytes() == \
        (tmp_path / "previewed" / "model.safetensors").read_bytes()
    clocks = ("train_seconds", "wall_seconds", "seconds_per_step", "train_cpu_seconds")
    assert {k: v for k, v in plain.items() if k not in clocks} == {k: v for k, v in previewed.items() if k not in clocks}
    assert json.loads((tmp_path / "plain" / "config.json").read_text()) == \
        json.loads((tmp_path / "previewed" / "config.json").read_text())


def test_with_previews_a_model_trains_in_a_child_even_alone(monkeypatch, tmp_path):
    from mlmh.components import LoadContext
    from mlmh.training import jobs
    from test_pretrain import _corpus, _models

    spawned: list[tuple[list[str], int]] = []
    monkeypatch.setattr(jobs, "_run_children", lambda pending, slots: spawned.append(
        ([job.previews for job, _ in pending], slots)) or [])
    corpus = _corpus()
    context = lambda model: LoadContext(corpus=corpus)  # noqa: E731
    (mlm,) = _models("trained-mlm")
    key = mlm.training_job(context(mlm)).key
    assert jobs.train_missing([mlm], context, cores=4) == [] and spawned == []  # alone: left to the load
    jobs.train_missing([mlm], context, cores=4, previews=tmp_path)
    assert spawned == [([str(tmp_path / key)], 1)]
    jobs.train_missing(_models("trained-mlm", "trained-clm"), context, cores=1, previews=tmp_path)
    assert len(spawned) == 1  # one core: a model takes all of it, and trains in the load


@pytest.mark.slow
def test_a_child_saves_its_previews_and_the_driver_hears_of_each():
    from mlmh.adapters import load_adapter
    from mlmh.components import LoadContext
    from mlmh.training.jobs import train_missing
    from test_pretrain import _corpus, _models

    corpus, events = _corpus(), []
    models = _models("trained-clm", steps=40)
    folder = Path(os.environ["MLMH_CACHE_DIR"]) / "previews"
    assert train_missing(models, lambda m: LoadContext(corpus=corpus, progress=events.append), cores=2,
                         previews=folder) == ["trained-clm:max_steps=40"]
    said = [event["preview"] for event in events if "preview" in event]
    assert said and all(Path(preview["path"]).parent.parent == folder for preview in said)
    assert load_adapter("clm", said[-1]["path"], identity="preview").kind == "clm"
