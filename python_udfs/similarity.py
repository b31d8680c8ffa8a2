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
