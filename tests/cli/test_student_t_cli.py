"""``train --likelihood student_t --df NU`` end to end: the model file, predict, evaluate, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli import TINY, synthetic_table

from sigmabnn.cli.main import main
from sigmabnn.io.model_file import load_model
from sigmabnn.model import StudentT
from sigmabnn.predict import log_predictive_density


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli_t")
    train = synthetic_table(120, seed=0).drop(columns="clean")
    train.loc[:4, "y"] *= 3.0  # a few outliers, what heavy tails are for
    train.to_csv(d / "train.csv", index=False)
    synthetic_table(60, seed=1).to_csv(d / "test.csv", index=False)
    return d


@pytest.mark.slow
def test_train_predict_evaluate_with_student_t(workdir: Path, capsys) -> None:
    out = workdir / "t.model"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--features", "a,b", "--log-target", *TINY]
    assert main([*argv, "--likelihood", "student_t", "--df", "3.5", "-q", "--out", str(out)]) == 0
    fitted = load_model(out)
    assert fitted.bnn.likelihood == StudentT(df=3.5, precision=100.0, learn_precision=True)
    tau = np.asarray(fitted.draws.hyper.noise_precision)
    assert tau.shape == (2, 40) and np.unique(tau).size > 40  # Gibbs-sampled, not fixed
    assert fitted.settings["noise_df"] == 3.5
    pred = workdir / "pred.csv"
    assert main(["predict", str(out), str(workdir / "test.csv"), "-o", str(pred)]) == 0
    p = pd.read_csv(pred)
    assert np.all(p["lower_0.95"] < p["mean"]) and np.all(p["mean"] < p["upper_0.95"])
    # aleatoric std is the t's std: sqrt(df / (df - 2) / tau) in log10 units, scaled by the target's std
    assert np.all(np.isfinite(p["log10_aleatoric_std"])) and np.all(p["log10_aleatoric_std"] > 0)
    assert_evaluate_reports_mixture_density(out, fitted, workdir, capsys)


def assert_evaluate_reports_mixture_density(out: Path, fitted, workdir: Path, capsys) -> None:
    """``evaluate --json`` of model ``out`` on ``test.csv`` reports the t mixture's log predictive density."""
    capsys.readouterr()
    assert main(["evaluate", str(out), str(workdir / "test.csv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    test = pd.read_csv(workdir / "test.csv")
    lpd = log_predictive_density(fitted, test, test["y"].to_numpy())["log"]
    assert metrics["log10"]["nll"] == pytest.approx(-np.mean(lpd), rel=1e-9)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--likelihood", "student_t", "--df", "2"], "degrees of freedom"),
        (["--df", "3"], "student_t"),
    ],
)
def test_bad_student_t_options_are_one_line_errors(workdir: Path, capsys, extra, message) -> None:
    assert_train_fails_in_one_line(workdir, capsys, extra, message)


def assert_train_fails_in_one_line(workdir: Path, capsys, extra: list[str], message: str) -> None:
    """``train`` with the options ``extra`` exits 2 with one line holding ``message`` and writes nothing."""
    out = workdir / "bad.model"
    argv = ["train", str(workdir / "train.csv"), "--target", "y", "--features", "a,b", *TINY, *extra]
    assert main([*argv, "-q", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not out.exists()
