"""One input rule for every reader (mlmh.storage.inputs): ``mlmh.load``, ``mlmh report`` and the TUI name a FIFO, a
device or an over-long path as such, as ``mlmh score`` and presets do; a NUL byte in any path an API function or a
command takes is a SpecError naming the argument; ``mlmh train --init`` checks a checkpoint's vocabulary as the
``hf-*`` models do. Each is one line, no Python exception type, a non-zero exit."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cli_helpers import run_cli
from tiny_models import with_half_the_embeddings

import mlmh
from mlmh import api
from mlmh.bench.preset import run_preset_bench
from mlmh.errors import DataError, ModelError, SpecError
from mlmh.human import export_sheet, read_sheet

EXCEPTION_TYPES = ("Traceback", "OSError", "ValueError", "IndexError", "FileNotFoundError", "Errno")


def _special(kind: str, tmp_path: Path) -> Path:
    if kind == "fifo":
        os.mkfifo(tmp_path / "results.json")
        return tmp_path / "results.json"
    return Path(os.devnull)


@pytest.mark.parametrize("where", ["the path", "results.json in the run"])
@pytest.mark.parametrize("kind, words", [("fifo", "is a FIFO (named pipe), not a file"),
                                         ("device", "is a character device, not a file")])
def test_every_reader_of_a_run_names_a_fifo_or_a_device(tmp_path, capsys, kind, words, where):
    try:
        _named_by_every_reader(tmp_path, capsys, kind, words, where)
    finally:  # conftest reads every results.json a test leaves: a FIFO would block it
        for planted in (tmp_path / "results.json",):
            if os.path.lexists(planted):
                planted.unlink()


def _named_by_every_reader(tmp_path, capsys, kind, words, where):
    path = _special(kind, tmp_path)
    if where == "results.json in the run":
        if kind == "device":
            os.symlink(os.devnull, tmp_path / "results.json")
        path = tmp_path  # the run directory, whose results.json is the special file
    results = tmp_path / "results.json" if where != "the path" else path
    with pytest.raises(DataError, match=re.escape(f"{results} {words}")):
        mlmh.load(path)
    for args in (["report", str(path)], ["tui", "--run", str(path)]):
        code, _, err = run_cli(capsys, *args)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 1 and len(lines) == 1 and f"{results} {words}" in lines[0] and "does not exist" not in err, err


def test_a_path_too_long_for_the_system_is_one_short_line(capsys):
    path = "runs/" + "x" * 5000
    with pytest.raises(DataError) as caught:
        mlmh.load(path)
    message = str(caught.value)
    assert "is too long for this system" in message and "(5,005 characters)" in message and len(message) < 400
    code, _, err = run_cli(capsys, "report", path)
    assert code == 1 and "is too long for this system" in err and len(err) < 400
    assert not any(word in err for word in EXCEPTION_TYPES)


#: every API function, and the storage rules under the commands, given a path with a NUL byte: (the name the
#: refusal gives, the call)
NUL = "runs/a\x00b"
CALLS = {
    "evaluate": ("output_path", lambda: mlmh.evaluate(output_path=NUL)),
    "prepare": ("output_path", lambda: api.prepare("quick", output_path=NUL)),
    "plan": ("preset", lambda: api.plan(NUL)),
    "load": ("path", lambda: mlmh.load(NUL)),
    "generate_from_dataset": ("data", lambda: mlmh.generate_from_dataset("pan", model="trained-mlm", data=NUL)),
    "export_sheet": ("--out", lambda: export_sheet("runs", 2, out=NUL)),
    "run_preset_bench": ("--cache-dir", lambda: run_preset_bench("quick", cache=Path(NUL))),
    "read_sheet": ("rating sheet", lambda: read_sheet(NUL, {})),
}


@pytest.mark.parametrize("call", sorted(CALLS))
def test_a_nul_byte_in_any_path_is_a_spec_error_naming_the_argument(call, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    name, function = CALLS[call]
    with pytest.raises(SpecError) as caught:
        function()
    assert str(caught.value) == f"{name} 'runs/a\\x00b': a path cannot hold a NUL byte"
    assert list(tmp_path.iterdir()) == []


def test_train_init_refuses_a_checkpoint_whose_vocabulary_is_smaller_than_its_tokenizer(tiny_mlm, tmp_path, capsys):
    from mlmh.training.models import load_init

    small = tmp_path / "small-vocab"
    size = with_half_the_embeddings(tiny_mlm, small, "AutoModelForMaskedLM")
    with pytest.raises(ModelError, match=f"init checkpoint {small}: config.json's vocab_size is {size}, but the "
                                         "tokenizer gives ids up to"):
        load_init(str(small), "mlm")
    code, _, err = run_cli(capsys, "train", "--dataset", "pan", "--objective", "mlm", "--init", str(small),
                           "--max-steps", "1", "--threads", "1", "--out", str(tmp_path / "out"))
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 1 and "resize its embeddings" in lines[-1] and not any(word in err for word in EXCEPTION_TYPES), err
    assert not (tmp_path / "out").exists()
