"""mlmh.config.options: comma lists that keep a spec's parameters with it, specs checked where they are typed, and
bad input reported in one line that names the flag the user typed."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from mlmh.cli import main
from mlmh.config import options
from mlmh.config.presets import parse_limit
from mlmh.errors import SpecError


def test_split_list_keeps_parameters_with_their_spec():
    assert options.split_list(["bleu,rouge:use_stemmer=true,lsum_split=newline,meteor"], "--metric") == [
        "bleu", "rouge:use_stemmer=true,lsum_split=newline", "meteor"]
    assert options.split_list(["bleu", "distinct-n:n=2", " seq-rep-n:n=3, spans_only=false "], "--metric") == [
        "bleu", "distinct-n:n=2", "seq-rep-n:n=3,spans_only=false"]
    assert options.split_list(["random:ratio=0.3,seed=1", "span"], "--masking") == ["random:ratio=0.3,seed=1", "span"]


@pytest.mark.parametrize("values, message", [
    (["bleu,n=2"], "--metric bleu,n=2: parameter 'n=2' follows no 'NAME:' spec"),
    (["n=2"], "--metric n=2: parameter 'n=2' follows no 'NAME:' spec"),
    (["rouge:use_stemmer=true", "n=2"], "--metric n=2: parameter 'n=2' follows no 'NAME:' spec"),  # not across values
    ([" , "], "--metric ' , ': nothing given"),
])
def test_split_list_errors_name_the_flag_and_value(values, message):
    with pytest.raises(SpecError) as info:
        options.split_list(values, "--metric")
    assert str(info.value) == message


def test_build_spec_prefixes_the_flag_and_spec():
    assert options.build_spec("masking", "random:ratio=0.3", "--masking").params["ratio"] == 0.3
    with pytest.raises(SpecError) as info:
        options.build_spec("masking", "nope", "--masking")
    assert str(info.value).startswith("--masking nope: ") and "\n" not in str(info.value)
    with pytest.raises(SpecError, match=r"^--masking random:ratio=2: .*ratio"):
        options.build_spec("masking", "random:ratio=2", "--masking")


@pytest.fixture
def probe():
    """A command with every callback of mlmh.config.options, returning what the callbacks made of the input."""
    @click.command()
    @click.option("--masking", "maskings", multiple=True, callback=options.specs("masking"))
    @click.option("--metric", "-m", "metrics", multiple=True, callback=options.specs("metric", none=True))
    @click.option("--seed", "seeds", multiple=True, callback=options.seeds)
    @click.option("--limit", callback=options.limit)
    @click.option("--dataset", callback=options.spec("dataset"))
    def command(**values):
        click.echo(repr(sorted(values.items())))

    def invoke(*args):
        result = CliRunner().invoke(command, list(args))
        return result.output if result.exception is None else result.exception

    return invoke


def test_callbacks_turn_good_input_into_values(probe):
    out = probe("--masking", "random:ratio=0.3,span", "--metric", "none", "--seed", "1,2", "--seed", "5",
                "--limit", "0.5", "--dataset", "pan")
    assert out == repr(sorted({"maskings": ["random:ratio=0.3", "span"], "metrics": ["none"], "seeds": [1, 2, 5],
                               "limit": 0.5, "dataset": "pan"}.items())) + "\n"
    assert "'limit', 3)" in probe("--limit", "3") and "'limit', None)" in probe()


@pytest.mark.parametrize("args, start", [
    (["--masking", "nope"], "--masking nope: "),
    (["--masking", "random,ratio=0.3"], "--masking random,ratio=0.3: parameter 'ratio=0.3'"),
    (["-m", "bleu,none"], "--metric bleu,none: 'none' means no metrics and stands alone"),  # `none` only alone
    (["--seed", "1,x"], "--seed x: a seed is an integer >= 0"),
    (["--seed", "-1"], "--seed -1: a seed is an integer >= 0"),
    (["--limit", "abc"], "--limit abc: expected a number of documents, a fraction 0.x, or 0 for all"),
    (["--limit", "1.5"], "--limit 1.5: expected"),
    (["--dataset", "nope"], "--dataset nope: "),
])
def test_callbacks_reject_bad_input_naming_the_flag(probe, args, start):
    error = probe(*args)
    assert isinstance(error, SpecError), error
    assert str(error).startswith(start) and "\n" not in str(error)


def test_a_bad_option_is_one_line_on_stderr_with_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["eval", "--preset", "quick", "--limit", "-2", "--show-config"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.strip().splitlines() == ["Error: --limit -2: expected a number of documents, a fraction 0.x, or 0 for all"]


def test_parse_limit_is_the_one_rule_for_presets_and_flags():
    assert parse_limit(0, "x") == 0 and parse_limit("12", "x") == 12 and parse_limit(3.0, "x") == 3
    assert parse_limit("0.25", "x") == 0.25
    for bad in (-1, True, "many", 1.5, "1.5"):
        with pytest.raises(SpecError, match="^preset.toml: key 'limit'"):
            parse_limit(bad, "preset.toml")
