"""A reader for the IDX files MNIST is distributed in (LeCun, Cortes & Burges, "The MNIST database").

An IDX file is a big-endian header then the array, row-major:

- 4 bytes: ``0x00 0x00``, a type code (``0x08`` uint8, ``0x09`` int8, ``0x0B`` int16,
  ``0x0C`` int32, ``0x0D`` float32, ``0x0E`` float64) and the number of dimensions ``k``;
- ``k`` big-endian uint32 sizes;
- the values, big-endian, ``prod(sizes)`` of them.

MNIST's ``train-images-idx3-ubyte`` is ``[60000, 28, 28]`` uint8, its labels ``[60000]`` uint8.
Files ending in ``.gz`` are decompressed.
"""

from __future__ import annotations

import gzip
import os
from pathlib import Path

import numpy as np
import pandas as pd

from sigmabnn.errors import DataError

__all__ = ["IDX_TYPES", "idx_frame", "load_idx"]

IDX_TYPES: dict[int, str] = {0x08: "u1", 0x09: "i1", 0x0B: ">i2", 0x0C: ">i4", 0x0D: ">f4", 0x0E: ">f8"}
"""IDX type code -> NumPy dtype (big-endian)."""

#: Largest IDX file read (bytes, decompressed): 4 GiB.
MAX_BYTES = 4 << 30


def load_idx(path: str | os.PathLike[str]) -> np.ndarray:
    """The array of an IDX file (``.gz`` or not), in native byte order and its own dtype.

    Raises:
        DataError: a missing file, a bad magic number or type code, or a size that does not match
            the header (one line).
    """
    path = Path(path)
    try:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except (OSError, EOFError) as err:
        raise DataError(f"cannot read IDX file {path}: {err}") from None
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise DataError(f"{path} is not an IDX file (bad magic number)")
    code, ndim = data[2], data[3]
    if code not in IDX_TYPES:
        raise DataError(f"{path}: unknown IDX type code 0x{code:02X}")
    header = 4 + 4 * ndim
    if len(data) < header:
        raise DataError(f"{path}: truncated IDX header")
    shape = tuple(int(v) for v in np.frombuffer(data, ">u4", count=ndim, offset=4))
    dtype = np.dtype(IDX_TYPES[code])
    expected = header + int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    if len(data) != expected:
        raise DataError(f"{path}: {len(data)} bytes, the header {list(shape)} of {dtype} says {expected}")
    values = np.frombuffer(data, dtype, offset=header).reshape(shape)
    return values.astype(dtype.newbyteorder("="))


def idx_frame(images: str | os.PathLike[str], labels: str | os.PathLike[str], target: str = "digit") -> pd.DataFrame:
    """A table of IDX images ``[n, h, w]`` and labels ``[n]``: columns ``pixel_0`` .. ``pixel_{hw-1}``
    (row by row, as in the built-in digits) and ``target``."""
    x, y = load_idx(images), load_idx(labels)
    if x.ndim < 2 or y.ndim != 1 or x.shape[0] != y.shape[0]:
        raise DataError(f"images {list(x.shape)} and labels {list(y.shape)} do not match")
    flat = x.reshape(x.shape[0], -1)
    frame = pd.DataFrame(flat, columns=[f"pixel_{i}" for i in range(flat.shape[1])])
    frame[target] = y.astype(np.int64)
    return frame
