"""Nothing removes what a live process owns: ``mlmh doctor`` calls a build that runs right now "in progress" (not a
failure) and ``doctor --fix`` leaves its folder alone, deciding by the build's key lock and the PID in the folder's
name (mlmh.storage.modelcache.build_in_progress); a dead build's leftovers are still removed."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from mlmh.doctor import _all_checks
from mlmh.machine.paths import models_dir
from mlmh.storage.modelcache import ModelCache

KEY = "0123456789abcdef0123"
#: a cache build that writes half a model, says where, and waits to be told to finish (a training's shape)
HOLDER = """
import sys, time
from pathlib import Path
from mlmh.storage.modelcache import ModelCache
root, started, go = (Path(a) for a in sys.argv[1:4])
def build(tmp):
    (tmp / "config.json").write_text("{}")
    started.write_text(str(tmp))
    deadline = time.time() + 60
    while not go.exists() and time.time() < deadline:
        time.sleep(0.05)
    (tmp / "training_card.json").write_text("{}")
ModelCache(root).get_or_build(sys.argv[4], build)
"""


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _trained_models_check():
    (found,) = [c for c in _all_checks() if c.name == "trained models"]
    return found


def test_doctor_fix_beside_a_running_build_leaves_it_untouched(tmp_path):
    root = models_dir()
    root.mkdir(parents=True, exist_ok=True)
    started, go = tmp_path / "started", tmp_path / "go"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(root), str(started), str(go), KEY])
    try:
        deadline = time.time() + 60
        while not started.exists() and time.time() < deadline and holder.poll() is None:
            time.sleep(0.05)
        assert started.exists(), "the concurrent build never started"
        live = Path(started.read_text())
        leftover = root / f".partial-{'f' * 20}-{_dead_pid()}-abcdefgh"  # a killed build's folder
        leftover.mkdir()
        check = _trained_models_check()
        result = check.run()
        assert not result.ok and "1 unfinished build(s) left over" in result.detail, result.detail
        assert f"1 build(s) in progress (PID {holder.pid})" in result.detail
        message = check.fixer()
        assert "removed 1 unfinished" in message and "left 1 build(s) in progress alone" in message
        assert live.is_dir() and (live / "config.json").is_file() and not leftover.exists()
        result = check.run()
        assert result.ok and "in progress" in result.detail and "left over" not in result.detail, result.detail
        go.touch()
        assert holder.wait(timeout=60) == 0
    finally:
        go.touch()
        holder.wait(timeout=60)
    assert ModelCache(root).lookup(KEY) is not None  # the build finished into its entry
    assert "in progress" not in _trained_models_check().run().detail


def test_a_held_key_lock_keeps_a_folder_whose_pid_is_gone(tmp_path):
    """A build on another machine sharing the cache: its PID means nothing here, its lock does."""
    cache = ModelCache(tmp_path)
    folder = tmp_path / f".partial-{KEY}-{_dead_pid()}-abcdefgh"
    folder.mkdir(parents=True)
    with cache._lock(KEY):
        assert cache.builds_in_progress() == [folder] and cache.leftovers() == []
    assert cache.builds_in_progress() == [] and cache.leftovers() == [folder]
