"""Post-hoc quantile recalibration of a fitted model's predictive intervals on held-out rows.

Kuleshov, Fenner & Ermon 2018, "Accurate Uncertainties for Deep Learning Using Calibrated
Regression" (ICML): the probability integral transform ``u_i = F_i(y_i)`` of held-out rows under
the model's predictive CDF is uniform when the model is calibrated; its empirical CDF ``R``
is a monotone map that makes it so. :func:`recalibrate` computes the ``u_i`` exactly
(:func:`sigmabnn.predict.predictive_cdf`: the equally weighted mixture over the networks of
their Gaussian or Student-t components, in closed form) and returns a copy of the model holding
the map (:class:`~sigmabnn.calibration.Calibration`; its estimator and how it treats the ends
are described there). :func:`sigmabnn.predict.predict` then reads the central interval at level
``c`` off the predictive quantiles ``R^{-1}((1 - c) / 2)`` and ``R^{-1}((1 + c) / 2)``; the
predictive mean and stds are not changed.

The held-out rows must be independent of the training rows and of the rows the recalibrated
intervals are judged on: the map is fitted on them, so coverage on the same rows is optimistic.
``m`` rows resolve levels to about ``1 / (m + 1)``; coverage of the recalibrated central
``c`` interval on new rows scatters by about ``sqrt(c (1 - c) / m)`` from the calibration alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from sigmabnn.calibration import Calibration
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel

__all__ = ["pit_values", "recalibrate"]

#: Fewest held-out rows accepted (the map resolves levels only to about ``1 / (m + 1)``).
MIN_ROWS = 20


def _check_model(fitted: FittedModel) -> None:
    name = fitted.bnn.likelihood.name
    if name == "categorical":
        raise InputError("recalibration applies to regression models; this model is a classifier (categorical)")
    if name == "known_noise":
        raise InputError(
            "recalibration is not supported for a known-noise model (its intervals depend on the noise std given at "
            "prediction time)"
        )


def pit_values(fitted: FittedModel, x_raw: Any, y_raw: Any, *, chunk_size: int = 65536) -> np.ndarray:
    """Exact PIT values ``F_i(y_i)`` ``[n, t]`` of rows under ``fitted``'s predictive (raw, uncalibrated) CDF.

    ``x_raw``: raw features (array or DataFrame, see :func:`sigmabnn.predict.feature_matrix_for`);
    ``y_raw``: ``[n]`` or ``[n, t]`` targets in original units.
    """
    from sigmabnn.predict import predictive_cdf

    _check_model(fitted)
    return predictive_cdf(fitted, x_raw, y_raw, chunk_size=chunk_size)


def _rows(fitted: FittedModel, data: Any, y: Any, split: str, split_column: str | None) -> tuple[Any, Any, str]:
    """The held-out inputs, targets and their name from a table (with its split column) or arrays."""
    import pandas as pd

    if y is not None:
        return data, y, split
    if not isinstance(data, pd.DataFrame):
        raise InputError("recalibrate needs a table (DataFrame) holding the target column, or arrays x and y")
    name = "all"
    if split_column is not None and split_column in data.columns:
        data = data[data[split_column].astype(str) == split]
        name = split
        if len(data) == 0:
            raise DataError(f"no rows with {split_column} == {split!r} to recalibrate on")
    elif split_column is not None and split_column != "split":
        raise DataError(f"the table has no split column {split_column!r}")
    target = fitted.target_name
    if target not in data.columns:
        raise DataError(f"the table has no target column {target!r}")
    values = pd.to_numeric(data[target], errors="coerce").to_numpy(np.float64)
    ok = np.isfinite(values) & ((values > 0) if fitted.log_target else True)
    data = data[ok]
    return data, values[ok], name


def recalibrate(
    fitted: FittedModel,
    data: Any,
    y: Any = None,
    *,
    split: str = "val",
    split_column: str | None = "split",
    chunk_size: int = 65536,
) -> FittedModel:
    """A copy of ``fitted`` whose intervals are quantile-recalibrated on held-out rows (Kuleshov et al. 2018).

    Args:
        fitted: a regression model (any likelihood but known noise; classifiers are refused).
        data: a DataFrame with the raw input columns and the target (derived features are
            recomputed), or raw features ``[n, p]`` with ``y``.
        y: targets ``[n]`` or ``[n, t]`` in original units when ``data`` is an array.
        split: the label of the held-out rows in ``split_column`` (default ``"val"``); also the
            name stored with the calibration. Ignored (named ``"all"``) when the table has no
            ``split_column`` and that column is the default ``"split"``: then every row is used.
        split_column: the column holding split labels (``None``: use every row).
        chunk_size: most points per chunk of the network pass.

    Rows whose target is missing (or not positive, for a log target) are skipped, as
    in training. The returned model predicts recalibrated intervals by default
    (``predict(..., calibrated=False)`` for the raw ones); its means and stds are unchanged.
    A model that already holds a calibration is recalibrated from its raw CDF (the old map is
    replaced, not composed).

    Raises:
        InputError / DataError: a classifier or known-noise model, missing columns or rows,
            fewer than ``MIN_ROWS`` usable rows.
    """
    _check_model(fitted)
    x, yy, name = _rows(fitted, data, y, split, split_column)
    n = len(x)
    if n < MIN_ROWS:
        raise DataError(f"recalibration needs at least {MIN_ROWS} held-out rows with a target, got {n}")
    u = pit_values(fitted, x, yy, chunk_size=chunk_size)
    return dataclasses.replace(fitted, calibration=Calibration(u, name))
