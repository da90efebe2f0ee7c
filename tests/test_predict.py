"""Predictive distribution: brute-force agreement, log-normal back-transform, chunking, covariance."""

from __future__ import annotations

import dataclasses
import math

import jax
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sigmabnn.calibration import Calibration
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.model import BNN, Categorical, Gaussian, Hyperparameters, num_params, parse_architecture
from sigmabnn.predict import engine, log_predictive_density, per_draw_predictive, predict, predictive_cdf, score
from sigmabnn.predict.device import network_groups
from sigmabnn.predict.engine import Request, packed_chunk_function
from sigmabnn.predict.sampling import default_num_samples

LN10 = math.log(10.0)


def make_fitted(arch="2-5-1", chains=2, draws=4, log10=False, seed=0, positions=None, noise=None, t=1, **kw):
    rng = np.random.default_rng(seed)
    mlp = parse_architecture(arch)
    d = num_params(mlp)
    L = mlp.num_layers
    pos = rng.normal(size=(chains, draws, d)) if positions is None else positions
    noise = rng.uniform(5.0, 50.0, size=(chains, draws)) if noise is None else noise
    hyper = Hyperparameters(noise, np.ones((chains, draws, L)), np.ones((chains, draws, L)))
    y_train = rng.uniform(1.0, 100.0, size=(30, t))
    p = mlp.widths[0]
    return FittedModel(
        bnn=BNN(mlp, likelihood=kw.pop("likelihood", Gaussian())),
        draws=PosteriorDraws(pos, hyper),
        x_transform=Standardizer.fit(rng.normal(2.0, 3.0, size=(30, p))),
        y_transform=TargetTransform.fit(y_train, log10=log10),
        feature_names=kw.pop("feature_names", tuple(f"x{i}" for i in range(p))),
        target_name="y",
        **kw,
    )


def numpy_forward(fitted, x):
    """Brute force: per-network means and noise variances in log space, [T, n, t]."""
    mlp = fitted.bnn.mlp
    pos = np.asarray(fitted.draws.positions).reshape(fitted.num_networks, -1)
    prec = np.asarray(fitted.draws.hyper.noise_precision).reshape(-1)
    z = (x - fitted.x_transform.mean) / fitted.x_transform.std
    mus, variances = [], []
    for theta, lam in zip(pos, prec):
        h, k = z, 0
        for i, (n_in, n_out) in enumerate(zip(mlp.widths[:-1], mlp.widths[1:])):
            w = theta[k : k + n_in * n_out].reshape(n_in, n_out)
            k += n_in * n_out
            b = theta[k : k + n_out]
            k += n_out
            h = h @ w + b
            if i < mlp.num_layers - 1:
                h = np.tanh(h)
        mus.append(h * fitted.y_transform.scale + fitted.y_transform.mean)
        variances.append(np.full_like(h, 1.0 / lam) * fitted.y_transform.scale**2)
    return np.array(mus), np.array(variances)


@pytest.mark.parametrize("moments_only", [False, True])  # moments only: accumulated inside the network scan
@pytest.mark.parametrize(
    ("log10", "chains", "draws"),
    # 101 networks run as 11 groups of 10, the last padded with 9 copies that must not count
    [(False, 2, 4), (True, 2, 4), (True, 1, 101)],
)
def test_moments_match_brute_force(log10, chains, draws, moments_only):
    f = make_fitted(log10=log10, chains=chains, draws=draws)
    assert network_groups(f.num_networks) == ((11, 10) if draws == 101 else (1, chains * draws))
    x = np.random.default_rng(1).normal(2.0, 3.0, size=(7, 2))
    p = predict(f, x, levels=()) if moments_only else predict(f, x)
    mu, var = numpy_forward(f, x)
    lp = p.log_space if log10 else p
    np.testing.assert_allclose(lp.mean, mu.mean(0), rtol=1e-10)
    np.testing.assert_allclose(lp.epistemic_std, mu.std(0), rtol=1e-10)
    np.testing.assert_allclose(lp.aleatoric_std, np.sqrt(var.mean(0)), rtol=1e-10)
    np.testing.assert_allclose(lp.std, np.sqrt(mu.var(0) + var.mean(0)), rtol=1e-10)
    assert p.mean.shape == (7, 1)
    if moments_only:
        assert p.lower == {} and (p.log_space is None) == (not log10)
        return
    assert p.lower[0.95].shape == (7, 1)
    if log10:
        # exact moments of the log-normal mixture
        m = np.exp(LN10 * mu + 0.5 * LN10**2 * var)
        v = (np.exp(LN10**2 * var) - 1.0) * m**2
        np.testing.assert_allclose(p.mean, m.mean(0), rtol=1e-10)
        np.testing.assert_allclose(p.epistemic_std, m.std(0), rtol=1e-10)
        np.testing.assert_allclose(p.aleatoric_std, np.sqrt(v.mean(0)), rtol=1e-10)
        # same samples, transformed: equal up to the linear interpolation between order statistics
        np.testing.assert_allclose(p.lower[0.68], 10.0 ** p.log_space.lower[0.68], rtol=1e-4)
    else:
        assert p.log_space is None
    # intervals are nested and contain the median region
    assert np.all(p.lower[0.95] < p.lower[0.68]) and np.all(p.upper[0.68] < p.upper[0.95])


