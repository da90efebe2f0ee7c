"""NUTS: exact agreement with a recursive reference, moments of known targets, divergences, dtypes."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _targets import assert_moments, banana, correlated_cov, diagonal_gaussian, gaussian, run_chains
from nuts_reference import nuts_reference

from sigmabnn.mcmc import hmc, nuts

# --- iterative kernel == recursive reference ------------------------------------------------------------------------

_COV2 = np.array([[1.0, 1.8], [1.8, 4.0]])  # correlation 0.9, stds 1 and 2
_COV5 = correlated_cov(5, seed=3)
_GAUSS2D = gaussian(np.zeros(2), _COV2)
_GAUSS5D = gaussian(np.ones(5), _COV5)

# name: (logdensity_fn, start, step_size, inverse_mass_matrix, max_tree_depth)
_CASES = {
    "gauss2d-unit-metric": (_GAUSS2D, [0.3, -0.5], 0.25, np.ones(2), 10),
    "gauss5d-diag-metric": (_GAUSS5D, np.ones(5) + 0.5, 0.2, np.diag(_COV5), 10),
    "gauss5d-dense-metric": (_GAUSS5D, np.ones(5) - 0.5, 0.6, _COV5, 10),
    # many short trajectories of a near-periodic target: the checks across subtree boundaries decide often
    "gauss2d-boundary-checks": (_GAUSS2D, [0.0, 0.0], 0.5, np.ones(2), 10),
    "gauss5d-boundary-checks": (_GAUSS5D, np.zeros(5), 0.35, np.ones(5), 10),
    "banana": (banana, [0.5, -0.8], 0.15, np.ones(2), 10),
    "max-tree-depth-3": (_GAUSS2D, [0.3, -0.5], 0.02, np.ones(2), 3),
    "divergent": (_GAUSS2D, [0.3, -0.5], 1.9, np.ones(2), 10),
}


@functools.cache
def _jitted_kernel(max_tree_depth: int):
    """One jitted kernel per depth; the log-density is static, step size and metric are traced."""
    return jax.jit(nuts.build_kernel(max_tree_depth=max_tree_depth), static_argnums=2)


@pytest.mark.parametrize("case", list(_CASES))
def test_iterative_kernel_matches_recursive_reference(case):
    logdensity_fn, start, step_size, imm, max_depth = _CASES[case]
    imm = jnp.asarray(imm, jnp.float64)
    step_size = jnp.asarray(step_size, jnp.float64)
    kernel = _jitted_kernel(max_depth)
    num_keys = 48 if case.endswith("boundary-checks") else 16
    keys = jax.random.split(jax.random.key(7), num_keys)
    # a different start for every key: the given one plus a fixed random offset
    offsets = np.random.default_rng(5).normal(size=(num_keys, len(start)))
    starts = np.asarray(start, np.float64)[None, :] + offsets

    n_steps, depths, expansions, divergent, moved, reasons = [], [], [], [], [], set()
    for i in range(num_keys):
        state = nuts.init(jnp.asarray(starts[i]), logdensity_fn)
        new, info = kernel(keys[i], state, logdensity_fn, step_size, imm)
        ref = nuts_reference(keys[i], starts[i], logdensity_fn, float(step_size), imm, max_tree_depth=max_depth)
        where = f"{case}, key {i}"
        assert int(info.tree_depth) == ref.tree_depth, where
        assert int(info.num_integration_steps) == ref.num_integration_steps, where
        assert int(info.num_trajectory_expansions) == ref.num_trajectory_expansions, where
        assert bool(info.is_divergent) == ref.is_divergent, where
        np.testing.assert_allclose(float(info.acceptance_rate), ref.acceptance_rate, rtol=0, atol=1e-10, err_msg=where)
        np.testing.assert_allclose(np.asarray(new.position), ref.position, rtol=0, atol=1e-10, err_msg=where)
        np.testing.assert_allclose(float(new.logdensity), ref.logdensity, rtol=1e-10, atol=1e-10, err_msg=where)
        np.testing.assert_allclose(float(info.energy), ref.energy, rtol=1e-10, atol=1e-10, err_msg=where)
        n_steps.append(ref.num_integration_steps)
        depths.append(ref.tree_depth)
        expansions.append(ref.num_trajectory_expansions)
        divergent.append(ref.is_divergent)
        moved.append(np.any(ref.position != starts[i]))
        reasons.add(ref.stop_reason)

    # the cases exercise the branches they are meant to
    n_steps, depths, expansions, divergent = map(np.asarray, (n_steps, depths, expansions, divergent))
    if case == "max-tree-depth-3":
        assert np.all(depths == 3) and np.all(n_steps == 7)
    elif case == "divergent":
        assert np.any(divergent)
    else:
        assert np.any(expansions > depths), "no trajectory ended on a U-turn inside a subtree"
        assert np.any(expansions == depths), "no trajectory ended on a U-turn of the merged trajectory"
        assert not np.any(divergent) and np.any(moved)
    if case == "gauss2d-boundary-checks":
        assert "merged-boundary" in reasons, reasons
    if case == "gauss5d-boundary-checks":
        assert "subtree-boundary" in reasons, reasons


# --- moments of known targets ---------------------------------------------------------------------------------------


def _nuts_moments(rng_key, logdensity_fn, mean, cov, step_size, imm, num_chains, num_draws):
    d = len(mean)
    key_init, key_run = jax.random.split(rng_key)
    chol = np.linalg.cholesky(cov)
    # start from the target itself: no warm-up needed, every draw counts
    starts = jnp.asarray(mean + (chol @ np.asarray(jax.random.normal(key_init, (num_chains, d))).T).T)
    states = jax.vmap(lambda x: nuts.init(x, logdensity_fn))(starts)
    kernel = nuts.build_kernel()
    draws, info = run_chains(lambda k, s: kernel(k, s, logdensity_fn, step_size, imm), key_run, states, num_draws)
    assert not np.any(np.asarray(info.is_divergent))
    assert_moments(draws, mean, np.diag(cov))
    return draws, info


def test_moments_10d_diagonal_gaussian():
    mean = np.linspace(-2.0, 3.0, 10)
    std = np.geomspace(0.05, 20.0, 10)
    draws, info = _nuts_moments(
        jax.random.key(0), diagonal_gaussian(mean, std), mean, np.diag(std**2), 0.5, jnp.asarray(std**2), 4, 500
    )
    # with the exact variances as metric the target is isotropic: short, well-accepted trajectories
    assert 0.6 < float(np.mean(np.asarray(info.acceptance_rate))) < 1.0
    assert np.max(np.asarray(info.tree_depth)) <= 4


@pytest.mark.slow
def test_moments_50d_correlated_gaussian_dense_metric():
    cov = correlated_cov(50, seed=11)
    mean = np.linspace(-1.0, 1.0, 50)
    _nuts_moments(jax.random.key(1), gaussian(mean, cov), mean, cov, 0.5, jnp.asarray(cov), 4, 1000)


def test_moments_half_normal_with_minus_inf_outside_support():
    """Zero density (log-density -inf) outside x0 > 0 is a divergence, and the chain stays exact."""

    def logdensity(x):
        return jnp.where(x[0] > 0, -0.5 * jnp.sum(x * x), -jnp.inf)

    num_chains, num_draws = 4, 1000
    z = jax.random.normal(jax.random.key(3), (num_chains, 2))
    starts = z.at[:, 0].set(jnp.abs(z[:, 0]))  # a draw from the target
    states = jax.vmap(lambda x: nuts.init(x, logdensity))(starts)
    kernel = nuts.build_kernel()
    draws, info = run_chains(
        lambda k, s: kernel(k, s, logdensity, 0.4, jnp.ones(2)), jax.random.key(4), states, num_draws
    )
    assert np.all(draws[..., 0] > 0)
    assert np.any(np.asarray(info.is_divergent))
    assert_moments(draws, np.array([np.sqrt(2 / np.pi), 0.0]), np.array([1 - 2 / np.pi, 1.0]))


# --- divergences and non-finite values ------------------------------------------------------------------------------


@jax.custom_jvp
def _nan_gradient_beyond_one(x):
    return -0.5 * jnp.sum(x * x)


@_nan_gradient_beyond_one.defjvp
def _nan_gradient_beyond_one_jvp(primals, tangents):
    (x,), (t,) = primals, tangents
    grad = jnp.where(x[0] > 1.0, jnp.nan, -x)
    return _nan_gradient_beyond_one(x), grad @ t


def _nan_value_beyond_one(x):
    return jnp.where(x[0] > 1.0, jnp.nan, -0.5 * jnp.sum(x * x))


def _inf_value_beyond_one(x):
    return jnp.where(x[0] > 1.0, jnp.inf, -0.5 * jnp.sum(x * x))


@pytest.mark.parametrize("logdensity", [_nan_value_beyond_one, _inf_value_beyond_one, _nan_gradient_beyond_one])
def test_non_finite_region_is_divergent_and_never_enters_the_state(logdensity):
    kernel = jax.jit(nuts.build_kernel(), static_argnums=2)
    state = nuts.init(jnp.array([0.9, 0.0]), logdensity)
    num_divergent = 0
    for i in range(30):
        state, info = kernel(jax.random.key(i), state, logdensity, 0.5, jnp.ones(2))
        assert np.all(np.isfinite(np.asarray(state.position)))
        assert np.isfinite(float(state.logdensity)) and np.all(np.isfinite(np.asarray(state.logdensity_grad)))
        assert float(state.position[0]) <= 1.0
        assert np.isfinite(float(info.energy)) and 0.0 <= float(info.acceptance_rate) <= 1.0
        num_divergent += int(info.is_divergent)
    assert num_divergent > 0


def test_large_energy_error_is_divergent():
    logdensity = gaussian(np.zeros(2), _COV2)
    state = nuts.init(jnp.array([1.0, 1.0]), logdensity)
    new, info = nuts.build_kernel(divergence_threshold=1000.0)(jax.random.key(0), state, logdensity, 3.0, jnp.ones(2))
    assert bool(info.is_divergent) and int(info.tree_depth) == 0 and int(info.num_integration_steps) == 1
    np.testing.assert_array_equal(np.asarray(new.position), np.asarray(state.position))
    # a huge threshold accepts the same trajectory as non-divergent
    _, info = nuts.build_kernel(divergence_threshold=1e300)(jax.random.key(0), state, logdensity, 3.0, jnp.ones(2))
    assert not bool(info.is_divergent)


# --- dtypes, jit/vmap -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", [jnp.float32, jnp.float64])
def test_dtype_is_kept(dtype):
    logdensity = diagonal_gaussian(np.zeros(3), np.ones(3))
    state = nuts.init(jnp.array([0.5, -0.2, 0.1], dtype), logdensity)
    kernel = jax.jit(nuts.build_kernel(max_tree_depth=6), static_argnums=2)
    for i in range(5):
        state, info = kernel(jax.random.key(i), state, logdensity, 0.5, jnp.ones(3, jnp.float64))
    assert state.position.dtype == dtype and state.logdensity_grad.dtype == dtype
    assert info.acceptance_rate.dtype == dtype and info.energy.dtype == dtype
    assert info.tree_depth.dtype == jnp.int32 and info.num_integration_steps.dtype == jnp.int32
    assert np.all(np.isfinite(np.asarray(state.position))) and 0 < float(info.acceptance_rate) <= 1


def test_shares_the_hmc_state():
    assert nuts.init is hmc.init
    with pytest.raises(ValueError, match="max_tree_depth"):
        nuts.build_kernel(max_tree_depth=0)
