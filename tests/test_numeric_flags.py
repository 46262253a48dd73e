"""No silent substitutions (issue 31, item 4): a value the user typed is used or refused, never replaced
by a default; every numeric flag of every command refuses NaN, infinities and out-of-range values in
one line that names the flag (one rule: mlmh.config.options.Number)."""

from __future__ import annotations

import click
import pytest

from mlmh.cli import COMMANDS, cli, main
from mlmh.config import options


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
    from mlmh.training import config

    seen = {}

    def fake_make_config(objective, size, **kwargs):
        seen.update(kwargs)
        raise SystemExit(0)

    monkeypatch.setattr(config, "make_config", fake_make_config)
    with pytest.raises(SystemExit):
        main(["train", "--dataset", "pan", "--objective", "mlm", "--out", str(tmp_path / "m"), "--max-steps", "3",
              "--mask-ratio", "0.2"])
    assert seen["max_steps"] == 3 and seen["mask_ratio"] == 0.2 and seen["eval_every"] == 0


# -- one validation of every argument for every face (issue 41, item 3) ------------------------------------
#: bad values of every argument of the Python API, by name; a new argument must be added here
BAD_ARGUMENTS = {
    "preset": [7, "", ["quick"]], "output_path": [123, "", " "], "progress": [5, "events"], "cancel": ["yes", 1],
    "use_cache": ["false", 1, None], "resume": ["true", 0], "workers": [0, "2", 1.5, True], "backend": ["x", 3],
    "ray_address": ["", 5], "text": [None, "", 5], "model": [None, "", 3], "masking": [None, ""],
    "sampler": ["", 5], "seed": ["x", -5, 2.7, True, float("nan")], "dataset": [None, ""], "data": ["", 5],
    "limit": [0, "3", 2.5], "batch_size": [0, "8", float("inf")], "path": [None, 3, "", ["runs/x"]],
    "announce": [5, "lines"],
}
#: the arguments each function needs to get as far as the one under test
NEEDED = {"generate": {"text": "The cat sat on the mat.", "model": "trained-mlm"},
          "generate_from_dataset": {"dataset": "pan", "model": "trained-mlm"}, "evaluate": {}, "load": {},
          "study": {"data": ["pan", "mpst"]}, "load_study": {}}


def _api_cases():
    import inspect

    import mlmh

    for function in mlmh.API:
        for name, parameter in inspect.signature(getattr(mlmh, function)).parameters.items():
            if parameter.kind is inspect.Parameter.VAR_KEYWORD:
                continue  # evaluate's preset overrides: checked by the preset's rules (mlmh.config.presets)
            assert name in BAD_ARGUMENTS, f"mlmh.{function}({name}=...) has no bad values to try"
            for value in BAD_ARGUMENTS[name]:
                yield function, name, value


@pytest.mark.parametrize("function, name, value", list(_api_cases()))
def test_every_api_argument_is_checked_naming_it_before_any_folder(function, name, value, tmp_path, monkeypatch):
    import mlmh
    from mlmh.errors import SpecError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError) as info:
        getattr(mlmh, function)(**{**NEEDED[function], name: value})
    message = str(info.value)
    assert message.startswith(f"{name} "), message
    assert "\n" not in message and "Error" not in message
    assert list(tmp_path.iterdir()) == []  # nothing made: no runs/ folder, no cache


@pytest.mark.parametrize("sweep, message", [
    ("", "--sweep-epochs '': empty (an unset variable?)"),
    (" , ", "--sweep-epochs ' , ': nothing given"),
    ("1e12", "--sweep-epochs 1e12: expected a number > 0 and < 1000"),
    ("inf", "--sweep-epochs inf: expected a number > 0 and < 1000"),
    ("0", "--sweep-epochs 0: expected a number > 0"),
    ("1,x", "--sweep-epochs x: expected a number > 0"),
])
def test_sweep_axes_refuse_empty_and_unbounded_values(sweep, message, capsys):
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "crossover", "--sweep-epochs", sweep, "--show-config"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.startswith(f"Error: {message}"), err


def test_sweep_tokens_are_bounded_too(capsys):
    with pytest.raises(SystemExit):
        main(["eval", "--preset", "crossover", "--sweep-tokens", "1e12", "--show-config"])
    assert "--sweep-tokens 1e12: expected an integer > 0 and < 1000000000" in capsys.readouterr().err


def test_a_sweep_with_no_trained_model_to_sweep_is_refused(tiny_mlm, capsys):
    with pytest.raises(SystemExit) as info:
        main(["eval", "--preset", "quick", "--model", f"hf-mlm:path={tiny_mlm}", "--sweep-epochs", "1,2",
              "--show-config"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--sweep-epochs: the run has no trained-mlm or trained-clm model to sweep" in err


def test_trained_models_epochs_share_the_sweeps_bound():
    from mlmh.errors import SpecError
    from mlmh.registry import get_registry

    with pytest.raises(SpecError, match="epochs"):
        get_registry().build("model", "trained-mlm:epochs=1e12")


def _text_options():
    for path, command in _commands():
        for param in command.params:
            if (isinstance(param, click.Option) and not param.is_flag and not isinstance(param.type, click.Choice)
                    and isinstance(param.type, (click.types.StringParamType, click.Path))
                    and param.callback is not options.may_be_empty):
                yield path, param


@pytest.mark.parametrize("path, param", [pytest.param(p, q, id=f"{' '.join(p)} {options.flag_of(q)}")
                                         for p, q in _text_options()])
def test_every_text_option_refuses_an_empty_value_naming_the_flag(path, param, capsys):
    """An empty value (an unset shell variable) is refused, never read as "left out" (issue 41, item 3)."""
    flag = options.flag_of(param)
    with pytest.raises(SystemExit) as info:
        main([*path, flag, ""])
    err = capsys.readouterr().err
    assert info.value.code == 2, err
    last = err.strip().splitlines()[-1]
    assert last.startswith("Error: ") and flag in last, err  # ours, or click's own refusal of an empty path
    assert "Traceback" not in err


def test_an_empty_sweep_through_the_api_is_refused_too():
    from mlmh import api
    from mlmh.errors import SpecError

    with pytest.raises(SpecError, match="--sweep-epochs '': nothing given"):
        api.plan("crossover", sweep_epochs="")
