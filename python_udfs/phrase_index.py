"""The column phrases' vectors and tokens in the UDF process: the re-rank's span mapping without a
cross join (issue 23).

``route_map_by_embedding_step`` maps each question span to the columns of the candidate
databases whose phrase it matches: exactly by name (every span word a label token, one a column
token or the column represents its table), exactly by value (every span word a token of the
column's short sample values), or by the phrase-embedder cosine at or above a threshold. As SQL
that is a join of every candidate column with every span - 130k rows for a question of 30 spans
over ten databases of 450 columns - and it read every candidate's vectors through a scan.

Here the phrases of one phrase model are one matrix, rows grouped by database, with posting lists
of their label, column and value tokens: the cosines are one matrix product over the candidates'
row ranges, the exact matches intersections of posting lists; only the (column, span) pairs the
step keeps are made (:func:`span_hits`), and grouped per column and question word into the
mappings the step reads (:func:`span_mappings`). DuckDB's ``array_cosine_similarity`` differs from the float32 dot
product of unit vectors by float rounding only (tests: the same pairs away from the threshold).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from python_udfs import arrow
from python_udfs.similarity import unit_rows

HIT_TYPE = pa.struct([("db_id", pa.string()), ("table_name", pa.string()), ("column_name", pa.string()),
                      ("component", pa.string()), ("declared_component", pa.string()), ("span_no", pa.int32()),
                      ("is_exact", pa.bool_()), ("is_value", pa.bool_()), ("cos", pa.float32())])
"""One kept (column, span) pair: the column's keys, the span's number, how it matched, the cosine."""

MAPPING_TYPE = pa.struct([("db_id", pa.string()), ("word_index", pa.int32()), ("table_name", pa.string()),
                          ("column_name", pa.string()), ("component", pa.string()),
                          ("declared_component", pa.string()), ("similarity", pa.float32()), ("span", pa.string()),
                          ("is_exact", pa.bool_()), ("match_kind", pa.string())])
"""One mapping of :func:`span_mappings`: route_mapping_contract's ``mapped`` columns."""

KEYS = ("db_id", "table_name", "column_name", "component", "declared_component")
"""The column's keys every returned row carries (:attr:`PhraseIndex.keys`)."""

COLUMNS = (*KEYS, "label_tokens", "column_tokens", "represents_table", "value_tokens", "embedding")
"""What :func:`build_index` reads of ``kb_column_phrases``."""

_EMPTY = np.zeros(0, np.int64)
_KINDS = arrow.strings(["name", "value", "similar"])  # match_kind by code (pa.array would import pandas: 0.18 s)


@dataclass(frozen=True)
class PhraseIndex:
    """One phrase model's column phrases, rows ordered by database.

    Attributes:
        vectors: (rows, dim) float32 unit vectors (a zero vector stays zero: its cosine is NaN).
        zero: rows whose stored vector is all zeros.
        keys: the returned string columns (db_id, table_name, column_name, component,
            declared_component) in row order.
        represents: rows whose column represents its table.
        label: token -> sorted rows whose label tokens hold it.
        column: token -> sorted rows whose column tokens hold it.
        value: token -> sorted rows whose value tokens hold it.
        db_rows: database name -> (first row, end row).
        label_rank: each row's place when ``table.column`` labels are sorted descending (the
            re-rank's tie-break between equal cosines), so one query orders rows with numpy.
        component_codes: each row's connected part as an integer counted within its database
            (from 0; a database's columns in no part share one: SQL partitions by the NULL part
            too), so a question's work on them is bounded by its candidates, not the KB.
        declared_codes: the same for the declared parts.
    """

    vectors: np.ndarray
    zero: np.ndarray
    keys: dict[str, pa.Array]
    represents: np.ndarray
    label: dict[str, np.ndarray]
    column: dict[str, np.ndarray]
    value: dict[str, np.ndarray]
    db_rows: dict[str, tuple[int, int]]
    label_rank: np.ndarray
    component_codes: np.ndarray
    declared_codes: np.ndarray

    @property
    def rows(self) -> int:
        """How many column phrases the index holds."""
        return len(self.zero)


def _postings(lists: list[list[str] | None]) -> dict[str, np.ndarray]:
    out: dict[str, list[int]] = {}
    for row, tokens in enumerate(lists):
        for t in set(tokens or ()):
            out.setdefault(t, []).append(row)
    return {t: np.asarray(rows, np.int64) for t, rows in out.items()}


