"""Batch-aware selection: greedy picks, each conditioning the candidates' epistemic variance on the picks before it.

A batch of the ``n`` best single-point scores is typically ``n`` neighbours in the most uncertain
region: labelling one of them removes most of the others' uncertainty too. :func:`greedy_batch`
picks one point at a time and, after each pick ``p``, updates the epistemic covariance of every
remaining candidate as if ``p`` had been observed, under the linear-Gaussian approximation of the
function-space posterior that the draws give (a posterior-covariance update; the greedy
conditional form of BatchBALD, Kirsch et al. 2019):

- the draws' log-space means at ``m`` candidates, centred and divided by ``sqrt(T)``, are the rows
  of ``U`` ``[m, T]``: the epistemic covariance is ``U U^T``;
- observing ``p`` with noise variance ``a_p`` (its mean aleatoric variance) maps the covariance to
  ``U (I - c u_p u_p^T) U^T`` with ``c = 1 / (|u_p|^2 + a_p)``, written as ``U' U'^T`` with
  ``U' = U - alpha (U u_p) u_p^T``, ``alpha = (1 - sqrt(1 - c |u_p|^2)) / |u_p|^2``; the variances
  become ``v_j - c (u_j . u_p)^2``. Cost ``O(m T)`` per pick.

Each candidate's score is then its :class:`Criterion` 's score with the variance ``v_j`` replaced by
the conditioned ``v'_j``; for BALD the information the batch already holds about ``y_j`` is taken
off under the Gaussian approximation: ``I_j - (log(1 + v_j / a_j) - log(1 + v'_j / a_j)) / 2``, the
chain rule ``I(y_B, y_j; theta) = I(y_B; theta) + I(y_j; theta | y_B)``, so the first pick is the
exact BALD maximiser.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple, TypeVar

import numpy as np

from sigmabnn.errors import InputError
from sigmabnn.predict.mixture import LN10

__all__ = [
    "BatchPicks", "centred_rows", "condition_on_pick", "conditioned_score", "greedy_batch", "greedy_picks", "kth_best",
    "top_scores",
]  # fmt: skip

#: The state a greedy batch carries from pick to pick.
S = TypeVar("S")


class BatchPicks(NamedTuple):
    """Picked rows (indices into the candidates, in pick order) and the score each had when picked."""

    indices: np.ndarray
    scores: np.ndarray


def conditioned_score(criterion: str) -> Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]:
    """``f(score0, v0, v, a) -> score``: a criterion's score at conditioned epistemic variance ``v``,
    from its score ``score0`` at the unconditioned ``v0`` and the aleatoric variance ``a`` (all ``[m]``)."""
    tiny = np.finfo(np.float64).tiny
    if criterion == "variance":
        return lambda s0, v0, v, a: v
    if criterion == "bald":
        return lambda s0, v0, v, a: s0 - 0.5 * (np.log1p(v0 / np.maximum(a, tiny)) - np.log1p(v / np.maximum(a, tiny)))
    if criterion == "relative_std":  # log-normal: relative std sqrt(expm1((ln 10)^2 v))
        return lambda s0, v0, v, a: s0 * np.sqrt(np.expm1(LN10**2 * v) / np.maximum(np.expm1(LN10**2 * v0), tiny))
    raise InputError(f"no batch conditioning for criterion {criterion!r}")


def centred_rows(draw_means: np.ndarray) -> np.ndarray:
    """``[m, T]`` the draws' means centred per row and divided by ``sqrt(T)`` (so ``u u^T`` is the
    draws' covariance); ``draw_means`` ``[m, T]`` in log-space target units, float64."""
    d = np.asarray(draw_means, np.float64)
    return (d - d.mean(axis=1, keepdims=True)) / np.sqrt(d.shape[1])


def condition_on_pick(rows: np.ndarray, u_p: np.ndarray, a_p: float) -> np.ndarray:
    """``rows`` ``U`` after observing the label at ``u_p`` with noise variance ``a_p``: ``U - alpha (U u_p) u_p^T``
    (module docstring); unchanged when ``u_p`` is 0 (no epistemic spread: the label tells nothing)."""
    norm2 = float(u_p @ u_p)
    if norm2 <= 0.0:
        return rows
    c = 1.0 / (norm2 + max(a_p, np.finfo(np.float64).tiny))
    alpha = (1.0 - np.sqrt(max(1.0 - c * norm2, 0.0))) / norm2
    return rows - alpha * np.outer(rows @ u_p, u_p)


def top_scores(scores: np.ndarray, n: int) -> BatchPicks:
    """The ``n`` highest scores, best first (ties by index): the batch-unaware selection."""
    order = np.lexsort((np.arange(scores.size), -scores))[:n]
    return BatchPicks(order, scores[order])


def kth_best(scores: np.ndarray, k: int) -> float:
    """The ``k``-th highest of ``scores`` (``-inf`` while there are fewer than ``k``): a pool's worst kept score."""
    return float(np.partition(scores, len(scores) - k)[len(scores) - k]) if len(scores) >= k else -np.inf


def greedy_batch(
    draw_means: np.ndarray, aleatoric: np.ndarray, scores: np.ndarray, n: int, criterion: str
) -> BatchPicks:
    """Pick ``n`` of ``m`` candidates greedily with conditioning (module docstring).

    Args:
        draw_means: ``[m, T]`` the networks' log-space means at the candidates (float64).
        aleatoric: ``[m]`` each candidate's observation-noise variance in the same units.
        scores: ``[m]`` the criterion's single-point scores.
        n: batch size, ``1 <= n <= m``.
        criterion: ``"variance"``, ``"bald"`` or ``"relative_std"`` (:func:`conditioned_score`).
    """
    m = len(draw_means)
    if not 1 <= n <= m:
        raise InputError(f"cannot pick {n} of {m} candidates")
    update = conditioned_score(criterion)
    u = centred_rows(draw_means)
    v0 = np.sum(u * u, axis=1)
    a = np.asarray(aleatoric, np.float64)

    def pick(state: tuple[np.ndarray, np.ndarray], p: int) -> tuple[np.ndarray, np.ndarray]:
        u, v = state
        up = u[p].copy()
        g = u @ up  # [m] covariance with p
        c = 1.0 / (float(up @ up) + max(float(a[p]), np.finfo(np.float64).tiny))
        return condition_on_pick(u, up, float(a[p])), np.maximum(v - c * g * g, 0.0)

    return greedy_picks((u, v0.copy()), m, n, lambda state: update(scores, v0, state[1], a), pick)


def greedy_picks(state: S, m: int, n: int, score: Callable[[S], np.ndarray], pick: Callable[[S, int], S]) -> BatchPicks:
    """The greedy loop of a conditioned batch: ``n`` times, take the free candidate of highest
    ``score(state)`` (``[m]``) and move to ``pick(state, p)``, the state conditioned on it."""
    free = np.ones(m, bool)
    picks, picked_scores = np.empty(n, np.int64), np.empty(n)
    for k in range(n):
        s = np.where(free, score(state), -np.inf)
        p = int(np.argmax(s))
        picks[k], picked_scores[k], free[p] = p, s[p], False
        state = pick(state, p)
    return BatchPicks(picks, picked_scores)
