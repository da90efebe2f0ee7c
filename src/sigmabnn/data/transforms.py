"""Fitted input and target transforms: standardisation and the optional log10 of the target.

Both are fitted on the *training* rows only and stored in the model file, so
prediction applies exactly the map the network was trained on.

Spaces of the target, as used throughout sigmabnn:

- *original* space: the target column as given (e.g. a cross section in pb);
- *log space*: ``log10(y)`` for a log target, else the original space;
- *model* space: the log-space target standardised with the training mean and
  std; the network and its likelihood live here.

Arrays are NumPy (JAX arrays are accepted and converted); every method takes
an explicit ``dtype`` (default float64) for its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MIN_STD", "Standardizer", "TargetTransform"]

#: A column whose training std is below this is treated as constant (its std is set to 1).
MIN_STD = 1e-8


def _matrix(a: Any, dtype: Any) -> np.ndarray:
    a = np.asarray(a, dtype=dtype)
    return a[:, None] if a.ndim == 1 else a


def _vector(values: Any, what: str) -> np.ndarray:
    a = np.asarray(values, dtype=np.float64)
    if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)):
        raise ValueError(f"{what} must be a non-empty list of finite numbers")
    return a


@dataclass(frozen=True, eq=False)
class Standardizer:
    """Column-wise ``z = (x - mean) / std`` with statistics from the training rows.

    Attributes:
        mean: ``[p]`` float64 column means.
        std: ``[p]`` float64 column stds (population, ``ddof=0``); a column with
            std < :data:`MIN_STD` is constant and gets std 1 (it is only centred).
    """

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, x: Any) -> Standardizer:
        """Fit on ``x`` ``[n, p]`` (or ``[n]`` for one column); needs ``n >= 1`` finite rows."""
        x = _matrix(x, np.float64)
        if x.ndim != 2 or x.shape[0] < 1:
            raise ValueError(f"cannot fit a standardizer on an array of shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ValueError("cannot fit a standardizer on non-finite values")
        mean = x.mean(axis=0)
        std = x.std(axis=0)
        std = np.where(std < MIN_STD, 1.0, std)
        return cls(mean=mean, std=std)

    @property
    def dim(self) -> int:
        return int(self.mean.shape[0])

    def forward(self, x: Any, dtype: Any = np.float64) -> np.ndarray:
        """``[n, p]`` raw -> standardised, in ``dtype`` (computed in float64, cast once)."""
        x = np.asarray(x, dtype=np.float64)
        one_col = x.ndim == 1
        x = _matrix(x, np.float64)
        if x.shape[-1] != self.dim:
            raise ValueError(f"expected {self.dim} columns, got {x.shape[-1]}")
        z = ((x - self.mean) / self.std).astype(dtype)
        return z[:, 0] if one_col else z

    def inverse(self, z: Any, dtype: Any = np.float64) -> np.ndarray:
        """Standardised -> raw; the last axis of ``z`` has length ``p`` (or ``z`` is ``[n]`` when ``p = 1``)."""
        z = np.asarray(z, dtype=np.float64)
        if z.ndim >= 1 and z.shape[-1] == self.dim:
            return (z * self.std + self.mean).astype(dtype)
        if self.dim == 1:
            return (z * self.std[0] + self.mean[0]).astype(dtype)
        raise ValueError(f"expected a last axis of length {self.dim}, got shape {z.shape}")

    def to_json(self) -> dict[str, Any]:
        return {"mean": [float(v) for v in self.mean], "std": [float(v) for v in self.std]}

    @classmethod
    def from_json(cls, d: Any) -> Standardizer:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on a malformed mapping."""
        if not isinstance(d, dict) or set(d) != {"mean", "std"}:
            raise ValueError("a standardizer needs exactly the fields 'mean' and 'std'")
        mean = _vector(d["mean"], "standardizer mean")
        std = _vector(d["std"], "standardizer std")
        if mean.shape != std.shape or np.any(std <= 0):
            raise ValueError("standardizer mean and std must have equal lengths and std > 0")
        return cls(mean=mean, std=std)


@dataclass(frozen=True, eq=False)
class TargetTransform:
    """Original target -> model space: optional ``log10``, then standardisation.

    Attributes:
        log10: whether the target is modelled as ``log10(y)`` (needs ``y > 0``).
        standardizer: standardisation of the log-space target (one column per
            target), fitted on the training rows.
    """

    log10: bool
    standardizer: Standardizer

    @classmethod
    def fit(cls, y: Any, log10: bool = False) -> TargetTransform:
        """Fit on training targets ``y`` ``[n]`` or ``[n, t]`` (original space)."""
        y = np.asarray(y, dtype=np.float64)
        if log10 and np.any(~(y > 0)):
            raise ValueError(f"log10 target needs positive values; {int(np.sum(~(y > 0)))} are not")
        return cls(log10=bool(log10), standardizer=Standardizer.fit(np.log10(y) if log10 else y))

    @property
    def mean(self) -> np.ndarray:
        """``[t]`` log-space mean."""
        return self.standardizer.mean

    @property
    def scale(self) -> np.ndarray:
        """``[t]`` log-space std: one model-space unit in log-space units."""
        return self.standardizer.std

    def to_log_space(self, y: Any) -> np.ndarray:
        """Original -> log space (``log10`` or identity), float64."""
        y = np.asarray(y, dtype=np.float64)
        return np.log10(y) if self.log10 else y

    def from_log_space(self, u: Any) -> np.ndarray:
        """Log space -> original (``10**u`` or identity), float64."""
        u = np.asarray(u, dtype=np.float64)
        return np.power(10.0, u) if self.log10 else u

    def forward(self, y: Any, dtype: Any = np.float64) -> np.ndarray:
        """Original ``[n]`` / ``[n, t]`` -> model space, same shape, in ``dtype``."""
        return self.standardizer.forward(self.to_log_space(y), dtype=dtype)

    def inverse(self, z: Any, dtype: Any = np.float64) -> np.ndarray:
        """Model-space values or samples (last axis ``t``, or any shape when ``t = 1``) -> original space."""
        return self.from_log_space(self.standardizer.inverse(z)).astype(dtype)

    def inverse_to_log_space(self, z: Any, dtype: Any = np.float64) -> np.ndarray:
        """Model space -> log space (inverse standardisation only)."""
        return self.standardizer.inverse(z, dtype=dtype)

    def to_json(self) -> dict[str, Any]:
        return {"log10": self.log10, **self.standardizer.to_json()}

    @classmethod
    def from_json(cls, d: Any) -> TargetTransform:
        if not isinstance(d, dict) or set(d) != {"log10", "mean", "std"} or not isinstance(d["log10"], bool):
            raise ValueError("a target transform needs the fields 'log10' (bool), 'mean' and 'std'")
        return cls(log10=d["log10"], standardizer=Standardizer.from_json({"mean": d["mean"], "std": d["std"]}))
