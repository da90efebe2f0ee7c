"""Mean-field q and the VI priors: softplus parameterisation, densities vs scipy, KL closed form vs Monte Carlo."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from sigmabnn.model import BNN, GaussianPrior, parse_architecture
from sigmabnn.vi import fit as vi_fit
from sigmabnn.vi import meanfield, priors


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_softplus_round_trip_keeps_dtype(dtype):
    std = jnp.asarray([1e-6, 1e-3, 0.1, 1.0, 5.0, 40.0], dtype)
    rho = meanfield.rho_from_std(std)
    assert rho.dtype == dtype and np.all(np.isfinite(np.asarray(rho)))
    back = meanfield.std_from_rho(rho)
    np.testing.assert_allclose(np.asarray(back), np.asarray(std), rtol=1e-5 if dtype == jnp.float32 else 1e-12)


def test_log_prob_and_entropy_match_scipy():
    rng = np.random.default_rng(0)
    mu, std = rng.normal(size=7), rng.uniform(0.05, 2.0, size=7)
    w = rng.normal(size=(5, 7))
    expected = stats.norm.logpdf(w, mu, std).sum(axis=-1)
    np.testing.assert_allclose(np.asarray(meanfield.log_prob(jnp.asarray(w), mu, std)), expected, rtol=1e-12)
    np.testing.assert_allclose(float(meanfield.entropy(jnp.asarray(std))), stats.norm.entropy(0, std).sum(), rtol=1e-12)


def test_sample_moments():
    mu = jnp.asarray([0.5, -2.0, 3.0])
    std = jnp.asarray([0.1, 1.0, 2.5])
    n = 40_000
    w = np.asarray(meanfield.sample(jax.random.key(0), mu, std, n))
    assert w.shape == (n, 3)
    se_mean = np.asarray(std) / np.sqrt(n)
    assert np.all(np.abs(w.mean(0) - np.asarray(mu)) < 4.5 * se_mean)
    # sd of the sample variance of a Gaussian: sigma^2 sqrt(2 / (n - 1))
    assert np.all(np.abs(w.var(0) / np.asarray(std) ** 2 - 1) < 4.5 * np.sqrt(2 / (n - 1)))


def test_gaussian_kl_matches_general_formula_and_monte_carlo():
    rng = np.random.default_rng(1)
    d = 6
    mu, std = jnp.asarray(rng.normal(size=d)), jnp.asarray(rng.uniform(0.1, 1.5, size=d))
    precision = jnp.asarray(rng.uniform(0.5, 4.0, size=d))
    closed = float(priors.gaussian_kl(mu, std, precision))
    general = float(meanfield.kl_divergence(mu, std, jnp.zeros(d), 1.0 / jnp.sqrt(precision)))
    np.testing.assert_allclose(closed, general, rtol=1e-12)
    # KL of one 1-d Gaussian pair vs numerical integration
    m, s, lam = 0.7, 0.4, 2.5
    p_std = lam**-0.5
    q = stats.norm(m, s)
    quad = integrate.quad(lambda x: q.pdf(x) * (q.logpdf(x) - stats.norm.logpdf(x, 0, p_std)), -10, 10)[0]
    np.testing.assert_allclose(float(priors.gaussian_kl(jnp.asarray(m), jnp.asarray(s), jnp.asarray(lam))), quad)
    # Monte Carlo: mean of log q(w) - log p(w) at draws from q, within 4.5 standard errors
    prior = priors.DiagonalGaussianPrior(precision)
    w = meanfield.sample(jax.random.key(2), mu, std, 100_000)
    terms = np.asarray(meanfield.log_prob(w, mu, std) - prior.log_prob(w))
    se = terms.std() / np.sqrt(terms.size)
    assert abs(terms.mean() - closed) < 4.5 * se
    # the closed form ignores samples; the prior's log density is scipy's
    np.testing.assert_allclose(
        float(prior.log_prob(w[0])), stats.norm.logpdf(np.asarray(w[0]), 0, 1 / np.sqrt(np.asarray(precision))).sum()
    )


@pytest.mark.parametrize("pi, s1, s2", [(0.5, 1.0, np.exp(-6)), (0.25, np.exp(-1), np.exp(-7)), (0.9, 2.0, 0.3)])
def test_scale_mixture_logpdf_matches_scipy(pi, s1, s2):
    w = np.concatenate([np.linspace(-5, 5, 41), [0.0, 1e-4, -3e-3, 50.0, -400.0]])
    expected = special.logsumexp(
        np.stack([stats.norm.logpdf(w, 0, s1), stats.norm.logpdf(w, 0, s2)]),
        b=np.array([[pi], [1 - pi]]),
        axis=0,
    )
    got = np.asarray(priors.scale_mixture_logpdf(jnp.asarray(w), pi, s1, s2))
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10)
    # float32 stays float32 and finite far in the tails
    got32 = priors.scale_mixture_logpdf(jnp.asarray(w, jnp.float32), pi, s1, s2)
    assert got32.dtype == jnp.float32 and np.all(np.isfinite(np.asarray(got32)))


def test_scale_mixture_kl_monte_carlo_matches_quadrature():
    prior = priors.ScaleMixturePrior(0.5, 1.0, 0.05)
    mu, std = jnp.asarray([0.3, -0.02]), jnp.asarray([0.2, 0.01])
    exact = 0.0
    for m, s in zip(np.asarray(mu), np.asarray(std)):
        q = stats.norm(m, s)

        def integrand(x, q=q):
            logp = np.logaddexp(np.log(0.5) + stats.norm.logpdf(x, 0, 1.0), np.log(0.5) + stats.norm.logpdf(x, 0, 0.05))
            return q.pdf(x) * (q.logpdf(x) - logp)

        exact += integrate.quad(integrand, m - 12 * s, m + 12 * s, limit=200)[0]
    w = meanfield.sample(jax.random.key(3), mu, std, 200_000)
    terms = np.asarray(meanfield.log_prob(w, mu, std) - prior.log_prob(w))
    se = terms.std() / np.sqrt(terms.size)
    kl = float(prior.kl(mu, std, w))
    np.testing.assert_allclose(kl, terms.mean(), rtol=1e-12)
    assert abs(kl - exact) < 4.5 * se
    np.testing.assert_allclose(float(prior.variance()), 0.5 * 1.0 + 0.5 * 0.05**2)


@pytest.mark.parametrize("pi, s1, s2", [(0.0, 1.0, 0.1), (1.0, 1.0, 0.1), (0.5, -1.0, 0.1), (0.5, 1.0, 0.0)])
def test_scale_mixture_rejects_bad_parameters(pi, s1, s2):
    with pytest.raises(ValueError, match="scale-mixture"):
        priors.validate_scale_mixture(pi, s1, s2)


def test_per_layer_vectors_follow_the_flat_layout_and_init_std():
    bnn = BNN(parse_architecture("3-4-2"), prior=GaussianPrior(weight_precision=4.0, bias_precision=1e-4))
    prior = priors.gaussian_prior_from_bnn(bnn)
    layers = bnn.unflatten(prior.precision)
    for layer in layers:
        assert np.all(np.asarray(layer.kernel) == 4.0) and np.all(np.asarray(layer.bias) == 1e-4)
    std = bnn.unflatten(meanfield.init_std(bnn, jnp.sqrt(prior.variance()), ratio=0.1))
    glorot = [np.sqrt(2 / 7), np.sqrt(2 / 6)]
    for layer, g in zip(std, glorot):
        # kernels: prior std 0.5 vs Glorot; biases: prior std 100 -> the Glorot scale
        np.testing.assert_allclose(np.asarray(layer.kernel), 0.1 * min(g, 0.5))
        np.testing.assert_allclose(np.asarray(layer.bias), 0.1 * g)
    with pytest.raises(ValueError, match="init_std_ratio"):
        meanfield.init_std(bnn, 1.0, ratio=0.0)


def test_kl_weights_schedules():
    np.testing.assert_allclose(np.asarray(vi_fit.kl_weights(4, "uniform")), [0.25] * 4)
    np.testing.assert_allclose(np.asarray(vi_fit.kl_weights(3, "blundell")), [4 / 7, 2 / 7, 1 / 7], rtol=1e-14)
    for k in (1, 10, 2000):
        w = np.asarray(vi_fit.kl_weights(k, "blundell"))
        assert np.all(np.isfinite(w)) and np.all(np.diff(w) <= 0)
        np.testing.assert_allclose(w.sum(), 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="kl_schedule"):
        vi_fit.kl_weights(3, "linear")
