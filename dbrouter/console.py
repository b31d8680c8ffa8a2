"""The one stderr printer: progress, notes and error messages (stdout is for results)."""

from __future__ import annotations

import sys


def err(msg: str) -> None:
    """Print ``msg`` on stderr and flush it (progress must show while a long step runs).

    Args:
        msg: one line, or several.
    """
    print(msg, file=sys.stderr, flush=True)
