"""The one stderr printer: progress, notes and error messages (stdout is for results)."""

from __future__ import annotations

import sys


def err(msg: str) -> None:
    """Print ``msg`` on stderr and flush it (progress must show while a long step runs).

    Args:
        msg: one line, or several.
    """
    print(msg, file=sys.stderr, flush=True)


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x00, 0x09), *range(0x0b, 0x20), 0x7f, *range(0x80, 0xa0)]}


def shown(text: str | None) -> str:
    """``text`` safe to echo on a terminal: control characters (ANSI escapes, carriage returns,
    bells) become visible ``\\xNN`` escapes, so a question cannot recolour or rewrite the screen.

    Args:
        text: user-supplied text (None prints as ``None``).

    Returns:
        The text with every C0/C1 control character but newline escaped.
    """
    return str(text).translate(_CONTROL)
