"""Text that came from outside (corpus ids, groups and texts, preset descriptions, model names, checkpoint paths,
tracker names), escaped where it meets a sink: one function per sink, so no face decides it again.

Why: such text is the user's data, not mlmh's, and each sink reads some characters as commands. A terminal runs
C0 and C1 control characters (ESC starts colours, cursor moves, OSC 8 links, OSC 52 clipboard writes; BEL ends
them), Rich and Textual read ``[...]`` as markup, a markdown table ends a cell at ``|`` and a row at a newline, and
a TOML basic string may hold no control character at all. Each function makes its sink show the text as written,
the characters it would obey written out as escapes (``\\x1b``, ``\\|``, ``\\u001b``).

- :func:`terminal`: plain terminal output (``click.echo``, a Rich ``Text``);
- :func:`markup`: a string Rich or Textual parses as markup (a console line, a table cell, a pane's title);
- :func:`markdown_cell`: a cell of a markdown table (report.md);
- :func:`toml_string`: a TOML basic string, quoted (``mlmh eval --show-config``), read back by ``tomllib``.
"""

from __future__ import annotations

import re
from typing import Any

#: what a terminal obeys: C0 controls but tab and newline, DEL, C1 controls (U+0080-U+009F: 0x9b is a one-byte CSI)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: the same with tab and newline, for a sink that must stay on one line
_CONTROL_OR_BREAK = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
#: what a TOML basic string may not hold raw (C1 too: the TOML is printed on a terminal)
_TOML_UNSAFE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f-\x9f"\\]')
_TOML_SHORT = {"\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _escaped(match: re.Match[str]) -> str:
    return match.group().encode("unicode_escape").decode("ascii")


def terminal(text: Any, *, line: bool = False) -> str:
    """``text`` as a terminal shows it, its control characters written out (``\\x1b``, ``\\x07``, ``\\x9b``) so it
    cannot recolour, move the cursor, link or write the clipboard; newlines and tabs stay unless ``line`` (a title,
    a cell, a one-line message), where they are written out too."""
    return (_CONTROL_OR_BREAK if line else _CONTROL).sub(_escaped, str(text))


def markup(text: Any, *, line: bool = False) -> str:
    """``text`` for a string Rich or Textual reads as markup: :func:`terminal`, then its ``[`` escaped, so a name such
    as ``[red]x`` or ``pip install 'mlmh[judge]'`` shows as written."""
    from rich.markup import escape

    shown = terminal(text, line=line)
    body = shown.rstrip("\\")
    # a run of backslashes at the end would escape the tag that follows it: doubled, it shows as written (rich's own
    # escape doubles a single one only)
    return escape(body) + "\\" * (2 * (len(shown) - len(body)))


def markdown_cell(text: Any) -> str:
    """``text`` for a cell of a markdown table: one line (control characters and line breaks written out) whose
    ``|`` cannot end the cell."""
    return terminal(text, line=True).replace("|", "\\|")


def toml_string(text: Any) -> str:
    """``text`` as a quoted TOML basic string that ``tomllib`` reads back as ``text``: quotes, backslashes and
    control characters escaped (``\\u001b``), so neither the TOML nor the terminal it is printed on obeys them."""
    return '"' + _TOML_UNSAFE.sub(lambda m: _TOML_SHORT.get(m.group(), f"\\u{ord(m.group()):04x}"), str(text)) + '"'
