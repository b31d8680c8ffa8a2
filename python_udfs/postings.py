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

_STRING = pa.dictionary(pa.int32(), pa.string())

POSTING_TYPE = pa.struct([("db_id", _STRING), ("term", _STRING), ("text", _STRING), ("number", pa.float64())])
"""One row of a lexical table: its database, its term, and (NULL where the table has none) one text
and one number column (``kb_table_terms``: table_name and weight; ``kb_route_tokens``: source).
The strings are dictionary-encoded, numbers into the table's distinct values: DuckDB reads them as
VARCHAR without the strings gathered per row (a question's words have ~70,000 rows of
``kb_table_terms`` at 10,000 synthetic databases)."""


@dataclass(frozen=True)
class _Coded:
    """A string column as one integer per row into ``names``, its distinct values (NULL one of them)."""

    codes: np.ndarray
    names: pa.Array

    def of(self, index: np.ndarray) -> pa.DictionaryArray:
        """The rows ``index``, dictionary-encoded."""
        return arrow.dictionary(self.codes[index], self.names)


@dataclass(frozen=True)
class Postings:
    """One table's rows ordered by term.

    Attributes:
        db_id, term, text: the string columns, coded.
        ranges: term -> (first row, end row), a term's rows contiguous.
        numbers: the number column as float64 (NaN where NULL).
        number_null: True where the number is NULL.
        db_numbers: database name -> its code in ``db_id``.
    """

    db_id: _Coded
    term: _Coded
    text: _Coded
    ranges: dict[str, tuple[int, int]]
    numbers: np.ndarray
    number_null: np.ndarray
    db_numbers: dict[str, int]


def build_postings(table: pa.Table) -> Postings:
    """The postings of ``table``'s rows.

    Args:
        table: columns db_id, term, text (strings), number (a double) and term_no (the term's dense
            rank: equal terms, equal numbers), ordered by term, without NULL terms (a NULL term
            equals no word).

    Returns:
        The postings.

    Raises:
        ValueError: a NULL term, or a term's rows not contiguous (the table not ordered by term).
    """
    strings = {k: _typed(table.column(k).combine_chunks(), pa.string()) for k in ("db_id", "term", "text")}
    if strings["term"].null_count:
        raise ValueError("postings: a NULL term (leave them out: they equal no word)")
    number = _typed(table.column("number").combine_chunks(), pa.float64())
    numbers = arrow.to_numpy(table.column("term_no"), np.int64)
    n = len(numbers)
    if not n:
        none = _Coded(np.zeros(0, np.int64), arrow.strings([]))
        return Postings(none, none, none, {}, np.zeros(0), np.zeros(0, bool), {})
    starts = np.flatnonzero(np.diff(numbers, prepend=-1) != 0)
    ends = np.append(starts[1:], n)
    term_names = arrow.take_strings(strings["term"], starts)
    names = term_names.to_pylist()
    ranges = dict(zip(names, zip(starts.tolist(), ends.tolist(), strict=True), strict=True))
    if len(ranges) != len(names) or np.any(np.diff(numbers[starts]) <= 0):
        raise ValueError("postings: the table's rows are not ordered by term")
    term = _Coded(np.repeat(np.arange(len(starts)), ends - starts), term_names)
    db_id, text = _coded(strings["db_id"]), _coded(strings["text"])
    db_numbers = {name: i for i, name in enumerate(db_id.names.to_pylist())}
    return Postings(db_id, term, text, ranges, arrow.to_numpy(number, np.float64), arrow.null_mask(number), db_numbers)


def _coded(values: pa.Array) -> _Coded:
    """``values`` coded by pyarrow's hash (``dictionary_encode``; ~40 ms for kb_table_terms' 927,349
    rows at 10,000 synthetic databases, where a ``dense_rank()`` in the loader's query took ~250 ms),
    a NULL as one more name."""
    encoded = values.dictionary_encode()
    names = encoded.dictionary
    codes = arrow.to_numpy(encoded.indices, np.int64, fill=len(names))
    if encoded.indices.null_count:
        names = pa.concat_arrays([names, pa.nulls(1, names.type)])
    return _Coded(codes, names)


def _typed(column: pa.Array, type_: pa.DataType) -> pa.Array:
    """``column`` as ``type_`` (``cast`` only when it is another type: it imports ``pyarrow.compute``)."""
    return column if column.type == type_ else column.cast(type_)


def lookup(postings: Postings, terms: Sequence[str | None], dbs: Sequence[str | None] | None = None) -> pa.StructArray:
    """The rows whose term is one of ``terms`` (each term once, whatever it is repeated), of the
    databases ``dbs`` only when given.

    Gathered with numpy: ``Array.take`` imports ``pyarrow.compute`` (arrow.take_strings).

    Args:
        postings: the table's postings.
        terms: the words asked (NULLs and unknown words match nothing).
        dbs: the databases whose rows are wanted (None: every database's; NULLs and unknown names
            match nothing). The re-rank asks for its ten candidates' rows: at 10,000 synthetic
            databases a question's words have ~20,000 rows of ``kb_route_tokens``, the candidates' ~60.

    Returns:
        The rows, term by term in the order first asked.
    """
    spans = [postings.ranges[t] for t in dict.fromkeys(terms) if t is not None and t in postings.ranges]
    index = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans]) if spans else np.zeros(0, np.int64)
    if dbs is not None:
        wanted = np.array([postings.db_numbers[d] for d in dict.fromkeys(dbs) if d in postings.db_numbers], np.int64)
        index = index[np.isin(postings.db_id.codes[index], wanted)]
    return pa.StructArray.from_arrays(
        [postings.db_id.of(index), postings.term.of(index), postings.text.of(index),
         arrow.numeric(postings.numbers[index], pa.float64(), postings.number_null[index])],
        fields=list(POSTING_TYPE))
