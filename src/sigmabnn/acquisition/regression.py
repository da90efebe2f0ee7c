"""Acquisition scores of a regression model's predictive mixture: which candidate points are worth labelling.

Every score is a function of the mixture's components at the candidates
(:class:`~sigmabnn.predict.components.Components`: each of the ``T`` networks' log-space mean and
aleatoric variance), so it applies to any fitted model with draws (MCMC, VI, deep ensemble):

- :func:`epistemic_variance`: the variance of the networks' means in log space (the spread the
  data could remove; summed over targets);
- :func:`relative_epistemic_std`: the std over the networks of each network's mean of the target
  itself, divided by the mixture's mean (for a log target the component means are log-normal
  means ``10**mu * exp((ln 10)**2 var / 2)``);
- :func:`bald`: the mutual information ``I(y; theta)`` between the label and the weights
  (Houlsby et al. 2011, "Bayesian active learning by disagreement"), in nats.

The BALD estimator. ``I(y; theta) = H[p_mix] - (1/T) sum_t H[p_t] = (1/T) sum_t KL(p_t || p_mix)``
with ``p_mix = (1/T) sum_t p_t`` (the draws stand for the posterior). Each KL is an expectation
under ``p_t``, computed by quadrature on ``K`` nodes ``y = mu_t + sqrt(var_t) x_k``: Gauss-Hermite
nodes and weights of the standard normal for Gaussian components, for Student-t components (unit
variance) the ``K`` quantiles at probabilities ``(k + 1/2) / K`` with equal weights. The integrand
``log p_t(y) - log p_mix(y)`` is smooth and bounded by ``log T``, so few nodes suffice, and the
estimate is 0 when all components coincide and ``log T`` when they do not overlap. The outer mean
runs over at most ``max_outer`` components, the middle one of each of ``max_outer`` equal blocks
of the draws' order (all of them when ``T <= 32`` by default), the inner mixture over all ``T``,
with a control variate: ``KL(p_t || p_mix) = KL(p_t || q) + E_t[log q - log p_mix]``, ``q`` the
Gaussian of the mixture's mean and variance; the first term (no mixture in it, cheap) is averaged
over all ``T`` components, only the second, small where the mixture is near Gaussian, over the
``M``. Cost per point: ``M K T`` component log densities.

Classification models are scored from class probabilities ``[draws, n, classes]`` with the
estimator ``H[mean_t p_t] - mean_t H[p_t]`` (the classification scores are a separate module);
this module covers regression likelihoods.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from sigmabnn import compiler
from sigmabnn.errors import InputError
from sigmabnn.predict.components import Components
from sigmabnn.predict.mixture import component_log_density, lognormal_parts

__all__ = [
    "BALD_NODES",
    "MAX_OUTER",
    "aleatoric_variance",
    "bald",
    "epistemic_variance",
    "quadrature_nodes",
    "relative_epistemic_std",
]

#: Quadrature nodes per component of :func:`bald`.
BALD_NODES = 10
#: Components the outer mean of :func:`bald` runs over (evenly spaced in the draws' order).
MAX_OUTER = 32
#: Points per jitted BALD chunk (bounds the ``[c, M, K, T]`` intermediate).
_BALD_CHUNK = 256


def epistemic_variance(c: Components) -> np.ndarray:
    """``[n]`` the variance over the networks of their log-space means, summed over targets (float64)."""
    return np.var(c.mean, axis=1).sum(axis=-1)


def aleatoric_variance(c: Components) -> np.ndarray:
    """``[n]`` the networks' mean aleatoric variance in log space, summed over targets (float64)."""
    return np.mean(c.var, axis=1).sum(axis=-1)


def relative_epistemic_std(c: Components) -> np.ndarray:
    """``[n]`` the std over the networks of each network's mean of the target itself over the
    mixture mean (first target); for a log target the components' log-normal means, else ``mu``."""
    mu, var = c.mean[..., 0], c.var[..., 0]
    m = np.asarray(lognormal_parts(jnp.asarray(mu), jnp.asarray(var))[0]) if c.log10 else mu
    return np.std(m, axis=1) / np.maximum(np.abs(np.mean(m, axis=1)), np.finfo(np.float64).tiny)


@functools.lru_cache(maxsize=16)
def quadrature_nodes(df: float | None, k: int = BALD_NODES) -> tuple[np.ndarray, np.ndarray]:
    """``(x [k], w [k])``: nodes of a zero-mean, unit-variance component and weights summing to 1
    (module docstring: Gauss-Hermite for ``df`` ``None``, Student-t quantile midpoints otherwise)."""
    if k < 1:
        raise InputError(f"the quadrature needs at least one node, got {k}")
    if df is None:
        x, w = np.polynomial.hermite_e.hermegauss(k)
        return x, w / math.sqrt(2.0 * math.pi)
    x = stats.t.ppf((np.arange(k) + 0.5) / k, df) * math.sqrt((df - 2.0) / df)
    return x, np.full(k, 1.0 / k)


