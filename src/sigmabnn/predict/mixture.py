"""The mathematics of the predictive mixture: moments, log-normal moments, densities, CDFs.

For every sampled network ``t = 1..T`` (all chains and draws) and input ``x``, the likelihood
gives a Gaussian ``N(mu_t(x), sigma_t^2(x))`` in the model space, with
``mu_t = likelihood.mean(f_t(x))`` and ``sigma_t^2 = likelihood.aleatoric_variance(f_t(x),
lambda_t)`` using that draw's noise precision ``lambda_t``. The predictive distribution is the
equally weighted mixture of these T Gaussians.

In the *log space* of the target (``log10 y`` for a log target, else ``y``; the model space with
the standardisation undone):

- ``mean = (1/T) sum_t mu_t``                       (eq. 4.19 of the thesis draft)
- ``epistemic_std^2 = (1/T) sum_t (mu_t - mean)^2``  (eq. 4.20 with 1/T instead of 1/(T-1))
- ``aleatoric_std^2 = (1/T) sum_t sigma_t^2``
- ``std^2 = epistemic_std^2 + aleatoric_std^2``     (the mixture variance)
- ``covariance`` ``[n, t, t]`` across outputs = the mixture covariance,
  ``(1/T) sum_t (mu_t mu_t^T + diag sigma_t^2) - mean mean^T`` (on request).

In the *original* space of a log target, ``Y = 10^U`` with ``U ~ N(mu_t, sigma_t^2)`` per draw is
log-normal, so its moments are exact: with ``a = ln 10``, ``E[Y | t] = exp(a mu_t + a^2
sigma_t^2 / 2)`` and ``Var[Y | t] = (exp(a^2 sigma_t^2) - 1) E[Y | t]^2``; the mean, epistemic
(``Var_t E[Y|t]``) and aleatoric (``E_t Var[Y|t]``) parts follow by the law of total variance.
Nothing is approximated by a Gaussian in the original space.

Student-t noise (:class:`~sigmabnn.model.likelihoods.StudentT`, ``nu`` degrees of freedom): the
latent per-point weight of a new point is integrated out, so each network's predictive is a
Student-t ``t_nu(mu_t, s_t)`` with scale ``s_t = 1 / sqrt(tau_t)`` (model space) and variance
``sigma_t^2 = nu / (nu - 2) s_t^2``. With
:class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT` the scale is the network's own output,
``s_t(x)``, per point and per network; everything here is per point and network, so that case is
exact in the same way. The mixture moments above hold as written, intervals come from t draws
(:mod:`sigmabnn.predict.sampling`) and the log predictive density is that of the mixture of t's.
``10^U`` has no finite moments when ``U`` is t-distributed, so in the original space the moments
are those of the log-normals with each network's log-space mean and variance (moment matching;
the intervals, being quantiles, remain exact).

Every function here takes and returns float64 JAX arrays and runs inside the jitted chunk
functions of :mod:`sigmabnn.predict.engine`.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from sigmabnn.predict.t_cdf import student_t_cdf

Array = jax.Array

__all__ = [
    "LN10",
    "component_cdf",
    "component_log_density",
    "component_scale",
    "group_stats",
    "lognormal_moments",
    "lognormal_parts",
    "merge_stats",
    "mixture_cdf",
    "mixture_log_density",
    "moments",
]

LN10 = math.log(10.0)


def lognormal_parts(mu: Array, var: Array) -> tuple[Array, Array]:
    """``E[Y | t]``, ``Var[Y | t]`` of each component ``Y = 10**N(mu_t, var_t)`` (same shapes, float64)."""
    m = jnp.exp(LN10 * mu + 0.5 * LN10**2 * var)
    return m, jnp.expm1(LN10**2 * var) * jnp.square(m)


def moments(mu: Array, var: Array, want_cov: bool) -> dict[str, Array]:
    """Mixture moments of components ``mu``, ``var`` ``[T, c, t]``: ``mean``, ``epistemic_var`` and
    ``aleatoric_var`` ``[c, t]`` and, with ``want_cov``, ``covariance`` ``[c, t, t]``."""
    mean = mu.mean(0)
    out = {"mean": mean, "epistemic_var": jnp.mean(jnp.square(mu - mean), axis=0), "aleatoric_var": var.mean(0)}
    if want_cov:
        centred = mu - mean
        cov = jnp.einsum("tci,tcj->cij", centred, centred) / mu.shape[0]
        out["covariance"] = cov + jax.vmap(jnp.diag)(out["aleatoric_var"])
    return out


def lognormal_moments(mu: Array, var: Array, want_cov: bool) -> dict[str, Array]:
    """Exact moments (:func:`moments`) of the mixture of log-normals ``10**N(mu_t, var_t)``."""
    return moments(*lognormal_parts(mu, var), want_cov)


def group_stats(mu: Array, var: Array, w: Array) -> tuple[Array, Array, Array, Array]:
    """``(n, mean, m2, sum_var)`` of one group's ``mu``, ``var`` ``[G, c, t]`` with network weights
    ``w`` ``[G]`` (1, or 0 for a padding network): weighted count, mean, sum of squared deviations
    from the mean, and sum of ``var``."""
    wb = w[:, None, None]
    n = jnp.sum(w)
    mean = jnp.sum(wb * mu, axis=0) / n
    return n, mean, jnp.sum(wb * jnp.square(mu - mean), axis=0), jnp.sum(wb * var, axis=0)


def merge_stats(a: tuple, b: tuple) -> tuple:
    """Two groups' :func:`group_stats` combined (Chan, Golub & LeVeque 1979: the pairwise update of
    the mean and the sum of squared deviations, free of the cancellation of raw power sums)."""
    na, ma, qa, va = a
    nb, mb, qb, vb = b
    n = na + nb
    delta = mb - ma
    return n, ma + delta * (nb / n), qa + qb + jnp.square(delta) * (na * nb / n), va + vb


def component_log_density(mu: Array, var: Array, y: Array, df: float | None = None) -> Array:
    """``log prod_j p(y_j; mu_tj, var_tj)`` ``[T, c]`` per network and point.

    ``mu``, ``var``: ``[T, c, t]``; ``y``: ``[c, t]``.

    ``p`` is the Gaussian with that mean and variance, or with ``df`` the Student-t with ``df``
    degrees of freedom, location ``mu`` and scale ``sqrt(var (df - 2) / df)`` (the same variance).
    """
    var = jnp.maximum(var, jnp.finfo(jnp.float64).tiny)
    if df is None:
        logp = -0.5 * (jnp.square(y - mu) / var + jnp.log(2.0 * jnp.pi * var))
    else:
        scale2 = var * ((df - 2.0) / df)
        logp = (
            jax.scipy.special.gammaln(0.5 * (df + 1.0))
            - jax.scipy.special.gammaln(0.5 * df)
            - 0.5 * jnp.log(jnp.pi * df * scale2)
            - 0.5 * (df + 1.0) * jnp.log1p(jnp.square(y - mu) / (df * scale2))
        )
    return logp.sum(-1)


def mixture_log_density(mu: Array, var: Array, y: Array, df: float | None = None) -> Array:
    """``log (1/T) sum_t prod_j p(y_j; mu_tj, var_tj)`` per point ``[c]`` (:func:`component_log_density`)."""
    return jax.scipy.special.logsumexp(component_log_density(mu, var, y, df), axis=0) - jnp.log(mu.shape[0])


def component_scale(var: Array, df: float | None) -> Array:
    """The Gaussian std, or with ``df`` the Student-t scale, of components of variance ``var``."""
    return jnp.sqrt(var if df is None else var * ((df - 2.0) / df))


def component_cdf(mu: Array, scale: Array, y: Array, df: float | None = None) -> Array:
    """``G((y - mu_t) / scale_t)`` ``[T, ...]``: each component's CDF at ``y`` (see :func:`mixture_cdf`), float64."""
    mu, scale, y = (jnp.asarray(a, jnp.float64) for a in (mu, scale, y))
    z = (y - mu) / jnp.maximum(scale, jnp.finfo(jnp.float64).tiny)
    return jax.scipy.special.ndtr(z) if df is None else student_t_cdf(z, df)


def mixture_cdf(mu: Array, scale: Array, y: Array, df: float | None = None) -> Array:
    """``F(y) = (1/T) sum_t G((y - mu_t) / scale_t)``: ``mu``, ``scale`` ``[T, ...]``, ``y`` ``[...]`` -> ``[...]``.

    ``G`` is the standard-normal CDF, or with ``df`` the Student-t CDF with ``df`` degrees of freedom
    (``scale`` is then the t scale, not the std), from the series of :mod:`sigmabnn.predict.t_cdf`
    (``G(z) = I_x(df / 2, 1 / 2) / 2`` for ``z < 0`` with ``x = df / (df + z^2)``, and ``1 - G(-z)``
    above), so small tail probabilities keep their relative precision. The result is
    the probability integral transform (PIT) of ``y`` under the equally weighted mixture, float64.
    """
    return component_cdf(mu, scale, y, df).mean(0)
