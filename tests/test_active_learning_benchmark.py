"""The active-learning benchmark's own code (benchmarks/active_learning.py): the smoke run, its summary and resume."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("active_learning")


def _record(criterion, seed, n, err, cov95=95.0):
    return {"process": "p", "criterion": criterion, "seed": seed, "n_train": n, "test_median_rel_err": err,
            "test_r2_log": 0.99, "coverage_68": 68.0, "coverage_95": cov95, "seconds": 1.0}  # fmt: skip


def test_summary_finds_where_a_criterion_reaches_random_at_its_largest_size(bench):
    runs = [_record("random", s, n, e) for s in (0, 1) for n, e in ((500, 9.0), (1000, 6.0), (4000, 3.0))]
    runs += [_record("bald", s, n, e) for s, off in ((0, -0.1), (1, 0.1)) for n, e in ((500, 9.0), (1000, 5 + off),
                                                                                      (2000, 3.0 + off))]  # fmt: skip
    runs += [_record("variance", 0, n, e, cov95=90.0) for n, e in ((500, 9.0), (2000, 2.0))]
    summary = {s["criterion"]: s for s in bench.summarise(runs)}
    assert summary["random"]["random_err_at_n_max"] == 3.0 and summary["random"]["n_to_reach"] == 4000
    assert summary["bald"]["n_to_reach"] == 2000 and summary["bald"]["goal_met"]  # mean 3.0 <= 3.0
    assert summary["variance"]["n_to_reach"] == 2000 and not summary["variance"]["goal_met"]  # 95 % cover 90


@pytest.mark.heavy
def test_smoke_run_writes_records_and_resumes(bench, tmp_path):
    out = tmp_path / "al.json"
    args = ["--smoke", "--workdir", str(tmp_path / "w"), "--out", str(out)]
    assert bench.main(args) == 0
    runs = json.loads(out.read_text())["runs"]
    assert [(r["criterion"], r["n_train"]) for r in runs] == [("random", 200), ("random", 250), ("bald", 200),
                                                              ("bald", 250)]  # fmt: skip
    for key in ("process", "criterion", "seed", "n_train", "test_median_rel_err", "test_r2_log", "coverage_68",
                "coverage_95", "seconds"):  # fmt: skip
        assert all(key in r for r in runs)
    # the same first round (the same 200 random rows and seed) for both criteria
    assert runs[0]["test_median_rel_err"] == runs[2]["test_median_rel_err"]
    assert out.with_suffix(".md").exists() and out.with_suffix(".png").exists()
    # finished runs are kept and not redone
    assert bench.main(args) == 0
    assert json.loads(out.read_text())["runs"] == runs
