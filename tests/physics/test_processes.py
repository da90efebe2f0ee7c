"""Processes: parsing, canonical order, thesis features, training tables and failed-point counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn.datasets import load_ewino
from sigmabnn.errors import DataError, InputError
from sigmabnn.physics.processes import (
    Process,
    find_target_column,
    parse_process,
    process_features,
    process_table,
    processes_in,
)


@pytest.fixture(scope="module")
def ewino() -> pd.DataFrame:
    return load_ewino()


def test_thesis_features_for_chi1_chi1():
    assert process_features("1000022,1000022") == [
        "m_1000022",
        "N1000022_1",
        "N1000022_2",
        "N1000022_3",
        "N1000022_4",
    ]


def test_two_different_neutralinos_give_both_blocks_first_particle_first():
    assert process_features("1000023,1000022") == [
        "m_1000022",
        "N1000022_1",
        "N1000022_2",
        "N1000022_3",
        "N1000022_4",
        "m_1000023",
        "N1000023_1",
        "N1000023_2",
        "N1000023_3",
        "N1000023_4",
    ]


def test_chargino_process_features():
    chargino = ["m_1000024", "U1000024_1", "U1000024_2", "V1000024_1", "V1000024_2"]
    assert process_features("1000022,1000024")[5:] == chargino
    assert process_features("1000022,-1000024")[5:] == chargino  # antiparticle: same mass and mixing row
    assert process_features("1000024,-1000037") == chargino + [
        "m_1000037",
        "U1000037_1",
        "U1000037_2",
        "V1000037_1",
        "V1000037_2",
    ]
    assert process_features("1000024,-1000024") == chargino  # same particle counted once


@pytest.mark.parametrize(
    "text",
    [
        "1000022,1000024",
        "1000024,1000022",
        " 1000024  1000022 ",
        "n1,c1+",
        "C1+ N1",
        "nlo_1000024_1000022",
        (1000024, 1000022),
    ],
)
def test_particle_order_and_spelling_do_not_matter(text):
    p = parse_process(text)
    assert p == Process(1000022, 1000024)
    assert p.target == "nlo_1000022_1000024"
    assert str(p) == "1000022,1000024"


def test_majorana_neutralino_sign_is_dropped_but_chargino_sign_kept():
    assert parse_process("-1000022,-1000023") == Process(1000022, 1000023)
    assert parse_process("1000022,-1000024") != parse_process("1000022,1000024")
    assert parse_process("1000022,-1000024").conjugate() == parse_process("1000022,1000024")
    assert parse_process("1000023,1000023").conjugate() == parse_process("1000023,1000023")


def test_every_dataset_column_is_in_canonical_order(ewino):
    columns = [c for c in ewino.columns if c.startswith("nlo_")]
    assert len(columns) == 22
    for col in columns:
        assert parse_process(col).target == col
    assert [p.target for p in processes_in(ewino.columns)] == columns


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("1000022,1000021", "unsupported particle id 1000021"),
        ("1000022", "two particle ids"),
        ("1000022,1000022,1000022", "two particle ids"),
        ("1000022,abc", "not a particle id: 'abc'"),
        ("1000024,1000024", "total charge +2"),
        ("-1000024,-1000037", "total charge -2"),
        ("", "two particle ids"),
    ],
)
def test_bad_processes(text, fragment):
    with pytest.raises(InputError, match=fragment.replace("+", r"\+")):
        parse_process(text)


def test_unknown_process_in_table_lists_available(ewino):
    with pytest.raises(InputError, match="not in the table") as err:
        parse_process("1000022,1000035", available=ewino.columns)
    assert "1000022,1000022" in str(err.value)
    with pytest.raises(InputError, match="charge conjugate 1000025,1000024"):
        parse_process("1000025,-1000024", available=ewino.columns)


def test_reverse_order_column_is_found():
    cols = ["nlo_1000024_1000022", "m_1000022"]
    assert find_target_column(cols, parse_process("1000022,1000024")) == "nlo_1000024_1000022"


@pytest.mark.parametrize("process", ["1000022,1000022", "1000022,-1000024", "1000024,-1000037", "1000025,1000037"])
def test_failed_points_counted_equal_nan_count(ewino, process):
    p = parse_process(process)
    table, n_failed = process_table(ewino, p)
    n_nan = int(ewino[p.target].isna().sum())
    assert n_failed == n_nan
    assert len(table) == len(ewino) - n_nan
    assert list(table.columns) == process_features(p) + [p.target, "split"]
    assert table[p.target].notna().all() and (table[p.target] > 0).all()
    kept = ewino.loc[ewino[p.target].notna(), process_features(p) + [p.target]].reset_index(drop=True)
    pd.testing.assert_frame_equal(table.drop(columns="split"), kept)


def test_thesis_process_table_size(ewino):
    table, n_failed = process_table(ewino, "1000022,1000022")
    assert (len(table), n_failed) == (10502, 1598)
    assert table.shape[1] == 7


def test_log_target_drops_non_positive_targets():
    df = pd.DataFrame(
        {
            "m_1000022": [100.0, 200.0, 300.0, 400.0],
            "N1000022_1": [0.1] * 4,
            "N1000022_2": [0.2] * 4,
            "N1000022_3": [0.3] * 4,
            "N1000022_4": [0.4] * 4,
            "nlo_1000022_1000022": [1.0, np.nan, 0.0, -2.0],
        }
    )
    table, n_failed = process_table(df, "1000022,1000022", log_target=True)
    assert (len(table), n_failed) == (1, 3)
    table, n_failed = process_table(df, "1000022,1000022", log_target=False)
    assert (len(table), n_failed) == (3, 1)
    assert "split" not in table.columns
    with pytest.raises(InputError, match="lacks feature column"):
        process_table(df.drop(columns="N1000022_4"), "1000022,1000022")
    with pytest.raises(DataError, match="no usable rows"):
        process_table(df.iloc[1:2], "1000022,1000022")
    bad = df.copy()
    bad.loc[0, "N1000022_2"] = np.nan
    with pytest.raises(DataError, match="N1000022_2"):
        process_table(bad, "1000022,1000022")
