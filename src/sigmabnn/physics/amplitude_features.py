"""Leading-order amplitude features of electroweakino pair production, as derived-feature expressions.

The thesis's inputs for ``p p -> chi_i^0 chi_j^0`` are the masses and mixing
rows of the two neutralinos. The cross section is, at leading order, the
coherent sum of an s-channel Z exchange and t/u-channel squark exchanges
(Bozzi, Fuks, Klasen, Phys. Rev. D 72 (2005) 035016; Haber and Kane, Phys. Rept.
117 (1985) 75 for the couplings), for each quark flavour and chirality
``q in {u_L, d_L, u_R, d_R}``:

- Z-neutralino coupling ``O''_ij ~ (N_i3 N_j3 - N_i4 N_j4) / (2 cos^2 theta_W)``
  (for ``i = j``: ``N_3^2 - N_4^2``, the higgsino asymmetry);
- Z-quark coupling ``T_3 - Q sin^2 theta_W``;
- quark-squark-neutralino couplings ``f_q(i)``: ``u_L: N_i2/2 + tan(theta_W)/6 N_i1``,
  ``d_L: -N_i2/2 + tan(theta_W)/6 N_i1``, ``u_R: 2/3 tan(theta_W) N_i1``,
  ``d_R: -1/3 tan(theta_W) N_i1``.

With heavy squarks (here about 2.77 TeV) the squark exchange is a contact
term ``~ 2 f_q(i) f_q(j) / m_sq^2`` and the Z term is
``~ c_q O''_ij / (s - m_Z^2 + i m_Z Gamma_Z)``; the two interfere, and the
cross section nearly vanishes where they cancel. The derived feature
``la_<q>`` is ``log |A_q|^2`` of that amplitude (scaled by ``m_sq^2``)
at an effective partonic energy ``s_eff = k (|m_i| + |m_j|)^2``, and
``lproxy`` the log of their luminosity-weighted sum (u quarks weighted 2, d
quarks 1). The network then only has to learn the parton luminosity (a smooth
function of the mass), the phase space and NLO corrections on top.

Processes with a chargino get the features of their own leading-order physics, from
:mod:`sigmabnn.physics.neutralino_chargino_features` (``u dbar -> chi^0 chi^+`` through an
s-channel W and ``u~_L``, ``d~_L`` exchange) and :mod:`sigmabnn.physics.chargino_pair_features`
(``q qbar -> chi^+ chi^-`` through the photon, the Z and ``u~_L``, ``d~_L`` exchange): ``log|m|``,
their signed couplings and Z/W-squark products, and ``lpint``. This module's functions dispatch
on the kind of process; the fixed-``s_eff`` proxies of :func:`proxy_features` exist for
neutralino pairs only.

All features are expressions for :func:`sigmabnn.data.features.parse_derive`,
evaluated on the raw columns of the built-in data set (:func:`sigmabnn.datasets.load_ewino`):
the neutralino columns ``m_<pdg>, N<pdg>_1..4``, the chargino columns ``m_<pdg>, U<pdg>_1..2,
V<pdg>_1..2`` and the squark masses ``m_1000001, m_1000002, m_2000001, m_2000002``.
"""

from __future__ import annotations

from types import ModuleType

from sigmabnn.physics import chargino_pair_features, neutralino_chargino_features
from sigmabnn.physics.couplings import CHIRALITIES, COS2_THETA_W, GAMMA_Z, MZ, number, squark_coupling
from sigmabnn.physics.processes import NEUTRALINOS, Process, parse_process
from sigmabnn.physics.threshold_proxy import RESONANCE_LUMINOSITY_POWER, RESONANCE_SPAN

__all__ = [
    "PROXY_SHAT_FACTOR",
    "PROXY_SHAT_OFFSET",
    "RESONANCE_CONTACT",
    "RESONANCE_LUMINOSITY_POWER",
    "RESONANCE_SPAN",
    "coupling_features",
    "proxy_features",
    "recommended_features",
    "resonance_features",
]


PROXY_SHAT_FACTOR = 1.0
"""``k`` of the fixed-energy proxy's ``s_eff = k (|m_i| + |m_j|)^2 + s0`` (:func:`proxy_features`).

This, :data:`PROXY_SHAT_OFFSET` and :data:`RESONANCE_CONTACT` are the variants with the best
mean 5-fold cross-validated R^2 of a least-squares fit inside the training rows of all seven
neutralino pairs (``benchmarks/results/nlo_proxy_cv.md``; the val and test rows are not read)."""
PROXY_SHAT_OFFSET = 1.0e5
"""``s0`` of the fixed-energy proxy's ``s_eff`` (GeV^2); see :data:`PROXY_SHAT_FACTOR`."""
RESONANCE_CONTACT = 0.5
"""The neutralino pairs' contact-term factor in ``lpint`` (:func:`resonance_features`); see
:data:`PROXY_SHAT_FACTOR`."""


def _neutralino_pair(process: Process | str) -> tuple[int, int] | None:
    p = parse_process(process)
    if p.pdg1 in NEUTRALINOS and p.pdg2 in NEUTRALINOS:
        return p.pdg1, p.pdg2
    return None