def test_samples_agree_with_moments_within_mc_error():
    f = make_fitted(log10=True, chains=1, draws=3)
    x = np.zeros((3, 2))
    s = 30_000
    p = predict(f, x, num_noise_samples=s, return_samples=True)
    assert p.samples.shape == (s, 3, 1) and p.log_space.samples.shape == (s, 3, 1)
    se = p.log_space.std / math.sqrt(s)
    np.testing.assert_array_less(np.abs(p.log_space.samples.mean(0) - p.log_space.mean), 5 * se)
    np.testing.assert_allclose(p.log_space.samples.std(0), p.log_space.std, rtol=0.03)
    np.testing.assert_allclose(p.samples, 10.0**p.log_space.samples, rtol=1e-12)


def test_lognormal_intervals_are_quantiles_not_gaussian():
    # one network with a constant output b: log10 y ~ N(b * sc + m, sc^2 / lam) exactly
    b, lam = 0.7, 4.0
    pos = np.array([[[0.0, b]]])  # arch 1-1: kernel [1, 1], bias [1]
    f = make_fitted(arch="1-1", chains=1, draws=1, log10=True, positions=pos, noise=np.array([[lam]]))
    sc, m = f.y_transform.scale[0], f.y_transform.mean[0]
    mu, sigma = b * sc + m, sc / math.sqrt(lam)
    s = 40_000
    p = predict(f, np.array([[0.3], [-1.0]]), levels=(0.68, 0.95), num_noise_samples=s)
    for level in (0.68, 0.95):
        zq = stats.norm.ppf(0.5 + level / 2)
        tol = 5 * math.sqrt((0.5 - level / 2) * (0.5 + level / 2) / s) / stats.norm.pdf(zq) * sigma
        np.testing.assert_allclose(p.log_space.lower[level], mu - zq * sigma, atol=tol)
        np.testing.assert_allclose(p.log_space.upper[level], mu + zq * sigma, atol=tol)
        # original space: quantiles of 10**U, far from mean +- z std of the log-normal
        np.testing.assert_allclose(np.log10(p.lower[level]), mu - zq * sigma, atol=tol)
        np.testing.assert_allclose(np.log10(p.upper[level]), mu + zq * sigma, atol=tol)
    exact_mean = math.exp(LN10 * mu + 0.5 * (LN10 * sigma) ** 2)
    exact_std = exact_mean * math.sqrt(math.expm1((LN10 * sigma) ** 2))
    np.testing.assert_allclose(p.mean, exact_mean, rtol=1e-12)
    np.testing.assert_allclose(p.std, exact_std, rtol=1e-12)
    np.testing.assert_allclose(p.epistemic_std, 0.0, atol=1e-12 * exact_mean)
    assert abs((p.upper[0.95][0, 0] - p.mean[0, 0]) - (p.mean[0, 0] - p.lower[0.95][0, 0])) > 0.1 * exact_std


