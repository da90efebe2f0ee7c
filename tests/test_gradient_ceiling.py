"""The gradient-ceiling benchmark's own code (benchmarks/gradient_ceiling.py): records and their reading."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import load_benchmark

_BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@pytest.fixture(scope="module")
def ceiling():
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(_BENCHMARKS))  # the script imports its sibling modules
        return load_benchmark("gradient_ceiling")


def _record(target: str, ceiling: float | None) -> dict:
    return {
        "target": target,
        "rows": 1000,
        "rows_setting": "reduced",
        "dtype": "float64",
        "one_device_us": 200.0,
        "split_us": None if ceiling is None else 200.0 / ceiling,
        "ceiling": ceiling,
        "forward_us": 80.0,
    }


def test_reading_compares_the_ceiling_with_the_goal_and_the_measured_ratio(ceiling):
    records = [_record("bnn-a", 1.25), _record("bnn-b", 2.5), _record("bnn-c", None)]
    lines = ceiling.reading(records, {"bnn-a": 1.0})
    text = "\n".join(lines)
    assert "bnn-a" in text and "1.25x" in text and "above that ceiling" in text
    assert "measured 1.00x, 80% of this ceiling" in text
    assert "bnn-b" in text and "within that ceiling" in text
    assert "bnn-c" not in text  # one device: no ceiling to state
    assert "the log-posterior alone 80.0 us (40%), so the backward pass takes 1.5x the forward one" in text


def test_measured_ratios_divide_sigmabnn_by_numpyro(ceiling, tmp_path):
    summary = [
        {"target": "bnn-a", "sampler": "sigmabnn", "grad_evals_per_s": 300.0},
        {"target": "bnn-a", "sampler": "numpyro", "grad_evals_per_s": 200.0},
        {"target": "bnn-b", "sampler": "sigmabnn", "grad_evals_per_s": 100.0},  # no peer: left out
    ]
    path = tmp_path / "samplers.json"
    path.write_text(json.dumps({"summary": summary}))
    assert ceiling.measured_ratios(path) == {"bnn-a": 1.5}
    assert ceiling.measured_ratios(tmp_path / "missing.json") == {}


def test_measure_records_a_consistent_ceiling(ceiling):
    rng = np.random.default_rng(0)
    x, y = rng.normal(size=(64, 5)), rng.normal(size=(64, 1))
    rec = ceiling.measure("5-4-3-1", 32, "float64", x, y, reps=1, steps=2)
    assert rec["rows"] == 32 and rec["rows_setting"] == "reduced"
    for key in ("one_device_us", "forward_us"):
        assert rec[key] > 0
    if rec["split_us"] is None:  # one device in this process
        assert rec["ceiling"] is None and rec["devices"] == 1
    else:
        assert rec["devices"] > 1
        assert rec["ceiling"] == pytest.approx(rec["one_device_us"] / rec["split_us"])
    markdown = ceiling.markdown(
        {
            "records": [rec],
            "samplers_ratio": {},
            "reading": ceiling.reading([rec], {}),
            "settings": {"reps": 1, "steps": 2},
            "machine": {
                "date": "d",
                "load_average_1_5_15_at_start": [0, 0, 0],
                "load_average_1_5_15_at_end": [0, 0, 0],
                "cpu_count": 2,
                "jax_devices": rec["devices"],
                "jax": "x",
            },
        }
    )
    assert "| bnn-5-4-3-1 | 32 | float64 |" in markdown
