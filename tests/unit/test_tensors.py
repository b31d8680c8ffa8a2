"""python_udfs/tensors.py maps what safetensors loads."""

from __future__ import annotations

import numpy as np
import pytest


def test_mapped_tensors_equal_safetensors(tmp_path):
    from safetensors.numpy import load_file, save_file

    from python_udfs.tensors import mapped_tensors

    tensors = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "b": np.array([1, -2], np.int64),
               "h": np.ones((2, 2), np.float16)}
    save_file(tensors, str(tmp_path / "t.safetensors"))
    mapped, loaded = mapped_tensors(tmp_path / "t.safetensors"), load_file(str(tmp_path / "t.safetensors"))
    assert set(mapped) == set(loaded)
    for name, value in loaded.items():
        assert mapped[name].dtype == value.dtype and np.array_equal(mapped[name], value)
        assert not mapped[name].flags.writeable
    (tmp_path / "bad.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(ValueError, match="not a safetensors file"):
        mapped_tensors(tmp_path / "bad.safetensors")