def _chargino_module(process: Process) -> ModuleType | None:
    """The module of the features of a process with a chargino; ``None`` for a neutralino pair."""
    if neutralino_chargino_features.neutralino_chargino(process) is not None:
        return neutralino_chargino_features
    if chargino_pair_features.chargino_pair(process) is not None:
        return chargino_pair_features
    return None


def _mass_features(process: Process) -> list[str]:
    """``log|m|`` of each particle (once per distinct particle)."""
    out = []
    for pdg in dict.fromkeys(abs(x) for x in process.particles):
        out.append(f"lam_{pdg}=log(abs(m_{pdg}))")
    return out


def coupling_features(process: Process | str, interference: bool = False) -> list[str]:
    """Couplings of a process: signed Z or W couplings, squark couplings, ``log|m|`` (and products).

    For a neutralino pair ``chi_i chi_j``: ``zs = N_i3 N_j3 - N_i4 N_j4``; ``fq_<q> = f_q(i) f_q(j)`` for
    ``q = uL, dL`` and ``fR = N_i1 N_j1`` (the right-handed couplings are both
    proportional to ``N_1``); ``lam_<pdg> = log|m|``. With ``interference``
    also the Z-squark products ``zs * fq``. Processes with a chargino get ``log|m|`` and their
    own couplings: :func:`sigmabnn.physics.neutralino_chargino_features.coupling_features`
    (``wl, wr, fq_uL, fq_dL``; products ``wfu, wfd``) and
    :func:`sigmabnn.physics.chargino_pair_features.coupling_features` (``zl, zr, fq_d, fq_u``;
    products ``zfd, zfu``).

    Returns:
        ``name=expression`` strings for :func:`sigmabnn.data.features.parse_derive`.
    """
    proc = parse_process(process)
    out = _mass_features(proc)
    module = _chargino_module(proc)
    if module is not None:
        return out + module.coupling_features(proc, interference=interference)
    pair = _neutralino_pair(proc)
    assert pair is not None
    i, j = pair
    out.append(f"zs=N{i}_3*N{j}_3-N{i}_4*N{j}_4")
    out.append(f"fq_uL={squark_coupling(i, 'uL')}*{squark_coupling(j, 'uL')}")
    out.append(f"fq_dL={squark_coupling(i, 'dL')}*{squark_coupling(j, 'dL')}")
    out.append(f"fR=N{i}_1*N{j}_1")
    if interference:
        out += ["zfu=zs*fq_uL", "zfd=zs*fq_dL", "zfR=zs*fR"]
    return out


def proxy_features(
    process: Process | str,
    sign_left: int = 1,
    sign_right: int = -1,
    shat_factor: float | None = None,
    shat_offset: float | None = None,
    z_scale: float = 1.0,
    suffix: str = "",
) -> list[str]:
    """Leading-order amplitude proxies of a neutralino pair (see the module docstring).

    ``la_<q> = log(|A_q|^2 + 1e-10)`` for ``q = uL, dL, uR, dR`` and
    ``lproxy = log(sum_q w_q |A_q|^2 + 1e-10)``, always last. ``A_q = c_q zs' m_sq^2 / (s_eff - m_Z^2 +
    i m_Z Gamma_Z) + sign * 2 f_q(i) f_q(j)`` with ``zs' = (N_i3 N_j3 - N_i4 N_j4) / (2 cos^2 theta_W)``
    and ``s_eff = shat_factor (|m_i| + |m_j|)^2 + shat_offset`` (GeV^2; defaults
    :data:`PROXY_SHAT_FACTOR`, :data:`PROXY_SHAT_OFFSET`). ``sign_left`` / ``sign_right`` fix the
    relative sign of the squark and Z terms for left- / right-handed quarks; ``z_scale``
    multiplies the Z term (its normalisation relative to the squark term). ``suffix`` is appended
    to every feature name (to add proxies at several ``s_eff``). Processes
    with a chargino have no fixed-``s_eff`` proxy (an empty list); their integrated proxy is
    ``lpint`` (:func:`resonance_features`).
    """
    pair = _neutralino_pair(process)
    if pair is None:
        return []
    shat_factor = PROXY_SHAT_FACTOR if shat_factor is None else shat_factor
    shat_offset = PROXY_SHAT_OFFSET if shat_offset is None else shat_offset
    i, j = pair
    mz2 = MZ**2
    g2 = (MZ * GAMMA_Z) ** 2
    zs = f"(N{i}_3*N{j}_3-N{i}_4*N{j}_4)"
    sh = f"({number(shat_factor)}*(abs(m_{i})+abs(m_{j}))**2+{number(shat_offset - mz2)})"  # s_eff - m_Z^2
    den = f"({sh}**2+{number(g2)})"
    out = []
    terms = []
    for q, (cz, msq, weight) in CHIRALITIES.items():
        sign = sign_left if q.endswith("L") else sign_right
        c = number(z_scale * cz / (2 * COS2_THETA_W))
        z = f"{c}*{zs}*{msq}**2/{den}"
        sq = f"{number(2.0 * sign)}*{squark_coupling(i, q)}*{squark_coupling(j, q)}"
        a2 = f"({z}*{sh}+{sq})**2+({z}*{number(MZ * GAMMA_Z)})**2"
        terms.append((q, weight))
        out.append(f"la_{q}{suffix}=log({a2}+1e-10)")
    total = "+".join(f"{number(w)}*exp(la_{q}{suffix})" for q, w in terms)
    out.append(f"lproxy{suffix}=log({total}+1e-10)")
    return out


