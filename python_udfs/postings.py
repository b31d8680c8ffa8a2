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
``best_sums`` aggregates them here instead, as the shortlist's SQL does (each database's best table
by the sum of its words' BM25 weights): at 10,000 synthetic databases the rows, their sums over
~30,000 (database, table) pairs and the best of each database were ~16 ms of SQL operators.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

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

BEST_TYPE = pa.struct([("db_id", pa.string()), ("text", pa.string()), ("total", pa.float64())])
"""One database's best text (``best_sums``): the text whose rows' numbers sum highest, and that sum. Plain
strings: a dictionary array hands DuckDB its whole dictionary (kb_table_terms: 103,580 table names)."""

EXACT_UNIT = 2.0 ** -32
"""The numbers ``best_sums`` adds are multiples of it (kb_table_terms rounds its weights so) ..."""
EXACT_LIMIT = 2.0 ** 21
"""... below this in magnitude, and so are their sums: a double holds every such sum exactly (2^53
units), so they come out the same in any order, here and in SQL."""


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
        cache: structures derived on first use (``best_sums``' pairs).
    """

    db_id: _Coded
    term: _Coded
    text: _Coded
    ranges: dict[str, tuple[int, int]]
    numbers: np.ndarray
    number_null: np.ndarray
    db_numbers: dict[str, int]
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # what best_sums numbers once


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
    index = _rows(postings, terms, dbs)
    return pa.StructArray.from_arrays(
        [postings.db_id.of(index), postings.term.of(index), postings.text.of(index),
         arrow.numeric(postings.numbers[index], pa.float64(), postings.number_null[index])],
        fields=list(POSTING_TYPE))


def _rows(postings: Postings, terms: Sequence[str | None], dbs: Sequence[str | None] | None) -> np.ndarray:
    """The row numbers of ``lookup``'s rows, term by term in the order first asked."""
    spans = [postings.ranges[t] for t in dict.fromkeys(terms) if t is not None and t in postings.ranges]
    index = np.concatenate([np.arange(a, b, dtype=np.int64) for a, b in spans]) if spans else np.zeros(0, np.int64)
    if dbs is not None:
        wanted = np.array([postings.db_numbers[d] for d in dict.fromkeys(dbs) if d in postings.db_numbers], np.int64)
        index = index[np.isin(postings.db_id.codes[index], wanted)]
    return index


def best_sums(postings: Postings, terms: Sequence[str | None]) -> pa.StructArray:
    """Each database's best text among the rows of ``terms``: the sum of the numbers per (database,
    text), and per database the text with the largest sum, ties to the larger text. What the
    shortlist's SQL computes from ``lookup``'s rows of kb_table_terms (``sum(weight)`` per table,
    then ``max`` and ``arg_max(table_name, (bm25, table_name))`` per database).

    The numbers must be multiples of :data:`EXACT_UNIT` below :data:`EXACT_LIMIT`, and so must the
    sums: then every sum is exact, as SQL's is in whatever order it adds. The (database, text)
    pairs are numbered on the first call (``_pairs``), so a call sums into one array of them.

    Args:
        postings: the table's postings (text: the table name; number: the weight).
        terms: the words asked (each once, whatever it is repeated; NULLs and unknown words match nothing).

    Returns:
        One row per database with a row of the words (``BEST_TYPE``), ordered by database code.

    Raises:
        ValueError: a NULL text or number among the rows, or a number or sum that is not a multiple
            of EXACT_UNIT below EXACT_LIMIT (a KB built before the weights were rounded: rebuild it).
    """
    index = _rows(postings, terms, None)
    pairs = postings.cache.get("pairs") or postings.cache.setdefault("pairs", _pairs(postings))
    if postings.number_null[index].any():
        raise ValueError("best_sums: a NULL number among the rows (kb_table_terms.weight is never NULL): rebuild the KB")
    of_row = pairs.of_row[index]
    if pairs.null_text[of_row].any():
        raise ValueError("best_sums: a NULL text among the rows (kb_table_terms.table_name is never NULL): rebuild the KB")
    numbers = postings.numbers[index]
    _check_exact(numbers)
    n = len(pairs.db)
    sums = np.bincount(of_row, weights=numbers, minlength=n)
    touched = np.bincount(of_row, minlength=n) > 0
    _check_exact(sums[touched])
    if not touched.any():
        first = np.zeros(0, np.int64)
    else:
        masked = np.where(touched, sums, -np.inf)
        best_of_db = np.maximum.reduceat(masked, pairs.starts)[pairs.segment]
        # a database's pairs run by text descending: its first best pair has the larger name
        best = np.flatnonzero(touched & (masked == best_of_db))
        first = best[np.diff(pairs.segment[best], prepend=-1) != 0]
    return pa.StructArray.from_arrays(
        [arrow.take_strings(postings.db_id.names, pairs.db[first]),
         arrow.take_strings(postings.text.names, pairs.text[first]), pa.array(sums[first], pa.float64())],
        fields=list(BEST_TYPE))


@dataclass(frozen=True)
class _Pairs:
    """The (database, text) pairs of a table's rows, ordered by database code, then text descending.

    Attributes:
        of_row: each row's pair.
        db, text: each pair's database and text codes.
        null_text: True where the pair's text is NULL.
        segment: each pair's database as a run number (0, 1, ...), and ``starts`` each run's first pair.
    """

    of_row: np.ndarray
    db: np.ndarray
    text: np.ndarray
    null_text: np.ndarray
    segment: np.ndarray
    starts: np.ndarray


def _pairs(postings: Postings) -> _Pairs:
    """Number the (database, text) pairs of ``postings``' rows (~0.2 s for kb_table_terms' 927,349
    rows at 10,000 synthetic databases, once per connection). Texts rank in VARCHAR order: DuckDB
    compares UTF-8 bytes, which order as Python's code points do (NULL last)."""
    names = postings.text.names.to_pylist()
    n_texts = max(len(names), 1)
    by_name = sorted(range(len(names)), key=lambda i: (names[i] is None, names[i] or ""))
    desc = np.empty(len(names), np.int64)  # text code -> its rank, largest name first
    desc[by_name] = np.arange(len(names) - 1, -1, -1)
    keys, of_row = np.unique(postings.db_id.codes * n_texts + desc[postings.text.codes], return_inverse=True)
    db = keys // n_texts
    text = np.asarray(by_name[::-1], np.int64)[keys % n_texts] if len(keys) else np.zeros(0, np.int64)
    null_code = len(names) - 1 if names and names[-1] is None else -1
    starts = np.flatnonzero(np.diff(db, prepend=-1) != 0)
    segment = np.cumsum(np.diff(db, prepend=-1) != 0) - 1
    return _Pairs(of_row.reshape(-1), db, text, text == null_code, segment, starts)


def _check_exact(values: np.ndarray) -> None:
    """Raise unless every value is a multiple of EXACT_UNIT below EXACT_LIMIT in magnitude."""
    units = values / EXACT_UNIT  # exact: a power of two
    if values.size and not (np.all(np.abs(values) < EXACT_LIMIT) and np.array_equal(units, np.rint(units))):
        raise ValueError("best_sums: numbers that are not multiples of 2^-32 below 2^21, whose sums depend on the "
                         "order they are added in (kb_table_terms.weight is rounded so since issue 36's round 18): "
                         "rebuild the KB")
