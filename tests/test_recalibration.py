"""Quantile recalibration: exact mixture PIT, the calibration map, recalibrated intervals, files, CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from sigmabnn.api import fit
from sigmabnn.calibration import Calibration, fit_scale
from sigmabnn.cli.main import main
from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import DataError, InputError, ModelFileError
from sigmabnn.fitted import FittedModel
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.model import BNN, Categorical, Gaussian, Hyperparameters, StudentT, parse_architecture
from sigmabnn.predict import mixture_cdf, predict, predictive_cdf
from sigmabnn.recalibration import pit_values, recalibrate
from test_predict import make_fitted, numpy_forward

LEVELS = (0.6827, 0.9545)


def linear_model(noise_std: float, likelihood=None, networks: int = 4) -> FittedModel:
    """Every network predicts ``y = x`` with noise std ``noise_std`` (identity transforms)."""
    mlp = parse_architecture("1-1")
    pos = np.tile(np.array([1.0, 0.0]), (1, networks, 1))
    lik = likelihood or Gaussian()
    var_factor = lik.df / (lik.df - 2.0) if isinstance(lik, StudentT) else 1.0
    prec = np.full((1, networks), var_factor / noise_std**2)  # noise_std is the std, whatever the noise model
    hyper = Hyperparameters(prec, np.ones((1, networks, 1)), np.ones((1, networks, 1)))
    unit = Standardizer(np.zeros(1), np.ones(1))
    return FittedModel(
        bnn=BNN(mlp, likelihood=lik),
        draws=PosteriorDraws(pos, hyper),
        x_transform=unit,
        y_transform=TargetTransform(False, Standardizer(np.zeros(1), np.ones(1))),
        feature_names=("x",),
        target_name="y",
    )


def coverage(y: np.ndarray, pred, level: float) -> float:
    return float(np.mean((y >= pred.lower[level][:, 0]) & (y <= pred.upper[level][:, 0])))


# --------------------------------------------------------------------------- PIT


@pytest.mark.parametrize("df", [None, 3.0])
def test_mixture_cdf_matches_monte_carlo(df):
    rng = np.random.default_rng(0)
    mu, scale = rng.normal(size=(3, 4)), rng.uniform(0.5, 2.0, size=(3, 4))
    y = np.array([-2.5, -0.3, 0.4, 3.0])
    got = np.asarray(mixture_cdf(mu, scale, y, df))
    n = 100_000
    which = rng.integers(0, 3, size=n)
    noise = rng.standard_normal((n, 4)) if df is None else rng.standard_t(df, size=(n, 4))
    samples = mu[which] + scale[which] * noise
    mc = np.mean(samples <= y, axis=0)
    assert np.all(np.abs(got - mc) < 4.5 * np.sqrt(mc * (1 - mc) / n) + 1e-6), (got, mc)
    dist = stats.norm if df is None else stats.t(df)
    np.testing.assert_allclose(got, dist.cdf((y - mu) / scale).mean(0), rtol=1e-10, atol=1e-14)
    # far tails keep relative precision (the t CDF is taken from the incomplete beta, not 1 - cdf)
    far = np.asarray(mixture_cdf(np.zeros((1, 1)), np.ones((1, 1)), np.array([-40.0]), df))
    np.testing.assert_allclose(far, dist.cdf(-40.0), rtol=1e-8)


def test_predictive_cdf_is_the_exact_mixture_cdf():
    fitted = make_fitted(log10=True, chains=2, draws=3)
    rng = np.random.default_rng(1)
    x = rng.normal(2.0, 3.0, size=(7, 2))
    y = rng.uniform(1.0, 100.0, size=7)
    mus, variances = numpy_forward(fitted, x)
    expected = stats.norm.cdf((np.log10(y)[None, :] - mus[..., 0]) / np.sqrt(variances[..., 0])).mean(0)
    np.testing.assert_allclose(predictive_cdf(fitted, x, y)[:, 0], expected, rtol=1e-9)

    t_model = make_fitted(likelihood=StudentT(df=4.0), chains=1, draws=3)
    mus, _ = numpy_forward(t_model, x)
    prec = np.asarray(t_model.draws.hyper.noise_precision).reshape(-1)
    scale = (t_model.y_transform.scale / np.sqrt(prec))[:, None]  # t scale 1 / sqrt(tau), log-space units
    expected = stats.t.cdf((y[None, :] - mus[..., 0]) / scale, 4.0).mean(0)
    np.testing.assert_allclose(predictive_cdf(t_model, x, y)[:, 0], expected, rtol=1e-9)


# --------------------------------------------------------------------------- the map


def test_calibration_map_is_monotone_bounded_and_finite_at_extreme_levels():
    rng = np.random.default_rng(2)
    pit = np.concatenate([rng.beta(2.0, 2.0, size=60), [0.0, 1.0, 0.5, 0.5]])  # ends and ties included
    cal = Calibration(pit, "val")
    assert cal.n == 64 and np.all(np.diff(cal.pit[:, 0]) >= 0)
    q = np.concatenate([[1e-12, 1e-6, 1e-3], np.linspace(0.01, 0.99, 99), [1 - 1e-3, 1 - 1e-6, 1 - 1e-12]])
    levels = cal.model_levels(q)[:, 0]
    assert np.all(np.isfinite(levels)) and np.all((levels >= 0) & (levels <= 1))
    assert np.all(np.diff(levels) >= 0)
    r = cal.cdf(np.linspace(0, 1, 201))[:, 0]
    assert np.all(np.diff(r) >= 0) and r[0] == pytest.approx(1 / 65) and r[-1] == 1.0  # one PIT is exactly 0
    # R(R^{-1}(q)) = q between the knots
    np.testing.assert_allclose(cal.cdf(cal.model_levels([0.2, 0.5, 0.8])[:, 0])[:, 0], [0.2, 0.5, 0.8], atol=1e-12)
    # PITs concentrated near 1/2 (a too-wide model) map central levels inwards
    lo, hi = cal.model_levels([0.15865, 0.84135])[:, 0]
    assert 0.15865 < lo < hi < 0.84135
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Calibration(np.array([0.2, 1.5]))
    with pytest.raises(ValueError, match="PIT"):
        Calibration(np.array([np.nan]))


# --------------------------------------------------------------------------- recalibration works


def test_recalibration_fixes_a_too_wide_gaussian_on_independent_rows():
    rng = np.random.default_rng(3)
    model = linear_model(1.5)  # the data's noise std is 1: the predictive is 1.5x too wide
    x_cal, x_new = rng.normal(size=(2000, 1)), rng.normal(size=(3000, 1))
    y_cal, y_new = x_cal[:, 0] + rng.normal(size=2000), x_new[:, 0] + rng.normal(size=3000)
    fixed = recalibrate(model, x_cal, y_cal)
    assert fixed.calibration.n == 2000 and model.calibration is None
    raw = predict(fixed, x_new, levels=LEVELS, calibrated=False)
    cal = predict(fixed, x_new, levels=LEVELS)
    np.testing.assert_array_equal(raw.mean, cal.mean)
    np.testing.assert_array_equal(raw.std, cal.std)
    for level in LEVELS:
        mc = math.sqrt(level * (1 - level) * (1 / 3000 + 1 / 2000))  # test rows + calibration rows
        assert abs(coverage(y_new, raw, level) - level) > 5 * mc  # raw: measurably too wide
        assert abs(coverage(y_new, cal, level) - level) < 4 * mc, (level, coverage(y_new, cal, level))
        assert np.all(cal.upper[level] - cal.lower[level] < raw.upper[level] - raw.lower[level])
    # nested intervals
    assert np.all(cal.lower[0.9545] <= cal.lower[0.6827]) and np.all(cal.upper[0.6827] <= cal.upper[0.9545])


@pytest.mark.parametrize("k_true", [0.6, 1.0, 1.7])
def test_fit_scale_recovers_the_width_factor_of_a_miscalibrated_gaussian(k_true):
    # a predictive N(0, 1) of data N(0, k^2): PIT u = Phi(k z); its central intervals must widen k-fold
    rng = np.random.default_rng(11)
    m = 4000
    u = stats.norm.cdf(k_true * rng.standard_normal(m))
    (k,) = fit_scale(u)
    # Monte-Carlo error of k: about k / sqrt(2 m) for the variance; the coverage loss is flatter: allow 5 %
    assert abs(math.log(k / k_true)) < 0.05, (k, k_true)
    cal = Calibration(u, "val", np.array([k]))
    assert cal.method == "scale" and cal.n == m
    q = np.array([0.025, 0.16, 0.5, 0.84, 0.975])
    np.testing.assert_allclose(cal.model_levels(q)[:, 0], stats.norm.cdf(k * stats.norm.ppf(q)), rtol=1e-12)
    np.testing.assert_allclose(cal.cdf(cal.model_levels(q)[:, 0])[:, 0], q, rtol=1e-12)  # R(R^-1(q)) = q
    assert cal.model_levels(np.array([0.0, 1.0]))[:, 0].tolist() == [0.0, 1.0]


def test_scale_recalibration_fixes_a_too_wide_gaussian_and_survives_save_and_load(tmp_path, capsys):
    rng = np.random.default_rng(13)
    model = linear_model(1.5)  # the data's noise std is 1: the predictive is 1.5x too wide
    x_cal, x_new = rng.normal(size=(300, 1)), rng.normal(size=(3000, 1))
    y_cal, y_new = x_cal[:, 0] + rng.normal(size=300), x_new[:, 0] + rng.normal(size=3000)
    fixed = recalibrate(model, x_cal, y_cal, map="scale")
    assert fixed.calibration.method == "scale" and abs(fixed.calibration.scale[0] - 1 / 1.5) < 0.1
    assert fixed.report.recalibration.extra["scale"] == fixed.calibration.scale.tolist()
    raw, cal = predict(fixed, x_new, levels=LEVELS, calibrated=False), predict(fixed, x_new, levels=LEVELS)
    for level in LEVELS:
        mc = math.sqrt(level * (1 - level) / 3000) + 0.03  # test rows + the scale's error from 300 rows
        assert abs(coverage(y_new, raw, level) - level) > 0.04  # raw: 1.5x too wide
        assert abs(coverage(y_new, cal, level) - level) < mc, (level, coverage(y_new, cal, level))
        width = (cal.upper[level] - cal.lower[level]) / (raw.upper[level] - raw.lower[level])
        # a Gaussian: k times as wide (each row's interval is read off its own predictive samples)
        assert np.median(width) == pytest.approx(fixed.calibration.scale[0], rel=0.02)
    back = load_model(save_model(fixed, tmp_path / "s.model"))
    assert back.calibration.method == "scale" and back.calibration.scale.tolist() == fixed.calibration.scale.tolist()
    assert main(["info", str(tmp_path / "s.model")]) == 0
    assert f"width-recalibrated (x{fixed.calibration.scale[0]:.3g}) on 300 val rows" in capsys.readouterr().out
    header = json.loads((tmp_path / "s.model" / "model.json").read_text())
    header["calibration"]["scale"] = [-1.0]
    (tmp_path / "s.model" / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFileError, match="invalid calibration"):
        load_model(tmp_path / "s.model")
    with pytest.raises(InputError, match="map must be one of"):
        recalibrate(model, x_cal, y_cal, map="isotonic")


def test_recalibration_fixes_a_student_t_predictive_of_laplace_noise():
    rng = np.random.default_rng(4)
    model = linear_model(1.0, StudentT(df=3.0))  # unit-variance t_3 predictive; data: unit-variance Laplace
    b = 1 / math.sqrt(2.0)
    x_cal, x_new = rng.normal(size=(2000, 1)), rng.normal(size=(4000, 1))
    y_cal = x_cal[:, 0] + rng.laplace(scale=b, size=2000)
    y_new = x_new[:, 0] + rng.laplace(scale=b, size=4000)
    fixed = recalibrate(model, pd.DataFrame({"x": x_cal[:, 0], "y": y_cal}), split_column=None)
    assert fixed.calibration.split == "all"
    u = predictive_cdf(fixed, x_new, y_new)[:, 0]
    for level in (0.6827, 0.9545):
        mc = math.sqrt(level * (1 - level) * (1 / 4000 + 1 / 2000))
        raw = np.mean((u >= (1 - level) / 2) & (u <= (1 + level) / 2))
        lo, hi = fixed.calibration.model_levels([(1 - level) / 2, (1 + level) / 2])[:, 0]
        assert abs(raw - level) > 3 * mc, (level, raw)  # expected: 5.7 and 3.8 MC stds
        assert abs(np.mean((u >= lo) & (u <= hi)) - level) < 4 * mc


def test_evaluate_counts_a_recalibrated_t_models_coverage_exactly_as_its_sampled_intervals_do():
    """evaluate's coverage comes from the PIT at the mapped levels; predict's intervals (from samples) hold
    the same rows but where a target lies within the intervals' Monte-Carlo error of an end."""
    from sigmabnn.evaluate.metrics import evaluate

    rng = np.random.default_rng(5)
    model = linear_model(1.0, StudentT(df=4.0))
    x_cal, x_new = rng.normal(size=(500, 1)), rng.normal(size=(3000, 1))
    y_cal = x_cal[:, 0] + 1.5 * rng.normal(size=500)  # the model is too narrow: the map widens it
    y_new = x_new[:, 0] + 1.5 * rng.normal(size=3000)
    fixed = recalibrate(model, pd.DataFrame({"x": x_cal[:, 0], "y": y_cal}), split_column=None)
    got = evaluate(fixed, x_new, y_new, levels=LEVELS)["original"]["coverage_interval"]
    u = predictive_cdf(fixed, x_new, y_new)[:, 0]
    pred = predict(fixed, x_new, levels=LEVELS)
    for level in LEVELS:
        lo, hi = fixed.calibration.model_levels([(1 - level) / 2, (1 + level) / 2])[:, 0]
        assert got[f"{level:g}"] == np.mean((u >= lo) & (u <= hi))
        sampled = coverage(y_new, pred, level)
        assert abs(got[f"{level:g}"] - sampled) < 0.01, (level, got, sampled)
        assert abs(got[f"{level:g}"] - level) < 4 * math.sqrt(level * (1 - level) * (1 / 3000 + 1 / 500))