def resonance_features(process: Process | str, contact: float | None = None) -> list[str]:
    """The amplitude proxy integrated over s-hat above threshold: ``lpint`` (and its helpers).

    ``lpint = log sum_q w_q int ds s^(-p) s beta^3 |A_q(s)|^2`` from threshold ``(|m_i| + |m_j|)^2``,
    with ``A_q(s) = a_q / (s - m_Z^2 + i m_Z Gamma_Z) + b_q``: the Z term ``a_q = c_q zs' m_sq^2`` and
    the squark contact term ``b_q = +-2 f_q(i) f_q(j)`` (+ for left-, - for right-handed quarks) of
    :func:`proxy_features`, ``beta^3`` for a P-wave pair, the luminosity a power law ``s^(-p)``
    (:data:`RESONANCE_LUMINOSITY_POWER`) up to :data:`RESONANCE_SPAN` above threshold. Expanding
    ``|A_q|^2`` leaves three integrals of the pair's threshold energy alone (the Z peak, the
    Z-squark interference, the contact term), ``thrint(..., k)`` for ``k = 0, 1, 2``
    (:func:`sigmabnn.data.special.threshold_integral`). Unlike the fixed-``s_eff`` proxy this
    resolves the Z resonance near threshold, where the largest cross sections are
    (``docs/nlo_research.md``, section 8). Helpers (names starting with ``_``) are not inputs.
    ``contact`` is the factor of the neutralino pairs' contact term (``b_q = +-contact f_q(i)
    f_q(j)``; default :data:`RESONANCE_CONTACT`): 2 is the fixed-energy proxy's, 1 the same term
    with the factor 1/2 of a Fierz rearrangement of the t/u-channel exchange (as the chargino kinds
    use); a smaller value stands for the squark propagator's fall below its contact limit as
    ``s`` nears ``m_sq^2``.
    Processes with a chargino: the ``lpint`` of their own amplitudes (s-channel W or photon and
    Z, squark contact terms; :func:`sigmabnn.physics.neutralino_chargino_features.resonance_features`,
    :func:`sigmabnn.physics.chargino_pair_features.resonance_features`), built by
    :func:`sigmabnn.physics.threshold_proxy.integrated_proxy` with the same ``p`` and span.
    """
    proc = parse_process(process)
    module = _chargino_module(proc)
    if module is not None:
        return module.resonance_features(proc)
    pair = _neutralino_pair(proc)
    assert pair is not None
    contact = RESONANCE_CONTACT if contact is None else contact
    i, j = pair
    zs = f"(N{i}_3*N{j}_3-N{i}_4*N{j}_4)"
    a = f"abs(m_{i})+abs(m_{j})"
    out = [
        f"_rz{k}=thrint({a},{number(MZ)},{number(GAMMA_Z)},{number(RESONANCE_LUMINOSITY_POWER)},{k},{number(RESONANCE_SPAN)})"
        for k in range(3)
    ]
    terms = []
    for q, (cz, msq, weight) in CHIRALITIES.items():
        sign = 1.0 if q.endswith("L") else -1.0
        out.append(f"_a_{q}={number(cz / (2 * COS2_THETA_W))}*{zs}*{msq}**2")
        out.append(f"_b_{q}={number(contact * sign)}*{squark_coupling(i, q)}*{squark_coupling(j, q)}")
        terms.append(f"{number(weight)}*(_a_{q}**2*_rz0+2*_a_{q}*_b_{q}*_rz1+_b_{q}**2*_rz2)")
    out.append(f"lpint=log({'+'.join(terms)}+1e-30)")
    return out


def recommended_features(process: Process | str, resonance: bool = True, contact: float | None = None) -> list[str]:
    """The derived features of the recommended configuration for ``process`` (``name=expression`` strings).

    Neutralino pairs: ``log|m|``, the couplings with their Z-squark interference
    products (:func:`coupling_features`), the amplitude proxies at one ``s_eff``
    (:func:`proxy_features`) and, with ``resonance``, integrated over s-hat
    (:func:`resonance_features`, last; ``resonance=False`` gives the features of the
    configurations measured before it existed). Processes with a chargino: ``log|m|``, their
    couplings with the Z/W-squark products (:func:`coupling_features`) and, with ``resonance``,
    ``lpint`` (:func:`resonance_features`, last); they have no fixed-``s_eff`` proxy.
    ``contact``: the neutralino pairs' contact-term factor in ``lpint`` (:func:`resonance_features`).
    """
    proc = parse_process(process)
    out = coupling_features(proc, interference=True) + proxy_features(proc)
    return out + resonance_features(proc, contact) if resonance else out
