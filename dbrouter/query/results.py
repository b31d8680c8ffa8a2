"""What a statement returned, how it is shown to an LLM, and when two results are the same answer;
and how a runner keeps a cursor's rows within bounds (:func:`collect`), for every source type.

Below the source types (they return :class:`QueryResult`); imports nothing of dbrouter.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime
from datetime import time as dtime
from decimal import Decimal
from pathlib import Path


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


# ---------------------------------------------------------------------------------------------
# keeping a cursor's rows, bounded (the source types' runners: run() of dbrouter.sources)

BATCH = 500
"""Rows fetched at most at a time (fewer when the rows are wide)."""
RESULT_BYTES = 16 * 1024 * 1024
"""Text kept of one result, all cells together: past it rows are counted, not kept (``truncated``)."""
CELL_CHARS_KEPT = 64 * 1024
"""Characters (bytes for binary) kept of one cell; longer values are cut, ending in ``...[N chars]``."""


def keep_cell(value):
    """``value`` with text or bytes longer than :data:`CELL_CHARS_KEPT` cut (a marker says how long it was)."""
    if isinstance(value, str) and len(value) > CELL_CHARS_KEPT:
        return f"{value[:CELL_CHARS_KEPT]}...[{len(value):,} chars]"
    if isinstance(value, (bytes, bytearray, memoryview)) and len(value) > CELL_CHARS_KEPT:
        return bytes(value[:CELL_CHARS_KEPT])
    return value


def row_size(row: tuple) -> int:
    """About the bytes a row holds (text and binary by length, anything else 16)."""
    return sum(len(v) if isinstance(v, (str, bytes, bytearray)) else 16 for v in row)


def collect(cursor, result: QueryResult, row_cap: int) -> None:
    """Fetch ``cursor`` in batches: keep ``row_cap`` rows and :data:`RESULT_BYTES` of text (cells cut
    at :data:`CELL_CHARS_KEPT`), count up to ``COUNT_FACTOR * row_cap``.

    The first row comes alone and sets the batch size, so a query of huge cells holds a few of
    them at a time, not a batch of :data:`BATCH` rows.
    """
    limit = COUNT_FACTOR * max(row_cap, 1)
    kept_bytes, size = 0, 1
    while True:
        batch = cursor.fetchmany(min(size, limit - result.total_rows))
        if not batch:
            break
        widest = max(row_size(tuple(r)) for r in batch)
        size = max(1, min(BATCH, RESULT_BYTES // max(widest * 4, 1)))
        for row in batch:
            if len(result.rows) >= row_cap or kept_bytes >= RESULT_BYTES:
                break
            kept = tuple(keep_cell(v) for v in row)
            kept_bytes += row_size(kept)
            result.rows.append(kept)
        result.total_rows += len(batch)
        if result.total_rows >= limit:
            result.total_capped = cursor.fetchmany(1) != []
            break
    result.truncated = result.total_rows > len(result.rows)


def timed_out(result: QueryResult, timeout: float) -> QueryResult:
    """``result`` emptied and marked as stopped after ``timeout`` seconds."""
    result.rows, result.total_rows, result.truncated, result.total_capped = [], 0, False, False
    result.timed_out = True
    result.error = f"SQL execution timed out after {timeout:g} seconds"
    return result


def missing_file(path: Path, kind: str) -> QueryResult | None:
    """The error result for a database file that is gone, or None when it is there."""
    if Path(path).is_file():
        return None
    return QueryResult(error=f"{kind} database file {path} not found: restore it, or fix its path in the sources "
                             "file and build again")



def is_timeout(text: str) -> bool:
    """Whether a server's error message says the statement ran out of time."""
    low = text.lower()
    return ("statement timeout" in low or "canceling statement" in low or "max_execution_time" in low
            or "max_statement_time" in low or "query execution was interrupted" in low)
