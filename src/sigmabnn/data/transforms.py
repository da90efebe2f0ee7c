"""Fitted input and target transforms: standardisation and the optional log10 of the target.

Both are fitted on the *training* rows only and stored in the model file, so
prediction applies exactly the map the network was trained on.

Spaces of the target, as used throughout sigmabnn:

- *original* space: the target column as given (e.g. a cross section in pb);
- *log space*: ``log10(y)`` for a log target, else the original space;
- *model* space: the log-space target, minus an optional baseline, standardised
  with the training mean and std; the network and its likelihood live here.

The optional *baseline* (:class:`LinearBaseline`) is a linear function of named
input features, ``b(x) = c_0 + sum_k c_k x_k``, least-squares fitted to the
log-space target on the training rows. With it the network models the residual
``log10 y - b(x)`` (standardised): where one feature already explains most of
the target (a physics proxy of a cross section), the network only has to learn
the corrections. Prediction adds ``b(x)`` back exactly, so every predictive
quantity in log space is shifted by it and nothing else changes.

Arrays are NumPy (JAX arrays are accepted and converted); every method takes
an explicit ``dtype`` (default float64) for its output.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["MIN_RELATIVE_STD", "LinearBaseline", "Standardizer", "TargetTransform"]

#: A column whose training std is at most this fraction of its largest magnitude is treated as constant
#: (its std is set to 1): relative, so that a column in small units (a cross section of 1e-9 pb, a coupling
#: of 1e-12) is standardised like any other, while a constant column's rounding (about 1e-16 of its value)
#: and variations below 1e-10 of it, which carry no information, are not blown up to unit scale.
MIN_RELATIVE_STD = 1e-10


def _column_moments(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column means and population stds of ``x`` ``[n, p]`` (finite float64). A column so large that its
    squares overflow (magnitudes above about 1e154) is computed on the column divided by its largest
    magnitude, then scaled back, so every finite column gets a finite mean and std."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean, std = x.mean(axis=0), x.std(axis=0)
    over = ~(np.isfinite(mean) & np.isfinite(std))
    if over.any():
        scale = np.abs(x[:, over]).max(axis=0)
        mean[over], std[over] = scale * (x[:, over] / scale).mean(axis=0), scale * (x[:, over] / scale).std(axis=0)
    return mean, std


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
        std: ``[p]`` float64 column stds (population, ``ddof=0``); a column whose std is at
            most :data:`MIN_RELATIVE_STD` times its largest magnitude is constant and gets std 1
            (it is only centred).
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
        mean, std = _column_moments(x)
        std = np.where(std <= MIN_RELATIVE_STD * np.abs(x).max(axis=0), 1.0, std)
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
class LinearBaseline:
    """A log-space baseline ``b(x) = intercept + x[:, features] @ coef`` of raw input features.

    Attributes:
        features: the input feature names it reads (a subset of the model's inputs).
        intercept: ``[t]`` float64.
        coef: ``[k, t]`` float64, one row per feature (raw, unstandardised units).
    """

    features: tuple[str, ...]
    intercept: np.ndarray
    coef: np.ndarray

    @classmethod
    def fit(cls, x: Any, u: Any, features: tuple[str, ...] | list[str]) -> LinearBaseline:
        """Ordinary least squares of the log-space target ``u`` ``[n]``/``[n, t]`` on ``x`` ``[n, k]``."""
        x = _matrix(x, np.float64)
        u = _matrix(u, np.float64)
        if x.shape[1] != len(features) or x.shape[0] != u.shape[0] or x.shape[0] <= x.shape[1]:
            raise ValueError(f"a baseline on {len(features)} features needs more than {len(features)} rows")
        design = np.column_stack([np.ones(x.shape[0]), x])
        sol, _, rank, _ = np.linalg.lstsq(design, u, rcond=None)
        if rank < design.shape[1]:
            raise ValueError(
                f"the baseline features {', '.join(features)} are constant or collinear on the training rows"
            )
        return cls(features=tuple(features), intercept=sol[0], coef=sol[1:])

    def __call__(self, x: Any) -> np.ndarray:
        """``[n, t]`` float64 baseline at ``x`` ``[n, k]`` (the :attr:`features` columns, raw)."""
        return _matrix(x, np.float64) @ self.coef + self.intercept

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(self.features),
            "intercept": [float(v) for v in self.intercept],
            "coef": [[float(v) for v in row] for row in self.coef],
        }

    @classmethod
    def from_json(cls, d: Any) -> LinearBaseline:
        """Inverse of :meth:`to_json`; raises ``ValueError`` on a malformed mapping."""
        if not isinstance(d, dict) or set(d) != {"features", "intercept", "coef"}:
            raise ValueError("a baseline needs exactly the fields 'features', 'intercept' and 'coef'")
        names = d["features"]
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n for n in names):
            raise ValueError("baseline features must be a non-empty list of names")
        intercept = _vector(d["intercept"], "baseline intercept")
        try:
            coef = np.asarray(d["coef"], dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError("baseline coef must be a [features][targets] list of numbers") from None
        if coef.shape != (len(names), intercept.size) or not np.all(np.isfinite(coef)):
            raise ValueError("baseline coef must be a [features][targets] list of finite numbers")
        return cls(features=tuple(names), intercept=intercept, coef=coef)


@dataclass(frozen=True, eq=False)
class TargetTransform:
    """Original target -> model space: optional ``log10``, minus an optional baseline, then standardisation.

    Attributes:
        log10: whether the target is modelled as ``log10(y)`` (needs ``y > 0``).
        standardizer: standardisation of the log-space target (one column per
            target), less the baseline if there is one, fitted on the training rows.
        baseline: the :class:`LinearBaseline` subtracted in log space, or ``None``.
            Methods that map between log and model space then take its value at the
            rows' inputs, ``offset`` ``[n, t]`` (:meth:`offset`).
    """

    log10: bool
    standardizer: Standardizer
    baseline: LinearBaseline | None = None

    @classmethod
    def fit(
        cls,
        y: Any,
        log10: bool = False,
        baseline_x: Any = None,
        baseline_features: tuple[str, ...] | list[str] = (),
    ) -> TargetTransform:
        """Fit on training targets ``y`` ``[n]`` or ``[n, t]`` (original space).

        With ``baseline_features``, ``baseline_x`` ``[n, k]`` holds those raw input columns of the
        training rows, and a :class:`LinearBaseline` is fitted first (least squares in log space).
        """
        y = np.asarray(y, dtype=np.float64)
        if log10 and np.any(~(y > 0)):
            raise ValueError(f"log10 target needs positive values; {int(np.sum(~(y > 0)))} are not")
        u = np.log10(y) if log10 else y
        baseline = None
        if baseline_features:
            baseline = LinearBaseline.fit(baseline_x, u, baseline_features)
            b = baseline(baseline_x)
            u = u - (b[:, 0] if u.ndim == 1 else b)
        return cls(log10=bool(log10), standardizer=Standardizer.fit(u), baseline=baseline)

    @classmethod
    def identity(cls) -> TargetTransform:
        """The transform of a classifier's label codes: no log, no baseline, mean 0 and std 1 (one column)."""
        return cls(log10=False, standardizer=Standardizer(mean=np.zeros(1), std=np.ones(1)))

    def offset(self, x: Any, feature_names: tuple[str, ...] | list[str]) -> np.ndarray | None:
        """The baseline ``[n, t]`` at the raw input matrix ``x`` ``[n, p]`` with columns ``feature_names``.

        ``None`` without a baseline. Raises ``ValueError`` when a baseline feature is not an input.
        """
        if self.baseline is None:
            return None
        return self.baseline(np.asarray(x, dtype=np.float64)[:, self._baseline_columns(feature_names)])

    def _baseline_columns(self, feature_names: tuple[str, ...] | list[str]) -> list[int]:
        """Positions of the baseline's features among ``feature_names`` (``ValueError`` if one is absent)."""
        names = list(feature_names)
        missing = [f for f in self.baseline.features if f not in names]
        if missing:
            raise ValueError(f"baseline feature {missing[0]!r} is not one of the model's inputs")
        return [names.index(f) for f in self.baseline.features]

    def standardized_offset(self, x_transform: Standardizer, feature_names: tuple[str, ...] | list[str]):
        """``(b0 [t], w [p, t])`` float64 with ``offset = b0 + z @ w`` at standardised inputs ``z`` ``[n, p]``.

        Zeros without a baseline. The baseline is linear in the raw inputs, and so in the standardised ones.
        """
        t = self.standardizer.dim
        b0 = np.zeros(t)
        w = np.zeros((len(feature_names), t))
        if self.baseline is None:
            return b0, w
        b0 = self.baseline.intercept.copy()
        for k, j in enumerate(self._baseline_columns(feature_names)):
            w[j] += self.baseline.coef[k] * x_transform.std[j]
            b0 += self.baseline.coef[k] * x_transform.mean[j]
        return b0, w

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

    def _shift(self, u: np.ndarray, offset: Any, sign: float) -> np.ndarray:
        if self.baseline is None:
            return u
        if offset is None:
            raise ValueError("this target transform has a baseline: pass its offset at the rows' inputs")
        b = np.asarray(offset, dtype=np.float64)
        return u + sign * (b[:, 0] if u.ndim == 1 and b.ndim == 2 else b)

    def forward(self, y: Any, dtype: Any = np.float64, offset: Any = None) -> np.ndarray:
        """Original ``[n]`` / ``[n, t]`` -> model space, same shape, in ``dtype``.

        ``offset``: the baseline ``[n, t]`` at these rows (:meth:`offset`); required with a baseline.
        """
        return self.standardizer.forward(self._shift(self.to_log_space(y), offset, -1.0), dtype=dtype)

    def inverse(self, z: Any, dtype: Any = np.float64, offset: Any = None) -> np.ndarray:
        """Model-space values ``[n]`` / ``[n, t]`` -> original space (``offset`` as in :meth:`forward`)."""
        return self.from_log_space(self.inverse_to_log_space(z, offset=offset)).astype(dtype)

    def inverse_to_log_space(self, z: Any, dtype: Any = np.float64, offset: Any = None) -> np.ndarray:
        """Model space -> log space (inverse standardisation, plus the baseline ``offset`` if any)."""
        return self._shift(self.standardizer.inverse(z), offset, 1.0).astype(dtype)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"log10": self.log10, **self.standardizer.to_json()}
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_json()
        return out

    @classmethod
    def from_json(cls, d: Any) -> TargetTransform:
        if (
            not isinstance(d, dict)
            or set(d) - {"baseline"} != {"log10", "mean", "std"}
            or not isinstance(d["log10"], bool)
        ):
            raise ValueError("a target transform needs the fields 'log10' (bool), 'mean' and 'std' (and 'baseline')")
        standardizer = Standardizer.from_json({"mean": d["mean"], "std": d["std"]})
        baseline = LinearBaseline.from_json(d["baseline"]) if "baseline" in d else None
        if baseline is not None and baseline.intercept.size != standardizer.dim:
            raise ValueError("the baseline and the target standardisation have different numbers of targets")
        return cls(log10=d["log10"], standardizer=standardizer, baseline=baseline)
