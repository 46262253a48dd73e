"""Shared fixtures: an isolated cache dir, and tiny random models built once per session."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tiny_models import build_tiny_model
from xdist_deselected import pytest_deselected, pytest_sessionfinish, pytest_testnodedown  # noqa: F401  (hooks)

# No example database: each run draws its examples afresh (tests independent of earlier runs and of the
# other xdist worker), and no background writer thread is left whose finalizer, interrupted, surfaced as a
# PytestUnraisableExceptionWarning with a KeyboardInterrupt traceback from hypothesis/database.py.
settings.register_profile("mlmh", database=None)
settings.load_profile("mlmh")


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
    from mlmh.plugins import plugin_manager
    from mlmh_builtins import judge

    # a judge is converted once per session where its extra is installed (a paper preset run in a test would
    # otherwise convert Gemma again in every test's cache): a conversion depends on the GGUF file alone
    judges = tmp_path_factory.getbasetemp() / "mlmh-judges"
    monkeypatch.setattr(judge, "judges_root", lambda: judges)

    plugin_manager.reset()
    yield
    plugin_manager.reset()


class _NotStrict(Exception):
    pass


def _refuse_constant(name: str):
    raise _NotStrict(f"{name} is not JSON (strict parsers reject it)")


@pytest.fixture(autouse=True)
def _results_json_is_strict(request):
    """Every results.json a test's run wrote parses with a strict JSON parser (no NaN, no Infinity).
    Files that are not JSON at all are the corrupt inputs some tests plant, and are left alone."""
    root = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    if root is None:
        return
    import json

    for path in root.rglob("results.json"):
        if not path.is_file():  # a FIFO or device a test plants: reading it would block
            continue
        try:
            json.loads(path.read_text(encoding="utf-8", errors="replace"), parse_constant=_refuse_constant)
        except _NotStrict as exc:
            raise AssertionError(f"{path} is not strict JSON: {exc}") from None
        except ValueError:
            continue


@pytest.fixture(scope="session")
def tiny_mlm(tmp_path_factory):
    return build_tiny_model("mlm", tmp_path_factory.mktemp("tiny-mlm"))


@pytest.fixture(scope="session")
def tiny_clm(tmp_path_factory):
    return build_tiny_model("clm", tmp_path_factory.mktemp("tiny-clm"))


@pytest.fixture(scope="session")
def tiny_seq2seq(tmp_path_factory):
    return build_tiny_model("seq2seq", tmp_path_factory.mktemp("tiny-seq2seq"))


@pytest.fixture(scope="session")
def paper_families(tmp_path_factory):
    """Tiny random checkpoints of BERT, RoBERTa, GPT-2, T5 and BART with their own tokenizers, saved under the
    hub names the ``paper-hub`` preset uses (``bert-base-uncased/``, ``facebook/bart-base/``, ...): family -> dir."""
    from paper_families import HUB_NAMES, build_family

    root = tmp_path_factory.mktemp("paper-families")
    return {family: build_family(family, root / name) for family, name in HUB_NAMES.items()}
