"""Gibbs updates of the precisions: exact conditionals and the joint chain.

The reference is Bayesian linear regression, a "BNN" with one identity
layer: y = X w + b + eps, eps ~ N(0, 1 / lambda), theta = (w, b) ~ N(0,
diag(1 / alpha)) with fixed prior precisions alpha, lambda ~ Gamma(a0, b0).
The prior on theta does not scale with lambda, so the joint posterior is not
Normal-Gamma, but its structure is exact and one-dimensional:

- theta | lambda, y ~ N(mu(lambda), Sigma(lambda)), Sigma = (lambda A^T A + diag(alpha))^-1,
  mu = lambda Sigma A^T y, with A = [X, 1];
- p(lambda | y) ∝ Gamma(lambda; a0, b0) N(y; 0, A diag(1/alpha) A^T + I / lambda).

Quadrature over lambda gives the exact posterior mean and variance of lambda
and of every coefficient (total variance: E Sigma + Var mu). Chains are
compared with these within Monte-Carlo error from ArviZ's ESS.
"""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats

from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, Hyperparameters, parse_architecture
from sigmabnn.model.mlp import flatten, init_params
from sigmabnn.train.gibbs import HyperPrior, make_gibbs_fn

ALPHA_W, ALPHA_B = 0.5, 0.25
HP = HyperPrior(noise_shape=2.0, noise_rate=0.5, weight_shape=1.5, weight_rate=0.7, bias_shape=3.0, bias_rate=2.0)


def linear_problem(n=40, p=3, seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, p))
    y = x @ np.array([1.0, -0.5, 0.25])[:p] + 0.3 + 0.5 * rng.normal(size=n)
    bnn = BNN(parse_architecture(f"{p}-1"), GaussianPrior(ALPHA_W, ALPHA_B), Gaussian(1.0, True), dtype=dtype)
    return bnn, Data(jnp.asarray(x, dtype), jnp.asarray(y[:, None], dtype))


def exact_linear_posterior(x, y, hp=HP, alpha_w=ALPHA_W, alpha_b=ALPHA_B, num_grid=1200):
    """Exact posterior mean and variance of lambda and theta = (w, b) by quadrature over lambda."""
    x, y = np.asarray(x, np.float64), np.asarray(y, np.float64).reshape(-1)
    n, p = x.shape
    a = np.hstack([x, np.ones((n, 1))])
    prior_prec = np.r_[np.full(p, alpha_w), alpha_b]
    k = a @ np.diag(1.0 / prior_prec) @ a.T
    theta_ls = np.linalg.lstsq(a, y, rcond=None)[0]
    lam_hat = n / np.sum((y - a @ theta_ls) ** 2)
    grid = np.exp(np.linspace(np.log(lam_hat / 20), np.log(lam_hat * 20), num_grid))
    logp = np.empty(num_grid)
    mus = np.empty((num_grid, p + 1))
    sig = np.empty((num_grid, p + 1))
    for i, lam in enumerate(grid):
        c = k + np.eye(n) / lam
        _, logdet = np.linalg.slogdet(c)
        logp[i] = scipy.stats.gamma.logpdf(lam, hp.noise_shape, scale=1 / hp.noise_rate)
        logp[i] += -0.5 * (logdet + y @ np.linalg.solve(c, y))
        cov = np.linalg.inv(lam * a.T @ a + np.diag(prior_prec))
        mus[i] = lam * cov @ a.T @ y
        sig[i] = np.diag(cov)
    wq = np.exp(logp - logp.max()) * grid  # integrate in log(lambda): d lambda = lambda d log(lambda)
    assert wq[0] < 1e-12 * wq.max() and wq[-1] < 1e-12 * wq.max()  # grid covers the posterior
    wq /= wq.sum()
    lam_mean = wq @ grid
    lam_var = wq @ (grid - lam_mean) ** 2
    th_mean = wq @ mus
    th_var = wq @ sig + wq @ (mus - th_mean) ** 2
    return lam_mean, lam_var, th_mean, th_var


def assert_mc_close(draws, mean, var, z=4.5):
    """Chain draws [chain, draw] have the given mean and variance within z Monte-Carlo standard errors."""
    draws = np.asarray(draws, np.float64)
    ess_mean = float(az.ess(draws))
    se_mean = np.sqrt(var / ess_mean)
    assert abs(draws.mean() - mean) < z * se_mean, (draws.mean(), mean, se_mean, ess_mean)
    sq = (draws - draws.mean()) ** 2
    ess_sq = float(az.ess(sq))
    se_var = np.sqrt(np.var(sq) / ess_sq)
    assert abs(sq.mean() - var) < z * se_var, (sq.mean(), var, se_var, ess_sq)


