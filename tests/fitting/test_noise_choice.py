"""``likelihood="auto"``: the noise model chosen on the validation rows (:mod:`sigmabnn.fitting.noise_choice`)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit, resume
from sigmabnn.errors import InputError
from sigmabnn.fitting.noise_choice import (
    MARGIN_SE,
    beats,
    loo_calibrated,
    mixture_log_densities,
    scaled_mixture_log_densities,
)
from sigmabnn.fitting.spec import AUTO_NOISE_MARGIN, FitSpec, build_spec
from sigmabnn.io.checkpoint import Checkpoint, TrainingInterrupted
from sigmabnn.model.build import build_bnn, likelihood_for
from sigmabnn.model.mlp import num_params
from sigmabnn.model.posterior import Data

SMALL = {"architecture": "1-8-1", "num_chains": 2, "num_warmup": 30, "num_samples": 10, "max_tree_depth": 4}


def toy(n: int, seed: int, hetero: bool) -> pd.DataFrame:
    """``y = sin(3 x) + s(x) e`` on [0, 1]: ``s = 0.01 + 0.5 x`` (hetero) or ``0.2``, Gaussian ``e``."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    scale = 0.01 + 0.5 * x if hetero else 0.2
    return pd.DataFrame({"x": x, "y": np.sin(3 * x) + scale * rng.standard_normal(n)})


def test_auto_chooses_only_for_an_mcmc_regression_with_unknown_noise():
    assert build_spec("y", likelihood="auto").model.noise_choice
    assert build_spec("y", likelihood="auto", method="nuts").model.noise_choice
    for kwargs in ({"method": "ensemble"}, {"method": "bbb"}, {"noise_precision": 50.0}, {"learn_noise": False},
                   {"noise_column": "s"}):  # fmt: skip
        spec = build_spec("y", likelihood="auto", **kwargs)
        assert not spec.model.noise_choice and spec.model.likelihood == "gaussian", kwargs
    spec = build_spec("y", likelihood="auto")
    assert spec.model.likelihood == "gaussian" and spec.to_json()["likelihood"] == "auto"
    chosen = spec.with_likelihood("hetero_student_t")
    assert chosen.model.likelihood == "hetero_student_t" and not chosen.model.learn_noise
    assert not chosen.model.noise_choice and chosen.to_json()["likelihood"] == "hetero_student_t"


def test_auto_takes_no_degrees_of_freedom():
    with pytest.raises(InputError, match="student_t and hetero_student_t"):
        build_spec("y", likelihood="auto", noise_df=4.0)


def test_mixture_log_density_is_the_log_of_the_mean_density():
    """Two networks that differ only in their output bias: the mixture of two Gaussians, by hand."""
    bnn = build_bnn(likelihood_for("gaussian"), "1-3-1", ["x"], "tanh", "float64")
    rng = np.random.default_rng(0)
    base = rng.normal(size=(1, 3 * 1 + 3 + 3 * 1 + 1))
    positions = np.repeat(base, 2, axis=0)
    positions[1, -1] += 0.7  # the last parameter is the output bias
    x = rng.normal(size=(5, 1))
    y = rng.normal(size=(5, 1))
    tau = 4.0
    data = Data(x=jnp.asarray(x), y=jnp.asarray(y))
    got = np.asarray(mixture_log_densities(bnn, jnp.asarray(positions), jnp.asarray(tau), data))
    means = np.stack([np.asarray(bnn.apply(bnn.unflatten(jnp.asarray(p)), jnp.asarray(x)))[:, 0] for p in positions])
    assert abs(means[1] - means[0] - 0.7).max() < 1e-12
    dens = np.sqrt(tau / (2 * math.pi)) * np.exp(-0.5 * tau * (y[:, 0] - means) ** 2)
    np.testing.assert_allclose(got, np.log(dens.mean(axis=0)), rtol=1e-10)


def _two_networks(likelihood: str, seed: int = 0):
    bnn = build_bnn(likelihood_for(likelihood), "1-3-1", ["x"], "tanh", "float64")
    rng = np.random.default_rng(seed)
    positions = rng.normal(size=(2, num_params(bnn.mlp)))
    x, y = rng.normal(size=(6, 1)), rng.normal(size=(6, 1))
    return bnn, jnp.asarray(positions), Data(x=jnp.asarray(x), y=jnp.asarray(y))


def test_a_scaled_gaussian_mixture_is_the_mixture_with_the_precision_divided_by_the_factor_squared():
    bnn, positions, data = _two_networks("gaussian")
    factors = jnp.asarray([0.5, 1.0, 3.0])
    got = np.asarray(scaled_mixture_log_densities(bnn, positions, jnp.asarray(4.0), data, factors))
    assert got.shape == (3, 6)
    for c, row in zip([0.5, 1.0, 3.0], got, strict=True):
        want = np.asarray(mixture_log_densities(bnn, positions, jnp.asarray(4.0 / c**2), data))
        np.testing.assert_allclose(row, want, rtol=1e-10)


