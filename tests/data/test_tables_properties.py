"""Property-based tests (hypothesis) of the table loader and of the train command's arguments.

Whatever the table (random columns, NaN, inf, empty files, unicode or
duplicate headers, huge values, random bytes) and whatever the arguments,
each case ends either in a result that satisfies its contract or in a
one-line error (exit code 2 on the command line), never a traceback.
"""

from __future__ import annotations

import math
import string
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sigmabnn.cli.main import main
from sigmabnn.data.tables import MIN_TRAIN_ROWS, prepare, read_table
from sigmabnn.errors import InputError

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

names = st.one_of(
    st.sampled_from(["y", "a", "b", "x 1", "ünï", "σ", "", "nan", "1e5", " y"]),
    st.text(alphabet=string.ascii_letters + "äβ€ ,;\"'", min_size=1, max_size=6),
)
cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([1e308, -1e308, 5e-324, 0.0, 1.0, 2.0, float("nan"), float("inf")]),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=4),
    st.none(),
)


@st.composite
def tables(draw):
    n_cols = draw(st.integers(0, 4))
    n_rows = draw(st.integers(0, 25))
    columns = draw(st.lists(names, min_size=n_cols, max_size=n_cols))
    numeric = st.floats(-1e6, 1e6, allow_nan=False) if draw(st.booleans()) else cells
    rows = [[draw(numeric) for _ in columns] for _ in range(n_rows)]
    return pd.DataFrame(rows, columns=columns) if columns else pd.DataFrame(index=range(n_rows))


def _assert_one_line(err: BaseException) -> None:
    message = str(err)
    assert message and "\n" not in message, repr(message)


def _check_prepared(p, target: str, log_target: bool) -> None:
    assert p.train.n >= MIN_TRAIN_ROWS
    assert p.train.n + p.val.n + p.test.n + p.n_dropped == p.n_rows
    for split in (p.train, p.val, p.test):
        assert split.x.shape == (split.n, len(p.feature_names)) and split.y.shape == (split.n,)
        assert np.all(np.isfinite(split.x)) and np.all(np.isfinite(split.y))
        if log_target:
            assert np.all(split.y > 0)
    assert target not in p.feature_names and p.fingerprint.startswith("sha256:")


def _load_and_prepare(path: Path, target: str, log_target: bool) -> str:
    try:
        p = prepare(read_table(path), target, None, seed=0, log_target=log_target)
    except InputError as err:
        _assert_one_line(err)
        return "error"
    _check_prepared(p, target, log_target)
    return "ok"


@SETTINGS
@given(df=tables(), fmt=st.sampled_from(["csv", "tsv", "parquet"]), log_target=st.booleans(), target=names)
def test_any_table_gives_a_prepared_split_or_a_one_line_error(df, fmt, log_target, target):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t.{fmt}"
        if fmt == "parquet":
            try:
                df.to_parquet(path)
            except Exception:
                return  # pyarrow cannot write this frame (mixed types, duplicate names): nothing to load
        else:
            df.to_csv(path, index=False, sep="\t" if fmt == "tsv" else ",")
        _load_and_prepare(path, target, log_target)


@SETTINGS
@given(raw=st.binary(max_size=300), suffix=st.sampled_from([".csv", ".tsv", ".parquet", ".csv.gz"]))
def test_random_bytes_give_a_table_or_a_one_line_error(raw, suffix):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"t{suffix}"
        path.write_bytes(raw)
        _load_and_prepare(path, "y", False)


def test_the_cases_the_properties_are_about_are_really_generated():
    """The strategies do produce NaN, inf, huge values, duplicate and unicode headers and empty tables."""
    seen = set()

    @settings(max_examples=300, deadline=None)
    @given(df=tables())
    def collect(df):
        values = df.to_numpy().ravel().tolist()
        floats = [v for v in values if isinstance(v, float)]
        seen.update(
            k
            for k, hit in {
                "nan": any(math.isnan(v) for v in floats),
                "inf": any(math.isinf(v) for v in floats),
                "huge": any(abs(v) >= 1e300 and math.isfinite(v) for v in floats),
                "dup": df.columns.has_duplicates,
                "unicode": any(not str(c).isascii() for c in df.columns),
                "empty": df.shape[0] == 0,
            }.items()
            if hit
        )

    collect()
    assert seen == {"nan", "inf", "huge", "dup", "unicode", "empty"}


