"""The NLO workflow's derived features and recommended configuration, on the built-in data."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sigmabnn.data.features import add_derived, parse_derive
from sigmabnn.datasets import THESIS_FEATURES, load_ewino, processes
from sigmabnn.map import MAPConfig
from sigmabnn.model.likelihoods import HeteroscedasticStudentT
from sigmabnn.physics import amplitude_features, couplings
from sigmabnn.workflows import nlo


@pytest.fixture(scope="module")
def ewino():
    return load_ewino()


@pytest.mark.parametrize("process", [str(p) for p in processes()])
def test_recommended_features_finite_for_every_process(ewino, process):
    specs = amplitude_features.recommended_features(process)
    assert specs, "every process gets at least the log-mass features"
    names = [parse_derive(s).name for s in specs]
    assert len(set(names)) == len(names)
    out = add_derived(ewino, specs)
    values = out[names].to_numpy(np.float64)
    assert values.shape == (len(ewino), len(names))
    assert np.all(np.isfinite(values))
    # no constant inputs: each derived feature varies over the scan
    assert np.all(values.std(axis=0) > 0)


def test_each_kind_gets_its_couplings_and_lpint_and_only_neutralino_pairs_the_fixed_proxy():
    n1n2 = [parse_derive(s).name for s in amplitude_features.recommended_features("1000022,1000023")]
    assert {"zs", "fq_uL", "fq_dL", "fR", "zfu", "la_uL", "lproxy"} <= set(n1n2)
    assert n1n2[-1] == "lpint"
    inputs = {  # network inputs (helpers, names starting with _, left out)
        "1000022,-1000024": ["lam_1000022", "lam_1000024", "wl", "wr", "fq_uL", "fq_dL", "wfu", "wfd", "lpint"],
        "1000024,-1000037": ["lam_1000024", "lam_1000037", "zl", "zr", "fq_d", "fq_u", "zfd", "zfu", "lpint"],
    }
    for process, names in inputs.items():
        got = [parse_derive(s).name for s in amplitude_features.recommended_features(process)]
        assert [n for n in got if not n.startswith("_")] == names
        assert amplitude_features.proxy_features(process) == []
        assert nlo.recommended_config(process).baseline == ("lpint",)
        without = [parse_derive(s).name for s in amplitude_features.recommended_features(process, resonance=False)]
        assert without == names[:-1]
    assert nlo.recommended_config("1000022,1000023").baseline == ("lpint",)
    before = tuple(amplitude_features.recommended_features("1000022,1000023", resonance=False))
    assert nlo.recommended_config("1000022,1000023", derive=before).baseline == ()


def test_integrated_proxy_matches_an_independent_integration(ewino):
    """lpint of chi1 chi2: |A_q(s)|^2 with the complex Z propagator, integrated by adaptive quadrature."""
    from scipy import integrate

    i, j = 1000022, 1000023
    rows = ewino.iloc[[0, 17, 4242]]
    out = add_derived(rows, amplitude_features.resonance_features(f"{i},{j}"))
    tw = np.sqrt(couplings.SIN2_THETA_W / (1 - couplings.SIN2_THETA_W))
    cw2 = 1 - couplings.SIN2_THETA_W
    s2w = couplings.SIN2_THETA_W
    chir = {  # Z-quark coupling, squark mass column, weight, f_q(n) of the mixing row n
        "uL": (0.5 - 2 / 3 * s2w, "m_1000002", 2.0, lambda n: n[1] / 2 + tw / 6 * n[0]),
        "dL": (-0.5 + 1 / 3 * s2w, "m_1000001", 1.0, lambda n: -n[1] / 2 + tw / 6 * n[0]),
        "uR": (-2 / 3 * s2w, "m_2000002", 2.0, lambda n: 2 / 3 * tw * n[0]),
        "dR": (1 / 3 * s2w, "m_2000001", 1.0, lambda n: -1 / 3 * tw * n[0]),
    }
    for (_, r), got in zip(rows.iterrows(), out["lpint"]):
        ni = [r[f"N{i}_{k}"] for k in range(1, 5)]
        nj = [r[f"N{j}_{k}"] for k in range(1, 5)]
        s0 = (abs(r[f"m_{i}"]) + abs(r[f"m_{j}"])) ** 2
        zs = ni[2] * nj[2] - ni[3] * nj[3]

        def rate(x, r=r, ni=ni, nj=nj, s0=s0, zs=zs):
            s = s0 + np.exp(x)
            total = 0.0
            for q, (cz, msq, w, f) in chir.items():
                sign = 1.0 if q.endswith("L") else -1.0
                amp = cz / (2 * cw2) * zs * r[msq] ** 2 / complex(s - couplings.MZ**2, couplings.MZ * couplings.GAMMA_Z)
                total += w * abs(amp + amplitude_features.RESONANCE_CONTACT * sign * f(ni) * f(nj)) ** 2
            return total * (1 - s0 / s) ** 1.5 / s * np.exp(x)

        peak = np.log(max(couplings.MZ**2 - s0, 1e-3))
        edges = sorted({np.log(1e-9), peak, np.log(amplitude_features.RESONANCE_SPAN)})
        value = sum(integrate.quad(rate, a, b, limit=400, epsrel=1e-10)[0] for a, b in zip(edges[:-1], edges[1:]))
        np.testing.assert_allclose(got, np.log(value), atol=1e-6)


def test_couplings_match_their_definitions(ewino):
    out = add_derived(ewino, amplitude_features.coupling_features("1000022,1000022", interference=True))
    n1, n2, n3, n4 = (ewino[f"N1000022_{j}"].to_numpy() for j in range(1, 5))
    tw = np.sqrt(couplings.SIN2_THETA_W / (1 - couplings.SIN2_THETA_W))
    np.testing.assert_allclose(out["zs"], n3**2 - n4**2, rtol=1e-12)
    np.testing.assert_allclose(out["fq_uL"], (n2 / 2 + tw / 6 * n1) ** 2, rtol=1e-5)
    np.testing.assert_allclose(out["fq_dL"], (-n2 / 2 + tw / 6 * n1) ** 2, rtol=1e-5)
    np.testing.assert_allclose(out["zfR"], (n3**2 - n4**2) * n1**2, rtol=1e-12)


def test_proxy_explains_most_of_the_chi1chi1_cross_section(ewino):
    """Least squares on a cubic in log|m| plus lproxy: test R^2 (log10 sigma) well above mass alone."""
    df = ewino[ewino["nlo_1000022_1000022"].notna()].reset_index(drop=True)
    df = add_derived(df, amplitude_features.proxy_features("1000022,1000022"))
    y = np.log10(df["nlo_1000022_1000022"].to_numpy())
    lm = np.log(np.abs(df["m_1000022"].to_numpy()))
    base = np.column_stack([np.ones_like(lm), lm, lm**2, lm**3, np.sign(df["m_1000022"].to_numpy())])
    train, test = (df["split"] == "train").to_numpy(), (df["split"] == "test").to_numpy()

    def r2(a):
        coef, *_ = np.linalg.lstsq(a[train], y[train], rcond=None)
        res = y[test] - a[test] @ coef
        return 1 - np.sum(res**2) / np.sum((y[test] - y[test].mean()) ** 2)

    r2_mass = r2(base)
    r2_proxy = r2(np.column_stack([base, df["lproxy"].to_numpy()]))
    assert r2_mass < 0.8
    assert r2_proxy > 0.98  # the default s_eff is the best over all neutralino pairs, not on this one alone


def test_proxy_matches_an_independent_amplitude_computation(ewino):
    """la_uL and lproxy of chi1 chi2 against the amplitude written out in NumPy."""
    kw = {"sign_left": 1, "sign_right": -1, "shat_factor": 2.0, "shat_offset": 4.0e4}
    out = add_derived(ewino, amplitude_features.proxy_features("1000022,1000023", **kw))
    a, b = "N1000022_", "N1000023_"
    col = {f"{k}{j}": ewino[f"{k}{j}"].to_numpy() for k in (a, b) for j in range(1, 5)}
    sw2 = couplings.SIN2_THETA_W
    tw, cw2 = np.sqrt(sw2 / (1 - sw2)), 1 - sw2
    s_eff = 2.0 * (np.abs(ewino["m_1000022"]) + np.abs(ewino["m_1000023"])).to_numpy() ** 2 + 4.0e4
    prop = 1.0 / (s_eff - couplings.MZ**2 + 1j * couplings.MZ * couplings.GAMMA_Z)
    zs = (col[a + "3"] * col[b + "3"] - col[a + "4"] * col[b + "4"]) / (2 * cw2)
    chirality_terms = {  # Z coupling T3 - Q sw2, squark mass column, f_q(particle prefix), sign of squark term
        "uL": (0.5 - 2 / 3 * sw2, "m_1000002", lambda p: col[p + "2"] / 2 + tw / 6 * col[p + "1"], 1),
        "dL": (-0.5 + 1 / 3 * sw2, "m_1000001", lambda p: -col[p + "2"] / 2 + tw / 6 * col[p + "1"], 1),
        "uR": (-2 / 3 * sw2, "m_2000002", lambda p: 2 / 3 * tw * col[p + "1"], -1),
        "dR": (1 / 3 * sw2, "m_2000001", lambda p: -1 / 3 * tw * col[p + "1"], -1),
    }
    total = 0.0
    for q, (cz, msq, f, sign) in chirality_terms.items():
        amp = cz * zs * ewino[msq].to_numpy() ** 2 * prop + sign * 2 * f(a) * f(b)
        np.testing.assert_allclose(out[f"la_{q}"], np.log(np.abs(amp) ** 2 + 1e-10), rtol=1e-6, atol=1e-6)
        total = total + (2.0 if q.startswith("u") else 1.0) * np.abs(amp) ** 2
    np.testing.assert_allclose(out["lproxy"], np.log(total + 1e-10), rtol=1e-6, atol=1e-6)


def test_recommended_config_fields_and_overrides():
    cfg = nlo.recommended_config("1000022,1000022")
    assert cfg.features == THESIS_FEATURES
    assert cfg.target == "nlo_1000022_1000022"
    widths = [int(w) for w in cfg.architecture.split("-")]
    assert widths[0] == len(cfg.features) + cfg.num_derived_inputs and widths[-1] == 1
    assert cfg.num_derived_inputs == len([d for d in cfg.derive if not d.startswith("_")]) < len(cfg.derive)
    assert tuple(widths[1:-1]) == cfg.hidden
    assert nlo.recommended_config("n1 n1", num_chains=3).num_chains == 3
    with pytest.raises(ValueError, match="unknown NLOConfig field"):
        nlo.recommended_config("1000022,1000022", chains=3)


def test_nlo_sampler_keeps_the_chees_centre_it_was_validated_with():
    """The NLO configuration writes its ChEES centre out: the library's default sampler may change without
    changing the validated NLO fits."""
    cfg = nlo.recommended_config("1000022,1000022")
    assert cfg.chees_centre == "chains"
    config = cfg.fit_spec(seed=0).mcmc_config(n_train=1000, num_params=500)
    assert config.kernel == "chees" and config.chees_centre == "chains"
    assert config.max_tree_depth == cfg.max_tree_depth and config.num_chains == cfg.num_chains


def test_nlo_warmup_keeps_the_windows_it_was_validated_with():
    """The NLO fits keep Stan's 75-iteration initial buffer, so their 100 warm-up iterations get Stan's
    fallback schedule (one 75-iteration slow window between buffers of 15 and 10), not the default fit's
    earlier first window, which would make it 25 iterations followed by a 50-iteration buffer."""
    from sigmabnn.mcmc.adaptation import STAGE_SLOW, window_schedule
    from sigmabnn.train.mcmc import CHEES_DEFAULTS, run_config_for

    cfg = nlo.recommended_config("1000022,1000022")
    config = cfg.fit_spec(seed=0).mcmc_config(n_train=1000, num_params=500)
    assert config.initial_buffer == 75 != CHEES_DEFAULTS["initial_buffer"]
    run = run_config_for(config)
    stage, ends = window_schedule(run.num_warmup, run.initial_buffer, run.final_buffer, run.first_window)
    slow = np.flatnonzero(stage == STAGE_SLOW)
    assert run.num_warmup == 100 and (slow[0], slow[-1]) == (15, 89) and np.flatnonzero(ends).tolist() == [89]
    demo = nlo.demo_config().fit_spec(seed=0).mcmc_config(n_train=1000, num_params=500)
    assert demo.initial_buffer == 75 and demo.num_warmup == 100


def test_hetero_student_t_log_prob_and_pit_match_scipy():
    import jax.numpy as jnp
    from scipy import stats

    lik = HeteroscedasticStudentT(df=3.0, min_scale=1e-4)  # the library's class (df > 2)
    rng = np.random.default_rng(1)
    f = rng.normal(size=(6, 2))
    y = rng.normal(size=(6, 1))
    scale = np.log1p(np.exp(f[:, 1:])) + 1e-4
    expected = np.sum(stats.t.logpdf(y, 3.0, loc=f[:, :1], scale=scale))
    got = float(lik.log_prob(jnp.asarray(f), jnp.asarray(y), jnp.asarray(1.0)))
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert lik.output_dim(1) == 2
    mu, s = rng.normal(size=(3, 5)), rng.uniform(0.5, 2.0, size=(3, 5))
    yy = rng.normal(size=5)
    pit = nlo.student_t_pit(mu, s, 2.0, yy)
    np.testing.assert_allclose(pit, stats.t.cdf((yy - mu) / s, 2.0).mean(axis=0))
    assert np.all((pit > 0) & (pit < 1))


def test_train_process_rejects_unsupported_likelihood():
    from sigmabnn.errors import InputError

    with pytest.raises(InputError, match="unknown likelihood 'cauchy'; choose from gaussian, student_t"):
        nlo.train_process(0, "1000022,1000022", likelihood="cauchy")
    with pytest.raises(InputError, match="degrees of freedom"):
        nlo.train_process(0, "1000022,1000022", likelihood="student_t", noise_df=1.5)


@pytest.mark.slow
def test_train_process_tiny_run_scores_the_test_split():
    result = nlo.train_process(
        0,
        "n1 n1",
        hidden=(4,),
        num_chains=1,
        num_warmup=10,
        num_samples=5,
        max_tree_depth=3,
        map_steps=50,
        progress=False,
    )
    m = result.metrics
    assert m["num_test"] == 1585
    assert result.fitted.feature_names[: len(THESIS_FEATURES)] == THESIS_FEATURES
    assert len(result.fitted.derived) == len(amplitude_features.recommended_features("1000022,1000022"))
    assert 0.0 < m["r2_log"] <= 1.0
    for k in (1, 2, 3):
        assert 0.0 <= m[f"cov_{k}sigma_pct"] <= 100.0
    assert m["cov_1sigma_pct"] <= m["cov_2sigma_pct"] <= m["cov_3sigma_pct"]
    assert m["fit_seconds"] > 0
    assert result.fitted.calibration.split == "val" and result.fitted.calibration.n > 0  # recalibrated on val


def test_config_describes_itself_from_its_fields():
    text = nlo.recommended_config("1000022,1000022").describe()
    cfg = nlo.recommended_config("1000022,1000022")
    assert cfg.architecture in text and f"{cfg.num_chains} chains" in text and f"{cfg.map_steps:,} Adam" in text
    assert "ChEES-HMC" in text and f"heteroscedastic Student-t noise (df {cfg.noise_df:g}," in text
    other = nlo.recommended_config("1000022,1000022", method="nuts", likelihood="gaussian").describe()
    assert f"NUTS depth {cfg.max_tree_depth}" in other and "Gaussian noise" in other


def test_map_settings_reach_the_map_pretraining(nlo_fit_kwargs):
    spec = nlo_fit_kwargs(map_steps=123, map_lbfgs_steps=45)
    assert spec.method.options["map"] == MAPConfig(1e-2, 123, patience=None, lbfgs_steps=45).to_json()
    cfg = nlo.recommended_config("1000022,1000022", map_lbfgs_steps=0)
    assert "L-BFGS" not in cfg.describe()
    assert "123 Adam steps at 0.01 + 45 L-BFGS iterations" in cfg._replace(map_steps=123, map_lbfgs_steps=45).describe()


def test_recommended_run_length_is_the_candidate_chosen_on_held_out_training_rows():
    """The configuration's run length and chains are what ``benchmarks/nlo_validation.py`` chose."""
    from tests.conftest import load_benchmark

    bench = load_benchmark("nlo_validation")
    chosen = json.loads(bench.JSON_PATH.read_text())["choice"]["chosen"]
    expected = bench.config_for("1000022,1000022", chosen)
    got = nlo.recommended_config("1000022,1000022")
    fields = ("num_chains", "num_warmup", "num_samples", "map_steps", "map_learning_rate", "map_lbfgs_steps",
              "hidden", "noise_df")  # fmt: skip
    assert {f: getattr(got, f) for f in fields} == {f: getattr(expected, f) for f in fields}
    assert got.derive == expected.derive  # the chosen candidate uses the library's own features
