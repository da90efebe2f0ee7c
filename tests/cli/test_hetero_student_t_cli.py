"""``train --likelihood hetero_student_t --df NU`` end to end: the model file, predict, evaluate, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from test_cli import TINY, synthetic_table
from test_student_t_cli import assert_evaluate_reports_mixture_density, assert_train_fails_in_one_line

from sigmabnn.cli.main import main
from sigmabnn.io.model_file import load_model
from sigmabnn.model import HeteroscedasticStudentT

TRAIN = ["--target", "y", "--features", "a,b"]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli_ht")
    train = synthetic_table(120, seed=0).drop(columns="clean")
    train.to_csv(d / "train.csv", index=False)
    synthetic_table(60, seed=1).to_csv(d / "test.csv", index=False)
    return d


@pytest.mark.slow
def test_train_predict_evaluate_with_hetero_student_t(workdir: Path, capsys) -> None:
    out = workdir / "ht.model"
    argv = ["train", str(workdir / "train.csv"), *TRAIN, "--log-target", *TINY]  # --arch 2-8-1: the mean network
    assert main([*argv, "--likelihood", "hetero_student_t", "--df", "3.5", "-q", "--out", str(out)]) == 0
    fitted = load_model(out)
    assert fitted.bnn.likelihood == HeteroscedasticStudentT(df=3.5)
    assert fitted.bnn.mlp.widths == (2, 8, 2) and fitted.settings["noise_df"] == 3.5
    assert not fitted.settings["learn_noise"]
    pred = workdir / "pred.csv"
    assert main(["predict", str(out), str(workdir / "test.csv"), "-o", str(pred)]) == 0
    p = pd.read_csv(pred)
    assert np.all(p["lower_0.95"] < p["mean"]) and np.all(p["mean"] < p["upper_0.95"])
    ale = p["log10_aleatoric_std"].to_numpy()
    assert np.all(np.isfinite(ale)) and np.all(ale > 0) and np.ptp(ale) > 0  # a per-point noise std
    assert_evaluate_reports_mixture_density(out, fitted, workdir, capsys)


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--likelihood", "hetero_student_t", "--df", "2"], "degrees of freedom"),
        (["--likelihood", "hetero_student_t", "--fixed-noise", "100"], "per point"),
        (["--likelihood", "hetero_student_t", "--method", "flipout"], "MCMC method"),
        (["--df", "4", "--likelihood", "gaussian"], "hetero_student_t"),
    ],
)
def test_bad_hetero_student_t_options_are_one_line_errors(workdir: Path, capsys, extra, message) -> None:
    assert_train_fails_in_one_line(workdir, capsys, extra, message)


@pytest.mark.slow
def test_train_with_the_automatic_noise_model_says_which_it_chose(workdir: Path, capsys) -> None:
    out = workdir / "auto.model"
    argv = ["train", str(workdir / "train.csv"), *TRAIN, "--log-target", *TINY, "--split", "0.7,0.3,0"]
    capsys.readouterr()
    assert main([*argv, "--likelihood", "auto", "--out", str(out)]) == 0
    fitted = load_model(out)
    err = capsys.readouterr().err  # not a terminal: one line per phase, the noise model's choice included
    assert f"noise model chosen: {fitted.bnn.likelihood.name} (MAP starts of both fitted" in err
    choice = fitted.report.noise_choice
    assert choice.likelihood == fitted.bnn.likelihood.name and set(choice.val_log_density) == {
        "gaussian",
        "hetero_student_t",
    }
    assert "paired SE" in choice.reason  # how the two were compared
    if choice.likelihood == "hetero_student_t":
        assert choice.val_log_density["hetero_student_t"] > choice.val_log_density["gaussian"]
    assert (
        main(["train", str(workdir / "train.csv"), *TRAIN, "--likelihood", "auto", "--df", "4", "--out", str(out)]) == 2
    )
    assert "student_t and hetero_student_t" in capsys.readouterr().err
