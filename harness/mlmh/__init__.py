"""mlmh: compare how masked, causal and seq2seq language models generate text.

Third-party plugins import :data:`hookimpl` from here. The Python API (:mod:`mlmh.api`:
:func:`evaluate`, :func:`generate`, :func:`generate_from_dataset`, :func:`load`,
:func:`study`, :func:`load_study`) is imported on first use,
like everything else, so ``mlmh --help`` stays fast.
"""

from typing import Any

import pluggy

__version__ = "0.1.0"

#: Marker for plugin hook implementations (``@hookimpl def register_maskings(register): ...``).
hookimpl = pluggy.HookimplMarker("mlmh")

#: names of :mod:`mlmh.api` that ``mlmh.NAME`` gives, imported when first asked for
API = ("evaluate", "generate", "generate_from_dataset", "load", "study", "load_study")

__all__ = ["hookimpl", "__version__", *API]


def __getattr__(name: str) -> Any:
    if name in API:
        from mlmh import api

        return getattr(api, name)
    raise AttributeError(f"module 'mlmh' has no attribute {name!r}")
