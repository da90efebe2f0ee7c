"""Bayesian linear regression against its exact conjugate posterior, for every sampler of mcmc.run.

Posterior means and stds must agree within Monte-Carlo error (|z| < 4 with
ESS-based standard errors, see ``conjugate.z_scores``).

HMC runs with a jittered step size (``step_size_jitter``): with a fixed number of
steps and a fixed step size its trajectory length is fixed, and on this Gaussian
posterior it can resonate with a half period, so the chains drift slowly while
their ESS is overestimated (|z| of 4 to 5 on some seeds, at either XLA
optimisation level). The jitter is the documented remedy (Neal 2011, 5.4.2.2).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conjugate import (
    known_noise_logdensity,
    known_noise_posterior,
    make_regression,
    normal_gamma_model,
    normal_gamma_posterior,
    z_scores,
)

from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample

# kernel -> (num_warmup, num_samples, thin)
QUICK = {"mh": (400, 1500, 2), "hmc": (300, 400, 1), "nuts": (300, 400, 1)}
HMC_JITTER = 0.5
SLOW = {"mh": (2000, 5000, 4), "hmc": (1000, 1000, 1), "nuts": (1000, 1000, 1)}


def _check_known_noise(kernel, d, n, settings, seed):
    x, y = make_regression(seed, n, d)
    post = known_noise_posterior(x, y, noise_std=0.5, prior_std=2.0)
    ld = known_noise_logdensity(x, y, noise_std=0.5, prior_std=2.0)
    num_warmup, num_samples, thin = settings
    init = jnp.asarray(np.random.default_rng(seed).normal(size=(4, d)))
    result = sample(
        jax.random.key(seed),
        make_algorithm(kernel, num_integration_steps=7, step_size_jitter=HMC_JITTER if kernel == "hmc" else 0.0),
        ld,
        init,
        None,
        RunConfig(num_warmup=num_warmup, num_samples=num_samples, thin=thin, chunk_size=100),
        progress=False,
    )
    draws = np.asarray(result.positions)
    assert draws.shape == (4, num_samples, d)
    z_mean, z_var = z_scores(draws, post.mean, post.std)
    assert np.all(np.abs(z_mean) < 4), (kernel, z_mean)
    assert np.all(np.abs(z_var) < 4), (kernel, z_var)
    assert int(result.info.is_divergent.sum()) == 0


@pytest.mark.parametrize("kernel", ["mh", "hmc", "nuts"])
def test_known_noise_quick(kernel):
    _check_known_noise(kernel, d=3, n=40, settings=QUICK[kernel], seed=11)


@pytest.mark.slow
@pytest.mark.parametrize("kernel", ["mh", "hmc", "nuts"])
def test_known_noise_bigger(kernel):
    _check_known_noise(kernel, d=10, n=200, settings=SLOW[kernel], seed=12)


@pytest.mark.parametrize("kernel", ["hmc", "nuts"])
def test_normal_gamma_with_gibbs_noise_precision(kernel):
    """Weights by HMC/NUTS given the noise precision, noise precision by its Gibbs conditional."""
    x, y = make_regression(13, 30, 2, noise_std=0.7)
    kappa, a, b = 0.25, 2.0, 1.0
    post = normal_gamma_posterior(x, y, kappa, a, b)
    ld, gibbs_fn = normal_gamma_model(x, y, kappa, a, b)
    result = sample(
        jax.random.key(13),
        make_algorithm(kernel, num_integration_steps=5, step_size_jitter=HMC_JITTER if kernel == "hmc" else 0.0),
        ld,
        jnp.zeros((4, 2)),
        jnp.asarray(1.0),
        RunConfig(num_warmup=300, num_samples=600, chunk_size=100),
        gibbs_fn=gibbs_fn,
        progress=False,
    )
    lam = np.asarray(result.hyper)
    assert lam.shape == (4, 600)
    # the cached log-density is recomputed for the new hyperparameter after every Gibbs update
    beta = result.positions
    recomputed = jax.vmap(jax.vmap(ld))(beta, result.hyper)
    np.testing.assert_allclose(result.info.logdensity, recomputed, rtol=1e-10, atol=1e-10)
    z_mean, z_var = z_scores(np.asarray(beta), post.beta_mean, post.beta_std)
    assert np.all(np.abs(z_mean) < 4) and np.all(np.abs(z_var) < 4), (z_mean, z_var)
    z_lam_mean, z_lam_var = z_scores(lam[..., None], np.array([post.lam_mean]), np.array([post.lam_std]))
    assert np.all(np.abs(z_lam_mean) < 4) and np.all(np.abs(z_lam_var) < 4), (z_lam_mean, z_lam_var)
