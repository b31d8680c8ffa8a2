"""python_udfs/arrow.py builds what pyarrow builds, without importing pandas or pyarrow.compute."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from python_udfs import arrow


@pytest.mark.parametrize("type_", [pa.int8(), pa.int32(), pa.int64(), pa.float32(), pa.float64()])
def test_numeric_equals_pa_array(type_):
    values = np.array([3, -1, 0, 7], dtype=arrow._NUMPY[type_])
    null = np.array([False, True, False, False])
    assert arrow.numeric(values, type_).equals(pa.array(values, type_))
    assert arrow.numeric(values, type_, null=null).equals(pa.array(values, type_, mask=null))


def test_booleans_strings_lists_vectors_equal_pyarrows():
    flags = np.array([True, False] * 7 + [True])  # more than one byte of bits
    assert arrow.booleans(flags).equals(pa.array(flags, pa.bool_()))
    words = ["a", None, "", "héllo wörld", "日本", "x" * 300]
    assert arrow.strings(words).equals(pa.array(words, pa.string()))
    assert arrow.strings([]).equals(pa.array([], pa.string()))
    items = pa.array([1, 2, 3, 4], pa.int32())
    null = np.array([False, True, False])
    expected = pa.ListArray.from_arrays(pa.array([0, 2, 2, 4], pa.int32()), items, mask=pa.array(null))
    assert arrow.lists([0, 2, 2, 4], items, null=null).equals(expected)
    matrix = np.arange(6, dtype=np.float32).reshape(3, 2)
    expected = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), 2, mask=pa.array(null))
    assert arrow.vectors(matrix, null=null).equals(expected)


def test_to_numpy_reads_offsets_and_nulls():
    array = pa.array([1.5, None, 3.0, 4.0, None], pa.float32()).slice(1, 4)
    out = arrow.to_numpy(array, np.float64)
    assert np.isnan(out[0]) and np.isnan(out[3]) and list(out[1:3]) == [3.0, 4.0]
    ints = pa.array([5, None, 7], pa.int32())
    assert arrow.to_numpy(ints, np.int64, fill=-1).tolist() == [5, -1, 7]
    assert arrow.to_numpy(pa.chunked_array([ints, ints]), np.int64).tolist() == [5, 0, 7, 5, 0, 7]
    assert arrow.to_numpy(pa.array([True, False, True]), bool).tolist() == [True, False, True]
    assert arrow.to_numpy(pa.array([], pa.int32()), np.int64).tolist() == []


def test_to_matrix_reads_a_slice_and_zeroes_null_rows():
    rows = np.arange(10, dtype=np.float32).reshape(5, 2)
    array = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), 2,
                                              mask=pa.array([False, False, True, False, False])).slice(1, 3)
    matrix, valid = arrow.to_matrix(array)
    assert matrix.dtype == np.float32 and matrix.tolist() == [[2.0, 3.0], [0.0, 0.0], [6.0, 7.0]]
    assert valid.tolist() == [True, False, True]
    with pytest.raises(ValueError, match="fixed-size list"):
        arrow.to_matrix(pa.array([[1.0]], pa.list_(pa.float32())))


def test_matrix_view_reads_the_buffer_without_a_copy():
    rows = np.arange(10, dtype=np.float32).reshape(5, 2)
    array = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1)), 2,
                                              mask=pa.array([False, False, True, False, False])).slice(1, 3)
    view, valid = arrow.matrix_view(array)
    assert not view.flags.writeable and view.dtype == np.float32  # the Arrow buffer itself
    assert view[[0, 2]].tolist() == [[2.0, 3.0], [6.0, 7.0]] and valid.tolist() == [True, False, True]
    doubles = pa.FixedSizeListArray.from_arrays(pa.array(rows.reshape(-1).astype(np.float64)), 2)
    copied, _ = arrow.matrix_view(doubles)  # another type: converted, as to_matrix does
    assert copied.dtype == np.float32 and copied.tolist() == rows.tolist()
    with pytest.raises(ValueError, match="fixed-size list"):
        arrow.matrix_view(pa.array([[1.0]], pa.list_(pa.float32())))


def test_take_strings_equals_take():
    words = pa.array(["zero", None, "two", "", "quatre", "fünf"], pa.string())
    for array in (words, words.slice(2)):
        idx = np.array([len(array) - 1, 0, 0, 1] if len(array) > 1 else [0])
        assert arrow.take_strings(array, idx).equals(array.take(pa.array(idx)))
    assert arrow.take_strings(words, np.zeros(0, np.int64)).equals(pa.array([], pa.string()))
    large = pa.array(["a", "bc"], pa.large_string())  # other string types: pyarrow's take
    assert arrow.take_strings(large, np.array([1])).to_pylist() == ["bc"]


def test_dictionary_reads_as_the_names_in_duckdb():
    import duckdb

    names = arrow.strings(["alpha", "beta", "gamma"])
    codes = arrow.dictionary(np.array([2, 0, 0, 1]), names)
    assert codes.to_pylist() == ["gamma", "alpha", "alpha", "beta"]
    con = duckdb.connect()
    con.register("t", pa.table({"s": codes}))
    assert con.execute("select s, typeof(s) from t").fetchall() == [
        ("gamma", "VARCHAR"), ("alpha", "VARCHAR"), ("alpha", "VARCHAR"), ("beta", "VARCHAR")]
