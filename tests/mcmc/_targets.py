"""Small known targets and a multi-chain runner shared by the HMC/NUTS tests."""

from __future__ import annotations

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np


def gaussian(mean, cov):
    """Log-density of ``N(mean, cov)`` (unnormalised)."""
    mean = jnp.asarray(mean)
    precision = jnp.linalg.inv(jnp.asarray(cov))

    def logdensity(x):
        r = x - mean.astype(x.dtype)
        return -0.5 * r @ (precision.astype(x.dtype) @ r)

    return logdensity


def diagonal_gaussian(mean, std):
    mean, std = jnp.asarray(mean), jnp.asarray(std)

    def logdensity(x):
        z = (x - mean.astype(x.dtype)) / std.astype(x.dtype)
        return -0.5 * jnp.sum(z * z)

    return logdensity


def banana(x):
    """A curved 2-d target: x0 ~ N(0, 2^2), x1 | x0 ~ N(0.5 x0^2 - 1, 0.5^2)."""
    return -0.5 * (x[0] / 2.0) ** 2 - 0.5 * ((x[1] - 0.5 * x[0] ** 2 + 1.0) / 0.5) ** 2


def correlated_cov(d: int, seed: int, correlation: float = 0.8) -> np.ndarray:
    """A dense covariance with scales in [0.3, 3] and strong random correlations."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(d, d))
    q, _ = np.linalg.qr(a)
    eig = np.geomspace(1.0 - correlation, 1.0 + correlation * d, d)
    corr = q @ np.diag(eig) @ q.T
    s = np.sqrt(np.diag(corr))
    corr = corr / s[:, None] / s[None, :]
    scales = np.geomspace(0.3, 3.0, d)
    return corr * scales[:, None] * scales[None, :]


def run_chains(step_fn, rng_key, init_states, num_draws: int):
    """Run ``step_fn(key, state) -> (state, info)`` for every chain (vmap) ``num_draws`` times (scan).

    Returns (positions ``[chain, draw, d]`` numpy, infos with leading ``[chain, draw]``).
    """

    def one_chain(key, state):
        def body(state, key):
            state, info = step_fn(key, state)
            return state, (state.position, info)

        return jax.lax.scan(body, state, jax.random.split(key, num_draws))[1]

    num_chains = jax.tree.leaves(init_states)[0].shape[0]
    positions, infos = jax.jit(jax.vmap(one_chain))(jax.random.split(rng_key, num_chains), init_states)
    return np.asarray(positions), infos


def assert_moments(draws: np.ndarray, mean: np.ndarray, var: np.ndarray, num_sigma: float = 4.0) -> None:
    """Per coordinate: sample mean and variance within ``num_sigma`` Monte-Carlo standard errors (from ESS).

    ``draws`` is ``[chain, draw, d]``. The MC error of the mean is ``sd / sqrt(ESS(x))``; that of
    the variance is ``sd((x - mu)^2) / sqrt(ESS((x - mu)^2))`` with the known mean.
    """
    draws = np.asarray(draws, np.float64)
    mean, var = np.asarray(mean, np.float64), np.asarray(var, np.float64)
    for i in range(draws.shape[-1]):
        x = draws[..., i]
        ess_mean = float(az.ess(x, method="mean"))
        err_mean = np.sqrt(var[i] / ess_mean)
        assert abs(x.mean() - mean[i]) < num_sigma * err_mean, (
            f"coordinate {i}: mean {x.mean():.4f} vs {mean[i]:.4f} (MC se {err_mean:.4f}, ESS {ess_mean:.0f})"
        )
        sq = (x - mean[i]) ** 2
        ess_sq = float(az.ess(sq, method="mean"))
        err_var = sq.std() / np.sqrt(ess_sq)
        assert abs(sq.mean() - var[i]) < num_sigma * err_var, (
            f"coordinate {i}: variance {sq.mean():.4f} vs {var[i]:.4f} (MC se {err_var:.4f}, ESS {ess_sq:.0f})"
        )
