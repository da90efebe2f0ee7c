"""Heteroscedastic Student-t noise: likelihood, exact t-mixture predictive with a per-point scale, model file, starts.

References are independent of the code under test: scipy's t distribution.
"""

from __future__ import annotations

import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats
from test_student_t import assert_model_file_round_trip

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.fitted import FittedModel
from sigmabnn.map import MAPConfig
from sigmabnn.model import (
    BNN,
    Data,
    HeteroscedasticStudentT,
    Hyperparameters,
    noise_df,
    num_params,
    parse_architecture,
)
from sigmabnn.predict import log_predictive_density, predict
from sigmabnn.scale_head import scale_head_starts


def scipy_scale(raw, min_scale):
    return np.logaddexp(0.0, raw) + min_scale  # softplus


@pytest.mark.parametrize("targets", [1, 2])
def test_log_prob_and_variance_match_scipy(targets):
    rng = np.random.default_rng(0)
    f = rng.normal(size=(11, 2 * targets)) * 2
    y = rng.normal(size=(11, targets)) * 3
    lik = HeteroscedasticStudentT(df=3.5, min_scale=1e-3)
    got = float(lik.log_prob(jnp.asarray(f), jnp.asarray(y), jnp.asarray(123.0)))  # the precision is ignored
    mu, s = f[:, :targets], scipy_scale(f[:, targets:], 1e-3)
    assert got == pytest.approx(scipy.stats.t.logpdf(y, 3.5, loc=mu, scale=s).sum(), rel=1e-12)
    np.testing.assert_allclose(np.asarray(lik.mean(jnp.asarray(f))), mu)
    np.testing.assert_allclose(np.asarray(lik.scale(jnp.asarray(f))), s, rtol=1e-12)
    var = np.asarray(lik.aleatoric_variance(jnp.asarray(f), jnp.asarray(1.0)))
    np.testing.assert_allclose(var, scipy.stats.t.var(3.5, scale=s), rtol=1e-12)
    assert lik.output_dim(targets) == 2 * targets and noise_df(lik) == 3.5


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"df": 2.0}, "degrees of freedom"),
        ({"df": 1.0}, "degrees of freedom"),
        ({"df": float("inf")}, "degrees of freedom"),
        ({"df": float("nan")}, "degrees of freedom"),
        ({"min_scale": 0.0}, "min_scale"),
        ({"min_scale": -1e-3}, "min_scale"),
    ],
)
def test_invalid_settings_raise(kwargs, message):
    with pytest.raises(ValueError, match=message):
        HeteroscedasticStudentT(**kwargs)


# Two 1-2 networks: outputs (mean, raw) = z (w_mu, w_raw) + (b_mu, b_raw), flat (w_mu, w_raw, b_mu, b_raw).
POSITIONS = np.array([[[0.5, 0.8, 0.1, -1.0], [-0.2, -0.4, 0.3, -0.5]]])


