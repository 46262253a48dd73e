"""Shared fixtures: an isolated cache dir, and tiny random models built once per session."""

from __future__ import annotations

import os

import pytest

from tiny_models import build_tiny_model


@pytest.fixture(scope="session", autouse=True)
def _one_torch_thread():
    """pytest -n 2 runs two workers on two cores: one torch thread each avoids oversubscription,
    which makes tiny models many times slower."""
    import torch

    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    """Every test gets its own cache dir and no network; plugin state is reset around it."""
    monkeypatch.setenv("MLMH_CACHE_DIR", str(tmp_path_factory.mktemp("mlmh-cache")))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    from mlmh import plugin_manager

    plugin_manager.reset()
    yield
    plugin_manager.reset()


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory):
    return build_tiny_model("mlm", tmp_path_factory.mktemp("tiny-mlm"))


@pytest.fixture(scope="session")
def tiny_clm(tmp_path_factory):
    return build_tiny_model("clm", tmp_path_factory.mktemp("tiny-clm"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory):
    return build_tiny_model("seq2seq", tmp_path_factory.mktemp("tiny-seq2seq"))
