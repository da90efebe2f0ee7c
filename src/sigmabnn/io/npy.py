"""The header of a ``.npy`` member, read safely: the one parser the model file and the checkpoint share."""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from sigmabnn.errors import ModelFileError

__all__ = ["MAX_NPY_HEADER", "read_npy_header"]

MAX_NPY_HEADER = 10_000
"""Longest ``.npy`` header accepted (bytes); NumPy writes well under 1,000 for the arrays saved here."""


def _fail(message: str) -> ModelFileError:
    return ModelFileError(" ".join(str(message).split()))


def read_npy_header(f: Any, name: str) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """Shape, Fortran order, dtype and data offset of the ``.npy`` stream ``f`` (at its start).

    Reads only the header, at most :data:`MAX_NPY_HEADER` bytes of it, and parses it with NumPy's
    literal-only reader: nothing is allocated from untrusted sizes and nothing is unpickled.
    ``name`` names the array in error messages (:class:`~sigmabnn.errors.ModelFileError`).
    """
    prefix = f.read(8)
    if len(prefix) < 8 or prefix[:6] != b"\x93NUMPY":
        raise _fail(f"array {name!r} is not a .npy member")
    major, minor = prefix[6], prefix[7]
    if (major, minor) == (1, 0):
        hlen_bytes = f.read(2)
        hlen = int.from_bytes(hlen_bytes, "little") if len(hlen_bytes) == 2 else -1
        pre = 10
    elif (major, minor) in ((2, 0), (3, 0)):
        hlen_bytes = f.read(4)
        hlen = int.from_bytes(hlen_bytes, "little") if len(hlen_bytes) == 4 else -1
        pre = 12
    else:
        raise _fail(f"array {name!r}: unsupported .npy version {major}.{minor}")
    if not 0 < hlen <= MAX_NPY_HEADER:
        raise _fail(f"array {name!r}: bad .npy header length")
    text = f.read(hlen)
    if len(text) != hlen:
        raise _fail(f"array {name!r}: truncated .npy header")
    # Re-parse with NumPy's own (literal-only, no code execution) header reader.
    buf = io.BytesIO(prefix + hlen_bytes + text)
    buf.seek(8)
    try:
        if (major, minor) == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(buf, max_header_size=MAX_NPY_HEADER)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(buf, max_header_size=MAX_NPY_HEADER)
    except (ValueError, SyntaxError, TypeError) as err:
        raise _fail(f"array {name!r}: malformed .npy header ({err})") from None
    return tuple(shape), bool(fortran), np.dtype(dtype), pre + hlen
