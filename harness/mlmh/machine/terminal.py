"""Output on a terminal and in a log, the rules every face shares.

Rich reads ``[...]`` as markup, so a text that holds brackets (a fix such as ``pip install 'mlmh[judge]'``, a spec,
an error) loses them when printed as a Rich string: every text a Rich table or console shows goes through
:func:`literal`, a Rich ``Text`` of the terminal's escape (:func:`mlmh.machine.escape.terminal`: no control character
reaches the terminal either). Where output is not a terminal (``make demo > log``), the libraries' own progress bars would write
carriage-return bars into the log: :func:`quiet_library_bars` turns them off through the libraries' own switches.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from mlmh.machine.escape import terminal

if TYPE_CHECKING:
    from rich.text import Text

#: the libraries' documented switches for their progress bars: tqdm reads ``TQDM_*`` as the defaults of its
#: arguments when it is imported (tqdm >= 4.66), huggingface_hub (and transformers through it) its own variable
BAR_SWITCHES = {"TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}


def literal(text: Any, style: str = "") -> "Text":
    """``text`` as Rich shows it, as written (brackets kept, control characters written out), in ``style``: the one
    escape of every text a Rich table or console prints."""
    from rich.text import Text

    return Text(terminal(text), style=style)


def is_terminal(stream: Any) -> bool:
    """Whether ``stream`` is an interactive terminal (not a file, a pipe or CI)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def quiet_library_bars() -> None:
    """Turn off the progress bars of tqdm, huggingface_hub and transformers for this process and the processes it
    starts (trainings, workers): set before they are imported, as they are when a run starts, and told directly
    where they already are. A value the user set stands."""
    for name, value in BAR_SWITCHES.items():
        os.environ.setdefault(name, value)
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    if "transformers" in sys.modules:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
