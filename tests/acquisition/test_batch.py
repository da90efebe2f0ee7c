"""Greedy batch selection: the conditioned variances are the Gaussian posterior's; clusters are not picked twice."""

from __future__ import annotations

import numpy as np
import pytest

from sigmabnn.acquisition.batch import greedy_batch, top_scores


def test_conditioned_variances_equal_the_gaussian_conditional():
    """After the picks B the score of every candidate is its conditional variance
    Sigma_jj - Sigma_jB (Sigma_BB + A_B)^-1 Sigma_Bj, Sigma the draws' covariance."""
    rng = np.random.default_rng(0)
    m, t_nets, n = 40, 25, 6
    means = rng.normal(size=(m, t_nets)) @ rng.normal(size=(t_nets, t_nets)) * 0.3
    noise = rng.uniform(0.05, 0.5, size=m)
    picks = greedy_batch(means, noise, means.var(axis=1), n, "variance")
    centred = means - means.mean(axis=1, keepdims=True)
    sigma = centred @ centred.T / t_nets
    for k in range(n):
        b = picks.indices[:k]
        cond = sigma - sigma[:, b] @ np.linalg.solve(sigma[np.ix_(b, b)] + np.diag(noise[b]), sigma[b, :])
        free = np.setdiff1d(np.arange(m), b)
        assert picks.scores[k] == pytest.approx(np.diag(cond)[picks.indices[k]], rel=1e-9)
        assert picks.indices[k] == free[np.argmax(np.diag(cond)[free])]


@pytest.mark.parametrize("criterion", ["variance", "bald", "relative_std"])
def test_greedy_batch_spreads_over_clusters_where_top_scores_do_not(criterion):
    """Two regions, ten copies each, the first more uncertain: the top scores are all in the first,
    the greedy batch takes one point of each before a second copy."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=30) * 2.0, rng.normal(size=30)
    means = np.vstack([np.tile(a, (10, 1)), np.tile(b, (10, 1))])
    noise = np.full(20, 1e-3)
    score = means.var(axis=1)
    if criterion == "bald":
        score = 0.5 * np.log1p(score / noise)
    elif criterion == "relative_std":
        score = np.sqrt(np.expm1(np.log(10) ** 2 * score))
    top = top_scores(score, 2).indices
    assert set(top) <= set(range(10))
    greedy = greedy_batch(means, noise, score, 2, criterion).indices
    assert greedy[0] < 10 <= greedy[1]
