"""The ``mlmh`` command line. Subcommands live in :mod:`mlmh.commands` and import lazily,
so ``mlmh --help`` never pays for torch or transformers."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from mlmh import __version__

# name -> "module:attribute"; each command is one module of mlmh.commands
COMMANDS: dict[str, tuple[str, str]] = {
    "train": ("mlmh.commands.train:train", "Train a small MLM, CLM or seq2seq model (matched size and budget) on a dataset."),
    "plugins": ("mlmh.commands.plugins_cmd:plugins", "Show installed plugins and their hooks as JSON."),
    "ls": ("mlmh.commands.ls:ls", "List registered components of one kind, with their parameters."),
    "doctor": ("mlmh.commands.doctor:doctor", "Check what is installed and ready offline, with the fix for each."),
    "score": ("mlmh.commands.score:score", "Score a file of predictions against a file of references with metric plugins."),
    "generate": ("mlmh.commands.generate:generate", "Mask a text, regenerate it with one model and sampler, show every step."),
    "eval": ("mlmh.commands.eval:eval_command", "Run a preset's experiment: generate, score, downstream, report."),
    "study": ("mlmh.commands.study:study", "Run a preset over several datasets: verdicts side by side, pooled across them."),
    "report": ("mlmh.commands.report:report", "Rebuild report.md and plots of a run from its results.json."),
    "human": ("mlmh.commands.human:human", "Blinded human rating sheets: export, then import ratings."),
    "calibrate": ("mlmh.commands.calibrate:calibrate", "Run every verdict rule under a null and an effect: its error rate and power."),
    "bench": ("mlmh.commands.bench:bench", "Time samplers against bare model forward passes: overhead, speedup, batching."),
    "tui": ("mlmh.commands.tui:tui", "Terminal UI: watch refinement step by step, run presets, compare results."),
}


#: a hyphen no line breaks at (U+2011), standing in for "-" while help text is wrapped
_NO_BREAK_HYPHEN = "\u2011"


class HelpFormatter(click.HelpFormatter):
    """click's help layout, with lines broken at spaces only: a spec (``trained-mlm``, ``mask-predict:steps=4``) or a
    word (``per-sample``) is never split at its hyphen, as click's wrapping would."""

    def write_text(self, text: str) -> None:
        start = len(self.buffer)
        super().write_text(text.replace("-", _NO_BREAK_HYPHEN))
        self._restore(start)

    def write_dl(self, rows: Any, col_max: int = 30, col_spacing: int = 2) -> None:
        start = len(self.buffer)
        super().write_dl([(first.replace("-", _NO_BREAK_HYPHEN), second.replace("-", _NO_BREAK_HYPHEN))
                          for first, second in rows], col_max, col_spacing)
        self._restore(start)

    def _restore(self, start: int) -> None:
        self.buffer[start:] = [part.replace(_NO_BREAK_HYPHEN, "-") for part in self.buffer[start:]]


class HelpContext(click.Context):
    """The context of every mlmh command: its help is laid out by :class:`HelpFormatter`."""

    formatter_class = HelpFormatter


def with_help_layout(command: click.Command) -> click.Command:
    """``command`` (and a group's subcommands) with mlmh's help layout (:class:`HelpContext`)."""
    command.context_class = HelpContext
    for sub in (command.commands.values() if isinstance(command, click.Group) else ()):
        with_help_layout(sub)
    return command


class LazyGroup(click.Group):
    """A click group whose builtin subcommands are imported only when invoked."""

    context_class = HelpContext

    def list_commands(self, ctx: click.Context) -> list[str]:
        _load_plugin_commands(self)
        return sorted(set(COMMANDS) | set(super().list_commands(ctx)))

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name in COMMANDS:
            target, _ = COMMANDS[name]
            module_name, attr = target.split(":")
            from mlmh.config.options import refuse_empty_values

            return with_help_layout(refuse_empty_values(getattr(importlib.import_module(module_name), attr)))
        _load_plugin_commands(self)
        command = super().get_command(ctx, name)
        return with_help_layout(command) if command is not None else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Builtin short help comes from the table above so --help imports no builtin command module.
        _load_plugin_commands(self)
        limit = formatter.width - 6 - max(map(len, self.list_commands(ctx)))
        rows = [(name, COMMANDS[name][1]) for name in sorted(COMMANDS)]
        rows += [(name, command.get_short_help_str(limit)) for name, command in sorted(self.commands.items())
                 if name not in COMMANDS and not command.hidden]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


