"""A leading-order amplitude integrated over s-hat above threshold, as derived-feature expressions (``lpint``).

A pair-production amplitude of one helicity combination is written, as a function of the
partonic ``s`` (GeV^2), as

``A(s) = e / s + a / (s - M^2 + i M W) + b``:

a photon term ``e`` (only for a particle-antiparticle pair), an s-channel vector boson of mass
``M`` and width ``W`` (GeV) with coefficient ``a``, and a squark-exchange contact term ``b`` (the
t/u-channel propagator ``1 / (t - m_sq^2)`` at ``|t| << m_sq^2``). With every term multiplied by
``m_sq^2`` (as :mod:`sigmabnn.physics.amplitude_features` does for neutralino pairs), ``a`` and
``e`` are couplings times ``m_sq^2`` (GeV^2) and ``b`` is a pure coupling, so ``A`` is
dimensionless. The proxy is

``lpint = log sum_k w_k int_{a0^2}^{a0^2 + span} ds s^(-p) s beta^3 |A_k(s)|^2``

over the amplitudes ``k`` with weights ``w_k`` (parton luminosities), from the threshold
``a0 = |m_1| + |m_2|``, with the luminosity a power law ``s^(-p)`` (:data:`RESONANCE_LUMINOSITY_POWER`,
up to :data:`RESONANCE_SPAN` above threshold), the flux factor ``s`` and ``beta^3`` of a
P-wave pair (``docs/nlo_research.md``, section 8). Expanding ``|A|^2`` leaves six integrals of the
threshold alone, each a ``thrint`` (:func:`sigmabnn.data.special.threshold_integral`): ``a^2 I_0``,
``2 a b I_1`` and ``b^2 I_2`` at power ``p``, and for the photon ``e^2 I_2`` at power ``p + 2``
and ``2 e a I_1``, ``2 e b I_2`` at power ``p + 1`` (a factor ``1 / s`` is one more power of the
luminosity). Helper features (names starting with ``_``) hold the integrals and each
amplitude's coefficients; they are not network inputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sigmabnn.physics.couplings import number

__all__ = ["RESONANCE_LUMINOSITY_POWER", "RESONANCE_SPAN", "Amplitude", "integrated_proxy"]

RESONANCE_LUMINOSITY_POWER = 2.0
"""Exponent ``p`` of the power-law parton luminosity ``s^(-p)`` of the integrated proxy."""
RESONANCE_SPAN = 1.0e8
"""Range of s-hat above threshold integrated by the proxy (GeV^2; sqrt about 10 TeV)."""


@dataclass(frozen=True)
class Amplitude:
    """One amplitude ``A(s) = e / s + a / (s - M^2 + i M W) + b`` of :func:`integrated_proxy`.

    Attributes:
        name: suffix of its helper features (letters, digits, ``_``).
        weight: its weight ``w`` in the sum (a relative parton luminosity).
        resonant: expression of ``a`` (GeV^2).
        contact: expression of ``b`` (dimensionless), or ``None`` for no squark exchange.
        photon: expression of ``e`` (GeV^2), or ``None`` for no photon term.
    """

    name: str
    weight: float
    resonant: str
    contact: str | None = None
    photon: str | None = None


def integrated_proxy(
    threshold: str, mass: float, width: float, amplitudes: Sequence[Amplitude], name: str = "lpint"
) -> list[str]:
    """``name=log sum_k w_k int ds s^(1-p) beta^3 |A_k(s)|^2`` and its helpers (see the module docstring).

    Args:
        threshold: expression of the threshold energy ``|m_1| + |m_2|`` (GeV).
        mass, width: mass and width of the s-channel vector boson (GeV).
        amplitudes: the amplitudes summed (at least one).
        name: the proxy's feature name (last in the list).

    Returns:
        ``name=expression`` strings for :func:`sigmabnn.data.features.parse_derive`: the
        integrals (``_rv0``, ``_rv1``, ``_rv2``; with a photon also ``_rg2``, ``_rgv``, ``_rg1``),
        per amplitude ``_a_<n>`` (``_b_<n>``, ``_e_<n>``) and its integrated square ``_i_<n>``,
        then the proxy.
    """
    if not amplitudes:
        raise ValueError("integrated_proxy needs at least one amplitude")
    p = RESONANCE_LUMINOSITY_POWER
    contact = any(amp.contact is not None for amp in amplitudes)
    photon = any(amp.photon is not None for amp in amplitudes)
    common = f"{threshold},{number(mass)},{number(width)}"
    span = number(RESONANCE_SPAN)
    integrals = {"_rv0": (p, 0)}
    if contact:
        integrals.update({"_rv1": (p, 1), "_rv2": (p, 2)})
    if photon:
        integrals.update({"_rg2": (p + 2.0, 2), "_rgv": (p + 1.0, 1)})
        if contact:
            integrals["_rg1"] = (p + 1.0, 2)
    out = [f"{h}=thrint({common},{number(power)},{k},{span})" for h, (power, k) in integrals.items()]
    terms = []
    for amp in amplitudes:
        a, b, e = f"_a_{amp.name}", f"_b_{amp.name}", f"_e_{amp.name}"
        out.append(f"{a}={amp.resonant}")
        square = [f"{a}**2*_rv0"]
        if amp.contact is not None:
            out.append(f"{b}={amp.contact}")
            square += [f"2*{a}*{b}*_rv1", f"{b}**2*_rv2"]
        if amp.photon is not None:
            out.append(f"{e}={amp.photon}")
            square += [f"{e}**2*_rg2", f"2*{e}*{a}*_rgv"]
            if amp.contact is not None:
                square.append(f"2*{e}*{b}*_rg1")
        out.append(f"_i_{amp.name}={'+'.join(square)}")
        terms.append(f"{number(amp.weight)}*_i_{amp.name}")
    out.append(f"{name}=log({'+'.join(terms)}+1e-30)")
    return out
