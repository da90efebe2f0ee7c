"""Bad input through the command line: one line on stderr naming the problem, exit code 2, no output file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main

TINY = ["--chains", "2", "--warmup", "30", "--draws", "20", "--arch", "2-6-1", "-q"]


def table(n: int = 40, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    return pd.DataFrame({"a": a, "b": b, "y": 2.0 + np.sin(2 * a) + b + 0.1 * rng.standard_normal(n)})


def write(df: pd.DataFrame, path: Path) -> Path:
    df.to_csv(path, index=False)
    return path


def leftovers(directory: Path, before: set[str]) -> set[str]:
    """Files that appeared in ``directory`` (an aborted command must leave none, temporary or final)."""
    return {p.name for p in directory.iterdir()} - before


def assert_one_line_error(capsys, argv: list[str], *needles: str) -> str:
    """Run ``main(argv)`` in-process; check exit code 2 and a one-line message containing every needle."""
    code = main(argv)
    captured = capsys.readouterr()
    lines = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert code == 2, captured.err
    assert len(lines) == 1, captured.err
    assert lines[0].startswith(f"sigmabnn {argv[0]}: error: "), lines[0]
    assert "Traceback" not in captured.err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    return lines[0]


def assert_train_fails(capsys, tmp_path: Path, df_or_file, extra: list[str], *needles: str) -> None:
    data = df_or_file if isinstance(df_or_file, Path) else write(df_or_file, tmp_path / "data.csv")
    before = {p.name for p in tmp_path.iterdir()}
    out = tmp_path / "model.sbnn"
    assert_one_line_error(capsys, ["train", str(data), "--target", "y", *TINY, *extra, "--out", str(out)], *needles)
    assert leftovers(tmp_path, before) == set()


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad_input_model")
    out = d / "model.sbnn"
    assert main(["train", str(write(table(), d / "train.csv")), "--target", "y", *TINY, "--out", str(out)]) == 0
    return out


# ------------------------------------------------------------------ train


def test_missing_data_file(capsys, tmp_path: Path) -> None:
    assert_train_fails(capsys, tmp_path, tmp_path / "nope.csv", [], "nope.csv", "not found")


def test_unknown_target_column(capsys, tmp_path: Path) -> None:
    df = table().rename(columns={"y": "z"})
    assert_train_fails(capsys, tmp_path, df, [], "'y'")


def test_unknown_feature_column(capsys, tmp_path: Path) -> None:
    assert_train_fails(capsys, tmp_path, table(), ["--features", "a,c"], "'c'")


def test_non_numeric_column(capsys, tmp_path: Path) -> None:
    df = table()
    df["b"] = df["b"].astype(object)
    df.loc[3, "b"] = "abc"
    assert_train_fails(capsys, tmp_path, df, ["--features", "a,b"], "'b'")


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_column(capsys, tmp_path: Path, bad: float) -> None:
    # Rows with a missing or non-finite value are dropped and reported (a scan with a few failed points is
    # still usable; tests/cli/test_cli.py checks the report); a column with no usable value stops training.
    df = table()
    df["a"] = bad
    assert_train_fails(capsys, tmp_path, df, [], "usable training rows", "missing")


def test_ard_with_a_method_that_samples_no_precisions(capsys, tmp_path: Path) -> None:
    assert_train_fails(capsys, tmp_path, table(), ["--ard", "--method", "ensemble"], "ard", "needs an MCMC method")


def test_too_few_rows(capsys, tmp_path: Path) -> None:
    assert_train_fails(capsys, tmp_path, table(n=1), [], "only 1 usable training row; at least 2")


@pytest.mark.parametrize("log", [False, True])
def test_constant_target(capsys, tmp_path: Path, log: bool) -> None:
    df = table().assign(y=3.5)
    assert_train_fails(capsys, tmp_path, df, ["--log-target"] if log else [], "'y'", "constant")


def test_non_positive_target_with_log_target(capsys, tmp_path: Path) -> None:
    df = table()
    df.loc[7, "y"] = -1.0
    assert_train_fails(capsys, tmp_path, df, ["--log-target"], "'y'", "positive")


@pytest.mark.parametrize(
    ("expression", "needle"), [("z=a+nope", "'nope'"), ('z=__import__("os")', "__import__"), ("z", "name=expression")]
)
def test_bad_derived_feature(capsys, tmp_path: Path, expression: str, needle: str) -> None:
    if "=" not in expression:  # malformed: an argument error from argparse
        with pytest.raises(SystemExit) as exc:
            main(["train", str(write(table(), tmp_path / "d.csv")), "--target", "y", "--derive", expression, "-o", "m"])
        assert exc.value.code == 2 and needle in capsys.readouterr().err
        return
    assert_train_fails(capsys, tmp_path, table(), ["--derive", expression], needle)


def test_architecture_does_not_match_features(capsys, tmp_path: Path) -> None:
    df = table()
    data = write(df, tmp_path / "data.csv")
    before = {p.name for p in tmp_path.iterdir()}
    argv = ["train", str(data), "--target", "y", "--arch", "3-6-1", "-q", "--out", str(tmp_path / "m.sbnn")]
    assert_one_line_error(capsys, argv, "3-6-1")
    assert leftovers(tmp_path, before) == set()


def test_unwritable_model_path_fails_before_training(capsys, tmp_path: Path) -> None:
    data = write(table(), tmp_path / "data.csv")
    out = tmp_path / "no_such_dir" / "model.sbnn"
    assert_one_line_error(capsys, ["train", str(data), "--target", "y", *TINY, "--out", str(out)], "no_such_dir")
    assert not out.parent.exists()


def test_model_path_is_a_directory_that_is_not_a_model(capsys, tmp_path: Path) -> None:
    data = write(table(), tmp_path / "data.csv")
    before = {p.name for p in tmp_path.iterdir()}
    assert_one_line_error(capsys, ["train", str(data), "--target", "y", *TINY, "--out", str(tmp_path)], "not a model")
    assert {p.name for p in tmp_path.iterdir()} == before  # nothing replaced, nothing added


def test_model_path_is_a_regular_file(capsys, tmp_path: Path) -> None:
    data = write(table(), tmp_path / "data.csv")
    assert_one_line_error(capsys, ["train", str(data), "--target", "y", *TINY, "--out", str(data)], "data.csv")
    pd.testing.assert_frame_equal(pd.read_csv(data), table())


def test_bad_split_fractions_are_an_argument_error(capsys, tmp_path: Path) -> None:
    data = write(table(), tmp_path / "data.csv")
    with pytest.raises(SystemExit) as exc:
        main(["train", str(data), "--target", "y", "--split", "0.5,0.1", "--out", str(tmp_path / "m.sbnn")])
    assert exc.value.code == 2
    assert "0.5,0.1" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["train", "d.csv", "--target", "y", "-o", "m"], ["predict", "m", "x.csv"],
                                     ["demo", "toy"], ["train-all", "builtin", "--out", "d"]])  # fmt: skip
@pytest.mark.parametrize("value", [str(2**64), str(2**63), "-1"])
def test_seed_outside_what_a_random_key_takes_is_an_argument_error(capsys, command: list[str], value: str) -> None:
    with pytest.raises(SystemExit) as exc:
        main([*command, "--seed", value])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "2**63 - 1" in err and value in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "prefix", "needle"),
    [
        (
            ["train", "d.csv", "--target", "y", "-o", "m", "--bogus", "1"],
            "sigmabnn train",
            "unrecognized arguments: --bogus 1",
        ),
        (["evaluate", "m", "d.csv", "--target", "y"], "sigmabnn evaluate", "unrecognized arguments: --target y"),
        (["nope"], "sigmabnn", "invalid choice: 'nope'"),
        ([], "sigmabnn", "required: COMMAND"),
        (["predict", "m", "x.csv", "-o", "p.csv", "--level", "abc"], "sigmabnn predict", "--level"),
    ],
)
def test_argument_errors_are_one_line_naming_the_command(capsys, argv: list[str], prefix: str, needle: str) -> None:
    """argparse's errors as every other bad input: one line (no usage block), exit 2, the subcommand named
    also for an option it does not know, and where its usage is."""
    with pytest.raises(SystemExit) as exc:
        main(argv)
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert exc.value.code == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"{prefix}: error: ") and needle in lines[0]
    assert lines[0].endswith(f"(see '{prefix} --help')")


def test_largest_seed_is_accepted() -> None:
    from sigmabnn.cli import common

    assert common.seed(str(2**63 - 1)) == 2**63 - 1


# ------------------------------------------------------------------ predict / evaluate / info


def test_repeated_header_name_is_an_error(capsys, tmp_path: Path) -> None:
    """``a,a,y``: which ``a`` is meant is ambiguous; the error names the column (pandas would train on a and a.1)."""
    rng = np.random.default_rng(0)
    body = "\n".join(f"{u:.4f},{v:.4f},{u - v:.4f}" for u, v in rng.uniform(-1, 1, (30, 2)))
    data = tmp_path / "dup.csv"
    data.write_text("a,a,y\n" + body + "\n")
    assert_train_fails(capsys, tmp_path, data, [], "column 'a' appears more than once", "dup.csv")


def test_repeated_column_name_in_parquet_is_an_error(capsys, tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    df = table()
    data = tmp_path / "dup.parquet"
    pq.write_table(pa.table([df["a"], df["b"], df["y"]], names=["a", "a", "y"]), data)  # pandas refuses to write it
    assert_train_fails(capsys, tmp_path, data, [], "column 'a' appears more than once")


def test_predict_repeated_header_name(capsys, tmp_path: Path, model: Path) -> None:
    data = tmp_path / "x.csv"
    data.write_text("a,b,b\n0.1,0.2,0.3\n")
    out = tmp_path / "pred.csv"
    assert_one_line_error(
        capsys, ["predict", str(model), str(data), "-o", str(out)], "column 'b' appears more than once"
    )
    assert not out.exists()


def test_predict_missing_feature(capsys, tmp_path: Path, model: Path) -> None:
    data = write(table().drop(columns="b"), tmp_path / "x.csv")
    out = tmp_path / "pred.csv"
    assert_one_line_error(capsys, ["predict", str(model), str(data), "-o", str(out)], "'b'")
    assert not out.exists()


def test_predict_wrong_feature_names(capsys, tmp_path: Path, model: Path) -> None:
    data = write(table().rename(columns={"a": "u", "b": "v"}), tmp_path / "x.csv")
    out = tmp_path / "pred.csv"
    assert_one_line_error(capsys, ["predict", str(model), str(data), "-o", str(out)], "'a'")
    assert not out.exists()


def test_predict_non_finite_input(capsys, tmp_path: Path, model: Path) -> None:
    df = table()
    df.loc[2, "b"] = np.nan
    data = write(df, tmp_path / "x.csv")
    out = tmp_path / "pred.csv"
    assert_one_line_error(capsys, ["predict", str(model), str(data), "-o", str(out)], "non-finite", "data row 3")
    assert not out.exists()


def test_evaluate_non_finite_target(capsys, tmp_path: Path, model: Path) -> None:
    df = table()
    df.loc[4, "y"] = np.inf
    data = write(df, tmp_path / "x.csv")
    assert_one_line_error(capsys, ["evaluate", str(model), str(data)], "non-finite")


def test_predict_unwritable_output(capsys, tmp_path: Path, model: Path) -> None:
    data = write(table(), tmp_path / "x.csv")
    out = tmp_path / "missing" / "pred.csv"
    assert_one_line_error(capsys, ["predict", str(model), str(data), "-o", str(out)], "missing")
    assert not out.parent.exists()


def test_missing_model_file(capsys, tmp_path: Path) -> None:
    data = write(table(), tmp_path / "x.csv")
    assert_one_line_error(capsys, ["predict", str(tmp_path / "gone.sbnn"), str(data), "-o", "-"], "gone.sbnn")


def test_corrupt_model_file(capsys, tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "corrupt.sbnn"
    shutil.copytree(model, bad)
    (bad / "model.json").write_bytes(b"\x00\x01garbage" * 50)
    assert_one_line_error(capsys, ["info", str(bad)], "corrupt.sbnn")


def test_truncated_model_file(capsys, tmp_path: Path, model: Path) -> None:
    bad = tmp_path / "truncated.sbnn"
    shutil.copytree(model, bad)
    arrays = bad / "arrays.npz"
    blob = arrays.read_bytes()
    arrays.write_bytes(blob[: len(blob) // 2])
    data = write(table(), tmp_path / "x.csv")
    out = tmp_path / "pred.csv"
    assert_one_line_error(capsys, ["predict", str(bad), str(data), "-o", str(out)], "truncated.sbnn")
    assert not out.exists()


def test_foreign_model_file(capsys, tmp_path: Path) -> None:
    foreign = write(table(), tmp_path / "not_a_model.csv")
    assert_one_line_error(capsys, ["evaluate", str(foreign), str(foreign)], "not_a_model.csv")


def test_evaluate_without_target_column(capsys, tmp_path: Path, model: Path) -> None:
    data = write(table().drop(columns="y"), tmp_path / "x.csv")
    assert_one_line_error(capsys, ["evaluate", str(model), str(data)], "target column 'y' not found")


def test_demo_unknown_function(capsys, tmp_path: Path) -> None:
    assert_one_line_error(capsys, ["demo", "--functions", "linear,cubic", "--out", str(tmp_path)], "cubic")


# ------------------------------------------------------------------ the real process: exit code, no traceback


def _cli(*args: str) -> subprocess.CompletedProcess:
    prog = "import sys; from sigmabnn.cli.main import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", prog, *args], capture_output=True, text=True, timeout=300)


def test_process_missing_file_exit_code(tmp_path: Path) -> None:
    result = _cli("train", str(tmp_path / "absent.csv"), "--target", "y", "--out", str(tmp_path / "m.sbnn"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "absent.csv" in result.stderr
    assert list(tmp_path.iterdir()) == []


def test_process_unknown_column_exit_code(tmp_path: Path) -> None:
    data = write(table(), tmp_path / "data.csv")
    result = _cli("train", str(data), "--target", "nonexistent", "--out", str(tmp_path / "m.sbnn"))
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert result.stderr.strip().count("\n") == 0 and "'nonexistent'" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.csv"]


def test_process_bad_argument_exit_code(tmp_path: Path) -> None:
    result = _cli("predict", "m.sbnn", "x.csv", "-o", "-", "--level", "1.5")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "1.5" in result.stderr


def test_baseline_feature_must_be_an_input(capsys, tmp_path: Path) -> None:
    assert_train_fails(capsys, tmp_path, table(), ["--baseline", "nope"], "'nope'", "not an input")


def test_semicolon_separated_csv_is_named_as_such(capsys, tmp_path: Path) -> None:
    """A European spreadsheet's ``.csv`` (``;``-separated): one line saying so, not "column 'y' not found"."""
    data = tmp_path / "semi.csv"
    data.write_text("a;b;y\n" + "\n".join(f"{i};{2 * i};{3 * i}" for i in range(30)) + "\n")
    assert_train_fails(capsys, tmp_path, data, [], "its header is separated by ';', not ','", "semi.csv")


@pytest.mark.parametrize(
    ("process", "needle"),
    [("1,2", "unsupported particle id 1"), ("abc", "two particle ids"), ("1000023,1000025", "1000023")],
)
def test_train_all_with_a_bad_process_leaves_no_directory(capsys, tmp_path: Path, process: str, needle: str) -> None:
    """The surrogate directory is created only once the processes and the table's columns are checked."""
    out = tmp_path / "new" / "surrogates"
    assert_one_line_error(capsys, ["train-all", "builtin", "--out", str(out), "--process", process], needle)
    assert not (tmp_path / "new").exists()


def test_train_all_refuses_a_directory_under_a_file(capsys, tmp_path: Path) -> None:
    (tmp_path / "plain").write_text("x")
    assert_one_line_error(capsys, ["train-all", "builtin", "-o", str(tmp_path / "plain" / "d")], "not a directory")
