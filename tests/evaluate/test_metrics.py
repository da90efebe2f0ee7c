"""Metrics: hand-checkable values, mixture NLL, coverage of calibrated data within binomial error."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.evaluate.metrics import (
    coverage_sigma,
    evaluate,
    interval_coverage,
    nll,
    r2,
    r2_concentration,
    relative_error_quantiles,
    rmse,
    standardized_residuals,
)
from sigmabnn.fitted import FittedModel
from sigmabnn.model import BNN, Gaussian, Hyperparameters, parse_architecture


def test_r2_rmse_by_hand():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    m = np.array([1.0, 2.0, 3.0, 5.0])
    assert rmse(y, m) == pytest.approx(0.5)
    assert r2(y, m) == pytest.approx(1 - 1.0 / 5.0)
    assert r2(y, y) == 1.0
    assert math.isnan(r2(np.ones(3), np.zeros(3)))


def test_r2_concentration_by_hand():
    y = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 10.0])
    m = np.array([0.1, 1.0, 2.2, 3.0, 4.0, 7.0])  # squared residuals 0.01, 0, 0.04, 0, 0, 9
    c = r2_concentration(y, m, counts=(1, 2))
    assert c["top_rows"] == [5, 2]
    assert c["share_top1"] == pytest.approx(9.0 / 9.05)
    assert c["share_top2"] == pytest.approx(9.04 / 9.05)
    # the R^2 of the other rows, total sum of squares recomputed on them too
    assert c["r2_without_top1"] == pytest.approx(r2(y[:5], m[:5]))
    assert c["r2_without_top2"] == pytest.approx(r2(np.delete(y, [2, 5]), np.delete(m, [2, 5])))
    assert c["r2_without_top1"] > r2(y, m)
    # a perfect fit: no residual sum to share
    assert math.isnan(r2_concentration(y, y)["share_top1"])


def test_nll_single_gaussian_and_mixture():
    y = np.array([0.3, -1.2])
    assert nll(y, np.zeros((1, 2)), 2.0) == pytest.approx(-np.mean(stats.norm.logpdf(y, 0.0, 2.0)))
    mu = np.array([[0.0, 1.0], [2.0, -1.0]])
    sig = np.array([[1.0, 0.5], [0.5, 2.0]])
    dens = 0.5 * (stats.norm.pdf(y, mu[0], sig[0]) + stats.norm.pdf(y, mu[1], sig[1]))
    assert nll(y, mu, sig) == pytest.approx(-np.mean(np.log(dens)), rel=1e-12)
    # far-away point: log-sum-exp keeps it finite
    assert np.isfinite(nll(np.array([1e3]), np.zeros((2, 1)), 1e-2))


def test_residuals_and_sigma_coverage_by_hand():
    z = standardized_residuals([1.0, 2.0, 3.0, 10.0], [0.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0])
    np.testing.assert_array_equal(z, [1.0, 2.0, 3.0, 10.0])
    cov = coverage_sigma(z, ks=(1, 2, 3))
    assert cov["1"]["observed"] == 0.25 and cov["2"]["observed"] == 0.5 and cov["3"]["observed"] == 0.75
    assert cov["1"]["expected"] == pytest.approx(0.6826894921370859)
    assert cov["2"]["expected"] == pytest.approx(0.9544997361036416)


def test_interval_coverage_and_relative_errors_by_hand():
    y = np.array([0.0, 1.0, 2.0, 3.0])
    got = interval_coverage(y, {0.5: np.full(4, 0.5)}, {0.5: np.full(4, 2.0)})
    assert got == {"0.5": 0.5}
    rel = relative_error_quantiles(np.array([1.0, 2.0, 0.0, 4.0]), np.array([1.1, 2.0, 5.0, 2.0]), qs=(0.5,))
    # rows with y = 0 skipped: relative errors 0.1, 0, 0.5
    assert rel["q0.5"] == pytest.approx(0.1) and rel["max"] == pytest.approx(0.5)


def test_coverage_of_calibrated_data_matches_gaussian_expectation():
    rng = np.random.default_rng(0)
    n = 20_000
    mean = rng.normal(size=n)
    std = rng.uniform(0.5, 2.0, size=n)
    y = mean + std * rng.normal(size=n)
    cov = coverage_sigma(standardized_residuals(y, mean, std))
    for k, entry in cov.items():
        p = entry["expected"]
        se = math.sqrt(p * (1 - p) / n)
        assert abs(entry["observed"] - p) <= 4 * se + 1.0 / n, (k, entry)
    # a mis-calibrated (overconfident) predictive fails the same check
    bad = coverage_sigma(standardized_residuals(y, mean, 0.7 * std))
    assert bad["1"]["observed"] < bad["1"]["expected"] - 0.1


def _constant_model(b: float, lam: float, log10: bool) -> FittedModel:
    mlp = parse_architecture("1-1")
    draws = PosteriorDraws(
        np.array([[[0.0, b]]]), Hyperparameters(np.array([[lam]]), np.ones((1, 1, 1)), np.ones((1, 1, 1)))
    )
    return FittedModel(
        bnn=BNN(mlp, likelihood=Gaussian()),
        draws=draws,
        x_transform=Standardizer.fit(np.array([[0.0], [1.0]])),
        y_transform=TargetTransform.fit(np.array([1.0, 100.0]), log10=log10),
        feature_names=("x",),
        target_name="y",
    )


def test_evaluate_on_a_known_lognormal_model():
    f = _constant_model(b=0.2, lam=4.0, log10=True)
    mu = 0.2 * f.y_transform.scale[0] + f.y_transform.mean[0]
    sigma = f.y_transform.scale[0] / 2.0
    rng = np.random.default_rng(1)
    n = 4000
    u = mu + sigma * rng.normal(size=n)
    df = pd.DataFrame({"x": rng.uniform(size=n), "y": 10.0**u})
    out = evaluate(f, df, df, levels=(0.68, 0.95))
    json.dumps(out)  # JSON-able
    assert out["n"] == n and set(out) == {"n", "target", "log10", "original"}
    log = out["log10"]
    assert log["nll"] == pytest.approx(-np.mean(stats.norm.logpdf(u, mu, sigma)), rel=1e-10)
    orig = out["original"]
    expected = -np.mean(stats.lognorm.logpdf(10.0**u, s=sigma * math.log(10), scale=10.0**mu))
    assert orig["nll"] == pytest.approx(expected, rel=1e-8)
    for level in ("0.68", "0.95"):
        p = float(level)
        se = math.sqrt(p * (1 - p) / n)
        assert abs(log["coverage_interval"][level] - p) < 4 * se + 0.01
        # exact: the rows whose PIT lies in the central interval's levels, not a count against sampled intervals
        pit = stats.norm.cdf(u, mu, sigma)
        assert log["coverage_interval"][level] == pytest.approx(np.mean(np.abs(pit - 0.5) <= p / 2), abs=1e-12)
        assert orig["coverage_interval"][level] == log["coverage_interval"][level]  # same quantiles, monotone map
    assert abs(log["residual_mean"]) < 4 / math.sqrt(n)
    assert log["residual_std"] == pytest.approx(1.0, abs=0.05)
    assert "relative_error" in orig and "relative_error" not in log


def test_evaluate_linear_target_has_one_section():
    f = _constant_model(b=0.0, lam=1.0, log10=False)
    x = np.zeros((50, 1))
    y = np.full(50, f.y_transform.mean[0])
    out = evaluate(f, x, y)
    assert set(out) == {"n", "target", "original"}
    assert out["original"]["rmse"] == pytest.approx(0.0, abs=1e-9)
