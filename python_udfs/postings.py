"""A KB table's rows by term, held in the UDF process: the lexical tables' posting lists (issue 36).

The routing query joins three lexical tables with the question's words: ``kb_table_terms`` (the
shortlist's BM25), ``kb_vocabulary`` (the "nothing here" test) and ``kb_route_tokens`` (the
re-rank's lexical signals). A scan reads each whole and keeps the rows of a few words: at 10,000
synthetic databases 927,349 + 422,616 + 613,303 rows, ~150 ms of a held question's operators
(adr-0030). Held here, ordered by term with each term's first and end row, a question's rows are
a few slices.

``lookup`` returns exactly the rows whose term is one of those asked, once each, as the table
holds them (its doubles unrounded); SQL then joins and aggregates them as it did the scan's rows,
so the answer is the scan's (``tests/unit/test_postings.py``, ``tests/functional/test_term_postings.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from python_udfs import arrow

POSTING_TYPE = pa.struct([("db_id", pa.string()), ("term", pa.string()), ("text", pa.string()),
                          ("number", pa.float64())])
"""One row of a lexical table: its database, its term, and (NULL where the table has none) one text
and one number column (``kb_table_terms``: table_name and weight; ``kb_route_tokens``: source)."""


@dataclass(frozen=True)
class Postings:
    """One table's rows ordered by term.

    Attributes:
        rows: the rows (:data:`POSTING_TYPE`), a term's rows contiguous.
        ranges: term -> (first row, end row) in ``rows``.
        numbers: the number column as float64 (NaN where NULL).
        number_null: True where the number is NULL.
    """

    rows: pa.StructArray
    ranges: dict[str, tuple[int, int]]
    numbers: np.ndarray
    number_null: np.ndarray


def build_postings(table: pa.Table) -> Postings:
    """The postings of ``table``'s rows.

    Args:
        table: columns db_id, term, text, number (:data:`POSTING_TYPE`'s) and term_no (the term's
            dense rank: equal terms, equal numbers), ordered by term, without NULL terms (a NULL
            term equals no word).

    Returns:
        The postings.

    Raises:
        ValueError: a NULL term, or a term's rows not contiguous (the table not ordered by term).
    """
    columns = [_typed(table.column(f.name).combine_chunks(), f.type) for f in POSTING_TYPE]
    terms = columns[1]
    if terms.null_count:
        raise ValueError("postings: a NULL term (leave them out: they equal no word)")
    rows = pa.StructArray.from_arrays(columns, fields=list(POSTING_TYPE))
    numbers = arrow.to_numpy(table.column("term_no"), np.int64)
    number = columns[3]
    n = len(numbers)
    if not n:
        return Postings(rows, {}, np.zeros(0), np.zeros(0, bool))
    starts = np.flatnonzero(np.diff(numbers, prepend=-1) != 0)
    ends = np.append(starts[1:], n)
    names = arrow.take_strings(terms, starts).to_pylist()
    ranges = dict(zip(names, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
    if len(ranges) != len(names) or np.any(np.diff(numbers[starts]) <= 0):
        raise ValueError("postings: the table's rows are not ordered by term")
    return Postings(rows, ranges, arrow.to_numpy(number, np.float64), arrow.null_mask(number))


def _typed(column: pa.Array, type_: pa.DataType) -> pa.Array:
    """``column`` as ``type_`` (``cast`` only when it is another type: it imports ``pyarrow.compute``)."""
    return column if column.type == type_ else column.cast(type_)


def lookup(postings: Postings, terms: Sequence[str | None]) -> pa.StructArray:
    """The rows whose term is one of ``terms`` (each term once, whatever it is repeated).

    Gathered with numpy: ``Array.take`` imports ``pyarrow.compute`` (arrow.take_strings).

    Args:
        postings: the table's postings.
        terms: the words asked (NULLs and unknown words match nothing).

    Returns:
        The rows, term by term in the order first asked.
    """
    spans = [postings.ranges[t] for t in dict.fromkeys(terms) if t is not None and t in postings.ranges]
    index = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans]) if spans else np.zeros(0, np.int64)
    rows = postings.rows
    fields = []
    for i, f in enumerate(POSTING_TYPE):
        column = rows.field(i)
        if pa.types.is_string(f.type):
            fields.append(arrow.take_strings(column, index))
        else:
            fields.append(arrow.numeric(postings.numbers[index], f.type, postings.number_null[index]))
    return pa.StructArray.from_arrays(fields, fields=list(POSTING_TYPE))
