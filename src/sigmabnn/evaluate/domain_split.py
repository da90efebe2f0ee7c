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

__all__ = ["domain_split"]


def domain_split(fitted: FittedModel, inside: np.ndarray, section: Callable[[np.ndarray], Any]) -> dict[str, Any]:
    """``threshold`` (the model's domain threshold), ``n_in`` and ``n_out`` (rows inside and outside, from the
    ``[n]`` bool ``inside``), and ``"in"`` / ``"out"``: ``section(rows)`` of each part's rows (a ``[n]`` bool
    mask), a part without rows left out."""
    parts = {"in": inside, "out": ~inside}
    return {
        "threshold": float(fitted.domain.threshold),
        "n_in": int(inside.sum()),
        "n_out": int((~inside).sum()),
        **{part: section(rows) for part, rows in parts.items() if rows.any()},
    }
