"""The built-in electroweakino data set: shape, columns, split, facts, and agreement with the shared copy."""

from __future__ import annotations

import json
import time

import numpy as np
import pandas as pd
import pytest

from sigmabnn import datasets
from sigmabnn.datasets import (
    SPLIT_FRACTIONS,
    THESIS_FEATURES,
    THESIS_PROCESS,
    ewino_info,
    ewino_readme,
    ewino_table,
    load_ewino,
    processes,
)
from sigmabnn.physics.processes import process_features


@pytest.fixture(scope="module")
def df() -> pd.DataFrame:
    return load_ewino()


def test_shape_and_columns(df):
    assert df.shape == (12100, 81)
    nlo = [c for c in df.columns if c.startswith("nlo_")]
    assert len(nlo) == 22
    assert sum(c.startswith("m_") for c in df.columns) == 33
    assert df.point_id.tolist() == list(range(12100))
    numeric = df.drop(columns=["split"])
    assert all(np.issubdtype(t, np.number) for t in numeric.dtypes)
    # features complete; targets positive where present
    features = [c for c in df.columns if c not in nlo and c not in ("split", "point_id")]
    assert df[features].notna().all().all()
    targets = df[nlo].to_numpy()
    assert (targets[~np.isnan(targets)] > 0).all()


def test_split_proportions(df):
    counts = df.split.value_counts()
    assert set(counts.index) == set(SPLIT_FRACTIONS)
    for name, fraction in SPLIT_FRACTIONS.items():
        assert counts[name] == round(fraction * len(df))


def test_processes_match_columns(df):
    procs = processes()
    assert len(procs) == 22
    assert [p.target for p in procs] == [c for c in df.columns if c.startswith("nlo_")]


def test_thesis_facts(df):
    assert list(THESIS_FEATURES) == process_features(THESIS_PROCESS)
    target = df[THESIS_PROCESS.target]
    assert target.notna().sum() == 10502
    assert target.min() == pytest.approx(3.494e-9)
    assert target.max() == pytest.approx(84.89)
    assert np.log10(target.max() / target.min()) > 9.9  # about ten orders of magnitude
    assert (df.m_1000022 < 0).sum() == 2374  # signed neutralino masses
    assert (df[["m_1000024", "m_1000037"]] > 0).all().all()  # chargino masses positive
    for pdg in (1000022, 1000023, 1000025, 1000035):
        row = df[[f"N{pdg}_{j}" for j in range(1, 5)]].to_numpy()
        np.testing.assert_allclose((row**2).sum(axis=1), 1.0, atol=1e-4)  # unit rows, 5 significant digits


def test_table_of_thesis_process():
    table, n_failed = ewino_table()
    assert list(table.columns) == list(THESIS_FEATURES) + ["nlo_1000022_1000022", "split"]
    assert (len(table), n_failed) == (10502, 1598)


def test_info_and_readme(df):
    info = ewino_info()
    json.dumps(info)  # JSON-able
    assert info["n_points"] == len(df)
    assert info["n_processes"] == 22
    assert info["processes"][0] == "1000022,1000022"
    assert info["thesis"]["features"] == list(THESIS_FEATURES)
    assert info["thesis"]["valid_points_this_release"] == df[THESIS_PROCESS.target].notna().sum()
    assert info["split"] == SPLIT_FRACTIONS
    text = ewino_readme()
    assert "0.987-0.992" in text and "14,683" in text and "Unit and collider energy are not stated" in text


def test_load_returns_independent_copies_quickly():
    load_ewino()  # warm the cache
    start = time.perf_counter()
    a = load_ewino()
    b = load_ewino()
    assert time.perf_counter() - start < 1.0
    a.loc[0, "m_1000022"] = -1.0
    assert b.loc[0, "m_1000022"] != -1.0
    assert datasets.load_ewino().loc[0, "m_1000022"] != -1.0


def test_packaged_copy_equals_shared_data(shared_data, df):
    path = shared_data / "nlo_ewino" / "ewino_nlo.csv.gz"
    if not path.exists():
        pytest.skip(f"{path} not present")
    pd.testing.assert_frame_equal(df, pd.read_csv(path))
