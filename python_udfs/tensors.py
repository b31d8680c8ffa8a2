"""Tensors of a ``.safetensors`` file as read-only numpy views of the mapped file.

safetensors' own numpy loader copies every tensor into memory (MiniLM: 90 MB, ~0.1 s of each
cold `dbrouter route`); the format is an 8-byte header length, a JSON header naming each tensor's
dtype, shape and byte range, then the raw little-endian data, so a memory map gives the same
arrays without reading what a question does not touch.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1",
           "U8": "u1", "BOOL": "?"}


def mapped_tensors(path: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of the file, as a read-only array backed by a memory map.

    Args:
        path: the ``.safetensors`` file.

    Returns:
        Tensor name -> array of the stored dtype and shape.

    Raises:
        ValueError: the file is not a safetensors file, or holds a dtype numpy has no type for (BF16).
    """
    path = Path(path)
    data = np.memmap(path, dtype=np.uint8, mode="r")
    if len(data) < 8:
        raise ValueError(f"{path} is not a safetensors file (too short)")
    size = int(np.frombuffer(data[:8], "<u8")[0])
    try:
        header = json.loads(bytes(data[8:8 + size]))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path} is not a safetensors file: {exc}") from exc
    out = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(spec["dtype"])
        if dtype is None:
            raise ValueError(f"{path}: tensor {name} has dtype {spec['dtype']}, which numpy cannot map")
        begin, end = spec["data_offsets"]
        out[name] = data[8 + size + begin:8 + size + end].view(dtype).reshape(spec["shape"])
    return out
