"""Errors the CLI turns into one-line messages: usage errors exit 2, runtime errors exit 1."""

from __future__ import annotations


class MlmhError(Exception):
    """A runtime failure with a message fit for the user (exit code 1)."""

    exit_code = 1


class SpecError(MlmhError):
    """Bad user input: unknown component, bad key, bad value (exit code 2)."""

    exit_code = 2


class DataError(MlmhError):
    """A dataset or input file that cannot be read; the message names the file and line/row."""


class ModelError(MlmhError):
    """A model that cannot be found, loaded or trained."""


class PluginError(MlmhError):
    """A plugin that failed to import or register."""


class RunCancelled(MlmhError):
    """A run or regeneration that was stopped (cancel event, Ctrl-C: exit 130; SIGTERM: 143); a run's cached
    samples stay for ``--resume``."""

    exit_code = 130

    def __init__(self, message: str, exit_code: int = 130) -> None:
        super().__init__(message)
        self.exit_code = exit_code
