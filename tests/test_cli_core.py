"""The CLI spine: fast help, one-line errors with the right exit codes, --debug tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from mlmh.cli import COMMANDS, cli, main
from mlmh.errors import MlmhError, SpecError


#: libraries whose import alone takes longer than the whole of `mlmh --help` may (0.15 s, issue 18)
HEAVY = ("torch", "transformers", "tokenizers", "numpy", "scipy", "sklearn", "textual", "rich", "ray", "nltk",
         "matplotlib", "pandas")


def test_help_lists_every_command_without_importing_heavy_libraries():
    code = ("import sys; from mlmh.cli import main\ntry:\n main(['--help'])\nexcept SystemExit: pass\n"
            f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]"
    for name in COMMANDS:
        assert name in out.stdout


def test_every_command_has_help_with_examples():
    runner = CliRunner()
    for name in COMMANDS:
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Example" in result.output, f"`mlmh {name} --help` has no examples"


def test_unknown_command_is_usage_error(capsys):
    with pytest.raises(SystemExit) as info:
        main(["nosuchcommand"])
    assert info.value.code == 2
    assert "No such command" in capsys.readouterr().err


@pytest.mark.parametrize("exc, code", [(SpecError("unknown masking 'randm'"), 2), (MlmhError("disk full"), 1), (ValueError("odd"), 1)])
def test_errors_are_one_line_with_exit_codes(monkeypatch, capsys, exc, code):
    def boom(*args, **kwargs):
        raise exc

    monkeypatch.setattr(cli, "main", boom)
    with pytest.raises(SystemExit) as info:
        main(["plugins"])
    assert info.value.code == code
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(exc) in err


def test_debug_shows_the_traceback(monkeypatch):
    def boom(*args, **kwargs):
        raise MlmhError("disk full")

    monkeypatch.setattr(cli, "main", boom)
    with pytest.raises(MlmhError):
        main(["--debug", "plugins"])


def test_ls_json_shape_and_bad_kind():
    result = CliRunner().invoke(cli, ["ls", "presets", "--json"])
    assert result.exit_code == 0
    for row in json.loads(result.output):
        assert {"name", "description", "parameters", "plugin"} <= set(row)
    assert CliRunner().invoke(cli, ["ls", "widgets"]).exit_code == 2


def test_ls_without_a_kind_is_an_overview_of_every_kind():
    from mlmh.commands.ls import KIND_CHOICES
    from mlmh.registry import PLURAL, get_registry

    result = CliRunner().invoke(cli, ["ls", "--json"])
    assert result.exit_code == 0
    names = json.loads(result.output)
    assert list(names) == KIND_CHOICES
    assert names["presets"] == get_registry().names("preset") and "pan" in names["presets"]
    assert all(names[kind] == get_registry().names(PLURAL[kind]) for kind in KIND_CHOICES)
    table = CliRunner().invoke(cli, ["ls"], terminal_width=200)
    assert table.exit_code == 0
    for kind, found in names.items():
        assert any(line.split("│")[1:4] and kind in line and f" {len(found)} " in line for line in table.output.splitlines())


def test_eval_help_names_every_registered_preset():
    from mlmh.registry import get_registry

    shown = " ".join(CliRunner().invoke(cli, ["eval", "--help"], terminal_width=200).output.split())
    assert f"Presets: {', '.join(get_registry().names('preset'))};" in shown
    assert len(get_registry().names("preset")) >= 7


def test_doctor_json_reports_every_check():
    result = CliRunner().invoke(cli, ["doctor", "--json"])
    rows = json.loads(result.output[: result.output.rindex("]") + 1])
    names = {r["name"] for r in rows}
    assert {"python packages", "plugins", "cache"} <= names
    for row in rows:
        assert row["ok"] or row["fix"], f"check {row['name']} fails without saying how to fix it"
