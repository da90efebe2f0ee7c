"""Special functions of the derived-feature language that are integrals, computed by quadrature.

:func:`threshold_integral` is the one such function: the integral over the squared
centre-of-mass energy ``s`` of a pair-production rate above its threshold, with a
Breit-Wigner resonance and a power-law luminosity. It exists so that a
cross-section proxy can integrate a resonance over ``s`` instead of evaluating it at
one effective ``s`` (``docs/nlo_research.md``, section 8). Everything is float64 NumPy,
element-wise over rows; units are whatever the arguments share (GeV and GeV^2 for the
built-in data set).
"""

from __future__ import annotations

import numpy as np

__all__ = ["QUADRATURE_NODES", "RESONANCE_HALF_WIDTHS", "threshold_integral"]

QUADRATURE_NODES = 96
"""Gauss-Legendre nodes per panel (three panels per integral)."""
RESONANCE_HALF_WIDTHS = 50.0
"""Half-width of the resonance panel, in units of ``M W``: ``s`` from ``M^2 - min(50 M W, M^2 / 2)``
to ``M^2 + 50 M W``."""

_X, _W = np.polynomial.legendre.leggauss(QUADRATURE_NODES)


def _gauss(lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Nodes ``[n, q]`` and weights ``[n, q]`` of Gauss-Legendre on ``[lo, hi]`` per row (empty: weight 0)."""
    half = 0.5 * np.maximum(hi - lo, 0.0)[:, None]
    return 0.5 * (lo + hi)[:, None] + half * _X, half * _W


def _integrand(s: np.ndarray, s0: np.ndarray, m2: np.ndarray, mw: np.ndarray, p: np.ndarray, k: int) -> np.ndarray:
    """``s^(1-p) beta^3 g_k(s)`` without the Breit-Wigner denominator (the caller divides by it or not)."""
    beta2 = np.clip(1.0 - s0 / s, 0.0, 1.0)
    f = s ** (1.0 - p) * beta2**1.5
    if k == 1:
        f = f * (s - m2)
    return f


def threshold_integral(a, mass, width, power, kind, span) -> np.ndarray:
    """``I_k = int_{a^2}^{a^2 + span} ds s^(1-p) beta^3 g_k(s)``, element-wise, float64.

    ``beta^2 = 1 - a^2 / s`` (the velocity of a pair produced at threshold energy ``a``;
    ``beta^3``: a P-wave), a luminosity ``s^(-p)`` (``p = power``) times the flux factor ``s``, and
    ``g_0 = 1 / D``, ``g_1 = (s - M^2) / D``, ``g_2 = 1`` with the Breit-Wigner denominator
    ``D = (s - M^2)^2 + M^2 W^2`` (``M = mass``, ``W = width``): the squared propagator, the
    interference of the resonance with a contact term, and the contact term alone.

    Quadrature: three Gauss-Legendre panels of :data:`QUADRATURE_NODES` nodes: below, across and
    above the resonance window ``M^2 - min(c M W, M^2 / 2) <= s <= M^2 + c M W`` (``c =``
    :data:`RESONANCE_HALF_WIDTHS`, clipped to the range).
    Across the window the variable is ``theta`` with ``s = M^2 + M W tan(theta)``, which makes the
    Breit-Wigner flat; outside it ``log(s - a^2)``, which resolves the threshold and the long tail.
    Relative error below 1e-6 against adaptive quadrature over the built-in data's mass range
    (``tests/data/test_special.py``).

    Args:
        a: threshold energy (``|m_1| + |m_2|``), > 0, array-like ``[n]`` or scalar.
        mass, width: resonance mass and width (> 0).
        power: luminosity exponent ``p``.
        kind: ``0``, ``1`` or ``2`` (which ``g_k``); a whole number.
        span: length of the integration range in ``s`` (> 0), e.g. the collider's ``s`` reach.

    Returns:
        ``[n]`` float64 (a 0-d array for scalar arguments); ``NaN`` where an argument is ``NaN``
        or out of range.
    """
    a, m, w, p, k, u = np.broadcast_arrays(
        *(np.asarray(v, dtype=np.float64) for v in (a, mass, width, power, kind, span))
    )
    shape = a.shape
    a, m, w, p, k, u = (v.reshape(-1) for v in (a, m, w, p, k, u))
    out = np.full(a.shape, np.nan)
    ok = (a > 0) & (m > 0) & (w > 0) & (u > 0) & np.isfinite(p) & np.isin(k, (0.0, 1.0, 2.0))
    for kind_ in (0, 1, 2):
        rows = ok & (k == kind_)
        if rows.any():
            out[rows] = _integral(a[rows], m[rows], w[rows], p[rows], u[rows], kind_)
    return out.reshape(shape)


def _integral(a, m, w, p, u, k: int) -> np.ndarray:
    s0 = a * a
    s1 = s0 + u
    m2, mw = m * m, m * w
    pcol = p[:, None]
    s0c, m2c, mwc = s0[:, None], m2[:, None], mw[:, None]
    if k == 2:  # no resonance: one panel in log(s - a^2)
        win_lo = win_hi = s1
    else:
        win_lo = np.clip(m2 - np.minimum(RESONANCE_HALF_WIDTHS * mw, 0.5 * m2), s0, s1)
        win_hi = np.clip(m2 + RESONANCE_HALF_WIDTHS * mw, s0, s1)
    total = np.zeros_like(a)
    # below and above the window: x = log(s - a^2); the integrand vanishes like (s - a^2)^1.5 at threshold
    floor = 1e-12 * s1
    for lo, hi in ((s0, win_lo), (win_hi, s1)):
        has = hi > lo
        xl = np.log(np.maximum(lo - s0, floor))
        xh = np.log(np.maximum(hi - s0, floor))
        x, wt = _gauss(xl, np.where(has, xh, xl))
        du = np.exp(x)
        s = s0c + du
        f = _integrand(s, s0c, m2c, mwc, pcol, k) * du
        if k != 2:
            f = f / (np.square(s - m2c) + np.square(mwc))
        total += np.where(has, np.sum(f * wt, axis=1), 0.0)
    if k != 2:  # across the window: s = M^2 + M W tan(theta), ds / D = dtheta / (M W)
        tl = np.arctan((win_lo - m2) / mw)
        th = np.arctan((win_hi - m2) / mw)
        t, wt = _gauss(tl, th)
        s = m2c + mwc * np.tan(t)
        f = _integrand(s, s0c, m2c, mwc, pcol, k) / mwc
        total += np.sum(f * wt, axis=1)
    return total
