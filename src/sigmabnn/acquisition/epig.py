"""EPIG: the expected predictive information gain of a label about the predictions where they matter.

BALD scores a candidate by what its label tells about the weights, which rewards points where the
networks disagree most: often the edges of the input space, which the predictions one cares about
rarely visit. EPIG (Bickford Smith, Kirsch, Farquhar, Gal, Foster & Rainforth 2023, "Prediction-
oriented Bayesian active learning", AISTATS) scores it instead by the mutual information between
its label ``y`` and the label ``y*`` at a target input ``x*`` drawn from the inputs where predictions
are wanted, averaged over those targets:

    EPIG(x) = E_{x*} [ I(y; y* | x, x*) ].

Here the joint predictive of ``(y, y*)`` is taken Gaussian (the linear-Gaussian approximation of the
function-space posterior that :mod:`sigmabnn.acquisition.batch` uses): the networks' log-space
means give the epistemic covariance ``k(x, x*) = u_x . u_x*`` (each row ``u`` the draws' centred means
divided by ``sqrt(T)``), each label adds its own aleatoric variance ``a``, and

    I(y; y* | x, x*) = -log(1 - rho^2) / 2,   rho^2 = k(x, x*)^2 / ((k(x, x) + a_x) (k(x*, x*) + a_x*)),

in nats. The mean over ``x*`` runs over ``M`` target rows (a sample of the candidates when none are
given: the pool stands for the inputs of interest). A batch is picked greedily: after each pick
``p`` the candidates' and the targets' rows are conditioned on observing ``y_p`` (the rank-one update
of :mod:`~sigmabnn.acquisition.batch`) and the scores recomputed, so a second point next to ``p``
scores what it adds to ``p``, not what it would have alone. Cost ``O(m M T)`` per pick.

The covariance is the ``T`` draws' own, of rank at most ``T - 1``: from a deep ensemble of a few
members every pair of points looks strongly correlated, and EPIG ranks by little more than the
epistemic variance. It wants tens of draws or more (MCMC chains, VI samples).
"""

from __future__ import annotations

import numpy as np

from sigmabnn.acquisition.batch import BatchPicks, centred_rows, condition_on_pick, greedy_picks
from sigmabnn.errors import InputError

__all__ = ["EPIG_TARGETS", "epig_from_rows", "greedy_epig_batch"]

#: Target rows the mean over ``x*`` runs over by default (a seeded sample of the candidates).
EPIG_TARGETS = 256
#: Candidates per block of the ``[block, M]`` correlation matrix.
_BLOCK = 4096


def epig_from_rows(u: np.ndarray, a: np.ndarray, u_t: np.ndarray, a_t: np.ndarray) -> np.ndarray:
    """``[m]`` EPIG in nats of candidates with rows ``u`` ``[m, T]`` and aleatoric variances ``a`` ``[m]``
    about targets ``u_t`` ``[M, T]``, ``a_t`` ``[M]`` (module docstring); float64."""
    if u.shape[1] != u_t.shape[1]:
        raise InputError(f"candidates and targets come from different draws ({u.shape[1]} and {u_t.shape[1]})")
    tiny = np.finfo(np.float64).tiny
    s = np.sum(u * u, axis=1) + np.asarray(a, np.float64)
    s_t = np.sum(u_t * u_t, axis=1) + np.asarray(a_t, np.float64)
    out = np.empty(len(u))
    for start in range(0, len(u), _BLOCK):
        k = u[start : start + _BLOCK] @ u_t.T  # [b, M]
        rho2 = k * k / np.maximum(s[start : start + _BLOCK, None] * s_t[None, :], tiny)
        out[start : start + _BLOCK] = -0.5 * np.mean(np.log1p(-np.minimum(rho2, 1.0 - 1e-12)), axis=1)
    return out


def greedy_epig_batch(
    draw_means: np.ndarray, aleatoric: np.ndarray, target_means: np.ndarray, target_aleatoric: np.ndarray, n: int
) -> BatchPicks:
    """Pick ``n`` of ``m`` candidates by EPIG, each pick conditioning candidates and targets (module docstring).

    Args:
        draw_means: ``[m, T]`` the networks' log-space means at the candidates (float64).
        aleatoric: ``[m]`` each candidate's noise variance in the same units.
        target_means: ``[M, T]`` the same networks' means at the target inputs.
        target_aleatoric: ``[M]`` the targets' noise variances.
        n: batch size, ``1 <= n <= m``.
    """
    m = len(draw_means)
    if not 1 <= n <= m:
        raise InputError(f"cannot pick {n} of {m} candidates")
    a = np.asarray(aleatoric, np.float64)

    def pick(state: tuple[np.ndarray, np.ndarray], p: int) -> tuple[np.ndarray, np.ndarray]:
        u, u_t = state
        u_p = u[p].copy()
        return condition_on_pick(u, u_p, float(a[p])), condition_on_pick(u_t, u_p, float(a[p]))

    state = (centred_rows(draw_means), centred_rows(target_means))
    return greedy_picks(state, m, n, lambda st: epig_from_rows(st[0], a, st[1], target_aleatoric), pick)
