"""Couplings of charginos to the Z, to the W and a neutralino, and to a quark and a squark.

Conventions: those of Haber and Kane, Phys. Rept. 117 (1985) 75, and Gunion and Haber,
Nucl. Phys. B272 (1986) 1, which the SLHA (Skands et al., JHEP 0407 (2004) 036,
hep-ph/0311123) and the built-in data set share: real mixing matrices, the neutralino basis
``(B~, W~3, H~d, H~u)`` with rows ``N_i1..N_i4`` (columns ``N<pdg>_1..4``), the negative
chargino states ``chi_i^- = U_i1 W~^- + U_i2 H~d^-`` and the positive ones
``chi_i^+ = V_i1 W~^+ + V_i2 H~u^+`` (columns ``U<pdg>_1..2``, ``V<pdg>_1..2``; row 1 is
1000024, row 2 is 1000037), positive chargino masses. The same couplings are listed, in these
conventions, by Beenakker et al., Phys. Rev. Lett. 83 (1999) 3780 (hep-ph/9906298) and
Debove, Fuks and Klasen, arXiv:1005.2909, for gaugino-pair production at hadron colliders.
All couplings are dimensionless, in units of the SU(2) coupling ``g`` (the Z couplings in
units of ``g / cos theta_W``):

- Z-chargino (:func:`z_chargino_coupling`):
  ``O'^L_ij = -V_i1 V_j1 - V_i2 V_j2 / 2 + delta_ij sin^2 theta_W`` and
  ``O'^R_ij = -U_i1 U_j1 - U_i2 U_j2 / 2 + delta_ij sin^2 theta_W``. For a pure wino
  ``O' = sin^2 theta_W - 1`` and for a pure higgsino ``O' = sin^2 theta_W - 1/2``: the
  ``T_3 - Q sin^2 theta_W`` of the negative state (``O'`` multiplies the Z current of
  ``chi^+`` with a minus sign relative to a quark's ``T_3 - Q sin^2 theta_W``).
- W-neutralino-chargino (:func:`w_coupling`), for ``chi_i^0`` and ``chi_j^+``:
  ``O^L_ij = N_i2 V_j1 - N_i4 V_j2 / sqrt 2`` and ``O^R_ij = N_i2 U_j1 + N_i3 U_j2 / sqrt 2``
  (pure winos: ``O^L = O^R = 1``).
- quark-squark-chargino, left-handed quarks and squarks only (quark Yukawa couplings
  neglected, as for the first two generations) (:func:`squark_chargino_coupling`): the up
  squark ``u~_L`` couples a ``d`` quark to the chargino with ``V_j1`` (it comes from the
  ``W~^+`` component of ``chi_j^+``), the down squark ``d~_L`` couples a ``u`` quark with
  ``U_j1`` (the ``W~^-`` component). So ``d dbar -> chi^+ chi^-`` exchanges ``u~_L`` with
  ``V_i1 V_j1`` and ``u ubar -> chi^+ chi^-`` exchanges ``d~_L`` with ``U_i1 U_j1``.

Each function returns a feature expression (:func:`sigmabnn.data.features.parse_derive`) in
the mixing columns of the built-in data set (:func:`sigmabnn.datasets.load_ewino`); particles
are given by their positive PDG ids (a chargino and its antiparticle share a row).
"""

from __future__ import annotations

from sigmabnn.physics.couplings import SIN2_THETA_W, number
from sigmabnn.physics.processes import CHARGINOS, NEUTRALINOS

__all__ = ["squark_chargino_coupling", "w_coupling", "z_chargino_coupling"]

_SQRT_HALF = 0.5**0.5


def _chargino(pdg: int) -> int:
    pdg = abs(int(pdg))
    if pdg not in CHARGINOS:
        raise ValueError(f"{pdg} is not a chargino ({', '.join(map(str, CHARGINOS))})")
    return pdg


def _neutralino(pdg: int) -> int:
    pdg = abs(int(pdg))
    if pdg not in NEUTRALINOS:
        raise ValueError(f"{pdg} is not a neutralino ({', '.join(map(str, NEUTRALINOS))})")
    return pdg


def z_chargino_coupling(i: int, j: int, side: str) -> str:
    """``O'^L_ij`` (``side="L"``, from ``V``) or ``O'^R_ij`` (``side="R"``, from ``U``) as an expression."""
    i, j = _chargino(i), _chargino(j)
    if side not in ("L", "R"):
        raise ValueError(f"side must be 'L' or 'R', got {side!r}")
    m = "V" if side == "L" else "U"
    expr = f"-{m}{i}_1*{m}{j}_1-0.5*{m}{i}_2*{m}{j}_2"
    if i == j:
        expr += f"+{number(SIN2_THETA_W)}"
    return f"({expr})"


def w_coupling(neutralino: int, chargino: int, side: str) -> str:
    """``O^L_ij`` (``side="L"``) or ``O^R_ij`` (``side="R"``) of ``chi_i^0`` (``neutralino``) and ``chi_j^+``."""
    i, j = _neutralino(neutralino), _chargino(chargino)
    if side == "L":
        return f"(N{i}_2*V{j}_1-{number(_SQRT_HALF)}*N{i}_4*V{j}_2)"
    if side == "R":
        return f"(N{i}_2*U{j}_1+{number(_SQRT_HALF)}*N{i}_3*U{j}_2)"
    raise ValueError(f"side must be 'L' or 'R', got {side!r}")


def squark_chargino_coupling(chargino: int, squark: str) -> str:
    """Quark-squark-chargino coupling: ``V_j1`` for ``squark="uL"`` (``d`` quarks), ``U_j1`` for ``"dL"`` (``u``)."""
    j = _chargino(chargino)
    if squark == "uL":
        return f"V{j}_1"
    if squark == "dL":
        return f"U{j}_1"
    raise ValueError(f"charginos couple to left-handed squarks only: 'uL' or 'dL', got {squark!r}")
