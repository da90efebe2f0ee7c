"""A table's units do not change the fit: a target or an input in tiny or huge units is standardised like any
other column (a relative constant-column rule, overflow-safe moments), so the model fits it as well as the same
table in unit scale. Before, a target of 1e-9 was taken as constant and only centred (R^2 of -2e11 on its own
training rows), an input of 1e-9 was dropped as constant, and an input of 1e300 overflowed its std to inf and
failed at the model's write with a traceback."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sigmabnn
from sigmabnn.evaluate.metrics import r2
from sigmabnn.predict import predict


def _table(n: int = 200) -> pd.DataFrame:
    rng = np.random.default_rng(5)
    x = rng.uniform(-1, 1, size=(n, 2))
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "y": 2 * x[:, 0] - x[:, 1] + 0.1 * rng.normal(size=n)})


def _train_r2(df: pd.DataFrame) -> float:
    fitted, _ = sigmabnn.fit(
        df, "y", ["a", "b"], method="ensemble", architecture="2-8-1", num_members=2, num_steps=300,
        progress=False, seed=0,
    )  # fmt: skip
    return r2(df["y"].to_numpy(), predict(fitted, df[["a", "b"]]).mean)


@pytest.fixture(scope="module")
def unit_r2() -> float:
    r2 = _train_r2(_table())
    assert r2 > 0.95
    return r2


@pytest.mark.parametrize(
    ("column", "factor"), [("y", 1e-9), ("y", 1e-30), ("a", 1e-9), ("b", 1e-12), ("a", 1e200), ("y", 1e150)]
)
def test_a_column_in_tiny_or_huge_units_fits_as_the_unit_table_does(unit_r2, column, factor):
    df = _table()
    df[column] = df[column] * factor
    assert _train_r2(df) == pytest.approx(unit_r2, abs=0.01)
