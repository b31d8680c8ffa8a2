"""Cosine similarity for engines without a native one.

DuckDB has ``array_cosine_similarity`` (used by the dbt macro ``cosine_similarity`` on
DuckDB) and Snowflake has ``VECTOR_COSINE_SIMILARITY``; this pure version backs the
``dbrouter_cosine`` UDF elsewhere and is the reference the tests compare against.
"""

from __future__ import annotations

from collections.abc import Sequence

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