def test_recalibrated_tail_levels_below_one_in_2000_get_enough_samples():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3000, 1))
    y = x[:, 0] + rng.normal(size=3000)
    model = recalibrate(linear_model(0.9), x, y)  # 10 % too narrow: 3 sigma maps to a tail level < 1/2000
    lo_q, hi_q = model.calibration.model_levels([(1 - 0.9973) / 2, (1 + 0.9973) / 2])[:, 0]
    assert 1e-4 < lo_q < 1 / 2000 and 1e-4 < 1 - hi_q < 1 / 2000
    x_new = x[:200]

    # the bounds' tail probabilities under the model's exact N(x, 0.9^2), averaged over points
    def tails(pred):
        p_lo = stats.norm.cdf((pred.lower[0.9973][:, 0] - x_new[:, 0]) / 0.9)
        p_hi = stats.norm.sf((pred.upper[0.9973][:, 0] - x_new[:, 0]) / 0.9)
        return np.mean(p_lo) / lo_q, np.mean(p_hi) / (1 - hi_q)

    default = tails(predict(model, x_new, levels=(0.9973,)))  # raised sample count
    assert all(abs(r - 1) < 0.25 for r in default), default
    few = tails(predict(model, x_new, levels=(0.9973,), num_noise_samples=2000))  # the raw default count
    assert all(r > 1.5 for r in few), few  # 2,000 samples cannot resolve these levels


