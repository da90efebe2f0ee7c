"""The statement that a fit's chains sit in different modes (R-hat of the predictions above 1.1)."""

from __future__ import annotations

from sigmabnn.evaluate.diagnose import MODE_MIXTURE_RHAT, mode_mixture_note
from sigmabnn.fitting.report import EnsembleSummary, FitReport, MCMCSummary, ModelSummary, RecalibrationSummary


def _report(rhat, recalibration=None, chains=4, likelihood="gaussian"):
    sampler = MCMCSummary(acceptance=(0.8,) * chains, rhat_predictions=rhat)
    model = ModelSummary(likelihood=likelihood)
    return FitReport(method="chees", sampler=sampler, recalibration=recalibration, model=model)


def test_agreeing_chains_get_no_note():
    assert mode_mixture_note(_report(1.02)) is None
    assert mode_mixture_note(_report(MODE_MIXTURE_RHAT)) is None
    assert mode_mixture_note(_report(None)) is None
    assert mode_mixture_note(_report(float("nan"))) is None


def test_methods_without_chains_get_no_note():
    assert mode_mixture_note(FitReport(method="ensemble", sampler=EnsembleSummary())) is None
    assert mode_mixture_note(FitReport()) is None


def test_disagreeing_chains_are_called_a_mixture_of_modes_with_raw_intervals():
    note = mode_mixture_note(_report(4.24))
    assert note is not None
    assert "4.24" in note and "4 chains" in note and "mixture" in note
    assert "not one converged posterior" in note
    assert "not recalibrated" in note and "sigmabnn recalibrate" in note


def test_recalibrated_intervals_are_said_to_be_calibrated_as_a_whole():
    recal = RecalibrationSummary(rows_kind="heldout", rows=605, heldout_rows=605)
    note = mode_mixture_note(_report(2.5, recal))
    assert note is not None and "recalibrated on 605 held-out rows" in note
    assert "not recalibrated" not in note


def test_threshold_is_a_parameter():
    assert mode_mixture_note(_report(1.05), threshold=1.01) is not None
    assert mode_mixture_note(_report(1.05)) is None


def test_a_classifier_is_told_about_its_temperature_not_intervals():
    def temp(t, rows=30):
        return RecalibrationSummary(rows_kind="temperature", rows=rows, heldout_rows=rows, extra={"temperature": t})

    scaled = mode_mixture_note(_report(1.4, temp(0.156), likelihood="categorical"))
    assert "temperature-scaled on 30 validation rows (T = 0.156)" in scaled and "interval" not in scaled
    kept = mode_mixture_note(_report(1.4, temp(1.0), likelihood="categorical"))
    assert "kept as sampled (T = 1)" in kept and "interval" not in kept
    none = mode_mixture_note(_report(1.4, None, likelihood="categorical"))
    assert "not temperature-scaled" in none and "recalibrate" not in none
