"""Standardisation and the log10 target transform: statistics, round trips, JSON."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sigmabnn.data.transforms import MIN_RELATIVE_STD, Standardizer, TargetTransform


def test_standardizer_statistics_and_roundtrip():
    rng = np.random.default_rng(0)
    x = rng.normal(3.0, 5.0, size=(200, 3))
    x[:, 2] = 7.0  # constant column
    s = Standardizer.fit(x)
    np.testing.assert_allclose(s.mean, x.mean(0), rtol=1e-15)
    np.testing.assert_allclose(s.std[:2], x[:, :2].std(0), rtol=1e-15)
    assert s.std[2] == 1.0  # constant: only centred
    z = s.forward(x)
    np.testing.assert_allclose(z[:, :2].mean(0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z[:, :2].std(0), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(z[:, 2], 0.0)
    np.testing.assert_allclose(s.inverse(z), x, rtol=1e-14)


def test_near_constant_threshold_is_relative_to_the_columns_magnitude():
    x = np.array([[1.0], [1.0 + 1e-10]])
    assert Standardizer.fit(x).std[0] == 1.0  # a variation of 1e-10 of the value: constant
    x = np.array([[1.0], [1.0 + 4 * MIN_RELATIVE_STD]])
    assert Standardizer.fit(x).std[0] == pytest.approx(2 * MIN_RELATIVE_STD)
    assert Standardizer.fit(np.zeros((3, 1))).std[0] == 1.0
    assert Standardizer.fit(np.full((5, 1), 0.1 + 0.2)).std[0] == 1.0


@pytest.mark.parametrize("unit", [1e-9, 1e-12, 1e-30])
def test_a_column_in_small_units_is_standardised_not_taken_as_constant(unit):
    rng = np.random.default_rng(3)
    x = unit * rng.uniform(-1, 1, size=(200, 2))
    s = Standardizer.fit(x)
    z = s.forward(x)
    np.testing.assert_allclose(z.std(0), 1.0, rtol=1e-12)
    np.testing.assert_allclose(s.inverse(z), x, rtol=1e-12)


def test_a_column_of_huge_magnitude_gets_a_finite_mean_and_std():
    x = np.array([[1e300, 1.0], [-2e300, 2.0], [3e300, 3.0]])
    s = Standardizer.fit(x)
    assert np.all(np.isfinite(s.mean)) and np.all(np.isfinite(s.std))
    np.testing.assert_allclose(s.mean, [2e300 / 3, 2.0], rtol=1e-12)
    np.testing.assert_allclose(s.std[0], 1e300 * np.std([1.0, -2.0, 3.0]), rtol=1e-12)
    np.testing.assert_allclose(s.forward(x).std(0), 1.0, rtol=1e-12)
    assert Standardizer.fit(np.full((4, 1), 1e300)).std[0] == 1.0  # constant, however large
    assert s.to_json()["std"][0] == float(s.std[0])  # the model file's JSON holds no inf


def test_dtype_is_explicit():
    s = Standardizer.fit(np.arange(10.0)[:, None])
    assert s.forward(np.ones((4, 1)), dtype=np.float32).dtype == np.float32
    assert s.forward(np.ones((4, 1))).dtype == np.float64
    with pytest.raises(ValueError, match="expected 1 columns"):
        s.forward(np.ones((4, 2)))


def test_json_roundtrip_bit_exact():
    rng = np.random.default_rng(1)
    s = Standardizer.fit(rng.normal(size=(50, 4)))
    back = Standardizer.from_json(json.loads(json.dumps(s.to_json())))
    np.testing.assert_array_equal(back.mean, s.mean)
    np.testing.assert_array_equal(back.std, s.std)
    t = TargetTransform.fit(rng.lognormal(size=30), log10=True)
    back = TargetTransform.from_json(json.loads(json.dumps(t.to_json())))
    assert back.log10 is True
    np.testing.assert_array_equal(back.mean, t.mean)
    np.testing.assert_array_equal(back.scale, t.scale)


@pytest.mark.parametrize(
    "bad",
    [
        {"mean": [0.0]},
        {"mean": [0.0], "std": [0.0]},
        {"mean": [0.0, 1.0], "std": [1.0]},
        {"mean": ["a"], "std": [1.0]},
        {"mean": [float("nan")], "std": [1.0]},
        [1, 2],
    ],
)
def test_from_json_rejects_malformed(bad):
    with pytest.raises(ValueError):
        Standardizer.from_json(bad)


def test_target_transform_log10_roundtrip():
    rng = np.random.default_rng(2)
    y = 10.0 ** rng.uniform(-6, 3, size=100)
    t = TargetTransform.fit(y, log10=True)
    z = t.forward(y)
    np.testing.assert_allclose(z.mean(), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(t.inverse(z), y, rtol=1e-12)
    np.testing.assert_allclose(t.inverse_to_log_space(z), np.log10(y), rtol=1e-12, atol=1e-12)
    # samples of any shape with t = 1
    samples = np.stack([z, z])
    np.testing.assert_allclose(t.inverse(samples), np.stack([y, y]), rtol=1e-12)
    with pytest.raises(ValueError, match="positive"):
        TargetTransform.fit(np.array([1.0, 0.0]), log10=True)


def test_target_transform_linear():
    y = np.array([1.0, 2.0, 3.0, 4.0])
    t = TargetTransform.fit(y)
    assert not t.log10
    np.testing.assert_allclose(t.forward(y), (y - 2.5) / np.std(y))
    np.testing.assert_allclose(t.inverse(t.forward(y)), y)


def test_linear_baseline_fits_exactly_and_round_trips():
    from sigmabnn.data.transforms import LinearBaseline

    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 2))
    u = 1.5 + x @ np.array([2.0, -0.5]) + 1e-3 * rng.normal(size=50)
    tt = TargetTransform.fit(10.0**u, log10=True, baseline_x=x, baseline_features=("p", "q"))
    np.testing.assert_allclose(tt.baseline.coef[:, 0], [2.0, -0.5], atol=1e-3)
    np.testing.assert_allclose(tt.baseline.intercept, [1.5], atol=1e-3)
    assert tt.scale[0] < 2e-3  # the standardisation is the residual's
    full = np.column_stack([x[:, 1], rng.normal(size=50), x[:, 0]])  # inputs in another order
    offset = tt.offset(full, ("q", "r", "p"))
    z = tt.forward(10.0**u, offset=offset)
    np.testing.assert_allclose(tt.inverse(z, offset=offset), 10.0**u, rtol=1e-12)
    back = TargetTransform.from_json(tt.to_json())
    np.testing.assert_array_equal(back.baseline.coef, tt.baseline.coef)
    np.testing.assert_array_equal(back.forward(10.0**u, offset=offset), z)
    with pytest.raises(ValueError, match="pass its offset"):
        tt.forward(10.0**u)
    with pytest.raises(ValueError, match="not one of the model's inputs"):
        tt.offset(full, ("q", "r", "s"))
    with pytest.raises(ValueError, match="collinear"):
        LinearBaseline.fit(np.ones((10, 1)), np.arange(10.0), ("c",))
    # standardised form: b0 + z @ w equals the baseline at the raw inputs
    xs = Standardizer.fit(full)
    b0, w = tt.standardized_offset(xs, ("q", "r", "p"))
    np.testing.assert_allclose(b0 + xs.forward(full) @ w, offset, rtol=1e-12, atol=1e-12)


def test_target_transform_without_baseline_keeps_its_json():
    tt = TargetTransform.fit(np.array([1.0, 10.0, 100.0]), log10=True)
    assert set(tt.to_json()) == {"log10", "mean", "std"}
    assert TargetTransform.from_json(tt.to_json()).baseline is None
    with pytest.raises(ValueError, match="baseline"):
        TargetTransform.from_json(tt.to_json() | {"baseline": {"features": ["a"], "intercept": [0.0]}})
