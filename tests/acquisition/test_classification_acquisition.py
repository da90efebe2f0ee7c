"""Acquisition scores of a classifier against hand-computed cases."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from sigmabnn.acquisition.classification import (
    bald,
    classification_scores,
    max_entropy,
    select_batch,
    stochastic_batch,
    variation_ratios,
)

LN2 = np.log(2.0)


def test_bald_of_confident_disagreeing_networks_is_ln2_and_zero_for_agreeing_ones():
    # point 0: two networks certain of different classes -> H[mean] = ln 2, mean H = 0, BALD = ln 2.
    # point 1: both networks 50/50 -> H[mean] = ln 2, mean H = ln 2, BALD = 0 (aleatoric only).
    p = np.array([[[1.0, 0.0], [0.5, 0.5]], [[0.0, 1.0], [0.5, 0.5]]])
    np.testing.assert_allclose(np.asarray(max_entropy(p)), [LN2, LN2], rtol=1e-12)
    np.testing.assert_allclose(np.asarray(bald(p)), [LN2, 0.0], atol=1e-12)
    np.testing.assert_allclose(np.asarray(variation_ratios(p)), [0.5, 0.5], rtol=1e-12)


def test_bald_against_a_three_class_hand_computation():
    p1, p2 = np.array([0.7, 0.2, 0.1]), np.array([0.1, 0.6, 0.3])
    mean = (p1 + p2) / 2

    def h(q):
        return -np.sum(q * np.log(q))

    expected = h(mean) - (h(p1) + h(p2)) / 2
    got = float(bald(np.stack([p1, p2])[:, None, :])[0])
    assert got == pytest.approx(expected, rel=1e-12)
    assert float(variation_ratios(np.stack([p1, p2])[:, None, :])[0]) == pytest.approx(1 - 0.4, rel=1e-12)


def test_select_batch_takes_the_highest_scores_ties_to_the_lower_index():
    idx = np.asarray(select_batch(np.array([0.1, 0.9, 0.5, 0.9, 0.0]), 3))
    assert idx.tolist() == [1, 3, 2]


def test_random_scores_depend_on_the_key_and_unknown_criterion_is_refused():
    p = np.full((3, 50, 4), 0.25)
    a = np.asarray(classification_scores(jax.random.key(0), "random", p))
    b = np.asarray(classification_scores(jax.random.key(1), "random", p))
    assert a.shape == (50,) and not np.allclose(a, b)
    with pytest.raises(ValueError, match="unknown criterion"):
        classification_scores(jax.random.key(0), "margin", p)


def test_power_batch_first_pick_frequencies_follow_the_scores():
    # one pick: P(i) = s_i / sum s (power, beta 1); 4,000 draws, tolerance ~4 binomial standard errors
    scores = np.array([0.0, 1.0, 2.0, 5.0, 2.0])
    keys = jax.random.split(jax.random.key(3), 4000)
    picks = np.array([int(stochastic_batch(k, scores, 1)[0]) for k in keys[:4000]])
    freq = np.bincount(picks, minlength=5) / picks.size
    expected = scores / scores.sum()
    np.testing.assert_allclose(freq, expected, atol=4 * np.sqrt(0.25 / picks.size))
    assert freq[0] == 0.0  # a zero score is never drawn while positive ones remain


def test_softmax_batch_weights_are_exp_beta_score():
    scores = np.array([0.0, np.log(3.0)])  # exp(score) = 1, 3 -> P(1) = 3/4
    keys = jax.random.split(jax.random.key(5), 3000)
    picks = np.array([int(stochastic_batch(k, scores, 1, mode="softmax")[0]) for k in keys])
    assert np.mean(picks == 1) == pytest.approx(0.75, abs=4 * np.sqrt(0.1875 / picks.size))


def test_stochastic_batch_draws_distinct_rows_and_tends_to_the_top_scores():
    scores = np.array([0.1, 0.9, 0.5, 0.8, 0.0, 0.3])
    idx = np.asarray(stochastic_batch(jax.random.key(0), scores, 6))
    assert sorted(idx.tolist()) == list(range(6)) and idx[-1] == 4  # the zero score comes last
    sharp = np.asarray(stochastic_batch(jax.random.key(0), scores, 3, beta=1e4))
    assert sharp.tolist() == np.asarray(select_batch(scores, 3)).tolist()
    with pytest.raises(ValueError, match="unknown stochastic batch mode"):
        stochastic_batch(jax.random.key(0), scores, 2, mode="gumbel")
