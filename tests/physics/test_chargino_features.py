"""Features of processes with a chargino: couplings in known limits, lpint against quadrature, all 22 processes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import integrate

from sigmabnn.data.features import add_derived, parse_derive
from sigmabnn.datasets import load_ewino, processes
from sigmabnn.physics import amplitude_features, chargino_pair_features, couplings, neutralino_chargino_features
from sigmabnn.physics.chargino_couplings import squark_chargino_coupling, w_coupling, z_chargino_coupling
from sigmabnn.physics.processes import CHARGINOS, NEUTRALINOS, parse_process
from sigmabnn.physics.threshold_proxy import RESONANCE_LUMINOSITY_POWER, RESONANCE_SPAN
from sigmabnn.workflows import nlo

S2W = couplings.SIN2_THETA_W
C2W = 1.0 - S2W
TW = np.sqrt(S2W / C2W)
R2 = np.sqrt(0.5)

COUPLINGS = {  # coupling features of each kind of process (with the interference products)
    "neutralino pair": ["zs", "fq_uL", "fq_dL", "fR", "zfu", "zfd", "zfR"],
    "neutralino-chargino": ["wl", "wr", "fq_uL", "fq_dL", "wfu", "wfd"],
    "chargino pair": ["zl", "zr", "fq_d", "fq_u", "zfd", "zfu"],
}


def _kind(process) -> str:
    p = parse_process(process)
    if p.pdg2 in NEUTRALINOS:
        return "neutralino pair"
    return "neutralino-chargino" if p.pdg1 in NEUTRALINOS else "chargino pair"


@pytest.fixture(scope="module")
def ewino() -> pd.DataFrame:
    return load_ewino()


def _frame(**columns: float) -> pd.DataFrame:
    """One row holding every mixing column (zero unless given) and the masses of the data set."""
    row = {f"N{n}_{k}": 0.0 for n in NEUTRALINOS for k in range(1, 5)}
    row.update({f"{m}{c}_{k}": 0.0 for c in CHARGINOS for m in "UV" for k in (1, 2)})
    row.update({f"m_{p}": 300.0 for p in (*NEUTRALINOS, *CHARGINOS)})
    row.update({c: 2770.0 for c in ("m_1000001", "m_1000002", "m_2000001", "m_2000002")})
    row.update(columns)
    return pd.DataFrame([row])


def _values(frame: pd.DataFrame, specs: list[str]) -> dict[str, float]:
    out = add_derived(frame, specs)
    return {parse_derive(s).name: float(out[parse_derive(s).name].iloc[0]) for s in specs}


# ----------------------------------------------------------------------------- every process


@pytest.mark.parametrize("process", [str(p) for p in processes()])
def test_every_process_gets_its_couplings_and_lpint(process):
    names = [parse_derive(s).name for s in amplitude_features.recommended_features(process)]
    p = parse_process(process)
    assert [n for n in names if n.startswith("lam_")] == [f"lam_{abs(x)}" for x in dict.fromkeys(map(abs, p.particles))]
    assert set(COUPLINGS[_kind(p)]) <= set(names)
    assert names[-1] == "lpint"
    assert nlo.recommended_config(process).baseline == ("lpint",)


@pytest.mark.parametrize("process", [str(p) for p in processes()])
def test_every_feature_is_finite_on_the_valid_rows(ewino, process):
    target = parse_process(process).target
    rows = ewino[ewino[target].notna()]
    specs = amplitude_features.recommended_features(process)
    names = [parse_derive(s).name for s in specs]
    values = add_derived(rows, specs)[names].to_numpy(np.float64)
    assert values.shape == (len(rows), len(names)) and np.all(np.isfinite(values))


def test_chargino_modules_reject_other_kinds():
    with pytest.raises(ValueError, match="not a chargino pair"):
        chargino_pair_features.coupling_features("1000022,1000024")
    with pytest.raises(ValueError, match="not a neutralino-chargino pair"):
        neutralino_chargino_features.resonance_features("1000024,-1000037")
    with pytest.raises(ValueError, match="left-handed squarks"):
        squark_chargino_coupling(1000024, "uR")
    with pytest.raises(ValueError, match="not a chargino"):
        z_chargino_coupling(1000022, 1000024, "L")


# ----------------------------------------------------------------------------- couplings in known limits


def test_w_couplings_of_pure_winos_higgsinos_and_a_bino():
    specs = neutralino_chargino_features.coupling_features("1000023,1000024")
    wino = _values(_frame(N1000023_2=1.0, U1000024_1=1.0, V1000024_1=1.0), specs)
    assert wino["wl"] == pytest.approx(1.0) and wino["wr"] == pytest.approx(1.0)
    assert wino["fq_uL"] == pytest.approx(0.5) and wino["fq_dL"] == pytest.approx(-0.5)
    assert wino["wfu"] == pytest.approx(0.5) and wino["wfd"] == pytest.approx(-0.5)
    # a higgsino neutralino (H~d + H~u) / sqrt 2 with a higgsino chargino: O^L = -1/2, O^R = +1/2, no squarks
    higgsino = _values(_frame(N1000023_3=R2, N1000023_4=R2, U1000024_2=1.0, V1000024_2=1.0), specs)
    assert higgsino["wl"] == pytest.approx(-0.5) and higgsino["wr"] == pytest.approx(0.5)
    assert higgsino["fq_uL"] == 0.0 and higgsino["fq_dL"] == 0.0
    # a bino and a wino chargino: no W coupling; both squarks couple through the hypercharge tan(theta_W) / 6
    bino = _values(_frame(N1000023_1=1.0, U1000024_1=1.0, V1000024_1=1.0), specs)
    assert bino["wl"] == 0.0 and bino["wr"] == 0.0
    assert bino["fq_uL"] == pytest.approx(TW / 6) and bino["fq_dL"] == pytest.approx(TW / 6)
    # a wino with a higgsino chargino: only the U (O^R) or V (O^L) higgsino parts, both zero here
    mixed = _values(_frame(N1000023_2=1.0, U1000024_2=1.0, V1000024_2=1.0), specs)
    assert mixed["wl"] == 0.0 and mixed["wr"] == 0.0


def test_w_coupling_formula_on_random_rows():
    rng = np.random.default_rng(3)
    n = rng.normal(size=4)
    u, v = rng.normal(size=2), rng.normal(size=2)
    frame = _frame(
        **{f"N1000025_{k + 1}": n[k] for k in range(4)},
        **{f"U1000037_{k + 1}": u[k] for k in range(2)},
        **{f"V1000037_{k + 1}": v[k] for k in range(2)},
    )
    got = _values(frame, [f"l={w_coupling(1000025, 1000037, 'L')}", f"r={w_coupling(1000025, 1000037, 'R')}"])
    assert got["l"] == pytest.approx(n[1] * v[0] - n[3] * v[1] / np.sqrt(2), rel=1e-9)
    assert got["r"] == pytest.approx(n[1] * u[0] + n[2] * u[1] / np.sqrt(2), rel=1e-9)


def test_z_chargino_couplings_of_pure_states_and_a_rotation():
    # chi1 a pure wino, chi2 a pure higgsino (U = V = 1): diagonal T3 - Q sin^2, no off-diagonal coupling
    pure = _frame(U1000024_1=1.0, V1000024_1=1.0, U1000037_2=1.0, V1000037_2=1.0)
    specs = [
        f"{name}{side}={z_chargino_coupling(i, j, side)}"
        for name, i, j in (("w", 1000024, 1000024), ("h", 1000037, 1000037), ("o", 1000024, 1000037))
        for side in "LR"
    ]
    got = _values(pure, specs)
    for side in "LR":
        assert got[f"w{side}"] == pytest.approx(S2W - 1.0) and got[f"h{side}"] == pytest.approx(S2W - 0.5)
        assert got[f"o{side}"] == 0.0
    pair = _values(pure, chargino_pair_features.coupling_features("1000024,-1000037"))
    assert all(pair[k] == 0.0 for k in ("zl", "zr", "fq_d", "fq_u"))
    # rotated states: O'^L = -V[:, 0] V[:, 0]^T - V[:, 1] V[:, 1]^T / 2 + sin^2 1 (likewise with U)
    a, b = 0.3, -1.1
    v = np.array([[np.cos(a), np.sin(a)], [-np.sin(a), np.cos(a)]])
    u = np.array([[np.cos(b), np.sin(b)], [-np.sin(b), np.cos(b)]])
    cols = {
        f"{m}{c}_{k + 1}": x[r, k] for m, x in (("U", u), ("V", v)) for r, c in enumerate(CHARGINOS) for k in (0, 1)
    }
    got = _values(_frame(**cols), specs)
    for side, x in (("L", v), ("R", u)):
        o = -np.outer(x[:, 0], x[:, 0]) - 0.5 * np.outer(x[:, 1], x[:, 1]) + S2W * np.eye(2)
        np.testing.assert_allclose([got[f"w{side}"], got[f"h{side}"], got[f"o{side}"]], [o[0, 0], o[1, 1], o[0, 1]])
        assert o[0, 1] == pytest.approx(-0.5 * x[0, 0] * x[1, 0])  # orthogonal rows: O'_12 = -X_11 X_21 / 2
    pair = _values(_frame(**cols), chargino_pair_features.coupling_features("1000037,-1000024"))
    assert pair["fq_d"] == pytest.approx(v[0, 0] * v[1, 0]) and pair["fq_u"] == pytest.approx(u[0, 0] * u[1, 0])


# ----------------------------------------------------------------------------- lpint against quadrature


def _integrate(rate, s0: float, mass: float) -> float:
    """int_{s0}^{s0 + span} rate(s) ds by adaptive quadrature in log(s - s0), split at the resonance."""

    def f(x: float) -> float:
        return rate(s0 + np.exp(x)) * np.exp(x)

    edges = sorted({np.log(1e-9), np.log(max(mass**2 - s0, 1e-3)), np.log(RESONANCE_SPAN)})
    return sum(integrate.quad(f, lo, hi, limit=400, epsrel=1e-10)[0] for lo, hi in zip(edges[:-1], edges[1:]))


def _weight(s: float, s0: float) -> float:
    return (1 - s0 / s) ** 1.5 * s ** (1 - RESONANCE_LUMINOSITY_POWER)


@pytest.mark.parametrize("process", ["1000023,1000024", "1000035,-1000037", "1000022,1000037"])
def test_neutralino_chargino_lpint_matches_quadrature(ewino, process):
    """|A_V|^2 + |A_U|^2 with the complex W propagator, written out, integrated by scipy."""
    i, j = neutralino_chargino_features.neutralino_chargino(process)
    rows = ewino.iloc[[0, 17, 4242]]
    out = add_derived(rows, amplitude_features.resonance_features(process))
    mw, gw = couplings.MW, couplings.GAMMA_W
    for (_, r), got in zip(rows.iterrows(), out["lpint"]):
        n = [r[f"N{i}_{k}"] for k in range(1, 5)]
        u, v = (r[f"U{j}_1"], r[f"U{j}_2"]), (r[f"V{j}_1"], r[f"V{j}_2"])
        f_ul, f_dl = n[1] / 2 + TW / 6 * n[0], -n[1] / 2 + TW / 6 * n[0]
        o_l, o_r = n[1] * v[0] - n[3] * v[1] * R2, n[1] * u[0] + n[2] * u[1] * R2
        mu2, md2 = r["m_1000002"] ** 2, r["m_1000001"] ** 2
        s0 = (abs(r[f"m_{i}"]) + abs(r[f"m_{j}"])) ** 2

        def rate(s, o_l=o_l, o_r=o_r, f_ul=f_ul, f_dl=f_dl, u=u, v=v, mu2=mu2, md2=md2, s0=s0):
            prop = 1.0 / complex(s - mw**2, mw * gw)
            a_v = o_l * mu2 * prop - f_ul * v[0]  # u~_L exchange
            a_u = o_r * md2 * prop + f_dl * u[0]  # d~_L exchange
            return (abs(a_v) ** 2 + abs(a_u) ** 2) * _weight(s, s0)

        np.testing.assert_allclose(got, np.log(_integrate(rate, s0, mw)), atol=1e-6)


def _chargino_pair_rate(r: pd.Series, i: int, j: int):
    """The summed |A|^2 of q qbar -> chi_i^+ chi_j^- (photon for i = j, Z, squark contact terms), written out."""
    u = np.array([[r[f"U{c}_1"], r[f"U{c}_2"]] for c in (i, j)])
    v = np.array([[r[f"V{c}_1"], r[f"V{c}_2"]] for c in (i, j)])
    same = float(i == j)
    o = {"V": -v[0, 0] * v[1, 0] - 0.5 * v[0, 1] * v[1, 1] + same * S2W}
    o["U"] = -u[0, 0] * u[1, 0] - 0.5 * u[0, 1] * u[1, 1] + same * S2W
    quarks = {  # |Q|, eta, squark mass^2, the component the squark feeds and its coupling product, weight
        "u": (2 / 3, -1.0, r["m_1000001"] ** 2, "U", u[0, 0] * u[1, 0], 2.0),
        "d": (1 / 3, 1.0, r["m_1000002"] ** 2, "V", v[0, 0] * v[1, 0], 1.0),
    }
    z = {"uL": 0.5 - 2 / 3 * S2W, "uR": -2 / 3 * S2W, "dL": -0.5 + 1 / 3 * S2W, "dR": 1 / 3 * S2W}

    def rate(s: float) -> float:
        prop = 1.0 / complex(s - couplings.MZ**2, couplings.MZ * couplings.GAMMA_Z)
        total = 0.0
        for q, (charge, eta, m2, fed, xx, w) in quarks.items():
            for chir in "LR":
                for comp in "VU":
                    amp = same * S2W * charge * m2 / s + eta * z[q + chir] * o[comp] * m2 / C2W * prop
                    if chir == "L" and comp == fed:
                        amp -= 0.5 * xx
                    total += w * abs(amp) ** 2
        return total

    return rate


@pytest.mark.parametrize("process", ["1000024,-1000037", "1000037,-1000024", "1000024,-1000024", "1000037,-1000037"])
def test_chargino_pair_lpint_matches_quadrature(ewino, process):
    """Photon (chi_i chi_i only), Z and squark terms with the complex Z propagator, integrated by scipy."""
    i, j = chargino_pair_features.chargino_pair(process)
    rows = ewino.iloc[[0, 17, 4242]]
    specs = amplitude_features.resonance_features(process)
    assert any(s.startswith("_e_") for s in specs) == (i == j)
    out = add_derived(rows, specs)
    for (_, r), got in zip(rows.iterrows(), out["lpint"]):
        s0 = (r[f"m_{i}"] + r[f"m_{j}"]) ** 2
        amp2 = _chargino_pair_rate(r, i, j)
        value = _integrate(lambda s, amp2=amp2, s0=s0: amp2(s) * _weight(s, s0), s0, couplings.MZ)
        np.testing.assert_allclose(got, np.log(value), atol=1e-6)


def test_winos_interfere_destructively_with_their_squarks():
    """Pure winos: the squark terms lower lpint (the sign convention of the modules' docstrings)."""
    frame = _frame(N1000023_2=1.0, U1000024_1=1.0, V1000024_1=1.0, m_1000023=500.0, m_1000024=500.0)
    for process in ("1000023,1000024", "1000024,-1000024"):
        specs = amplitude_features.resonance_features(process)
        without = [s.split("=")[0] + "=0" if s.startswith("_b_") else s for s in specs]
        full, bare = _values(frame, specs)["lpint"], _values(frame, without)["lpint"]
        assert full < bare