# --------------------------------------------------------------------------- errors, files


def test_recalibrate_refuses_bad_rows_and_a_classifier_without_labels_or_with_loo_rows():
    mlp = parse_architecture("2-3")
    d = sum(a * b + b for a, b in zip(mlp.widths[:-1], mlp.widths[1:]))
    hyper = Hyperparameters(np.ones((1, 2)), np.ones((1, 2, 1)), np.ones((1, 2, 1)))
    clf = FittedModel(
        bnn=BNN(mlp, likelihood=Categorical()),
        draws=PosteriorDraws(np.zeros((1, 2, d)), hyper),
        x_transform=Standardizer(np.zeros(2), np.ones(2)),
        y_transform=TargetTransform(False, Standardizer(np.zeros(1), np.ones(1))),
        feature_names=("a", "b"),
        target_name="label",
    )
    with pytest.raises(InputError, match="no label set"):
        recalibrate(clf, np.zeros((30, 2)), np.zeros(30))
    with pytest.raises(InputError, match="PIT values apply to regression models"):
        pit_values(clf, np.zeros((30, 2)), np.zeros(30))
    with pytest.raises(InputError, match=r"held-out rows \(rows 'heldout'\), not 'loo'"):
        recalibrate(clf, np.zeros((30, 2)), np.zeros(30), rows="loo")
    model = linear_model(1.0)
    with pytest.raises(DataError, match="at least 20"):
        recalibrate(model, np.zeros((5, 1)), np.zeros(5))
    table = pd.DataFrame({"x": np.zeros(30), "y": np.zeros(30), "split": ["train"] * 30})
    with pytest.raises(DataError, match="no rows with split == 'val'"):
        recalibrate(model, table)
    with pytest.raises(DataError, match="target column 'y'"):
        recalibrate(model, table.drop(columns=["y"]), split="train")


