"""Acquisition scores against closed forms: BALD of coinciding, separated and normally spread components,
its upper bound, and the pruned search for the best BALD scores."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from sigmabnn.acquisition.regression import (
    aleatoric_variance,
    bald,
    bald_bound,
    epistemic_variance,
    quadrature_nodes,
    relative_epistemic_std,
    top_bald,
)
from sigmabnn.errors import InputError
from sigmabnn.predict.components import Components


def _components(mu: np.ndarray, var: np.ndarray, df: float | None = None, log10: bool = True) -> Components:
    return Components(np.asarray(mu, float)[..., None], np.asarray(var, float)[..., None], df, log10)


@pytest.mark.parametrize("df", [None, 4.0])
def test_bald_is_zero_for_coinciding_components(df):
    mu = np.full((3, 40), 1.7)
    assert np.allclose(bald(_components(mu, np.full((3, 40), 0.2), df)), 0.0, atol=1e-12)


@pytest.mark.parametrize("df", [None, 4.0])
@pytest.mark.parametrize("t_nets", [2, 50])
def test_bald_is_log_t_for_separated_components(df, t_nets):
    mu = np.arange(t_nets)[None, :] * 1e3 * np.ones((2, 1))
    c = _components(mu, np.ones((2, t_nets)), df)
    assert np.allclose(bald(c, max_outer=None), math.log(t_nets), rtol=1e-9)
    # the default outer mean over 32 of the 50 (exact for 2)
    assert np.allclose(bald(c), math.log(t_nets), rtol=1e-9 if t_nets <= 32 else 1e-3)


def test_bald_of_normally_spread_means_is_the_gaussian_channel_information():
    """Means at the T normal quantiles of N(0, s^2), each with noise sigma^2: the mixture tends to
    N(0, s^2 + sigma^2) and I(y; theta) = log(1 + s^2 / sigma^2) / 2."""
    t_nets, s, sigma = 4000, 0.7, 0.3
    mu = s * stats.norm.ppf((np.arange(t_nets) + 0.5) / t_nets)
    mi = bald(_components(mu[None, :], np.full((1, t_nets), sigma**2)), max_outer=None)
    assert mi[0] == pytest.approx(0.5 * math.log1p(s**2 / sigma**2), rel=2e-3)
    # the outer mean over 32 components (the default) in a random order of the draws
    rng = np.random.default_rng(0)
    mi32 = bald(_components(rng.permutation(mu)[None, :], np.full((1, t_nets), sigma**2)))
    assert mi32[0] == pytest.approx(0.5 * math.log1p(s**2 / sigma**2), rel=0.01)


def test_bald_of_two_gaussians_matches_numerical_integration():
    mu, var = np.array([[0.0, 1.3]]), np.array([[0.5, 0.2]])
    y = np.linspace(-12, 12, 200001)
    p = [stats.norm.pdf(y, m, math.sqrt(v)) for m, v in zip(mu[0], var[0])]
    mix = 0.5 * (p[0] + p[1])
    kl = [np.trapezoid(pi * np.log(np.maximum(pi, 1e-300) / np.maximum(mix, 1e-300)), y) for pi in p]
    assert bald(_components(mu, var), nodes=40)[0] == pytest.approx(0.5 * sum(kl), rel=1e-4)


@pytest.mark.parametrize(("df", "k", "rel"), [(None, 10, 1e-12), (10.0, 512, 0.01)])
def test_quadrature_nodes_have_zero_mean_and_unit_variance(df, k, rel):
    x, w = quadrature_nodes(df, k)
    assert w.sum() == pytest.approx(1.0)
    assert np.sum(w * x) == pytest.approx(0.0, abs=1e-12)
    assert np.sum(w * x * x) == pytest.approx(1.0, rel=rel)


@pytest.mark.parametrize("df", [3.0, 5.0])
def test_student_t_nodes_integrate_a_bounded_function_to_the_integral(df):
    """Gauss-Legendre in probability: E[1 / (1 + x^2)] of the unit-variance t, against adaptive quadrature;
    the equal-weight midpoints of the earlier rule are off by more than 10 times as much at 10 nodes."""
    from scipy import integrate

    scale = math.sqrt((df - 2.0) / df)
    exact = integrate.quad(lambda x: stats.t.pdf(x, df, scale=scale) / (1.0 + x * x), -np.inf, np.inf)[0]
    x, w = quadrature_nodes(df, 10)
    error = abs(np.sum(w / (1.0 + x * x)) - exact)
    midpoints = stats.t.ppf((np.arange(10) + 0.5) / 10, df) * scale
    assert error < 2e-3 and error * 10 < abs(np.mean(1.0 / (1.0 + midpoints**2)) - exact)


@pytest.mark.parametrize("df", [3.0, 5.0, 10.0])
def test_bald_of_student_t_mixtures_matches_numerical_integration(df):
    """Random mixtures of 2 to 7 Student-t networks: within 1 % or 0.003 nats of the fine integral at the default
    10 nodes (the earlier quantile midpoints miss it on 8 of these 9 mixtures; ``results/bald_quadrature.md``)."""
    rng = np.random.default_rng(11)
    for _ in range(3):
        n = int(rng.integers(2, 8))
        mu, var = rng.normal(0, rng.choice([0.3, 1.0, 3.0]), size=n), rng.uniform(0.1, 2.0, size=n)
        exact = _mixture_information(mu, var, df)
        assert bald(_components(mu[None, :], var[None, :], df), max_outer=None)[0] == pytest.approx(
            exact, rel=0.01, abs=3e-3
        )


def test_variances_and_relative_std_follow_their_definitions():
    rng = np.random.default_rng(1)
    mu, var = rng.normal(size=(5, 30)), rng.uniform(0.01, 0.1, size=(5, 30))
    c = _components(mu, var)
    assert np.allclose(epistemic_variance(c), mu.var(axis=1))
    assert np.allclose(aleatoric_variance(c), var.mean(axis=1))
    m = 10**mu * np.exp(0.5 * math.log(10) ** 2 * var)
    assert np.allclose(relative_epistemic_std(c), m.std(axis=1) / m.mean(axis=1))
    linear = _components(mu + 5, var, log10=False)
    assert np.allclose(relative_epistemic_std(linear), (mu + 5).std(1) / (mu + 5).mean(1))


def test_bald_refuses_several_targets():
    c = Components(np.zeros((2, 4, 2)), np.ones((2, 4, 2)), None, False)
    with pytest.raises(InputError, match="one target"):
        bald(c)


def _mixture_information(mu: np.ndarray, var: np.ndarray, df: float | None) -> float:
    """I(y; theta) of one point's equal-weight mixture by the trapezoid rule on a fine grid."""
    y = np.linspace(mu.min() - 60, mu.max() + 60, 400001)
    if df is None:
        p = np.array([stats.norm.pdf(y, m, math.sqrt(v)) for m, v in zip(mu, var)])
    else:
        p = np.array([stats.t.pdf(y, df, m, math.sqrt(v * (df - 2) / df)) for m, v in zip(mu, var)])
    mix = p.mean(axis=0)
    return float(np.mean([np.trapezoid(q * np.log(np.maximum(q, 1e-300) / np.maximum(mix, 1e-300)), y) for q in p]))


