"""Many probe questions' schema scores over every database, streamed through numpy (issue 36).

The routing calibration (model ``kb_routing_calibration``) scores each of its probe questions
(example questions, off-topic probes) against every database of the KB as the shortlist scores a
question: per database the best database document, the mean of the best ``n_tables`` table
documents and of the best ``n_columns`` column documents. In SQL that is one cosine and one
window row per (probe, document): 53 million of each for 84 probes at 10,000 databases, a
minute of a build. Here the cosines are one matrix product per batch of documents and the
"best n" one pass per rank, and the documents are read in batches, so memory stays bounded
by the probes and the databases, not the documents.

The means are those of SQL's ``avg(sim) ... where rn <= n`` over a ``row_number()`` by
similarity descending: ties do not matter to a mean, fewer than ``n`` documents give the mean of
those there are, and a NaN cosine (a zero vector) makes its group NaN, as DuckDB orders NaN above
every number. Similarities are float32 dot products of unit vectors; DuckDB's
``array_cosine_similarity`` differs from them by float rounding only (tests: within 1e-6).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from python_udfs import arrow

KINDS = ("database", "table", "column")
"""The document kinds of a schema score, in code order."""

SCORE_TYPE = pa.struct([("db_id", pa.string()), ("s_database", pa.float64()), ("s_table", pa.float64()),
                        ("s_column", pa.float64())])
"""One database's parts of a probe's schema score."""

MAX_STATE_BYTES = 256 << 20
"""Bound on the running best-n state (probes x groups x n floats) kept at once; more probes than
fit are scored in blocks, each a pass over the documents."""


@dataclass(frozen=True)
class SchemaScores:
    """Each probe's best-n means per database and kind.

    Attributes:
        db_names: the databases, in the order of the arrays' second axis.
        means: (probes, databases, 3) float64: the mean of the best 1 database, ``n_tables``
            table and ``n_columns`` column cosines; NaN where the database has no document of
            the kind or a NaN cosine among them.
        present: (databases, 3) bool: the database has a document of the kind.
    """

    db_names: list[str]
    means: np.ndarray
    present: np.ndarray


def _best_n(sims: np.ndarray, rows: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Per probe and segment of ``rows``, the segment's ``n`` largest similarities, largest first.

    Args:
        sims: (probes, documents) float32 without NaN.
        rows: the columns of ``sims`` to read, segment after segment.
        starts: first position in ``rows`` of each segment (sorted, the first 0, none empty).
        n: how many values to keep (>= 1).

    Returns:
        (probes, segments, n) float32; -inf where a segment has fewer than ``n`` values.
    """
    lengths = np.diff(np.r_[starts, len(rows)])
    out = np.full((sims.shape[0], len(starts), n), -np.inf, np.float32)
    # segments in buckets of one padded width (the next power of two: at most twice the cells),
    # each bucket one gather into (probes, segments, width) and a partition along the last axis
    width = np.left_shift(1, np.ceil(np.log2(np.maximum(lengths, 1))).astype(np.int64))
    for w in np.unique(width):
        segs = np.flatnonzero(width == w)
        offsets = np.arange(w)
        inside = offsets < lengths[segs, None]
        cells = sims[:, rows[np.where(inside, starts[segs, None] + offsets, 0)]]
        cells[:, ~inside] = -np.inf
        if w > n:
            cells = np.partition(cells, w - n, axis=2)[:, :, w - n:]
        keep = min(n, int(w))
        out[:, segs, :keep] = -np.sort(-cells, axis=2)[:, :, :keep]
    return out


