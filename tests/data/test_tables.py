"""Reading tables and preparing arrays: formats, column rules, missing values, splits, one-line errors."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from sigmabnn.data.tables import MIN_TRAIN_ROWS, fingerprint, prepare, read_table
from sigmabnn.errors import DataError, InputError


def _frame(n: int = 50) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    return pd.DataFrame(
        {
            "m1": rng.uniform(100, 1000, n),
            "m2": rng.uniform(100, 1000, n),
            "label": ["x"] * n,
            "xsec": rng.uniform(0.1, 10.0, n),
        }
    )


def _one_line(err: pytest.ExceptionInfo) -> str:
    msg = str(err.value)
    assert "\n" not in msg and msg
    return msg


@pytest.mark.parametrize("name", ["t.csv", "t.csv.gz", "t.parquet", "t.tsv"])
def test_read_table_formats_roundtrip(tmp_path, name):
    df = _frame(20)
    path = tmp_path / name
    if name.endswith(".parquet"):
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False, sep="\t" if name.endswith(".tsv") else ",")
    got = read_table(path)
    pd.testing.assert_frame_equal(got, df, check_exact=False, rtol=1e-14)


def test_read_table_errors(tmp_path):
    with pytest.raises(InputError, match="not found") as err:
        read_table(tmp_path / "missing.csv")
    _one_line(err)
    with pytest.raises(InputError, match="directory"):
        read_table(tmp_path)
    (tmp_path / "t.xlsx").write_text("a,b\n1,2\n")
    with pytest.raises(InputError, match="unknown table format") as err:
        read_table(tmp_path / "t.xlsx")
    _one_line(err)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(DataError, match="empty") as err:
        read_table(tmp_path / "empty.csv")
    _one_line(err)
    (tmp_path / "header.csv").write_text("a,b\n")
    with pytest.raises(DataError, match="no rows"):
        read_table(tmp_path / "header.csv")
    (tmp_path / "bad.parquet").write_bytes(b"this is not parquet at all")
    with pytest.raises(DataError, match="cannot read") as err:
        read_table(tmp_path / "bad.parquet")
    _one_line(err)
    (tmp_path / "bad.csv.gz").write_bytes(b"not gzip")
    with pytest.raises(DataError):
        read_table(tmp_path / "bad.csv.gz")


def test_default_features_are_other_numeric_columns():
    df = _frame()
    df["split"] = ["train"] * 40 + ["val"] * 5 + ["test"] * 5
    df["err"] = 0.1
    p = prepare(df, "xsec", split_column="split", noise_column="err")
    assert p.feature_names == ("m1", "m2")
    assert p.skipped_columns == ("label",)
    assert p.train.x.shape == (40, 2) and p.val.n == 5 and p.test.n == 5
    np.testing.assert_array_equal(p.train.y, df["xsec"].to_numpy()[:40])
    np.testing.assert_array_equal(p.train.noise_std, np.full(40, 0.1))
    assert p.train.x.dtype == np.float64


def test_missing_values_counted_and_dropped(tmp_path):
    df = _frame(30)
    df.loc[3, "m1"] = np.nan
    df.loc[5, "xsec"] = np.inf
    df.loc[7, "m2"] = -np.inf
    df.loc[3, "m2"] = np.nan  # same row as m1: counted once in n_dropped
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    text = path.read_text().splitlines()
    text[10] = text[10].replace(text[10].split(",")[0], "", 1)  # an empty cell (row 9, m1)
    path.write_text("\n".join(text) + "\n")
    p = prepare(read_table(path), "xsec", ["m1", "m2"], split_fractions=(1.0, 0.0, 0.0))
    assert p.n_rows == 30
    assert p.n_dropped == 4
    assert p.dropped_by_column == {"m1": 2, "m2": 2, "xsec": 1}
    assert p.train.n == 26
    assert set(p.train.rows) == set(range(30)) - {3, 5, 7, 9}
    assert np.all(np.isfinite(p.train.x)) and np.all(np.isfinite(p.train.y))


def test_unknown_column_names_close_match():
    df = _frame()
    with pytest.raises(DataError, match=r"'xsc'.*did you mean 'xsec'") as err:
        prepare(df, "xsc")
    _one_line(err)
    with pytest.raises(DataError, match=r"feature column 'm3'.*'m1'"):
        prepare(df, "xsec", ["m1", "m3"])
    with pytest.raises(DataError, match="split column 'fold'"):
        prepare(df, "xsec", split_column="fold")


def test_non_numeric_selected_column_is_named():
    df = _frame()
    with pytest.raises(DataError, match=r"feature column 'label' is not numeric \(e.g. 'x' in data row 1\)") as err:
        prepare(df, "xsec", ["m1", "label"])
    _one_line(err)
    df["xsec"] = df["xsec"].astype(str)
    df.loc[2, "xsec"] = "n/a"
    with pytest.raises(DataError, match=r"target column 'xsec' is not numeric \(e.g. 'n/a' in data row 3\)"):
        prepare(df, "xsec")


def test_the_error_names_the_value_that_is_not_a_number_not_the_first_string(tmp_path):
    """Read from a CSV, a column with one bad value holds every value as a string: the message names the bad one."""
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,2,3\n4,5,6\n7,8,x\n")
    with pytest.raises(DataError, match=r"target column 'y' is not numeric \(e.g. 'x' in data row 3\)"):
        prepare(pd.read_csv(path), "y")
    df = pd.DataFrame({"a": [1.0, 2.0], "y": [True, False]})
    with pytest.raises(DataError, match=r"target column 'y' is not numeric \(dtype bool\)"):
        prepare(df, "y")


def test_feature_cannot_be_target_or_repeated():
    df = _frame()
    with pytest.raises(DataError, match="target column"):
        prepare(df, "xsec", ["m1", "xsec"])
    with pytest.raises(DataError, match="listed twice"):
        prepare(df, "xsec", ["m1", "m1"])


def test_too_few_rows():
    df = _frame(5)
    df.loc[1:, "m1"] = np.nan
    with pytest.raises(DataError, match=rf"only 1 usable training row; at least {MIN_TRAIN_ROWS}.*4 of 5 rows dropped"):
        prepare(df, "xsec", split_fractions=(1.0, 0.0, 0.0))


def test_log_target_needs_positive_values_with_count():
    df = _frame()
    df.loc[[1, 4, 9], "xsec"] = [0.0, -1.0, -2.0]
    with pytest.raises(DataError, match="3 of 50 usable rows") as err:
        prepare(df, "xsec", log_target=True)
    _one_line(err)
    p = prepare(df, "xsec", log_target=False)
    assert p.train.n + p.val.n + p.test.n == 50


def test_split_column_labels():
    df = _frame(6)
    df["part"] = ["Train", "train ", "VALID", "validation", "test", "train"]
    p = prepare(df, "xsec", ["m1"], split_column="part")
    np.testing.assert_array_equal(p.train.rows, [0, 1, 5])
    np.testing.assert_array_equal(p.val.rows, [2, 3])
    np.testing.assert_array_equal(p.test.rows, [4])
    assert p.split_source == "column:part"
    df.loc[4, "part"] = "holdout"
    with pytest.raises(DataError, match="1 rows with a value other than train/val/test.*'holdout'"):
        prepare(df, "xsec", ["m1"], split_column="part")


def test_random_split_reproducible_disjoint_and_sized():
    df = _frame(100)
    a = prepare(df, "xsec", seed=3)
    b = prepare(df, "xsec", seed=3)
    c = prepare(df, "xsec", seed=4)
    np.testing.assert_array_equal(a.train.rows, b.train.rows)
    assert not np.array_equal(a.train.rows, c.train.rows)
    all_rows = np.concatenate([a.train.rows, a.val.rows, a.test.rows])
    assert sorted(all_rows) == list(range(100))
    assert (a.train.n, a.val.n, a.test.n) == (90, 10, 0)  # DEFAULT_SPLIT: no internal test part
    d = prepare(df, "xsec", seed=3, split_fractions=(0.8, 0.1, 0.1))
    assert (d.train.n, d.val.n, d.test.n) == (80, 10, 10)
    assert sorted(np.concatenate([d.train.rows, d.val.rows, d.test.rows])) == list(range(100))
    assert a.fingerprint == b.fingerprint != c.fingerprint
    with pytest.raises(InputError, match="split fractions"):
        prepare(df, "xsec", split_fractions=(0.5, 0.1, 0.1))


def test_a_validation_part_smaller_than_min_val_rows_joins_the_training_rows():
    df = _frame(100)
    base = prepare(df, "xsec", seed=3)
    assert (base.train.n, base.val.n) == (90, 10)
    moved = prepare(df, "xsec", seed=3, min_val_rows=11)  # 10 rows would be held out: too few
    assert (moved.train.n, moved.val.n, moved.test.n) == (100, 0, 0)
    assert prepare(df, "xsec", seed=3, min_val_rows=10).val.n == 10  # enough: the split as it is
    kept = prepare(df, "xsec", seed=3, split_fractions=(0.8, 0.1, 0.1), min_val_rows=11)
    assert (kept.train.n, kept.val.n, kept.test.n) == (90, 0, 10)  # a test part stays a test part
    df["part"] = ["train"] * 95 + ["val"] * 5
    column = prepare(df, "xsec", ["m1"], split_column="part", min_val_rows=20)
    assert column.val.n == 5  # a split column is followed as it is


def test_fingerprint_depends_on_values_and_names():
    x = np.arange(6.0).reshape(3, 2)
    y = np.ones(3)
    f = fingerprint(x, y, ["a", "b"], "y")
    assert f.startswith("sha256:") and len(f) == 7 + 64
    assert f == fingerprint(x.copy(), y.copy(), ["a", "b"], "y")
    x2 = x.copy()
    x2[0, 0] = np.nextafter(0.0, 1.0)
    assert fingerprint(x2, y, ["a", "b"], "y") != f
    assert fingerprint(x, y, ["b", "a"], "y") != f


def test_repeated_column_names_are_rejected_wherever_a_table_enters(tmp_path):
    from sigmabnn.data.tables import feature_matrix, prepare, read_table

    (tmp_path / "t.tsv").write_text("a\tb\ta\n1\t2\t3\n4\t5\t6\n")
    with pytest.raises(DataError, match="column 'a' appears more than once in the header of .*t.tsv"):
        read_table(tmp_path / "t.tsv")
    df = pd.DataFrame([[1.0, 2.0, 3.0]] * 5, columns=["a", "y", "a"])
    with pytest.raises(DataError, match="column 'a' appears more than once in the table"):
        prepare(df, "y")
    with pytest.raises(DataError, match="column 'a' appears more than once"):
        feature_matrix(df, ["a"])
    # a header that only looks like pandas' renaming of a repeat is fine: the names differ
    (tmp_path / "ok.csv").write_text("a,a.1,y\n1,2,3\n")
    assert list(read_table(tmp_path / "ok.csv").columns) == ["a", "a.1", "y"]


@pytest.mark.parametrize(
    ("name", "text", "found"), [("t.csv", "a;b;y\n1;2;3\n", ";"), ("t.tsv", "a,b,y\n1,2,3\n", ",")]
)
def test_a_header_separated_otherwise_than_the_extension_says_is_named(tmp_path, name, text, found):
    """A semicolon .csv (a spreadsheet export) would read as one column ``a;b;y``: the error says why, in both
    readers; a genuine one-column table is read as it is."""
    from sigmabnn.data.tables import read_table, read_table_chunks

    (tmp_path / name).write_text(text)
    with pytest.raises(DataError, match=f"reads as one column, .*separated by {found!r}"):
        read_table(tmp_path / name)
    with pytest.raises(DataError, match=f"reads as one column, .*separated by {found!r}"):
        list(read_table_chunks(tmp_path / name))
    (tmp_path / "one.csv").write_text("y\n1\n2\n")
    assert list(read_table(tmp_path / "one.csv").columns) == ["y"]