def build_index(table: pa.Table) -> PhraseIndex:
    """Index one phrase model's column phrases.

    Args:
        table: the :data:`COLUMNS` of ``kb_column_phrases`` for one ``phrase_model``.

    Returns:
        The index.

    Raises:
        ValueError: vectors of different sizes.
    """
    n = table.num_rows
    db_ids = table.column("db_id").to_pylist()
    # rows grouped by database, in their given order within one: the loader's SQL orders them by
    # (db_id, rowid); other callers' tables are sorted here, stably (Table.sort_by would import
    # pyarrow.compute: 0.1 s of a cold start)
    order = None if all(a <= b for a, b in zip(db_ids, db_ids[1:])) else \
        np.argsort(np.array(db_ids, dtype=object), kind="stable")
    if order is not None:
        db_ids = [db_ids[i] for i in order]

    def column(name: str) -> list:
        values = table.column(name).to_pylist()
        return values if order is None else [values[i] for i in order]

    emb = table.column("embedding").combine_chunks() if n else None
    if emb is not None and pa.types.is_fixed_size_list(emb.type):
        matrix, zero = unit_rows(emb, order)  # one copy of the vectors
    else:
        if emb is not None:
            matrix = np.asarray([v if v is not None else [] for v in emb.to_pylist()], dtype=np.float32)
            if matrix.ndim != 2:
                raise ValueError("phrase index: the vectors are not all of one size")
        else:
            matrix = np.zeros((0, 1), np.float32)
        if order is not None:
            matrix = matrix[order]
        norms = np.linalg.norm(matrix, axis=1)
        zero = norms == 0
        matrix = np.ascontiguousarray(matrix / np.where(zero, 1.0, norms)[:, None], dtype=np.float32)
    db_rows: dict[str, tuple[int, int]] = {}
    for row, db in enumerate(db_ids):
        first, _ = db_rows.get(db, (row, row))
        db_rows[db] = (first, row + 1)
    represents = np.asarray([bool(x) for x in column("represents_table")], bool)
    keys = {k: (arrow.strings([]) if not n else table.column(k).combine_chunks() if order is None
                else arrow.take_strings(table.column(k).combine_chunks(), order))
            for k in KEYS}
    labels = [f"{t}.{c}" for t, c in zip(keys["table_name"].to_pylist(), keys["column_name"].to_pylist(), strict=True)]
    label_rank = np.empty(n, np.int64)
    label_rank[sorted(range(n), key=labels.__getitem__, reverse=True)] = np.arange(n)
    return PhraseIndex(matrix, zero, keys, represents, _postings(column("label_tokens")),
                       _postings(column("column_tokens")), _postings(column("value_tokens")), db_rows, label_rank,
                       _codes(db_ids, keys["component"]), _codes(db_ids, keys["declared_component"]))


def _codes(db_ids: list[str], values: pa.Array) -> np.ndarray:
    """One integer per distinct value within each database, from 0 in order of first appearance;
    a null value is a part of its database too."""
    seen: dict[str, dict[str | None, int]] = {}
    return np.fromiter(((parts := seen.setdefault(d, {})).setdefault(v, len(parts))
                        for d, v in zip(db_ids, values.to_pylist(), strict=True)), np.int64, len(values))


def _order_key(cos: np.ndarray, label_rank: np.ndarray) -> np.ndarray:
    """One unsigned integer per row whose ascending order is the SQL path's: cosine descending
    (NaN last), then ``table.column`` descending (``label_rank``, unique per row, so no two keys
    are equal). The float32 cosine's bits, flipped so that their unsigned order is the float order
    reversed, fill the high 32 bits; -0.0 is made 0.0 first, as the float comparison has them equal."""
    c = np.asarray(cos, np.float32) + np.float32(0.0)  # a new contiguous array, -0.0 now 0.0
    bits = c.view(np.uint32)
    ascending = np.where(bits >> 31 == 1, ~bits, bits | np.uint32(0x80000000))
    high = np.where(np.isnan(c), np.uint32(0xFFFFFFFF), ~ascending).astype(np.uint64)
    return (high << np.uint64(32)) | label_rank.astype(np.uint64)


@dataclass(frozen=True)
class _Within:
    """The candidates' rows: ``rows`` sorted, made of the row ranges ``starts[i]:ends[i]`` (ascending)."""

    rows: np.ndarray
    starts: np.ndarray
    ends: np.ndarray

    def of(self, posting: np.ndarray) -> np.ndarray:
        """The rows of a sorted posting list that are the candidates': a slice per range found by
        binary search, so a question's work grows with its candidates, not with how many rows of
        the whole KB hold a word (a common word's list at 10,000 databases: tens of thousands)."""
        lo, hi = np.searchsorted(posting, self.starts), np.searchsorted(posting, self.ends)
        parts = [posting[a:b] for a, b in zip(lo.tolist(), hi.tolist(), strict=True) if b > a]
        return parts[0] if len(parts) == 1 else np.concatenate(parts) if parts else _EMPTY