def test_calibration_survives_save_and_load_and_old_files_still_load(tmp_path):
    rng = np.random.default_rng(6)
    model = linear_model(1.5)
    x = rng.normal(size=(50, 1))
    fixed = recalibrate(model, x, x[:, 0] + rng.normal(size=50))
    path = save_model(fixed, tmp_path / "m.model")
    header = json.loads((path / "model.json").read_text())
    assert header["calibration"]["split"] == "val" and header["calibration"]["n"] == 50
    back = load_model(path)
    np.testing.assert_array_equal(back.calibration.pit, fixed.calibration.pit)
    a, b = predict(fixed, x, levels=LEVELS), predict(back, x, levels=LEVELS)
    for level in LEVELS:
        np.testing.assert_array_equal(a.lower[level], b.lower[level])
    old = save_model(model, tmp_path / "old.model")  # no calibration: the header has no such field
    assert "calibration" not in json.loads((old / "model.json").read_text())
    assert load_model(old).calibration is None
    header["calibration"]["pit"][0] = [1.5]
    (path / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFileError, match="invalid calibration"):
        load_model(path)
    header["calibration"] = {"method": "quantile", "split": "val", "n": 3, "pit": [[0.1], [0.2]]}
    (path / "model.json").write_text(json.dumps(header))
    with pytest.raises(ModelFileError, match="calibration n"):
        load_model(path)


