"""Leading-order features of chargino pair production ``q qbar -> chi_i^+ chi_j^-``, as derived-feature expressions.

At leading order ``q qbar -> chi_i^+ chi_j^-`` is an s-channel photon (only for ``i = j``) and Z,
and a squark exchange: ``u~_L`` in the t-channel of ``d dbar`` (coupling ``V_i1 V_j1``), ``d~_L``
in the u-channel of ``u ubar`` (``U_i1 U_j1``); the couplings and conventions are those of
:mod:`sigmabnn.physics.chargino_couplings` (Haber and Kane, Phys. Rept. 117 (1985) 75;
Beenakker et al., hep-ph/9906298; Debove, Fuks and Klasen, arXiv:1005.2909). Following the
helicity amplitudes of Choi et al. (Eur. Phys. J. C7 (1999) 123, hep-ph/9806279: ``e+ e- ->
chi^+ chi^-``, whose sneutrino exchange is the ``u~_L`` exchange here), for each quark flavour
``q``, quark chirality ``alpha`` and chargino component ``beta`` (the ``V``-type component,
whose Z coupling is ``O'^L``, or the ``U``-type one, ``O'^R``), in units of ``g^2`` and
multiplied by the squark mass squared ``m_sq^2`` (GeV^2; the squark exchanged by that flavour):

``A = s_W^2 |Q_q| m_sq^2 delta_ij / s + eta_q c_q,alpha O'^beta_ij m_sq^2 / (c_W^2 (s - m_Z^2 + i m_Z Gamma_Z)) + b``

with ``c_q,alpha = T_3 - Q sin^2 theta_W`` (:data:`sigmabnn.physics.couplings.CHIRALITIES`),
``eta_d = +1``, ``eta_u = -1`` (the ``d`` amplitude written for the ``chi^-`` the ``d`` quark
turns into, the ``u`` amplitude for the ``chi^+``; ``O'`` is the Z charge of the negative state),
and the contact term ``b = -1/2 V_i1 V_j1`` for ``(d_L, V)`` and ``b = -1/2 U_i1 U_j1`` for
``(u_L, U)`` (the squark propagator ``1 / (t - m_sq^2) ~ -1 / m_sq^2``, the ``1/2`` from the
Fierz rearrangement into the s-channel's current structure, :data:`CONTACT_FACTOR`), else
``b = 0``. The two other quark-chargino combinations of each flavour, and right-handed quarks,
have no squark exchange.

Signs: at high energy the photon and Z add up to the exchange of the neutral W boson, with
coefficient ``T_3(q) T_3(chi)`` (``1/2`` for winos from ``d_L``, for the ``d`` amplitude; ``1/2``
for the ``u`` amplitude with ``eta_u = -1``; ``0`` for right-handed quarks), and the squark term
then interferes destructively with it for winos, as the sneutrino exchange does in ``e+ e- ->
chi^+ chi^-`` (Choi et al.); the ``u ubar`` sign follows from the ``d dbar`` one by the SU(2)
symmetry of the wino couplings. The relative sign of the higgsino parts is that of the
Haber-Kane couplings. These signs are derived here from the cited amplitudes, not checked
against a full leading-order matrix element in this project.

Features (:func:`coupling_features`, :func:`resonance_features`), for ``chi_i^+ chi_j^-`` with
rows ``i``, ``j`` of ``U`` and ``V``:

- ``zl = O'^L_ij``, ``zr = O'^R_ij`` (the Z couplings; ``+ sin^2 theta_W`` for ``i = j``);
- ``fq_d = V_i1 V_j1`` (``u~_L`` exchange, ``d dbar``), ``fq_u = U_i1 U_j1`` (``d~_L``, ``u ubar``);
- with ``interference``: ``zfd = zl fq_d``, ``zfu = zr fq_u`` (the Z-squark products that interfere);
- ``lpint``: the amplitudes above integrated over s-hat from threshold ``(m_i + m_j)^2``
  (:func:`sigmabnn.physics.threshold_proxy.integrated_proxy`), ``u`` quarks weighted 2 and ``d``
  quarks 1 as for neutralino pairs.
"""

