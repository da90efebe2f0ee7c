"""The prediction-level benchmark's own code: medians per cell and level, and its choice rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "predict_level.json"


def _records(seconds: dict[int, list[float]], batch: int = 1000, outputs: str = "moments") -> list[dict]:
    return [
        {
            "arch": "5-20-20-1",
            "dtype": "float64",
            "outputs": outputs,
            "batch": batch,
            "level": v,
            "first_s": 0.5,
            "median_s": s,
        }  # fmt: skip
        for v, ss in seconds.items()
        for s in ss
    ]


def test_cell_medians_over_rounds_and_ratio_to_level_1():
    bench = load_benchmark("predict_level")
    med = bench.cell_medians(_records({1: [0.010, 0.014, 0.012], 2: [0.011], 3: [0.006, 0.007, 0.008]}))
    by_level = {m["level"]: m for m in med}
    assert by_level[1]["median_ms"] == pytest.approx(12.0) and by_level[1]["rounds"] == 3
    assert by_level[3]["median_ms"] == pytest.approx(7.0)
    assert by_level[3]["vs_level_1"] == pytest.approx(7.0 / 12.0)


def test_choose_sums_only_the_batched_cells():
    bench = load_benchmark("predict_level")
    batched = _records({1: [0.100], 2: [0.095], 3: [0.090]})
    # level 3 is far slower on single points: latency is reported, not part of the rule
    single = _records({1: [0.001], 2: [0.001], 3: [0.050]}, batch=1)
    pick = bench.choose(bench.cell_medians(batched + single))
    assert pick["level"] == 3
    assert pick["batched_ms"][3] == pytest.approx(90.0)
    # a second batched cell where level 1 wins by more than it loses above
    other = _records({1: [0.100], 2: [0.150], 3: [0.200]}, outputs="intervals")
    assert bench.choose(bench.cell_medians(batched + other))["level"] == 1


def test_committed_choice_is_the_library_prediction_level():
    if not RESULTS.exists():
        pytest.skip("benchmarks/results/predict_level.json not committed")
    from sigmabnn import compiler

    data = json.loads(RESULTS.read_text())
    assert data["choice"]["level"] == compiler.DEFAULT_PREDICTION_LEVEL
    bench = load_benchmark("predict_level")
    assert bench.choose(bench.cell_medians(data["records"]))["level"] == data["choice"]["level"]
