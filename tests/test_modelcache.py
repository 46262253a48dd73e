"""The model cache: atomic writes, hits without retraining, keys that follow data and config, and the
``trained-*`` model plugins that train on first use."""

from __future__ import annotations

import errno
import json

import pytest

from mlmh.components import LoadContext
from mlmh.errors import ModelError
from mlmh.modelcache import ModelCache, atomic_directory, cache_key, data_hash, ensure_free_space
from mlmh.types import Corpus, Document

STORY = ("The keeper of the lighthouse climbed the stairs every evening and lit the lamp . Ships passed "
         "far out at sea , and sometimes one of them answered with a horn .").split()
TEXTS = [" ".join(STORY[i % len(STORY):] + STORY[: i % len(STORY)]) for i in range(16)]


def _corpus(texts=TEXTS, name="made-up") -> Corpus:
    docs = [Document(id=f"d{i}", text=t, split="test" if i % 4 == 0 else "train") for i, t in enumerate(texts)]
    return Corpus(dataset=name, documents=docs, source="test")


def _fake_model(tmp, loss=1.0):
    (tmp / "config.json").write_text("{}")
    (tmp / "training_card.json").write_text(json.dumps({"final_loss": loss}))


def test_atomic_directory_renames_only_on_success(tmp_path):
    target = tmp_path / "models" / "m"
    with atomic_directory(target) as tmp:
        assert tmp != target and tmp.parent == target.parent
        (tmp / "weights").write_text("w")
        assert not target.exists()
    assert (target / "weights").read_text() == "w"
    assert [p.name for p in target.parent.iterdir()] == ["m"]


def test_failure_mid_build_leaves_nothing_behind(tmp_path):
    cache = ModelCache(tmp_path)

    def crash(tmp):
        (tmp / "config.json").write_text("{}")  # half written
        raise RuntimeError("killed during training")

    with pytest.raises(RuntimeError, match="killed"):
        cache.get_or_build("k1", crash)
    assert cache.lookup("k1") is None
    assert [p for p in tmp_path.iterdir() if not p.name.endswith(".lock")] == []


def test_full_disk_is_a_clear_error_and_leaves_nothing(tmp_path):
    cache = ModelCache(tmp_path)

    def full(tmp):
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(ModelError, match="out of disk space while writing the model to .*k2"):
        cache.get_or_build("k2", full)
    assert cache.lookup("k2") is None and cache.partial_dirs() == []
    with pytest.raises(ModelError, match="not enough disk space"):
        ensure_free_space(tmp_path, 10**18)


def test_builder_that_forgets_the_card_is_not_a_model(tmp_path):
    cache = ModelCache(tmp_path)
    with pytest.raises(ModelError, match="without writing all its files"):
        cache.get_or_build("k3", lambda tmp: (tmp / "config.json").write_text("{}"))
    assert cache.lookup("k3") is None


def test_second_lookup_is_a_hit_without_building(tmp_path):
    cache = ModelCache(tmp_path)
    calls = []
    path, built = cache.get_or_build("k", lambda tmp: (calls.append(tmp), _fake_model(tmp)))
    again, built_again = cache.get_or_build("k", lambda tmp: calls.append("again"))
    assert (built, built_again) == (True, False) and again == path and len(calls) == 1
    assert [e["final_loss"] for e in cache.entries()] == [1.0]


def test_keys_follow_data_and_config():
    recipe = {"config": {"objective": "mlm", "seed": 0}, "data": data_hash(["a b", "c"])}
    assert cache_key(recipe) == cache_key(json.loads(json.dumps(recipe)))
    assert cache_key(recipe) != cache_key({**recipe, "data": data_hash(["a", "b c"])})  # boundaries count
    assert cache_key(recipe) != cache_key({**recipe, "config": {"objective": "mlm", "seed": 1}})


def _model(name, **params):
    from mlmh.registry import get_registry

    return get_registry().build("model", f"{name}:" + ",".join(f"{k}={v}" for k, v in {"max_steps": 2, **params}.items()))


def test_trained_model_identity_needs_no_training_and_follows_data_and_params():
    corpus = _corpus()
    mlm = _model("trained-mlm")
    ident = mlm.identity(LoadContext(corpus=corpus))
    assert ident.startswith("trained-mlm:made-up-mlm-tiny-")
    assert ModelCache().entries() == []  # nothing was trained to compute it
    assert _model("trained-mlm").identity(LoadContext(corpus=_corpus())) == ident
    assert _model("trained-mlm", seed=1).identity(LoadContext(corpus=corpus)) != ident
    assert _model("trained-mlm", max_steps=3).identity(LoadContext(corpus=corpus)) != ident
    assert _model("trained-mlm").identity(LoadContext(corpus=_corpus(TEXTS[::-1]))) != ident
    assert _model("trained-clm").identity(LoadContext(corpus=corpus)).startswith("trained-clm:made-up-clm-tiny-")


def test_trained_model_needs_a_dataset():
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match="needs a dataset"):
        _model("trained-mlm").identity(LoadContext())


@pytest.mark.parametrize("name", ["trained-mlm", "trained-clm", "trained-seq2seq"])
def test_trained_model_trains_once_then_loads_from_cache(name, monkeypatch):
    from mlmh import training

    events = []
    context = LoadContext(corpus=_corpus(), progress=events.append)
    adapter = _model(name).load(context)
    assert adapter.kind == name.split("-")[1]
    assert [e["step"] for e in events] == [1, 2] and events[-1]["total"] == 2
    (entry,) = ModelCache().entries()
    assert entry["objective"] == adapter.kind and entry["heldout_source"] == "test split"
    assert entry["dataset"] == "made-up" and entry["steps"] == 2

    def no_training(*args, **kwargs):
        raise AssertionError("retrained a cached model")

    monkeypatch.setattr(training, "train", no_training)
    events.clear()
    again = _model(name).load(LoadContext(corpus=_corpus(), progress=events.append))
    assert events == [] and again.kind == adapter.kind


def test_interrupted_training_leaves_no_model_in_the_cache():
    def interrupt(event):
        if event["step"] == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _model("trained-clm").load(LoadContext(corpus=_corpus(), progress=interrupt))
    cache = ModelCache()
    assert cache.entries() == [] and cache.partial_dirs() == []
    assert [p.name for p in cache.root.iterdir() if p.is_dir()] == ["tokenizers"]
