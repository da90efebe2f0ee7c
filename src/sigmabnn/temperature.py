"""Temperature scaling of a classifier on held-out rows (Guo et al. 2017, "On calibration of modern
neural networks").

One temperature ``T > 0`` is applied to the log of the posterior predictive, ``softmax(log(mean_t p_t) / T)``
with ``p_t`` the networks' class probabilities ("pool, then calibrate", Rahaman & Thiery 2021, "Uncertainty
quantification and deep ensembles"): the ``"pooled"`` map of :class:`~sigmabnn.classes.ClassLabels`, chosen
over dividing every network's logits by ``T`` before the mean (the ``"networks"`` map, which older model files
keep) by the lowest NLL on fresh digits splits (``benchmarks/results/temperature_seeds.md``). The per-network
map cannot sharpen a posterior whose networks are each too soft: a small ``T`` turns their mean into their votes.

``T`` is chosen to minimise the negative log-likelihood of the validation rows: a grid of :data:`GRID_SIZE`
log-spaced values on ``[T_MIN, T_MAX]``, then golden-section search between the grid neighbours of the best
one. The model keeps ``T`` only when it lowers the validation NLL below that of ``T = 1`` and the minimum
is not at the lower bound ``T_MIN`` (:func:`kept_temperature`). At that bound the NLL was still falling as
``T`` sharpened the predictive, as it does when every validation row is already classified right: the rows
do not determine ``T``, and ``T_MIN`` would multiply the log-probabilities' gaps by 100, so that one later
mistake would cost hundreds of nats. The upper bound is kept: softening toward uniform is the cautious side.

The search takes log-probabilities ``[T, n, K]`` and scores
``mean_t softmax(log_probs[t] / T)``: the networks' own for the per-network map (``softmax`` is shift
invariant, so ``softmax(log p_t / T) = softmax(f_t / T)``), one pooled "network" (:func:`pooled_log_probs`)
for the pooled map.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np
from scipy.special import logsumexp

from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.predict.classes import class_probabilities, tempered_softmax

__all__ = [
    "BOUND_TOLERANCE",
    "GRID_SIZE",
    "T_MAX",
    "T_MIN",
    "TemperatureFit",
    "fit_temperature",
    "kept_temperature",
    "pooled_log_probs",
    "temperature_nll",
    "tempered_probabilities",
]

T_MIN, T_MAX, GRID_SIZE = 0.01, 20.0, 81
#: The minimum is at the lower bound when the NLL at ``T_MIN`` is within this many nats of it (the NLL can
#: flatten to 0 in float64 before ``T_MIN``, so the search may stop anywhere on that flat stretch).
BOUND_TOLERANCE = 1e-9


class TemperatureFit(NamedTuple):
    """The search's result: the kept ``temperature`` (1 when none), the validation NLL at it and at ``T = 1``
    (nats), and whether the search's minimum was at the lower bound ``T_MIN`` (then ``T = 1`` is kept)."""

    temperature: float
    nll: float
    nll_at_one: float
    at_lower_bound: bool = False


def tempered_probabilities(log_probs: np.ndarray, temperature: float) -> np.ndarray:
    """``mean_t softmax(log_probs[t] / T)`` ``[n, K]`` of the networks' log-probabilities ``[T, n, K]``."""
    return tempered_softmax(log_probs, temperature).mean(axis=0)


def pooled_log_probs(log_probs: np.ndarray) -> np.ndarray:
    """``log mean_t p_t`` ``[1, n, K]`` of the networks' log-probabilities ``[T, n, K]``: the posterior predictive
    as one network, what the pooled map's search takes."""
    log_probs = np.asarray(log_probs, np.float64)
    return (logsumexp(log_probs, axis=0) - np.log(log_probs.shape[0]))[None]


def temperature_nll(log_probs: np.ndarray, y: np.ndarray, temperature: float) -> float:
    """NLL (nats, mean over rows) of ``mean_t softmax(log_probs[t] / T)`` at codes ``y`` ``[n]``;
    ``log_probs`` ``[T, n, K]``."""
    p = tempered_probabilities(log_probs, temperature)
    return float(-np.mean(np.log(np.maximum(p[np.arange(y.size), y], 1e-300))))


def _search(log_probs: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    """``(T, its NLL, the NLL at T_MIN)``: the grid's best refined by golden section (module docstring)."""
    grid = np.exp(np.linspace(np.log(T_MIN), np.log(T_MAX), GRID_SIZE))
    values = [temperature_nll(log_probs, y, t) for t in grid]
    i = int(np.argmin(values))
    lo, hi = np.log(grid[max(i - 1, 0)]), np.log(grid[min(i + 1, GRID_SIZE - 1)])
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(40):  # golden section on log T
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if temperature_nll(log_probs, y, np.exp(a)) < temperature_nll(log_probs, y, np.exp(b)):
            hi = b
        else:
            lo = a
    best = float(np.exp(0.5 * (lo + hi)))
    nll = temperature_nll(log_probs, y, best)
    if nll > values[i]:
        best, nll = float(grid[i]), float(values[i])
    return best, nll, float(values[0])


def fit_temperature(fitted: FittedModel, x_raw: Any, codes: Any) -> tuple[FittedModel, TemperatureFit]:
    """``fitted`` with the pooled temperature that minimises the NLL of ``(x_raw, codes)`` (the validation
    rows), when that NLL is below the one at ``T = 1`` and not at the search's lower bound
    (:func:`kept_temperature`); else ``fitted`` at ``T = 1``. ``codes``: class indices ``[n]``. The model's old
    temperature and map are replaced (the networks are read at ``T = 1``)."""
    if not fitted.is_classifier or fitted.classes is None:
        raise InputError("temperature scaling applies to classifiers (the categorical likelihood)")
    y = np.asarray(codes, np.int64).reshape(-1)
    mean, _ = class_probabilities(fitted, x_raw, calibrated=False)  # chunked: memory n K, not T n K
    fit = kept_temperature(np.log(np.maximum(mean, 1e-300))[None], y)
    return dataclasses.replace(fitted, classes=fitted.classes.with_temperature(fit.temperature, "pooled")), fit


def kept_temperature(log_probs: np.ndarray, y: np.ndarray) -> TemperatureFit:
    """The temperature minimising the NLL of ``mean_t softmax(log_probs[t] / T)`` at codes ``y`` ``[n]`` when
    that NLL is below the one at ``T = 1`` and the minimum is not at ``T_MIN`` (module docstring), else 1;
    ``log_probs`` ``[T, n, K]`` (the networks' raw log-probabilities)."""
    at_one = temperature_nll(log_probs, y, 1.0)
    best, nll, at_min = _search(log_probs, y)
    at_bound = at_min <= nll + BOUND_TOLERANCE  # no higher at T_MIN: no minimum inside
    kept = nll < at_one and not at_bound
    return TemperatureFit(temperature=best if kept else 1.0, nll=nll if kept else at_one, nll_at_one=at_one,
                          at_lower_bound=bool(at_bound))  # fmt: skip
