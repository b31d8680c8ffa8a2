"""The one stderr printer: progress, notes and error messages (stdout is for results); and the
handler through which the library's loggers reach it.

The library logs with ``logging.getLogger(__name__)`` per module (progress at INFO, what went
wrong but not fatally at WARNING) and installs no handler: an application decides where that goes
(Python's last-resort handler shows warnings on stderr). The CLI calls :func:`install_handler`, so
``dbrouter ...`` shows both on stderr, as :func:`err` lines.
"""

from __future__ import annotations

import logging
import sys


def err(msg: str) -> None:
    """Print ``msg`` on stderr and flush it (progress must show while a long step runs).

    Args:
        msg: one line, or several.
    """
    print(msg, file=sys.stderr, flush=True)


class _ErrHandler(logging.Handler):
    """Each record's message as one :func:`err` line (stderr looked up at each record, as :func:`err` does)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            err(record.getMessage())
        except Exception:  # noqa: BLE001 - logging must never fail the call that logs
            self.handleError(record)


def install_handler(level: int = logging.INFO) -> None:
    """Show the ``dbrouter`` loggers' records from ``level`` up on stderr (the CLI's setup; idempotent).

    Args:
        level: the lowest level shown (INFO: progress and warnings).
    """
    root = logging.getLogger("dbrouter")
    root.setLevel(level)
    if not any(isinstance(h, _ErrHandler) for h in root.handlers):
        root.addHandler(_ErrHandler())
    root.propagate = False


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
