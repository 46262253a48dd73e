"""No silent substitutions (issue 31, item 4): a value the user typed is used or refused, never replaced
by a default; every numeric flag of every command refuses NaN, infinities and out-of-range values in
one line that names the flag (one rule: mlmh.options.Number)."""

from __future__ import annotations

import click
import pytest

from mlmh import options
from mlmh.cli import COMMANDS, cli, main


def _commands():
    """(path, command) of every builtin command and subcommand."""
    ctx = click.Context(cli)
    for name in sorted(COMMANDS):
        command = cli.get_command(ctx, name)
        if isinstance(command, click.Group):
            for sub in sorted(command.commands):
                yield (name, sub), command.commands[sub]
        else:
            yield (name,), command


def _numeric_options():
    for path, command in _commands():
        for param in command.params:
            if isinstance(param, click.Option) and not param.is_flag and not param.multiple:
                yield path, param


def test_every_numeric_flag_is_declared_with_the_one_rule():
    numeric = (click.types.IntParamType, click.types.FloatParamType)
    found = 0
    for path, param in _numeric_options():
        where = f"mlmh {' '.join(path)} {options.flag_of(param)}"
        assert not isinstance(param.type, numeric), f"{where}: declare it with options.Number"
        found += isinstance(param.type, options.Number)
    assert found >= 15


def _refusals(param):
    rule: options.Number = param.type
    values = ["nan", "inf", "-inf", "1e999", "abc"]
    if rule.min is not None:
        values.append(str(rule.min if rule.open else rule.min - 1))
    if rule.max is not None:
        values.append(str(rule.max if rule.open else rule.max + 1))
    if rule.kind is int:
        values.append("1.5")
    return values


@pytest.mark.parametrize("path, param", [pytest.param(p, o, id=f"{' '.join(p)} {options.flag_of(o)}")
                                         for p, o in _numeric_options() if isinstance(o.type, options.Number)])
def test_every_numeric_flag_refuses_bad_values_naming_the_flag(path, param, capsys):
    flag = options.flag_of(param)
    for value in _refusals(param):
        with pytest.raises(SystemExit) as info:
            main([*path, f"{flag}={value}"])
        err = capsys.readouterr().err
        assert info.value.code == 2, (value, err)
        assert err.startswith(f"Error: {flag} {value}: expected ") and err.count("\n") == 1, (value, err)


def test_number_accepts_what_is_in_range():
    rule = options.Number(float, min=0, max=1, open=True)
    assert rule.convert("0.25", None, None) == 0.25
    assert options.Number(int, min=1).convert("7", None, None) == 7
    assert options.SEED.convert(0, None, None) == 0


# -- regressions of the fault round -----------------------------------------------------------------
@pytest.mark.parametrize("args, message", [
    (["train", "--max-steps", "0"], "Error: --max-steps 0: expected an integer >= 1"),
    (["train", "--mask-ratio", "0"], "Error: --mask-ratio 0: expected a number > 0 and < 1"),
    (["train", "--eval-every", "0"], "Error: --eval-every 0: expected an integer >= 1"),
    (["train", "--epochs", "nan"], "Error: --epochs nan: expected a number > 0"),
    (["score", "--seed", "-1"], "Error: --seed -1: expected an integer >= 0"),
    (["eval", "--data", ""], "Error: --data '': empty path (an unset variable?)"),
    (["generate", "--data", " "], "Error: --data ' ': empty path (an unset variable?)"),
    (["train", "--data", ""], "Usage: mlmh train [OPTIONS]\nTry 'mlmh train --help' for help.\n\nError: Invalid value "
                              "for '--data': Path '' does not exist."),
])
def test_typed_values_are_never_replaced_by_defaults(args, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(args)
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(message), err


def test_train_passes_typed_values_and_not_given_ones_apart(monkeypatch, tmp_path):
    """What the CLI hands make_config: a typed value as typed; "not given" as the default marker."""
    from mlmh import training

    seen = {}

    def fake_make_config(objective, size, **kwargs):
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(training, "make_config", fake_make_config)
    with pytest.raises(SystemExit):
        main(["train", "--dataset", "pan", "--objective", "mlm", "--out", str(tmp_path / "m"), "--max-steps", "3",
              "--mask-ratio", "0.2"])
    assert seen["max_steps"] == 3 and seen["mask_ratio"] == 0.2 and seen["eval_every"] == 0
