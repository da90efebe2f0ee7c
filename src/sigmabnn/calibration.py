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

This module holds only the map (what a model file stores); computing the PIT values and
building a recalibrated model is :mod:`sigmabnn.recalibration`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Calibration"]


@dataclass(frozen=True, eq=False)
class Calibration:
    """A quantile-recalibration map learned from held-out PIT values.

    Attributes:
        pit: ``[m, t]`` float64, the held-out rows' PIT values ``F_i(y_i)`` in [0, 1], sorted
            ascending within each target column.
        split: name of the rows they come from (e.g. ``"val"``).
    """

    pit: np.ndarray
    split: str = "val"

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
        out = []
        for j in range(self.target_dim):
            u, r = self._knots(j)
            out.append(np.interp(q, r, u))
        return np.stack(out, axis=-1)

    def to_json(self) -> dict[str, Any]:
        """JSON-able form (the model file's ``calibration`` header field)."""
        return {"method": "quantile", "split": self.split, "n": self.n, "pit": self.pit.tolist()}

    @classmethod
    def from_json(cls, obj: Any, target_dim: int) -> Calibration:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on anything malformed."""
        if not isinstance(obj, dict) or set(obj) != {"method", "split", "n", "pit"}:
            raise ValueError("calibration must be an object with method, split, n and pit")
        if obj["method"] != "quantile":
            raise ValueError(f"unknown calibration method {obj['method']!r}")
        pit = obj["pit"]
        if not isinstance(pit, list) or not all(
            isinstance(r, list) and len(r) == target_dim and all(isinstance(v, int | float) for v in r) for r in pit
        ):
            raise ValueError(f"calibration pit must be a list of rows of {target_dim} numbers")
        n = obj["n"]
        if not isinstance(n, int) or isinstance(n, bool) or n != len(pit):
            raise ValueError("calibration n must be the number of pit rows")
        return cls(np.asarray(pit, np.float64).reshape(len(pit), target_dim), obj["split"])
