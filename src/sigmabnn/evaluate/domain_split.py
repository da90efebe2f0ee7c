"""The ``"domain"`` entry of an evaluation: the metrics of the rows inside and outside the training domain apart.

A model's error bars (a regression's intervals, a classifier's probabilities) are extrapolations outside the
inputs it was trained on (:mod:`sigmabnn.data.domain`); scored together, a few such rows hide among many
inside, so :func:`sigmabnn.evaluate.metrics.evaluate` scores the two parts apart as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from sigmabnn.fitted import FittedModel
from sigmabnn.predict.inputs import feature_matrix_for

__all__ = ["domain_split", "training_input_rows"]


def domain_split(
    fitted: FittedModel, inside: np.ndarray, section: Callable[[np.ndarray], Any], x_raw: Any
) -> dict[str, Any]:
    """``threshold`` (the model's domain threshold), ``n_in`` and ``n_out`` (rows inside and outside, from the
    ``[n]`` bool ``inside``), ``n_training_inputs`` (:func:`training_input_rows` of the raw inputs ``x_raw``),
    ``all_training_inputs_stored`` (whether the model stores every training row's inputs, so that the count is
    exact, not a lower bound), and ``"in"`` / ``"out"``: ``section(rows)`` of each part's rows (a ``[n]`` bool
    mask), a part without rows left out."""
    parts = {"in": inside, "out": ~inside}
    data = fitted.report.data
    n_train = None if data is None else data.train
    return {
        "threshold": float(fitted.domain.threshold),
        "n_in": int(inside.sum()),
        "n_out": int((~inside).sum()),
        "n_training_inputs": training_input_rows(fitted, x_raw),
        "all_training_inputs_stored": n_train is not None and fitted.domain.reference.shape[0] >= n_train,
        **{part: section(rows) for part, rows in parts.items() if rows.any()},
    }


def training_input_rows(fitted: FittedModel, x_raw: Any) -> int:
    """How many rows of ``x_raw`` (raw inputs, as for prediction) have the inputs of one of the model's stored
    training rows (:meth:`~sigmabnn.data.domain.Domain.coincident`): scores of such rows are not held-out. The
    domain stores at most :data:`~sigmabnn.data.domain.MAX_REFERENCE` training rows, so on a larger training
    set the count is a lower bound."""
    z = fitted.x_transform.forward(feature_matrix_for(fitted, x_raw))
    return int(fitted.domain.coincident(z).sum())