from __future__ import annotations

from sigmabnn.physics.chargino_couplings import squark_chargino_coupling, z_chargino_coupling
from sigmabnn.physics.couplings import CHIRALITIES, COS2_THETA_W, GAMMA_Z, MZ, SIN2_THETA_W, number
from sigmabnn.physics.processes import CHARGINOS, Process, parse_process
from sigmabnn.physics.threshold_proxy import Amplitude, integrated_proxy

__all__ = ["CONTACT_FACTOR", "QUARKS", "chargino_pair", "coupling_features", "resonance_features"]

CONTACT_FACTOR = 0.5
"""Factor of the squark contact term from the Fierz rearrangement of the t/u-channel exchange."""

QUARKS: dict[str, tuple[float, float, str, str, float]] = {
    "u": (2.0 / 3.0, -1.0, "dL", "m_1000001", 2.0),
    "d": (1.0 / 3.0, 1.0, "uL", "m_1000002", 1.0),
}
"""Per quark flavour: ``|Q_q|``, the Z term's sign ``eta_q``, the exchanged squark (``"dL"``: ``d~_L``,
``"uL"``: ``u~_L``), its mass column, and the luminosity weight (``u : d = 2 : 1``)."""

# chargino component fed by each exchanged squark: u~_L couples through V, d~_L through U
_SQUARK_COMPONENT = {"uL": "V", "dL": "U"}
_COMPONENTS = (("V", "L"), ("U", "R"))  # component, side of its Z coupling O'


def chargino_pair(process: Process | str) -> tuple[int, int] | None:
    """The positive PDG ids ``(i, j)`` of a chargino pair ``chi_i^+ chi_j^-``, else ``None``."""
    p = parse_process(process)
    if abs(p.pdg1) in CHARGINOS and abs(p.pdg2) in CHARGINOS:
        return abs(p.pdg1), abs(p.pdg2)
    return None


def _pair(process: Process | str) -> tuple[int, int]:
    pair = chargino_pair(process)
    if pair is None:
        raise ValueError(f"{process} is not a chargino pair")
    return pair


def coupling_features(process: Process | str, interference: bool = True) -> list[str]:
    """Signed, dimensionless couplings ``zl``, ``zr``, ``fq_d``, ``fq_u`` (``interference``: also ``zfd``, ``zfu``)."""
    i, j = _pair(process)
    x = squark_chargino_coupling
    out = [
        f"zl={z_chargino_coupling(i, j, 'L')}",
        f"zr={z_chargino_coupling(i, j, 'R')}",
        f"fq_d={x(i, 'uL')}*{x(j, 'uL')}",
        f"fq_u={x(i, 'dL')}*{x(j, 'dL')}",
    ]
    if interference:
        out += ["zfd=zl*fq_d", "zfu=zr*fq_u"]
    return out


def resonance_features(process: Process | str) -> list[str]:
    """``lpint`` of a chargino pair (the amplitudes of the module docstring integrated over s-hat) and its helpers."""
    i, j = _pair(process)
    x = squark_chargino_coupling
    amplitudes = []
    for q, (charge, eta, squark, msq, weight) in QUARKS.items():
        for chirality in ("L", "R"):
            cz = CHIRALITIES[q + chirality][0]
            for component, side in _COMPONENTS:
                a = f"{number(eta * cz / COS2_THETA_W)}*{z_chargino_coupling(i, j, side)}*{msq}**2"
                b = None
                if chirality == "L" and component == _SQUARK_COMPONENT[squark]:
                    b = f"{number(-CONTACT_FACTOR)}*{x(i, squark)}*{x(j, squark)}"
                e = f"{number(SIN2_THETA_W * charge)}*{msq}**2" if i == j else None
                amplitudes.append(Amplitude(f"{q}{chirality}_{component}", weight, a, b, e))
    return integrated_proxy(f"abs(m_{i})+abs(m_{j})", MZ, GAMMA_Z, amplitudes)
