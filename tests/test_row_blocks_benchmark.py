"""The row-block benchmark's own code: its variants and its choice rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "row_blocks.json"


def _records(ns: dict[str, dict[int, float]], dtype: str = "float32") -> list[dict]:
    return [
        {"dtype": dtype, "rows": rows, "variant": v, "ns_per_row": x}
        for v, cells in ns.items()
        for rows, x in cells.items()
    ]


def test_variants_are_one_pass_then_each_budget_in_rows():
    bench = load_benchmark("row_blocks")
    assert bench.variants(4, 50000) == {"one pass": 50000, "16 KiB": 4096, "32 KiB": 8192, "64 KiB": 16384}
    assert bench.variants(8, 50000)["32 KiB"] == 4096


def test_choose_takes_the_budget_with_the_lowest_summed_cost_per_row_never_one_pass():
    bench = load_benchmark("row_blocks")
    ns = {
        "one pass": {10000: 500.0, 100000: 400.0},  # cheapest, but not a budget
        "16 KiB": {10000: 900.0, 100000: 900.0},
        "32 KiB": {10000: 700.0, 100000: 800.0},
        "64 KiB": {10000: 600.0, 100000: 1500.0},
    }
    pick = bench.choose(_records(ns))
    assert pick["variant"] == "32 KiB" and pick["budget"] == 32768
    assert pick["growth"]["32 KiB, float32"] == pytest.approx(800.0 / 700.0)
    assert pick["ns_per_row_sum"]["64 KiB"] == pytest.approx(2100.0)


def test_committed_choice_is_the_library_block():
    if not RESULTS.exists():
        pytest.skip("benchmarks/results/row_blocks.json not committed")
    from sigmabnn.model.posterior import LIKELIHOOD_BLOCK_BYTES

    data = json.loads(RESULTS.read_text())
    assert data["choice"]["budget"] == LIKELIHOOD_BLOCK_BYTES
    assert load_benchmark("row_blocks").choose(data["records"])["budget"] == LIKELIHOOD_BLOCK_BYTES
