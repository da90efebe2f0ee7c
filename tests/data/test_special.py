"""The threshold integral of the derived-feature language against adaptive quadrature."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate

from sigmabnn.data.special import threshold_integral

MZ, GZ = 91.1876, 2.4952


def reference(a: float, k: int, p: float, span: float, mass: float = MZ, width: float = GZ) -> float:
    """The same integral by scipy's adaptive quadrature in log(s - a^2), split at the resonance."""
    s0 = a * a

    def f(x: float) -> float:
        u = np.exp(x)
        s = s0 + u
        g = (1.0 - s0 / s) ** 1.5 * s ** (1.0 - p) * u
        d = (s - mass**2) ** 2 + (mass * width) ** 2
        return g / d if k == 0 else g * (s - mass**2) / d if k == 1 else g

    cuts = [mass**2 + c * mass * width for c in (-50, -1, 0, 1, 50)]
    edges = [np.log(1e-12 * (s0 + span))] + sorted(np.log(c - s0) for c in cuts if s0 < c < s0 + span)
    edges.append(np.log(span))
    return sum(
        integrate.quad(f, lo, hi, limit=400, epsabs=0.0, epsrel=1e-11)[0] for lo, hi in zip(edges[:-1], edges[1:])
    )


@pytest.mark.parametrize("a", [0.01, 20.0, 89.0, 91.18, 91.19, 100.0, 600.0, 4000.0])
@pytest.mark.parametrize("k", [0, 1, 2])
def test_matches_adaptive_quadrature(a, k):
    got = float(threshold_integral(a, MZ, GZ, 2.0, k, 1e8))
    np.testing.assert_allclose(got, reference(a, k, 2.0, 1e8), rtol=1e-6)


def test_other_power_span_and_resonance():
    for a, k in ((50.0, 0), (150.0, 1), (10.0, 2)):
        got = float(threshold_integral(a, 200.0, 10.0, 1.5, k, 1e6))
        np.testing.assert_allclose(got, reference(a, k, 1.5, 1e6, 200.0, 10.0), rtol=1e-6)


def test_closed_form_contact_term():
    # p = 2, k = 2: s = a^2 / (1 - b^2) gives int 2 b^4 / (1 - b^2) db = atanh-terms, exactly
    a, span = 300.0, 1e7
    b = np.sqrt(1.0 - a * a / (a * a + span))
    exact = 2.0 * np.arctanh(b) - 2.0 * b - 2.0 * b**3 / 3.0
    np.testing.assert_allclose(threshold_integral(a, MZ, GZ, 2.0, 2, span), exact, rtol=1e-10)


def test_elementwise_and_invalid_arguments():
    a = np.array([50.0, 120.0, np.nan, -1.0, 80.0])
    kind = np.array([0, 1, 0, 0, 3])
    out = threshold_integral(a, MZ, GZ, 2.0, kind, 1e8)
    assert out.shape == (5,)
    np.testing.assert_allclose(
        out[:2], [threshold_integral(50.0, MZ, GZ, 2, 0, 1e8), threshold_integral(120.0, MZ, GZ, 2, 1, 1e8)]
    )
    assert np.isnan(out[2:]).all()  # NaN input, a <= 0, an unknown kind


MW, GW = 80.377, 2.085  # the W of sigmabnn.physics.couplings


@pytest.mark.parametrize("a", [30.0, 79.0, 80.37, 80.39, 85.0, 250.0, 1800.0])
@pytest.mark.parametrize("k", [0, 1, 2])
@pytest.mark.parametrize("p", [2.0, 3.0, 4.0])
def test_w_resonance_matches_adaptive_quadrature(a, k, p):
    """The W line (neutralino-chargino pairs), at the powers 2, 3, 4 of the photon terms of chargino pairs."""
    got = float(threshold_integral(a, MW, GW, p, k, 1e8))
    np.testing.assert_allclose(got, reference(a, k, p, 1e8, MW, GW), rtol=1e-6)


def test_w_resonance_matches_a_fine_trapezoid():
    """k = 0 and 1 across the W peak against numpy's trapezoid rule on 2 million points in s."""
    a = 60.0
    s = a * a + np.concatenate([np.linspace(0.0, 2e4, 2_000_001)[:-1], np.geomspace(2e4, 1e8, 200_001)])
    d = (s - MW**2) ** 2 + (MW * GW) ** 2
    g = (1.0 - a * a / s) ** 1.5 / s
    for k, f in ((0, g / d), (1, g * (s - MW**2) / d)):
        np.testing.assert_allclose(threshold_integral(a, MW, GW, 2.0, k, 1e8), np.trapezoid(f, s), rtol=1e-5)
