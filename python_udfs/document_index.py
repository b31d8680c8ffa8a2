"""The routed documents' vectors as one matrix in the UDF process, searched with numpy (issue 23).

A DuckDB scan of ``kb_document_embeddings`` reads every vector of every row group it touches
(a filter on ``db_id`` does not skip them), so the UDF path's shortlist asks this index instead:
the rows of one shortlist stage (``route_stage`` 1: every database's database, table and example
documents; 2: the column documents of given databases, located by offsets, not by a scan), their
cosines with the question as one matrix product. SQL then aggregates the rows returned exactly as
it aggregates the scan's, so only rows those aggregates can read are returned: per database and
kind, the top ``n`` by (similarity desc, label desc), the order of the shortlist's ``top_n_rank``
(``n`` = 1 for the database document, ``n_votes`` for examples: the repository's ``n_votes`` best
examples are each among their own database's best ``n_votes``). Of the tables and the columns
SQL reads the mean similarity of the ``n_top`` best and the best one's label, so one row a
database stands for them: the best, carrying that mean in ``agg``, summed in the order and
precision DuckDB's ``list_avg(max(sim, n_top))`` sums (float64, best first; a unit test compares
the two bit for bit). At 10,000 synthetic databases stage 1 hands SQL 20,000 rows, not 40,000.

Similarities are float32 dot products of unit vectors; DuckDB's ``array_cosine_similarity``
differs from them by float rounding only (tests: within 1e-6, the same rankings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from python_udfs import arrow
from python_udfs.similarity import unit_rows

KINDS = ("database", "table", "example", "column")
"""The document kinds the shortlist reads, in code order."""

_KIND_NAMES = arrow.strings(KINDS)

HIT_TYPE = pa.struct([("db_id", pa.dictionary(pa.int32(), pa.string())),
                      ("doc_kind", pa.dictionary(pa.int32(), pa.string())), ("doc_label", pa.string()),
                      ("sim", pa.float32()), ("agg", pa.float64())])
"""One returned document: its database, kind, label, cosine with the question and, for a table or
column row, the mean cosine of its database's ``n_top`` best of that kind (NULL for the others). The database
and kind are dictionary-encoded (numbers into the index's names): DuckDB reads them as VARCHAR,
and 40,000 rows at 10,000 synthetic databases are not 80,000 strings gathered byte by byte."""


@dataclass(frozen=True)
class DocumentIndex:
    """One embedder's routed documents, rows ordered by (stage, database).

    Attributes:
        vectors: (rows, dim) float32 unit vectors (a zero vector stays zero: its cosine is NaN).
        zero: rows whose stored vector is all zeros.
        db: database number of each row (into ``db_names``).
        kind: kind code of each row (into :data:`KINDS`).
        db_names: database names.
        labels: each row's label.
        stage_rows: stage -> (first row, end row).
        db_rows: stage-2 rows of each database number: (first row, end row).
        db_number: database name -> its number.
        group: each row's (database, kind) group number, ascending with the rows.
        within: each row's position within its group (the rows of a group are contiguous).
    """

    vectors: np.ndarray
    zero: np.ndarray
    db: np.ndarray
    kind: np.ndarray
    db_names: pa.Array
    labels: pa.Array
    stage_rows: dict[int, tuple[int, int]]
    db_rows: dict[int, tuple[int, int]]
    db_number: dict[str, int]
    group: np.ndarray
    within: np.ndarray

    @property
    def rows(self) -> int:
        """How many documents the index holds."""
        return len(self.db)


def build_index(table: pa.Table) -> DocumentIndex:
    """Index the routed documents of one embedder.

    Args:
        table: columns ``db_id``, ``doc_kind``, ``doc_label``, ``route_stage`` (1 or 2) and
            ``embedding`` (fixed-size list of float), e.g. read from ``kb_document_embeddings``.

    Returns:
        The index.

    Raises:
        ValueError: a row has another kind or stage, or vectors of different sizes.
    """
    n = table.num_rows
    db_ids = table.column("db_id").to_pylist()
    kinds = table.column("doc_kind").to_pylist()
    stages = arrow.to_numpy(table.column("route_stage"), np.int64)
    names = sorted(set(db_ids))
    number = {d: i for i, d in enumerate(names)}
    code = {k: i for i, k in enumerate(KINDS)}
    bad = {k for k in kinds if k not in code} | {int(s) for s in stages if s not in (1, 2)}
    if bad:
        raise ValueError(f"document index: unexpected kinds or stages {sorted(map(str, bad))}")
    db = np.fromiter((number[d] for d in db_ids), np.int32, n)
    kind = np.fromiter((code[k] for k in kinds), np.int8, n)
    label_list0 = table.column("doc_label").to_pylist()
    distinct = sorted({x for x in label_list0 if x is not None}, reverse=True)
    rank = {x: i for i, x in enumerate(distinct)}
    label_rank = np.fromiter((rank.get(x, len(distinct)) for x in label_list0), np.int32, n)
    # rows by (stage, database, kind, label descending): a stage's rows and a database's columns
    # are contiguous, and a stable sort on similarity alone then breaks ties by label as SQL does
    order = np.lexsort((label_rank, kind, db, stages)) if n else np.zeros(0, np.int64)
    emb = table.column("embedding").combine_chunks() if n else None
    if emb is not None and pa.types.is_fixed_size_list(emb.type):
        matrix, zero = unit_rows(emb, order)  # one copy of the vectors (~1 GB at 10,000 synthetic databases)
    else:
        if emb is not None:
            matrix = np.asarray(emb.to_pylist(), dtype=np.float32)
            if matrix.ndim != 2:
                raise ValueError("document index: the vectors are not all of one size")
            matrix = np.ascontiguousarray(matrix[order])
        else:
            matrix = np.zeros((0, 1), np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        zero = norms == 0
        matrix = matrix / np.where(zero, 1.0, norms)[:, None]
    label_list = [label_list0[i] for i in order]
    stages, db, kind = stages[order], db[order], kind[order]
    stage_rows = {s: (int(np.searchsorted(stages, s, "left")), int(np.searchsorted(stages, s, "right"))) for s in (1, 2)}
    lo, hi = stage_rows[2]
    starts = np.searchsorted(db[lo:hi], np.arange(len(names)), "left") + lo
    ends = np.searchsorted(db[lo:hi], np.arange(len(names)), "right") + lo
    db_rows = {i: (int(a), int(b)) for i, (a, b) in enumerate(zip(starts, ends, strict=True)) if b > a}
    # a (stage, database, kind) group's rows are contiguous, and a stage's span or a database's
    # stage-2 span holds whole groups: a row's position in its group is the same in any of them
    group = (stages.astype(np.int64) * len(names) + db) * len(KINDS) + kind
    first = _run_starts(group)
    within = np.arange(n) - np.repeat(first, np.diff(np.r_[first, n]))
    return DocumentIndex(matrix, zero, db, kind, arrow.strings(names), arrow.strings(label_list), stage_rows,
                         db_rows, number, group, within)


def nearest(index: DocumentIndex, vector: Sequence[float] | np.ndarray, stage: int, dbs: Sequence[str] | None,
            n_top: int, n_votes: int) -> pa.StructArray:
    """The documents of one stage an aggregate over the stage can read, with their cosines.

    Args:
        index: from :func:`build_index`.
        vector: the question's vector.
        stage: 1 (every database) or 2 (the databases in ``dbs``).
        dbs: stage 2's databases (unknown names are ignored); ignored for stage 1.
        n_top: table and column rows kept per database (dbrouter__top_tables / __top_columns).
        n_votes: example rows kept per database (dbrouter__example_votes).

    Returns:
        A struct array of :data:`HIT_TYPE`, grouped by database and kind, best first.

    Raises:
        ValueError: a stage other than 1 or 2, or a vector of another size.
    """
    if stage not in (1, 2):
        raise ValueError(f"dbrouter_document_hits: stage must be 1 or 2, got {stage}")
    q = np.asarray(vector, dtype=np.float32)
    if index.rows and q.shape != (index.vectors.shape[1],):
        raise ValueError(f"dbrouter_document_hits: the question's vector has {q.size} values, "
                         f"the documents' {index.vectors.shape[1]}")
    if stage == 1:
        spans = [index.stage_rows[1]]
    else:
        spans = [index.db_rows[i] for d in dict.fromkeys(dbs or []) if (i := index.db_number.get(d)) in index.db_rows]
    spans = sorted((a, b) for a, b in spans if b > a)  # by row: the groups ascending, as the sort leaves them
    rows = np.concatenate([np.arange(a, b) for a, b in spans]) if spans else np.zeros(0, np.int64)

    def of_rows(values: np.ndarray) -> np.ndarray:  # one span (stage 1): a slice, not a gather
        return values[spans[0][0]:spans[0][1]] if len(spans) == 1 else values[rows]

    norm = float(np.linalg.norm(q))
    if norm:  # slices, not a fancy-indexed copy of the vectors
        qn = q / norm
        sims = np.concatenate([similarities(index.vectors[a:b], qn) for a, b in spans]) if spans else np.zeros(0, np.float32)
    else:
        sims = np.full(len(rows), np.nan, np.float32)
    sims = np.where(of_rows(index.zero), np.nan, sims).astype(np.float32)
    # one float key per row: its group, then 1 - similarity in [0, 2] (groups 4 apart; float32
    # similarities stay distinct in float64); DuckDB orders NaN (the cosine of a zero vector)
    # above every number, so it comes first. The rows are already in label-descending order
    # within a group, and the stable sort keeps it for equal similarities. The sort moves rows
    # within their groups only, so the sorted rows keep the groups' layout: the n-th sorted row
    # of a group sits where the group's n-th row was, with the same kind.
    groups = of_rows(index.group)
    key = groups * 4.0 + np.where(np.isnan(sims), -1.0, 1.0 - sims.astype(np.float64))
    order = np.argsort(key, kind="stable")
    kinds = of_rows(index.kind)
    limit = np.array([1, n_top, n_votes, n_top], np.int64)[kinds]
    picked = order[of_rows(index.within) < limit]
    keep, kept_sims, agg, no_agg = _one_row_for_the_means(rows[picked], sims[picked], kinds[picked], groups[picked])
    return pa.StructArray.from_arrays(
        [arrow.dictionary(index.db[keep], index.db_names), arrow.dictionary(index.kind[keep], _KIND_NAMES),
         arrow.take_strings(index.labels, keep), arrow.numeric(kept_sims, pa.float32()),
         arrow.numeric(agg, pa.float64(), null=no_agg)],
        fields=list(HIT_TYPE))


def similarities(vectors: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """Each row of ``vectors`` times ``unit`` (float32 dot products).

    numpy's own loop (``einsum``), not BLAS: a matrix-vector product reads each vector once and is
    bound by memory, and OpenBLAS's one-thread ``sgemv`` took twice as long over this machine's
    rows (113,580 x 384, stage 1 at 10,000 synthetic databases: 13.0 against 6.8 ms; 5,892 rows:
    0.64 against 0.36 ms). One thread, one summation order: the same floats on every call.

    Args:
        vectors: (rows, dim) float32.
        unit: (dim,) float32.

    Returns:
        (rows,) float32.
    """
    return np.einsum("ij,j->i", vectors, unit)


def _run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts (positions; none for no values)."""
    return np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1] if len(values) else np.zeros(0, np.int64)