@pytest.mark.parametrize("threads", [1, 3])
def test_chunking_gives_identical_results(threads, monkeypatch):
    f = make_fitted(log10=True)
    x = np.random.default_rng(2).normal(size=(37, 2))
    key = jax.random.key(7)
    one = predict(f, x, rng_key=key, covariance=True)
    monkeypatch.setattr(engine, "PREDICT_THREADS", threads)  # 5 chunks: in order, in 1 or 3 threads
    many = predict(f, x, rng_key=key, covariance=True, chunk_size=8, return_samples=True)
    np.testing.assert_array_equal(
        many.log_space.samples[:, :8],
        predict(f, x[:8], rng_key=key, return_samples=True, num_noise_samples=many.samples.shape[0]).log_space.samples,
    )
    for a, b in [(one, many), (one.log_space, many.log_space)]:
        for name in ("mean", "std", "epistemic_std", "aleatoric_std", "covariance"):
            np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-300)
        for level in a.levels:
            np.testing.assert_allclose(a.lower[level], b.lower[level], rtol=1e-12)
            np.testing.assert_allclose(a.upper[level], b.upper[level], rtol=1e-12)
    other = predict(f, x, rng_key=jax.random.key(8))
    assert not np.allclose(other.lower[0.95], one.lower[0.95], rtol=1e-12)  # the key matters


def test_no_recompilation_for_same_chunk():
    f = make_fitted(seed=3)
    packed_chunk_function.cache_clear()  # a fresh function: other tests compiled other chunk sizes
    request = Request(num_samples=default_num_samples(f.num_networks, None))
    fn = packed_chunk_function(f.bnn, f.num_networks, request)
    predict(f, np.zeros((10, 2)), levels=0.68)
    size = fn.jitted._cache_size()
    predict(f, np.ones((12, 2)), levels=0.68)  # pads to the same chunk
    predict(make_fitted(seed=4), np.ones((9, 2)), levels=0.68)  # other draws, same shapes
    # one compilation, although the 10 points ran as two chunks in two threads when there are two cores
    assert fn.jitted._cache_size() == size == 1


def test_multi_output_covariance_matches_brute_force():
    f = make_fitted(arch="2-4-2", t=2)
    x = np.random.default_rng(5).normal(size=(6, 2))
    p = predict(f, x, covariance=True)
    mu, var = numpy_forward(f, x)
    mean = mu.mean(0)
    cov = np.einsum("tni,tnj->nij", mu - mean, mu - mean) / mu.shape[0]
    cov += np.stack([np.diag(v) for v in var.mean(0)])
    assert p.covariance.shape == (6, 2, 2)
    np.testing.assert_allclose(p.covariance, cov, rtol=1e-10)
    np.testing.assert_allclose(np.diagonal(p.covariance, axis1=1, axis2=2), p.std**2, rtol=1e-10)
    assert predict(f, x).covariance is None


def test_dataframe_input_recomputes_derived_features():
    f = make_fitted(feature_names=("a", "s"), derived=(("s", "a*b"),))
    df = pd.DataFrame({"b": [1.0, 2.0, 3.0], "a": [0.5, -1.0, 2.0], "s": [9.0, 9.0, 9.0]})
    from_df = predict(f, df)
    from_matrix = predict(f, np.column_stack([df.a, df.a * df.b]))
    np.testing.assert_array_equal(from_df.mean, from_matrix.mean)
    with pytest.raises(InputError, match="'b'"):
        predict(f, df.drop(columns="b"))


@pytest.mark.parametrize("draws", [4, 101])
def test_log_predictive_density_matches_mixture(draws):
    f = make_fitted(log10=True, chains=1, draws=draws)
    x = np.random.default_rng(6).normal(size=(5, 2))
    y = 10.0 ** np.random.default_rng(7).normal(1.0, 0.3, size=5)
    mu, var = numpy_forward(f, x)
    dens = stats.norm.pdf(np.log10(y)[None, :, None], mu, np.sqrt(var)).mean(0)[:, 0]
    out = log_predictive_density(f, x, y)
    np.testing.assert_allclose(out["log"], np.log(dens), rtol=1e-10)
    np.testing.assert_allclose(out["orig"], np.log(dens / (y * LN10)), rtol=1e-10)


def test_bad_inputs():
    f = make_fitted()
    with pytest.raises(DataError, match=r"shape \[n, 2\]"):
        predict(f, np.zeros((3, 3)))
    with pytest.raises(DataError, match=r"^1 input row has missing .* \(first: data row 2\)$"):
        predict(f, np.array([[0.0, 1.0], [np.nan, 0.0]]))
    with pytest.raises(DataError, match=r"^2 input rows have missing .* \(first: data row 1\)$"):
        predict(f, np.array([[np.inf, 1.0], [np.nan, 0.0]]))
    with pytest.raises(InputError, match="strictly between 0 and 1"):
        predict(f, np.zeros((2, 2)), levels=(0.5, 1.0))
    with pytest.raises(InputError, match="categorical"):
        predict(make_fitted(arch="2-3-2", likelihood=Categorical(2)), np.zeros((2, 2)))