def _member(rows: np.ndarray, posting: np.ndarray) -> np.ndarray:
    """The ``rows`` (sorted) that a sorted posting list holds: a binary search per row, not a sort
    of both as ``np.intersect1d``'s (whose cost is the posting list's length)."""
    if not len(rows) or not len(posting):
        return _EMPTY
    at = np.minimum(np.searchsorted(posting, rows), len(posting) - 1)
    return rows[posting[at] == rows]


def _all_of(postings: dict[str, np.ndarray], tokens: Sequence[str], within: _Within) -> np.ndarray:
    """Rows (among ``within``'s) whose tokens hold every one of ``tokens``, sorted."""
    lists = [postings.get(t, _EMPTY) for t in dict.fromkeys(tokens)]
    if not lists:  # no words: every row holds them (SQL's list_has_all(x, []))
        return within.rows
    lists.sort(key=len)
    rows = within.of(lists[0])
    for other in lists[1:]:
        if not len(rows):
            break
        rows = _member(rows, other)
    return rows


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for a 1-d integer array, without numpy's masked-array check: the first
    ``np.unique`` of a process imports ``numpy.ma`` (10 ms of a one-question route's CPU)."""
    if len(values) < 2:
        return values.copy()
    ordered = np.sort(values)
    return ordered[np.concatenate(([True], ordered[1:] != ordered[:-1]))]


def _union(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.union1d(a, b)`` (sorted, distinct) by :func:`_unique`."""
    return _unique(np.concatenate((a, b)))


def _any_of(postings: dict[str, np.ndarray], tokens: Sequence[str], within: _Within) -> np.ndarray:
    """Rows (among ``within``'s) whose tokens hold at least one of ``tokens``, sorted."""
    parts = [within.of(p) for t in dict.fromkeys(tokens) if len(p := postings.get(t, _EMPTY))]
    return _unique(np.concatenate(parts)) if parts else _EMPTY


def _top_similar(index: PhraseIndex, rows: np.ndarray, cos: np.ndarray, n: int,
                 groups: np.ndarray | None = None) -> np.ndarray:
    """Of ``rows`` (with cosines ``cos``), per database the ``n`` most similar plus the most similar
    of each connected part and of each declared part, in the SQL path's order: cosine descending,
    then ``table.column`` descending (the re-rank's own tie-break). The best column of every part is
    what the re-rank's connectivity and chosen tables read, so they are unchanged.

    Without sorting: one integer key per row in that order (:func:`_order_key`), a partition for
    each database's ``n`` smallest keys, and each part's smallest key by ``np.minimum.at``. A span
    of a wide dataset is similar to most of its columns (20,000 of 24,000 at the static model's
    threshold), and sorting them for every span was 0.2-0.3 s of a spider2-lite question.

    Args:
        index: from :func:`build_index`.
        rows: rows of the index, a database's together.
        cos: their cosines with the span.
        n: how many of a database's most similar rows to keep.
        groups: one integer per row naming its database (default: one database).

    Returns:
        The rows kept, in the order given.
    """
    if not len(rows):
        return rows
    key = _order_key(cos, index.label_rank[rows])
    keep = np.zeros(len(rows), bool)
    bounds = [0, len(rows)] if groups is None else \
        np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1], [True])))
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        if b - a <= n:
            keep[a:b] = True
        else:
            keep[a + np.argpartition(key[a:b], n - 1)[:n]] = True
    for codes in (index.component_codes, index.declared_codes):
        part = codes[rows]
        part = (0 if groups is None else groups * (int(part.max()) + 1)) + part  # (database, part)
        best = np.full(int(part.max()) + 1, np.iinfo(np.uint64).max, np.uint64)
        np.minimum.at(best, part, key)
        keep |= key == best[part]
    return rows[keep]


@dataclass(frozen=True)
class _Pairs:
    """The kept (column, span) pairs as arrays, one entry per pair: index row, span number (from 1),
    exact by name, exact by value, cosine (NaN: none)."""

    rows: np.ndarray
    spans: np.ndarray
    exact: np.ndarray
    value: np.ndarray
    cos: np.ndarray


