"""The inputs of a prediction or a score, checked once: features, targets, known noise, levels."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from sigmabnn.data.features import add_derived
from sigmabnn.data.tables import feature_matrix
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.predict.engine import Points

__all__ = ["check_levels", "domain_columns", "feature_matrix_for", "points_for", "targets_for"]


def domain_columns(fitted: FittedModel, z: Any) -> dict[str, np.ndarray]:
    """``domain_distance`` ``[n]`` float64 and ``in_domain`` ``[n]`` bool of standardised inputs ``z`` ``[n, p]``
    (:class:`~sigmabnn.data.domain.Domain`, the threshold fitted on the training rows); empty for a model
    without a stored domain. ``z`` in the model's dtype is fine: a float32 model's rounding (relative
    ``1e-7``) is far below any threshold."""
    if fitted.domain is None:
        return {}
    distance = fitted.domain.distance(np.asarray(z, dtype=np.float64))
    return {"domain_distance": distance, "in_domain": distance <= fitted.domain.threshold}


def feature_matrix_for(fitted: FittedModel, x_raw: Any) -> np.ndarray:
    """Raw feature matrix ``[n, p]`` float64 in ``fitted.feature_names`` order.

    ``x_raw`` is either that matrix already (array-like ``[n, p]``, or ``[n]``
    when ``p = 1``) or a pandas DataFrame holding the raw columns: then the
    derived features stored in the model are recomputed from the raw columns
    and the model's columns are picked by name. Raises :class:`DataError` for
    missing or non-numeric columns, a wrong width, or non-finite values.
    """
    if isinstance(x_raw, pd.DataFrame):
        df = x_raw
        if fitted.derived:
            names = [n for n, _ in fitted.derived]
            df = add_derived(df.drop(columns=[c for c in names if c in df.columns]), fitted.derived)
        x = feature_matrix(df, fitted.feature_names)
    else:
        x = np.asarray(x_raw, dtype=np.float64)
        if x.ndim == 1 and fitted.num_features == 1:
            x = x[:, None]
        if x.ndim != 2 or x.shape[1] != fitted.num_features:
            raise DataError(
                f"inputs must have shape [n, {fitted.num_features}] ({', '.join(fitted.feature_names)}), "
                f"got {list(x.shape)}"
            )
    if not np.isfinite(x).all():
        bad = ~np.all(np.isfinite(x), axis=1)
        first, count = int(np.flatnonzero(bad)[0]) + 1, int(bad.sum())  # data rows count from 1, as in tables.py
        rows = "1 input row has" if count == 1 else f"{count} input rows have"
        raise DataError(f"{rows} missing or non-finite feature values (first: data row {first})")
    return x


def targets_for(fitted: FittedModel, y_raw: Any, n: int) -> np.ndarray:
    """Targets ``[n, t]`` float64 in original units from ``y_raw``: ``[n]`` or ``[n, t]`` array-like,
    a Series, or a DataFrame holding the target column. Raises :class:`DataError` for a wrong
    count or width, missing or non-finite values, or non-positive values of a log target."""
    if isinstance(y_raw, pd.DataFrame):
        y = feature_matrix(y_raw, [fitted.target_name], role="target")
    elif isinstance(y_raw, pd.Series):
        y = y_raw.to_numpy(dtype=np.float64, na_value=np.nan)
    else:
        y = np.asarray(y_raw, dtype=np.float64)
    y = y[:, None] if y.ndim == 1 else y
    if y.ndim != 2 or y.shape[0] != n:
        raise DataError(f"{n} input rows but {y.shape[0] if y.ndim else 1} targets")
    if not np.all(np.isfinite(y)):
        raise DataError(f"{int(np.sum(~np.isfinite(y)))} target values are missing or non-finite")
    if y.shape[1] != fitted.target_dim:
        raise DataError(f"targets must have {fitted.target_dim} columns, got {y.shape[1]}")
    if fitted.log_target and np.any(~(y > 0)):
        raise DataError(f"log target needs positive values; {int(np.sum(~(y > 0)))} are not")
    return y


def check_levels(levels: Sequence[float] | float) -> tuple[float, ...]:
    """Interval levels as a tuple of distinct floats in (0, 1), in the order given."""
    if isinstance(levels, int | float):
        levels = (levels,)
    out = tuple(dict.fromkeys(float(v) for v in levels))
    for v in out:
        if not 0.0 < v < 1.0:
            raise InputError(f"interval level must lie strictly between 0 and 1, got {v}")
    return out


def _noise_std_model(fitted: FittedModel, noise_std: Any, n: int) -> np.ndarray | None:
    """Known-noise std in model units ``[n, t]``, model dtype (given in log-space target units), or None."""
    if fitted.bnn.likelihood.name != "known_noise":
        return None
    t = fitted.target_dim
    if noise_std is None:
        return np.zeros((n, t), fitted.bnn.dtype)  # predict the noise-free function
    s = np.asarray(noise_std, dtype=np.float64)
    s = s[:, None] if s.ndim == 1 else s
    if s.shape not in ((n, t), (n, 1)) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise InputError(f"noise_std must be [n] or [n, {t}] finite non-negative values")
    return (np.broadcast_to(s, (n, t)) / fitted.y_transform.scale).astype(fitted.bnn.dtype)


def points_for(
    fitted: FittedModel, x_raw: Any, y_raw: Any = None, noise_std: Any = None
) -> tuple[Points, np.ndarray | None]:
    """The checked inputs of a call, ready for :func:`sigmabnn.predict.engine.run`, and the targets
    ``[n, t]`` in original units (``None`` without ``y_raw``).

    Raises :class:`InputError` for a classifier (prediction covers regression likelihoods) or a
    bad ``noise_std``; :class:`DataError` for bad features (:func:`feature_matrix_for`) or targets
    (:func:`targets_for`).
    """
    x = feature_matrix_for(fitted, x_raw)
    if fitted.bnn.likelihood.name == "categorical":
        raise InputError("a regression score; a classifier (categorical model) is scored by evaluate_classifier")
    n = x.shape[0]
    y = y_log = y_model = None
    if y_raw is not None:
        y = targets_for(fitted, y_raw, n)
        y_log = np.asarray(fitted.y_transform.to_log_space(y), np.float64)
        y_model = fitted.y_transform.forward(y, offset=fitted.y_transform.offset(x, fitted.feature_names))
    z = fitted.x_transform.forward(x, dtype=fitted.bnn.dtype)
    return Points(z, _noise_std_model(fitted, noise_std, n), y_log, y_model), y