def test_a_scaled_scale_head_is_the_student_t_with_each_rows_scale_times_the_factor():
    from scipy import stats

    bnn, positions, data = _two_networks("hetero_student_t")
    got = np.asarray(scaled_mixture_log_densities(bnn, positions, jnp.asarray(1.0), data, jnp.asarray([0.3, 2.0])))
    df = bnn.likelihood.df
    for c, row in zip([0.3, 2.0], got, strict=True):
        dens = []
        for p in positions:
            mu, s = bnn.likelihood.split(bnn.apply(bnn.unflatten(p), data.x))
            dens.append(
                stats.t.pdf(np.asarray(data.y[:, 0]), df, loc=np.asarray(mu[:, 0]), scale=c * np.asarray(s[:, 0]))
            )
        np.testing.assert_allclose(row, np.log(np.mean(dens, axis=0)), rtol=1e-9)


def test_leave_one_out_calibration_scores_each_row_at_the_factor_the_other_rows_choose():
    # factor 0 fits rows 1 and 2, factor 1 fits row 0 by far: row 0 alone would choose factor 1
    table = np.array([[-9.0, 0.0, 0.0], [0.0, -1.0, -1.0]])
    got, best = loo_calibrated(table)
    # rows 1, 2: the others (row 0 and one of them) prefer factor 1 (-1 against -9); row 0: the others prefer 0
    np.testing.assert_array_equal(got, [-9.0, -1.0, -1.0])
    assert best == 1  # all rows together: -2 against -9


def test_the_scale_head_must_win_by_more_than_the_noise_of_the_rows():
    rng = np.random.default_rng(0)
    noise = rng.normal(size=24)
    noise = (noise - noise.mean()) / noise.std(ddof=1)  # mean 0, sd 1: the paired SE is 1 / sqrt(24)
    se = 1 / np.sqrt(24)
    assert not beats(noise + 0.9 * MARGIN_SE * se)
    assert beats(noise + 1.1 * MARGIN_SE * se)
    assert not beats(noise - 1.0)


def test_a_margin_of_its_own_moves_the_threshold():
    rng = np.random.default_rng(1)
    noise = rng.normal(size=30)
    noise = (noise - noise.mean()) / noise.std(ddof=1)
    se = 1 / np.sqrt(30)
    gain = noise + 2.0 * se  # z = 2
    assert beats(gain, 1.9) and not beats(gain, 2.1) and beats(noise - 1.0, -1e6) and not beats(gain, 1e6)


def test_the_margin_is_checked_and_recorded_where_it_enters():
    spec = build_spec("y", noise_margin=2.5)
    assert spec.model.noise_margin == 2.5 and spec.to_json()["noise_margin"] == 2.5
    assert FitSpec.from_json(spec.to_json()).model.noise_margin == 2.5
    default = build_spec("y")
    assert default.model.noise_margin == AUTO_NOISE_MARGIN == MARGIN_SE and "noise_margin" not in default.to_json()
    with pytest.raises(InputError, match="noise_margin applies only to likelihood='auto'"):
        build_spec("y", likelihood="gaussian", noise_margin=2.0)
    for bad in (float("inf"), float("nan"), True, "2"):
        with pytest.raises(InputError, match="noise_margin must be a finite number"):
            build_spec("y", noise_margin=bad)


def test_a_forced_margin_keeps_its_model_from_the_same_starts():
    """Margins past any gain fix the choice; both fits run the same choice and record the same gain and SE, and
    the default margin's fit is the one of the model it picks."""
    data = toy(200, 1, hetero=True)
    runs = {m: fit(data, "y", ["x"], seed=2, progress=False, noise_margin=m, noise_choice_by="starts", **SMALL)
            for m in (1e6, -1e6, None)}  # fmt: skip
    choices = {m: report.noise_choice for m, (_, report) in runs.items()}
    assert choices[1e6].likelihood == "gaussian" and choices[-1e6].likelihood == "hetero_student_t"
    assert choices[1e6].gain == choices[-1e6].gain == choices[None].gain is not None
    assert choices[1e6].gain_se == choices[None].gain_se > 0 and choices[-1e6].margin == -1e6
    z = choices[None].gain / choices[None].gain_se
    picked = -1e6 if z > MARGIN_SE else 1e6
    assert choices[None].likelihood == choices[picked].likelihood
    np.testing.assert_array_equal(runs[None][0].draws.positions, runs[picked][0].draws.positions)


