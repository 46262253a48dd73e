"""Training several trained-* models at once (mlmh.training.jobs): same weights and card as training each alone,
the same cache entries, the children's progress in the driver, failures and cancel."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from mlmh.components import LoadContext
from mlmh.errors import RunCancelled
from mlmh.storage.modelcache import ModelCache
from mlmh.training.jobs import parallel_slots, train_missing
from mlmh.types import Corpus, Document
from processes import children, wait_gone

STORY = ("The keeper of the lighthouse climbed the stairs every evening and lit the lamp . Ships passed "
         "far out at sea , and sometimes one of them answered with a horn .").split()
TEXTS = [" ".join(STORY[i % len(STORY):] + STORY[: i % len(STORY)]) for i in range(16)]
#: card entries that measure time, not what was trained
TIMINGS = {"train_seconds", "wall_seconds", "seconds_per_step", "train_cpu_seconds"}


def _corpus(split_of=lambda i: "test" if i % 4 == 0 else "train") -> Corpus:
    return Corpus(dataset="made-up", source="test",
                  documents=[Document(id=f"d{i}", text=t, split=split_of(i)) for i, t in enumerate(TEXTS)])


def _models(*names, steps=3):
    from mlmh.registry import get_registry

    return [get_registry().build("model", f"{name}:max_steps={steps}") for name in names]


def _weights(path):
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


def _entries():
    return {entry["objective"]: entry for entry in ModelCache().entries()}


@pytest.mark.slow
def test_parallel_training_equals_training_each_model_alone(tmp_path, monkeypatch):
    import torch

    from mlmh.training import loop

    corpus = _corpus()
    names = ("trained-mlm", "trained-clm", "trained-seq2seq")
    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "alone"))
    for model in _models(*names):
        model.load(LoadContext(corpus=corpus))
    alone = _entries()

    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path / "together"))
    events: dict[str, list[dict]] = {}
    trained = train_missing(_models(*names), lambda m: LoadContext(
        corpus=corpus, progress=events.setdefault(m.short_spec, []).append), cores=2)
    assert sorted(trained) == sorted(f"{n}:max_steps=3" for n in names), events
    together = _entries()
    assert set(together) == set(alone) == {"mlm", "clm", "seq2seq"}
    for objective, card in together.items():
        before = alone[objective]
        assert Path(card["path"]).name == Path(before["path"]).name  # the same cache key
        assert {k: v for k, v in card.items() if k not in TIMINGS | {"path"}} == \
               {k: v for k, v in before.items() if k not in TIMINGS | {"path"}}
        a, b = _weights(Path(before["path"])), _weights(Path(card["path"]))
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    for label, seen in events.items():  # each child's start, steps with their loss, and finish reached the driver
        states = [e.get("state") for e in seen]
        assert states[0] == "started" and states[-1] == "finished", label
        assert any("loss" in e and e.get("step") for e in seen if "state" not in e), label
        assert seen[-1]["step"] == seen[-1]["total"] == 3

    def no_training(*args, **kwargs):
        raise AssertionError("the load retrained a model trained in parallel")

    monkeypatch.setattr(loop, "train", no_training)
    for model in _models(*names):  # the runner's load that follows finds them cached
        assert model.load(LoadContext(corpus=corpus)).kind == model.model_kind
    assert train_missing(_models(*names), lambda m: LoadContext(corpus=corpus), cores=2) == []


def test_one_model_or_one_core_is_left_to_the_sequential_load(monkeypatch):
    from mlmh.training import jobs

    def no_children(*args, **kwargs):
        raise AssertionError("spawned training processes")

    monkeypatch.setattr(jobs, "_run_children", no_children)
    corpus = _corpus()
    assert train_missing(_models("trained-mlm"), lambda m: LoadContext(corpus=corpus), cores=4) == []
    pair = _models("trained-mlm", "trained-clm")
    assert train_missing(pair, lambda m: LoadContext(corpus=corpus), cores=1) == []
    jobs = [m.training_job(LoadContext(corpus=corpus)) for m in pair]
    assert parallel_slots(jobs, cores=1) == 1 and parallel_slots(jobs, cores=2) == 2  # tiny: one thread each
    assert parallel_slots(jobs * 3, cores=2) == 4 and parallel_slots(jobs * 3, cores=8) == 6
    assert ModelCache().entries() == []


def test_a_failing_child_is_reported_and_left_to_the_load():
    corpus = _corpus(split_of=lambda i: "test")  # nothing to train on
    events: list[dict] = []
    models = _models("trained-mlm", "trained-clm")
    assert train_missing(models, lambda m: LoadContext(corpus=corpus, progress=events.append), cores=2) == []
    failed = [e for e in events if e.get("state") == "failed"]
    assert len(failed) == 2 and all(e["error"].startswith("dataset 'made-up' has no training texts") for e in failed)
    assert ModelCache().entries() == [] and not multiprocessing.active_children()


@pytest.mark.slow
def test_cancel_stops_every_child_and_leaves_no_model():
    corpus = _corpus()

    def cancel(event):
        if event.get("state") == "started":
            raise RunCancelled("cancelled")

    with pytest.raises(RunCancelled):
        train_missing(_models("trained-mlm", "trained-clm"), lambda m: LoadContext(corpus=corpus, progress=cancel),
                      cores=2)
    assert not multiprocessing.active_children()
    assert ModelCache().entries() == []


#: a driver that trains two models at once, long enough to be killed mid-training
KILLED_DRIVER = """
import sys
sys.path.insert(0, sys.argv[1])
from test_pretrain import LoadContext, _corpus, _models, train_missing

def progress(event):
    if event.get("state") == "started":
        print("started", flush=True)

train_missing(_models("trained-mlm", "trained-clm", steps=100000), lambda m: LoadContext(corpus=_corpus(), progress=progress),
              cores=2)
"""


@pytest.mark.slow
@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads the process table from /proc")
def test_training_children_end_with_a_killed_driver(tmp_path):
    driver = subprocess.Popen([sys.executable, "-c", KILLED_DRIVER, str(Path(__file__).parent)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        assert driver.stdout.readline().strip() == "started", "no training child started"
        started = children(driver.pid)
        assert started, "the driver had no training processes"
        os.kill(driver.pid, signal.SIGKILL)
    finally:
        driver.wait(timeout=60)
    assert not wait_gone(started), "training processes outlived their killed driver"
    assert ModelCache().entries() == []


def test_pretrained_starts_train_on_one_thread_each_side_by_side():
    from mlmh.training.config import make_config
    from mlmh.training.loop import default_threads

    assert default_threads(make_config("mlm", init="minilm")) == 1  # 8 x 64-token steps: a second thread spins
    assert default_threads(make_config("clm", "tiny")) == 1
    corpus = _corpus()
    jobs = [m.training_job(LoadContext(corpus=corpus)) for m in _models("trained-mlm", "trained-clm",
                                                                        steps="3,init=minilm")]
    assert [job.threads() for job in jobs] == [1, 1] and parallel_slots(jobs, cores=2) == 2
