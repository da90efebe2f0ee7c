"""The high-level fit: end to end on a small table, save/load/predict, and argument errors."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.errors import DataError, InputError
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.predict import predict


def _table(n: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.uniform(-1, 1, n)
    b = rng.uniform(-1, 1, n)
    y = 10.0 ** (0.8 * a - 0.5 * b + 0.02 * rng.normal(size=n))
    return pd.DataFrame({"a": a, "b": b, "run": [f"r{i}" for i in range(n)], "y": y})


@pytest.mark.slow
def test_fit_mh_end_to_end_save_load_predict(tmp_path):
    df = _table()
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    fitted, report = fit(
        path,
        "y",
        method="mh",
        architecture="2-6-1",
        log_target=True,
        num_chains=2,
        num_warmup=200,
        num_samples=50,
        split=(0.9, 0.1, 0.0),  # DEFAULT_SPLIT given: without it the 8 val rows, too few to recalibrate on, train
        progress=False,
    )
    json.dumps(report.to_json())
    assert fitted.feature_names == ("a", "b") and fitted.target_name == "y"
    assert fitted.draws.positions.shape == (2, 50, 25)
    assert fitted.method == "mh" and fitted.log_target
    data = report.data
    assert (data.rows, data.train, data.val, data.test, data.skipped_columns) == (
        80,
        72,
        8,
        0,
        ("run",),
    )
    assert set(fitted.adapted) == {"step_size", "inverse_mass_matrix"}
    assert len(report.sampler.acceptance) == 2
    assert fitted.diagnostics == report.to_json() and fitted.report == report
    # a near-noiseless log-linear function is learnt (MAP starts make this easy)
    assert report.metrics["train"]["log10"]["r2"] > 0.95
    assert report.metrics["val"]["log10"]["r2"] > 0.8
    save_model(fitted, tmp_path / "model")
    loaded = load_model(tmp_path / "model")
    a = predict(fitted, df)
    b = predict(loaded, df)
    np.testing.assert_array_equal(a.mean, b.mean)
    np.testing.assert_array_equal(a.upper[0.95], b.upper[0.95])


def test_derived_features_are_added_and_stored():
    df = _table(40)
    fitted, _ = fit(
        df,
        "y",
        ["a"],
        method="mh",
        architecture="auto",
        derive=["ab=a*b"],
        num_chains=1,
        num_warmup=20,
        num_samples=5,
        progress=False,
        map=None,
    )
    assert fitted.feature_names == ("a", "ab")
    assert fitted.derived == (("ab", "a*b"),)
    assert fitted.bnn.mlp.widths == (2, 20, 20, 1)
    p = predict(fitted, df[["a", "b"]])
    assert p.mean.shape == (40, 1)


def test_argument_errors_before_training():
    df = _table(30)
    with pytest.raises(InputError, match="unknown method 'gibbs'"):
        fit(df, "y", method="gibbs")
    with pytest.raises(InputError, match="has 3 inputs but there are 2 features"):
        fit(df, "y", architecture="3-5-1")
    with pytest.raises(InputError, match="must end in 1 output"):
        fit(df, "y", architecture="2-5-2")
    with pytest.raises(InputError, match="unknown MCMC option 'step_size'"):
        fit(df, "y", step_size=0.1)
    with pytest.raises(DataError, match="target column 'z' not found"):
        fit(df, "z")
    with pytest.raises(InputError, match="noise_precision must be a positive"):
        fit(df, "y", noise_precision=-1.0)


@pytest.mark.slow
def test_fit_nuts_end_to_end():
    df = _table(60, seed=1)
    fitted, report = fit(
        df,
        "y",
        architecture="2-5-1",
        log_target=True,
        num_chains=2,
        num_warmup=150,
        num_samples=40,
        max_tree_depth=6,
        progress=False,
    )
    assert fitted.draws.positions.shape == (2, 40, 21)
    assert report.sampler.divergences is not None
    assert report.metrics["train"]["log10"]["r2"] > 0.95
    cov = report.metrics["train"]["log10"]["coverage_interval"]["0.95"]
    assert cov > 0.8


@pytest.mark.slow
def test_fit_chees_end_to_end(tmp_path, capsys):
    from sigmabnn.cli.main import main

    df = _table(60, seed=1)
    fitted, report = fit(
        df, "y", method="chees", architecture="2-5-1", log_target=True, num_chains=4, num_warmup=200,
        num_samples=50, learn_noise=True, progress=False,
    )  # fmt: skip
    assert fitted.method == "chees" and fitted.draws.positions.shape == (4, 50, 21)
    # one trajectory shared by the chains: one step size, and the steps per iteration are recorded
    steps = report.sampler.step_size
    assert len(steps) == 4 and len(set(steps)) == 1 and report.sampler.mean_integration_steps >= 1
    assert report.sampler.ebfmi is not None and report.sampler.tree_depth_saturation is None
    assert report.metrics["train"]["log10"]["r2"] > 0.95
    assert report.metrics["train"]["log10"]["coverage_interval"]["0.95"] > 0.8
    # saved, loaded and diagnosed like any MCMC model
    path = tmp_path / "chees.model"
    save_model(fitted, path)
    assert load_model(path).method == "chees"
    assert main(["diagnose", str(path), "--json"]) in (0, 1)
    summary = json.loads(capsys.readouterr().out)
    assert summary["predictions"]["max_rhat"] > 0


@pytest.mark.slow
def test_fit_bbb_end_to_end():
    df = _table(60, seed=2)
    fitted, report = fit(
        df, "y", method="bbb", architecture="2-8-1", log_target=True, num_samples=100, num_steps=500, progress=False
    )
    assert fitted.method == "bbb" and fitted.draws.positions.shape == (1, 100, 33)
    assert fitted.adapted == {}
    assert report.sampler.num_steps == 500
    assert report.metrics["val"]["log10"]["r2"] > 0.9