def test_sampled_choice_keeps_the_model_whose_posterior_predicts_the_validation_rows_better():
    """Both models sampled from the choice's starts: each is the fit with its model forced (same draws), and the
    kept one has the higher validation log predictive density of the two."""
    data = toy(200, 1, hetero=True)
    fitted, report = fit(data, "y", ["x"], seed=2, progress=False, noise_choice_by="sampled", **SMALL)
    scores = report.noise_choice.sampled_val_log_density
    assert set(scores) == {"gaussian", "hetero_student_t"} and "both sampled" in report.noise_choice.reason
    kept = max(scores, key=scores.get)
    assert report.model.likelihood == report.noise_choice.likelihood == kept == fitted.bnn.likelihood.name
    for margin, name in ((1e6, "gaussian"), (-1e6, "hetero_student_t")):
        forced, forced_report = fit(data, "y", ["x"], seed=2, progress=False, noise_margin=margin,
                                    noise_choice_by="starts", **SMALL)  # fmt: skip
        assert forced_report.model.likelihood == name
        assert scores[name] == pytest.approx(-forced_report.metrics["val"]["original"]["nll"], rel=1e-12)
        if name == kept:
            np.testing.assert_array_equal(forced.draws.positions, fitted.draws.positions)
    assert report.timings.total_seconds > report.noise_choice.seconds + report.timings.fit_seconds
    with pytest.raises(InputError, match="noise_choice_by must be one of starts, calibrated, sampled"):
        build_spec("y", noise_choice_by="posterior")
    with pytest.raises(InputError, match="noise_choice_by applies only to likelihood='auto'"):
        build_spec("y", likelihood="gaussian", noise_choice_by="sampled")
    spec = build_spec("y", noise_choice_by="sampled")
    assert FitSpec.from_json(spec.to_json()).model.noise_choice_by == "sampled"


@pytest.mark.slow
def test_a_resumed_sampled_choice_compares_with_the_model_sampled_first(tmp_path, monkeypatch):
    """Interrupted while sampling the second model: the first, finished in memory, waits in the checkpoint, and the
    resumed run keeps the model the uninterrupted one keeps, with its draws."""
    path = tmp_path / "data.csv"
    toy(300, 0, hetero=True).to_csv(path, index=False)
    options = dict(method="mh", noise_choice_by="sampled", architecture="1-3-1", num_chains=2, num_warmup=40,
                   num_samples=60, progress=False, map={"num_steps": 200}, seed=5)  # fmt: skip
    reference, first = fit(path, "y", **options)
    commit = Checkpoint.commit

    def stop_in_sampling(self, iteration, state):
        commit(self, iteration, state)
        if iteration == 90:  # commits after the warm-up (40) and every 50 sampling iterations
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "commit", stop_in_sampling)
    model = tmp_path / "m.model"
    with pytest.raises(TrainingInterrupted):
        fit(path, "y", checkpoint=model, **options)
    assert (model / "checkpoint" / "alternative" / "model.json").is_file()
    monkeypatch.setattr(Checkpoint, "commit", commit)
    fitted, report = resume(model, progress=False)
    assert report.model.likelihood == first.model.likelihood
    assert report.noise_choice.sampled_val_log_density == pytest.approx(first.noise_choice.sampled_val_log_density)
    np.testing.assert_array_equal(fitted.draws.positions, reference.draws.positions)
    assert not (model / "checkpoint").exists()


def test_a_growing_noise_scale_chooses_the_scale_head():
    fitted, report = fit(toy(600, 0, hetero=True), "y", ["x"], likelihood="auto", seed=0, progress=False, **SMALL)
    choice = report.noise_choice
    assert choice.likelihood == "hetero_student_t" == report.model.likelihood == fitted.bnn.likelihood.name
    assert choice.val_log_density["hetero_student_t"] > choice.val_log_density["gaussian"]
    assert choice.seconds > 0 and "paired SE" in choice.reason
    assert choice.calibrated_gain is None and choice.scale_factors is None  # computed only when it judges
    # the chains start from the choice's MAP fits: no second MAP pretraining, whose settings are still named
    assert report.timings.map_seconds < choice.seconds and fitted.settings["map"]
    assert report.model.architecture == "1-8-2"
    # the default ChEES fit with validation rows polishes the starts with L-BFGS (the choice's fits included)
    assert (fitted.settings["map_lbfgs_steps"], fitted.settings["map_lbfgs_patience"]) == (1000, 100)
    assert fitted.report.noise_choice == choice  # stored in the model's diagnostics and read back