_plugin_commands_loaded = False


def _load_plugin_commands(group: click.Group) -> None:
    """Let each entry-point plugin add its commands once; one that raises is named and skipped."""
    global _plugin_commands_loaded
    if _plugin_commands_loaded:
        return
    _plugin_commands_loaded = True
    from mlmh.plugins.plugin_manager import get_command_manager, plugin_label

    for impl in get_command_manager().hook.register_commands.get_hookimpls():
        try:
            impl.function(cli=group)
        except Exception as exc:
            click.echo(f"mlmh: plugin '{plugin_label(impl.plugin_name)}' failed to add its commands: "
                       f"{type(exc).__name__}: {exc}", err=True)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mlmh")
@click.option("--debug", is_flag=True, envvar="MLMH_DEBUG", help="Show full tracebacks on errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Compare how masked (BERT-style), causal (GPT-style) and seq2seq (T5/BART) language
    models generate text: mask, regenerate, score, and test on downstream tasks.

    \b
    Examples:
      mlmh eval --preset quick          # a one-minute smoke run, offline
      mlmh eval --preset pan            # the paper's PAN experiment
      mlmh ls samplers                  # what can generate, and its parameters
      mlmh generate --model trained-mlm --masking random:ratio=0.3 \\
                    --sampler mask-predict:steps=4 --text "The cat sat on the mat."
      mlmh tui                          # watch refinement step by step
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


def main(argv: list[str] | None = None) -> Any:
    """Entry point: one-line errors (exit 2 for usage, 1 for runtime) unless ``--debug``."""
    from mlmh.machine.allocator import tune_command_line_process

    tune_command_line_process()  # process-wide, so here at the command line's entry and never on import
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args or os.environ.get("MLMH_DEBUG", "") not in ("", "0")
    from mlmh.machine import interrupts

    try:
        with interrupts.watch():
            return cli.main(args=args, prog_name="mlmh", standalone_mode=False)
    except click.exceptions.Abort as exc:  # click's word for a KeyboardInterrupt inside a command
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, KeyboardInterrupt) and not interrupts.is_interrupt(cause):
            if debug:
                raise
            click.echo(f"Error: {interrupts.crash_line(cause)}", err=True)
            sys.exit(1)
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        from mlmh.machine.environment import printable

        setattr(exc, "message", printable(exc.message))  # click declares it final; an echoed name is escaped here
        exc.show()
        sys.exit(exc.exit_code)
    except KeyboardInterrupt as exc:
        if interrupts.is_interrupt(exc):
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        if debug:
            raise
        click.echo(f"Error: {interrupts.crash_line(exc)}", err=True)
        sys.exit(1)
    except (SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # an Exception, or a crash that is not one (a Rust panic inside a library)
        from mlmh.errors import MlmhError

        if debug:
            raise
        from mlmh.machine.environment import os_error_text, printable

        if isinstance(exc, MlmhError):
            click.echo(f"Error: {printable(str(exc))}", err=True)
            sys.exit(exc.exit_code)
        if not isinstance(exc, Exception):
            click.echo(f"Error: {interrupts.crash_line(exc)}", err=True)
            sys.exit(1)
        if isinstance(exc, OSError) and exc.errno is not None:  # the machine refused: a full disk, a long name
            click.echo(f"Error: {os_error_text(exc)}", err=True)
            sys.exit(1)
        click.echo(f"Error: {printable(f'{type(exc).__name__}: {exc}')} (run with --debug for the traceback)", err=True)
        sys.exit(1)

if __name__ == "__main__":  # pragma: no cover
    main()