# --------------------------------------------------------------------------- CLI


def _files(tmp_path):
    rng = np.random.default_rng(7)
    model_path = save_model(linear_model(1.5), tmp_path / "m.model")
    x = rng.normal(size=120)
    split = np.array(["train"] * 60 + ["val"] * 60)
    data = tmp_path / "d.csv"
    pd.DataFrame({"x": x, "y": x + rng.normal(size=120), "split": split}).to_csv(data, index=False)
    return model_path, data


def _one_line_error(capsys, argv, needle):
    code = main(argv)
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1 and needle in err[0], err


def test_cli_recalibrate_writes_a_recalibrated_model(tmp_path, capsys):
    model_path, data = _files(tmp_path)
    assert main(["recalibrate", str(model_path), str(data), "--out", str(tmp_path / "new.model")]) == 0
    assert "recalibrated on 60 rows (val)" in capsys.readouterr().out
    assert load_model(tmp_path / "new.model").calibration.n == 60
    assert main(["info", str(tmp_path / "new.model")]) == 0
    assert "quantile-recalibrated on 60 val rows" in capsys.readouterr().out
    widths = {}
    for flag in ([], ["--raw-intervals"]):
        out = tmp_path / f"p{len(flag)}.csv"
        assert main(["predict", str(tmp_path / "new.model"), str(data), "--level", "0.68", "-o", str(out), *flag]) == 0
        p = pd.read_csv(out)
        widths[bool(flag)] = float(np.median(p["upper_0.68"] - p["lower_0.68"]))
    assert widths[False] < 0.85 * widths[True]  # the model is 1.5x too wide: recalibration narrows its intervals


