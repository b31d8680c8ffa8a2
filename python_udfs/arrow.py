"""Arrow arrays to and from numpy without pyarrow's pandas check.

pyarrow imports pandas the first time a process calls ``pa.array``, ``pa.scalar`` or
``Array.to_numpy`` (to ask whether a value is a pandas object): about 0.5 s of CPU that a
one-question `dbrouter route` would spend on a library it never uses (docs/decisions/adr-0020-fast-everywhere-issue-36-round-1-2026-11-27.md).
The UDFs build and read their arrays through these helpers instead, from and into raw buffers;
``tests/unit/test_arrow.py`` checks them against pyarrow's own constructors and that routing one
question imports no pandas.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa

_NUMPY = {pa.int8(): np.int8, pa.int32(): np.int32, pa.int64(): np.int64,
          pa.float32(): np.float32, pa.float64(): np.float64}


def _validity(null: np.ndarray | None) -> pa.Buffer | None:
    """The validity bitmap of a null mask (None when nothing is null)."""
    if null is None or not null.any():
        return None
    return pa.py_buffer(np.packbits(~np.asarray(null, dtype=bool), bitorder="little"))


def _bits(buffer: pa.Buffer, offset: int, n: int) -> np.ndarray:
    """Bits ``offset .. offset + n`` of a bitmap buffer (validity or boolean data), as bools."""
    return np.unpackbits(np.frombuffer(buffer, np.uint8), bitorder="little")[offset:offset + n].astype(bool)


def numeric(values: np.ndarray | Sequence[float], type_: pa.DataType, null: np.ndarray | None = None) -> pa.Array:
    """A primitive array of ``type_`` (int8/32/64, float32/64) holding ``values``.

    Args:
        values: the values (converted to the type's numpy dtype).
        type_: the Arrow type.
        null: optional boolean mask, True where the value is NULL.

    Returns:
        The array, equal to ``pa.array(values, type_, mask=null)``.
    """
    data = np.ascontiguousarray(values, dtype=_NUMPY[type_])
    return pa.Array.from_buffers(type_, len(data), [_validity(null), pa.py_buffer(data)])


def booleans(values: np.ndarray | Sequence[bool]) -> pa.Array:
    """A boolean array without NULLs.

    Args:
        values: the truth values.

    Returns:
        The array, equal to ``pa.array(values, pa.bool_())``.
    """
    data = np.asarray(values, dtype=bool)
    return pa.Array.from_buffers(pa.bool_(), len(data), [None, pa.py_buffer(np.packbits(data, bitorder="little"))])


def strings(values: Sequence[str | None]) -> pa.Array:
    """A string array (NULL for None).

    Args:
        values: the strings.

    Returns:
        The array, equal to ``pa.array(values, pa.string())``.
    """
    encoded = [b"" if v is None else v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    type_, kind = (pa.string(), np.int32) if offsets[-1] < 2**31 else (pa.large_string(), np.int64)
    null = np.fromiter((v is None for v in values), bool, len(encoded))
    array = pa.Array.from_buffers(type_, len(encoded), [_validity(null), pa.py_buffer(offsets.astype(kind)),
                                                        pa.py_buffer(b"".join(encoded))])
    return array if type_ == pa.string() else array.cast(pa.string())


def lists(offsets: np.ndarray | Sequence[int], values: pa.Array, null: np.ndarray | None = None) -> pa.Array:
    """A list array: list ``i`` holds ``values[offsets[i]:offsets[i + 1]]``.

    Args:
        offsets: ``n + 1`` int32 offsets into ``values``.
        values: the flattened items.
        null: optional mask, True where the list is NULL.

    Returns:
        The array, equal to ``pa.ListArray.from_arrays(offsets, values, mask=null)``.
    """
    data = np.ascontiguousarray(offsets, dtype=np.int32)
    return pa.Array.from_buffers(pa.list_(values.type), len(data) - 1, [_validity(null), pa.py_buffer(data)],
                                 children=[values])


def vectors(matrix: np.ndarray, null: np.ndarray | None = None) -> pa.Array:
    """A fixed-size list array of float32, one row of ``matrix`` each.

    Args:
        matrix: (n, dim) values.
        null: optional mask, True where the vector is NULL.

    Returns:
        The array, equal to ``pa.FixedSizeListArray.from_arrays(flat, dim, mask=null)``.
    """
    n, dim = matrix.shape
    flat = numeric(matrix.reshape(-1), pa.float32())
    return pa.Array.from_buffers(pa.list_(pa.float32(), dim), n, [_validity(null)], children=[flat])


def to_numpy(array: pa.Array | pa.ChunkedArray, dtype: type = np.float64, fill: float | None = None) -> np.ndarray:
    """The values of a primitive (number or boolean) array as numpy.

    Args:
        array: the Arrow array (chunks are combined).
        dtype: the numpy dtype of the result.
        fill: what a NULL reads as (default NaN for a float dtype, 0 otherwise).

    Returns:
        A new (n,) array.
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, offset = len(array), array.offset
    validity, data = array.buffers()[:2]
    if not n:
        return np.zeros(0, dtype)
    if pa.types.is_boolean(array.type):
        out = _bits(data, offset, n).astype(dtype)
    else:
        out = np.frombuffer(data, _NUMPY[array.type])[offset:offset + n].astype(dtype)
    if validity is not None and array.null_count:
        out[~_bits(validity, offset, n)] = fill if fill is not None else (np.nan if np.issubdtype(dtype, np.floating) else 0)
    return out


def null_mask(array: pa.Array) -> np.ndarray:
    """Where ``array`` is NULL, as bools.

    Args:
        array: any Arrow array (a slice reads only its rows).

    Returns:
        A new (n,) bool array, True where the value is NULL.
    """
    validity = array.buffers()[0]
    if validity is None or not array.null_count:
        return np.zeros(len(array), bool)
    return ~_bits(validity, array.offset, len(array))


def to_matrix(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a fixed-size list array of numbers as one float32 matrix.

    Args:
        array: a fixed-size list array (a slice reads only its rows).

    Returns:
        ``(matrix, valid)``: (n, size) float32 (zeros in a NULL row) and (n,) bool, False where the
        row is NULL.

    Raises:
        ValueError: the array is not a fixed-size list.
    """
    if not pa.types.is_fixed_size_list(array.type):
        raise ValueError(f"to_matrix: expected a fixed-size list array, got {array.type}")
    n, size, offset = len(array), array.type.list_size, array.offset
    flat = to_numpy(array.values.slice(offset * size, n * size), np.float32, fill=0.0)
    validity = array.buffers()[0]
    valid = _bits(validity, offset, n) if validity is not None and array.null_count else np.ones(n, bool)
    matrix = flat.reshape(n, size)
    matrix[~valid] = 0.0
    return matrix, valid


def matrix_view(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """The rows of a fixed-size list array of float32 as a read-only matrix over its own buffer.

    Like :func:`to_matrix`, without copying the values (a NULL row keeps whatever it holds: take
    ``valid`` into account). Values of another type, or with NULLs inside, are copied by
    :func:`to_matrix`.

    Args:
        array: a fixed-size list array (a slice reads only its rows).

    Returns:
        ``(matrix, valid)``: (n, size) float32 and (n,) bool, False where the row is NULL.

    Raises:
        ValueError: the array is not a fixed-size list.
    """
    if not pa.types.is_fixed_size_list(array.type):
        raise ValueError(f"matrix_view: expected a fixed-size list array, got {array.type}")
    child = array.values
    if child.type != pa.float32() or child.null_count:
        return to_matrix(array)
    n, size = len(array), array.type.list_size
    start = (child.offset + array.offset * size)
    flat = np.frombuffer(child.buffers()[1], np.float32)[start:start + n * size] if n else np.zeros(0, np.float32)
    matrix = flat.reshape(n, size)
    matrix.flags.writeable = False  # the Arrow array's own memory: never written through this
    return matrix, ~null_mask(array)


def dictionary(indices: np.ndarray, names: pa.Array) -> pa.DictionaryArray:
    """A dictionary-encoded array: row ``i`` reads ``names[indices[i]]`` (no NULLs).

    DuckDB reads it as the dictionary's type (a VARCHAR column), without the strings gathered per
    row; built from buffers, since ``DictionaryArray.from_arrays`` may validate through
    ``pyarrow.compute``.

    Args:
        indices: positions into ``names`` (int, in range).
        names: the dictionary.

    Returns:
        A dictionary array with int32 indices.
    """
    idx = np.ascontiguousarray(indices, dtype=np.int32)
    return pa.DictionaryArray.from_buffers(pa.dictionary(pa.int32(), names.type), len(idx),
                                           [None, pa.py_buffer(idx)], names)


def take_strings(array: pa.Array, indices: np.ndarray) -> pa.Array:
    """``array.take(indices)`` for a string array, gathered with numpy.

    ``Array.take`` imports ``pyarrow.compute`` (~0.1 s of a cold start, its 286 functions wrapped).

    Args:
        array: a string array (another type is taken by pyarrow).
        indices: positions to read, in the order wanted (int, in range).

    Returns:
        The gathered string array.
    """
    idx = np.asarray(indices, dtype=np.int64)
    if not pa.types.is_string(array.type):  # large or view strings: pyarrow's own take
        return array.take(numeric(idx, pa.int64()))
    validity, offsets_buf, data_buf = array.buffers()
    base = array.offset
    # the offsets of the rows asked only (the labels of a 630,454-row index: not all converted a call)
    offsets = np.frombuffer(offsets_buf, np.int32)[base:base + len(array) + 1] if len(array) else np.zeros(1, np.int32)
    starts = offsets[idx].astype(np.int64)
    lengths = offsets[idx + 1].astype(np.int64) - starts
    new_offsets = np.zeros(len(idx) + 1, np.int64)
    np.cumsum(lengths, out=new_offsets[1:])
    if new_offsets[-1] >= 2**31:
        raise ValueError("take_strings: the result holds more than 2 GiB of text")
    data = np.frombuffer(data_buf, np.uint8) if data_buf is not None and new_offsets[-1] else np.zeros(0, np.uint8)
    # byte j of output string i is input byte starts[i] + j
    positions = np.repeat(starts - new_offsets[:-1], lengths) + np.arange(new_offsets[-1])
    null = ~_bits(validity, base, len(array))[idx] if validity is not None and array.null_count else None
    return pa.Array.from_buffers(pa.string(), len(idx), [_validity(null), pa.py_buffer(new_offsets.astype(np.int32)),
                                                         pa.py_buffer(np.ascontiguousarray(data[positions]))])
