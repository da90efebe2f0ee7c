"""Convergence diagnostics on synthetic chains whose behaviour is known in closed form."""

from __future__ import annotations

import json
import os

import arviz as az
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.draws import PosteriorDraws
from sigmabnn.evaluate import diagnostics as diag
from sigmabnn.evaluate.inference_data import to_inference_data, to_netcdf
from sigmabnn.model.posterior import Hyperparameters


def _ar1(rng: np.random.Generator, rho: float, shape: tuple[int, ...]) -> np.ndarray:
    """Stationary AR(1) chains ``[C, S, ...]`` with unit marginal variance."""
    noise = rng.standard_normal(shape)
    x = np.empty(shape)
    x[:, 0] = noise[:, 0]
    scale = np.sqrt(1.0 - rho**2)
    for t in range(1, shape[1]):
        x[:, t] = rho * x[:, t - 1] + scale * noise[:, t]
    return x


def test_iid_chains_converged():
    rng = np.random.default_rng(0)
    c, s = 4, 1000
    values = rng.standard_normal((c, s, 5))
    d = diag.predictive_diagnostics(values)
    assert d["rhat"].shape == (5,)
    assert np.all(np.abs(d["rhat"] - 1.0) < 0.01)
    # ESS of iid draws is about C * S (the estimate's relative error is a few percent here).
    assert np.all(np.abs(d["ess_bulk"] / (c * s) - 1.0) < 0.15)
    assert np.all(np.abs(d["ess_tail"] / (c * s) - 1.0) < 0.25)
    assert d["max_rhat"] == pytest.approx(d["rhat"].max())
    assert d["min_ess_bulk"] == pytest.approx(d["ess_bulk"].min())
    summary = diag.summarize(predictions=values)
    assert diag.warnings(summary) == []
    json.dumps(summary)  # a model file stores this


def test_chains_with_different_means_warn():
    rng = np.random.default_rng(1)
    values = rng.standard_normal((4, 500, 3))
    values[2, :, 1] += 2.0  # chain 2 sits elsewhere for point 1
    d = diag.predictive_diagnostics(values)
    assert d["rhat"][1] > 1.1
    assert d["argmax_rhat"] == 1
    assert abs(d["rhat"][0] - 1.0) < 0.02
    msgs = diag.warnings(diag.summarize(predictions=values))
    assert any("R-hat of the predictions" in m and "point 1" in m for m in msgs)


@pytest.mark.parametrize("rho", [0.5, 0.8])
def test_ar1_ess_matches_theory(rho):
    rng = np.random.default_rng(2)
    c, s = 4, 4000
    x = _ar1(rng, rho, (c, s))
    stats = diag.chain_statistics(x)
    expected = (1 - rho) / (1 + rho)
    assert stats["ess_bulk"] / (c * s) == pytest.approx(expected, rel=0.15)


def test_autocorrelation_matches_brute_force():
    rng = np.random.default_rng(3)
    x = _ar1(rng, 0.7, (2, 300, 2))
    rho = diag.autocorrelation(x, max_lag=20)
    assert rho.shape == (2, 21, 2)
    for ci in range(2):
        for j in range(2):
            v = x[ci, :, j] - x[ci, :, j].mean()
            n = v.size
            c0 = np.dot(v, v) / n
            brute = np.array([np.dot(v[: n - k], v[k:]) / n / c0 for k in range(21)])
            np.testing.assert_allclose(rho[ci, :, j], brute, atol=1e-10)


def test_suggest_thin_rules():
    rng = np.random.default_rng(4)
    rho = 0.8
    x = _ar1(rng, rho, (4, 4000))
    # autocorrelation rho^k < 0.1 first at k = 11
    assert 9 <= diag.suggest_thin(x) <= 13
    # (1 + rho) / (1 - rho) = 9 draws per effective draw
    assert 7 <= diag.suggest_thin(x, method="ess") <= 12
    assert diag.suggest_thin(x, max_thin=3) == 3
    iid = rng.standard_normal((4, 1000))
    assert diag.suggest_thin(iid) == 1
    with pytest.raises(ValueError, match="method"):
        diag.suggest_thin(x, method="nope")


