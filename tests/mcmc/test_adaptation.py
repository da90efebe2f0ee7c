"""Adaptation building blocks, each alone: dual averaging, Welford, Stan's windows, step-size heuristic."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.mcmc import adaptation as A


def _run_dual_averaging(accept_fn, target, eps0=1.0, n=2000, noise_key=None):
    @jax.jit
    def run(target, eps0, keys):
        def body(state, key):
            a = accept_fn(jnp.exp(state.log_step_size))
            if noise_key is not None:  # Bernoulli acceptance with the given mean
                a = jnp.where(jax.random.uniform(key) < a, 1.0, 0.0)
            return A.dual_averaging_update(state, a, target), None

        return jax.lax.scan(body, A.dual_averaging_init(eps0), keys)[0]

    keys = jax.random.split(noise_key if noise_key is not None else jax.random.key(0), n)
    return run(jnp.asarray(target), jnp.asarray(eps0, jnp.float64), keys)


_exp_accept = lambda eps: jnp.exp(-eps)


@pytest.mark.parametrize("target", [0.234, 0.65, 0.8, 0.95])
@pytest.mark.parametrize("eps0", [1e-3, 1.0, 50.0])
def test_dual_averaging_reaches_target_on_monotone_acceptance(target, eps0):
    state = _run_dual_averaging(_exp_accept, target, eps0=eps0)
    final = A.dual_averaging_final(state)
    assert abs(float(_exp_accept(final)) - target) < 0.02
    assert int(state.step) == 2000


def test_dual_averaging_with_noisy_acceptance():
    accept = lambda eps: 1.0 / (1.0 + (eps / 0.3) ** 2)  # a(0.3) = 0.5
    state = _run_dual_averaging(accept, 0.8, n=4000, noise_key=jax.random.key(3))
    assert abs(float(accept(A.dual_averaging_final(state))) - 0.8) < 0.03


def test_dual_averaging_first_step_matches_algorithm_5():
    s = A.dual_averaging_init(0.5)
    assert np.isclose(float(s.mu), np.log(5.0))
    s1 = A.dual_averaging_update(s, 0.3, 0.8)
    h1 = (0.8 - 0.3) / 11.0
    log_eps1 = np.log(5.0) - np.sqrt(1.0) / 0.05 * h1
    assert np.isclose(float(s1.avg_error), h1)
    assert np.isclose(float(s1.log_step_size), log_eps1)
    assert np.isclose(float(s1.log_step_size_avg), log_eps1)  # eta_1 = 1


def test_dual_averaging_treats_nan_acceptance_as_zero():
    s = A.dual_averaging_init(1.0)
    assert np.allclose(
        np.asarray(A.dual_averaging_update(s, jnp.nan, 0.8)), np.asarray(A.dual_averaging_update(s, 0.0, 0.8))
    )


def _welford(xs, dense):
    init, update, final = (
        (A.welford_covariance_init, A.welford_covariance_update, A.welford_covariance_final)
        if dense
        else (A.welford_init, A.welford_update, A.welford_final)
    )
    state, _ = jax.lax.scan(lambda s, x: (update(s, x), None), init(xs.shape[1]), jnp.asarray(xs))
    return state, final


def test_welford_matches_numpy_mean_and_variance():
    rng = np.random.default_rng(0)
    xs = rng.normal(size=(257, 6)) * np.logspace(-3, 3, 6) + 1e3
    state, final = _welford(xs, dense=False)
    n = xs.shape[0]
    np.testing.assert_allclose(state.mean, xs.mean(0), rtol=1e-12)
    np.testing.assert_allclose(final(state, regularize=False), xs.var(0, ddof=1), rtol=1e-9)
    shrunk = (n / (n + 5)) * xs.var(0, ddof=1) + 1e-3 * 5 / (n + 5)
    np.testing.assert_allclose(final(state), shrunk, rtol=1e-9)


def test_welford_covariance_matches_numpy():
    rng = np.random.default_rng(1)
    a = rng.normal(size=(4, 4))
    xs = rng.normal(size=(300, 4)) @ a.T + 2.0
    state, final = _welford(xs, dense=True)
    n = xs.shape[0]
    cov = np.cov(xs, rowvar=False, ddof=1)
    np.testing.assert_allclose(state.mean, xs.mean(0), rtol=1e-12)
    np.testing.assert_allclose(final(state, regularize=False), cov, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(final(state), (n / (n + 5)) * cov + 1e-3 * 5 / (n + 5) * np.eye(4), rtol=1e-9)


def test_welford_float32_stays_float32():
    s32 = A.welford_update(A.welford_init(3, jnp.float32), jnp.ones(3, jnp.float32))
    assert s32.mean.dtype == jnp.float32 and A.welford_final(s32).dtype == jnp.float32


def _windows(stage, is_end):
    """(initial buffer, [window lengths], terminal buffer) from the schedule arrays."""
    slow = np.flatnonzero(stage == A.STAGE_SLOW)
    if slow.size == 0:
        return len(stage), [], 0
    ends = np.flatnonzero(is_end)
    starts = np.concatenate([[slow[0]], ends[:-1] + 1])
    return int(slow[0]), [int(e - s + 1) for s, e in zip(starts, ends)], int(len(stage) - ends[-1] - 1)


def test_window_schedule_stan_1000():
    stage, is_end = A.window_schedule(1000)
    assert stage.shape == (1000,) and is_end.shape == (1000,) and is_end.dtype == bool
    assert _windows(stage, is_end) == (75, [25, 50, 100, 200, 500], 50)


@pytest.mark.parametrize(
    "n,expected",
    [
        (150, (75, [25], 50)),
        (200, (75, [25, 50], 50)),
        (500, (75, [25, 50, 100, 200], 50)),
        (480, (75, [25, 50, 280], 50)),
        (2000, (75, [25, 50, 100, 200, 400, 1100], 50)),
        (100, (15, [75], 10)),  # too short for the default buffers: 15 % / rest / 10 %
        (40, (6, [30], 4)),
    ],
)
def test_window_schedule_other_lengths(n, expected):
    stage, is_end = A.window_schedule(n)
    assert _windows(stage, is_end) == expected


@pytest.mark.parametrize("n", [0, 1, 5, 19])
def test_window_schedule_very_short_adapts_step_size_only(n):
    stage, is_end = A.window_schedule(n)
    assert stage.shape == (n,) and np.all(stage == A.STAGE_FAST) and not is_end.any()


@pytest.mark.parametrize("n", list(range(20, 400, 29)))
def test_window_schedule_is_consistent(n):
    stage, is_end = A.window_schedule(n)
    init, windows, term = _windows(stage, is_end)
    assert init + sum(windows) + term == n
    assert np.all(stage[:init] == A.STAGE_FAST) and np.all(stage[n - term :] == A.STAGE_FAST)
    assert all(w >= 1 for w in windows) and is_end.sum() == len(windows) >= 1


def test_window_schedule_rejects_negative():
    with pytest.raises(ValueError):
        A.window_schedule(-1)


def test_find_reasonable_step_size_crosses_half():
    accept = lambda eps: jnp.exp(-(eps**2))  # a = 0.5 at eps = sqrt(log 2) ~ 0.83
    for eps0 in [1e-4, 1.0, 1e3]:
        eps = A.find_reasonable_step_size(accept, eps0)
        # the last doubling/halving crossed 0.5: eps within a factor 2 of the crossing point
        assert 0.83 / 2 <= float(eps) <= 0.83 * 2


def _reasonable_reference(accept, eps0, threshold=0.5, max_iterations=100):
    """Hoffman & Gelman (2014) Algorithm 4's doubling/halving, in plain Python."""
    eps = eps0
    direction = 1.0 if accept(eps) > threshold else -1.0
    i = 0
    while direction * (accept(eps) - threshold) > 0 and 1e-12 < eps < 1e7 and i < max_iterations:
        eps *= 2.0**direction
        i += 1
    return eps


