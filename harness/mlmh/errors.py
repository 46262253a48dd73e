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
