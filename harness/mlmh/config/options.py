"""Command-line options every command reads the same way: repeatable options that also take comma
lists, and component specs checked where they are typed, so an error names the flag the user typed
(``--masking nope: unknown masking 'nope' ...``) rather than the preset the flag would have overridden."""

from __future__ import annotations

import math
import os
import re
from typing import Any, Callable, Iterable

import click

from mlmh import bounds
from mlmh.bounds import Bound, ceiling, limit_of
from mlmh.errors import MlmhError, SpecError
from mlmh.storage.inputs import refuse_nul
from mlmh.types.runconfig import run_options

#: a piece ``key=value`` whose key is a bare parameter name continues the spec before it
_PARAMETER = re.compile(r"^\s*[A-Za-z_][\w.-]*\s*=")


def split_list(values: Iterable[str], flag: str) -> list[str]:
    """The items of a repeatable option whose values may each hold several, comma-separated.

    A spec's own parameters are comma-separated too (``random:ratio=0.3,seed=1``), so a piece of the
    form ``key=value`` continues the spec before it and any other piece starts a new one:
    ``bleu,rouge:use_stemmer=true,lsum_split=newline,meteor`` is three specs.
    """
    items: list[str] = []
    for value in values:
        found = 0
        for piece in (p.strip() for p in value.split(",")):
            if not piece:
                continue
            if _PARAMETER.match(piece):
                if not items or not found or ":" not in items[-1]:
                    raise SpecError(f"{flag} {value}: parameter '{piece}' follows no 'NAME:' spec")
                items[-1] += "," + piece
            else:
                items.append(piece)
                found += 1
        if not found:
            raise SpecError(f"{flag} {value!r}: nothing given")
    return items


def build_spec(kind: str, spec: str, flag: str) -> Any:
    """The component ``spec`` builds, or a one-line SpecError naming ``flag`` and the spec."""
    from mlmh.registry import get_registry

    try:
        return get_registry().build(kind, spec)
    except SpecError as exc:
        raise SpecError(f"{flag} {spec}: {exc}") from None


def flag_of(param: click.Parameter) -> str:
    """The long flag of a click option (``--masking``), as the user typed it."""
    return max(param.opts, key=len)


