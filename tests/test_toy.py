"""The toy experiment (Maz 2018): data generation, one quick function, and the full demo (slow)."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

from sigmabnn.errors import InputError
from sigmabnn.workflows.toy import MAZ_SETTINGS, TOY_FUNCTIONS, ToySettings, make_toy_data, run_toy

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_toy_data_grid_noise_and_reproducibility() -> None:
    sine = {f.name: f for f in TOY_FUNCTIONS}["sine"]
    x, y = make_toy_data(jax.random.key(3), sine)
    assert x.shape == y.shape == (50,)
    np.testing.assert_allclose(x, np.linspace(-10, 10, 50))
    assert np.min(np.abs(x)) > 0.2  # 0 (singular for 3 log x^2 and 10/x) is not a training input
    residual = y - sine.fn(x)
    # sample std of 50 N(0, 0.25^2) draws: relative sd ~ 1/sqrt(2 * 49) = 0.1; allow 4 sd
    assert abs(np.std(residual, ddof=1) / 0.25 - 1.0) < 0.4
    x2, y2 = make_toy_data(jax.random.key(3), sine)
    np.testing.assert_array_equal(y, y2)
    assert not np.allclose(y, make_toy_data(jax.random.key(4), sine)[1])


def test_all_six_functions_are_finite_on_the_grids() -> None:
    settings = ToySettings()
    grid = np.linspace(*settings.grid)
    assert len(TOY_FUNCTIONS) == 6
    for f in TOY_FUNCTIONS:
        assert np.all(np.isfinite(f.fn(grid))), f.name
        assert np.all(np.isfinite(make_toy_data(jax.random.key(0), f, settings)[1])), f.name


def test_one_function_quick(tmp_path: Path) -> None:
    settings = ToySettings(num_chains=2, num_warmup=150, num_samples=100, architecture="1-10-10-1")
    (result,) = run_toy(jax.random.key(0), tmp_path, functions=["sine"], settings=settings)
    assert result.figure == tmp_path / "toy_3_sine.png"
    assert result.figure.read_bytes()[:8] == PNG_MAGIC and result.figure.stat().st_size > 10_000
    # inside the data the 95 % predictive interval contains the noise-free function nearly everywhere ...
    assert result.coverage_in_domain >= 0.9
    assert result.rmse_in_domain < 0.5
    # ... and it is much wider away from the data (epistemic uncertainty grows outside [-10, 10])
    assert result.mean_interval_width_out_of_domain > 2.0 * result.mean_interval_width_in_domain
    assert 0.1 < result.noise_std < 0.5  # true noise std 0.25
    assert result.num_divergent >= 0


@pytest.mark.slow
def test_one_function_variational(tmp_path: Path) -> None:
    """Bayes by Backprop after a short MAP start: the interval covers the function in-domain and the
    noise estimate is near the truth (0.25); VI reports no sampler statistics."""
    settings = ToySettings(method="bbb", architecture="1-10-10-1", map_steps=600, num_steps=400, num_draws=200)
    (result,) = run_toy(jax.random.key(0), tmp_path, functions=["quadratic"], settings=settings)
    assert result.method == "bbb" and result.acceptance_rate is None and result.num_divergent is None
    assert result.figure.read_bytes()[:8] == PNG_MAGIC
    assert result.coverage_in_domain >= 0.85, result
    assert result.rmse_in_domain < 0.4, result
    assert 0.15 < result.noise_std < 0.45, result
    assert 0 < result.fit_seconds < result.seconds


def test_maz_settings_and_bad_method(tmp_path: Path) -> None:
    """Maz (2018): 2 x 40 rbf units, alpha = 0.01, M = 10, N = 500 full-batch steps, Bayes by Backprop."""
    assert MAZ_SETTINGS.architecture == "1-40-40-1" and MAZ_SETTINGS.activation == "rbf"
    assert (MAZ_SETTINGS.method, MAZ_SETTINGS.learning_rate) == ("bbb", 0.01)
    assert (MAZ_SETTINGS.num_mc_samples, MAZ_SETTINGS.num_steps) == (10, 500)
    assert (MAZ_SETTINGS.num_points, MAZ_SETTINGS.noise_std, MAZ_SETTINGS.domain) == (50, 0.25, (-10.0, 10.0))
    assert MAZ_SETTINGS.grid[:2] == (-20.0, 20.0) and MAZ_SETTINGS.level == 0.95
    with pytest.raises(InputError, match="unknown toy method"):
        run_toy(jax.random.key(0), tmp_path, functions=["linear"], settings=ToySettings(method="svgd"))


@pytest.mark.heavy  # the whole demo (six NUTS fits, minutes on two cores): an end-to-end run, outside CI's budget
def test_full_demo_covers_the_true_functions_in_domain(tmp_path: Path) -> None:
    results = run_toy(jax.random.key(0), tmp_path)
    assert [r.name for r in results] == [f.name for f in TOY_FUNCTIONS]
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(r.figure.name for r in results)
    coverage = {r.name: r.coverage_in_domain for r in results}
    # at least five of the six functions covered on >= 90 % of the in-domain grid; none below 75 %
    assert sum(c >= 0.9 for c in coverage.values()) >= 5, coverage
    assert min(coverage.values()) >= 0.75, coverage
