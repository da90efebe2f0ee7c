"""The row-block benchmark's own code: the ratios and the choice rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "row_blocks.json"


def _records(ratios: dict[str, dict[float, float]]) -> list[dict]:
    out = []
    for dtype, cells in ratios.items():
        for m, r in cells.items():
            base = {"dtype": dtype, "multiple": m, "rows": int(m * 100)}
            out += [{**base, "variant": "one pass", "ns_per_row_grad": 1000.0},
                    {**base, "variant": "blocks", "ns_per_row_grad": 1000.0 * r}]  # fmt: skip
    return out


def test_choose_takes_the_smallest_multiple_from_which_blocks_win_in_both_dtypes():
    bench = load_benchmark("row_blocks")
    recs = _records({"float32": {2: 0.90, 3: 1.00, 4: 0.80, 6: 0.60}, "float64": {2: 0.80, 3: 0.90, 4: 0.94, 6: 0.70}})
    pick = bench.choose(recs)
    assert pick["min_blocks"] == 4  # float32 at 3 is no gain, so 2 and 3 are out
    assert {(r["dtype"], r["multiple"]): r["blocks_vs_one_pass"] for r in pick["ratios"]}[("float64", 4)] == 0.94


def test_choose_never_blocks_when_the_largest_multiple_loses():
    bench = load_benchmark("row_blocks")
    recs = _records({"float32": {2: 0.5, 6: 0.5}, "float64": {2: 0.5, 6: 0.96}})
    assert bench.choose(recs)["min_blocks"] is None


def test_committed_choice_is_the_library_threshold():
    if not RESULTS.exists():
        pytest.skip("benchmarks/results/row_blocks.json not committed")
    from sigmabnn.model.posterior import LIKELIHOOD_MIN_BLOCKS

    data = json.loads(RESULTS.read_text())
    assert data["choice"]["min_blocks"] == LIKELIHOOD_MIN_BLOCKS
    assert load_benchmark("row_blocks").choose(data["records"])["min_blocks"] == LIKELIHOOD_MIN_BLOCKS