@pytest.mark.parametrize("eps0", [1e-4, 0.3, 0.83, 1.0, 7.0, 1e3])
def test_find_reasonable_step_size_matches_the_doubling_rule(eps0):
    accept = lambda eps: float(np.exp(-(eps**2)))
    got = float(A.find_reasonable_step_size(lambda e: jnp.exp(-(e**2)), jnp.float64(eps0)))
    assert got == pytest.approx(_reasonable_reference(accept, eps0), rel=1e-12)


def test_find_reasonable_step_size_traces_the_acceptance_once():
    # the acceptance function holds a gradient in the samplers: one copy in the compiled program
    calls = []

    def accept(eps):
        calls.append(eps)
        return jnp.exp(-(eps**2))

    jax.jit(lambda e: A.find_reasonable_step_size(accept, e)).lower(1.0)
    assert len(calls) == 1


def test_find_reasonable_step_size_inside_jit_and_vmap_with_nan():
    def accept(scale, eps):
        a = jnp.exp(-((eps / scale) ** 2))
        return jnp.where(eps > 100 * scale, jnp.nan, a)  # non-finite counts as 0

    fn = jax.jit(jax.vmap(lambda s: A.find_reasonable_step_size(lambda e: accept(s, e), 1.0)))
    scales = jnp.array([1e-3, 1.0, 1e3])
    eps = fn(scales)
    ratio = np.asarray(eps / scales)
    assert np.all((ratio > 0.83 / 2) & (ratio < 0.83 * 2))
