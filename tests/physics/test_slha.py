"""SLHA input (feature rows) and XSECTION output, with synthetic spectrum files."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pyslha
import pytest

from sigmabnn.datasets import load_ewino
from sigmabnn.errors import InputError
from sigmabnn.physics.processes import Process, process_features
from sigmabnn.physics.slha import (
    SOURCE_COLUMN,
    XSectionResult,
    dataset_columns,
    read_points,
    read_slha,
    read_xsections,
    slha_entry,
    spectrum_text,
    write_spectrum,
    write_xsections,
)


@pytest.fixture(scope="module")
def rows() -> pd.DataFrame:
    return load_ewino().iloc[:5].reset_index(drop=True)


def test_dataset_columns_match_the_data(rows):
    cols = dataset_columns()
    assert len(cols) == 57
    assert sum(c.startswith("m_") for c in cols) == 33
    spectrum = [c for c in rows.columns if c not in ("point_id", "split") and not c.startswith("nlo_")]
    assert cols == spectrum


@pytest.mark.parametrize(
    ("column", "entry"),
    [
        ("m_1000022", ("MASS", 1000022)),
        ("N1000022_1", ("NMIX", (1, 1))),
        ("N1000035_3", ("NMIX", (4, 3))),
        ("N1000025_4", ("NMIX", (3, 4))),
        ("U1000037_1", ("UMIX", (2, 1))),
        ("V1000024_2", ("VMIX", (1, 2))),
    ],
)
def test_slha_entry(column, entry):
    assert slha_entry(column) == entry


@pytest.mark.parametrize("column", ["N1000024_1", "U1000022_1", "N1000022_5", "V1000024_3", "nlo_1000022_1000022", "x"])
def test_unreadable_columns(column):
    with pytest.raises(InputError, match="cannot be read from an SLHA file"):
        slha_entry(column)


def test_round_trip_of_dataset_rows(tmp_path, rows):
    cols = dataset_columns()
    for i in range(len(rows)):
        write_spectrum(tmp_path / f"point{i}.slha", rows.iloc[i].to_dict())
    points = read_points(tmp_path)
    assert len(points) == len(rows)
    assert list(points.columns) == [SOURCE_COLUMN] + cols
    assert points[SOURCE_COLUMN].tolist() == [str(tmp_path / f"point{i}.slha") for i in range(len(rows))]
    np.testing.assert_array_equal(points[cols].to_numpy(), rows[cols].to_numpy())
    # negative neutralino masses survive with their sign
    assert (rows.m_1000023 < 0).any()
    np.testing.assert_array_equal(points.m_1000023.to_numpy(), rows.m_1000023.to_numpy())


def test_read_only_what_the_processes_need(tmp_path, rows):
    row = rows.iloc[0]
    needed = process_features("1000022,-1000024")
    path = write_spectrum(tmp_path / "p.slha", {c: row[c] for c in needed})  # a file with only those entries
    points = read_points([path], processes=["1000022,-1000024"])
    assert list(points.columns) == [SOURCE_COLUMN] + needed
    np.testing.assert_array_equal(points[needed].to_numpy()[0], row[needed].to_numpy(dtype=float))
    extra = read_points(path, processes=["1000022,1000022"], columns=["m_1000024"])
    assert list(extra.columns) == [SOURCE_COLUMN] + process_features("1000022,1000022") + ["m_1000024"]
    with pytest.raises(InputError, match="BLOCK MASS has no entry 1000023 \\(needed for m_1000023\\)"):
        read_points([path], processes=["1000023,1000023"])
    without_n2 = dict(row[process_features("1000022,1000023")])
    del without_n2["N1000023_1"]
    write_spectrum(path, without_n2)
    with pytest.raises(InputError, match="BLOCK NMIX has no entry 2 1 \\(needed for N1000023_1\\)"):
        read_points([path], processes=["1000022,1000023"])


def _spectrum_without(row: pd.Series, prefix: str) -> dict[str, float]:
    return {c: row[c] for c in dataset_columns() if not c.startswith(prefix)}


@pytest.mark.parametrize(
    ("drop", "fragment"),
    [("U", "no BLOCK UMIX (needed for U1000024_1)"), ("V", "no BLOCK VMIX (needed for V1000024_1)")],
)
def test_missing_block_is_named_with_file(tmp_path, rows, drop, fragment):
    path = write_spectrum(tmp_path / "p.slha", _spectrum_without(rows.iloc[0], drop))
    with pytest.raises(InputError) as err:
        read_points(path, processes=["1000022,1000024"])
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_missing_mass_entry_and_missing_mass_block(tmp_path, rows):
    row = rows.iloc[0].to_dict()
    del row["m_1000024"]
    path = write_spectrum(tmp_path / "p.slha", row)
    with pytest.raises(InputError, match="BLOCK MASS has no entry 1000024 \\(needed for m_1000024\\)"):
        read_slha(path, process_features("1000022,1000024"))
    nomass = write_spectrum(tmp_path / "q.slha", {c: rows.iloc[0][c] for c in dataset_columns() if c[0] in "NUV"})
    with pytest.raises(InputError, match="no BLOCK MASS"):
        read_slha(nomass, ["m_1000022"])


def test_bad_inputs(tmp_path, rows):
    with pytest.raises(InputError, match="input not found"):
        read_points(tmp_path / "nope.slha")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no SLHA files"):
        read_points(tmp_path / "empty")
    bad = tmp_path / "bad.slha"
    bad.write_text("BLOCK MASS\n   1000022   not-a-number\n")
    with pytest.raises(InputError, match="not a finite number"):
        read_slha(bad, ["m_1000022"])
    cplx = tmp_path / "complex.slha"
    cplx.write_text(spectrum_text(rows.iloc[0].to_dict()) + "BLOCK IMNMIX\n   1  1   1.0E-01\n")
    with pytest.raises(InputError, match="IMNMIX"):
        read_slha(cplx, ["m_1000022"])


def test_tables_pass_through(tmp_path, rows):
    csv = tmp_path / "points.csv"
    rows.to_csv(csv, index=False)
    slha = write_spectrum(tmp_path / "extra.slha", rows.iloc[0].to_dict())
    points = read_points([csv, slha], processes=["1000022,1000022"])
    assert len(points) == len(rows) + 1
    assert set(rows.columns) <= set(points.columns)  # all table columns kept
    np.testing.assert_array_equal(points.m_1000022.to_numpy(), np.r_[rows.m_1000022, rows.m_1000022[0]])
    assert points[SOURCE_COLUMN].tolist() == [str(csv)] * len(rows) + [str(slha)]
    rows.drop(columns="N1000022_1").to_csv(csv, index=False)
    with pytest.raises(InputError, match="lacks column\\(s\\) N1000022_1"):
        read_points(csv, processes=["1000022,1000022"])


def test_write_and_read_xsections(tmp_path, rows):
    src = write_spectrum(tmp_path / "p.slha", rows.iloc[0].to_dict())
    original = src.read_text()
    chi11 = XSectionResult(1.352e-3, 1.1e-4, {0.68: (1.25e-3, 1.46e-3), 0.95: (1.14e-3, 1.58e-3)})
    out = write_xsections(
        src, {"1000022,1000022": chi11, Process(1000022, -1000024): 0.346}, tmp_path / "out.slha", sqrt_s=13000.0
    )
    assert src.read_text() == original  # the input is untouched
    text = out.read_text()
    assert text.startswith(original)
    assert "XSECTION  1.30000000E+04  2212 2212  2  1000022 1000022" in text
    assert "# sigmabnn std = 1.10000000E-04" in text
    assert "# sigmabnn interval 0.95 = 1.14000000E-03 1.58000000E-03" in text

    doc = pyslha.read(str(out))  # a standard reader sees one NLO value per process
    proc = doc.xsections[(2212, 2212, 1000022, 1000022)]
    (xs,) = proc.get_xsecs(sqrts=13000.0)
    assert (xs.value, xs.qcd_order, xs.code[0]) == (1.352e-3, 1, "sigmabnn")
    assert doc.xsections[(2212, 2212, -1000024, 1000022)].get_xsecs()[0].value == 0.346
    assert doc.blocks["NMIX"][1, 2] == rows.iloc[0].N1000022_2

    back = read_xsections(out)
    assert back[Process(1000022, 1000022)] == chi11
    assert back[Process(1000022, -1000024)] == XSectionResult(0.346)

    # writing again replaces sigmabnn's own block, keeps other blocks and other energies
    foreign = (
        "XSECTION  1.30000000E+04  2212 2212  2  1000022 1000022\n   0  1  0  1.0  1.0  0  9.9E-04  Prospino  2.1\n"
    )
    out.write_text(out.read_text() + foreign)
    write_xsections(out, {"1000022,1000022": XSectionResult(2.0e-3, None)}, sqrt_s=13000.0)
    write_xsections(out, {"1000022,1000022": 7.0e-3}, sqrt_s=14000.0)
    doc = pyslha.read(str(out))
    values = sorted((x.sqrts, x.value, x.code[0]) for x in doc.xsections[(2212, 2212, 1000022, 1000022)].xsecs)
    assert values == [(13000.0, 9.9e-4, "Prospino"), (13000.0, 2.0e-3, "sigmabnn"), (14000.0, 7.0e-3, "sigmabnn")]
    assert read_xsections(out, sqrt_s=13000.0)[Process(1000022, 1000022)] == XSectionResult(2.0e-3)
    assert read_xsections(out)[Process(1000022, -1000024)].value == 0.346


def test_write_xsections_is_atomic_and_checks_input(tmp_path, rows):
    src = write_spectrum(tmp_path / "p.slha", rows.iloc[0].to_dict())
    before = src.read_text()
    with pytest.raises(InputError, match="finite non-negative"):
        write_xsections(src, {"1000022,1000022": 1.0, "1000022,1000023": float("nan")}, sqrt_s=13000.0)
    with pytest.raises(InputError, match="sqrt_s"):
        write_xsections(src, {"1000022,1000022": 1.0}, sqrt_s=-1.0)
    with pytest.raises(InputError, match="unsupported particle"):
        write_xsections(src, {"1000022,1000021": 1.0}, sqrt_s=13000.0)
    with pytest.raises(InputError, match="directory does not exist"):
        write_xsections(src, {"1000022,1000022": 1.0}, tmp_path / "no" / "x.slha", sqrt_s=13000.0)
    assert src.read_text() == before
    assert sorted(os.listdir(tmp_path)) == ["p.slha"]  # no temporary files left behind
    write_xsections(src, {"1000022,1000022": 1.0}, sqrt_s=13000.0)  # in place
    assert read_xsections(src)[Process(1000022, 1000022)].value == 1.0
    assert sorted(os.listdir(tmp_path)) == ["p.slha"]
