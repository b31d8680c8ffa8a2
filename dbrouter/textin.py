"""Text that comes in from the command line: arguments and stdin, checked to be valid UTF-8.

Python decodes ``sys.argv`` with ``surrogateescape``: an invalid byte (``dbrouter route $'\\xff'``)
becomes a lone surrogate that only fails later, deep inside DuckDB or the embedder, as a
traceback. Stdin is decoded strictly and fails while being read. Both are checked here, where
the message can still say which argument or line is wrong.
"""

from __future__ import annotations

import sys
from typing import Any, BinaryIO

from dbrouter.errors import DbrouterError

MAX_QUESTION_CHARS = 2000
"""The routing functions read a question up to this many characters (dbt var ``dbrouter__max_question_chars``)."""


def _bad_byte(text: str) -> str | None:
    """``0xff at character 3`` for the first undecodable byte of a surrogateescape'd string."""
    for i, ch in enumerate(text):
        if "\udc80" <= ch <= "\udcff":
            return f"byte {ord(ch) - 0xDC00:#04x} at character {i + 1}"
        if "\ud800" <= ch <= "\udfff":
            return f"lone surrogate {ord(ch):#06x} at character {i + 1}"
    return None


def check_text(value: str, what: str) -> str:
    """``value`` when it is valid text, else a :class:`DbrouterError` naming ``what``.

    Args:
        value: a string from ``sys.argv`` (decoded with surrogateescape).
        what: how to name it in the message (``argument 'question'``).

    Returns:
        ``value`` unchanged.

    Raises:
        DbrouterError: the string holds bytes that are not UTF-8.
    """
    bad = _bad_byte(value)
    if bad:
        raise DbrouterError(f"{what} is not valid UTF-8 ({bad}): pass text encoded as UTF-8")
    return value


def check_arguments(args: Any) -> None:
    """Check every string (or list of strings) of a parsed command line.

    Args:
        args: the ``argparse.Namespace``.

    Raises:
        DbrouterError: naming the first argument that is not valid UTF-8.
    """
    for name, value in vars(args).items():
        values = value if isinstance(value, list) else [value]
        for i, item in enumerate(values):
            if isinstance(item, str):
                label = name if not isinstance(value, list) or len(value) == 1 else f"{name} #{i + 1}"
                check_text(item, f"argument {label!r}")


def read_stdin(stream: BinaryIO | None = None) -> str:
    """All of stdin as text.

    Args:
        stream: a binary stream (default ``sys.stdin.buffer``).

    Returns:
        The decoded text.

    Raises:
        DbrouterError: stdin is not valid UTF-8 (the message gives the line and byte).
    """
    data = (stream or sys.stdin.buffer).read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DbrouterError(f"stdin is not valid UTF-8 (byte {data[exc.start]:#04x} on line {line}): "
                            "pipe text encoded as UTF-8") from None


def stdin_lines(stream: BinaryIO | None = None) -> list[str]:
    """The lines of stdin (line ends removed), checked like :func:`read_stdin`."""
    return read_stdin(stream).splitlines()
