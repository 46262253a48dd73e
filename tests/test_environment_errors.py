"""The environment's errors are named as such (mlmh.machine.environment): a full disk and a read-only cache are not called a
damaged cache, a name too long for the file system is one line, control characters in an echoed name are escaped;
and the input rules around them: an unknown device on every model kind is refused before the run, `none` in a list of
tasks is explained, a checkpoint whose embeddings are smaller than its tokenizer is named."""

from __future__ import annotations

import errno
import sqlite3

import pytest
from tiny_models import with_half_the_embeddings

from mlmh.cli import main
from mlmh.errors import MlmhError, ModelError


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


def test_a_name_longer_than_the_file_system_allows_is_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "quick", "--limit", "1", "--no-cache", "--output-path", "x" * 300])
    err = _one_line(capsys)
    assert info.value.code == 1 and "Errno" not in err and "OSError" not in err
    assert "is longer than the file system allows (300 bytes; most allow 255 per name" in err


@pytest.mark.parametrize("args", [["report", "runs/a\x1b[2Jb"], ["eval", "--preset", "no\x1b[31mred"],
                                  ["human", "import", "r\rX", "s\x07.csv"]])
def test_control_characters_in_an_echoed_name_are_escaped(tmp_path, capsys, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        main(args)
    err = _one_line(capsys)
    assert not any(ch in err for ch in "\x1b\r\x07"), repr(err)
    assert "\\x1b" in err or "\\r" in err or "\\x07" in err, err


@pytest.fixture
def cache(tmp_path):
    from mlmh.storage.cache import SampleCache

    opened = SampleCache(tmp_path / "cache" / "samples.sqlite")
    yield opened
    opened.close()


class _FullDisk:
    """A connection whose every write fails as SQLite's does on a full disk."""

    in_transaction = False

    def execute(self, sql, *args):
        raise sqlite3.OperationalError("database or disk is full")

    def close(self):
        pass


def test_a_full_disk_under_the_cache_is_named_not_called_damage(cache, monkeypatch):
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr("mlmh.machine.environment.shutil.disk_usage", lambda path: usage(10 << 30, 10 << 30, 4096))
    cache._db = _FullDisk()
    with pytest.raises(MlmhError) as info:
        cache.put_figure("k", b"\x89PNG\r\n\x1a\n")
    message = str(info.value)
    assert "the disk holding" in message and "is full (4,096 bytes free)" in message
    assert "delete it" not in message and "not damaged" in message


def test_a_read_only_cache_is_named_not_called_damage(tmp_path, monkeypatch):
    """As root every folder is writable, so the folder's refusal is simulated where the cache asks for it."""
    from mlmh.storage import cache as cache_module

    def refuse(*args, **kwargs):
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(cache_module.sqlite3, "connect", refuse)
    monkeypatch.setattr("mlmh.machine.environment.os.access", lambda path, mode: False)
    with pytest.raises(MlmhError) as info:
        cache_module.SampleCache(tmp_path / "cache" / "samples.sqlite")
    message = str(info.value)
    assert "is read-only (or not writable by you)" in message and "delete it" not in message
    assert "MLMH_CACHE_DIR" in message and "--no-cache" in message


def test_the_cli_names_an_os_error_of_the_machine():
    from mlmh.machine.environment import os_error_text

    assert os_error_text(OSError(errno.ENOSPC, "No space left on device", "/c/x")).startswith("the disk is full")
    assert os_error_text(OSError(errno.EROFS, "Read-only file system", "/c/x")).startswith("read-only file system: /c/x")
    assert os_error_text(OSError(errno.EACCES, "Permission denied", "/c\x1bx")) == (
        "permission denied: /c\\x1bx: the file or folder is not writable (or readable) by you")


@pytest.mark.parametrize("model", ["hf-mlm:path=x,device=tpu", "hf-clm:path=x,device=cuda:one",
                                   "hf-seq2seq:path=x,device=gpu", "trained-mlm:device=tpu", "trained-clm:device=mps",
                                   "trained-seq2seq:device=npu"])
def test_an_unknown_device_is_refused_before_the_run_on_every_model_kind(tmp_path, capsys, model):
    out = tmp_path / "run"
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "quick", "--model", model, "--limit", "1", "--no-cache", "--output-path", str(out)])
    err = _one_line(capsys)
    assert info.value.code == 2 and "parameter 'device' must be a device this build of mlmh runs on" in err
    assert not out.exists()


def test_every_model_with_a_device_parameter_shares_the_one_rule():
    from mlmh.machine.devices import DEVICE_PARAM
    from mlmh.registry import get_registry

    registry = get_registry()
    with_device = [name for name in registry.names("model")
                   if any(p.name == "device" for p in registry.get("model", name).parameters)]
    assert len(with_device) >= 6
    for name in with_device:
        assert DEVICE_PARAM in registry.get("model", name).parameters, name


@pytest.mark.parametrize("flag, items", [("--task", "none,ner"), ("--metric", "bleu,none")])
def test_none_in_a_list_is_explained_not_called_unknown(capsys, flag, items):
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "quick", flag, items])
    err = _one_line(capsys)
    assert info.value.code == 2 and "unknown" not in err and "'none' means no" in err and "stands alone" in err


def test_a_checkpoint_whose_embeddings_are_smaller_than_its_tokenizer_is_named(tiny_clm, tmp_path):
    from mlmh.adapters import load_adapter

    small = tmp_path / "small-vocab"
    size = with_half_the_embeddings(tiny_clm, small, "AutoModelForCausalLM")
    for defer in (False, True):
        with pytest.raises(ModelError) as info:
            load_adapter("clm", str(small), defer_weights=defer)
        message = str(info.value)
        assert str(small) in message and f"vocab_size is {size}" in message
        assert "resize its embeddings" in message and "\n" not in message
    load_adapter("clm", str(tiny_clm))  # a consistent checkpoint still loads
