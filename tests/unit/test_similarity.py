import numpy as np
import pyarrow as pa
import pytest

from python_udfs.similarity import cosine, cosine_arrow


def test_cosine_matches_numpy():
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=8), rng.normal(size=8)
    assert cosine(a, b) == pytest.approx(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_cosine_nulls_zero_vectors_and_length_mismatch():
    assert cosine(None, [1.0]) is None
    assert cosine([0.0, 0.0], [1.0, 0.0]) is None
    with pytest.raises(ValueError, match="differ in length"):
        cosine([1.0], [1.0, 2.0])


def test_cosine_arrow_row_wise():
    out = cosine_arrow(pa.array([[1.0, 0.0], None]), pa.array([[1.0, 0.0], [0.0, 1.0]]))
    assert out.to_pylist() == [pytest.approx(1.0), None]
