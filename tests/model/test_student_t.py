"""Student-t noise: likelihood, Gibbs conditionals of the latent weights, sampler, prediction, model file.

References are independent of the code under test: scipy's t distribution, and numerical
quadrature of the exact posterior of a location-scale t model.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.fitted import FittedModel
from sigmabnn.model import BNN, Data, GaussianPrior, Hyperparameters, StudentT, noise_df, parse_architecture
from sigmabnn.predict import log_predictive_density, predict
from sigmabnn.train.gibbs import HyperPrior, initial_noise_precision, latent_weight_conditional, make_gibbs_fn


def test_log_prob_matches_scipy_and_validates_df():
    rng = np.random.default_rng(0)
    f, y = rng.normal(size=(9, 1)), rng.normal(size=(9, 1)) * 3
    lik = StudentT(df=3.5)
    tau = 4.0
    got = float(lik.log_prob(jnp.asarray(f), jnp.asarray(y), jnp.asarray(tau)))
    want = scipy.stats.t.logpdf(y, 3.5, loc=f, scale=1 / math.sqrt(tau)).sum()
    assert got == pytest.approx(want, rel=1e-12)
    var = np.asarray(lik.aleatoric_variance(jnp.asarray(f), jnp.asarray(tau)))
    np.testing.assert_allclose(var, scipy.stats.t.var(3.5, scale=0.5))
    assert noise_df(lik) == 3.5 and noise_df(BNN(parse_architecture("1-1")).likelihood) is None
    for bad in (2.0, 1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="degrees of freedom"):
            StudentT(df=bad)


def test_latent_weight_conditional_matches_quadrature():
    """Draws from the conditional of w vs moments of prior x likelihood integrated numerically."""
    df, tau = 3.0, 2.5
    r = jnp.asarray([[0.0], [0.4], [1.7], [6.0]])
    shape, rate = latent_weight_conditional(df, jnp.asarray(tau), r)
    m = 40000
    draws = np.asarray(jax.random.gamma(jax.random.PRNGKey(0), shape, (m,) + r.shape) / rate)  # [m, n, 1]
    grid = np.linspace(1e-6, 12.0, 200001)
    for i, ri in enumerate(np.asarray(r)[:, 0]):
        # Gamma(w; df/2, rate df/2) prior times N(r; 0, 1 / (tau w)), unnormalised, on a grid
        logp = scipy.stats.gamma.logpdf(grid, df / 2, scale=2 / df) + scipy.stats.norm.logpdf(
            ri, scale=1 / np.sqrt(tau * grid)
        )
        p = np.exp(logp - logp.max())
        p /= np.trapezoid(p, grid)
        mean = np.trapezoid(grid * p, grid)
        var = np.trapezoid((grid - mean) ** 2 * p, grid)
        mu4 = np.trapezoid((grid - mean) ** 4 * p, grid)
        d = draws[:, i, 0]
        assert abs(d.mean() - mean) < 4.5 * math.sqrt(var / m), (ri, d.mean(), mean)
        assert abs(d.var() - var) < 4.5 * math.sqrt((mu4 - var**2) / m), (ri, d.var(), var)


def test_latent_weight_test_has_power():
    """A conditional with the shape of the Gaussian-noise case (df/2 + 1/2 -> df/2) is rejected."""
    df, tau, ri = 3.0, 2.5, 1.7
    m = 40000
    wrong = np.asarray(jax.random.gamma(jax.random.PRNGKey(1), df / 2, (m,)) / ((df + tau * ri**2) / 2))
    mean = (df + 1) / (df + tau * ri**2)  # the exact conditional mean
    sd = math.sqrt((df + 1) / 2) / ((df + tau * ri**2) / 2)
    assert abs(wrong.mean() - mean) > 4.5 * sd / math.sqrt(m)


def location_problem(n=15, seed=3):
    """A 1-1 network at x = 0 is a location model: f = b (the kernel has only its prior)."""
    rng = np.random.default_rng(seed)
    y = 0.7 + 0.5 * rng.standard_t(3.0, size=n)
    y[:2] += np.array([4.0, -3.0])  # outliers
    bnn = BNN(parse_architecture("1-1"), GaussianPrior(1.0, 0.5), StudentT(df=3.0, precision=1.0, learn_precision=True))
    return bnn, Data(jnp.zeros((n, 1)), jnp.asarray(y[:, None]))


HP = HyperPrior(noise_shape=2.0, noise_rate=1.0)


def exact_location_posterior(y, df=3.0, alpha_b=0.5, hp=HP):
    """Posterior means and variances of b and tau by quadrature on a 2-d grid."""
    b = np.linspace(-3.0, 4.0, 1401)[:, None]
    tau = np.exp(np.linspace(np.log(0.02), np.log(40.0), 1200))[None, :]
    logp = scipy.stats.norm.logpdf(b, scale=1 / np.sqrt(alpha_b)) + scipy.stats.gamma.logpdf(
        tau, hp.noise_shape, scale=1 / hp.noise_rate
    )
    for yi in y:
        logp = logp + scipy.stats.t.logpdf(yi, df, loc=b, scale=1 / np.sqrt(tau))
    w = np.exp(logp - logp.max()) * tau  # log-spaced tau: d tau = tau d log tau
    assert w[0].max() < 1e-10 * w.max() and w[-1].max() < 1e-10 * w.max()
    assert w[:, 0].max() < 1e-10 * w.max() and w[:, -1].max() < 1e-10 * w.max()
    w /= w.sum()
    out = {}
    for name, v in (("b", b + 0 * tau), ("tau", tau + 0 * b)):
        mean = float(np.sum(w * v))
        out[name] = (mean, float(np.sum(w * (v - mean) ** 2)))
    return out


@pytest.mark.slow
def test_nuts_with_latent_weight_gibbs_matches_quadrature():
    """Runner: NUTS on the t likelihood, Gibbs on (w, tau); b and tau match the exact posterior."""
    from sigmabnn.mcmc.registry import make_algorithm
    from sigmabnn.mcmc.run import RunConfig, sample
    from sigmabnn.model import make_logdensity
    from train.test_gibbs import assert_mc_close

    bnn, data = location_problem()
    exact = exact_location_posterior(np.asarray(data.y)[:, 0])
    gibbs = make_gibbs_fn(bnn, data, HP, learn_noise=True, learn_prior=False)
    result = sample(
        jax.random.PRNGKey(11),
        make_algorithm("nuts"),
        make_logdensity(bnn, data),
        jnp.zeros((4, 2)),
        bnn.default_hyperparameters(),
        RunConfig(num_warmup=200, num_samples=1000),
        gibbs_fn=gibbs,
        progress=False,
    )
    taus = np.asarray(result.hyper.noise_precision)
    bs = np.asarray(result.positions)[..., 1]
    assert_mc_close(bs, *exact["b"])
    assert_mc_close(taus, *exact["tau"])


def test_initial_noise_precision_is_the_t_maximum_likelihood_scale():
    bnn, data = location_problem(n=200, seed=5)
    position = jnp.asarray([[0.0, 0.7]])
    tau = float(initial_noise_precision(bnn, data, HP, position, num_iterations=200))
    r = np.asarray(data.y)[:, 0] - 0.7
    _, _, scale = scipy.stats.t.fit(r, f0=3.0, floc=0.0)
    assert 1 / math.sqrt(tau) == pytest.approx(scale, rel=1e-3)


def t_fitted(df=3.0, log10=False, noise=(4.0, 9.0)):
    """Two 1-1 networks with known outputs: f = w z + b, noise precisions ``noise``."""
    pos = np.array([[[0.5, 0.1], [-0.2, 0.3]]])  # [chain, draw, (w, b)]
    hyper = Hyperparameters(np.array([noise]), np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    return FittedModel(
        bnn=BNN(parse_architecture("1-1"), likelihood=StudentT(df=df, learn_precision=True)),
        draws=PosteriorDraws(pos, hyper),
        x_transform=Standardizer(np.zeros(1), np.ones(1)),
        y_transform=TargetTransform.fit(np.array([[1.0], [3.0]]), log10=log10),
        feature_names=("x",),
        target_name="y",
    )


def mixture_cdf(fitted, x, yq):
    """CDF of the equal-weight t mixture at log-space values ``yq``, with scipy."""
    pos = np.asarray(fitted.draws.positions)[0]
    tau = np.asarray(fitted.draws.hyper.noise_precision)[0]
    m, s = fitted.y_transform.mean[0], fitted.y_transform.scale[0]
    df = fitted.bnn.likelihood.df
    return np.mean(
        [scipy.stats.t.cdf(yq, df, loc=(w * x + b) * s + m, scale=s / np.sqrt(t)) for (w, b), t in zip(pos, tau)],
        axis=0,
    )


@pytest.mark.parametrize("log10", [False, True])
def test_predictive_quantiles_and_density_match_scipy(log10):
    f = t_fitted(log10=log10)
    x = np.array([[0.0], [1.5]])
    p = predict(f, x, levels=(0.5, 0.9, 0.99), num_noise_samples=50000)
    lp = p.log_space if log10 else p
    for level in (0.5, 0.9, 0.99):
        for bound, q in ((lp.lower[level], (1 - level) / 2), (lp.upper[level], (1 + level) / 2)):
            # the empirical CDF of S samples at the estimated quantile is within binomial error of q
            got = mixture_cdf(f, x[:, 0], bound[:, 0])
            assert np.all(np.abs(got - q) < 4.5 * math.sqrt(q * (1 - q) / 50000)), (level, got, q)
    df = f.bnn.likelihood.df
    np.testing.assert_allclose(
        lp.aleatoric_std[:, 0] ** 2, np.mean(df / (df - 2) / np.array([4.0, 9.0])) * f.y_transform.scale[0] ** 2
    )
    y = np.array([1.3, 2.9])
    lpd = log_predictive_density(f, x, y)
    pos, tau = np.asarray(f.draws.positions)[0], np.array([4.0, 9.0])
    m, s = f.y_transform.mean[0], f.y_transform.scale[0]
    yl = np.log10(y) if log10 else y
    dens = np.mean(
        [scipy.stats.t.pdf(yl, df, loc=(w * x[:, 0] + b) * s + m, scale=s / np.sqrt(t)) for (w, b), t in zip(pos, tau)],
        axis=0,
    )
    np.testing.assert_allclose(lpd["log"], np.log(dens), rtol=1e-10)
    if log10:
        np.testing.assert_allclose(lpd["orig"], np.log(dens) - np.log(y * math.log(10)), rtol=1e-10)


def test_model_file_round_trip(tmp_path):
    assert_model_file_round_trip(t_fitted(df=5.5, log10=True), tmp_path / "t.model")


def assert_model_file_round_trip(f: FittedModel, path) -> None:
    """Saved and loaded, ``f`` has the same likelihood (class and fields) and the same predictions."""
    from sigmabnn.io.model_file import load_model, save_model

    g = load_model(save_model(f, path))
    assert g.bnn.likelihood == f.bnn.likelihood and type(g.bnn.likelihood) is type(f.bnn.likelihood)
    x = np.array([[0.2], [-1.0]])
    a, b = predict(f, x), predict(g, x)
    for field in ("mean", "std", "aleatoric_std"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
    np.testing.assert_array_equal(a.lower[0.95], b.lower[0.95])
    np.testing.assert_array_equal(a.upper[0.95], b.upper[0.95])


def test_gibbs_fn_draws_tau_given_latent_weights():
    """Many independent Gibbs updates at a fixed position: E[tau] is E over w of the Gamma mean."""
    bnn, data = location_problem(n=6)
    position = jnp.asarray([0.0, 0.7])
    gibbs = jax.jit(jax.vmap(make_gibbs_fn(bnn, data, HP, learn_noise=True), in_axes=(0, None, None)))
    hyper = bnn.default_hyperparameters()._replace(noise_precision=jnp.asarray(2.0))
    m = 10000
    taus = np.asarray(gibbs(jax.random.split(jax.random.PRNGKey(2), m), position, hyper).noise_precision)
    r = np.asarray(data.y)[:, 0] - 0.7
    rng = np.random.default_rng(0)  # reference: numpy draws of w, then the Gamma mean given w
    w = rng.gamma((3.0 + 1) / 2, 1 / ((3.0 + 2.0 * r**2) / 2), size=(50000, r.size))
    ref = (HP.noise_shape + r.size / 2) / (HP.noise_rate + 0.5 * np.sum(w * r**2, axis=1))
    ref_mean = ref.mean()
    assert abs(taus.mean() - ref_mean) < 4.5 * taus.std() / math.sqrt(m) + 4.5 * ref.std() / math.sqrt(ref.size)
