"""HMC: moments of known Gaussians (MC error from ESS), divergences, random direction, dtypes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _targets import assert_moments, correlated_cov, diagonal_gaussian, gaussian, run_chains

from sigmabnn.mcmc import hmc


def _hmc_moments(rng_key, logdensity_fn, mean, cov, step_size, imm, num_steps, random_direction, chains, draws):
    key_init, key_run = jax.random.split(rng_key)
    chol = np.linalg.cholesky(cov)
    starts = jnp.asarray(mean + (chol @ np.asarray(jax.random.normal(key_init, (chains, len(mean)))).T).T)
    states = jax.vmap(lambda x: hmc.init(x, logdensity_fn))(starts)
    kernel = hmc.build_kernel(random_direction=random_direction)
    samples, info = run_chains(
        lambda k, s: kernel(k, s, logdensity_fn, step_size, imm, num_steps), key_run, states, draws
    )
    assert not np.any(np.asarray(info.is_divergent))
    assert_moments(samples, mean, np.diag(cov))
    return samples, info


@pytest.mark.parametrize("random_direction", [False, True])
def test_moments_10d_diagonal_gaussian(random_direction):
    mean = np.linspace(-2.0, 3.0, 10)
    std = np.geomspace(0.05, 20.0, 10)
    _, info = _hmc_moments(
        jax.random.key(0),
        diagonal_gaussian(mean, std),
        mean,
        np.diag(std**2),
        0.3,
        jnp.asarray(std**2),
        7,
        random_direction,
        4,
        1000,
    )
    acc = np.asarray(info.acceptance_rate)
    assert 0.8 < acc.mean() < 1.0
    # the acceptance flag is consistent with the reported probability
    assert abs(np.asarray(info.is_accepted).mean() - acc.mean()) < 0.05
    assert np.all(np.asarray(info.num_integration_steps) == 7)


@pytest.mark.slow
def test_moments_50d_correlated_gaussian_dense_metric():
    cov = correlated_cov(50, seed=11)
    mean = np.linspace(-1.0, 1.0, 50)
    _hmc_moments(jax.random.key(1), gaussian(mean, cov), mean, cov, 0.3, jnp.asarray(cov), 8, True, 4, 2000)


def test_random_direction_uses_both_signs():
    """With one step from the mode of N(0, 1), the new position has the sign of +-eps * p: both occur."""
    logdensity = diagonal_gaussian(np.zeros(1), np.ones(1))
    kernel = jax.jit(hmc.build_kernel(random_direction=True), static_argnums=(2, 5))
    fixed = jax.jit(hmc.build_kernel(random_direction=False), static_argnums=(2, 5))
    state = hmc.init(jnp.zeros(1), logdensity)
    flips = []
    for i in range(40):
        a, _ = kernel(jax.random.key(i), state, logdensity, 0.1, jnp.ones(1), 1)
        b, _ = fixed(jax.random.key(i), state, logdensity, 0.1, jnp.ones(1), 1)
        flips.append(bool(np.sign(a.position[0]) != np.sign(b.position[0])))
    assert 5 < sum(flips) < 35


def _nan_beyond_one(x):
    return jnp.where(x[0] > 1.0, jnp.nan, -0.5 * jnp.sum(x * x))


def _minus_inf_beyond_one(x):
    return jnp.where(x[0] > 1.0, -jnp.inf, -0.5 * jnp.sum(x * x))


@pytest.mark.parametrize("logdensity", [_nan_beyond_one, _minus_inf_beyond_one])
def test_non_finite_end_point_is_divergent_and_rejected(logdensity):
    kernel = jax.jit(hmc.build_kernel(), static_argnums=(2, 5))
    state = hmc.init(jnp.array([0.9, 0.0]), logdensity)
    num_divergent = 0
    for i in range(30):
        new, info = kernel(jax.random.key(i), state, logdensity, 0.4, jnp.ones(2), 5)
        assert np.all(np.isfinite(np.asarray(new.position))) and np.isfinite(float(new.logdensity))
        assert np.all(np.isfinite(np.asarray(new.logdensity_grad))) and np.isfinite(float(info.energy))
        if bool(info.is_divergent):
            num_divergent += 1
            assert not bool(info.is_accepted) and float(info.acceptance_rate) == 0.0
            np.testing.assert_array_equal(np.asarray(new.position), np.asarray(state.position))
        state = new
    assert num_divergent > 0


def test_large_energy_error_is_divergent():
    logdensity = diagonal_gaussian(np.zeros(2), np.array([1.0, 0.01]))
    state = hmc.init(jnp.array([1.0, 0.05]), logdensity)
    new, info = hmc.build_kernel()(jax.random.key(0), state, logdensity, 1.0, jnp.ones(2), 20)
    assert bool(info.is_divergent) and not bool(info.is_accepted)
    np.testing.assert_array_equal(np.asarray(new.position), np.asarray(state.position))


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_dtype_is_kept(dtype):
    logdensity = diagonal_gaussian(np.zeros(3), np.ones(3))
    state = hmc.init(jnp.array([0.5, -0.2, 0.1], dtype), logdensity)
    kernel = jax.jit(hmc.build_kernel(random_direction=True), static_argnums=(2, 5))
    for i in range(5):
        state, info = kernel(jax.random.key(i), state, logdensity, 0.3, jnp.ones(3, jnp.float64), 5)
    assert state.position.dtype == dtype and state.logdensity_grad.dtype == dtype
    assert info.acceptance_rate.dtype == dtype
    assert info.num_integration_steps.dtype == jnp.int32


def test_step_size_jitter_validation():
    with pytest.raises(ValueError, match="step_size_jitter must be in"):
        hmc.sampler(7, step_size_jitter=1.0)
    with pytest.raises(ValueError, match="step_size_jitter must be in"):
        hmc.sampler(7, step_size_jitter=-0.1)


@pytest.mark.parametrize("jitter", [0.0, 0.5])
def test_step_size_jitter_scales_the_step(jitter):
    """One leapfrog step from the mode of N(0, 1) with zero momentum refreshed by the key: the move
    divided by eps * p is the step factor, ``1`` without jitter and uniform in ``1 +- j`` with it."""
    logdensity = diagonal_gaussian(np.zeros(1), np.ones(1))
    sampler = hmc.sampler(1, step_size_jitter=jitter)
    state = sampler.init(jnp.zeros(1), logdensity)
    step = jax.jit(lambda k: sampler.step(k, state, logdensity, 1e-3, jnp.ones(1))[0].position[0])
    fixed = jax.jit(lambda k: hmc.build_kernel()(k, state, logdensity, 1e-3, jnp.ones(1), 1)[0].position[0])
    factors = []
    for i in range(200):
        key = jax.random.key(i)
        # the jittered sampler draws its momentum from the first half of its key's split
        key_kernel = jax.random.split(key)[0] if jitter > 0 else key
        factors.append(float(step(key) / fixed(key_kernel)))
    factors = np.asarray(factors)
    if jitter == 0.0:
        np.testing.assert_allclose(factors, 1.0, rtol=1e-9)
    else:
        assert factors.min() >= 1 - jitter - 1e-6 and factors.max() <= 1 + jitter + 1e-6
        assert factors.std() == pytest.approx(jitter / np.sqrt(3), rel=0.2)  # uniform on 1 +- j


def test_mcmc_config_passes_the_jitter_to_the_sampler():
    """``MCMCConfig.step_size_jitter`` reaches the HMC sampler (the same cached object as asked directly)."""
    from sigmabnn.mcmc.registry import make_algorithm
    from sigmabnn.train.mcmc import MCMCConfig, algorithm_for

    config = MCMCConfig(kernel="hmc", num_integration_steps=7, step_size_jitter=0.5)
    jittered = make_algorithm("hmc", num_integration_steps=7, step_size_jitter=0.5)
    plain = make_algorithm("hmc", num_integration_steps=7)
    assert algorithm_for(config) is jittered
    assert algorithm_for(config._replace(step_size_jitter=0.0)) is plain and plain is not jittered