_MEAN_KINDS = np.array([k in ("table", "column") for k in KINDS])
"""The kinds whose rows SQL reads as a mean of the best (by kind code)."""


def _one_row_for_the_means(rows: np.ndarray, sims: np.ndarray, kinds: np.ndarray,
                           groups: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Of the kept rows (a group's together, best first), a table or column group's first row alone,
    with the group's mean similarity.

    Args:
        rows: index rows kept.
        sims: their similarities (float32; NaN for a zero vector, first in its group).
        kinds: their kind codes.
        groups: their group numbers.

    Returns:
        (rows, similarities, means, no mean): the rows returned, their similarities, the mean of
        each one's group (0 where none) and True where a row carries no mean.
    """
    if not len(rows):
        return rows, sims, np.zeros(0), np.zeros(0, bool)
    first = _run_starts(groups)
    sizes = np.diff(np.r_[first, len(rows)])
    # a sequential float64 sum, best first, as DuckDB's avg over max(sim, n) adds (numpy's own
    # sum of 8 or more values adds pairwise)
    total = np.zeros(len(first))
    for j in range(int(sizes.max())):
        more = sizes > j
        total[more] += sims[first[more] + j].astype(np.float64)
    mean = total / sizes
    meaned = _MEAN_KINDS[kinds]
    keep = ~meaned
    keep[first[meaned[first]]] = True
    group_of = np.repeat(np.arange(len(first)), sizes)
    return rows[keep], sims[keep], np.where(meaned, mean[group_of], 0.0)[keep], ~meaned[keep]
