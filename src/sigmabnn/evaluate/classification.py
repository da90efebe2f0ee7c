"""Accuracy and calibration of a classifier's predictive class probabilities.

The functions take plain arrays: ``probs`` ``[n, K]`` (each row sums to 1) and integer class
codes ``y`` ``[n]`` (column indices of ``probs``). Definitions:

- ``accuracy``: the fraction of rows whose most probable class (first of ties) is ``y``;
  ``error = 1 - accuracy``.
- ``nll = -(1/n) sum_i log p_i[y_i]`` (nats; probabilities floored at ``1e-300`` so that a
  confident miss is large but finite).
- ``brier = (1/n) sum_i sum_k (p_ik - [k = y_i])^2`` (the multi-class Brier score of Brier 1950,
  summed over the classes: 0 is perfect, 2 the worst).
- ``ece``: expected calibration error over :data:`ECE_BINS` = 15 equal-width bins of the
  confidence ``c_i = max_k p_ik`` on ``[0, 1]`` (bin ``b`` holds ``b/15 < c <= (b+1)/15``; a
  confidence of 0 falls in the first): ``sum_b (n_b / n) |acc_b - conf_b|``, with ``acc_b`` the
  accuracy and ``conf_b`` the mean confidence of the bin's rows (Naeini et al. 2015; Guo et al.
  2017). The reliability diagram plots ``acc_b`` against ``conf_b`` (:func:`reliability`).

:func:`evaluate_classifier` scores a fitted classifier on labelled rows.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from sigmabnn.errors import DataError
from sigmabnn.evaluate.domain_split import domain_split
from sigmabnn.fitted import FittedModel
from sigmabnn.predict.classes import ClassPrediction, predict_classes

__all__ = [
    "ECE_BINS",
    "Reliability",
    "accuracy",
    "brier",
    "classification_summary",
    "ece",
    "evaluate_classifier",
    "labels_for",
    "nll",
    "reliability",
]

#: Equal-width confidence bins of the expected calibration error and the reliability diagram.
ECE_BINS = 15
_FLOOR = 1e-300


def _checked(probs: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(probs, np.float64)
    codes = np.asarray(y).reshape(-1).astype(np.int64)
    if p.ndim != 2 or p.shape[0] != codes.shape[0] or p.shape[0] == 0:
        raise ValueError(f"probs must be [n, K] and y [n] with n >= 1; got {p.shape} and {codes.shape}")
    if np.any(codes < 0) or np.any(codes >= p.shape[1]):
        raise ValueError("class codes must index the columns of probs")
    return p, codes


def accuracy(probs: Any, y: Any) -> float:
    p, codes = _checked(probs, y)
    return float(np.mean(np.argmax(p, axis=1) == codes))


def nll(probs: Any, y: Any) -> float:
    p, codes = _checked(probs, y)
    return float(-np.mean(np.log(np.maximum(p[np.arange(codes.size), codes], _FLOOR))))


def brier(probs: Any, y: Any) -> float:
    p, codes = _checked(probs, y)
    onehot = np.zeros_like(p)
    onehot[np.arange(codes.size), codes] = 1.0
    return float(np.mean(np.sum(np.square(p - onehot), axis=1)))


class Reliability(NamedTuple):
    """Per-bin statistics of :func:`reliability` (arrays ``[bins]``; empty bins: count 0, NaN means).

    Attributes:
        edges: ``[bins + 1]`` bin edges on ``[0, 1]``.
        count: rows per bin.
        confidence: mean confidence of the bin's rows.
        accuracy: accuracy of the bin's rows.
    """

    edges: np.ndarray
    count: np.ndarray
    confidence: np.ndarray
    accuracy: np.ndarray


def reliability(probs: Any, y: Any, bins: int = ECE_BINS) -> Reliability:
    """Confidence bins of the rows (module docstring): counts, mean confidence, accuracy."""
    p, codes = _checked(probs, y)
    conf = np.max(p, axis=1)
    correct = (np.argmax(p, axis=1) == codes).astype(np.float64)
    index = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    count = np.bincount(index, minlength=bins)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_conf = np.bincount(index, weights=conf, minlength=bins) / count
        acc = np.bincount(index, weights=correct, minlength=bins) / count
    return Reliability(np.linspace(0.0, 1.0, bins + 1), count, mean_conf, acc)


def ece(probs: Any, y: Any, bins: int = ECE_BINS) -> float:
    """Expected calibration error (module docstring)."""
    r = reliability(probs, y, bins)
    used = r.count > 0
    return float(np.sum(r.count[used] * np.abs(r.accuracy[used] - r.confidence[used])) / np.sum(r.count))


def classification_summary(probs: Any, y: Any, prediction: ClassPrediction | None = None) -> dict[str, Any]:
    """``n``, ``accuracy``, ``error``, ``nll``, ``brier``, ``ece`` (and mean entropies with a prediction)."""
    acc = accuracy(probs, y)
    out: dict[str, Any] = {
        "n": int(np.asarray(y).size),
        "accuracy": acc,
        "error": 1.0 - acc,
        "nll": nll(probs, y),
        "brier": brier(probs, y),
        "ece": ece(probs, y),
        "ece_bins": ECE_BINS,
    }
    if prediction is not None:
        out["mean_entropy"] = float(np.mean(prediction.entropy))
        out["mean_expected_entropy"] = float(np.mean(prediction.expected_entropy))
        out["mean_mutual_information"] = float(np.mean(prediction.mutual_information))
    return out


def labels_for(fitted: FittedModel, y_raw: Any, n: int) -> np.ndarray:
    """The codes ``[n]`` of labels ``y_raw`` (array-like, a Series, or a DataFrame with the target column).

    Raises:
        DataError: a wrong count, a missing value, a float, or a label the model was not trained on.
    """
    if hasattr(y_raw, "columns"):
        if fitted.target_name not in y_raw.columns:
            raise DataError(f"the data lack the target column {fitted.target_name!r}")
        y_raw = y_raw[fitted.target_name]
    codes = fitted.classes.encode(y_raw, what=f"label of {fitted.target_name!r}")
    if codes.shape[0] != n:
        raise DataError(f"{n} input rows but {codes.shape[0]} labels")
    return codes


def evaluate_classifier(fitted: FittedModel, x_raw: Any, y_raw: Any, *, calibrated: bool = True) -> dict[str, Any]:
    """Score a classifier on labelled rows: :func:`classification_summary` plus ``target``, ``temperature`` and
    ``temperature_map`` (:class:`~sigmabnn.classes.ClassLabels`);
    for a model with a stored training domain also ``"domain"``, as for a regression
    (:func:`sigmabnn.evaluate.metrics.evaluate`): ``threshold``, ``n_in``, ``n_out`` and the summary of the
    rows inside (``"in"``) and outside (``"out"``) it, a part without rows left out."""
    pred = predict_classes(fitted, x_raw, calibrated=calibrated)
    codes = labels_for(fitted, y_raw, pred.probabilities.shape[0])
    out = {
        "target": fitted.target_name,
        "temperature": pred.temperature,
        "temperature_map": pred.temperature_map,
        **classification_summary(pred.probabilities, codes, pred),
    }
    if pred.in_domain is not None:
        out["domain"] = domain_split(
            fitted, pred.in_domain, lambda r: classification_summary(pred.probabilities[r], codes[r]), x_raw
        )
    return out
