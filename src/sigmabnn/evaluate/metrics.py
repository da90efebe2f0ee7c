"""Accuracy and calibration metrics of a predictive distribution.

The functions take plain arrays (``y``, predictive ``mean``, ``std``, ...,
each ``[n]`` or ``[n, t]``; all entries are pooled) and return floats or
dicts of floats. :func:`evaluate` scores a :class:`~sigmabnn.fitted.FittedModel`
on labelled data in the log space of the target (``log10 y`` for a log
target) and, for a log target, also in the original space.

Definitions:

- ``r2 = 1 - sum (y - mean)^2 / sum (y - ybar)^2``; ``rmse = sqrt(mean (y - mean)^2)``.
- ``nll`` = minus the average log predictive density, with the predictive
  density the equally weighted mixture of the per-draw Gaussians:
  ``-(1/n) sum_n log((1/T) sum_t N(y_n; mu_t(x_n), sigma_t^2(x_n)))`` (nats).
- standardized residuals ``z = (y - mean) / std``; a calibrated Gaussian
  predictive has ``mean(z) ~ 0``, ``std(z) ~ 1``.
- coverage at ``k`` sigma: the fraction with ``|z| <= k``, compared with the
  Gaussian expectation ``erf(k / sqrt 2)`` (0.683, 0.954, 0.997, ...).
- interval coverage: the fraction of ``y`` inside each central predictive
  interval, to compare with its level. :func:`evaluate` counts it exactly, from each
  target's probability integral transform ``u = F(y)`` under the predictive mixture
  (:func:`sigmabnn.predict.score`): ``y`` lies in the central interval at level ``c``
  iff ``u`` lies between the interval's quantile levels, ``(1 -+ c) / 2`` or, for a
  recalibrated model, their mapped levels (:func:`pit_coverage`); no predictive samples.
- relative-error quantiles of ``|mean - y| / |y|``.
- for a model with a stored training domain (:mod:`sigmabnn.data.domain`), the same metrics
  for the rows inside the domain and for those outside it (``"domain"``), since error bars
  outside the training inputs are extrapolations.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sigmabnn.evaluate.classification import evaluate_classifier
from sigmabnn.evaluate.domain_split import domain_split
from sigmabnn.fitted import FittedModel
from sigmabnn.predict import score
from sigmabnn.predict.inputs import check_levels
from sigmabnn.predict.sampling import quantile_levels

__all__ = [
    "SIGMA_LEVELS",
    "coverage_sigma",
    "evaluate",
    "interval_coverage",
    "nll",
    "pit_coverage",
    "r2",
    "r2_concentration",
    "relative_error_quantiles",
    "rmse",
    "standardized_residuals",
    "summary",
]

SIGMA_LEVELS = (1, 2, 3, 4, 5)
RELATIVE_ERROR_QUANTILES = (0.5, 0.9, 0.99)


def _flat(a: Any) -> np.ndarray:
    return np.asarray(a, dtype=np.float64).reshape(-1)


def r2(y: Any, mean: Any) -> float:
    """Coefficient of determination (``nan`` when ``y`` is constant)."""
    y, m = _flat(y), _flat(mean)
    ss_tot = float(np.sum(np.square(y - y.mean())))
    ss_res = float(np.sum(np.square(y - m)))
    return 1.0 - ss_res / ss_tot if ss_tot > 0 else float("nan")


R2_CONCENTRATION_COUNTS = (1, 10)
"""How many of the largest squared residuals :func:`r2_concentration` reports on."""


def r2_concentration(y: Any, mean: Any, counts: tuple[int, ...] = R2_CONCENTRATION_COUNTS) -> dict[str, Any]:
    """Where the shortfall ``1 - R^2`` of :func:`r2` comes from: its largest squared residuals.

    A few rows can carry most of the residual sum (in cross-section space the largest cross
    sections do), so ``R^2`` alone does not say whether a model is poor everywhere or at a handful
    of rows. For each ``k`` of ``counts``: ``share_top{k}``, the fraction of the residual sum of
    squares in the ``k`` largest squared residuals, and ``r2_without_top{k}``, :func:`r2` of the
    other rows (residuals and total sum of squares both recomputed). ``top_rows``: the positions
    (into the flattened ``y``) of the ``max(counts)`` largest, largest first.

    Args:
        y, mean: ``[n]`` observations and predictions (any shape; flattened), float64.
    """
    y, m = _flat(y), _flat(mean)
    sq = np.square(y - m)
    order = np.argsort(-sq, kind="stable")
    total = float(np.sum(sq))
    out: dict[str, Any] = {}
    for k in counts:
        top = order[:k]
        keep = np.ones(y.size, bool)
        keep[top] = False
        out[f"share_top{k}"] = float(np.sum(sq[top]) / total) if total > 0 else float("nan")
        out[f"r2_without_top{k}"] = r2(y[keep], m[keep]) if keep.sum() > 1 else float("nan")
    out["top_rows"] = [int(i) for i in order[: max(counts, default=0)]]
    return out


def rmse(y: Any, mean: Any) -> float:
    """Root mean squared error, in the units of ``y``."""
    return float(np.sqrt(np.mean(np.square(_flat(y) - _flat(mean)))))


def nll(y: Any, mu: Any, sigma: Any) -> float:
    """Mean negative log predictive density of a Gaussian mixture, in nats.

    Args:
        y: ``[n]`` observations.
        mu: ``[T, n]`` per-draw predictive means.
        sigma: ``[T, n]`` per-draw predictive stds (> 0), or a scalar.
    """
    y = np.asarray(y, dtype=np.float64).reshape(-1)
    mu = np.asarray(mu, dtype=np.float64).reshape(-1, y.size)
    sigma = np.broadcast_to(np.asarray(sigma, dtype=np.float64), mu.shape)
    logp = -0.5 * np.square((y - mu) / sigma) - np.log(sigma) - 0.5 * math.log(2 * math.pi)
    top = logp.max(axis=0)
    lpd = top + np.log(np.mean(np.exp(logp - top), axis=0))
    return float(-lpd.mean())


def standardized_residuals(y: Any, mean: Any, std: Any) -> np.ndarray:
    """``z = (y - mean) / std``, flattened."""
    return (_flat(y) - _flat(mean)) / _flat(std)


def coverage_sigma(z: Any, ks: Sequence[int] = SIGMA_LEVELS) -> dict[str, dict[str, float]]:
    """``{"1": {"observed": frac(|z| <= 1), "expected": erf(1/sqrt2)}, ...}``."""
    z = np.abs(_flat(z))
    return {str(k): {"observed": float(np.mean(z <= k)), "expected": math.erf(k / math.sqrt(2.0))} for k in ks}


def interval_coverage(y: Any, lower: dict[float, Any], upper: dict[float, Any]) -> dict[str, float]:
    """Fraction of ``y`` inside ``[lower, upper]`` per level, keyed ``"0.95"`` etc."""
    y = _flat(y)
    return {f"{lv:g}": float(np.mean((y >= _flat(lower[lv])) & (y <= _flat(upper[lv])))) for lv in lower}


def pit_coverage(pit: Any, bounds: Any, levels: Sequence[float]) -> dict[str, float]:
    """Fraction of targets inside each central interval from their exact PIT, keyed ``"0.95"`` etc.

    ``pit`` ``[n, t]``: ``F(y)`` of each target; ``bounds`` ``[2 len(levels), t]``: the model quantile
    levels of each interval (lower, upper per level; :func:`sigmabnn.predict.sampling.quantile_levels`).
    A target is inside the interval ``[Q(lo), Q(hi)]`` iff ``lo <= F(y) <= hi`` (``F`` continuous and
    increasing), so the count is that of the intervals themselves, without their sampling error.
    """
    u = np.asarray(pit, np.float64)
    u = u[:, None] if u.ndim == 1 else u
    b = np.asarray(bounds, np.float64)
    return {f"{lv:g}": float(np.mean((u >= b[2 * i]) & (u <= b[2 * i + 1]))) for i, lv in enumerate(levels)}


def relative_error_quantiles(y: Any, mean: Any, qs: Sequence[float] = RELATIVE_ERROR_QUANTILES) -> dict[str, float]:
    """Quantiles of ``|mean - y| / |y|`` (rows with ``y = 0`` are skipped), plus ``"max"``."""
    y, m = _flat(y), _flat(mean)
    keep = y != 0
    if not keep.any():
        return {**{f"q{q:g}": float("nan") for q in qs}, "max": float("nan")}
    rel = np.abs(m[keep] - y[keep]) / np.abs(y[keep])
    return {**{f"q{q:g}": float(np.quantile(rel, q)) for q in qs}, "max": float(rel.max())}


def summary(
    y: Any,
    mean: Any,
    std: Any,
    *,
    lower: dict[float, Any] | None = None,
    upper: dict[float, Any] | None = None,
    coverage: dict[str, float] | None = None,
    log_density: Any = None,
    relative: bool = True,
) -> dict[str, Any]:
    """All metrics of one space as a JSON-able dict.

    ``log_density`` is the per-point log predictive density ``[n]``; ``nll`` is
    its negative mean (omitted when not given). ``coverage``: the interval coverage
    already counted (:func:`pit_coverage`); else it is counted from ``lower`` and
    ``upper`` when given. ``relative=False`` leaves out the relative errors
    (meaningless for ``log10 y``, which crosses zero).
    """
    z = standardized_residuals(y, mean, std)
    out: dict[str, Any] = {"r2": r2(y, mean), "rmse": rmse(y, mean)}
    if log_density is not None:
        out["nll"] = float(-np.mean(_flat(log_density)))
    out["residual_mean"] = float(np.mean(z))
    out["residual_std"] = float(np.std(z))
    out["coverage_sigma"] = coverage_sigma(z)
    if coverage is not None:
        out["coverage_interval"] = coverage
    elif lower is not None and upper is not None:
        out["coverage_interval"] = interval_coverage(y, lower, upper)
    if relative:
        out["relative_error"] = relative_error_quantiles(y, mean)
    return out


def evaluate(
    fitted: FittedModel,
    x_raw: Any,
    y_raw: Any,
    *,
    levels: Sequence[float] = (0.68, 0.95),
    chunk_size: int = 65536,
) -> dict[str, Any]:
    """Score ``fitted`` on labelled data; returns a JSON-able dict.

    Args:
        fitted: a :class:`~sigmabnn.fitted.FittedModel`.
        x_raw: raw features ``[n, p]`` or a DataFrame with the raw columns.
        y_raw: targets ``[n]`` / ``[n, t]`` in original units, or a DataFrame
            holding the target column (e.g. the same table as ``x_raw``).
        levels: central interval levels whose coverage is reported (exact, from the PIT:
            :func:`pit_coverage`; a recalibrated model's intervals are its recalibrated ones).

    Returns:
        ``{"n": n, "target": name, "space": ..., "original": {...}}`` and, for
        a log target, ``"log10": {...}`` with the same metrics of ``log10 y``.
        Each section holds ``r2``, ``rmse``, ``nll``, ``residual_mean``,
        ``residual_std``, ``coverage_sigma``, ``coverage_interval`` and
        (original space only) ``relative_error`` (see the module docstring).
        For a model with a stored training domain, ``"domain"``: ``threshold``,
        ``n_in`` and ``n_out`` (rows inside and outside the domain) and ``"in"`` /
        ``"out"``, the same sections on those rows (a part without rows is left out).
        A classifier returns :func:`sigmabnn.evaluate.classification.evaluate_classifier`'s
        accuracy, NLL, Brier score and ECE instead.
    """
    if fitted.is_classifier:
        return evaluate_classifier(fitted, x_raw, y_raw)
    levels = check_levels(levels)
    scored = score(fitted, x_raw, y_raw, levels=(), chunk_size=chunk_size)  # moments and PIT: no noise samples
    bounds = quantile_levels(fitted, levels, calibrated=True)[0]
    y = scored.targets
    out: dict[str, Any] = {"n": int(y.shape[0]), "target": fitted.target_name}
    out |= _sections(fitted, scored, slice(None), bounds, levels)
    inside = scored.prediction.in_domain
    if inside is not None:
        out["domain"] = domain_split(
            fitted, inside, lambda rows: _sections(fitted, scored, rows, bounds, levels), x_raw
        )
    return out


def _rows(a: Any, rows: Any) -> Any:
    return None if a is None else {k: v[rows] for k, v in a.items()} if isinstance(a, dict) else np.asarray(a)[rows]


def _sections(fitted: FittedModel, scored: Any, rows: Any, bounds: np.ndarray, levels: Sequence[float]) -> dict:
    """The metrics of each space (``log10`` for a log target, ``original``) on the ``rows`` of ``scored``;
    the interval coverage from their PIT and the intervals' quantile levels ``bounds`` (the same in both
    spaces: ``log10`` is increasing)."""
    pred, y = scored.prediction, scored.targets[rows]
    coverage = pit_coverage(scored.pit[rows], bounds, levels)
    out: dict[str, Any] = {}
    if fitted.log_target:
        lp = pred.log_space
        out["log10"] = summary(
            np.log10(y), _rows(lp.mean, rows), _rows(lp.std, rows), coverage=coverage,
            log_density=_rows(scored.log_space_log_density, rows), relative=False,
        )  # fmt: skip
    out["original"] = summary(
        y, _rows(pred.mean, rows), _rows(pred.std, rows), coverage=coverage, log_density=_rows(scored.log_density, rows)
    )
    return out
