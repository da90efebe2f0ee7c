"""The classification benchmark's own code: its summary and a smoke run."""

from __future__ import annotations

import json

import pytest
from tests.conftest import load_benchmark


def test_labels_to_reach_averages_over_seeds():
    bench = load_benchmark("classification")
    records = [
        {"criterion": "bald", "seed": 0, "n_labels": 20, "test_error": 0.3},
        {"criterion": "bald", "seed": 1, "n_labels": 20, "test_error": 0.05},  # mean 0.175
        {"criterion": "bald", "seed": 0, "n_labels": 30, "test_error": 0.12},
        {"criterion": "bald", "seed": 1, "n_labels": 30, "test_error": 0.07},  # mean 0.095
        {"criterion": "random", "seed": 0, "n_labels": 30, "test_error": 0.5},
    ]
    assert bench.labels_to_reach(records, "bald") == 30
    assert bench.labels_to_reach(records, "random") is None


@pytest.mark.heavy
@pytest.mark.slow
def test_smoke_run_writes_every_record_and_resumes(tmp_path):
    bench = load_benchmark("classification")
    assert bench.main(["--smoke", "--out", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "classification.json").read_text())
    active = result["active"]
    assert {r["criterion"] for r in active} == {"bald", "random"}
    assert all(set(r) >= {"criterion", "seed", "n_labels", "test_error"} for r in active)
    assert sorted({r["n_labels"] for r in active}) == [20, 30, 40]
    assert {r["method"] for r in result["progress"]} >= {"map", "bbb", "ensemble", "nuts"}
    assert (tmp_path / "classification_progress.png").exists() and (tmp_path / "classification_active.png").exists()
    state = (tmp_path / "classification_state.json").read_text()
    assert bench.main(["--smoke", "--out", str(tmp_path)]) == 0  # resumed: nothing is refitted
    assert (tmp_path / "classification_state.json").read_text() == state