def test_ebfmi_synthetic_energy():
    rng = np.random.default_rng(5)
    c, s = 3, 5000
    iid = rng.standard_normal((c, s)) * 3.0 + 10.0
    # independent energies: E[(E_n - E_{n-1})^2] = 2 Var(E)  ->  E-BFMI ~ 2
    np.testing.assert_allclose(diag.ebfmi(iid), 2.0, rtol=0.06)
    # arviz: mean of squared differences over the ddof=1 variance, the same ratio of sums
    np.testing.assert_allclose(diag.ebfmi(iid), az.bfmi(iid), rtol=1e-12)
    # AR(1) energies: E-BFMI ~ 2 (1 - rho)
    sticky = _ar1(rng, 0.9, (c, s))
    np.testing.assert_allclose(diag.ebfmi(sticky), 0.2, rtol=0.2)
    summary = diag.summarize(info={"energy": sticky})
    msgs = diag.warnings(summary)
    assert len([m for m in msgs if "E-BFMI" in m]) == c
    assert all("below 0.3" in m for m in msgs)


def test_sampler_diagnostics_divergences_depth_and_stuck_chain():
    c, s = 4, 100
    is_divergent = np.zeros((c, s), bool)
    is_divergent[1, [3, 7, 50]] = True
    tree_depth = np.full((c, s), 3)
    tree_depth[0, :10] = 10
    acceptance = np.full((c, s), 0.8)
    acceptance[2] = 0.0
    info = {"is_divergent": is_divergent, "tree_depth": tree_depth, "acceptance_rate": acceptance}
    d = diag.sampler_diagnostics(info, max_tree_depth=10)
    assert d["num_divergent"] == 3
    assert d["divergent_per_chain"] == [0, 3, 0, 0]
    assert d["divergent_fraction"] == pytest.approx(3 / (c * s))
    assert d["tree_depth_saturation_fraction"] == pytest.approx(10 / (c * s))
    assert d["mean_acceptance"] == pytest.approx([0.8, 0.8, 0.0, 0.8])
    msgs = diag.warnings(diag.summarize(info=info, max_tree_depth=10))
    assert any(m.startswith("3 divergent transitions") for m in msgs)
    assert any("maximum tree depth 10" in m for m in msgs)
    stuck = [m for m in msgs if "stuck" in m]
    assert stuck == ["Chain 2 is stuck: its mean acceptance rate is 0."]
    # the same info without problems is silent
    clean = {"is_divergent": np.zeros((c, s), bool), "tree_depth": np.full((c, s), 3), "acceptance_rate": acceptance}
    clean["acceptance_rate"] = np.full((c, s), 0.8)
    assert diag.warnings(diag.summarize(info=clean, max_tree_depth=10)) == []


def test_low_ess_warns_with_chain_scaled_threshold():
    rng = np.random.default_rng(6)
    x = _ar1(rng, 0.95, (4, 500))  # ESS ~ 2000 * 0.05 / 1.95 ~ 50
    msgs = diag.warnings(diag.summarize(log_posterior=x))
    assert any(m.startswith("Bulk ESS of the log posterior") and "below 400" in m for m in msgs)
    assert any(m.startswith("Tail ESS of the log posterior") for m in msgs)


def test_bad_shapes_raise_one_line_errors():
    with pytest.raises(ValueError, match="shape"):
        diag.predictive_diagnostics(np.zeros(10))
    with pytest.raises(ValueError, match="4 draws"):
        diag.predictive_diagnostics(np.zeros((2, 2, 3)))
    with pytest.raises(ValueError, match="disagree"):
        diag.summarize(predictions=np.zeros((2, 10, 3)), log_posterior=np.zeros((2, 12)))


def _draws(c: int, s: int, d: int) -> PosteriorDraws:
    rng = np.random.default_rng(7)
    hyper = Hyperparameters(
        noise_precision=jnp.asarray(rng.gamma(2.0, size=(c, s))),
        weight_precision=jnp.asarray(rng.gamma(2.0, size=(c, s, 2))),
        bias_precision=jnp.asarray(rng.gamma(2.0, size=(c, s, 2))),
    )
    return PosteriorDraws(positions=jnp.asarray(rng.standard_normal((c, s, d))), hyper=hyper)


