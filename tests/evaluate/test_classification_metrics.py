"""Classification metrics against constructed cases."""

from __future__ import annotations

import numpy as np
import pytest

from sigmabnn.evaluate.classification import ECE_BINS, accuracy, brier, ece, nll, reliability


def test_ece_of_a_constructed_case():
    # 10 rows at confidence 0.95 (bin 15), 8 of them right: |0.8 - 0.95| = 0.15;
    # 10 rows at confidence 0.55 (bin 9), 5 right: |0.5 - 0.55| = 0.05. ECE = (0.15 + 0.05) / 2 = 0.10.
    probs = np.array([[0.95, 0.05]] * 10 + [[0.55, 0.45]] * 10)
    y = np.array([0] * 8 + [1] * 2 + [0] * 5 + [1] * 5)
    assert ece(probs, y) == pytest.approx(0.10, abs=1e-12)
    r = reliability(probs, y)
    assert ECE_BINS == 15 and r.count.sum() == 20
    assert r.count[14] == 10 and r.count[8] == 10  # 0.95 in (14/15, 1], 0.55 in (8/15, 9/15]
    assert r.accuracy[14] == pytest.approx(0.8) and r.confidence[8] == pytest.approx(0.55)


def test_perfectly_calibrated_rows_have_zero_ece():
    probs = np.array([[0.75, 0.25]] * 4)
    y = np.array([0, 0, 0, 1])
    assert ece(probs, y) == pytest.approx(0.0, abs=1e-12)


def test_accuracy_nll_and_brier_by_hand():
    probs = np.array([[0.7, 0.2, 0.1], [0.1, 0.3, 0.6]])
    y = np.array([0, 1])
    assert accuracy(probs, y) == 0.5
    assert nll(probs, y) == pytest.approx(-(np.log(0.7) + np.log(0.3)) / 2)
    b0 = 0.3**2 + 0.2**2 + 0.1**2
    b1 = 0.1**2 + 0.7**2 + 0.6**2
    assert brier(probs, y) == pytest.approx((b0 + b1) / 2)


def test_bad_shapes_are_refused():
    with pytest.raises(ValueError):
        ece(np.ones((3, 2)) / 2, np.array([0, 1]))
    with pytest.raises(ValueError):
        nll(np.ones((2, 2)) / 2, np.array([0, 2]))
