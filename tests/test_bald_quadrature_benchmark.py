"""The BALD quadrature benchmark (benchmarks/bald_quadrature.py) on two mixtures per family: its records,
and the library's Student-t rule closer to the fine integral than the earlier midpoint rule."""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.conftest import load_benchmark


@pytest.mark.heavy
def test_records_and_the_student_t_rule_beats_the_midpoints(tmp_path):
    bench = load_benchmark("bald_quadrature")
    assert bench.main(["--trials", "2", "--out", str(tmp_path)]) == 0
    records = json.loads((tmp_path / "bald_quadrature.json").read_text())["records"]
    assert {(r["family"], r["df"]) for r in records} == {("gaussian", None), *(("student_t", d) for d in (3, 5, 10))}
    t = [r for r in records if r["family"] == "student_t"]
    assert all("outer32" in r for r in t if r["components"] == 100)
    new, old = (np.sqrt(np.mean([(r[k] - r["exact"]) ** 2 for r in t])) for k in ("nodes10", "midpoint10"))
    assert new < old / 2
    assert "| student_t | 3 | 2-7 | nodes10 | 2 |" in (tmp_path / "bald_quadrature.md").read_text()
