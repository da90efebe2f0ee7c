"""Models saved by an earlier sigmabnn (before the fit-stage refactor) still load and predict the same.

``tests/fixtures/legacy_models/<case>/`` are model directories written by ``save_model`` at commit
6c2d574 (small fits of a two-input table: NUTS, ChEES, MH, a recalibrated model, a deep ensemble,
Bayes by Backprop, heteroscedastic and plain Student-t noise, a known per-row noise);
``<case>.prediction.npz`` holds what that code predicted for them at seven fixed points with the
key ``jax.random.key(3)``. Loading must accept the old header (its diagnostics report included) and
predict the same numbers.
"""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pandas as pd
import pytest

from sigmabnn.io.model_file import load_model
from sigmabnn.predict import predict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_models"
CASES = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir())


def _grid(noise: bool) -> pd.DataFrame:
    grid = pd.DataFrame({"a": np.linspace(-1.2, 1.2, 7), "b": np.linspace(0.9, -0.9, 7)})
    if noise:
        grid["ystd"] = 0.01
    return grid


def test_fixtures_present():
    assert {"nuts", "chees", "ensemble", "bbb", "recal", "hetero_t"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_legacy_model_loads_and_predicts_the_same(case):
    fitted = load_model(FIXTURES / case)
    expected = np.load(FIXTURES / f"{case}.prediction.npz")
    p = predict(fitted, _grid(case == "known_noise"), rng_key=jax.random.key(3))
    np.testing.assert_allclose(p.mean, expected["mean"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(p.std, expected["std"], rtol=1e-12, atol=0)
    np.testing.assert_allclose(p.epistemic_std, expected["epistemic"], rtol=1e-12, atol=0)
    for level, lower in p.lower.items():
        np.testing.assert_allclose(lower, expected[f"lower_{level}"], rtol=1e-12, atol=0)
        np.testing.assert_allclose(p.upper[level], expected[f"upper_{level}"], rtol=1e-12, atol=0)