def _node_log_densities(mu: jax.Array, var: jax.Array, y: jax.Array, df: float | None) -> jax.Array:
    """``[T, c, P]`` every network's log density at nodes ``y`` ``[c, P]``; ``mu``, ``var`` ``[c, T]``."""
    t_nets, (c, p) = mu.shape[1], y.shape
    mu_b = jnp.broadcast_to(jnp.swapaxes(mu, 0, 1)[:, :, None], (t_nets, c, p)).reshape(t_nets, -1, 1)
    var_b = jnp.broadcast_to(jnp.swapaxes(var, 0, 1)[:, :, None], (t_nets, c, p)).reshape(t_nets, -1, 1)
    return component_log_density(mu_b, var_b, y.reshape(-1, 1), df).reshape(t_nets, c, p)


def _gaussian_log_density(m: jax.Array, v: jax.Array, y: jax.Array) -> jax.Array:
    """``log N(y; m, v)`` with ``m``, ``v`` ``[c]`` broadcast over the trailing axes of ``y``."""
    shape = (-1,) + (1,) * (y.ndim - 1)
    m, v = m.reshape(shape), v.reshape(shape)
    return -0.5 * (jnp.square(y - m) / v + jnp.log(2.0 * jnp.pi * v))


@functools.partial(compiler.jit, static_argnames=("df",))
def _bald_chunk(mu: jax.Array, var: jax.Array, outer: jax.Array, x: jax.Array, w: jax.Array, df: float | None):
    """MI ``[c]`` of components ``mu``, ``var`` ``[c, T]``; ``outer`` ``[M]`` component indices.

    ``KL(p_o || p_mix) = G_o + E_o[log q - log p_mix]`` with ``q`` the Gaussian of the mixture's
    mean and variance and ``G_o = KL(p_o || q)`` (a control variate): ``G_o`` is averaged over all
    ``T`` components (cheap, no mixture), the rest over the ``M`` outer ones.
    """
    c, t_nets = mu.shape
    m_mix = jnp.mean(mu, axis=1)
    v_mix = jnp.var(mu, axis=1) + jnp.mean(var, axis=1)
    y_all = mu[:, :, None] + jnp.sqrt(var)[:, :, None] * x  # [c, T, K] every component's nodes
    own_all = component_log_density(mu[:, :, None, None], var[:, :, None, None], y_all[..., None], df)  # [c, T, K]
    g_all = jnp.sum(w * (own_all - _gaussian_log_density(m_mix, v_mix, y_all)), axis=-1)  # [c, T]
    y = y_all[:, outer, :]  # [c, M, K]
    logp = _node_log_densities(mu, var, y.reshape(c, -1), df).reshape(t_nets, c, outer.shape[0], x.shape[0])
    log_mix = jax.scipy.special.logsumexp(logp, axis=0) - jnp.log(t_nets)  # [c, M, K]
    rest = jnp.sum(w * (_gaussian_log_density(m_mix, v_mix, y) - log_mix), axis=-1)  # [c, M]
    return jnp.mean(g_all, axis=1) + jnp.mean(rest, axis=1)


def bald(c: Components, *, nodes: int = BALD_NODES, max_outer: int | None = MAX_OUTER) -> np.ndarray:
    """``[n]`` the mutual information ``I(y; theta)`` in nats at each point (module docstring), float64.

    Raises :class:`~sigmabnn.errors.InputError` for several targets (the estimator is for one).
    """
    if c.mean.shape[-1] != 1:
        raise InputError(f"BALD is implemented for one target, the model has {c.mean.shape[-1]}")
    mu, var = c.mean[..., 0], np.maximum(c.var[..., 0], np.finfo(np.float64).tiny)
    n, t_nets = mu.shape
    m = t_nets if max_outer is None else max(1, min(int(max_outer), t_nets))
    outer = jnp.asarray(((np.arange(m) + 0.5) * t_nets / m).astype(np.int32))  # midpoints of M equal blocks
    x, w = (jnp.asarray(a) for a in quadrature_nodes(c.df, nodes))
    out = np.empty(n)
    for start in range(0, n, _BALD_CHUNK):
        stop = min(start + _BALD_CHUNK, n)
        pad = _BALD_CHUNK - (stop - start) if n > _BALD_CHUNK else 0
        mu_c = np.pad(mu[start:stop], ((0, pad), (0, 0)), mode="edge")
        var_c = np.pad(var[start:stop], ((0, pad), (0, 0)), mode="edge")
        out[start:stop] = np.asarray(_bald_chunk(mu_c, var_c, outer, x, w, c.df))[: stop - start]
    return np.maximum(out, 0.0)
