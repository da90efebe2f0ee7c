"""EPIG: the Gaussian mutual information between a candidate's label and the targets' labels, conditioned batches."""

from __future__ import annotations

import numpy as np
import pytest

from sigmabnn.acquisition.epig import epig_from_rows, greedy_epig_batch


def _covariance(means: np.ndarray) -> np.ndarray:
    c = means - means.mean(axis=1, keepdims=True)
    return c @ c.T / means.shape[1]


def _gaussian_mi(cov: np.ndarray, noise: np.ndarray, j: int, targets: np.ndarray) -> float:
    """Mean over targets t of I(y_j; y_t) = (log det S_jj + log det S_tt - log det S_{jt,jt}) / 2, S = cov + noise."""
    s = cov + np.diag(noise)
    out = []
    for t in targets:
        joint = s[np.ix_([j, t], [j, t])]
        out.append(0.5 * (np.log(s[j, j]) + np.log(s[t, t]) - np.log(np.linalg.det(joint))))
    return float(np.mean(out))


def test_epig_is_the_gaussian_mutual_information_averaged_over_targets():
    rng = np.random.default_rng(0)
    m, n_targets, t_nets = 12, 7, 30
    means = rng.normal(size=(m + n_targets, t_nets)) @ rng.normal(size=(t_nets, t_nets)) * 0.2
    noise = rng.uniform(0.05, 0.5, size=m + n_targets)
    cov = _covariance(means)
    u = (means - means.mean(axis=1, keepdims=True)) / np.sqrt(t_nets)
    got = epig_from_rows(u[:m], noise[:m], u[m:], noise[m:])
    want = [_gaussian_mi(cov, noise, j, np.arange(m, m + n_targets)) for j in range(m)]
    assert got == pytest.approx(want, rel=1e-10)


def test_greedy_scores_are_the_conditional_gaussian_epig():
    """Pick k's score is EPIG under the joint Gaussian of candidates and targets conditioned on the labels of
    picks 0..k-1 (Sigma - Sigma_.B (Sigma_BB + A_B)^-1 Sigma_B.), and it is the best free candidate's."""
    rng = np.random.default_rng(1)
    m, n_targets, t_nets, n = 25, 9, 20, 5
    means = rng.normal(size=(m + n_targets, t_nets)) @ rng.normal(size=(t_nets, t_nets)) * 0.3
    noise = rng.uniform(0.05, 0.5, size=m + n_targets)
    picks = greedy_epig_batch(means[:m], noise[:m], means[m:], noise[m:], n)
    sigma = _covariance(means)
    targets = np.arange(m, m + n_targets)
    for k in range(n):
        b = picks.indices[:k]
        cond = sigma - sigma[:, b] @ np.linalg.solve(sigma[np.ix_(b, b)] + np.diag(noise[b]), sigma[b, :])
        free = np.setdiff1d(np.arange(m), b)
        scores = np.array([_gaussian_mi(cond, noise, j, targets) for j in free])
        assert picks.scores[k] == pytest.approx(scores.max(), rel=1e-8)
        assert picks.indices[k] == free[np.argmax(scores)]


def test_an_uncertain_point_unrelated_to_the_targets_is_not_what_epig_wants():
    """A candidate whose networks disagree most, but independently of the targets (an edge of the input
    space), leads the epistemic variance; EPIG prefers the candidate that moves with the targets."""
    rng = np.random.default_rng(2)
    shared, other = rng.normal(size=40), rng.normal(size=40)
    shared, other = shared - shared.mean(), other - other.mean()
    other -= other @ shared / (shared @ shared) * shared  # uncorrelated with the targets' direction
    candidates = np.vstack([0.5 * shared, 3.0 * other])
    targets = np.vstack([shared * s for s in (0.8, 1.0, 1.2)])
    noise = np.full(2, 0.01)
    u, u_t = candidates / np.sqrt(40), targets / np.sqrt(40)
    scores = epig_from_rows(u, noise, u_t, np.full(3, 0.01))
    assert candidates.var(axis=1).argmax() == 1 and scores.argmax() == 0
    assert scores[1] == pytest.approx(0.0, abs=1e-12)


def test_greedy_epig_takes_each_target_region_before_a_second_copy():
    """Two target regions, each with ten identical candidates: the second pick is in the other region."""
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=30) * 2.0, rng.normal(size=30)
    cand = np.vstack([np.tile(a, (10, 1)), np.tile(b, (10, 1))])
    targets = np.vstack([a, a * 1.1, b, b * 0.9])
    picks = greedy_epig_batch(cand, np.full(20, 1e-3), targets, np.full(4, 1e-3), 2)
    assert (picks.indices[0] < 10) != (picks.indices[1] < 10)
    assert picks.scores[1] > 0


def test_bad_batch_size():
    with pytest.raises(Exception, match="cannot pick"):
        greedy_epig_batch(np.zeros((3, 4)), np.ones(3), np.zeros((2, 4)), np.ones(2), 4)
