"""A run reads a model's weights only where it has samples to generate: a run whose samples are all cached
tokenizes, fits windows and scores without building the models, and its results are those of the run that
generated them; weights that fail to load fail that model's conditions at loading, as before."""

from __future__ import annotations

import pytest

from mlmh.adapters.base import BaseAdapter
from mlmh.config.plan import build_plan
from mlmh.config.presets import resolve
from mlmh.run.results import strip_timings
from mlmh.run.runner import run_experiment

pytestmark = pytest.mark.slow


@pytest.fixture
def reads(monkeypatch):
    """The identities of the adapters whose weights were read, in order."""
    read: list[str] = []
    original = BaseAdapter.load_weights

    def load_weights(self):
        if not self.weights_loaded:
            read.append(self.identity)
        original(self)

    monkeypatch.setattr(BaseAdapter, "load_weights", load_weights)
    return read


def config(*models):
    return resolve("quick", {"models": list(models), "maskings": ["random:ratio=0.5"],
                             "samplers": ["mask-predict:steps=2", "clm-infill"], "metrics": ["bleu"], "tasks": [],
                             "limit": 2})


def test_a_run_with_every_sample_cached_reads_no_weights(tiny_mlm, tiny_clm, tmp_path, reads):
    models = (f"hf-mlm:path={tiny_mlm}", f"hf-clm:path={tiny_clm}")
    cache = tmp_path / "cache.sqlite"
    first = run_experiment(build_plan(config(*models)), output_path=tmp_path / "first", cache_path=cache)
    assert len(reads) == 2  # each model generated, so each read its weights once
    second = run_experiment(build_plan(config(*models)), output_path=tmp_path / "second", cache_path=cache)
    assert len(reads) == 2  # every sample cached: no weights read
    kept = lambda r: {k: v for k, v in strip_timings(r.to_dict()).items() if k not in ("run_id", "notes")}  # noqa: E731
    assert kept(second) == kept(first)


def test_weights_that_fail_to_load_fail_their_conditions_at_loading(tiny_mlm, tiny_clm, tmp_path, reads):
    import shutil

    broken = tmp_path / "broken-clm"
    shutil.copytree(tiny_clm, broken)
    for weights in broken.glob("*.safetensors"):
        weights.write_bytes(b"not a safetensors file")
    results = run_experiment(build_plan(config(f"hf-mlm:path={tiny_mlm}", f"hf-clm:path={broken}")),
                             output_path=tmp_path / "run", cache_path=tmp_path / "cache.sqlite")
    (error,) = results.errors
    assert error.during == "loading" and "hf-clm" in error.component
    failed = [c for c in results.conditions if c.failed]
    assert failed and all(c.model_kind == "clm" for c in failed)
    assert all(c.metrics for c in results.conditions if c.model_kind == "mlm")  # the other model's still ran