def span_hits(index: PhraseIndex, dbs: Sequence[str] | None, span_tokens: Sequence[Sequence[str]],
              span_vectors: Sequence[Sequence[float] | np.ndarray | None], threshold: float,
              per_span: int | None = None) -> pa.StructArray:
    """The (column, span) pairs of the candidate databases that the span mapping keeps.

    Args:
        index: from :func:`build_index`.
        dbs: the candidate databases (unknown names are ignored).
        span_tokens: each span's words (span number = position, from 1).
        span_vectors: each span's phrase vector (None or zeros: no cosine, exact matches only).
        threshold: dbrouter__phrase_threshold; a pair is kept when it matches exactly by name or by
            value, or its cosine is at least this.
        per_span: dbrouter__phrase_columns_per_span; of one database's columns only this many of the
            most similar are kept per span besides its exact and value matches and the most similar
            of each connected part (None: all). A span of a 15,000-column dataset was similar to
            thousands of its columns.

    Returns:
        A struct array of :data:`HIT_TYPE`.

    Raises:
        ValueError: as many tokens as vectors are not given, or a vector of another size.
    """
    pairs = _pairs(index, dbs, span_tokens, span_vectors, threshold, per_span)
    if pairs is None:
        return pa.nulls(0, HIT_TYPE)
    return pa.StructArray.from_arrays(
        [*(arrow.take_strings(index.keys[k], pairs.rows) for k in KEYS), arrow.numeric(pairs.spans, pa.int32()),
         arrow.booleans(pairs.exact), arrow.booleans(pairs.value), arrow.numeric(pairs.cos, pa.float32())],
        fields=list(HIT_TYPE))


def span_mappings(index: PhraseIndex, dbs: Sequence[str] | None, span_tokens: Sequence[Sequence[str]],
                  span_vectors: Sequence[Sequence[float] | np.ndarray | None], threshold: float,
                  per_span: int | None, span_texts: Sequence[str], span_words: Sequence[Sequence[int] | None]
                  ) -> pa.StructArray:
    """The span mapping itself: per candidate column and question word, the best span holding the
    word that maps to the column - what ``column_phrase_mappings``' SQL makes of
    :func:`span_hits`' pairs (each pair once per word of its span; similarity 1 for an exact or
    value match, else the cosine, NaN none; kept at or above ``threshold``; per column and word the
    highest similarity, its span - ties to the larger span text -, and whether any pair matched by
    name or by value). A column is one row of the index (``kb_column_phrases`` has one row per
    ``column_key``, itself made of the database, table and column names).

    Args:
        index, dbs, span_tokens, span_vectors, threshold, per_span: as for :func:`span_hits`.
        span_texts: each span's text, in the same order.
        span_words: each span's question word indexes (None: none).

    Returns:
        A struct array of :data:`MAPPING_TYPE`.

    Raises:
        ValueError: as :func:`span_hits`, or texts or words not given for every span.
    """
    if not len(span_texts) == len(span_words) == len(span_tokens):
        raise ValueError(f"dbrouter_phrase_mappings: {len(span_tokens)} spans' tokens but {len(span_texts)} "
                         f"texts and {len(span_words)} word lists")
    pairs = _pairs(index, dbs, span_tokens, span_vectors, threshold, per_span)
    if pairs is None:
        return pa.nulls(0, MAPPING_TYPE)
    similarity = np.where(pairs.exact | pairs.value, np.float32(1.0), pairs.cos).astype(np.float32)
    with np.errstate(invalid="ignore"):
        keep = similarity >= threshold  # float32 against the threshold, as SQL's FLOAT >= literal; NaN: no
    rows, spans, similarity = pairs.rows[keep], pairs.spans[keep], similarity[keep]
    exact, value = pairs.exact[keep], pairs.value[keep]
    # each pair once per word of its span
    lens = np.array([len(w or ()) for w in span_words], np.int64)
    flat = np.array([int(i) for w in span_words for i in (w or ())], np.int64)
    n = lens[spans - 1]
    pair = np.repeat(np.arange(len(rows)), n)
    word = flat[np.repeat((np.cumsum(lens) - lens)[spans - 1] - (np.cumsum(n) - n), n) + np.arange(int(n.sum()))]
    if not len(pair):
        return pa.nulls(0, MAPPING_TYPE)
    # per (column, word): first by similarity descending, then span text descending
    text_rank = np.empty(len(span_texts), np.int64)
    text_rank[sorted(range(len(span_texts)), key=lambda i: span_texts[i])] = np.arange(len(span_texts))
    low = int(word.min())
    group = rows[pair] * (int(word.max()) - low + 1) + (word - low)
    order = np.lexsort((-text_rank[spans[pair] - 1], -similarity[pair], group))
    sorted_group = group[order]
    starts = np.flatnonzero(np.concatenate(([True], sorted_group[1:] != sorted_group[:-1])))
    first = pair[order[starts]]
    any_exact = np.logical_or.reduceat(exact[pair][order], starts)
    any_value = np.logical_or.reduceat(value[pair][order], starts)
    kind = np.where(any_exact, 0, np.where(any_value, 1, 2))
    return pa.StructArray.from_arrays(
        [arrow.take_strings(index.keys["db_id"], rows[first]), arrow.numeric(word[order[starts]], pa.int32()),
         *(arrow.take_strings(index.keys[k], rows[first]) for k in KEYS[1:]),
         arrow.numeric(similarity[first], pa.float32()),
         arrow.take_strings(arrow.strings(list(span_texts)), spans[first] - 1), arrow.booleans(any_exact),
         arrow.take_strings(_KINDS, kind)],
        fields=list(MAPPING_TYPE))


