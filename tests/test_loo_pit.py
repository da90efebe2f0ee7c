"""Leave-one-out PIT of the training rows (PSIS) and recalibration on it, against exact leave-one-out."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from sigmabnn.cli.main import main
from sigmabnn.data.tables import fingerprint
from sigmabnn.data.transforms import LinearBaseline, Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.model import BNN, Gaussian, Hyperparameters, StudentT, parse_architecture
from sigmabnn.predict import log_predictive_density, per_draw_predictive
from sigmabnn.recalibration import loo_log_weights, loo_pit_values, loo_subset, pit_values, recalibrate
from test_predict import make_fitted, numpy_forward

NOISE = 0.5  # model-space noise std of the conjugate model


def conjugate_model(n: int = 14, chains: int = 4, draws: int = 1000, seed: int = 0):
    """Bayesian linear regression with known noise, sampled exactly, behind non-trivial transforms.

    Model space: ``z = theta . [zx, 1] + N(0, NOISE^2)``, prior ``theta ~ N(0, I)`` (the posterior the
    draws come from; PSIS-LOO targets whatever posterior the draws are of). The raw rows are
    ``x = zx * std + mean`` and ``y = 10 ** (z * s + m + b(x))`` with a linear baseline ``b``, so the
    per-draw CDF passes the log10, the baseline and both standardisations.
    Returns ``(fitted, x_raw, y_raw, design [n, 3], z [n], exact LOO-PIT [n])``.
    """
    rng = np.random.default_rng(seed)
    zx = rng.normal(size=(n, 2))
    design = np.column_stack([zx, np.ones(n)])
    z = design @ np.array([0.8, -0.5, 0.3]) + NOISE * rng.standard_normal(n)
    z[0] += 2.0  # one surprising row: its leave-one-out PIT differs clearly from the in-sample one
    lam = 1.0 / NOISE**2

    def posterior(keep):
        a = np.eye(3) + lam * design[keep].T @ design[keep]
        cov = np.linalg.inv(a)
        return cov @ (lam * design[keep].T @ z[keep]), cov

    mean, cov = posterior(np.ones(n, bool))
    theta = rng.multivariate_normal(mean, cov, size=chains * draws)
    exact = np.empty(n)
    for i in range(n):
        keep = np.arange(n) != i
        m_i, c_i = posterior(keep)
        exact[i] = stats.norm.cdf((z[i] - design[i] @ m_i) / np.sqrt(design[i] @ c_i @ design[i] + NOISE**2))
    x_mean, x_std = np.array([3.0, -1.0]), np.array([2.0, 0.5])
    x_raw = zx * x_std + x_mean
    baseline = LinearBaseline(("x1",), np.array([0.3]), np.array([[0.7]]))
    y_std = Standardizer(np.array([1.2]), np.array([0.4]))
    log_y = z * 0.4 + 1.2 + baseline(x_raw[:, 1:])[:, 0]
    mlp = parse_architecture("2-1")
    hyper = Hyperparameters(np.full((chains, draws), lam), np.ones((chains, draws, 1)), np.ones((chains, draws, 1)))
    fitted = FittedModel(
        bnn=BNN(mlp, likelihood=Gaussian()),
        draws=PosteriorDraws(theta.reshape(chains, draws, 3), hyper),
        x_transform=Standardizer(x_mean, x_std),
        y_transform=TargetTransform(True, y_std, baseline),
        feature_names=("x0", "x1"),
        target_name="y",
        method="nuts",
    )
    return fitted, x_raw, 10.0**log_y, exact


def test_per_draw_predictive_terms_are_those_of_the_mixtures():
    model = make_fitted(log10=True, likelihood=StudentT(df=4.0), chains=2, draws=3)
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 3.0, size=(9, 2))
    y = rng.uniform(1.0, 100.0, size=9)
    log_lik, cdf = per_draw_predictive(model, x, y)
    assert log_lik.shape == (9, 6) and cdf.shape == (9, 6, 1)
    mus, variances = numpy_forward(model, x)  # [T, n, 1] in log space; the "variance" is the t scale^2 1 / tau
    u, scale = np.log10(y)[None, :], np.sqrt(variances[..., 0])
    np.testing.assert_allclose(log_lik, stats.t.logpdf(u, 4.0, mus[..., 0], scale).T, rtol=1e-9)
    np.testing.assert_allclose(cdf[..., 0], stats.t.cdf(u, 4.0, mus[..., 0], scale).T, rtol=1e-9)
    # the mixture density is the equally weighted mean of these terms
    lpd = special.logsumexp(log_lik, axis=1) - np.log(6)
    np.testing.assert_allclose(lpd, log_predictive_density(model, x, y)["log"], rtol=1e-12)


def test_psis_loo_pit_matches_exact_leave_one_out_of_a_conjugate_model():
    fitted, x, y, exact = conjugate_model()
    loo = loo_pit_values(fitted, x, y)
    assert loo.pit.shape == (14, 1) and np.all(loo.reliable) and loo.k_threshold == pytest.approx(0.7)
    assert 0.7 < loo.relative_efficiency < 1.3  # independent draws: ESS about S
    # Monte-Carlo std of each self-normalised importance-sampling estimate
    log_lik, cdf = per_draw_predictive(fitted, x, y)
    w = np.exp(loo_log_weights(log_lik, loo.relative_efficiency)[0])
    se = np.sqrt(np.sum(w**2 * (cdf[..., 0] - loo.pit) ** 2, axis=1))
    tol = 4 * se + 1e-3
    err = np.abs(loo.pit[:, 0] - exact)
    assert np.all(err < tol), (err, se)
    # and the in-sample PIT is measurably not the leave-one-out one (the test can tell them apart)
    full = np.abs(pit_values(fitted, x, y)[:, 0] - exact)
    assert np.mean(full > tol) >= 0.5 and np.max(full) > 3 * np.max(tol), (full, tol)


def test_loo_log_weights_are_normalised_and_smooth_only_the_tail():
    rng = np.random.default_rng(2)
    log_lik = rng.normal(-1.0, 0.5, size=(5, 400))
    log_w, k = loo_log_weights(log_lik)
    assert log_w.shape == (5, 400) and k.shape == (5,) and np.all(np.isfinite(k))
    np.testing.assert_allclose(np.exp(log_w).sum(1), 1.0, rtol=1e-12)
    raw = -log_lik - special.logsumexp(-log_lik, axis=1, keepdims=True)
    body = np.argsort(raw, axis=1)[:, :300]  # PSIS smooths at most the largest 3 sqrt(S) = 60 ratios
    shift = (log_w - raw)[np.arange(5)[:, None], body]  # the body keeps the raw ratios up to normalisation
    np.testing.assert_allclose(shift, shift[:, :1] * np.ones((1, 300)), atol=1e-10)
    with pytest.raises(InputError, match="rows, draws"):
        loo_log_weights(np.zeros(10))
    with pytest.raises(DataError, match="finite"):
        loo_log_weights(np.array([[0.0, np.nan, 1.0]]))


def test_recalibrate_on_loo_train_rows_and_with_heldout_rows(tmp_path):
    fitted, x, y, _ = conjugate_model(n=40, chains=2, draws=300, seed=3)
    fitted = dataclasses.replace(fitted, data_fingerprint=fingerprint(x, y, fitted.feature_names, "y"))
    table = pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": y, "split": ["train"] * 40})
    held = pd.DataFrame({"x0": x[:25, 0] + 0.1, "x1": x[:25, 1], "y": y[:25], "split": ["val"] * 25})
    new = recalibrate(fitted, table, rows="loo")
    loo = loo_pit_values(fitted, x, y)
    assert new.calibration.split == "loo-train" and new.calibration.n == int(loo.reliable.sum())
    np.testing.assert_array_equal(new.calibration.pit[:, 0], np.sort(loo.pit[loo.reliable, 0]))
    rec = new.report.recalibration
    assert rec.loo_rows + rec.loo_dropped_high_k == 40 and rec.rows_kind == "loo"
    both = recalibrate(fitted, pd.concat([table, held]), rows="loo+heldout")
    assert both.calibration.split == "loo-train+val" and both.calibration.n == new.calibration.n + 25
    arrays = recalibrate(fitted, held[["x0", "x1"]].to_numpy(), held["y"], rows="loo+heldout", train=(x, y))
    np.testing.assert_array_equal(arrays.calibration.pit, both.calibration.pit)
    assert load_model(save_model(new, tmp_path / "m")).calibration.split == "loo-train"
    # rows other than the training rows are refused (the model records its training data's fingerprint)
    with pytest.raises(DataError, match="not the model's training rows"):
        recalibrate(fitted, held.assign(split="train"), rows="loo")


def test_loo_recalibration_bad_input_is_a_clear_error(tmp_path, capsys):
    fitted, x, y, _ = conjugate_model(n=30, chains=1, draws=200)
    with pytest.raises(InputError, match="needs MCMC draws.*'bbb'"):
        loo_pit_values(dataclasses.replace(fitted, method="bbb"), x, y)
    with pytest.raises(InputError, match="needs MCMC draws.*'ensemble'"):
        recalibrate(dataclasses.replace(fitted, method="ensemble"), None, rows="loo", train=(x, y))
    with pytest.raises(InputError, match="rows must be one of"):
        recalibrate(fitted, None, rows="train", train=(x, y))
    with pytest.raises(InputError, match="training rows"):
        recalibrate(fitted, x, y, rows="loo")
    with pytest.raises(DataError, match="no split column"):
        recalibrate(fitted, pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": y}), rows="loo")
    # CLI: one line, exit 2, nothing written
    data = tmp_path / "d.csv"
    pd.DataFrame({"x0": x[:, 0], "x1": x[:, 1], "y": y, "split": ["train"] * 30}).to_csv(data, index=False)
    vi = save_model(dataclasses.replace(fitted, method="bbb"), tmp_path / "vi.model")
    out = tmp_path / "new.model"
    code = main(["recalibrate", str(vi), str(data), "--rows", "loo", "--out", str(out)])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and "needs MCMC draws" in err[0], err
    assert not out.exists()
    good = save_model(fitted, tmp_path / "good.model")
    assert main(["recalibrate", str(good), str(data), "--rows", "loo", "--out", str(out)]) == 0
    assert "leave-one-out" in capsys.readouterr().out and load_model(out).calibration.split == "loo-train"


def test_fit_recalibrate_loo_is_checked_before_training():
    from sigmabnn.api import fit

    rng = np.random.default_rng(4)
    table = pd.DataFrame({"x": rng.normal(size=60), "y": rng.normal(size=60)})
    with pytest.raises(InputError, match="needs MCMC"):
        fit(table, "y", ["x"], method="bbb", recalibrate="loo", progress=False)
    with pytest.raises(InputError, match="recalibrate must be"):
        fit(table, "y", ["x"], recalibrate="test", progress=False)


def test_loo_pit_of_a_row_subset_is_those_rows_of_the_full_computation():
    fitted, x, y, _ = conjugate_model(n=40, chains=2, draws=300, seed=5)
    full = loo_pit_values(fitted, x, y)
    part = loo_pit_values(fitted, x, y, max_rows=15)
    keep = loo_subset(40, 15)
    assert keep.shape == (15,) and np.all(np.diff(keep) > 0) and len(set(keep)) == 15
    # each left-out row's estimate is the same whether or not the other rows' are computed (the relative
    # efficiency, estimated from the rows computed, only sets how many tail ratios PSIS smooths: the same here)
    np.testing.assert_allclose(part.pit, full.pit[keep], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(part.pareto_k, full.pareto_k[keep], rtol=1e-12)
    assert part.relative_efficiency == pytest.approx(full.relative_efficiency, rel=0.05)
    np.testing.assert_array_equal(loo_subset(40, 15), keep)  # seeded: the same subset every time
    np.testing.assert_array_equal(loo_subset(10, 15), np.arange(10))
    assert loo_pit_values(fitted, x, y, max_rows=40).pit.shape == (40, 1)
    new = recalibrate(fitted, x, y, split_column=None, rows="loo", train=(x, y), loo_max_rows=25)
    assert new.calibration.n == 25 and new.report.recalibration.loo_rows == 25
    np.testing.assert_allclose(new.calibration.pit[:, 0], np.sort(full.pit[loo_subset(40, 25), 0]), rtol=1e-12)
    with pytest.raises(InputError, match="max_rows"):
        loo_subset(40, 0)