# ---------------------------------------------------------------- the command line


class _ReachedTraining(Exception):
    """Raised instead of sampling: the arguments and the data were accepted."""


@pytest.fixture
def no_sampling(monkeypatch):
    import sigmabnn.fitting.trainers

    def stop(*args, **kwargs):
        raise _ReachedTraining

    # the trainers call these names (imported at the top of fitting/trainers.py)
    monkeypatch.setattr(sigmabnn.fitting.trainers, "fit_mcmc", stop)
    monkeypatch.setattr(sigmabnn.fitting.trainers, "fit_vi", stop)
    monkeypatch.setattr(sigmabnn.fitting.trainers, "fit_ensemble", stop)


option_values = {
    "--features": st.sampled_from(["a", "a,b", "b,a", "a,a", "", "q", "a,,b", "ü"]),
    "--split": st.sampled_from(["0.8,0.1,0.1", "0.5,0.5", "1,0,0", "0.9,0.2,0.1", "x", "-1,1,1", "nan,0,0"]),
    "--arch": st.sampled_from(["2-4-1", "2-4-4-1", "3-4-1", "2-0-1", "2--1", "2-4-2", "abc", "2-99999999999-1"]),
    "--activation": st.sampled_from(["tanh", "relu", "rbf", "sigmoid", "nope", ""]),
    "--method": st.sampled_from(["nuts", "hmc", "mh", "bbb", "flipout", "gibbs"]),
    "--chains": st.sampled_from(["1", "2", "0", "-3", "1.5", "x", "99999999999999999999"]),
    "--warmup": st.sampled_from(["0", "10", "-1", "1e3", ""]),
    "--draws": st.sampled_from(["1", "5", "0", "inf"]),
    "--seed": st.sampled_from(["0", "7", "-1", "2**40", "18446744073709551616"]),
    "--fixed-noise": st.sampled_from(["1", "100", "0", "-1", "nan", "inf", "1e400"]),
    "--derive": st.sampled_from(["s=a+b", "s=exp(a)", "s=", "=a", "a=b", "s=__import__('os')", "s=a/0"]),
    "--split-column": st.sampled_from(["part", "a", "nope"]),
    "--target": st.sampled_from(["y", "a", "nope", "part", "ü"]),
}


@SETTINGS
@given(
    chosen=st.dictionaries(st.sampled_from(sorted(option_values)), st.just(None), max_size=6),
    data=st.data(),
    log_target=st.booleans(),
)
def test_any_train_arguments_end_in_training_or_a_one_line_error(tmp_path, capsys, no_sampling, chosen, data,
                                                                  log_target):  # fmt: skip
    rng = np.random.default_rng(0)
    n = 40
    csv = tmp_path / "data.csv"
    if not csv.exists():
        pd.DataFrame({
            "a": rng.uniform(-1, 1, n), "b": rng.uniform(-1, 1, n), "y": rng.uniform(0.5, 2, n),
            "part": (["train"] * 30 + ["val"] * 5 + ["test"] * 5),
        }).to_csv(csv, index=False)  # fmt: skip
    argv = ["train", str(csv)]
    for option in chosen:
        argv += [option, data.draw(option_values[option], label=option)]
    if "--target" not in chosen:
        argv += ["--target", "y"]
    if log_target:
        argv.append("--log-target")
    out = tmp_path / f"m{len(list(tmp_path.iterdir()))}.model"  # a new path per example
    argv += ["--out", str(out), "-q"]
    try:
        code = main(argv)
    except _ReachedTraining:
        return  # accepted: the sampler would run now
    except SystemExit as exit_:  # argparse: usage, then one error line
        code = exit_.code
    err = capsys.readouterr().err
    assert code == 2, (argv, err)
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if "error:" in line]
    assert len(errors) == 1 and errors[0].startswith("sigmabnn train: error: "), (argv, err)
    assert not out.exists() or not any(out.iterdir()), argv  # nothing half-written