def test_cli_recalibrate_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    model_path, data = _files(tmp_path)
    out = str(tmp_path / "new.model")
    _one_line_error(capsys, ["recalibrate", str(tmp_path / "none.model"), str(data), "--out", out], "none.model")
    _one_line_error(capsys, ["recalibrate", str(model_path), str(tmp_path / "no.csv"), "--out", out], "no.csv")
    _one_line_error(capsys, ["recalibrate", str(model_path), str(data), "--out", out, "--split", "test"], "'test'")
    assert not (tmp_path / "new.model").exists()


def test_cli_train_recalibrate_without_validation_rows_is_one_line(tmp_path, capsys):
    _, data = _files(tmp_path)
    argv = ["train", str(data), "--target", "y", "--features", "x", "--split", "1,0,0", "--recalibrate"]
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "t.model"), "-q"], "validation rows")
    assert not (tmp_path / "t.model").exists()


def test_calibration_report_shows_raw_and_recalibrated_coverage(tmp_path):
    from sigmabnn.evaluate.report import calibration_report

    rng = np.random.default_rng(8)
    x = rng.normal(size=600)
    table = pd.DataFrame({"x": x, "y": x + rng.normal(size=600), "split": ["val"] * 300 + ["test"] * 300})
    model = recalibrate(linear_model(1.5), table)
    result = calibration_report(model, table, tmp_path / "report")
    rec = result.metrics["test"]["recalibration"]
    u = predictive_cdf(model, table[300:], table["y"][300:])[:, 0]
    assert rec["raw"]["0.6827"] == pytest.approx(np.mean(np.abs(u - 0.5) <= 0.6826894921 / 2))
    assert rec["raw"]["0.6827"] > 0.8 and abs(rec["recalibrated"]["0.6827"] - 0.6827) < 0.08
    assert sum(rec["pit_histogram"]) == 300
    text = result.markdown.read_text()
    assert "### Recalibration" in text and "300 `val` rows" in text
    plain = calibration_report(linear_model(1.5), table, tmp_path / "plain")
    assert "recalibration" not in plain.metrics["test"] and "### Recalibration" not in plain.markdown.read_text()


def test_nlo_recommended_and_demo_configs_recalibrate_on_val(nlo_fit_kwargs):
    from sigmabnn.workflows import nlo

    assert nlo.recommended_config().recalibrate and nlo.demo_config().recalibrate
    spec = nlo_fit_kwargs()
    assert spec.recalibrate == nlo.recommended_config().recalibrate_rows and spec.data.split_column == "split"
    assert nlo_fit_kwargs(recalibrate_rows="loo").recalibrate == "loo"
    assert nlo_fit_kwargs(recalibrate=False).recalibrate is None


