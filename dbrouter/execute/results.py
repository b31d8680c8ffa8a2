"""What a statement returned, how it is shown to an LLM, and when two results are the same answer."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal


@dataclass
class QueryResult:
    """What one statement returned (``error`` set verbatim when the database refused it).

    ``total_rows`` counts rows up to ``COUNT_FACTOR * row_cap``; beyond that counting stops and
    ``total_capped`` is True (``total_rows`` is then a lower bound).
    """

    columns: list[str] = field(default_factory=list)
    rows: list[tuple] = field(default_factory=list)
    total_rows: int = 0
    truncated: bool = False
    seconds: float = 0.0
    error: str | None = None
    timed_out: bool = False
    total_capped: bool = False

    @property
    def ok(self) -> bool:
        """True when the statement ran without error or timeout."""
        return self.error is None


CELL_CHARS = 80


SIGNIFICANT = 10  # result_key rounds floats to 10 significant digits (see result_key)


COUNT_FACTOR = 100  # rows are counted up to COUNT_FACTOR * row_cap, then total_rows is a lower bound


def _cell(value, chars: int = CELL_CHARS) -> str:
    if value is None:
        text = "NULL"
    elif isinstance(value, (bytes, bytearray, memoryview)):
        text = f"x'{bytes(value).hex()}'"
    else:
        text = str(value)
    text = text.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    return text if len(text) <= chars else text[: chars - 3] + "..."


def format_observation(result: QueryResult, max_rows: int = 5) -> str:
    """The paper's R_SQL text: total rows, time, top rows as a table, or the error verbatim.

    Args:
        result: what :func:`execute` returned.
        max_rows: rows shown (cells longer than ``CELL_CHARS`` characters are cut with ``...``).

    Returns:
        ``[Total rows: N, Execution time: Ts, Top-K rows are shown below]`` + a ``A | B`` table +
        ``M rows truncated ...``; ``[No data found for the specified query, Execution time: Ts]``;
        or ``[[ERROR: message]]`` for a timeout or database error.
    """
    if result.error is not None:
        return f"[[ERROR: {result.error}]]"
    secs = f"{result.seconds:.2f}s"
    if result.total_rows == 0:
        return f"[No data found for the specified query, Execution time: {secs}]"
    shown = result.rows[: max(max_rows, 0)]
    plus = "+" if result.total_capped else ""
    lines = [f"[Total rows: {result.total_rows}{plus}, Execution time: {secs}, "
             f"Top-{len(shown)} rows are shown below]"]
    lines.append(" | ".join(_cell(c) for c in result.columns))
    lines.append("|".join("-----" for _ in result.columns))
    lines.extend(" | ".join(_cell(v) for v in row) for row in shown)
    hidden = result.total_rows - len(shown)
    if hidden > 0:
        lines.append(f"{hidden}{plus} rows truncated ...")
    return "\n".join(lines)


def _number(value: float):
    """A float rounded to ``SIGNIFICANT`` digits; integral values become ints (1.0 -> 1)."""
    if math.isnan(value):
        return (5, "nan")
    if math.isinf(value):
        return (1, value)
    rounded = float(f"{value:.{SIGNIFICANT}g}")
    if rounded.is_integer():
        return (1, int(rounded))
    return (1, rounded)


def _value_key(value) -> tuple:
    """A type-tagged, mutually comparable key of one cell: (0,) NULL, (1, n) number, (2, s) text,
    (3, b) bytes, (4, type, repr) anything else; dates/times compare as their ISO-like text."""
    if value is None:
        return (0,)
    if isinstance(value, bool):
        return (1, int(value))
    if isinstance(value, int):
        return (1, value)
    if isinstance(value, (float, Decimal)):
        return _number(float(value))
    if isinstance(value, str):
        return (2, value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return (3, bytes(value))
    if isinstance(value, (datetime, date, dtime)):
        return (2, str(value))
    return (4, type(value).__name__, repr(value))


def result_key(result: QueryResult, ordered: bool) -> object:
    """A hashable key: equal keys = equal result sets (order-insensitive unless ``ordered``).

    Values only (column names are not part of it, as in Spider/BIRD evaluation). Numbers compare by
    value: ints exactly, floats and decimals rounded to ``SIGNIFICANT`` (10) significant digits so
    summation-order noise (``0.1 + 0.2``) does not split votes, and an integral float equals the int
    (``1 == 1.0``). NULLs, text, bytes and other types never compare equal to each other; dates and
    times compare as their text (SQLite stores them as text). Unordered keys are the sorted multiset
    of rows (duplicates count). Only the kept rows are compared: a truncated result also carries
    its ``total_rows``.

    Args:
        result: what :func:`execute` returned.
        ordered: keep row order (the query has an ORDER BY, see :func:`has_order_by`).

    Returns:
        A hashable tuple, or None for a result with an error (never equal to a result set).
    """
    if result.error is not None:
        return None
    rows = [tuple(_value_key(v) for v in row) for row in result.rows]
    key = tuple(rows) if ordered else tuple(sorted(rows))
    return ("truncated", result.total_rows, key) if result.truncated else key

