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
nodes and weights of the standard normal for Gaussian components; for Student-t components (unit
variance) Gauss-Legendre in probability: the quantiles ``x_k = F^-1(u_k)`` at the ``K`` Gauss-Legendre
nodes ``u_k`` of ``(0, 1)``, with their weights. (Equal-weight quantile midpoints, the earlier rule,
under-weight the tails: on random mixtures of 2 to 7 components with 3 to 10 degrees of freedom their
rms error at 10 nodes was 3 to 7 times that of Gauss-Legendre, which is as accurate there as
Gauss-Hermite is for Gaussian components; ``benchmarks/results/bald_quadrature.md``.) The integrand
``log p_t(y) - log p_mix(y)`` is smooth and bounded by ``log T``, so few nodes suffice, and the
estimate is 0 when all components coincide and ``log T`` when they do not overlap. The outer mean
runs over at most ``max_outer`` components, the middle one of each of ``max_outer`` equal blocks
of the draws' order (all of them when ``T <= 32`` by default), the inner mixture over all ``T``,
with a control variate: ``KL(p_t || p_mix) = KL(p_t || q) + E_t[log q - log p_mix]``, ``q`` the
component of the mixture's mean and variance (the Gaussian, or the Student-t of the networks'
degrees of freedom, whose tails then match the mixture's); the first term (no mixture in it, cheap)
is averaged over all ``T`` components, only the second, small where the mixture is near ``q``, over
the ``M``. Cost per point: ``M K T`` component log densities.

An upper bound (:func:`bald_bound`): the Gaussian of the mixture's variance has the largest entropy
of all distributions with that variance, so ``I <= U = H[N(0, v_mix)] - (1/T) sum_t H[p_t]``, in
closed form at ``O(T)`` per point (for Gaussian components ``U`` is the estimator's first
term, and the second is ``-KL(p_mix || q) <= 0``). :func:`bald` caps its estimate at ``U``, and
:func:`top_bald` (:func:`bounded_top`) uses it to compute the estimate only for the points that can be
among the best: those whose ``U`` reaches the best estimates' threshold, in decreasing order of ``U``.

Classification models are scored from class probabilities ``[draws, n, classes]`` with the
estimator ``H[mean_t p_t] - mean_t H[p_t]`` (the classification scores are a separate module);
this module covers regression likelihoods.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy import stats

from sigmabnn import compiler
from sigmabnn.acquisition.batch import kth_best
from sigmabnn.errors import InputError
from sigmabnn.predict.components import Components
from sigmabnn.predict.mixture import component_log_density, lognormal_parts

__all__ = [
    "BALD_NODES",
    "MAX_OUTER",
    "aleatoric_variance",
    "bald",
    "bald_bound",
    "bounded_top",
    "epistemic_variance",
    "quadrature_nodes",
    "relative_epistemic_std",
    "top_bald",
]