def test_two_target_model_is_recalibrated_per_column(tmp_path):
    model = make_fitted(arch="2-5-2", t=2, chains=1, draws=2)
    rng = np.random.default_rng(10)
    x = rng.normal(2.0, 3.0, size=(40, 2))
    y = predict(model, x, levels=()).mean + rng.normal(size=(40, 2)) * [[0.01, 100.0]]  # column 0 narrow, 1 wide
    fixed = recalibrate(model, x, y)
    assert fixed.calibration.pit.shape == (40, 2)
    lo = fixed.calibration.model_levels([0.15865])[0]
    assert lo[0] > lo[1]  # the too-wide column maps inwards, the too-narrow one outwards
    raw, cal = predict(fixed, x, levels=(0.6827,), calibrated=False), predict(fixed, x, levels=(0.6827,))
    width = {k: p.upper[0.6827] - p.lower[0.6827] for k, p in (("raw", raw), ("cal", cal))}
    assert np.all(width["cal"][:, 0] < width["raw"][:, 0]) and np.all(width["cal"][:, 1] > width["raw"][:, 1])
    assert load_model(save_model(fixed, tmp_path / "m")).calibration.pit.shape == (40, 2)


# --------------------------------------------------------------------------- fit's automatic recalibration

# the split these tests were written with (480 fit, 60 val, 60 test rows of 600), not the library's default
QUICK_MCMC = {"num_chains": 2, "num_warmup": 60, "num_samples": 40, "map": {"num_steps": 400}, "split": (0.8, 0.1, 0.1)}


def _plane(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, size=(n, 2))
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": 2 * x[:, 0] - x[:, 1] + 0.1 * rng.normal(size=n)})


def test_fit_recalibrates_automatically_on_enough_val_rows_and_the_gate_keeps_only_a_needed_map():
    from sigmabnn.api import fit

    table, fresh = _plane(600, 0), _plane(4000, 1)
    # a fixed noise std about 4x the data's (precision in standardised units): the intervals are far too wide.
    # The fixed unit prior (learn_prior=False) keeps the fit this test's thresholds were set on: with 60
    # validation rows the 95 % interval's recalibrated coverage has a binomial SE of about 0.03, the size of
    # the margin asserted below, so another fit's draws can land either side of it.
    wide, _ = fit(table, "y", learn_noise=False, noise_precision=10.0, learn_prior=False, progress=False, **QUICK_MCMC)
    assert wide.calibration is not None and wide.calibration.split == "val" and wide.calibration.n == 60
    assert wide.report.recalibration.extra["uniformity_pvalue"] < 0.05
    x = fresh[["a", "b"]].to_numpy()
    raw, cal = predict(wide, x, levels=LEVELS, calibrated=False), predict(wide, x, levels=LEVELS)
    for level in LEVELS:  # 60 rows fix most of the miscalibration
        assert abs(coverage(fresh["y"].to_numpy(), cal, level) - level) < 0.5 * abs(
            coverage(fresh["y"].to_numpy(), raw, level) - level
        )
    # the noise learnt: far closer to calibrated (KS p about 0.04 on the 60 val rows, against 1e-6 above);
    # a gate at p = 0.01 does not keep its map
    gated, report = fit(table, "y", likelihood="gaussian", progress=False, recalibration_gate=0.01, **QUICK_MCMC)
    assert (
        gated.calibration is None
        and "consistent with calibrated intervals" in gated.diagnostics["recalibration_skipped"]
    )
    assert report == gated.report  # the returned report is the stored one
    # too few validation rows (8 of 80): skipped, not an error; recalibrate=False: not tried
    small, _ = fit(_plane(80, 2), "y", progress=False, **QUICK_MCMC)
    assert small.calibration is None and "at least 20 rows" in small.diagnostics["recalibration_skipped"]
    off, _ = fit(_plane(80, 2), "y", progress=False, recalibrate=False, **QUICK_MCMC)
    assert off.calibration is None and "recalibration_skipped" not in off.diagnostics
    # 64 rows: the 64 training rows of the fits above, so these two reuse their compiled functions
    none, _ = fit(_plane(64, 2), "y", progress=False, **{**QUICK_MCMC, "split": (1.0, 0.0, 0.0)})  # no validation rows
    assert none.calibration is None and "got 0" in none.diagnostics["recalibration_skipped"]
    # no split given: the few validation rows, too few to recalibrate on, train the model instead
    auto, auto_report = fit(_plane(64, 2), "y", progress=False, **{k: v for k, v in QUICK_MCMC.items() if k != "split"})
    assert (auto_report.data.train, auto_report.data.val) == (64, 0)
    assert auto.calibration is None and "trained the model" in auto.diagnostics["recalibration_skipped"]


