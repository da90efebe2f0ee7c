"""The temperature search (sigmabnn.temperature): it recovers a known miscalibration, keeps T = 1 when no
temperature helps, and refuses a minimum at the search's lower bound."""

from __future__ import annotations

import numpy as np
import pytest

from sigmabnn.temperature import T_MIN, kept_temperature, pooled_log_probs


def _rows(rng: np.random.Generator, n: int, k: int = 4) -> tuple[np.ndarray, np.ndarray]:
    """Logits ``[n, k]`` and labels drawn from their softmax: a calibrated model at ``T = 1``."""
    f = 2.0 * rng.standard_normal((n, k))
    p = np.exp(f - f.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    y = (p.cumsum(axis=1) > rng.random((n, 1))).argmax(axis=1)
    return f, y


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_the_search_recovers_a_known_temperature(scale):
    """A model whose logits are the calibrated ones times ``scale`` is calibrated again at ``T = scale``."""
    f, y = _rows(np.random.default_rng(1), 4000)
    fit = kept_temperature(_log_softmax(scale * f)[None], y)
    assert fit.temperature == pytest.approx(scale, rel=0.08) and not fit.at_lower_bound
    assert fit.nll < fit.nll_at_one


def test_a_minimum_at_the_lower_bound_is_refused():
    """Every row classified right: the NLL falls without limit as T sharpens; T = 1 is kept, not T_MIN."""
    f, _ = _rows(np.random.default_rng(2), 300)
    y = f.argmax(axis=1)
    fit = kept_temperature(_log_softmax(f)[None], y)
    assert fit.at_lower_bound and fit.temperature == 1.0 and fit.nll == fit.nll_at_one
    # one wrong row puts the minimum inside the range again
    y[0] = (y[0] + 1) % 4
    fit = kept_temperature(_log_softmax(f)[None], y)
    assert not fit.at_lower_bound and T_MIN * 2 < fit.temperature < 1.0


def test_the_pooled_map_searches_the_mean_of_the_networks():
    """Networks each too soft (their logits halved) sharpen as one pooled predictive."""
    rng = np.random.default_rng(3)
    f, y = _rows(rng, 3000)
    nets = np.stack([_log_softmax(0.5 * (f + 0.3 * rng.standard_normal(f.shape))) for _ in range(6)])
    pooled = pooled_log_probs(nets)
    np.testing.assert_allclose(np.exp(pooled[0]), np.exp(nets).mean(axis=0), rtol=1e-12)
    fit = kept_temperature(pooled, y)
    assert 0.3 < fit.temperature < 0.8 and fit.nll < fit.nll_at_one