def test_calibrated_judges_by_the_calibrated_scores(monkeypatch):
    """The same fit and starts: ``"starts"`` takes the scale head on this growing noise; with ``"calibrated"`` the
    choice follows the calibrated rows, here replaced by ones that favour the Gaussian."""
    import sigmabnn.fitting.noise_choice as nc

    data = toy(600, 0, hetero=True)
    _, starts = fit(data, "y", ["x"], seed=0, progress=False, noise_choice_by="starts", **SMALL)
    _, calibrated = fit(data, "y", ["x"], seed=0, progress=False, noise_choice_by="calibrated", **SMALL)
    assert starts.noise_choice.likelihood == calibrated.noise_choice.likelihood == "hetero_student_t"
    assert starts.noise_choice.gain == calibrated.noise_choice.gain  # the same starts
    # with each model's noise scale set on the other validation rows the scale head still wins
    choice = calibrated.noise_choice
    assert choice.calibrated_gain > 2 * choice.calibrated_se > 0
    assert set(choice.scale_factors) == {"gaussian", "hetero_student_t"}
    assert "calibrated leave-one-out" in calibrated.noise_choice.reason
    assert "calibrated" not in starts.noise_choice.reason
    real = nc.loo_calibrated
    favour = iter([0.0, -1.0])  # AUTO_NOISE_MODELS' order: the Gaussian, then the scale head

    def fake(table):
        rows, best = real(table)
        return np.full_like(rows, next(favour)) + 0.01 * np.arange(rows.size), best

    monkeypatch.setattr(nc, "loo_calibrated", fake)
    _, report = fit(data, "y", ["x"], seed=0, progress=False, noise_choice_by="calibrated", **SMALL)
    assert report.noise_choice.likelihood == "gaussian" and report.noise_choice.calibrated_gain == pytest.approx(-1)
    assert report.noise_choice.gain == starts.noise_choice.gain  # the raw comparison still favours the scale head


def test_too_few_validation_rows_keep_the_gaussian_without_a_choice():
    fitted, report = fit(toy(60, 0, hetero=True), "y", ["x"], likelihood="auto", split=(0.8, 0.2, 0.0),
                         progress=False, **SMALL)  # fmt: skip
    assert report.model.likelihood == "gaussian" and report.noise_choice.val_log_density == {}
    assert "fewer than 20" in report.noise_choice.reason


def test_given_starts_choose_by_their_width():
    """An earlier fit's networks (an active-learning refit) keep that fit's noise model."""
    data = toy(120, 0, hetero=True)
    first, first_report = fit(data, "y", ["x"], likelihood="hetero_student_t", progress=False, **SMALL)
    # 120 rows train on all of them: no validation rows to early-stop a polish on, so none is run
    assert first_report.data.val == 0 and first.settings["map_lbfgs_steps"] == 0
    starts = np.asarray(first.draws.positions)[:, -1]
    again, report = fit(data, "y", ["x"], likelihood="auto", initial_positions=starts, progress=False, **SMALL)
    assert report.model.likelihood == "hetero_student_t" and report.noise_choice.val_log_density == {}
    with pytest.raises(InputError, match="no noise model has 5 parameters"):
        fit(data, "y", ["x"], likelihood="auto", initial_positions=np.zeros((2, 5)), progress=False, **SMALL)


def test_the_choice_is_drawn_from_the_seed():
    """The run is reproducible: the same seed gives the same choice and scores."""
    a = fit(toy(200, 1, hetero=False), "y", ["x"], likelihood="auto", seed=3, progress=False, **SMALL)[1]
    b = fit(toy(200, 1, hetero=False), "y", ["x"], likelihood="auto", seed=3, progress=False, **SMALL)[1]
    assert a.noise_choice.val_log_density  # 20 validation rows: a choice was made
    assert (a.noise_choice.likelihood, a.noise_choice.val_log_density, a.noise_choice.reason) == (
        b.noise_choice.likelihood,
        b.noise_choice.val_log_density,
        b.noise_choice.reason,
    )


@pytest.mark.slow
def test_a_resumed_auto_fit_keeps_its_noise_model(tmp_path, monkeypatch):
    """Interrupted in sampling and resumed: the checkpoint's MAP positions name the likelihood, and the
    draws are those of the uninterrupted fit."""
    path = tmp_path / "data.csv"
    toy(600, 0, hetero=True).to_csv(path, index=False)
    options = dict(method="mh", likelihood="auto", architecture="1-3-1", num_chains=2, num_warmup=40, num_samples=60,
                   progress=False, map={"num_steps": 200}, seed=4)  # fmt: skip
    reference, first = fit(path, "y", **options)
    assert first.noise_choice.likelihood == "hetero_student_t"
    commit = Checkpoint.commit

    def stop_in_sampling(self, iteration, state):
        commit(self, iteration, state)
        if iteration == 90:
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpoint, "commit", stop_in_sampling)
    model = tmp_path / "m.model"
    with pytest.raises(TrainingInterrupted):
        fit(path, "y", checkpoint=model, **options)
    monkeypatch.setattr(Checkpoint, "commit", commit)
    fitted, report = resume(model, progress=False)
    assert report.model.likelihood == "hetero_student_t" and "checkpoint" in report.noise_choice.reason
    np.testing.assert_array_equal(fitted.draws.positions, reference.draws.positions)
