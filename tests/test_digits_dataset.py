"""The built-in digits and the IDX reader."""

from __future__ import annotations

import gzip
import struct

import numpy as np
import pandas as pd
import pytest

from sigmabnn.datasets import DIGITS_SPLIT, idx_frame, load_digits, load_idx
from sigmabnn.errors import DataError


def test_digits_match_the_shared_copy_and_the_split_is_stratified(shared_data):
    d = load_digits()
    assert d.shape == (1797, 66)
    shared = pd.read_csv(shared_data / "digits" / "digits.csv.gz")
    pd.testing.assert_frame_equal(d.drop(columns="split"), shared)
    counts = d.groupby(["digit", "split"]).size().unstack()
    for name, fraction in DIGITS_SPLIT.items():
        share = counts[name] / counts.sum(axis=1)
        assert np.all(np.abs(share - fraction) < 0.02), (name, share)
    assert load_digits()["split"].equals(d["split"])  # fixed


def _write_idx(path, array: np.ndarray, code: int, compress: bool = False) -> None:
    header = bytes([0, 0, code, array.ndim]) + struct.pack(">" + "I" * array.ndim, *array.shape)
    data = header + array.astype(array.dtype.newbyteorder(">")).tobytes()
    (gzip.open if compress else open)(path, "wb").write(data)


@pytest.mark.parametrize("compress", [False, True])
def test_load_idx_reads_what_was_written(tmp_path, compress):
    images = np.arange(3 * 4 * 5, dtype=np.uint8).reshape(3, 4, 5)
    labels = np.array([7, 0, 9], dtype=np.uint8)
    suffix = ".gz" if compress else ""
    _write_idx(tmp_path / f"img{suffix}", images, 0x08, compress)
    _write_idx(tmp_path / f"lab{suffix}", labels, 0x08, compress)
    np.testing.assert_array_equal(load_idx(tmp_path / f"img{suffix}"), images)
    floats = np.linspace(-1, 1, 6).reshape(2, 3)
    _write_idx(tmp_path / "f.idx", floats, 0x0E)
    np.testing.assert_array_equal(load_idx(tmp_path / "f.idx"), floats)
    frame = idx_frame(tmp_path / f"img{suffix}", tmp_path / f"lab{suffix}")
    assert frame.shape == (3, 21) and frame["digit"].tolist() == [7, 0, 9]
    assert frame["pixel_6"].tolist() == images[:, 1, 1].tolist()


def test_load_idx_refuses_bad_files(tmp_path):
    (tmp_path / "bad").write_bytes(b"\x01\x02\x08\x01\x00\x00\x00\x02ab")
    with pytest.raises(DataError, match="bad magic"):
        load_idx(tmp_path / "bad")
    _write_idx(tmp_path / "short", np.zeros(4, np.uint8), 0x08)
    (tmp_path / "short").write_bytes((tmp_path / "short").read_bytes()[:-1])
    with pytest.raises(DataError, match="bytes"):
        load_idx(tmp_path / "short")