def test_noise_conditional_matches_gamma():
    bnn, data = linear_problem()
    position = jnp.asarray([0.8, -0.4, 0.1, 0.5])
    gibbs = jax.jit(
        jax.vmap(make_gibbs_fn(bnn, data, HP, learn_noise=True, learn_prior=False), in_axes=(0, None, None))
    )
    hyper = bnn.default_hyperparameters()
    m = 20000
    draws = np.asarray(gibbs(jax.random.split(jax.random.PRNGKey(0), m), position, hyper).noise_precision)
    x, y = np.asarray(data.x), np.asarray(data.y).reshape(-1)
    sse = np.sum((y - x @ np.array([0.8, -0.4, 0.1]) - 0.5) ** 2)
    shape, rate = HP.noise_shape + y.size / 2, HP.noise_rate + sse / 2
    mean, var = shape / rate, shape / rate**2
    # iid draws: SE of the mean sqrt(var/m); SE of the sample variance sqrt((mu4 - var^2)/m), mu4 = (3 + 6/k) var^2
    assert abs(draws.mean() - mean) < 4.5 * np.sqrt(var / m)
    assert abs(draws.var() - var) < 4.5 * np.sqrt((2 + 6 / shape) * var**2 / m)
    assert scipy.stats.kstest(draws, scipy.stats.gamma(shape, scale=1 / rate).cdf).pvalue > 1e-3


def test_prior_conditionals_match_gamma_per_layer():
    bnn = BNN(parse_architecture("2-3-1"), GaussianPrior(), Gaussian(1.0))
    data = Data(jnp.zeros((5, 2)), jnp.zeros((5, 1)))
    params = init_params(jax.random.PRNGKey(3), bnn.mlp)
    params = tuple(type(layer)(layer.kernel, layer.bias + 0.3) for layer in params)  # non-zero biases
    position = flatten(params)
    gibbs = jax.jit(jax.vmap(make_gibbs_fn(bnn, data, HP, learn_noise=False), in_axes=(0, None, None)))
    hyper = bnn.default_hyperparameters()
    out = gibbs(jax.random.split(jax.random.PRNGKey(1), 5000), position, hyper)
    np.testing.assert_array_equal(np.asarray(out.noise_precision), 1.0)  # untouched
    for layer_idx, layer in enumerate(params):
        w2 = float(np.sum(np.asarray(layer.kernel) ** 2))
        b2 = float(np.sum(np.asarray(layer.bias) ** 2))
        for draws, shape, rate in [
            (out.weight_precision[:, layer_idx], HP.weight_shape + layer.kernel.size / 2, HP.weight_rate + w2 / 2),
            (out.bias_precision[:, layer_idx], HP.bias_shape + layer.bias.size / 2, HP.bias_rate + b2 / 2),
        ]:
            p = scipy.stats.kstest(np.asarray(draws), scipy.stats.gamma(shape, scale=1 / rate).cdf).pvalue
            assert p > 1e-3, (layer_idx, shape, rate, p)


def test_prior_conditionals_sample_the_scale_head_group_apart():
    # a 2-3-2 mean-and-scale network: the last layer's scale column and bias are group 2
    bnn = BNN(parse_architecture("2-3-2"), GaussianPrior(scale_outputs=1), Gaussian(1.0))
    data = Data(jnp.zeros((5, 2)), jnp.zeros((5, 2)))
    params = init_params(jax.random.PRNGKey(4), bnn.mlp)
    last = params[1]._replace(kernel=params[1].kernel.at[:, 1].multiply(0.05), bias=jnp.array([0.3, -2.0]))
    position = flatten((params[0], last))
    gibbs = jax.jit(jax.vmap(make_gibbs_fn(bnn, data, HP, learn_noise=False), in_axes=(0, None, None)))
    out = gibbs(jax.random.split(jax.random.PRNGKey(2), 5000), position, bnn.default_hyperparameters())
    assert out.weight_precision.shape == (5000, 3)
    groups = [
        (np.asarray(params[0].kernel), np.asarray(params[0].bias)),
        (np.asarray(last.kernel[:, :1]), np.asarray(last.bias[:1])),
        (np.asarray(last.kernel[:, 1:]), np.asarray(last.bias[1:])),
    ]
    for g, (kernel, bias) in enumerate(groups):
        for draws, shape, rate in [
            (out.weight_precision[:, g], HP.weight_shape + kernel.size / 2, HP.weight_rate + np.sum(kernel**2) / 2),
            (out.bias_precision[:, g], HP.bias_shape + bias.size / 2, HP.bias_rate + np.sum(bias**2) / 2),
        ]:
            p = scipy.stats.kstest(np.asarray(draws), scipy.stats.gamma(shape, scale=1 / rate).cdf).pvalue
            assert p > 1e-3, (g, shape, rate, p)


