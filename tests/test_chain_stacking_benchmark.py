"""The chain-stacking benchmark's own code (benchmarks/chain_stacking.py): the stacking weights, the
per-chain densities and the rule that would replace equal weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("chain_stacking")


def test_stacking_recovers_the_weights_of_a_known_mixture(bench):
    rng = np.random.default_rng(3)
    comps = [stats.norm(-2, 1), stats.norm(2, 1), stats.norm(0, 5)]
    y = np.concatenate([comps[0].rvs(3000, random_state=rng), comps[1].rvs(1000, random_state=rng)])
    lpd = np.stack([c.logpdf(y) for c in comps], axis=1)
    w = bench.stacking_weights(lpd)
    assert w.sum() == pytest.approx(1.0) and np.all(w >= 0)
    assert w[0] == pytest.approx(0.75, abs=0.03) and w[1] == pytest.approx(0.25, abs=0.03) and w[2] < 0.03
    # the weights maximise the objective: equal weights score lower
    assert bench.mixture_ll(lpd, w).sum() > bench.mixture_ll(lpd, np.full(3, 1 / 3)).sum()


def test_chain_densities_average_each_chains_networks(bench):
    ll = np.log(np.array([[0.1, 0.3, 0.2, 0.2], [0.5, 0.5, 1.0, 3.0]]))  # 2 rows, 2 chains x 2 networks
    got = bench.chain_densities(ll, 2)
    np.testing.assert_allclose(np.exp(got), [[0.2, 0.2], [0.5, 2.0]])
    equal = bench.mixture_ll(got, np.full(2, 0.5))
    np.testing.assert_allclose(equal, np.log(np.exp(ll).mean(axis=1)))  # equal weights: the plain mixture


def test_loo_densities_are_below_the_in_sample_ones(bench):
    rng = np.random.default_rng(0)
    ll = stats.norm.logpdf(rng.normal(size=(40, 1)), loc=rng.normal(0, 0.3, size=(1, 400)))  # 2 chains x 200
    loo, full = bench.chain_loo_densities(ll, 2), bench.chain_densities(ll, 2)
    assert loo.shape == (40, 2) and np.all(loo <= full + 1e-9)


def test_a_rule_replaces_equal_weights_only_beyond_two_standard_errors(bench):
    def rec(eq, loo):
        return {"val_ll": {"equal": eq, "stack-loo": loo, "best-loo": eq - 0.1}}

    clear = bench.summary([rec(0.0, 0.1), rec(0.0, 0.12), rec(0.0, 0.11)])
    assert [r["rule"] for r in clear] == ["stack-loo", "best-loo"]
    assert clear[0]["replaces_equal"] and not clear[1]["replaces_equal"]
    noisy = bench.summary([rec(0.0, 0.3), rec(0.0, -0.2), rec(0.0, 0.05)])
    assert noisy[0]["se"] == pytest.approx(0.25 / math.sqrt(3)) and not noisy[0]["replaces_equal"]
