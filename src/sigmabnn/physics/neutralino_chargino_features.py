"""Leading-order features of neutralino-chargino production ``u dbar -> chi_i^0 chi_j^+``, as feature expressions.

At leading order ``u dbar -> chi_i^0 chi_j^+`` (and its charge conjugate ``d ubar -> chi_i^0
chi_j^-``, with the same couplings) is an s-channel W and two squark exchanges of left-handed
quarks: ``d~_L`` (the ``u`` quark turns into ``chi_j^+`` with ``U_j1``, the ``dbar`` into
``chi_i^0`` with ``f_dL(i)``) and ``u~_L`` (``u`` into ``chi_i^0`` with ``f_uL(i)``, ``dbar`` into
``chi_j^+`` with ``V_j1``). Couplings and conventions: :mod:`sigmabnn.physics.chargino_couplings`
and, for the neutralino's ``f_q(i)``, :func:`sigmabnn.physics.couplings.squark_coupling`
(Haber and Kane, Phys. Rept. 117 (1985) 75; Beenakker et al., hep-ph/9906298; Debove, Fuks and
Klasen, arXiv:1005.2909). The ``u~_L`` exchange feeds the chargino's ``V``-type component,
whose W coupling is ``O^L_ij``; the ``d~_L`` exchange the ``U``-type one (``O^R_ij``). In units of
``g^2 / sqrt 2`` (the W's ``g / sqrt 2`` to quarks times ``g O``) and multiplied by the
exchanged squark's mass squared ``m_sq^2`` (GeV^2), the two amplitudes are

``A_V = O^L_ij m_u~L^2 / (s - m_W^2 + i m_W Gamma_W) - f_uL(i) V_j1``,
``A_U = O^R_ij m_d~L^2 / (s - m_W^2 + i m_W Gamma_W) + f_dL(i) U_j1``,

the contact terms being ``(1/2) (sqrt 2 g f) (g V) / (g^2 / sqrt 2) = f V`` (a squark
propagator ``1 / (t - m_sq^2) ~ -1 / m_sq^2``, and ``1/2`` from the Fierz rearrangement;
:data:`sigmabnn.physics.chargino_pair_features.CONTACT_FACTOR`), ``m_W`` and ``Gamma_W`` from
:mod:`sigmabnn.physics.couplings`.

Signs: the relative sign of the squark and W terms is fixed for winos (``N_i2 = V_j1 = U_j1 =
1``: ``O^L = O^R = 1``, ``f_uL = 1/2``, ``f_dL = -1/2``) by the SU(2) structure of the wino
couplings, which relates this process to ``d dbar -> chi^- chi^+``, where the squark exchange
interferes destructively with the neutral gauge bosons (as the sneutrino does in
``e+ e- -> chi^+ chi^-``, Choi et al., Eur. Phys. J. C7 (1999) 123, hep-ph/9806279): destructive
here too, in both amplitudes, and the t- and u-channel exchanges enter with opposite signs,
as in neutralino pair production (Choi et al., Eur. Phys. J. C22 (2001) 563, hep-ph/0108117).
The bino and higgsino parts carry the relative signs of the Haber-Kane couplings. These signs
are derived here from the cited amplitudes, not checked against a full leading-order matrix
element in this project.

Features (:func:`coupling_features`, :func:`resonance_features`), for ``chi_i^0 chi_j^+-``:

- ``wl = O^L_ij``, ``wr = O^R_ij`` (the W couplings);
- ``fq_uL = f_uL(i) V_j1`` (``u~_L`` exchange), ``fq_dL = f_dL(i) U_j1`` (``d~_L`` exchange);
- with ``interference``: ``wfu = wl fq_uL``, ``wfd = wr fq_dL`` (the W-squark products that interfere);
- ``lpint``: the two amplitudes integrated over s-hat from threshold ``(|m_i| + m_j)^2``
  (:func:`sigmabnn.physics.threshold_proxy.integrated_proxy`), equal weights.
"""

from __future__ import annotations

from sigmabnn.physics.chargino_couplings import squark_chargino_coupling, w_coupling
from sigmabnn.physics.couplings import GAMMA_W, MW, number, squark_coupling
from sigmabnn.physics.processes import CHARGINOS, NEUTRALINOS, Process, parse_process
from sigmabnn.physics.threshold_proxy import Amplitude, integrated_proxy

__all__ = ["CONTACT", "coupling_features", "neutralino_chargino", "resonance_features"]

CONTACT = 1.0
"""Coefficient of ``f V`` in the contact terms, in units of ``g^2 / sqrt 2``: ``(1/2) sqrt 2 / (1 / sqrt 2)``."""

# per amplitude: W coupling side, exchanged squark, its mass column, sign of the contact term
_AMPLITUDES = (("V", "L", "uL", "m_1000002", -1.0), ("U", "R", "dL", "m_1000001", 1.0))


def neutralino_chargino(process: Process | str) -> tuple[int, int] | None:
    """``(neutralino, positive chargino id)`` of a neutralino-chargino pair, else ``None``."""
    p = parse_process(process)
    if p.pdg1 in NEUTRALINOS and abs(p.pdg2) in CHARGINOS:
        return p.pdg1, abs(p.pdg2)
    return None


def _pair(process: Process | str) -> tuple[int, int]:
    pair = neutralino_chargino(process)
    if pair is None:
        raise ValueError(f"{process} is not a neutralino-chargino pair")
    return pair


def coupling_features(process: Process | str, interference: bool = True) -> list[str]:
    """Signed, dimensionless couplings ``wl``, ``wr``, ``fq_uL``, ``fq_dL`` (``interference``: ``wfu``, ``wfd`` too)."""
    i, j = _pair(process)
    x = squark_chargino_coupling
    out = [
        f"wl={w_coupling(i, j, 'L')}",
        f"wr={w_coupling(i, j, 'R')}",
        f"fq_uL={squark_coupling(i, 'uL')}*{x(j, 'uL')}",
        f"fq_dL={squark_coupling(i, 'dL')}*{x(j, 'dL')}",
    ]
    if interference:
        out += ["wfu=wl*fq_uL", "wfd=wr*fq_dL"]
    return out


def resonance_features(process: Process | str) -> list[str]:
    """``lpint`` of a neutralino-chargino pair (``A_V``, ``A_U`` integrated over s-hat) and its helpers."""
    i, j = _pair(process)
    amplitudes = []
    for component, side, squark, msq, sign in _AMPLITUDES:
        a = f"{w_coupling(i, j, side)}*{msq}**2"
        b = f"{number(sign * CONTACT)}*{squark_coupling(i, squark)}*{squark_chargino_coupling(j, squark)}"
        amplitudes.append(Amplitude(component, 1.0, a, b))
    return integrated_proxy(f"abs(m_{i})+abs(m_{j})", MW, GAMMA_W, amplitudes)
