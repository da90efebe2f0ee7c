"""The optimisation-level benchmark's own code: medians per table and level, and its choice rule."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import load_benchmark

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "compile_level.json"


def _kernel(times: dict[int, float], arch: str = "1-20-20-1") -> list[dict]:
    return [
        {"arch": arch, "rows": 100, "dtype": "float32", "level": v, "us_per_step_median": t} for v, t in times.items()
    ]


def _fits(seconds: dict[int, list[float]]) -> list[dict]:
    return [
        {"table": "t", "level": v, "seconds": s, "map": 1.0, "sample": s - 1.0, "grad_evals_per_chain": 10.0}
        for v, ss in seconds.items()
        for s in ss
    ]


def test_fit_medians_per_table_and_level():
    bench = load_benchmark("compile_level")
    med = bench.fit_medians(_fits({1: [10.0, 14.0, 12.0], 2: [20.0], 3: [30.0, 32.0]}))
    by_level = {m["level"]: m for m in med}
    assert by_level[1]["seconds"] == 12.0 and by_level[1]["fits"] == 3
    assert by_level[3]["seconds"] == pytest.approx(31.0) and by_level[3]["sample"] == pytest.approx(30.0)


def test_choose_takes_the_fastest_fit_whose_kernels_keep_up():
    bench = load_benchmark("compile_level")
    med = bench.fit_medians(_fits({1: [10.0], 2: [11.0], 3: [15.0]}))
    assert bench.choose(_kernel({1: 100.0, 2: 100.0, 3: 100.0}), med)["level"] == 1
    # level 1 runs a kernel cell more than 5 % slower than level 3: not eligible
    slow = _kernel({1: 106.0, 2: 104.0, 3: 100.0})
    pick = bench.choose(slow, med)
    assert pick["level"] == 2 and pick["kernel_ok"] == {1: False, 2: True, 3: True}
    # no level but 3 keeps up: level 3
    assert bench.choose(_kernel({1: 120.0, 2: 120.0, 3: 100.0}), med)["level"] == 3


def test_committed_result_follows_its_rule_and_the_library_uses_it():
    from sigmabnn import compiler

    if not RESULTS.exists():
        pytest.skip("benchmarks/results/compile_level.json not present")
    bench = load_benchmark("compile_level")
    data = json.loads(RESULTS.read_text())
    pick = bench.choose(data["kernel"], data["fit_medians"])
    assert pick["level"] == data["choice"]["level"] == compiler.DEFAULT_LEVEL
