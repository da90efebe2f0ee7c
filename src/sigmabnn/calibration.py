"""Calibration: a monotone map from nominal to model quantile levels, learned from held-out PIT values.

Quantile recalibration (Kuleshov, Fenner & Ermon 2018, "Accurate Uncertainties for Deep Learning
Using Calibrated Regression", ICML): for held-out rows ``i = 1..m`` the probability integral
transform ``u_i = F_i(y_i)`` of the model's predictive CDF is uniform on [0, 1] exactly when the
model is calibrated. The calibration map ``R(p) = P(u <= p)`` is estimated by the empirical CDF
of the ``u_i``, and a central interval of probability ``c`` is then read off the model's
predictive quantiles at levels ``R^{-1}((1 - c) / 2)`` and ``R^{-1}((1 + c) / 2)``.

Estimator: with the sorted values ``u_(1) <= ... <= u_(m)`` (per target column), ``R`` is the
piecewise-linear interpolation through the knots ``(0, 0)``, ``(u_(k), k / (m + 1))`` (the
Weibull plotting position: ``E[F(u_(k))] = k / (m + 1)`` for a continuous ``F``) and ``(1, 1)``;
``R^{-1}`` interpolates the same knots the other way. Both are non-decreasing maps of [0, 1] onto
itself, so mapped levels are always finite and mapped intervals stay nested (a larger ``c`` never
gives a narrower interval). Levels beyond the data's resolution, ``q < 1 / (m + 1)`` or
``q > m / (m + 1)``, are interpolated linearly between the outermost PIT value and 0 or 1: the
held-out rows say nothing about those tails, and the map then neither collapses nor explodes.

A one-parameter map (``scale``): ``R_k(p) = Phi(Phi^{-1}(p) / k)``, with model levels
``R_k^{-1}(q) = Phi(k Phi^{-1}(q))``: a Gaussian predictive's central intervals become ``k`` times
as wide (``k < 1`` narrows a model that is too wide); other predictives' intervals move the same
way in their own quantiles. :func:`fit_scale` chooses ``k`` to minimise the calibration error of
Kuleshov et al. (their eq. 9) over the levels :data:`SCALE_LEVELS`. On the PIT values of a calibrated
model its intervals scatter about as much as the empirical map's (it minimises a step function), and
it cannot change the shape of the predictive: a model right at 95 % and too wide at 68 % stays
between the two. ``benchmarks/results/defaults_validation.md`` measured it as the automatic map and
kept the empirical one.

This module holds only the map (what a model file stores); computing the PIT values and
building a recalibrated model is :mod:`sigmabnn.recalibration`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.special import ndtr, ndtri

from sigmabnn.names import CALIBRATION_MAPS

__all__ = ["CALIBRATION_MAPS", "SCALE_GRID", "SCALE_LEVELS", "Calibration", "fit_scale"]

#: Quantile levels whose calibration error :func:`fit_scale` minimises: 0.025, 0.05, ..., 0.975.
SCALE_LEVELS = np.arange(1, 40) / 40.0
#: Candidate scales of :func:`fit_scale`: 801 log-spaced values from 0.1 to 10.
SCALE_GRID = np.geomspace(0.1, 10.0, 801)


def fit_scale(pit: Any) -> np.ndarray:
    """The width factor ``k`` ``[t]`` of the map ``R_k(p) = Phi(Phi^{-1}(p) / k)`` fitted to PIT values ``[m, t]``.

    For each candidate ``k`` (:data:`SCALE_GRID`) the recalibrated level-``q`` quantile is the model's
    level ``R_k^{-1}(q) = Phi(k Phi^{-1}(q))``; a row falls below it when ``w = Phi^{-1}(u) <=
    k Phi^{-1}(q)``. ``k`` minimises ``sum_q (q - frac(w <= k Phi^{-1}(q)))^2`` over the levels
    :data:`SCALE_LEVELS` (Kuleshov et al. 2018, eq. 9). The error is a step function of ``k``: of
    the grid points that attain its minimum, the middle one (in log ``k``) is returned.
    """
    u = np.asarray(pit, np.float64)
    u = u[:, None] if u.ndim == 1 else u
    w = ndtri(np.clip(u, 1e-300, 1.0 - 1e-16))  # [m, t]
    z = ndtri(SCALE_LEVELS)  # [k]
    cut = SCALE_GRID[:, None] * z[None, :]  # [grid, levels]
    out = []
    for j in range(u.shape[1]):
        ws = np.sort(w[:, j])
        frac = np.searchsorted(ws, cut, side="right") / len(ws)  # [grid, levels]
        err = np.sum((SCALE_LEVELS[None, :] - frac) ** 2, axis=1)
        best = np.flatnonzero(err <= err.min() + 1e-12)
        out.append(float(np.exp(np.log(SCALE_GRID[best]).mean())))
    return np.asarray(out)


@dataclass(frozen=True, eq=False)
class Calibration:
    """A quantile-recalibration map learned from held-out PIT values.

    Attributes:
        pit: ``[m, t]`` float64, the held-out rows' PIT values ``F_i(y_i)`` in [0, 1], sorted
            ascending within each target column.
        split: name of the rows they come from (e.g. ``"val"``).
        scale: ``None`` for the empirical map (``"quantile"``), or ``[t]`` float64 width factors
            ``k > 0`` of the one-parameter map ``R_k(p) = Phi(Phi^{-1}(p) / k)`` (``"scale"``;
            :func:`fit_scale` of ``pit``).
    """

    pit: np.ndarray
    split: str = "val"
    scale: np.ndarray | None = None

    def __post_init__(self) -> None:
        pit = np.asarray(self.pit, dtype=np.float64)
        if pit.ndim == 1:
            pit = pit[:, None]
        if pit.ndim != 2 or pit.shape[0] < 1 or pit.shape[1] < 1:
            raise ValueError(f"calibration PIT values must be [m >= 1, t >= 1], got shape {list(pit.shape)}")
        if not np.all(np.isfinite(pit)) or np.any(pit < 0.0) or np.any(pit > 1.0):
            raise ValueError("calibration PIT values must lie in [0, 1]")
        if not isinstance(self.split, str) or not self.split:
            raise ValueError("calibration split must be a non-empty string")
        object.__setattr__(self, "pit", np.sort(pit, axis=0))
        if self.scale is not None:
            scale = np.asarray(self.scale, np.float64).reshape(-1)
            if scale.shape != (pit.shape[1],) or not np.all(np.isfinite(scale) & (scale > 0)):
                raise ValueError(f"calibration scale must be {pit.shape[1]} positive number(s)")
            object.__setattr__(self, "scale", scale)

    @property
    def method(self) -> str:
        """``"quantile"`` (the empirical map) or ``"scale"`` (the one-parameter map)."""
        return "quantile" if self.scale is None else "scale"

    @property
    def n(self) -> int:
        """Number of held-out rows ``m``."""
        return int(self.pit.shape[0])

    @property
    def target_dim(self) -> int:
        """Number of target columns ``t``."""
        return int(self.pit.shape[1])

    def _knots(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        m = self.n
        u = np.concatenate([[0.0], self.pit[:, j], [1.0]])
        p = np.concatenate([[0.0], np.arange(1, m + 1) / (m + 1.0), [1.0]])
        return u, p

    def cdf(self, p: Any) -> np.ndarray:
        """``R(p)`` ``[k, t]`` for nominal model levels ``p`` ``[k]``: the fraction of held-out PITs <= p."""
        p = np.atleast_1d(np.asarray(p, np.float64))
        if self.scale is not None:
            return ndtr(ndtri(p)[:, None] / self.scale[None, :])
        out = []
        for j in range(self.target_dim):
            u, r = self._knots(j)
            # ties in u: np.interp needs increasing x, so take the largest R at a repeated u
            u_last, idx = np.unique(u[::-1], return_index=True)
            out.append(np.interp(p, u_last, r[::-1][idx]))
        return np.stack(out, axis=-1)

    def model_levels(self, q: Any) -> np.ndarray:
        """``R^{-1}(q)`` ``[k, t]``: the model quantile levels giving calibrated levels ``q`` ``[k]``."""
        q = np.atleast_1d(np.asarray(q, np.float64))
        if self.scale is not None:
            return ndtr(self.scale[None, :] * ndtri(q)[:, None])
        out = []
        for j in range(self.target_dim):
            u, r = self._knots(j)
            out.append(np.interp(q, r, u))
        return np.stack(out, axis=-1)

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (the model file's ``calibration`` header field)."""
        out = {"method": self.method, "split": self.split, "n": self.n, "pit": self.pit.tolist()}
        return out if self.scale is None else {**out, "scale": self.scale.tolist()}

    @classmethod
    def from_json(cls, obj: Any, target_dim: int) -> Calibration:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on anything malformed."""
        keys = {"method", "split", "n", "pit"}
        if not isinstance(obj, dict) or set(obj) - {"scale"} != keys:
            raise ValueError("calibration must be an object with method, split, n and pit (and scale)")
        if obj["method"] not in CALIBRATION_MAPS or (obj["method"] == "scale") != ("scale" in obj):
            raise ValueError(f"unknown calibration method {obj['method']!r} (or a scale without method 'scale')")
        scale = obj.get("scale")
        if scale is not None and not (
            isinstance(scale, list) and len(scale) == target_dim and all(isinstance(v, int | float) for v in scale)
        ):
            raise ValueError(f"calibration scale must be a list of {target_dim} numbers")
        pit = obj["pit"]
        if not isinstance(pit, list) or not all(
            isinstance(r, list) and len(r) == target_dim and all(isinstance(v, int | float) for v in r) for r in pit
        ):
            raise ValueError(f"calibration pit must be a list of rows of {target_dim} numbers")
        n = obj["n"]
        if not isinstance(n, int) or isinstance(n, bool) or n != len(pit):
            raise ValueError("calibration n must be the number of pit rows")
        return cls(np.asarray(pit, np.float64).reshape(len(pit), target_dim), obj["split"], scale)
