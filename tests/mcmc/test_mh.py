"""Random-walk Metropolis-Hastings kernel: acceptance rule, rejection of non-finite proposals, invariance."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.mcmc import mh


def test_init_and_shapes_dtypes():
    ld = lambda x: -0.5 * jnp.sum(x**2)
    for dtype in (jnp.float64, jnp.float32):
        state = mh.init(jnp.ones(3, dtype), ld)
        assert state.position.dtype == dtype and state.logdensity.dtype == dtype
        new, info = mh.build_kernel()(jax.random.key(0), state, ld, 0.5, jnp.ones(3, dtype))
        assert new.position.shape == (3,) and new.position.dtype == dtype
        assert info.acceptance_rate.shape == () and info.is_accepted.dtype == bool


def test_acceptance_rate_is_metropolis_ratio():
    ld = lambda x: -0.5 * jnp.sum(x**2)
    state = mh.init(jnp.array([0.3, -0.2]), ld)
    key = jax.random.key(1)
    new, info = mh.build_kernel()(key, state, ld, 0.7, jnp.array([1.0, 4.0]))
    # reconstruct the proposal with the same key split as the kernel
    key_proposal, _ = jax.random.split(key)
    z = jax.random.normal(key_proposal, (2,), jnp.float64)
    proposal = state.position + 0.7 * jnp.sqrt(jnp.array([1.0, 4.0])) * z
    expected = min(1.0, float(jnp.exp(ld(proposal) - state.logdensity)))
    assert np.isclose(float(info.acceptance_rate), expected)
    target = proposal if bool(info.is_accepted) else state.position
    np.testing.assert_allclose(new.position, target)
    assert np.isclose(float(new.logdensity), float(ld(new.position)))


def test_non_finite_proposals_are_rejected():
    ld = lambda x: jnp.where(x[0] > 0.0, jnp.nan, -0.5 * jnp.sum(x**2))  # NaN on half the space
    kernel = jax.jit(lambda k, s: mh.build_kernel()(k, s, ld, 2.0, jnp.ones(2)))
    state = mh.init(jnp.array([-1.0, 0.0]), ld)
    keys = jax.random.split(jax.random.key(2), 300)
    positions, rates = [], []
    for k in keys:
        state, info = kernel(k, state)
        positions.append(float(state.position[0]))
        rates.append(float(info.acceptance_rate))
    assert max(positions) <= 0.0  # never moved into the NaN region
    assert np.all(np.isfinite(rates)) and min(rates) == 0.0


def test_dense_proposal_uses_cholesky():
    ld = lambda x: 0.0 * jnp.sum(x)  # flat: always accepted, positions = proposals
    cov = jnp.array([[4.0, 1.2], [1.2, 1.0]])
    kernel = jax.jit(jax.vmap(lambda k, s: mh.build_kernel()(k, s, ld, 1.0, cov), in_axes=(0, None)))
    state = mh.init(jnp.zeros(2), ld)
    new, info = kernel(jax.random.split(jax.random.key(3), 20000), state)
    assert bool(jnp.all(info.is_accepted))
    emp = np.cov(np.asarray(new.position), rowvar=False)
    np.testing.assert_allclose(emp, cov, atol=0.12)  # MC sd of entries <= ~0.06 for n = 20000


def test_chain_leaves_gaussian_invariant():
    """Moments of a long chain on N(mu, diag(s^2)) within Monte-Carlo error (batch-means ESS)."""
    mu, s = jnp.array([1.0, -2.0]), jnp.array([0.5, 3.0])
    ld = lambda x: -0.5 * jnp.sum(((x - mu) / s) ** 2)
    kernel = mh.build_kernel()

    def chain(key):
        def body(state, k):
            state, _ = kernel(k, state, ld, 2.4 / np.sqrt(2), s**2)
            return state, state.position

        return jax.lax.scan(body, mh.init(mu, ld), jax.random.split(key, 4000))[1]

    xs = np.asarray(jax.jit(jax.vmap(chain))(jax.random.split(jax.random.key(4), 4)))
    import arviz as az

    ess = az.ess(az.convert_to_dataset(xs))["x"].values
    err = np.abs(xs.mean((0, 1)) - np.asarray(mu))
    assert np.all(err < 4 * np.asarray(s) / np.sqrt(ess))
    ess2 = az.ess(az.convert_to_dataset((xs - np.asarray(mu)) ** 2))["x"].values
    var_err = np.abs(((xs - np.asarray(mu)) ** 2).mean((0, 1)) - np.asarray(s) ** 2)
    assert np.all(var_err < 4 * np.sqrt(2) * np.asarray(s) ** 2 / np.sqrt(ess2))