def test_target_baseline_shifts_every_log_space_quantity_exactly(tmp_path):
    from dataclasses import replace

    from sigmabnn.data.transforms import LinearBaseline
    from sigmabnn.io.model_file import load_model, save_model

    f = make_fitted(log10=True)
    b0, b1 = 0.7, -0.3
    tt = f.y_transform
    shifted = replace(
        f,
        y_transform=TargetTransform(
            tt.log10, tt.standardizer, LinearBaseline(("x1",), np.array([b0]), np.array([[b1]]))
        ),
    )
    x = np.random.default_rng(8).normal(2.0, 3.0, size=(7, 2))
    offset = b0 + b1 * x[:, 1:2]
    a, b = predict(f, x).log_space, predict(shifted, x).log_space
    np.testing.assert_allclose(b.mean, a.mean + offset, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(b.std, a.std, rtol=1e-12)
    for level in a.levels:
        np.testing.assert_allclose(b.lower[level], a.lower[level] + offset, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(b.upper[level], a.upper[level] + offset, rtol=1e-12, atol=1e-12)
    y = 10.0 ** np.random.default_rng(9).normal(1.0, 0.3, size=7)
    lpd_a = log_predictive_density(f, x, y)["log"]
    lpd_b = log_predictive_density(shifted, x, y * 10.0 ** offset[:, 0])["log"]
    np.testing.assert_allclose(lpd_b, lpd_a, rtol=1e-12)
    save_model(shifted, tmp_path / "m.model")
    loaded = load_model(tmp_path / "m.model")
    np.testing.assert_array_equal(predict(loaded, x).mean, predict(shifted, x).mean)
    assert loaded.y_transform.baseline.features == ("x1",)


@pytest.mark.parametrize(("log10", "draws"), [(True, 101), (False, 4)])
def test_score_matches_the_closed_form_mixture(log10, draws):
    """score's log densities and PIT are those of the mixture of the networks' Gaussians (brute force),
    its prediction is predict's, bit for bit, and the separate score functions agree with it."""
    f = make_fitted(log10=log10, chains=1, draws=draws)
    x = np.random.default_rng(8).normal(size=(9, 2))
    y = 10.0 ** np.random.default_rng(9).normal(1.0, 0.3, size=9)
    u = np.log10(y) if log10 else y
    mu, var = numpy_forward(f, x)  # [T, n, 1], log space
    dens = stats.norm.pdf(u[None, :, None], mu, np.sqrt(var)).mean(0)[:, 0]
    cdf = stats.norm.cdf(u[None, :, None], mu, np.sqrt(var)).mean(0)
    key = jax.random.key(2)
    s = score(f, x, y, rng_key=key)
    np.testing.assert_allclose(s.log_space_log_density, np.log(dens), rtol=1e-10)
    np.testing.assert_allclose(s.log_density, np.log(dens / (y * LN10)) if log10 else np.log(dens), rtol=1e-10)
    np.testing.assert_allclose(s.pit, cdf, rtol=1e-10)
    np.testing.assert_array_equal(s.targets, y[:, None])
    pred = predict(f, x, rng_key=key)
    for a, b in [(s.prediction, pred)] + ([(s.prediction.log_space, pred.log_space)] if log10 else []):
        for name in ("mean", "std", "epistemic_std", "aleatoric_std"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        for level in b.levels:
            np.testing.assert_array_equal(a.lower[level], b.lower[level])
            np.testing.assert_array_equal(a.upper[level], b.upper[level])
    # the same numbers from the functions computing one kind of score alone
    np.testing.assert_allclose(s.pit, predictive_cdf(f, x, y), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s.log_space_log_density, log_predictive_density(f, x, y)["log"], rtol=1e-12)
    log_density, network_cdf = per_draw_predictive(f, x, y)
    np.testing.assert_allclose(np.log(np.exp(log_density).mean(1)), s.log_space_log_density, rtol=1e-10)
    np.testing.assert_allclose(network_cdf.mean(1), s.pit, rtol=1e-12)


def test_score_checks_its_targets_once():
    f = make_fitted(log10=True)
    x = np.zeros((3, 2))
    with pytest.raises(DataError, match="3 input rows but 2 targets"):
        score(f, x, [1.0, 2.0])
    with pytest.raises(DataError, match="1 target values are missing"):
        score(f, x, [1.0, np.nan, 2.0])
    with pytest.raises(DataError, match="log target needs positive values; 1 are not"):
        predictive_cdf(f, x, [1.0, -1.0, 2.0])
    with pytest.raises(DataError, match="targets must have 1 columns, got 2"):
        log_predictive_density(f, x, np.ones((3, 2)))
    with pytest.raises(DataError, match="no input rows"):
        score(f, x[:0], [])
    table = pd.DataFrame({"x0": [0.0, 1.0], "x1": [1.0, 2.0], "y": [3.0, 4.0]})
    np.testing.assert_array_equal(score(f, table, table).pit, predictive_cdf(f, table[["x0", "x1"]], table["y"]))
    # no rows: the functions computing one kind of score return empty arrays
    assert predictive_cdf(f, x[:0], []).shape == (0, 1)
    assert [a.shape for a in per_draw_predictive(f, x[:0], [])] == [(0, f.num_networks), (0, f.num_networks, 1)]


def test_one_point_path_gives_the_same_moments():
    f = make_fitted(log10=True, chains=1, draws=101)  # 11 padded groups; one point runs ungrouped
    x = np.random.default_rng(10).normal(size=(5, 2))
    many = predict(f, x, levels=())
    for i in (0, 4):
        one = predict(f, x[i : i + 1], levels=())
        for name in ("mean", "epistemic_std", "aleatoric_std"):
            np.testing.assert_allclose(getattr(one, name), getattr(many, name)[i : i + 1], rtol=1e-12)


def test_streamed_moments_keep_a_small_spread_on_a_large_offset():
    """Moments accumulated group by group (merged means and squared deviations) keep the epistemic
    variance of outputs near 1e8 whose spread is O(1); raw power sums would lose it entirely."""
    f = make_fitted(chains=1, draws=101)  # 11 groups
    f = dataclasses.replace(f, y_transform=TargetTransform(False, Standardizer(np.array([1e8]), np.array([0.5]))))
    x = np.random.default_rng(11).normal(size=(6, 2))
    p = predict(f, x, levels=())
    mu, var = numpy_forward(f, x)
    np.testing.assert_allclose(p.mean, mu.mean(0), rtol=1e-14)
    np.testing.assert_allclose(p.epistemic_std, mu.std(0), rtol=1e-6)
    np.testing.assert_allclose(p.aleatoric_std, np.sqrt(var.mean(0)), rtol=1e-12)


def test_prediction_columns_and_frame_name_every_summary_in_the_cli_order():
    """``Prediction.to_frame``: the columns ``sigmabnn predict`` writes, the values those of the arrays."""
    f = make_fitted(log10=True)
    x = np.random.default_rng(1).normal(size=(6, 2))
    p = predict(f, x, levels=(0.9, 0.5))
    frame = p.to_frame(index=pd.RangeIndex(10, 16))
    names = ["mean", "std", "epistemic_std", "aleatoric_std", "lower_0.9", "upper_0.9", "lower_0.5", "upper_0.5"]
    assert list(frame.columns) == names + [f"log10_{n}" for n in names]
    assert list(frame.index) == list(range(10, 16))
    np.testing.assert_array_equal(frame["upper_0.5"], p.upper[0.5][:, 0])
    np.testing.assert_array_equal(frame["log10_std"], p.log_space.std[:, 0])
    assert list(p.columns()) == names + [f"log10_{n}" for n in names]


def test_a_fitted_models_repr_is_one_short_line():
    """Printing a model in a notebook names it; it does not dump the draws."""
    f = make_fitted(log10=True, chains=3, draws=7)
    text = repr(f)
    assert text == (
        "FittedModel(target='y' (log10), features=['x0', 'x1'], method='nuts', draws=3x7, network=2-5-1 gaussian "
        f"{f.bnn.dtype})"
    )
    calibrated = dataclasses.replace(f, calibration=Calibration(np.linspace(0.01, 0.99, 30), "val"))
    assert repr(calibrated).endswith(", calibrated on 30 rows (val))") and "\n" not in repr(calibrated)
