"""``api.fit(likelihood="hetero_student_t")``: bad arguments, and calibration on heteroscedastic t data."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from sigmabnn.api import fit
from sigmabnn.errors import InputError
from sigmabnn.model import HeteroscedasticStudentT
from sigmabnn.predict import predict


def toy(n: int, seed: int, df: float = 4.0) -> pd.DataFrame:
    """``y = sin(3 x) + s(x) t_df`` with a scale growing with x: ``s = 0.03 + 0.3 x`` on [0, 1]."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    return pd.DataFrame({"x": x, "y": np.sin(3 * x) + (0.03 + 0.3 * x) * rng.standard_t(df, n)})


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"noise_df": 2.0}, "degrees of freedom"),
        ({"noise_df": float("nan")}, "degrees of freedom"),
        ({"method": "bbb"}, "MCMC method"),
        ({"method": "ensemble"}, "MCMC method"),
        ({"noise_precision": 100.0}, "per point"),
        ({"architecture": "1-8-3"}, "must end in 1 output"),
    ],
)
def test_bad_arguments_are_one_line_input_errors(kwargs, message):
    with pytest.raises(InputError, match=message) as err:
        fit(toy(30, 0), "y", ["x"], likelihood="hetero_student_t", progress=False, **kwargs)
    assert "\n" not in str(err.value)


def test_noise_df_needs_a_student_t_likelihood():
    with pytest.raises(InputError, match="student_t and hetero_student_t"):
        fit(toy(30, 0), "y", ["x"], noise_df=4.0, progress=False)


@pytest.mark.slow
def test_intervals_follow_the_growing_scale_at_nominal_rates():
    """Coverage of central intervals in the low-x and high-x halves separately: a homoscedastic
    model would over-cover one and under-cover the other. Tolerance: 4.5 binomial sigmas plus
    2 points for the finite training set."""
    fitted, report = fit(
        toy(300, 0),
        "y",
        ["x"],
        likelihood="hetero_student_t",
        noise_df=4.0,
        architecture="1-8-1",
        num_chains=2,
        num_warmup=100,
        num_samples=40,
        max_tree_depth=5,
        seed=0,
        progress=False,
    )
    assert fitted.bnn.likelihood == HeteroscedasticStudentT(df=4.0)
    assert report.model.architecture == "1-8-2" and report.model.likelihood == "hetero_student_t"
    test = toy(4000, 1)
    p = predict(fitted, test[["x"]].to_numpy(), levels=(0.6827, 0.9545))
    y = test["y"].to_numpy()
    for half in (test["x"] < 0.5, test["x"] >= 0.5):
        n = int(half.sum())
        for level in (0.6827, 0.9545):
            inside = (p.lower[level][half, 0] <= y[half]) & (y[half] <= p.upper[level][half, 0])
            tol = 4.5 * math.sqrt(level * (1 - level) / n) + 0.02
            assert abs(inside.mean() - level) < tol, (level, inside.mean(), n)
    # the aleatoric std follows the true one, s(x) sqrt(df / (df - 2)), within 30 % (a homoscedastic
    # model is off by a factor of 1.7 to 3 at the ends)
    grid = np.array([[0.1], [0.5], [0.9]])
    true = (0.03 + 0.3 * grid[:, 0]) * math.sqrt(2.0)
    got = predict(fitted, grid).aleatoric_std[:, 0]
    np.testing.assert_allclose(got, true, rtol=0.3)
    # the report's noise std is the mean per-point std over the training rows (true mean ~ 0.255)
    assert 0.15 < report.noise_std < 0.35
