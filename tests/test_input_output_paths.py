"""The output-path rule covers a run's own files, and the input-path rule refuses files that never end: `human export
--out` never writes over a run's key or results, and a device, FIFO or socket given as an input (`score --pred`,
`human import`, a run file) is one line naming it, before a byte is read."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mlmh.cli import main
from mlmh.errors import DataError
from mlmh.storage.inputs import check_input_file
from mlmh.storage.rundir import CONFIG, HUMAN_KEY, HUMAN_SHEET, OWN_NAMES, RESULTS

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def run_dir(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    rows = [{"condition": c, "doc_id": f"d{d}", "original": f"original {d}.", "masked_text": "x", "text": f"{c} {d}."}
            for c in ("mlm", "clm") for d in range(3)]
    (run / "generations.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    (run / RESULTS).write_text(json.dumps({"run_id": "r", "config": {"preset": "t"}, "conditions": []}), encoding="utf-8")
    return run


def _tree(path: Path) -> dict[str, bytes]:
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("name", sorted(OWN_NAMES - {HUMAN_SHEET}))
def test_human_export_never_writes_over_a_file_of_the_run(run_dir, capsys, name):
    """Every own name of a run, present or not (the key is not there before the first export): refused in one
    line, nothing written."""
    before = _tree(run_dir)
    with pytest.raises(SystemExit) as info:
        main(["human", "export", str(run_dir), "--n", "4", "--out", str(run_dir / name)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and len(err.splitlines()) == 1, err
    assert f"--out {run_dir / name} is a file of the run in {run_dir}" in err
    assert _tree(run_dir) == before


def test_human_export_refuses_another_runs_files_and_keeps_its_own_sheet(run_dir, tmp_path, capsys):
    other = tmp_path / "other"
    other.mkdir()
    (other / CONFIG).write_text(json.dumps({"config": {}}), encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["human", "export", str(run_dir), "--n", "4", "--out", str(other / HUMAN_KEY)])
    assert "is a file of the run in" in capsys.readouterr().err and not (other / HUMAN_KEY).exists()
    main(["human", "export", str(run_dir), "--n", "4", "--out", str(run_dir / HUMAN_SHEET)])
    assert (run_dir / HUMAN_SHEET).read_text(encoding="utf-8").startswith("item,text")
    assert json.loads((run_dir / HUMAN_KEY).read_text(encoding="utf-8"))["items"]


def test_human_import_names_a_device_as_such(run_dir, capsys):
    main(["human", "export", str(run_dir), "--n", "4"])
    with pytest.raises(SystemExit) as info:
        main(["human", "import", str(run_dir), os.devnull])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 1 and "does not exist" not in err
    assert f"rating sheet {os.devnull} is a character device, not a file" in err


def _fifo(tmp_path: Path) -> Path:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_score_refuses_a_file_that_never_ends_before_reading_it(tmp_path, special):
    """In a child with a memory cap and a time limit: the old reader read /dev/zero until it was killed and
    blocked on a FIFO forever."""
    pred = str(_fifo(tmp_path)) if special == "fifo" else special
    (tmp_path / "ref.txt").write_text("a b c\n", encoding="utf-8")

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "harness"), str(ROOT / "plugins"),
                                                        os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "mlmh", "score", "-m", "bleu", "--pred", pred, "--ref",
                           str(tmp_path / "ref.txt")], capture_output=True, text=True, timeout=120, preexec_fn=cap,
                          env=env)
    assert done.returncode == 1, done.stderr
    kind = "a FIFO (named pipe)" if special == "fifo" else "a character device"
    assert f"{pred} is {kind}, not a file" in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("special", ["/dev/zero", "/dev/null", "fifo"])
def test_every_input_reader_refuses_a_special_file(tmp_path, special):
    from mlmh.run.score_files import read_texts
    from mlmh.storage.jsonl import text_lines

    path = _fifo(tmp_path) if special == "fifo" else Path(special)
    for read in (check_input_file, lambda p: list(text_lines(p)), read_texts):
        with pytest.raises(DataError, match="not a file: mlmh reads only regular files"):
            read(path)


def _feed(fifo: Path) -> None:
    """Write one TOML line into ``fifo`` once someone opens it (what a reader of the FIFO would get)."""
    try:
        with open(fifo, "w", encoding="utf-8") as handle:
            handle.write("name = 1\n")
    except OSError:
        pass


def test_a_preset_file_or_a_dataset_file_that_is_a_fifo_is_named_not_read(tmp_path, capsys):
    from mlmh_builtins.dataset_support import require_file

    fifo = tmp_path / "preset.toml"
    os.mkfifo(fifo)
    writer = threading.Thread(target=_feed, args=(fifo,), daemon=True)  # a reader that opens it is not left blocked
    writer.start()
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", str(fifo)])
    os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # lets the writer finish when mlmh never opened it
    writer.join(5)
    err = capsys.readouterr().err.strip()
    assert info.value.code == 1 and f"preset file {fifo} is a FIFO (named pipe), not a file" in err
    with pytest.raises(DataError, match="pairs file /dev/zero is a character device, not a file"):
        require_file(Path("/dev/zero"), "pairs file")