def specs(kind: str, *, none: bool = False) -> Callable[[click.Context, click.Parameter, Any], list[str]]:
    """A click callback for a repeatable spec option: comma lists flattened, each spec checked once.
    ``none=True`` lets a lone ``none`` through (no metrics, no tasks)."""

    def callback(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[str]:
        flag = flag_of(param)
        items = split_list(values, flag)
        if none and [item.lower() for item in items] == ["none"]:
            return items
        if none and "none" in (item.lower() for item in items):
            others = ", ".join(item for item in items if item.lower() != "none")
            raise SpecError(f"{flag} {','.join(items)}: 'none' means no {kind}s and stands alone; give {flag} none "
                            f"for no {kind}s, or {flag} {others} without it")
        for item in items:
            build_spec(kind, item, flag)
        return items

    return callback


def seeds(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> list[int]:
    """A click callback for ``--seed``: repeatable or a comma list of integers >= 0."""
    flag = flag_of(param)
    out = []
    for item in split_list(values, flag):
        if not item.isdigit():
            raise SpecError(f"{flag} {item}: a seed is an integer >= 0")
        out.append(SEED.convert(item, param, ctx))
    return out


def limit(ctx: click.Context, param: click.Parameter, value: str | None) -> int | float | None:
    """A click callback for a run's ``--limit`` and ``--control``: N documents or a fraction 0.x (0: all for
    ``--limit``, none for ``--control``)."""
    if value is None:
        return None
    from mlmh.config.presets import parse_limit
    from mlmh.types.runconfig import SHAPES, run_options

    try:
        bounds.check(float(value), bounds.COUNT, f"{flag_of(param)} {value}:")
    except ValueError:
        pass  # not a number: parse_limit says so
    try:
        return parse_limit(value, flag_of(param), str(param.name))
    except SpecError:
        raise SpecError(f"{flag_of(param)} {value}: expected {SHAPES[run_options()[str(param.name)].shape]}") from None


def spec(kind: str) -> Callable[[click.Context, click.Parameter, Any], str | None]:
    """A click callback for an option naming one component (``--dataset``): its spec, checked where it is typed."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None:
            build_spec(kind, value, flag_of(param))
        return value

    return callback



def may_be_empty(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback marking an option whose empty value means something (``bench --metrics ''``: none)."""
    return value


def not_empty(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A click callback: a text or path option given empty (an unset shell variable) is refused naming the
    flag, never read as "left out". :func:`refuse_empty_values` puts it on every such option of a command."""
    from click.core import ParameterSource

    if isinstance(value, str) and not value.strip() and ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT:
        flag = flag_of(param)
        raise SpecError(f"{flag} {value!r}: empty (an unset variable?); leave {flag} out for its default")
    return value


def refuse_empty_values(command: click.Command) -> click.Command:
    """Give every text or path option of ``command`` (and its subcommands) that has no callback of its own
    :func:`not_empty`: one rule for every command's options, as :class:`Number` is for numeric ones."""
    commands = list(command.commands.values()) if isinstance(command, click.Group) else [command]
    for each in commands:
        for param in each.params:
            if (isinstance(param, click.Option) and not param.is_flag and param.callback is None
                    and isinstance(param.type, (click.types.StringParamType, click.Path))):
                param.callback = not_empty
    return command


def data_path(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback for ``--data``: a path, or left out for the bundled sample. An empty value (an
    unset shell variable) is refused, never read as "left out"."""
    return check_path(value, flag_of(param), left_out="to use the bundled sample")


class Number(click.ParamType):
    """A numeric option: an int or a float, finite, within [min, max] (or strictly inside where
    ``open``), refused in one line naming the flag and the value. Every numeric flag of every command
    is declared with it (tests walk the commands), so NaN, infinities and out-of-range values are
    refused where they are typed, never turned into a default further in."""

    def __init__(self, kind: type = int, *, min: float | None = None, max: "float | Bound | None" = None,
                 open: bool = False, meaning: str = "") -> None:
        self.kind = kind
        top = ceiling(max, kind is int)  # an integer without a bound of its own: mlmh.bounds.COUNT
        self.min, self.max, self.open = min, limit_of(top), open
        self.why = top.why if isinstance(top, Bound) else ""
        self.meaning = meaning
        self.name = "integer" if kind is int else "number"

    def range_text(self) -> str:
        noun = "an integer" if self.kind is int else "a number"
        low, high = ("> ", "< ") if self.open else (">= ", "<= ")
        bounds = [f"{low}{plain_number(self.min)}" if self.min is not None else "",
                  f"{high}{plain_number(self.max)}{f' ({self.why})' if self.why else ''}" if self.max is not None else ""]
        bounds = [b for b in bounds if b]
        text = f"{noun} {' and '.join(bounds)}" if bounds else noun
        return f"{text} ({self.meaning})" if self.meaning else text

    def get_metavar(self, param: click.Parameter, ctx: click.Context | None = None) -> str:
        return "N" if self.kind is int else "X"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None, *,
                flag: str | None = None) -> Any:
        """``value`` checked; refused naming ``flag`` (default: the click option's, for the Python API the
        argument's name)."""
        raw: str | int | float
        if isinstance(value, bool) or value is None:
            raw, text = "", repr(value)
        elif isinstance(value, (int, float)):
            raw, text = value, str(value)
        else:
            raw, text = str(value).strip(), str(value)
        flag = flag or (flag_of(param) if param is not None else "value")
        try:
            number = float(raw)
            if self.kind is int:
                if not math.isfinite(number) or (isinstance(raw, str) and not re.fullmatch(r"[+-]?\d+", raw)) \
                        or (isinstance(raw, float) and not raw.is_integer()):
                    raise ValueError(text)
                number = int(raw)
        except (TypeError, ValueError):
            raise SpecError(f"{flag} {text!s}: expected {self.range_text()}") from None
        below = self.min is not None and (number <= self.min if self.open else number < self.min)
        above = self.max is not None and (number >= self.max if self.open else number > self.max)
        if not math.isfinite(number) or below or above:
            raise SpecError(f"{flag} {text!s}: expected {self.range_text()}")
        return number

    def __repr__(self) -> str:
        return f"Number({self.kind.__name__}, min={self.min}, max={self.max}, open={self.open})"


def plain_number(number: float) -> str:
    """A number as a user types it: whole numbers in full (4, not 4.0; 1000000000, not 1e+09)."""
    return str(int(number)) if float(number).is_integer() and abs(number) < 1e18 else f"{number:g}"


#: the numeric flags shared by several commands
SEED = Number(int, min=0, max=bounds.SEED)
COUNT = Number(int, min=1)
THREADS = Number(int, min=1, max=bounds.THREADS)
WORKERS = Number(int, min=1, max=bounds.WORKERS)
BATCH_SIZE = Number(int, min=1, max=bounds.BATCH)
TRAINING_STEPS = Number(int, min=1, max=bounds.TRAINING_STEPS)


# -- the run options, as mlmh.types.runconfig.RunConfig declares them ------------------------------------------
def run_option(key: str) -> Callable[[Any], Any]:
    """``mlmh eval``'s click option for run option ``key``, made from its declaration on :class:`RunConfig`
    (:class:`mlmh.types.runconfig.RunOption`): its flag, help and metavar, and the callback or type its shape reads with,
    so the value is checked where it is typed, as the preset's is where it is read."""
    declared = run_options()[key]
    settings: dict[str, Any] = {"help": declared.help}
    if declared.metavar:
        settings["metavar"] = declared.metavar
    if declared.shape == "specs":
        settings.update(multiple=True, callback=specs(declared.component, none=declared.none))
    elif declared.shape == "spec":
        settings["callback"] = spec(declared.component)
    elif declared.shape == "path":
        settings["callback"] = data_path
    elif declared.shape == "seeds":
        settings.update(multiple=True, callback=seeds)
    elif declared.shape in ("limit", "share"):
        settings["callback"] = limit
    elif declared.shape == "count":
        settings["type"] = Number(int, min=1, max=declared.bound)
    elif declared.shape == "flag":
        settings.update(is_flag=True, default=None)
    if not declared.flag or declared.shape == "text":
        raise ValueError(f"run option '{key}' has no flag: it is a preset key only")
    return click.option(declared.flag, key, **settings)


def run_option_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Every run option that has a flag as a click option of ``command`` (:func:`run_option`), in
    :class:`RunConfig`'s field order: a run option declared on its field is a flag of ``mlmh eval`` with no list
    to keep here. The command takes them as keyword arguments (``**run_values``) and reads them with
    :func:`run_overrides`."""
    for key in reversed([key for key, declared in run_options().items() if declared.flag]):
        command = run_option(key)(command)
    return command


def run_overrides(values: dict[str, Any]) -> dict[str, Any]:
    """The preset overrides of the run options among a command's parsed ``values`` (``ctx.params``): an option
    left out is None, so the preset's value stands; a list given as a lone ``none`` is an empty list."""
    out: dict[str, Any] = {}
    for key, declared in run_options().items():
        if not declared.flag:
            continue
        value = values.get(key)
        if declared.shape in ("specs", "seeds"):
            value = list(value) if value else None
            if value and declared.none and [str(v).lower() for v in value] == ["none"]:
                value = []
        out[key] = value
    return out


class LateHelpOption(click.Option):
    """An option whose help is made when help is shown, by ``late_help(base_help)``: from the registry, so it names
    what plugins register and declare, can never go stale, and costs nothing otherwise."""

    def __init__(self, *args: Any, late_help: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.base_help = self.help or ""
        self.late_help = late_help

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self.late_help(self.base_help)
        return super().get_help_record(ctx)


def _preset_help(base: str) -> str:
    from mlmh.registry import get_registry

    names = ", ".join(get_registry().names("preset"))
    return f"{base or 'Preset.'} Presets: {names}; or a TOML file (mlmh ls presets)."


class PresetOption(LateHelpOption):
    """``--preset``, whose help names every registered preset."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, late_help=_preset_help, **kwargs)


class PresetHelpCommand(click.Command):
    """A command whose ``--help`` after ``--preset NAME`` ends with what that preset runs (models, maskings,
    samplers, metrics, tasks, its declared cost): help is shown before options are processed, so the preset is
    read from the raw arguments here."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta["mlmh.help_preset"] = _preset_argument(args)
        return super().parse_args(ctx, args)

    def format_epilog(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        super().format_epilog(ctx, formatter)
        name = ctx.meta.get("mlmh.help_preset")
        if not name:
            return
        from mlmh.config.presets import preset_summary

        with formatter.section(f"Preset {name}"):
            try:
                formatter.write_dl(preset_summary(name))
            except MlmhError as exc:
                formatter.write_text(str(exc))


def _preset_argument(args: list[str]) -> str | None:
    """The value of ``--preset NAME`` or ``--preset=NAME`` among raw command-line ``args``."""
    for i, arg in enumerate(args):
        if arg == "--preset" and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith("--preset="):
            return arg.split("=", 1)[1]
    return None


# -- the same rules for the Python API's arguments (mlmh.api): refused naming the argument --------------
def check_path(value: Any, name: str, *, left_out: str = "", optional: bool = True) -> str | None:
    """A path (text or ``os.PathLike``), or None where ``optional``; an empty one (an unset variable) is refused,
    never read as "not given"."""
    if value is None:
        if not optional:
            raise SpecError(f"{name} None: expected a path (text or pathlib.Path)")
        return None
    if not isinstance(value, (str, os.PathLike)):
        raise SpecError(f"{name} {value!r}: expected a path (text or pathlib.Path), not {_kind(value)}")
    text = os.fspath(value)
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"{name} {text!r}: empty path (an unset variable?)" + (f"; leave {name} out {left_out}"
                                                                                 if left_out else ""))
    refuse_nul(text, name)
    return text


def check_text(value: Any, name: str, *, optional: bool = False, empty: bool = False) -> str | None:
    """Non-empty text (a spec, a preset name, a text to regenerate); None only where ``optional``; empty text only
    where ``empty`` (its own rule then says what is missing)."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise SpecError(f"{name} {value!r}: expected text, not {_kind(value)}")
    if not value.strip() and not empty:
        raise SpecError(f"{name} {value!r}: empty")
    return value


def check_number(value: Any, name: str, rule: Number) -> Any:
    """A number by ``rule`` (the flag's own :class:`Number`): an int or float, never text or true/false."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SpecError(f"{name} {value!r}: expected {rule.range_text()}, not {_kind(value)}")
    return rule.convert(value, None, None, flag=name)


def check_flag(value: Any, name: str) -> bool:
    """True or False, never a value that merely reads as one (``"false"`` is true to Python)."""
    if not isinstance(value, bool):
        raise SpecError(f"{name} {value!r}: expected True or False, not {_kind(value)}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if not isinstance(value, str) or value not in choices:
        raise SpecError(f"{name} {value!r}: expected one of {', '.join(choices)}")
    return value


def check_callable(value: Any, name: str) -> Any:
    """None or a function (a progress listener)."""
    if value is not None and not callable(value):
        raise SpecError(f"{name} {value!r}: expected a function that takes each event, or None")
    return value


def check_cancel(value: Any, name: str) -> Any:
    """None or an event with ``is_set()`` (a :class:`threading.Event`)."""
    if value is not None and not callable(getattr(value, "is_set", None)):
        raise SpecError(f"{name} {value!r}: expected a threading.Event (set it to stop the run), or None")
    return value


def check_instance(value: Any, name: str, cls: type, made_by: str, *, optional: bool = False) -> Any:
    """An object of ``cls`` (or None where ``optional``); else refused naming the argument and what makes one."""
    if (value is None and optional) or isinstance(value, cls):
        return value
    raise SpecError(f"{name} {value!r}: expected {made_by}{' or None' if optional else ''}, not {_kind(value)}")


def check_has(value: Any, name: str, methods: Iterable[str], what: str, *, optional: bool = False) -> Any:
    """An object with every one of ``methods`` (a protocol: an executor), or None where ``optional``."""
    if (value is None and optional) or (value is not None and all(callable(getattr(value, m, None)) for m in methods)):
        return value
    raise SpecError(f"{name} {value!r}: expected {what}{' or None' if optional else ''}, not {_kind(value)}")


def check_pairs(value: Any, name: str, what: str) -> list[tuple[str, str]]:
    """A non-empty list or tuple of (text, text) pairs, each text non-empty."""
    if not isinstance(value, (list, tuple)) or not value:
        raise SpecError(f"{name} {value!r}: expected a non-empty list of {what}, not {_kind(value)}")
    for n, pair in enumerate(value):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise SpecError(f"{name}[{n}] {pair!r}: expected a pair {what}, not {_kind(pair)}")
        for item in pair:
            check_text(item, f"{name}[{n}]")
    return [tuple(pair) for pair in value]


def _kind(value: Any) -> str:
    return "None" if value is None else {bool: "true/false", str: "text", int: "an integer", float: "a number",
                                         list: "a list", dict: "a dict"}.get(type(value), f"a {type(value).__name__}")
