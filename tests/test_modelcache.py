"""The model cache: atomic writes, hits without retraining, keys that follow data and config, and the
``trained-*`` model plugins that train on first use."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from mlmh.components import LoadContext
from mlmh.errors import ModelError
from mlmh.storage.modelcache import ModelCache, atomic_directory, cache_key, data_hash, ensure_free_space
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


@pytest.mark.parametrize("planted", ["link to a built entry", "link to a folder", "file"])
def test_an_entry_replaced_by_a_link_or_a_file_is_one_line_and_left_alone(tmp_path, planted):
    """A judge's or a model's cache entry that someone replaced: once ``Cannot call rmtree on a symbolic link``."""
    cache = ModelCache(tmp_path / "cache")
    built, _ = cache.get_or_build("k", _fake_model)
    elsewhere = tmp_path / "elsewhere"
    if planted == "link to a built entry":
        built.rename(elsewhere)
    else:
        elsewhere.mkdir()
        (elsewhere / "notes.txt").write_text("mine")
        import shutil

        shutil.rmtree(built)
    if planted == "file":
        built.write_text("mine")
    else:
        built.symlink_to(elsewhere, target_is_directory=True)
    what = "a file" if planted == "file" else "a symbolic link"
    with pytest.raises(ModelError) as caught:
        cache.get_or_build("k", _fake_model)
    assert str(caught.value) == (f"cache entry {built} is {what}, not a folder mlmh built; mlmh never uses, follows or "
                                 "removes it: remove it yourself and mlmh builds the entry again")
    assert sorted(p.name for p in elsewhere.iterdir()) in (["cache_manifest.json", "config.json", "training_card.json"],
                                                           ["notes.txt"])
    assert os.path.lexists(built)


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


def test_a_text_in_two_documents_is_learned_once():
    """PAN repeats a text in several pairs: the trained model's job and cache key hold each train text once."""
    corpus = _corpus()
    repeated = [d for d in corpus.documents if d.split == "train"][0]
    twice = Corpus(dataset=corpus.dataset, source="test",
                   documents=[*corpus.documents, Document(id="copy", text=repeated.text, split="train")])
    assert len(twice.split("train")) == len(corpus.split("train")) + 1
    assert twice.texts("train") == corpus.texts("train") == [d.text for d in corpus.split("train")]
    job = _model("trained-mlm").training_job(LoadContext(corpus=twice))
    assert job.texts.count(repeated.text) == 1
    assert _model("trained-mlm").identity(LoadContext(corpus=twice)) == _model("trained-mlm").identity(LoadContext(corpus=corpus))


def test_trained_model_needs_a_dataset():
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match="needs a dataset"):
        _model("trained-mlm").identity(LoadContext())


@pytest.mark.parametrize("name", ["trained-mlm", "trained-clm", "trained-seq2seq"])
def test_trained_model_trains_once_then_loads_from_cache(name, monkeypatch):
    from mlmh.training import loop

    events = []
    context = LoadContext(corpus=_corpus(), progress=events.append)
    adapter = _model(name).load(context)
    assert adapter.kind == name.split("-")[1]
    assert [e["step"] for e in events] == [1, 2] and events[-1]["total"] == 2
    (entry,) = ModelCache().entries()
    assert entry["objective"] == adapter.kind and entry["heldout_source"].startswith("test split: 4 documents that neither chose")
    assert entry["dataset"] == "made-up" and entry["steps"] == 2

    def no_training(*args, **kwargs):
        raise AssertionError("retrained a cached model")

    monkeypatch.setattr(loop, "train", no_training)
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


def _weights_model(tmp, value=1.0):
    import torch
    from safetensors.torch import save_file

    _fake_model(tmp, loss=value)
    save_file({"w": torch.full((256,), value)}, str(tmp / "model.safetensors"))


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep])


@pytest.mark.parametrize("keep", [100, -8])  # inside the header ("invalid header length"); inside the data
def test_truncated_weights_are_named_and_rebuilt(tmp_path, caplog, keep):
    cache = ModelCache(tmp_path)
    path, _ = cache.get_or_build("k", _weights_model)
    weights = path / "model.safetensors"
    _truncate(weights, keep)
    assert cache.lookup("k") is None
    assert [p for p, _ in cache.damaged_entries()] == [path]
    with caplog.at_level("WARNING", logger="mlmh.storage.modelcache"):
        again, built = cache.get_or_build("k", lambda tmp: _weights_model(tmp, 2.0))
    assert built and again == path
    (record,) = [r for r in caplog.records if r.name == "mlmh.storage.modelcache"]
    assert str(path) in record.getMessage() and "model.safetensors" in record.getMessage()
    assert "rebuilding" in record.getMessage()
    from safetensors.torch import load_file

    assert float(load_file(str(weights))["w"][0]) == 2.0
    assert cache.get_or_build("k", lambda tmp: pytest.fail("rebuilt an intact entry")) == (path, False)


def test_truncated_non_weight_file_is_caught_by_the_manifest(tmp_path, caplog):
    cache = ModelCache(tmp_path)
    key = "tok"
    complete = lambda p: (p / "tokenizer.json").is_file()  # noqa: E731 - as training.shared_tokenizer passes it
    path, _ = cache.get_or_build(key, lambda tmp: (tmp / "tokenizer.json").write_text('{"vocab": [1, 2, 3]}'), complete)
    (path / "tokenizer.json").write_text('{"voc')
    with caplog.at_level("WARNING", logger="mlmh.storage.modelcache"):
        _, built = cache.get_or_build(key, lambda tmp: (tmp / "tokenizer.json").write_text('{"vocab": []}'), complete)
    assert built and "tokenizer.json has 5 bytes, 20 when it was written" in caplog.text
    assert (path / "tokenizer.json").read_text() == '{"vocab": []}'


def test_entry_without_manifest_is_still_checked_through_its_weights(tmp_path):
    from mlmh.storage.modelcache import MANIFEST_NAME, entry_problem

    cache = ModelCache(tmp_path)
    path, _ = cache.get_or_build("old", _weights_model)
    (path / MANIFEST_NAME).unlink()  # built before manifests existed
    assert entry_problem(path) is None
    _truncate(path / "model.safetensors", 100)
    assert "model.safetensors is damaged" in entry_problem(path)


def test_trained_model_with_truncated_weights_is_retrained(caplog):
    events = []
    corpus = _corpus()
    _model("trained-clm").load(LoadContext(corpus=corpus))
    (entry,) = ModelCache().entries()
    weights = next(Path(entry["path"]).glob("*.safetensors"))
    _truncate(weights, 100)
    with caplog.at_level("WARNING", logger="mlmh.storage.modelcache"):
        adapter = _model("trained-clm").load(LoadContext(corpus=_corpus(), progress=events.append))
    assert adapter.kind == "clm" and [e["step"] for e in events] == [1, 2]  # trained again
    assert f"cache entry {entry['path']} is damaged: {weights.name}" in caplog.text