def test_flags_dtype_and_errors():
    bnn, data = linear_problem(dtype="float32")
    hyper = bnn.default_hyperparameters()
    position = jnp.zeros(4, jnp.float32)
    key = jax.random.PRNGKey(0)
    out = make_gibbs_fn(bnn, data, HP, learn_noise=True, learn_prior=False)(key, position, hyper)
    assert out.noise_precision.dtype == jnp.float32 and out.noise_precision != hyper.noise_precision
    np.testing.assert_array_equal(out.weight_precision, hyper.weight_precision)
    out = make_gibbs_fn(bnn, data, HP, learn_noise=False, learn_prior=True)(key, position, hyper)
    assert out.noise_precision == hyper.noise_precision
    assert out.weight_precision.dtype == jnp.float32 and out.weight_precision.shape == (1,)
    # zero weights: conditional is Gamma(a + n/2, b), so the draw is finite and positive
    assert np.all(np.isfinite(out.weight_precision)) and np.all(out.weight_precision > 0)
    from sigmabnn.model import Categorical

    with pytest.raises(ValueError, match="gaussian"):
        make_gibbs_fn(BNN(bnn.mlp, likelihood=Categorical(2)), data, HP, learn_noise=True)
    with pytest.raises(ValueError, match="noise_rate"):
        make_gibbs_fn(bnn, data, HP._replace(noise_rate=0.0))


def _two_block_gibbs(bnn, data, num_chains, num_draws, seed, hp=HP):
    """Exact Gibbs sampler: theta | lambda from its Gaussian conditional, lambda | theta from gibbs_fn."""
    x, y = data.x, data.y.reshape(-1)
    a = jnp.hstack([x, jnp.ones((x.shape[0], 1))])
    prior_prec = jnp.r_[jnp.full(x.shape[1], ALPHA_W), ALPHA_B]
    gibbs = make_gibbs_fn(bnn, data, hp, learn_noise=True, learn_prior=False)

    def step(carry, key):
        lam, hyper = carry
        k1, k2 = jax.random.split(key)
        prec = lam * a.T @ a + jnp.diag(prior_prec)
        chol = jnp.linalg.cholesky(prec)
        mu = jnp.linalg.solve(prec, lam * a.T @ y)
        z = jax.random.normal(k1, mu.shape)
        theta = mu + jax.scipy.linalg.solve_triangular(chol.T, z, lower=False)
        hyper = gibbs(k2, theta, hyper._replace(noise_precision=lam))
        return (hyper.noise_precision, hyper), (theta, hyper.noise_precision)

    def chain(key):
        hyper = bnn.default_hyperparameters()
        _, (thetas, lams) = jax.lax.scan(step, (hyper.noise_precision, hyper), jax.random.split(key, num_draws))
        return thetas, lams

    return jax.jit(jax.vmap(chain))(jax.random.split(jax.random.PRNGKey(seed), num_chains))


def test_joint_gibbs_chain_matches_exact_posterior():
    """Exact two-block Gibbs with gibbs_fn's lambda update reproduces the exact marginals."""
    bnn, data = linear_problem()
    lam_mean, lam_var, th_mean, th_var = exact_linear_posterior(data.x, data.y)
    thetas, lams = _two_block_gibbs(bnn, data, num_chains=4, num_draws=3000, seed=1)
    thetas, lams = np.asarray(thetas)[:, 100:], np.asarray(lams)[:, 100:]
    assert_mc_close(lams, lam_mean, lam_var)
    for i in range(th_mean.size):
        assert_mc_close(thetas[..., i], th_mean[i], th_var[i])


def test_joint_gibbs_catches_a_wrong_update():
    """The comparison has power: a conditional with N instead of N/2 in the shape is rejected."""
    bnn, data = linear_problem()
    lam_mean, lam_var, _, _ = exact_linear_posterior(data.x, data.y)
    wrong = HP._replace(noise_shape=HP.noise_shape + data.y.size / 2)  # shape a0 + N instead of a0 + N/2
    _, lams = _two_block_gibbs(bnn, data, num_chains=4, num_draws=3000, seed=2, hp=wrong)
    with pytest.raises(AssertionError):
        assert_mc_close(np.asarray(lams)[:, 100:], lam_mean, lam_var)


@pytest.mark.slow
def test_nuts_within_gibbs_matches_exact_posterior():
    """Runner: NUTS on theta alternating with gibbs_fn on lambda; marginals match the exact posterior."""
    from sigmabnn.mcmc.registry import make_algorithm
    from sigmabnn.mcmc.run import RunConfig, sample
    from sigmabnn.model import make_logdensity

    bnn, data = linear_problem()
    lam_mean, lam_var, th_mean, th_var = exact_linear_posterior(data.x, data.y)
    gibbs = make_gibbs_fn(bnn, data, HP, learn_noise=True, learn_prior=False)
    num_chains = 4
    result = sample(
        jax.random.PRNGKey(7),
        make_algorithm("nuts"),
        make_logdensity(bnn, data),
        jnp.zeros((num_chains, 4)),
        bnn.default_hyperparameters(),
        RunConfig(num_warmup=500, num_samples=1500),
        gibbs_fn=gibbs,
        progress=False,
    )
    lams = np.asarray(result.hyper.noise_precision)
    thetas = np.asarray(result.positions)
    assert lams.shape == (num_chains, 1500) and thetas.shape == (num_chains, 1500, 4)
    assert_mc_close(lams, lam_mean, lam_var)
    for i in range(th_mean.size):
        assert_mc_close(thetas[..., i], th_mean[i], th_var[i])
    np.testing.assert_allclose(np.asarray(result.hyper.weight_precision), ALPHA_W)  # fixed prior untouched
    assert isinstance(result.hyper, Hyperparameters)
