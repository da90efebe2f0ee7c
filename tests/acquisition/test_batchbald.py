"""BatchBALD (sigmabnn.acquisition.batchbald): the joint-entropy estimate against exact enumeration, the first
pick against BALD, and a batch that skips duplicates where top-k BALD takes them."""

from __future__ import annotations

import itertools

import jax
import numpy as np

from sigmabnn.acquisition.batchbald import batchbald_batch, joint_entropy
from sigmabnn.acquisition.classification import bald, select_batch


def _probs(rng, t: int, n: int, k: int, sharp: float = 2.0) -> np.ndarray:
    z = sharp * rng.standard_normal((t, n, k))
    return np.exp(z) / np.exp(z).sum(axis=-1, keepdims=True)


def _exact_joint_entropy(p: np.ndarray, picked: list[int], i: int) -> float:
    """``H[y_picked, y_i]`` by enumerating every label configuration of the mixture ``mean_t prod p_t``."""
    points = [*picked, i]
    k = p.shape[2]
    h = 0.0
    for config in itertools.product(range(k), repeat=len(points)):
        q = np.mean(np.prod([p[:, j, c] for j, c in zip(points, config)], axis=0))
        h -= q * np.log(q)
    return h


def test_the_sampled_joint_entropy_matches_enumeration_within_monte_carlo_error():
    rng = np.random.default_rng(0)
    p = _probs(rng, t=5, n=6, k=3)
    picked, samples = [0, 1], 40_000
    nets = rng.integers(0, 5, samples)
    log_joint = np.zeros((samples, 5))
    for j in picked:  # labels of the picked candidates drawn from each sample's network, as the greedy loop does
        u = rng.random(samples)[:, None]
        labels = (u > np.cumsum(p[nets, j], axis=1)).sum(axis=1)
        log_joint += np.log(p[:, j, labels].T)
    est = np.asarray(joint_entropy(log_joint, p))
    exact = np.array([_exact_joint_entropy(p, picked, i) for i in range(6)])
    assert np.max(np.abs(est - exact)) < 0.03, (est, exact)  # MC error ~ 1/sqrt(40000) x O(1) nats
    assert np.all(est[2:] > _exact_joint_entropy(p, [0], 1) - 0.03)  # a third label never lowers the entropy


def test_the_first_pick_is_balds_best_and_the_picks_are_distinct():
    p = _probs(np.random.default_rng(1), t=8, n=200, k=10)
    picks, gains = (np.asarray(a) for a in batchbald_batch(jax.random.key(0), p, 10, num_samples=20_000))
    assert picks[0] == int(np.argmax(np.asarray(bald(p))))
    assert len(set(picks.tolist())) == 10 and picks.min() >= 0 and picks.max() < 200
    np.testing.assert_allclose(gains[0], np.max(np.asarray(bald(p))), rtol=1e-9)  # the first gain: BALD's
    # the batch's information about which of the 8 networks holds is at most log 8 nats: the gains use it up
    # (20,000 samples: the greedy maximum's upward Monte-Carlo bias stays below the tolerance)
    assert gains[0] < np.sum(gains) < np.log(8) + 0.05 and np.all(gains > -0.05) and np.all(gains[1:] < gains[0])


def test_blocks_of_candidates_give_the_batch_of_one_block(monkeypatch):
    import sigmabnn.acquisition.batchbald as module

    p = _probs(np.random.default_rng(4), t=6, n=50, k=4)
    whole = np.asarray(module.batchbald_batch(jax.random.key(2), p, 6)[0])
    monkeypatch.setattr(module, "BLOCK", 16)  # 4 blocks, the last padded
    blocked = np.asarray(module.batchbald_batch.__wrapped__(jax.random.key(2), p, 6)[0])  # traced anew, unjitted
    np.testing.assert_array_equal(blocked, whole)


def test_duplicates_of_a_picked_candidate_give_way_to_candidates_with_new_information():
    # 4 confident networks; A splits them {0,1} | {2,3}, B splits them {0,2} | {1,3}, slightly less confidently.
    confident, hedged = np.full((4, 2), 0.01), np.full((4, 2), 0.05)
    confident[[0, 1], 0] = confident[[2, 3], 1] = 0.99
    hedged[[0, 2], 0] = hedged[[1, 3], 1] = 0.95
    a, b = confident[:, None, :], hedged[:, None, :]
    p = np.concatenate([a, a, a, b, b], axis=1)  # candidates 0-2 copies of A, 3-4 copies of B
    top = set(np.asarray(select_batch(bald(p), 2)).tolist())
    assert top <= {0, 1, 2}  # top-k BALD takes two copies of A
    picks = np.asarray(batchbald_batch(jax.random.key(0), p, 2)[0]).tolist()
    assert picks[0] in (0, 1, 2) and picks[1] in (3, 4), picks  # BatchBALD takes A, then B
