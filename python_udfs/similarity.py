"""Cosine similarity for engines without a native one.

DuckDB has ``array_cosine_similarity`` (used by the dbt macro ``cosine_similarity`` on
DuckDB) and Snowflake has ``VECTOR_COSINE_SIMILARITY``; this pure version backs the
``dbrouter_cosine`` UDF elsewhere and is the reference the tests compare against.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from python_udfs import arrow


def cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    """Cosine similarity of two vectors.

    Args:
        a: first vector (None allowed).
        b: second vector, same length as ``a``.

    Returns:
        The cosine in [-1, 1]; None if either input is None or has zero norm.

    Raises:
        ValueError: the vectors differ in length.
    """
    if a is None or b is None:
        return None
    va = np.asarray(a, dtype=np.float64)
    vb = np.asarray(b, dtype=np.float64)
    if va.shape != vb.shape:
        raise ValueError(f"cosine: vectors differ in length ({va.size} vs {vb.size})")
    na, nb = np.linalg.norm(va), np.linalg.norm(vb)
    if na == 0 or nb == 0:
        return None
    return float(va @ vb / (na * nb))


def cosine_arrow(a: pa.Array, b: pa.Array) -> pa.Array:
    """Row-wise cosine of two arrow list arrays (the batch form of :func:`cosine`).

    Args:
        a: list/array column.
        b: list/array column of the same length.

    Returns:
        A float64 arrow array.
    """
    values = [cosine(x, y) for x, y in zip(a.to_pylist(), b.to_pylist())]
    null = np.fromiter((v is None for v in values), bool, len(values))
    return arrow.numeric([0.0 if v is None else v for v in values], pa.float64(), null=null)


NORM_BLOCK = 4_096
"""Rows whose norms :func:`unit_rows` takes at once (the block's temporary squares: 6 MB at 384 floats)."""


def unit_rows(vectors: pa.Array, order: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Stored vectors as unit rows of one float32 matrix, made with one copy of them.

    An index of 630,454 vectors is ~1 GB a copy, and a fresh copy costs about a second of page
    faults on a small machine: the rows are gathered (in ``order``) straight from the Arrow buffer,
    normalised in place, and their norms taken a block of rows at a time (a row's norm is its own
    reduction: the values of ``np.linalg.norm(matrix, axis=1)``, bit for bit).

    Args:
        vectors: a fixed-size list array of numbers, one vector a row (NULL: a zero row).
        order: the rows to take, in order (None: all, as they are).

    Returns:
        ``(matrix, zero)``: (n, size) float32 unit rows (a zero or NULL row stays zero) and (n,)
        bool, True where the row was all zeros.
    """
    view, valid = arrow.matrix_view(vectors)
    if order is None:
        matrix, valid_rows = np.array(view, dtype=np.float32), valid
    else:
        matrix, valid_rows = view[order], valid[order]
    matrix[~valid_rows] = 0.0
    n = len(matrix)
    norms = np.concatenate([np.linalg.norm(matrix[i:i + NORM_BLOCK], axis=1) for i in range(0, n, NORM_BLOCK)]) \
        if n else np.zeros(0, np.float32)
    zero = norms == 0
    np.divide(matrix, np.where(zero, 1.0, norms)[:, None], out=matrix)
    return matrix, zero


SPLIT_MIN_ROWS = 32_768
"""A span of at least this many rows is multiplied in two halves at once (:func:`span_dots`)."""

SPLIT_ALIGN = 4_096
"""Where :func:`span_dots` may cut a span: a multiple of this many rows from its first row."""

_pool: tuple[int, ThreadPoolExecutor] | None = None  # (the pid it was made in, the pool)
_pool_lock = threading.Lock()


def _worker() -> ThreadPoolExecutor | None:
    """The process's one product thread, or None on a single core (made on first use; again in a
    forked child, which inherits the pool but not its thread)."""
    global _pool
    if len(os.sched_getaffinity(0)) < 2:
        return None
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(max_workers=1, thread_name_prefix="dbrouter-dot"))
        return _pool[1]


def span_dots(matrix: np.ndarray, spans: Sequence[tuple[int, int]], q: np.ndarray) -> np.ndarray:
    """The products ``matrix[a:b] @ q`` of each span, concatenated.

    A question's product over a whole stage (113,580 rows x 384 floats at 10,000 synthetic
    databases, 174 MB) is bound by one core's memory bandwidth: 13.6 ms on one BLAS thread, the
    limit :func:`python_udfs.blas.one_blas_thread` keeps because OpenBLAS's own threads spin.
    A span of at least :data:`SPLIT_MIN_ROWS` rows is cut in two, its second half multiplied on a
    worker thread (numpy releases the GIL) while this one multiplies the first: ~7 ms. The cut
    lies a multiple of :data:`SPLIT_ALIGN` rows from the span's start, so every row is multiplied
    by the kernel's same block of rows as in one call: the values are those of ``matrix[a:b] @ q``
    bit for bit (OpenBLAS's gemv blocks 4 rows here; an arbitrary cut changes the last bits of
    some rows, and so does OpenBLAS's own threading).

    Args:
        matrix: (rows, dim) float32.
        spans: (first row, end row) pairs.
        q: (dim,) float32.

    Returns:
        float32 products, the spans' in order.
    """
    pieces, later = [], []
    pool = _worker() if any(b - a >= SPLIT_MIN_ROWS for a, b in spans) else None
    for a, b in spans:
        cut = a + (b - a) // 2 // SPLIT_ALIGN * SPLIT_ALIGN
        if pool is not None and b - a >= SPLIT_MIN_ROWS and a < cut:
            later.append((len(pieces) + 1, pool.submit(np.dot, matrix[cut:b], q)))
            pieces += [np.dot(matrix[a:cut], q), None]
        else:
            pieces.append(np.dot(matrix[a:b], q))
    for i, future in later:
        pieces[i] = future.result()
    return np.concatenate(pieces) if pieces else np.zeros(0, np.float32)