def test_inference_data_and_netcdf_roundtrip(tmp_path):
    c, s, d, n = 2, 20, 5, 3
    draws = _draws(c, s, d)
    rng = np.random.default_rng(8)
    info = {
        "acceptance_rate": rng.uniform(size=(c, s)),
        "step_size": np.full((c, s), 0.1),
        "num_integration_steps": np.full((c, s), 7),
        "tree_depth": np.full((c, s), 3),
        "is_divergent": np.zeros((c, s), bool),
        "energy": rng.standard_normal((c, s)),
        "logdensity": rng.standard_normal((c, s)),
    }
    pred = rng.standard_normal((c, s, n))
    idata = to_inference_data(draws, info, predictions=pred, log_posterior=info["logdensity"])
    assert idata.posterior["position"].dims == ("chain", "draw", "param")
    assert idata.posterior["f"].dims == ("chain", "draw", "point")
    assert idata.posterior["weight_precision"].shape == (c, s, 2)
    assert idata.sample_stats["diverging"].dtype == bool
    assert set(idata.sample_stats.data_vars) == {
        "acceptance_rate",
        "step_size",
        "n_steps",
        "tree_depth",
        "diverging",
        "energy",
        "lp",
    }
    path = tmp_path / "run.nc"
    assert to_netcdf(idata, path) == str(path)
    assert sorted(os.listdir(tmp_path)) == ["run.nc"]  # no temporary file left
    back = az.from_netcdf(path)
    np.testing.assert_array_equal(back.posterior["position"].values, np.asarray(draws.positions))
    np.testing.assert_array_equal(back.posterior["f"].values, pred)
    np.testing.assert_array_equal(back.sample_stats["energy"].values, info["energy"])
    # ArviZ's own diagnostics work on the result
    assert az.bfmi(back).shape == (c,)


def test_to_netcdf_failure_leaves_nothing(tmp_path, monkeypatch):
    idata = to_inference_data(predictions=np.zeros((2, 10, 1)))
    target = tmp_path / "out.nc"
    target.write_bytes(b"previous")

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(type(idata), "to_netcdf", boom)
    with pytest.raises(OSError, match="disk full"):
        to_netcdf(idata, target)
    assert sorted(os.listdir(tmp_path)) == ["out.nc"]
    assert target.read_bytes() == b"previous"
    with pytest.raises(ValueError, match="does not exist"):
        to_netcdf(idata, tmp_path / "missing" / "x.nc")


def test_inference_data_without_or_with_other_hyperparameters():
    positions = jnp.zeros((2, 10, 3))
    idata = to_inference_data(PosteriorDraws(positions=positions, hyper=None))
    assert set(idata.posterior.data_vars) == {"position"}
    other = PosteriorDraws(positions=positions, hyper={"a": jnp.ones((2, 10)), "b": jnp.ones((2, 10, 4))})
    idata = to_inference_data(other)
    assert idata.posterior["hyper_1"].shape == (2, 10, 4)


def test_inference_data_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="disagree"):
        to_inference_data(_draws(2, 10, 3), predictions=np.zeros((2, 11, 1)))


def test_runner_sample_info_type_and_kernel_specific_fields():
    from sigmabnn.mcmc.run import SampleInfo

    rng = np.random.default_rng(9)
    c, s = 2, 50
    info = SampleInfo(
        acceptance_rate=jnp.asarray(rng.uniform(0.5, 1.0, (c, s)), jnp.float32),
        step_size=jnp.full((c, s), 0.3),
        num_integration_steps=jnp.full((c, s), 7, jnp.int32),
        tree_depth=jnp.full((c, s), 3, jnp.int32),
        is_divergent=jnp.zeros((c, s), bool).at[0, 4].set(True),
        energy=jnp.asarray(_ar1(rng, 0.99, (c, s))),
        logdensity=jnp.asarray(rng.standard_normal((c, s))),
    )
    nuts = diag.sampler_diagnostics(info, max_tree_depth=3)
    assert nuts["num_divergent"] == 1
    assert nuts["tree_depth_saturation_fraction"] == 1.0
    assert len(nuts["ebfmi"]) == c
    # MH "energies" are negative log-densities: no E-BFMI, no tree depth
    mh = diag.sampler_diagnostics(info, max_tree_depth=3, kernel="mh")
    assert "ebfmi" not in mh and "tree_depth_saturation_fraction" not in mh
    assert not any("E-BFMI" in m or "tree depth" in m for m in diag.warnings(diag.summarize(info=info, kernel="mh")))
    with pytest.raises(ValueError, match="kernel"):
        diag.sampler_diagnostics(info, kernel="gibbs")
    idata = to_inference_data(info=info, predictions=rng.standard_normal((c, s, 2)))
    assert idata.sample_stats["lp"].shape == (c, s)
    assert int(idata.sample_stats["diverging"].sum()) == 1


def test_float32_and_jax_inputs():
    rng = np.random.default_rng(10)
    x = rng.standard_normal((4, 200, 3))
    d64 = diag.predictive_diagnostics(x)
    d32 = diag.predictive_diagnostics(jnp.asarray(x, jnp.float32))
    np.testing.assert_allclose(d32["rhat"], d64["rhat"], rtol=1e-3)  # float32 rounding reorders a few folded ranks
    np.testing.assert_allclose(d32["ess_bulk"], d64["ess_bulk"], rtol=1e-3)
