"""The Student-t CDF in closed-form series, fast and with relative precision in both tails.

For ``t_nu`` and ``x = nu / (nu + z^2)``, the lower tail is ``G(-|z|) = I_x(a, 1/2) / 2`` with
``a = nu / 2`` (``I``: the regularised incomplete beta function). A general incomplete-beta routine
(a continued fraction iterated to convergence, as ``jax.scipy.special.betainc``) costs microseconds
per value on a CPU: at a thousand networks and thousands of points, seconds per call and seconds of
compilation. Here the two hypergeometric series of ``I`` (DLMF 8.17.8, Abramowitz & Stegun 26.5.4),

- ``I_x(a, b) = x^a y^b / (a B(a, b)) * sum_n [(a + b)_n / (a + 1)_n] x^n``, used for ``x <= 1/2``
  (the far tail, ``|z| >= sqrt(nu)``: every term positive, so small tail probabilities keep their
  relative precision), and
- ``I_x(a, b) = 1 - y^b x^a / (b B(a, b)) * sum_n [(a + b)_n / (b + 1)_n] y^n`` with ``y = 1 - x``,
  used for ``x > 1/2`` (``|z| < sqrt(nu)``; the tail probability there is at least
  ``P(T < -sqrt(nu))``, 0.058 for ``nu = 4`` and 5e-4 for ``nu = 16``, so the subtraction costs at most
  a few digits),

are summed with a fixed number of terms (:func:`_num_terms`: enough for double precision at the
worst ``x`` or ``y = 1/2`` of each branch), so the CDF is a short chain of multiply-adds that XLA
fuses. ``x`` and ``y`` enter through ``log x = -log1p(z^2 / nu)`` and ``log y = -log1p(nu / z^2)``,
so neither is formed by a cancelling subtraction. Above :data:`MAX_SERIES_DF` degrees of freedom the
second series' region reaches tail probabilities small enough to lose relative precision, and the CDF
falls back to ``betainc``.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp

Array = jax.Array

__all__ = ["MAX_SERIES_DF", "student_t_cdf"]

#: Most degrees of freedom summed by the series; above, :func:`student_t_cdf` uses ``jax.scipy.special.betainc``.
MAX_SERIES_DF = 16.0
#: Most terms of either series (the bound of :func:`_num_terms`' search).
MAX_TERMS = 400
#: Relative size of the first neglected term at which a series is cut (below double precision).
_CUT = 1e-18


def _coefficients(first: float, second: float, count: int) -> tuple[float, ...]:
    """``(first)_n / (second)_n`` for ``n = 0..count-1`` (Pochhammer symbols), float64."""
    out, c = [], 1.0
    for n in range(count):
        out.append(c)
        c *= (first + n) / (second + n)
    return tuple(out)


def _num_terms(first: float, second: float, at: float = 0.5) -> int:
    """Terms of ``sum_n [(first)_n / (second)_n] at^n`` until a term is below :data:`_CUT` times the sum
    (and the terms decrease); more than :data:`MAX_TERMS` returns ``MAX_TERMS + 1``."""
    total, term = 0.0, 1.0
    for n in range(MAX_TERMS + 1):
        total += term
        ratio = at * (first + n) / (second + n)
        term *= ratio
        if ratio < 1.0 and term < _CUT * total:
            return n + 2
    return MAX_TERMS + 1


@functools.cache
def _series(df: float) -> tuple[tuple[float, ...], tuple[float, ...], float] | None:
    """The two series' coefficients and ``log B(a, 1/2)`` for ``df`` degrees of freedom; ``None`` above
    :data:`MAX_SERIES_DF` (or when either series would need more than :data:`MAX_TERMS` terms)."""
    if df > MAX_SERIES_DF:
        return None
    a, b = 0.5 * df, 0.5
    n_far, n_near = _num_terms(a + b, a + 1.0), _num_terms(a + b, b + 1.0)
    if max(n_far, n_near) > MAX_TERMS:
        return None
    log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    return _coefficients(a + b, a + 1.0, n_far), _coefficients(a + b, b + 1.0, n_near), log_beta


def _horner(coefficients: tuple[float, ...], x: Array) -> Array:
    out = jnp.full_like(x, coefficients[-1])
    for c in coefficients[-2::-1]:
        out = out * x + c
    return out


def student_t_cdf(z: Array, df: float) -> Array:
    """``P(T <= z)`` for ``T ~ t_df`` (standard: location 0, scale 1), elementwise, float64.

    ``z``: any shape; ``df``: a Python number ``> 0`` (fixed when traced). Relative precision of about
    ``1e-12`` in the lower tail (far tails included, e.g. ``1e-30``), ``0`` and ``1`` at ``-inf`` and
    ``inf``, NaN for NaN.
    """
    z = jnp.asarray(z, jnp.float64)
    series = _series(float(df))
    if series is None:
        tail = 0.5 * jax.scipy.special.betainc(0.5 * df, 0.5, df / (df + jnp.square(z)))
        return jnp.where(z < 0, tail, 1.0 - tail)
    far_c, near_c, log_beta = series
    a, b = 0.5 * df, 0.5
    u = jnp.square(z) / df
    log_x, log_y = -jnp.log1p(u), -jnp.log1p(1.0 / u)  # x = df / (df + z^2), y = 1 - x; u = 0: log y = -inf
    x, y = jnp.exp(log_x), jnp.exp(log_y)
    power = a * log_x + b * log_y - log_beta
    far = jnp.exp(power - math.log(a)) * _horner(far_c, jnp.minimum(x, 0.5))  # I_x(a, b), x <= 1/2
    near = 1.0 - jnp.exp(power - math.log(b)) * _horner(near_c, jnp.minimum(y, 0.5))  # x > 1/2
    tail = 0.5 * jnp.where(x <= 0.5, far, near)
    return jnp.where(z < 0, tail, 1.0 - tail)
