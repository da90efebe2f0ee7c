"""The Student-t CDF's series (sigmabnn.predict.t_cdf) against SciPy, in the body and both tails."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from sigmabnn.predict.t_cdf import MAX_SERIES_DF, _series, student_t_cdf

Z = np.concatenate([-np.logspace(-8, 8, 300), [0.0], np.logspace(-8, 8, 300), np.linspace(-6.0, 6.0, 601)])


@pytest.mark.parametrize("df", [2.1, 3.0, 4.0, 5.5, 10.0, MAX_SERIES_DF])
def test_series_matches_scipy_with_relative_precision_in_the_lower_tail(df):
    assert _series(df) is not None  # the series path, not the fallback
    got = np.asarray(student_t_cdf(Z, df))
    ref = stats.t(df).cdf(Z)
    np.testing.assert_allclose(got, ref, rtol=0, atol=5e-15)
    lower = (Z < 0) & (ref > 1e-300)
    # every lower-tail probability to about 12 digits, down to 1e-100 and below (z = -1e8)
    np.testing.assert_allclose(got[lower], ref[lower], rtol=5e-12)
    assert np.all(np.diff(got[np.argsort(Z)]) >= 0)  # non-decreasing


def test_limits_zero_and_nan():
    got = np.asarray(student_t_cdf(np.array([-np.inf, np.inf, 0.0, np.nan]), 4.0))
    assert got[0] == 0.0 and got[1] == 1.0 and got[2] == 0.5 and np.isnan(got[3])


def test_many_degrees_of_freedom_fall_back_to_the_incomplete_beta():
    assert _series(MAX_SERIES_DF + 0.5) is None
    got = np.asarray(student_t_cdf(Z, 40.0))
    np.testing.assert_allclose(got, stats.t(40.0).cdf(Z), rtol=0, atol=1e-7)
