"""The training domain: nearest-neighbour distance, its leave-one-out threshold, and what it flags."""

from __future__ import annotations

import numpy as np
import pytest

from sigmabnn.data import domain as domain_module
from sigmabnn.data.domain import Domain


def _brute(z: np.ndarray, ref: np.ndarray, k: int, skip_self: bool) -> np.ndarray:
    out = []
    for i, row in enumerate(z):
        d = np.sqrt(((ref - row) ** 2).sum(axis=1))
        if skip_self:
            d = np.delete(d, i)
        out.append(np.sort(d)[:k].mean())
    return np.array(out)


def test_distance_is_the_mean_distance_to_the_k_nearest_reference_rows(monkeypatch):
    rng = np.random.default_rng(0)
    ref = rng.normal(size=(60, 3))
    dom = Domain.fit(ref, k=4)
    z = rng.normal(size=(25, 3)) * 2
    np.testing.assert_allclose(dom.distance(z), _brute(z, ref, 4, False), rtol=1e-10)
    # the threshold is the 0.99 quantile of the reference rows' leave-one-out distances
    assert dom.threshold == pytest.approx(np.quantile(_brute(ref, ref, 4, True), 0.99), rel=1e-10)
    # chunked evaluation gives the same numbers
    monkeypatch.setattr(domain_module, "_CHUNK_ELEMENTS", 7 * 60)
    np.testing.assert_allclose(dom.distance(z), _brute(z, ref, 4, False), rtol=1e-10)
    assert Domain.fit(ref, k=4).threshold == pytest.approx(dom.threshold, rel=1e-10)


@pytest.mark.parametrize("dim", [1, 3, 10])
def test_held_out_rows_of_the_training_distribution_are_rarely_flagged(dim):
    """About 1 - quantile of fresh in-distribution points are flagged: the issue allows a few percent."""
    rng = np.random.default_rng(dim)
    train = rng.uniform(-1.7, 1.7, size=(800, dim))  # roughly standardised
    held_out = rng.uniform(-1.7, 1.7, size=(4000, dim))
    dom = Domain.fit(train)
    flagged = 1.0 - dom.contains(held_out).mean()
    assert flagged <= 0.03, flagged


def test_points_beyond_the_data_or_in_a_hole_are_flagged():
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, size=(3000, 2))
    x = x[np.linalg.norm(x, axis=1) > 0.5]  # a hole of radius 0.5 in the middle
    dom = Domain.fit(x)
    assert not dom.contains(np.array([[0.0, 0.0], [3.0, 0.0], [0.0, -2.5], [1.8, 1.8]])).any()
    assert dom.contains(np.array([[0.8, 0.0], [-0.7, -0.7], [0.0, 0.9]])).all()


def test_one_dimensional_toy_domain_ends_at_the_data():
    """The toy demo's layout: 50 points on [-10, 10]; points a little past either end are outside."""
    x = np.linspace(-10, 10, 50)[:, None]
    z = (x - x.mean()) / x.std()
    dom = Domain.fit(z)
    grid = (np.array([[-12.0], [-9.0], [0.0], [9.5], [11.0], [20.0]]) - x.mean()) / x.std()
    np.testing.assert_array_equal(dom.contains(grid), [False, True, True, True, False, False])


def test_large_training_sets_keep_a_seeded_subset():
    z = np.random.default_rng(2).normal(size=(5000, 2))
    a = Domain.fit(z, max_reference=300, seed=7)
    b = Domain.fit(z, max_reference=300, seed=7)
    assert a.reference.shape == (300, 2)
    np.testing.assert_array_equal(a.reference, b.reference)
    assert a.threshold == b.threshold


def test_small_and_bad_inputs():
    assert Domain.fit(np.zeros((2, 3))) is None  # too few rows to set a threshold
    dom = Domain.fit(np.arange(8.0).reshape(4, 2))
    assert dom.k == 3  # capped at m - 1
    with pytest.raises(ValueError, match=r"\[n, 2\] inputs"):
        dom.distance(np.zeros((3, 5)))
    with pytest.raises(ValueError, match="k must be from 1 to 3"):
        Domain(reference=np.zeros((4, 2)), k=4, threshold=1.0)
    with pytest.raises(ValueError, match="finite"):
        Domain(reference=np.full((4, 2), np.nan), k=1, threshold=1.0)


def test_coincident_marks_the_reference_rows_and_nothing_near_them():
    rng = np.random.default_rng(3)
    ref = rng.normal(size=(40, 4))
    dom = Domain.fit(ref)
    assert dom.coincident(ref).all()  # each training row has its own inputs, to the rounding of the distance
    assert dom.coincident(ref * 100.0 / 100.0 + 1e-9).all()  # a CSV round trip's last digit is still the row
    assert not dom.coincident(ref + 1e-3).any() and not dom.coincident(rng.normal(size=(30, 4))).any()
    with pytest.raises(ValueError, match=r"\[n, 4\]"):
        dom.coincident(ref[:, :3])
