"""Classifiers through the command line: train, predict, evaluate; bad labels exit 2 with one line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sigmabnn.cli.main import main

FAST = ["--method", "ensemble", "--arch", "2-8-3", "-q"]


def blobs(n: int = 90, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    x = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 2.5]])[k] + 0.5 * rng.standard_normal((n, 2))
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "kind": np.array(["ant", "bee", "cat"])[k]})


def one_line_exit_2(capsys, argv: list[str], needle: str) -> None:
    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "Traceback" not in err[0], err
    assert needle in err[0], err[0]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("cls")
    blobs().to_csv(d / "data.csv", index=False)
    assert main(["train", str(d / "data.csv"), "--target", "kind", "--likelihood", "categorical", "-o",
                 str(d / "model"), *FAST]) == 0  # fmt: skip
    return d


def test_predict_writes_class_probabilities_and_the_uncertainty_split(trained, capsys):
    out = trained / "pred.csv"
    assert main(["predict", str(trained / "model"), str(trained / "data.csv"), "-o", str(out)]) == 0
    frame = pd.read_csv(out)
    probs = ["prob_ant", "prob_bee", "prob_cat"]
    summaries = ["predicted", "entropy", "expected_entropy", "mutual_information", "in_domain", "domain_distance"]
    assert list(frame.columns) == [*probs, *summaries] and frame["in_domain"].all()  # the training rows
    np.testing.assert_allclose(frame[probs].sum(axis=1), 1.0, rtol=1e-8)
    assert (frame["predicted"] == blobs()["kind"]).mean() > 0.9
    np.testing.assert_allclose(frame["mutual_information"], frame["entropy"] - frame["expected_entropy"], atol=1e-8)


def test_evaluate_prints_accuracy_and_calibration_and_writes_a_report(trained, capsys):
    assert main(["evaluate", str(trained / "model"), str(trained / "data.csv"), "--json"]) == 0
    metrics = json.loads(capsys.readouterr().out)
    assert metrics["accuracy"] > 0.9 and metrics["ece_bins"] == 15 and 0 <= metrics["ece"] <= 1
    assert main(["evaluate", str(trained / "model"), str(trained / "data.csv"), "--report", str(trained / "r")]) == 0
    assert (trained / "r" / "reliability.png").stat().st_size > 1000
    assert "ECE" in (trained / "r" / "report.md").read_text()


def test_an_unseen_label_at_evaluate_time_exits_2(trained, capsys):
    blobs().assign(kind="dog").to_csv(trained / "dog.csv", index=False)
    one_line_exit_2(capsys, ["evaluate", str(trained / "model"), str(trained / "dog.csv")], "not a class")


@pytest.mark.parametrize(
    ("target", "needle"),
    [(np.linspace(0.1, 0.9, 90), "not floats"), (["ant"] * 90, "at least 2 classes")],
)
def test_a_float_or_single_class_target_exits_2(tmp_path, capsys, target, needle):
    blobs().assign(kind=target).to_csv(tmp_path / "bad.csv", index=False)
    argv = ["train", str(tmp_path / "bad.csv"), "--target", "kind", "--likelihood", "categorical", "-o",
            str(tmp_path / "m"), *FAST]  # fmt: skip
    one_line_exit_2(capsys, argv, needle)
    assert not (tmp_path / "m").exists()


def test_bbb_with_the_scale_mixture_prior_from_the_command_line(tmp_path, capsys):
    blobs().to_csv(tmp_path / "data.csv", index=False)
    data, model = str(tmp_path / "data.csv"), str(tmp_path / "m")
    argv = ["train", data, "--target", "kind", "--likelihood", "categorical", "--method", "bbb",
            "--vi-prior", "scale_mixture", "--arch", "2-8-3", "--draws", "20", "-q", "-o", model]  # fmt: skip
    assert main(argv) == 0
    from sigmabnn.io.model_file import load_model

    assert load_model(tmp_path / "m").settings["prior"] == "scale_mixture"
    one_line_exit_2(capsys, [*argv[:-2], "--method", "nuts", "-o", str(tmp_path / "m2")], "--vi-prior")


def test_recalibrate_refits_a_classifiers_temperature_on_held_out_rows(trained, capsys):
    """``recalibrate`` on a classifier: the temperature minimising the held-out rows' NLL (recomputed here by
    the same search) replaces the old one when it beats T = 1; ``info`` shows it; the rule's refusals."""
    from sigmabnn.io.model_file import load_model
    from sigmabnn.predict.classes import network_probabilities
    from sigmabnn.temperature import kept_temperature, pooled_log_probs

    held = blobs(120, seed=5)
    labels = held["kind"].to_numpy().copy()
    labels[::4] = np.roll(labels[::4], 1)  # a quarter relabelled: the model's confidence is too high for these rows
    held["kind"] = labels
    held.to_csv(trained / "held.csv", index=False)
    new = trained / "recal"
    assert main(["recalibrate", str(trained / "model"), str(trained / "held.csv"), "-o", str(new)]) == 0
    printed = capsys.readouterr().out
    fitted = load_model(new)
    t = fitted.classes.temperature
    codes = np.array([fitted.classes.labels.index(v) for v in labels])
    log_p = np.log(np.maximum(network_probabilities(load_model(trained / "model"), held, calibrated=False), 1e-300))
    assert t == pytest.approx(kept_temperature(pooled_log_probs(log_p), codes).temperature) and t > 1.0  # softened
    assert f"temperature T = {t:.3g}" in printed and "recalibrated on 120 rows (all)" in printed
    assert main(["info", str(new)]) == 0
    shown = " ".join(capsys.readouterr().out.split())
    assert (
        f"temperature {t:.4g} (on the posterior predictive), fitted on 120 rows" in shown
        and "classes ant, bee, cat (3)" in shown
    )
    one_line_exit_2(capsys, ["recalibrate", str(trained / "model"), str(trained / "held.csv"), "-o", str(new),
                             "--rows", "loo"], "held-out rows")  # fmt: skip
    held.head(10).to_csv(trained / "few.csv", index=False)
    one_line_exit_2(capsys, ["recalibrate", str(trained / "model"), str(trained / "few.csv"), "-o", str(new)], "20")
    held.assign(kind=["dog"] * len(held)).to_csv(trained / "dog2.csv", index=False)
    one_line_exit_2(capsys, ["recalibrate", str(trained / "model"), str(trained / "dog2.csv"), "-o", str(new)], "dog")
