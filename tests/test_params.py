"""Component specs and declared parameters: parsing, conversion, one-line errors."""

import pytest

from mlmh.components import Masking
from mlmh.errors import SpecError
from mlmh.params import Param, parse_spec, unknown_message


class Dummy(Masking):
    name = "dummy"
    description = "test masking"
    parameters = (
        Param("ratio", float, 0.15, "share of words", min=0.0, max=1.0),
        Param("steps", int, 4, "iterations", min=1),
        Param("greedy", bool, True, "argmax"),
        Param("schedule", str, "linear", "schedule", choices=("linear", "cosine")),
    )


def test_parse_spec_name_only_and_params():
    assert parse_spec("random") == ("random", {})
    assert parse_spec(" mask-predict:steps=4, temperature=0.7 ") == ("mask-predict", {"steps": "4", "temperature": "0.7"})


@pytest.mark.parametrize("bad", ["", ":ratio=1", "random:ratio", "random:=3", "random:a=1,a=2"])
def test_parse_spec_rejects_malformed(bad):
    with pytest.raises(SpecError):
        parse_spec(bad)


def test_configured_converts_strings_and_keeps_defaults():
    d = Dummy().configured(ratio="0.3", steps="10", greedy="false", schedule="cosine")
    assert d.params == {"ratio": 0.3, "steps": 10, "greedy": False, "schedule": "cosine"}
    assert Dummy().params["ratio"] == 0.15  # the registered instance is untouched
    assert d.spec == "dummy:greedy=false,ratio=0.3,schedule=cosine,steps=10"
    assert d.short_spec == "dummy:greedy=false,ratio=0.3,schedule=cosine,steps=10"
    assert Dummy().short_spec == "dummy"


@pytest.mark.parametrize(
    "override, fragment",
    [
        ({"ratio": "abc"}, "expects float"),
        ({"ratio": "1.5"}, "must be <= 1.0"),
        ({"ratio": "-0.1"}, "must be >= 0.0"),
        ({"steps": "2.5"}, "expects int"),
        ({"greedy": "maybe"}, "expects bool"),
        ({"schedule": "cubic"}, "must be one of linear, cosine"),
        ({"ratoi": "0.3"}, "did you mean 'ratio'"),
    ],
)
def test_bad_values_are_one_line_spec_errors(override, fragment):
    with pytest.raises(SpecError) as info:
        Dummy().configured(**override)
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message
    assert "dummy" in message


def test_unknown_message_suggests_close_name():
    msg = unknown_message("masking", "randm", ["random", "stopwords"])
    assert msg.startswith("unknown masking 'randm'; did you mean 'random'?")
    assert "valid: random, stopwords" in msg
    assert "did you mean" not in unknown_message("masking", "zzz", ["random"])


def test_short_spec_keeps_headline_parameters_at_their_default():
    from mlmh.registry import get_registry

    random = get_registry().get("masking", "random")
    assert random.short_spec == "random:ratio=0.15"  # a table must say how much was masked
    assert random.configured(ratio=0.5).short_spec == "random:ratio=0.5"
    assert get_registry().get("sampler", "mask-predict").short_spec == "mask-predict:steps=4"  # T, the point of it


@pytest.mark.parametrize(
    "kind, spec, where",
    [
        ("masking", "random:ratio=nan", "masking 'random': parameter 'ratio'"),
        ("masking", "random:ratio=-inf", "masking 'random': parameter 'ratio'"),
        ("sampler", "one-shot:temperature=nan", "sampler 'one-shot': parameter 'temperature'"),
        ("sampler", "one-shot:temperature=inf", "sampler 'one-shot': parameter 'temperature'"),
        ("sampler", "one-shot:top_p=NaN", "sampler 'one-shot': parameter 'top_p'"),
        ("sampler", {"name": "one-shot", "temperature": float("nan")}, "sampler 'one-shot': parameter 'temperature'"),
    ],
)
def test_non_finite_floats_are_refused_naming_component_key_and_value(kind, spec, where):
    from mlmh.registry import get_registry

    with pytest.raises(SpecError) as info:
        get_registry().build(kind, spec)
    message = str(info.value)
    assert message.startswith(f"{where} must be a finite number; got ")
    assert "nan" in message.lower() or "inf" in message.lower()
    assert "\n" not in message


def test_finite_floats_and_integral_ints_still_pass():
    assert Dummy().configured(ratio="1e-1").params["ratio"] == 0.1
    with pytest.raises(SpecError, match="parameter 'steps' expects int, got inf"):
        Dummy().configured(steps=float("inf"))


def test_empty_text_is_refused_when_the_parameter_has_a_default():
    class Paths(Masking):
        name = "paths"
        parameters = (Param("device", str, "cpu", "torch device"), Param("path", str, "", "empty = the default model"))

    assert Paths().configured(path="").params["path"] == ""  # empty has a meaning here
    with pytest.raises(SpecError, match=r"^masking 'paths': parameter 'device' must not be empty \(default: 'cpu'\)$"):
        Paths().configured(device=" ")
    with pytest.raises(SpecError, match="must be one of linear, cosine"):
        Dummy().configured(schedule="")
