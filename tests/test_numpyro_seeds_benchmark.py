"""The default-against-NumPyro-over-seeds benchmark's own code (benchmarks/numpyro_seeds.py): the verdict
rule, the per-table summary of paired seeds, and a resumable run (cells faked: no fit)."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("numpyro_seeds")


def _rec(table, seed, sampler, rmse, ll, status="ok"):
    rows = None if ll is None else [ll - 0.1, ll + 0.1]  # two scoring rows whose mean is ll
    return {
        "table": table, "seed": seed, "sampler": sampler, "status": status, "rmse": rmse, "test_ll": ll,
        "row_ll": rows, "n_train": 300, "n_score": 2, "coverage_68": 0.7, "coverage_95": 0.95,
    }  # fmt: skip


def test_the_verdict_needs_two_standard_errors(bench):
    assert bench.verdict([0.10, 0.12, 0.11], higher_is_better=True)[2] == "ahead"
    assert bench.verdict([0.10, 0.12, 0.11], higher_is_better=False)[2] == "behind"  # an RMSE that grew
    mean, se, text = bench.verdict([0.3, -0.2, 0.05], higher_is_better=True)
    assert text == "within noise" and mean == pytest.approx(0.05) and se == pytest.approx(0.25 / 3**0.5)
    assert bench.verdict([0.5], higher_is_better=True) == (0.5, None, "one seed")


def test_the_summary_pairs_seeds_and_skips_unscored_ones(bench):
    recs = []
    for seed, (ll_d, rmse_n) in enumerate([(0.50, 0.14), (0.52, 0.141), (0.54, 0.142)]):
        recs += [
            _rec("smooth6d-300", seed, "sigmabnn", 0.15, ll_d),
            _rec("smooth6d-300", seed, "numpyro", rmse_n, 0.45),
        ]
    recs += [_rec("smooth6d-300", 3, "sigmabnn", 0.1, 0.9), _rec("smooth6d-300", 3, "numpyro", None, None, "timeout")]
    seeds, tables = bench.summarise(recs)
    assert [r["seed"] for r in seeds] == [0, 1, 2]  # seed 3: NumPyro timed out, no pair
    (row,) = tables
    assert row["seeds"] == 3 and row["ll_difference"] == pytest.approx(0.07) and row["ll_verdict"] == "ahead"
    assert row["rmse_difference"] == pytest.approx(0.009) and row["rmse_verdict"] == "behind"
    assert row["at_least_as_accurate"] is False and row["seeds_at_least_as_accurate"] == "0/3"
    assert "| smooth6d-300 | 3 |" in bench.markdown({"records": recs, "runs": []})


def test_a_run_resumes_and_refuses_unknown_tables(bench, tmp_path, monkeypatch):
    calls = []

    def fake(spec, timeout, log, script):
        calls.append((spec["table"], spec["seed"], spec["sampler"]))
        assert script == bench.SCRIPT
        return _rec(spec["table"], spec["seed"], spec["sampler"], 0.1, 0.5) | {"date": "d"}

    monkeypatch.setattr(bench.defaults, "run_subprocess", fake)
    out = tmp_path / "seeds.json"
    args = ["--tables", "sin1d-100", "--seeds", "0,1", "--out", str(out)]
    assert bench.main(args) == 0
    assert calls == [("sin1d-100", s, m) for s in (0, 1) for m in ("sigmabnn", "numpyro")]
    assert bench.main(args + ["--seeds", "0,1,2"]) == 0  # only seed 2 is new
    assert calls[4:] == [("sin1d-100", 2, "sigmabnn"), ("sin1d-100", 2, "numpyro")]
    data = json.loads(out.read_text())
    assert len(data["records"]) == 6 and len(data["runs"]) == 2
    assert "within noise" in out.with_suffix(".md").read_text()
    with pytest.raises(SystemExit, match="unknown table"):
        bench.main(["--tables", "nope", "--out", str(out)])