@pytest.mark.parametrize("df", [None, 5.0])
def test_bald_bound_is_above_the_mutual_information_and_equal_for_one_noise_and_spread_means(df):
    rng = np.random.default_rng(3)
    for _ in range(4):
        mu, var = rng.normal(0, 2, size=6), rng.uniform(0.1, 2.0, size=6)
        exact = _mixture_information(mu, var, df)
        bound = bald_bound(_components(mu[None, :], var[None, :], df))[0]
        assert exact <= bound + 1e-6
        assert bound - exact > 1e-3  # a mixture of separated bumps is far from Gaussian
        assert bald(_components(mu[None, :], var[None, :], df), max_outer=None)[0] <= bound
    # Gaussian networks with one noise variance a and means of variance v: U = log(1 + v / a) / 2
    mu = rng.normal(size=(3, 40))
    u = bald_bound(_components(mu, np.full((3, 40), 0.3)))
    assert np.allclose(u, 0.5 * np.log1p(mu.var(axis=1) / 0.3), rtol=1e-12)


def _spread_points(n: int, t_nets: int, seed: int) -> Components:
    rng = np.random.default_rng(seed)
    spread = rng.lognormal(-1.0, 1.0, size=(n, 1))
    mu = rng.normal(size=(n, 1)) + spread * rng.standard_t(3, size=(n, t_nets))
    return _components(mu, 0.05 * rng.lognormal(0.0, 0.3, size=(n, t_nets)))


@pytest.mark.parametrize("block", [64, 4096])
def test_top_bald_finds_the_best_scores_of_all_points_and_skips_others(monkeypatch, block):
    import sigmabnn.acquisition.regression as module

    monkeypatch.setattr(module, "TOP_BALD_BLOCK", block)
    c, keep = _spread_points(3000, 40, 0), 100
    full = bald(c)
    rows, scores = top_bald(c, keep)
    assert np.all(np.diff(rows) > 0) and np.allclose(scores, full[rows], rtol=1e-10, atol=0)
    best = np.argsort(-full, kind="stable")[:keep]
    assert set(best) <= set(rows)
    assert len(rows) < 3000 if block == 64 else len(rows) <= 3000
    # streamed: the second half with the first half's best as incumbents keeps the same best
    half = Components(c.mean[:1500], c.var[:1500], None, True), Components(c.mean[1500:], c.var[1500:], None, True)
    rows1, scores1 = top_bald(half[0], keep)
    held = scores1[np.argsort(-scores1, kind="stable")[:keep]]
    rows2, scores2 = top_bald(half[1], keep, held)
    union = np.concatenate([rows1, rows2 + 1500])
    merged = np.concatenate([scores1, scores2])
    assert set(union[np.argsort(-merged, kind="stable")[:keep]]) == set(best)
    assert np.allclose(scores2, full[rows2 + 1500], rtol=1e-10, atol=0)