def test_cli_train_says_whether_the_intervals_were_recalibrated(tmp_path, capsys):
    data = tmp_path / "plane.csv"
    _plane(80, 3).to_csv(data, index=False)
    quick = ["--chains", "2", "--warmup", "40", "--draws", "20", "--map-steps", "200", "--target", "y"]
    assert main(["train", str(data), *quick, "--out", str(tmp_path / "a.model")]) == 0
    assert "intervals: not recalibrated: no validation rows: fewer than 20" in capsys.readouterr().out
    split = tmp_path / "plane89.csv"  # 80 training rows and 9 validation rows: the first fit's shapes, no recompiling
    _plane(89, 3).to_csv(split, index=False)
    assert main(["train", str(split), *quick, "--split", "0.9,0.1,0", "--out", str(tmp_path / "s.model")]) == 0
    assert "intervals: not recalibrated: recalibration needs at least 20 rows" in capsys.readouterr().out
    assert main(["train", str(data), *quick, "--no-recalibrate", "--out", str(tmp_path / "b.model")]) == 0
    assert "intervals:" not in capsys.readouterr().out and load_model(tmp_path / "b.model").calibration is None
    argv = ["train", str(data), *quick, "--no-recalibrate", "--recalibrate", "--out", str(tmp_path / "c.model")]
    with pytest.raises(SystemExit) as exc:  # argparse: its usage line and the error
        main(argv)
    assert exc.value.code == 2 and "not allowed with argument" in capsys.readouterr().err
    assert not (tmp_path / "c.model").exists()


def test_recalibrating_on_the_training_rows_is_refused(tmp_path, capsys):
    """The model's own training rows (its fingerprint) would give a too-narrow map: one line, exit 2, no model."""
    rng = np.random.default_rng(3)
    x = rng.uniform(-1, 1, (40, 2))
    df = pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": x[:, 0] - x[:, 1] + 0.1 * rng.normal(size=40)})
    fitted, _ = fit(df, "y", method="mh", num_chains=1, num_warmup=20, num_samples=20, split=(1.0, 0.0, 0.0))
    with pytest.raises(DataError, match="the model's own training rows"):
        recalibrate(fitted, df[["a", "b"]], df["y"].to_numpy())
    fixed = recalibrate(fitted, df[["a", "b"]].iloc[::-1], df["y"].to_numpy()[::-1])  # other order: not the same
    assert fixed.calibration.n == 40
    data, model = tmp_path / "t.csv", tmp_path / "m.model"
    df.to_csv(data, index=False)
    save_model(fitted, model)
    capsys.readouterr()  # the fit's progress lines
    assert main(["recalibrate", str(model), str(data), "--out", str(tmp_path / "r.model")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "own training rows" in err[0] and not (tmp_path / "r.model").exists()
