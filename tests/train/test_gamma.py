"""sigmabnn.train.gamma: loop-free Marsaglia-Tsang Gamma draws against the exact distribution."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from sigmabnn.train.gamma import gamma

N = 20_000


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("a", "rate"), [(0.3, 1.0), (1.0, 2.0), (1.5, 0.5), (12.0, 3.0), (5000.0, 40.0)])
def test_moments_and_distribution(a, rate, dtype):
    """Mean and variance within 5 Monte-Carlo standard errors of ``a / rate``, ``a / rate^2``; KS test."""
    shape = jnp.full((N,), a, dtype)
    draws = np.asarray(gamma(jax.random.PRNGKey(1), shape, jnp.asarray(rate, dtype)), np.float64)
    assert draws.dtype == np.float64 and np.all(draws > 0)
    mean, var = a / rate, a / rate**2
    assert abs(draws.mean() - mean) < 5 * np.sqrt(var / N)
    # variance of the sample variance: (mu4 - sigma^4) / N, mu4 = 3 a (a + 2) / rate^4 for a Gamma
    se_var = np.sqrt((3 * a * (a + 2) / rate**4 - var**2) / N)
    assert abs(draws.var() - var) < 5 * se_var
    assert stats.kstest(draws, stats.gamma(a, scale=1 / rate).cdf).pvalue > 1e-3


def test_dtype_and_broadcasting():
    shape = jnp.asarray([[1.0], [4.0]], jnp.float32)
    rate = jnp.asarray([1.0, 2.0, 3.0], jnp.float32)
    out = gamma(jax.random.PRNGKey(0), shape, rate)
    assert out.shape == (2, 3) and out.dtype == jnp.float32


def test_keys_decide_the_draws():
    shape = jnp.full((5,), 3.0)
    a = gamma(jax.random.PRNGKey(3), shape, 1.0)
    assert np.array_equal(a, gamma(jax.random.PRNGKey(3), shape, 1.0))
    assert not np.array_equal(a, gamma(jax.random.PRNGKey(4), shape, 1.0))


def test_proposal_acceptance_at_shape_one():
    """The paper's efficiency, at its worst shape (a = 1): a proposal is accepted more than 95 % of the time."""
    d = 1.0 - 1.0 / 3.0
    c = 1.0 / np.sqrt(9.0 * d)
    rng = np.random.default_rng(0)
    x, u = rng.standard_normal(200_000), rng.uniform(size=200_000)
    v = (1.0 + c * x) ** 3
    with np.errstate(invalid="ignore", divide="ignore"):
        ok = (v > 0) & (np.log(u) < 0.5 * x**2 + d - d * v + d * np.log(np.where(v > 0, v, 1.0)))
    assert ok.mean() > 0.95


def test_compiles_without_rejection_loops():
    """The point of the module: no rejection loop in the compiled draw (``jax.random.gamma`` has one).

    The only loops left are the random bits' own (threefry's fixed rounds): as many as in drawing
    the same normals and uniforms alone.
    """

    def loops(fn) -> int:
        return fn.lower(jax.random.PRNGKey(0), jnp.ones(4)).as_text().count("stablehlo.while")

    def bits_only(key, s):
        k1, k2, k3 = jax.random.split(key, 3)
        size = (8, *s.shape)
        return jax.random.normal(k1, size) + jax.random.uniform(k2, size), jax.random.uniform(k3, s.shape)

    ours = loops(jax.jit(lambda k, s: gamma(k, s, 1.0)))
    assert ours == loops(jax.jit(bits_only))
    assert loops(jax.jit(lambda k, s: jax.random.gamma(k, s))) > ours
