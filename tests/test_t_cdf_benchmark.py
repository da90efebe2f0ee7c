"""benchmarks/t_cdf.py on a few values: its records and page."""

from __future__ import annotations

import numpy as np
from tests.conftest import load_benchmark


def test_records_and_page_on_a_small_array():
    bench = load_benchmark("t_cdf")
    recs = bench.measure(4.0, 1, np.random.default_rng(0), shape=(20, 30))
    by = {r["method"]: r for r in recs}
    assert set(by) == {"series", "betainc", "scipy"}
    assert by["scipy"]["max_abs_err"] == 0.0 and by["series"]["max_abs_err"] < 1e-14
    assert by["series"]["max_rel_err_lower"] < 1e-12
    assert all(r["first_s"] > 0 and r["median_s"] > 0 for r in recs)
    page = bench.render({"records": recs, "runs": [{"date": "d", "load_average_1_5_15_at_start": [1, 1, 1]}]})
    assert "| 4 | series |" in page and "df 4: the series is" in page
