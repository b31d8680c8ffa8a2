import numpy as np
import pyarrow as pa
import pytest

from python_udfs import similarity
from python_udfs.similarity import cosine, cosine_arrow, unit_rows


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


@pytest.mark.parametrize("ordered", [False, True])
def test_unit_rows_are_the_whole_matrix_computation_bit_for_bit(ordered, monkeypatch):
    """One copy, norms by blocks, division in place: the values of normalising the whole matrix at once."""
    monkeypatch.setattr(similarity, "NORM_BLOCK", 7)  # blocks that do not divide the rows
    rng = np.random.default_rng(3)
    rows = rng.normal(size=(40, 16)).astype(np.float32)
    rows[5] = 0.0  # a zero vector
    null = np.zeros(41, bool)
    null[12] = True  # a NULL row (its stored values are not zero)
    flat = np.concatenate([rng.normal(size=16).astype(np.float32), rows.reshape(-1)])
    array = pa.FixedSizeListArray.from_arrays(pa.array(flat), 16, mask=pa.array(null)).slice(1)  # an offset
    order = rng.permutation(40) if ordered else None
    matrix, zero = unit_rows(array, order)
    want = rows.copy()
    want[11] = 0.0
    want = want[order] if ordered else want
    norms = np.linalg.norm(want, axis=1)
    expected = want / np.where(norms == 0, 1.0, norms)[:, None]
    assert matrix.dtype == np.float32 and matrix.flags.c_contiguous and matrix.flags.writeable
    assert np.array_equal(matrix, expected) and zero.tolist() == (norms == 0).tolist()
    assert int(zero.sum()) == 2
    assert np.array_equal(unit_rows(array[:0])[0], np.zeros((0, 16), np.float32))
