"""Electroweak constants and the couplings of quarks, squarks and neutralinos to each other and to the Z.

For each quark flavour and chirality ``q in {u_L, d_L, u_R, d_R}`` (Haber and Kane,
Phys. Rept. 117 (1985) 75):

- Z-quark coupling ``T_3 - Q sin^2 theta_W`` (:data:`CHIRALITIES`);
- quark-squark-neutralino couplings ``f_q(i)``: ``u_L: N_i2/2 + tan(theta_W)/6 N_i1``,
  ``d_L: -N_i2/2 + tan(theta_W)/6 N_i1``, ``u_R: 2/3 tan(theta_W) N_i1``,
  ``d_R: -1/3 tan(theta_W) N_i1`` (:func:`squark_coupling`, as a feature expression in the
  neutralino mixing columns ``N<pdg>_1..4``).

The couplings of charginos (to the Z, to the W and a neutralino, to a quark and a squark) are in
:mod:`sigmabnn.physics.chargino_couplings`.
"""

from __future__ import annotations

__all__ = [
    "CHIRALITIES",
    "COS2_THETA_W",
    "GAMMA_W",
    "GAMMA_Z",
    "MW",
    "MZ",
    "SIN2_THETA_W",
    "SQUARK_COLUMNS",
    "TAN_THETA_W",
    "number",
    "squark_coupling",
]

MZ = 91.1876
"""Z boson mass (GeV, PDG)."""
GAMMA_Z = 2.4952
"""Z boson width (GeV, PDG)."""
MW = 80.377
"""W boson mass (GeV; Particle Data Group, Review of Particle Physics 2022, W boson summary table)."""
GAMMA_W = 2.085
"""W boson width (GeV; Particle Data Group, Review of Particle Physics 2022, W boson summary table)."""
SIN2_THETA_W = 0.2312
"""Weak mixing angle sin^2 theta_W (MS-bar at m_Z, PDG)."""

TAN_THETA_W = (SIN2_THETA_W / (1.0 - SIN2_THETA_W)) ** 0.5
"""tan theta_W."""
COS2_THETA_W = 1.0 - SIN2_THETA_W
"""cos^2 theta_W."""
# Z couplings to quarks T3 - Q sin^2 theta_W; squark mass columns; luminosity weights (u : d = 2 : 1).
CHIRALITIES: dict[str, tuple[float, str, float]] = {
    "uL": (0.5 - 2.0 / 3.0 * SIN2_THETA_W, "m_1000002", 2.0),
    "dL": (-0.5 + 1.0 / 3.0 * SIN2_THETA_W, "m_1000001", 1.0),
    "uR": (-2.0 / 3.0 * SIN2_THETA_W, "m_2000002", 2.0),
    "dR": (1.0 / 3.0 * SIN2_THETA_W, "m_2000001", 1.0),
}
SQUARK_COLUMNS: tuple[str, ...] = tuple(c[1] for c in CHIRALITIES.values())
"""Squark mass columns the amplitude-proxy features read."""


def number(x: float) -> str:
    """``x`` as a literal of a feature expression (10 significant digits)."""
    return f"{x:.10g}"


def squark_coupling(pdg: int, q: str) -> str:
    """Quark-squark-neutralino coupling ``f_q`` of neutralino ``pdg`` as an expression."""
    n1, n2 = f"N{pdg}_1", f"N{pdg}_2"
    if q == "uL":
        return f"(0.5*{n2}+{number(TAN_THETA_W / 6)}*{n1})"
    if q == "dL":
        return f"(-0.5*{n2}+{number(TAN_THETA_W / 6)}*{n1})"
    if q == "uR":
        return f"({number(2 * TAN_THETA_W / 3)}*{n1})"
    if q == "dR":
        return f"({number(-TAN_THETA_W / 3)}*{n1})"
    raise ValueError(f"unknown chirality {q!r}")
