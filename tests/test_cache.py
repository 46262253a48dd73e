"""The per-sample cache: keys cover everything that decides a generation, batches are atomic."""

from __future__ import annotations

import sqlite3

import pytest

from mlmh.storage.cache import SampleCache, sample_key
from mlmh.types import Generation, Step

BASE = dict(model="trained-mlm:size=tiny@abc", tokenizer="WordPiece:300", doc_id="d1", text="The cat sat.",
            masked_words=(1,), masking="random:ratio=0.3", sampler="mask-predict:steps=4",
            code="mlmh==0.1+abc|mlmh==0.1+def", seed=7)


def generation(doc_id="d1", text="The dog sat."):
    return Generation(doc_id=doc_id, model="m", model_kind="mlm", sampler="s", masking="random", seed=7,
                      original="The cat sat.", masked_text="The [MASK] sat.", text=text, masked_words=[1],
                      output_words={1: "dog"}, steps=[Step(tokens=["the", "dog"], changed=[1], confidences={1: 0.5},
                                                           masked=[])], forward_passes=4)


@pytest.mark.parametrize("field, value", [
    ("model", "trained-mlm:size=tiny@abd"), ("tokenizer", "WordPiece:301"), ("doc_id", "d2"),
    ("text", "The cat sat!"), ("masked_words", (0,)), ("masking", "random:ratio=0.5"),
    ("sampler", "mask-predict:steps=10"), ("code", "mlmh==0.1+abd|mlmh==0.1+def"), ("seed", 8),
])
def test_key_changes_with_every_ingredient(field, value):
    assert sample_key(**BASE) == sample_key(**BASE)
    assert sample_key(**{**BASE, field: value}) != sample_key(**BASE)


def test_round_trip_keeps_the_generation(tmp_path):
    cache = SampleCache(tmp_path / "c.sqlite")
    gen = generation()
    cache.put_many({"k1": gen})
    again = SampleCache(tmp_path / "c.sqlite").get_many(["k1", "missing"])
    assert list(again) == ["k1"] and again["k1"] == gen
    assert again["k1"].output_words == {1: "dog"} and again["k1"].steps[0].confidences == {1: 0.5}


def test_wal_mode(tmp_path):
    SampleCache(tmp_path / "c.sqlite").put_many({"k": generation()})
    mode = sqlite3.connect(tmp_path / "c.sqlite").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_a_failed_batch_stores_nothing(tmp_path, monkeypatch):
    cache = SampleCache(tmp_path / "c.sqlite")
    cache.put_many({"a": generation("a")})

    # the second row of the batch cannot be bound: the first must be rolled back with it
    with pytest.raises(sqlite3.Error):
        cache.put_many({"b": generation("b"), ("not", "text"): generation("c")})  # type: ignore[dict-item]
    assert set(cache.get_many(["a", "b"])) == {"a"} and len(cache) == 1


def test_many_keys_are_fetched_in_chunks(tmp_path):
    cache = SampleCache(tmp_path / "c.sqlite")
    cache.put_many({f"k{i}": generation(f"d{i}") for i in range(1200)})
    got = cache.get_many([f"k{i}" for i in range(1200)])
    assert len(got) == 1200 and got["k1199"].doc_id == "d1199"


def test_stored_json_is_the_text_of_to_dict():
    """Entries are written with the dataclasses handed to the JSON encoder: the same text as walking them
    with to_dict first, int keys and tuples included; a key JSON has no form for takes to_dict's str()."""
    import json

    from mlmh.storage.cache import stored_json
    from mlmh.types import Generation, MetricResult, Step, to_dict

    steps = [Step(tokens=["a", "[MASK]", "c"], changed=[1], confidences={1: 0.25}, masked=[]),
             Step(tokens=["a", "b", "c"], changed=[], confidences={}, masked=[1])]
    generation = Generation(doc_id="d", model="m", model_kind="mlm", sampler="gibbs", masking="random", seed=3,
                            original="a b c", masked_text="a [MASK] c", text="a b c", masked_words=[1],
                            output_words={1: "b"}, steps=steps, info={"pair": (1, 2), "ü": "é"})
    results = [MetricResult(name="bleu", value=0.5, higher_is_better=True, per_sample=[0.5, None])]
    assert stored_json(generation) == json.dumps(to_dict(generation), ensure_ascii=False)
    assert stored_json(results) == json.dumps([to_dict(r) for r in results], ensure_ascii=False)
    odd = {(1, 2): "tuple key"}
    assert stored_json(odd) == json.dumps(to_dict(odd), ensure_ascii=False)
