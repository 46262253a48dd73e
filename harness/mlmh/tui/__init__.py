"""The Textual UI of mlmh (``mlmh tui``): a second face on the runner and its events."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mlmh.tui.app import MlmhApp


def create_app(preset: str | None = None, run_dir: str | None = None, models=None, **kwargs) -> "MlmhApp":
    """See :func:`mlmh.tui.app.create_app` (imported lazily: Textual loads only when the UI starts)."""
    from mlmh.tui.app import create_app as _create

    return _create(preset=preset, run_dir=run_dir, models=models, **kwargs)


__all__ = ["create_app"]