def _pairs(index: PhraseIndex, dbs: Sequence[str] | None, span_tokens: Sequence[Sequence[str]],
           span_vectors: Sequence[Sequence[float] | np.ndarray | None], threshold: float,
           per_span: int | None) -> _Pairs | None:
    """:func:`span_hits`' pairs as arrays (None: no candidate or no span)."""
    if len(span_tokens) != len(span_vectors):
        raise ValueError(f"dbrouter_phrase_mappings: {len(span_tokens)} spans' tokens but {len(span_vectors)} vectors")
    # in row order: the candidates' rows sorted, a database's together (nothing here is the size of the KB)
    ranges = sorted(index.db_rows[d] for d in dict.fromkeys(dbs or []) if d in index.db_rows)
    if not ranges or not len(span_tokens):
        return None
    rows = np.concatenate([np.arange(a, b) for a, b in ranges])
    db_of = np.repeat(np.arange(len(ranges)), [b - a for a, b in ranges])  # each of rows' candidate
    within = _Within(rows, np.array([a for a, _ in ranges], np.int64), np.array([b for _, b in ranges], np.int64))

    def local(of: np.ndarray) -> np.ndarray:  # positions in ``rows`` of candidate rows
        return np.searchsorted(rows, of)

    dim = index.vectors.shape[1]
    s = np.zeros((len(span_vectors), dim), np.float32)
    for i, v in enumerate(span_vectors):
        if v is not None:
            a = np.asarray(v, np.float32)
            if a.shape != (dim,):
                raise ValueError(f"dbrouter_phrase_mappings: a span vector has {a.size} values, the phrases' {dim}")
            s[i] = a
    s_norm = np.linalg.norm(s, axis=1)
    s = s / np.where(s_norm == 0, 1.0, s_norm)[:, None]
    sims = np.concatenate([np.dot(index.vectors[a:b], s.T) for a, b in ranges]).astype(np.float32)
    sims[index.zero[rows]] = np.nan
    sims[:, s_norm == 0] = np.nan
    by_span = np.ascontiguousarray(sims.T)  # a span's cosines in one run of memory
    # the candidates' rows that stand for their table: once, from their rows, not per span from a
    # mask over the whole index (517k rows at 10,000 synthetic databases, ~0.3 ms a span)
    represents = np.sort(rows[index.represents[rows]])
    out_rows, out_span, out_exact, out_value = [], [], [], []
    for j, toks in enumerate(span_tokens):
        named = _union(_any_of(index.column, toks, within), represents)
        exact = _member(_all_of(index.label, toks, within), named)
        value = _all_of(index.value, toks, within)
        with np.errstate(invalid="ignore"):
            hit = by_span[j] >= threshold  # over rows
        if per_span is not None and np.count_nonzero(hit) > per_span:
            hit[local(exact)] = False  # kept anyway: the cap ranks the others
            hit[local(value)] = False
            pick = np.flatnonzero(hit)
            similar = _top_similar(index, rows[pick], by_span[j, pick], per_span, db_of[pick])
        else:
            similar = rows[hit]
        kept = _union(_union(exact, value), similar)
        out_rows.append(kept)
        out_span.append(np.full(len(kept), j + 1, np.int32))
        out_exact.append(np.isin(kept, exact, assume_unique=True))
        out_value.append(np.isin(kept, value, assume_unique=True))
    kept_rows = np.concatenate(out_rows)
    spans = np.concatenate(out_span)
    return _Pairs(kept_rows, spans, np.concatenate(out_exact), np.concatenate(out_value),
                  sims[local(kept_rows), spans - 1])
