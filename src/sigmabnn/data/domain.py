"""The training domain: how far a point lies from the inputs a model was trained on.

A BNN's error bars are only as good as its training data's coverage of the input space:
outside it the networks extrapolate, and their spread says little about the error (the toy
demo's 95 % intervals cover the truth 10-40 % of the time there). :class:`Domain` measures

    ``domain_distance(z) = (1/k) sum_{j=1..k} || z - r_(j) ||``,

the mean Euclidean distance from a point's standardised inputs ``z`` (the network's inputs:
derived features included, each training column at mean 0 and std 1) to its ``k`` nearest
*reference* rows ``r_(1..k)``: the standardised training inputs, at most :data:`MAX_REFERENCE`
of them (an evenly spread random subset of larger training sets). A point is *in the domain*
when its distance is at most :attr:`Domain.threshold`, the :data:`QUANTILE` quantile of the
reference rows' own leave-one-out distances (each to its ``k`` nearest *other* reference rows).
A new point drawn from the training distribution is then flagged with probability about
``1 - QUANTILE`` (1 %), while a point beyond the edge of the data, or in a hole inside it wider
than the data's typical spacing, is flagged.

The nearest-neighbour distance follows the data's shape (a box, a curved band, clusters), which a
Mahalanobis distance, an ellipsoid around the mean, would not. Its cost is one
``[n, m] x p`` distance matrix per chunk of points, small beside evaluating the networks.
Everything is NumPy float64 on the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["COINCIDENT", "K_NEIGHBOURS", "MAX_REFERENCE", "QUANTILE", "Domain"]

K_NEIGHBOURS = 5
"""Nearest reference rows averaged in the distance."""
MAX_REFERENCE = 2000
"""Most reference rows kept (the distance of a point costs ``O(m p)``; the model file stores them)."""
QUANTILE = 0.99
"""Quantile of the reference rows' leave-one-out distances used as the threshold."""
COINCIDENT = 1e-5
"""Largest distance (standardised input units) at which a point counts as having a reference row's inputs:
far below any data's spacing, far above the rounding of the distance computation."""
_CHUNK_ELEMENTS = 2**22  # points x reference rows per distance matrix (32 MB of float64)


@dataclass(frozen=True, eq=False)
class Domain:
    """Reference rows and the threshold of the in-domain test (module docstring).

    Attributes:
        reference: ``[m, p]`` float64 standardised training inputs (``m >= 2``).
        k: nearest reference rows averaged (``1 <= k < m``).
        threshold: largest in-domain distance (standardised input units).
        quantile: the leave-one-out quantile ``threshold`` was set at.
    """

    reference: np.ndarray
    k: int
    threshold: float
    quantile: float = QUANTILE

    def __post_init__(self) -> None:
        ref = np.asarray(self.reference, dtype=np.float64)
        if ref.ndim != 2 or ref.shape[0] < 2 or not np.all(np.isfinite(ref)):
            raise ValueError(f"domain reference rows must be a finite [m >= 2, p] array, got shape {ref.shape}")
        if not 1 <= int(self.k) < ref.shape[0]:
            raise ValueError(f"domain k must be from 1 to {ref.shape[0] - 1}, got {self.k}")
        if not (np.isfinite(self.threshold) and self.threshold >= 0):
            raise ValueError(f"domain threshold must be a finite number >= 0, got {self.threshold}")
        if not 0 < float(self.quantile) <= 1:
            raise ValueError(f"domain quantile must be in (0, 1], got {self.quantile}")
        object.__setattr__(self, "reference", ref)

    @classmethod
    def fit(
        cls,
        z: Any,
        *,
        k: int = K_NEIGHBOURS,
        quantile: float = QUANTILE,
        max_reference: int = MAX_REFERENCE,
        seed: int = 0,
    ) -> Domain | None:
        """The domain of standardised training inputs ``z`` ``[n, p]``; ``None`` with fewer than 3 rows.

        Reference rows: all of ``z`` when ``n <= max_reference``, else ``max_reference`` rows chosen
        by ``numpy.random.default_rng(seed)`` (kept in table order). ``k`` is capped at ``m - 1``.
        """
        z = np.asarray(z, dtype=np.float64)
        if z.ndim != 2:
            raise ValueError(f"domain inputs must be [n, p], got shape {z.shape}")
        if z.shape[0] < 3:
            return None
        ref = z
        if z.shape[0] > max_reference:
            ref = z[np.sort(np.random.default_rng(seed).choice(z.shape[0], max_reference, replace=False))]
        k = min(int(k), ref.shape[0] - 1)
        loo = _knn_distance(ref, ref, k, leave_one_out=True)
        return cls(reference=ref, k=k, threshold=float(np.quantile(loo, quantile)), quantile=float(quantile))

    @property
    def dim(self) -> int:
        """Number of inputs ``p``."""
        return int(self.reference.shape[1])

    def distance(self, z: Any) -> np.ndarray:
        """``[n]`` float64 domain distance of standardised points ``z`` ``[n, p]`` (module docstring)."""
        return _knn_distance(self._points(z), self.reference, int(self.k), leave_one_out=False)

    def coincident(self, z: Any, tol: float = COINCIDENT) -> np.ndarray:
        """``[n]`` bool: whether each standardised point ``z`` ``[n, p]`` has the inputs of a reference row
        (its nearest one within ``tol``): a training row, or a copy of one, scored as if held out."""
        return _knn_distance(self._points(z), self.reference, 1, leave_one_out=False) <= tol

    def _points(self, z: Any) -> np.ndarray:
        """``z`` as a float64 ``[n, p]`` array of this domain's inputs, or :class:`ValueError`."""
        z = np.asarray(z, dtype=np.float64)
        if z.ndim != 2 or z.shape[1] != self.dim:
            raise ValueError(f"domain distance needs [n, {self.dim}] inputs, got shape {z.shape}")
        return z

    def contains(self, z: Any) -> np.ndarray:
        """``[n]`` bool: whether each standardised point is in the domain (distance <= threshold)."""
        return self.distance(z) <= self.threshold


def _knn_distance(z: np.ndarray, ref: np.ndarray, k: int, *, leave_one_out: bool) -> np.ndarray:
    """Mean distance of each row of ``z`` to its ``k`` nearest rows of ``ref`` (``z is ref``: excluding itself)."""
    n, m = z.shape[0], ref.shape[0]
    ref_sq = np.einsum("ij,ij->i", ref, ref)
    chunk = max(1, _CHUNK_ELEMENTS // max(1, m))
    out = np.empty(n, dtype=np.float64)
    for start in range(0, n, chunk):
        block = z[start : start + chunk]
        d2 = np.einsum("ij,ij->i", block, block)[:, None] + ref_sq[None, :] - 2.0 * (block @ ref.T)
        np.maximum(d2, 0.0, out=d2)  # rounding can leave tiny negatives
        if leave_one_out:
            rows = np.arange(block.shape[0])
            d2[rows, start + rows] = np.inf
        nearest = np.partition(d2, k - 1, axis=1)[:, :k]
        out[start : start + block.shape[0]] = np.sqrt(nearest).mean(axis=1)
    return out
