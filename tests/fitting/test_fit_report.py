"""FitReport: the JSON of every model saved by earlier code reads back by attribute and writes back unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sigmabnn.fitting.report import (
    EnsembleSummary,
    FitReport,
    MCMCSummary,
    RecalibrationSummary,
    TrainingProgress,
    VISummary,
)

LEGACY = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_models"
CASES = sorted(p.name for p in LEGACY.iterdir() if (p / "model.json").is_file())


def _diagnostics(case: str) -> dict:
    return json.loads((LEGACY / case / "model.json").read_text())["diagnostics"]


@pytest.mark.parametrize("case", CASES)
def test_a_legacy_report_reads_by_attribute_and_writes_back_the_same_json(case):
    stored = _diagnostics(case)
    report = FitReport.from_json(stored)
    assert report.to_json() == stored and list(report.to_json()) == list(stored)
    assert report.extra == {} and report.complete
    assert report.data.train + report.data.val + report.data.test == report.data.rows - report.data.dropped
    assert report.data.features == tuple(stored["data"]["features"])
    assert report.model.networks >= 1 and report.model.architecture.startswith("2-")
    assert report.timings.total_seconds >= report.timings.fit_seconds > 0
    assert report.method == stored["method"]
    sampler = report.sampler
    if isinstance(sampler, MCMCSummary):
        assert len(sampler.acceptance) == len(sampler.step_size) == 2
        assert sampler.divergences >= 0 and sampler.num_grad_evals > 0 and isinstance(sampler.warnings, tuple)
        assert report.timings.map_seconds is not None and report.timings.vi_seconds is None
    elif isinstance(sampler, VISummary):
        assert sampler.num_steps == 300 and report.timings.vi_seconds is not None
    else:
        assert isinstance(sampler, EnsembleSummary) and len(sampler.final_loss) == sampler.num_members
        assert report.noise_std is None
    if case == "recal":
        assert report.recalibration == RecalibrationSummary(rows_kind="heldout", rows=24, heldout_rows=24)


def test_a_partial_model_report_and_a_loo_recalibration_round_trip():
    partial = {
        "training": {
            "complete": False,
            "phase": "warm-up",
            "iterations_done": 50,
            "iterations_planned": 560,
            "draws_done": 0,
            "draws_planned": 60,
        }
    }
    report = FitReport.from_json(partial)
    assert report.training == TrainingProgress(False, "warm-up", 50, 560, 0, 60) and not report.complete
    assert report.sampler is None and report.to_json() == partial
    loo = {
        "rows_kind": "loo",
        "rows": 38,
        "loo_rows": 38,
        "loo_dropped_high_k": 2,
        "loo_k_threshold": 0.7,
        "loo_max_k": None,
        "relative_efficiency": 0.9,
    }
    rec = RecalibrationSummary.from_json(loo)
    assert rec.loo_dropped_high_k == 2 and rec.to_json() == loo
    assert FitReport.from_json({}).to_json() == {}
    unknown = {"method": "nuts", "sampler": {"acceptance": [0.8], "divergences": 0, "new_key": 1}, "later": 2}
    again = FitReport.from_json(unknown)
    assert again.sampler.extra == {"new_key": 1} and again.extra == {"later": 2}
    assert again.to_json() == {**unknown, "noise_std": None}  # a finished report always has noise_std
