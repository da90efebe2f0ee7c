"""benchmarks/compile_cache.py: its cells' order and its summary (the runs themselves are not repeated here)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("compile_cache")


def test_each_pair_fits_cold_then_warm_on_two_training_sets_and_the_peer_only_on_the_small_table(bench):
    cells = bench.cells(["sin1d-100", "energy"], 2)
    assert len(cells) == 2 * (2 + 2 + 2)  # per pair: sin1d sigmabnn, sin1d numpyro, energy sigmabnn; cold + warm
    for cold, warm in zip(cells[::2], cells[1::2], strict=True):
        assert (cold["stage"], warm["stage"]) == ("cold", "warm")
        assert {k: cold[k] for k in ("table", "method", "pair")} == {k: warm[k] for k in ("table", "method", "pair")}
        assert cold["seed"] != warm["seed"]  # other rows, the same shapes
    assert {c["method"] for c in cells if c["table"] == "energy"} == {"sigmabnn"}
    assert len({(c["seed"], c["stage"]) for c in cells if c["table"] == "energy"}) == 4  # fresh rows every pair


def _rec(table, method, pair, stage, seconds, entries):
    return {"table": table, "method": method, "pair": pair, "stage": stage, "seconds": seconds, "status": "ok",
            "n_train": 100, "cache_entries": entries}  # fmt: skip


def test_the_summary_is_the_ratio_of_the_medians_over_complete_pairs(bench):
    recs = [
        _rec("t", "sigmabnn", 0, "cold", 20.0, 100), _rec("t", "sigmabnn", 0, "warm", 10.0, 100),
        _rec("t", "sigmabnn", 1, "cold", 30.0, 100), _rec("t", "sigmabnn", 1, "warm", 12.0, 101),
        _rec("t", "sigmabnn", 2, "cold", 99.0, 100),  # its warm cell is missing: the pair does not count
    ]  # fmt: skip
    (row,) = bench.summarise(recs)
    assert row["pairs"] == 2 and row["cold_s"] == 25.0 and row["warm_s"] == 11.0
    assert row["ratio"] == pytest.approx(25.0 / 11.0) and row["pair_ratios"] == "2.00 2.50"
    assert row["entries"] == "100 -> 100 / 100 -> 101"
    assert "| t | sigmabnn |" in bench.render({"records": recs, "runs": []})


def test_the_committed_run_shows_warm_fits_of_other_rows_compiling_nothing_new(bench):
    """A warm fit adds cache entries only where it chose another noise model than the cold fit of its pair (that
    model's sampler was not compiled yet): the rows themselves are never part of the compiled code."""
    path = Path(bench.OUT)
    if not path.exists():
        pytest.skip("benchmarks/results/compile_cache.json not committed yet")
    data = json.loads(path.read_text())
    by = {bench._key(r): r for r in data["records"] if r.get("status") == "ok"}
    mine = [r for r in bench.summarise(data["records"]) if r["method"] == "sigmabnn"]
    assert {r["table"] for r in mine} == set(bench.TABLES) and all(r["pairs"] >= 3 for r in mine)
    same_model = 0
    for (table, method, pair, stage), warm in by.items():
        if method != "sigmabnn" or stage != "warm":
            continue
        cold = by[(table, method, pair, "cold")]
        if cold["likelihood"] == warm["likelihood"]:
            same_model += 1
            assert warm["cache_entries"] == cold["cache_entries"], (table, pair)
        else:
            assert warm["cache_entries"] > cold["cache_entries"]
    assert same_model >= 7  # of the 9 pairs
    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert f"{min(r['ratio'] for r in mine):.1f} to {max(r['ratio'] for r in mine):.1f} times" in readme
    assert f"{min(r['warm_s'] for r in mine):.0f} to {max(r['warm_s'] for r in mine):.0f} s" in readme
