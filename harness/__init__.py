"""mlmh: compare how masked, causal and seq2seq language models generate text.

Third-party plugins import :data:`hookimpl` from here; everything else is loaded lazily so
``mlmh --help`` stays fast.
"""

import pluggy

__version__ = "0.1.0"

#: Marker for plugin hook implementations (``@hookimpl def register_maskings(register): ...``).
hookimpl = pluggy.HookimplMarker("mlmh")

__all__ = ["hookimpl", "__version__"]