def hetero_fitted(df=3.0, log10=False):
    lik = HeteroscedasticStudentT(df=df)
    hyper = Hyperparameters(np.ones((1, 2)), np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    return FittedModel(
        bnn=BNN(parse_architecture("1-2"), likelihood=lik),
        draws=PosteriorDraws(POSITIONS, hyper),
        x_transform=Standardizer(np.zeros(1), np.ones(1)),
        y_transform=TargetTransform.fit(np.array([[1.0], [3.0]]), log10=log10),
        feature_names=("x",),
        target_name="y",
    )


def per_draw(fitted, x):
    """Log-space location and scale ``[T, n]`` of every network's t, computed with NumPy."""
    m, s = fitted.y_transform.mean[0], fitted.y_transform.scale[0]
    lik = fitted.bnn.likelihood
    loc = np.array([(w * x + b) * s + m for w, _, b, _ in POSITIONS[0]])
    scale = np.array([scipy_scale(v * x + c, lik.min_scale) * s for _, v, _, c in POSITIONS[0]])
    return loc, scale


@pytest.mark.parametrize("log10", [False, True])
def test_predictive_quantiles_density_and_moments_match_scipy(log10):
    f = hetero_fitted(log10=log10)
    df = f.bnn.likelihood.df
    x = np.array([-1.5, 0.0, 2.0])
    loc, scale = per_draw(f, x)
    assert np.ptp(scale[0]) > 0.5 * scale[0].min()  # the scale really changes with x
    s = 20000
    p = predict(f, x[:, None], levels=(0.5, 0.9, 0.99), num_noise_samples=s)
    lp = p.log_space if log10 else p
    for level in (0.5, 0.9, 0.99):
        for bound, q in ((lp.lower[level], (1 - level) / 2), (lp.upper[level], (1 + level) / 2)):
            cdf = np.mean(scipy.stats.t.cdf(bound[:, 0], df, loc=loc, scale=scale), axis=0)
            assert np.all(np.abs(cdf - q) < 4.5 * math.sqrt(q * (1 - q) / s)), (level, cdf, q)
    var = scipy.stats.t.var(df, scale=scale)  # [T, n]
    np.testing.assert_allclose(lp.aleatoric_std[:, 0] ** 2, var.mean(0), rtol=1e-10)
    np.testing.assert_allclose(lp.epistemic_std[:, 0] ** 2, loc.var(0), rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(lp.std[:, 0] ** 2, var.mean(0) + loc.var(0), rtol=1e-10)
    np.testing.assert_allclose(lp.mean[:, 0], loc.mean(0), rtol=1e-12)
    y = np.array([1.3, 2.9, 0.7])
    lpd = log_predictive_density(f, x[:, None], y)
    yl = np.log10(y) if log10 else y
    dens = np.mean(scipy.stats.t.pdf(yl, df, loc=loc, scale=scale), axis=0)
    np.testing.assert_allclose(lpd["log"], np.log(dens), rtol=1e-10)
    if log10:
        np.testing.assert_allclose(lpd["orig"], np.log(dens) - np.log(y * math.log(10)), rtol=1e-10)
        # original space: quantiles transform with 10**u (interpolated between transformed order statistics)
        np.testing.assert_allclose(p.upper[0.9], 10.0 ** lp.upper[0.9], rtol=1e-3)


def test_model_file_round_trip_and_bad_header(tmp_path):
    from sigmabnn.io.model_file import load_model

    path = tmp_path / "h.model"
    assert_model_file_round_trip(hetero_fitted(df=5.5, log10=True), path)
    assert isinstance(load_model(path).bnn.likelihood, HeteroscedasticStudentT)
    header = path / "model.json"
    spec = json.loads(header.read_text())
    spec["network"]["likelihood"]["fields"]["df"] = 2.0
    header.write_text(json.dumps(spec))
    with pytest.raises(Exception, match="degrees of freedom") as err:
        load_model(path)
    assert "\n" not in str(err.value)


def test_scale_head_starts_begin_at_the_mean_fit_and_the_residual_scale():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (100, 1))
    y = np.sin(2 * x) + 0.1 * rng.standard_t(4.0, (100, 1))
    data = Data(jnp.asarray(x), jnp.asarray(y))
    lik = HeteroscedasticStudentT(df=4.0)
    bnn = BNN(parse_architecture("1-8-2"), likelihood=lik)
    starts, s0 = scale_head_starts(jax.random.key(0), bnn, data, MAPConfig(num_steps=300, patience=None), 2)
    assert starts.shape == (2, num_params(bnn.mlp))
    out = np.stack([np.asarray(bnn.apply(bnn.unflatten(p), data.x)) for p in starts])  # [2, n, 2]
    np.testing.assert_allclose(np.asarray(lik.scale(jnp.asarray(out))), float(s0), rtol=1e-9)  # constant scale
    r = (y[None] - out[..., :1]).reshape(-1)
    assert np.sqrt(np.mean(np.square(y - np.sin(2 * x)))) < 0.2  # sanity of the data
    assert np.sqrt(np.mean(r**2)) < 0.2  # the mean network fitted the curve
    # s0 is the t maximum-likelihood scale of the pooled residuals (location 0, df fixed)
    _, _, scale = scipy.stats.t.fit(r, f0=4.0, floc=0.0)
    assert float(s0) == pytest.approx(scale, rel=1e-3)