#: Quadrature nodes per component of :func:`bald`.
BALD_NODES = 10
#: Components the outer mean of :func:`bald` runs over (evenly spaced in the draws' order).
MAX_OUTER = 32
#: Points per jitted BALD chunk (bounds the ``[c, M, K, T]`` intermediate).
_BALD_CHUNK = 256
#: Points :func:`top_bald` estimates at a time once it holds ``keep`` estimates (a multiple of the chunk).
TOP_BALD_BLOCK = 8 * _BALD_CHUNK


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
    (module docstring: Gauss-Hermite for ``df`` ``None``, otherwise the Student-t quantiles at the
    Gauss-Legendre nodes of probability)."""
    if k < 1:
        raise InputError(f"the quadrature needs at least one node, got {k}")
    if df is None:
        x, w = np.polynomial.hermite_e.hermegauss(k)
        return x, w / math.sqrt(2.0 * math.pi)
    u, w = np.polynomial.legendre.leggauss(k)
    x = stats.t.ppf(0.5 * (u + 1.0), df) * math.sqrt((df - 2.0) / df)
    return x, 0.5 * w


def _nodes_log_density(mu: jax.Array, var: jax.Array, y: jax.Array, df: float | None) -> jax.Array:
    """``[c, T, P]`` every network's log density at nodes ``y`` ``[c, P]``; ``mu``, ``var`` ``[c, T]``.

    The squared distances ``q = (y - mu)^2 / var`` are one contraction of the coefficients
    ``(mu^2 / var, -2 mu / var, 1 / var)`` with the powers ``(1, y, y^2)`` (the densities of
    :func:`sigmabnn.predict.mixture.component_log_density`); ``mu`` and ``y`` are standardised by the
    caller, so the cancellation in ``q`` costs no more than ``max(y^2 / var)`` ulps.
    """
    inv = 1.0 / var
    coef = jnp.stack([mu * mu * inv, -2.0 * mu * inv, inv], axis=2)  # [c, T, 3]
    powers = jnp.stack([jnp.ones_like(y), y, y * y], axis=1)  # [c, 3, P]
    q = jnp.maximum(jnp.einsum("ctj,cjp->ctp", coef, powers), 0.0)
    if df is None:
        return -0.5 * q - 0.5 * jnp.log(2.0 * jnp.pi * var)[:, :, None]
    norm = jax.scipy.special.gammaln(0.5 * (df + 1.0)) - jax.scipy.special.gammaln(0.5 * df)
    return norm - 0.5 * jnp.log(jnp.pi * (df - 2.0) * var)[:, :, None] - 0.5 * (df + 1.0) * jnp.log1p(q / (df - 2.0))


def _unit_log_density(y: jax.Array, df: float | None) -> jax.Array:
    """``log q(y)`` elementwise: ``q`` the zero-mean, unit-variance component (Gaussian, or Student-t with ``df``)."""
    return component_log_density(jnp.zeros(()), jnp.ones(()), y[..., None], df)


@functools.partial(compiler.jit, static_argnames=("df",))
def _bald_chunk(mu: jax.Array, var: jax.Array, outer: jax.Array, x: jax.Array, w: jax.Array, df: float | None):
    """MI ``[c]`` of components ``mu``, ``var`` ``[c, T]``; ``outer`` ``[M]`` component indices.

    The mixture is first standardised to mean 0 and variance 1 (the mutual information does not
    change under an affine map of ``y``). ``KL(p_o || p_mix) = G_o + E_o[log q - log p_mix]`` with
    ``q`` the unit-variance component (Gaussian or Student-t: :func:`_unit_log_density`) of the mixture's
    mean and variance, and ``G_o = KL(p_o || q)`` (a control variate): ``G_o`` is averaged over all ``T``
    components (cheap, no mixture), the rest over the ``M`` outer ones.
    """
    c, t_nets = mu.shape
    scale2 = jnp.var(mu, axis=1, keepdims=True) + jnp.mean(var, axis=1, keepdims=True)
    mu = (mu - jnp.mean(mu, axis=1, keepdims=True)) / jnp.sqrt(scale2)
    var = jnp.maximum(var / scale2, jnp.finfo(jnp.float64).tiny)
    y_all = mu[:, :, None] + jnp.sqrt(var)[:, :, None] * x  # [c, T, K] every component's nodes
    own_all = component_log_density(mu[:, :, None, None], var[:, :, None, None], y_all[..., None], df)  # [c, T, K]
    g_all = jnp.sum(w * (own_all - _unit_log_density(y_all, df)), axis=-1)  # [c, T]
    y = y_all[:, outer, :].reshape(c, -1)  # [c, M K]
    log_mix = jax.scipy.special.logsumexp(_nodes_log_density(mu, var, y, df), axis=1) - jnp.log(t_nets)  # [c, M K]
    rest = jnp.sum(w * (_unit_log_density(y, df) - log_mix).reshape(c, outer.shape[0], -1), axis=-1)
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
    return np.clip(out, 0.0, bald_bound(c))


def _unit_entropy(df: float | None) -> float:
    """Entropy in nats of a zero-mean, unit-variance component (Gaussian, or Student-t with ``df``)."""
    if df is None:
        return 0.5 * math.log(2.0 * math.pi * math.e)
    return float(stats.t.entropy(df)) + 0.5 * math.log((df - 2.0) / df)


def bald_bound(c: Components) -> np.ndarray:
    """``[n]`` the upper bound ``U >= I(y; theta)`` in nats (module docstring), float64, first target.

    ``U = log(2 pi e v_mix) / 2 - h(df) - (1/T) sum_t log(var_t) / 2``: ``v_mix`` the mixture's
    variance, ``h`` the entropy of a unit-variance component. ``U >= 0``, and ``U = I`` when the
    networks agree (``U`` is ``log(1 + v / a) / 2`` for means of variance ``v`` and one noise variance ``a``).
    """
    mu, var = c.mean[..., 0], np.maximum(c.var[..., 0], np.finfo(np.float64).tiny)
    v_mix = np.var(mu, axis=1) + np.mean(var, axis=1)
    gauss = 0.5 * np.log(2.0 * np.pi * np.e * v_mix)
    return np.maximum(gauss - _unit_entropy(c.df) - 0.5 * np.mean(np.log(var), axis=1), 0.0)


def bounded_top(
    bound: np.ndarray, score: Callable[[np.ndarray], np.ndarray], keep: int, incumbents: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, scores)``: the points that can be among the ``keep`` best scores of ``incumbents`` (scores already
    held, e.g. earlier chunks' best) and the points, with their scores, given an upper bound of each point's score.

    Points are scored (``score(rows) -> [len(rows)]``, never above ``bound[rows]``) in decreasing order of
    ``bound`` ``[n]``, first the ``keep`` largest bounds, then at most :data:`TOP_BALD_BLOCK` at a time, only
    those whose bound reaches the ``keep``-th best score so far, until none does; every point left out has a
    score at most its bound, below that threshold, so the ``keep`` best of the incumbents and the returned
    points are those of all points (ties at the threshold included). ``rows``: in increasing order.
    """
    if keep < 1:
        raise InputError(f"keep must be >= 1, got {keep}")
    held = np.zeros(0) if incumbents is None else np.asarray(incumbents, np.float64)
    order = np.argsort(-np.asarray(bound), kind="stable")
    done, scores, start = [], [], 0
    while start < len(order):
        threshold = kth_best(np.concatenate([held, *scores]), keep)
        if bound[order[start]] < threshold:
            break
        rows = order[start : start + max(keep - len(held) - start, TOP_BALD_BLOCK)]
        rows = rows[bound[rows] >= threshold]  # a prefix: the bounds decrease
        done.append(rows)
        scores.append(np.asarray(score(rows), np.float64))
        start += len(rows)
    if not done:
        return np.zeros(0, np.int64), np.zeros(0)
    rows, values = np.concatenate(done), np.concatenate(scores)
    by_row = np.argsort(rows, kind="stable")
    return rows[by_row], values[by_row]


def top_bald(
    c: Components, keep: int, incumbents: np.ndarray | None = None, **bald_options
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`bounded_top` of the points of ``c`` with :func:`bald` (``bald_options``: its options) bounded by
    :func:`bald_bound`: the points that can be among the ``keep`` best BALD scores, with their scores."""

    def score(rows: np.ndarray) -> np.ndarray:
        return bald(Components(c.mean[rows], c.var[rows], c.df, c.log10), **bald_options)

    return bounded_top(bald_bound(c), score, keep, incumbents)