def schema_scores(probes: np.ndarray, batches: Iterable[tuple[list[str], np.ndarray, np.ndarray]],
                  n_tables: int, n_columns: int) -> SchemaScores:
    """Score probe vectors against documents read in batches.

    Args:
        probes: (probes, dim) float32 vectors (a zero vector gets NaN everywhere, as its cosines).
        batches: (db_ids, kinds, vectors) per batch of documents, any order: database names,
            kind codes into :data:`KINDS` (int array; -1: a row that scores nothing but lists its
            database, e.g. a NULL vector), (rows, dim) float32 vectors.
        n_tables: table documents averaged per database (dbrouter__top_tables).
        n_columns: column documents averaged per database (dbrouter__top_columns).

    Returns:
        The probes' means.

    Raises:
        ValueError: n below 1, or vectors of another size than the probes'.
    """
    if n_tables < 1 or n_columns < 1:
        raise ValueError(f"schema scores: n_tables and n_columns must be at least 1, got {n_tables}, {n_columns}")
    probes = np.asarray(probes, np.float32)
    norms = np.linalg.norm(probes, axis=1)
    unit = probes / np.where(norms == 0, 1.0, norms)[:, None]
    ns = (1, n_tables, n_columns)
    number: dict[str, int] = {}
    # running state per kind: best n values (probes, databases, n) and "a NaN was seen"
    best = [np.full((len(probes), 0, n), -np.inf, np.float32) for n in ns]
    nan = [np.zeros((len(probes), 0), bool) for _ in ns]
    present = np.zeros((0, 3), bool)
    for db_ids, kinds, vectors in batches:
        vectors = np.asarray(vectors, np.float32)
        if vectors.ndim != 2 or (len(vectors) and vectors.shape[1] != probes.shape[1]):
            raise ValueError(f"schema scores: documents of {vectors.shape[-1]} values, probes of {probes.shape[1]}")
        for d in db_ids:
            if d not in number:
                number[d] = len(number)
        grow = len(number) - present.shape[0]
        if grow > 0:  # room for twice the databases seen: a few copies of the state, not one a batch
            grow = max(grow, present.shape[0])
            present = np.vstack([present, np.zeros((grow, 3), bool)])
            best = [np.concatenate([b, np.full((len(probes), grow, b.shape[2]), -np.inf, np.float32)], axis=1)
                    for b in best]
            nan = [np.concatenate([x, np.zeros((len(probes), grow), bool)], axis=1) for x in nan]
        if not len(vectors):
            continue
        db = np.fromiter((number[d] for d in db_ids), np.int64, len(db_ids))
        kinds = np.asarray(kinds, np.int64)
        vnorm = np.linalg.norm(vectors, axis=1)
        sims = unit @ (vectors / np.where(vnorm == 0, 1.0, vnorm)[:, None]).T
        sims[:, vnorm == 0] = np.nan
        sims[norms == 0, :] = np.nan
        isnan = np.isnan(sims) if (vnorm == 0).any() or (norms == 0).any() else None
        if isnan is not None:
            sims[isnan] = -np.inf
        for k, n in enumerate(ns):
            rows = np.flatnonzero(kinds == k)
            if not len(rows):
                continue
            rows = rows[np.argsort(db[rows], kind="stable")]
            g = db[rows]
            starts = np.r_[0, np.flatnonzero(g[1:] != g[:-1]) + 1]
            groups = g[starts]
            present[groups, k] = True
            if isnan is not None:
                nan[k][:, groups] |= np.maximum.reduceat(isnan[:, rows], starts, axis=1)
            local = _best_n(sims, rows, starts, n)
            merged = -np.sort(-np.concatenate([best[k][:, groups, :], local], axis=2), axis=2)
            best[k][:, groups, :] = merged[:, :, :n]
    n_dbs = len(number)
    means = np.full((len(probes), n_dbs, 3), np.nan)
    for k in range(3):
        kept = np.isfinite(best[k][:, :n_dbs])
        total = np.where(kept, best[k][:, :n_dbs], 0).astype(np.float64).sum(axis=2)
        count = kept.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            means[:, :, k] = np.where((count > 0) & ~nan[k][:, :n_dbs], total / count, np.nan)
    return SchemaScores(list(number), means, present[:n_dbs])


def probe_block(databases: int, n_max: int) -> int:
    """How many probes to score in one pass so the running state stays within :data:`MAX_STATE_BYTES`.

    Args:
        databases: the KB's databases (an upper bound will do).
        n_max: the largest n averaged.

    Returns:
        At least 1.
    """
    per_probe = max(1, databases) * (n_max + 2) * 4 * 3
    return max(1, MAX_STATE_BYTES // per_probe)


def to_arrow(scores: SchemaScores) -> list[pa.StructArray]:
    """Each probe's databases as a struct array of :data:`SCORE_TYPE` (NULL where a kind is absent).

    Args:
        scores: from :func:`schema_scores`.

    Returns:
        One struct array per probe, the databases with any document, in first-read order.
    """
    names = arrow.strings(scores.db_names)
    out = []
    for p in range(scores.means.shape[0]):
        cols = [arrow.numeric(scores.means[p, :, k], pa.float64(), null=~scores.present[:, k]) for k in range(3)]
        out.append(pa.StructArray.from_arrays([names, *cols], fields=list(SCORE_TYPE)))
    return out
