"""ChEES-HMC: jitter, criterion gradient, Adam on log T, pooled moments, the shared trajectory, known posteriors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from _targets import assert_moments, correlated_cov, gaussian

from sigmabnn.io.checkpoint import Checkpoint
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc import chees
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample

# --------------------------------------------------------------------------- exact Gaussian dynamics


def _exact_flow(x0, p0, sigma, t):
    """Hamiltonian flow of N(0, diag sigma^2) with unit mass for time ``t``: position and velocity."""
    w = t / sigma
    return x0 * jnp.cos(w) + sigma * p0 * jnp.sin(w), -x0 / sigma * jnp.sin(w) + p0 * jnp.cos(w)


def _criterion(previous, proposed, acceptance, prev_mean, prop_mean):
    """1/4 sum_c a_c (||q'_c - qbar'||^2 - ||q_c - qbar||^2)^2 / sum_c a_c, with the means given."""
    change = np.sum((proposed - prop_mean) ** 2, -1) - np.sum((previous - prev_mean) ** 2, -1)
    return 0.25 * np.sum(acceptance * change**2) / np.sum(acceptance)


# --------------------------------------------------------------------------- jitter and step counts


def test_halton_is_the_base2_radical_inverse_and_fills_the_unit_interval_evenly():
    first = np.asarray([chees.halton(i) for i in range(7)])
    np.testing.assert_allclose(first, [1 / 2, 1 / 4, 3 / 4, 1 / 8, 5 / 8, 3 / 8, 7 / 8])
    u = np.asarray(jax.vmap(chees.halton)(jnp.arange(1023)))
    assert np.all((u > 0) & (u < 1))
    # the first 2^k - 1 elements are exactly the multiples of 2^-k: one in each cell of width 2^-k
    np.testing.assert_array_equal(np.sort(np.round(u * 1024)), np.arange(1, 1024))


def test_num_integration_steps_is_the_ceiling_of_the_jittered_length_clipped():
    n = chees.num_integration_steps
    assert int(n(0.5, jnp.asarray(1.0), jnp.asarray(0.1), 100)) == 5
    assert int(n(0.51, jnp.asarray(1.0), jnp.asarray(0.1), 100)) == 6
    assert int(n(1e-9, jnp.asarray(1.0), jnp.asarray(0.1), 100)) == 1
    assert int(n(0.9, jnp.asarray(1e3), jnp.asarray(0.1), 100)) == 100
    assert int(n(0.5, jnp.asarray(jnp.nan), jnp.asarray(0.1), 100)) == 1


# --------------------------------------------------------------------------- the across-chain estimators


def test_criterion_gradient_matches_finite_differences_of_the_exact_flow():
    """On a Gaussian with exact dynamics the estimator is d/dT of the a-weighted criterion (means held fixed)."""
    k1, k2, k3 = jax.random.split(jax.random.key(3), 3)
    sigma = jnp.geomspace(0.3, 3.0, 6)
    x0 = jax.random.normal(k1, (12, 6)) * sigma
    p0 = jax.random.normal(k2, (12, 6))
    a = np.asarray(jax.random.uniform(k3, (12,), minval=0.2, maxval=1.0))
    u, T = 0.625, 1.7
    prop, vel = _exact_flow(x0, p0, sigma, u * T)
    estimate = float(chees.criterion_gradient(x0, prop, vel, jnp.asarray(a), u))

    prev_mean = np.mean(np.asarray(x0), 0)
    prop_mean = np.sum(a[:, None] * np.asarray(prop), 0) / np.sum(a)
    h = 1e-5

    def f(t):
        return _criterion(np.asarray(x0), np.asarray(_exact_flow(x0, p0, sigma, u * t)[0]), a, prev_mean, prop_mean)

    fd = (f(T + h) - f(T - h)) / (2 * h)
    assert abs(fd) > 1e-3  # a non-trivial slope
    np.testing.assert_allclose(estimate, fd, rtol=1e-6)


def test_criterion_gradient_ignores_chains_without_weight_and_non_finite_proposals():
    x0 = jnp.array([[0.0, 1.0], [1.0, -1.0], [2.0, 0.5]])
    prop = jnp.array([[0.5, 1.5], [1.5, -0.5], [jnp.nan, jnp.inf]])
    vel = jnp.ones((3, 2))
    g = chees.criterion_gradient(x0, prop, vel, jnp.array([1.0, 0.5, 0.0]), 0.5)
    # the third chain has weight 0: only the previous-position mean sees it
    prev_mean = np.mean(np.asarray(x0), 0)
    prop_mean = (1.0 * np.array([0.5, 1.5]) + 0.5 * np.array([1.5, -0.5])) / 1.5
    change = [
        np.sum((np.asarray(prop[c]) - prop_mean) ** 2) - np.sum((np.asarray(x0[c]) - prev_mean) ** 2) for c in (0, 1)
    ]
    dot = [np.sum(np.asarray(prop[c]) - prop_mean) for c in (0, 1)]
    expected = (1.0 * 0.5 * change[0] * dot[0] + 0.5 * 0.5 * change[1] * dot[1]) / 1.5
    np.testing.assert_allclose(float(g), expected, rtol=1e-10)
    assert float(chees.criterion_gradient(x0, prop, vel, jnp.zeros(3), 0.5)) == 0.0


def test_criterion_gradient_with_per_chain_centres_matches_finite_differences():
    """``centre`` given: each chain's change is measured from its own centre (held fixed), and chains without
    a centre (``has_centre`` false) keep the across-chain means."""
    k1, k2, k3, k4 = jax.random.split(jax.random.key(4), 4)
    sigma = jnp.geomspace(0.3, 3.0, 5)
    modes = 40.0 * jax.random.normal(k4, (8, 5))  # eight chains in eight far-apart modes
    x0 = jax.random.normal(k1, (8, 5)) * sigma
    p0 = jax.random.normal(k2, (8, 5))
    a = np.asarray(jax.random.uniform(k3, (8,), minval=0.2, maxval=1.0))
    u, T = 0.4, 2.3
    prop, vel = _exact_flow(x0, p0, sigma, u * T)
    estimate = float(chees.criterion_gradient(x0 + modes, prop + modes, vel, jnp.asarray(a), u, None, modes))
    h = 1e-5

    def f(t):
        moved = np.asarray(_exact_flow(x0, p0, sigma, u * t)[0])
        return _criterion(np.asarray(x0), moved, a, 0.0, 0.0)  # every chain about its own mode

    fd = (f(T + h) - f(T - h)) / (2 * h)
    assert abs(fd) > 1e-3
    np.testing.assert_allclose(estimate, fd, rtol=1e-6)
    # no chain has a centre: the across-chain estimate, exactly
    none = jnp.zeros(8, bool)
    across = chees.criterion_gradient(x0 + modes, prop + modes, vel, jnp.asarray(a), u)
    masked = chees.criterion_gradient(x0 + modes, prop + modes, vel, jnp.asarray(a), u, None, modes, none)
    assert float(masked) == float(across)


def test_harmonic_mean_of_acceptance():
    np.testing.assert_allclose(float(chees.harmonic_mean(jnp.array([0.5, 1.0, 0.25]))), 3 / (2 + 1 + 4))
    assert float(chees.harmonic_mean(jnp.array([0.9, 0.0, 0.8]))) == 0.0
    assert float(chees.harmonic_mean(jnp.array([0.9, jnp.nan]))) == 0.0


def test_mean_acceptance_is_the_arithmetic_mean_with_non_finite_as_zero():
    np.testing.assert_allclose(float(chees.mean_acceptance(jnp.array([0.5, 1.0, 0.25]))), 1.75 / 3)
    np.testing.assert_allclose(float(chees.mean_acceptance(jnp.array([0.9, 0.0, 0.8]))), 1.7 / 3)  # not 0
    np.testing.assert_allclose(float(chees.mean_acceptance(jnp.array([0.9, jnp.nan]))), 0.45)
    assert set(chees.ACCEPTANCE_STATISTICS) == {"harmonic", "mean", "harmonic-running"}


def test_running_acceptance_forgets_one_zero_but_not_a_stuck_chain():
    """An exponential average with weight 0.05: one iteration at zero moves a chain's value by 5 %, twenty in
    a row take it to 0.95**20 of its value; a non-finite acceptance counts as 0."""
    avg = jnp.array([0.9, 0.9])
    once = chees.running_acceptance(avg, jnp.array([0.0, jnp.nan]))
    np.testing.assert_allclose(np.asarray(once), [0.855, 0.855], rtol=1e-12)
    stuck = avg
    for _ in range(20):
        stuck = chees.running_acceptance(stuck, jnp.array([0.0, 0.9]))
    np.testing.assert_allclose(np.asarray(stuck), [0.9 * 0.95**20, 0.9], rtol=1e-12)
    assert float(chees.harmonic_mean(once)) > 0.8 > 0.5 > float(chees.harmonic_mean(stuck))


def test_the_step_size_targets_the_chosen_statistic_of_the_chains_acceptance():
    """One chain at zero acceptance: the harmonic mean is 0, below the target, so dual averaging's first step
    lands below its centre ``10 eps_0``; the arithmetic mean (0.71) is above the target, so it lands above."""
    state = chees.ChEESAdaptationState(
        jnp.asarray(0.1), jnp.asarray(1.0), jnp.ones(2), adapt.dual_averaging_init(jnp.asarray(0.1)),
        chees.trajectory_init(jnp.asarray(1.0)),
    )  # fmt: skip
    x = jnp.zeros((4, 2))
    args = dict(previous=x, proposed=x + 0.1, velocity=x + 1.0, jitter=jnp.asarray(0.5), target_accept=0.651,
                max_num_steps=100, acceptance=jnp.array([0.0, 0.95, 0.95, 0.95]))  # fmt: skip
    harmonic = chees.adaptation_update(state, **args)
    mean = chees.adaptation_update(state, **args, acceptance_statistic="mean")
    assert float(harmonic.step_size) < 10 * 0.1 < float(mean.step_size)
    # the running statistic reads the chains' running acceptances, not the iteration's: here 0.855 for the
    # chain that just met a zero, so it lands above the centre like the mean
    running = jnp.array([0.855, 0.9, 0.9, 0.9])
    run = chees.adaptation_update(state, **args, acceptance_statistic="harmonic-running", running=running)
    assert 10 * 0.1 < float(run.step_size)
    with pytest.raises(ValueError, match="running acceptance"):
        chees.adaptation_update(state, **args, acceptance_statistic="harmonic-running")


def test_mass_matrix_is_the_mean_within_chain_variance_blind_to_distances_between_chains():
    x = np.asarray(jax.random.normal(jax.random.key(0), (30, 4, 3))) * np.array([0.1, 1.0, 10.0])
    x = x + 100.0 * np.arange(4)[None, :, None]  # four chains far apart (four modes)
    state = jax.vmap(lambda _: adapt.welford_init(3))(jnp.arange(4))
    for batch in x:
        state = jax.vmap(adapt.welford_update)(state, jnp.asarray(batch))
    n = 30
    within = np.mean(x.var(0, ddof=1), axis=0)  # [d]: the chains' own variances, averaged
    expected = (n / (n + 5.0)) * within + 1e-3 * (5.0 / (n + 5.0))  # Stan's shrinkage, per chain
    np.testing.assert_allclose(np.asarray(chees.mean_within_chain_variance(state)), expected, rtol=1e-12)
    assert np.all(np.asarray(chees.mean_within_chain_variance(state)) < 200.0)  # not the pooled ~ 100^2


# --------------------------------------------------------------------------- Adam on log T


def test_trajectory_update_is_a_normalised_ascent_step_with_clipping_and_averaging():
    s = chees.trajectory_init(2.0)
    assert float(chees.trajectory_final(s)) == pytest.approx(2.0)  # no update yet: the start
    s1 = chees.trajectory_update(s, 123.0, learning_rate=0.1)  # first step: g / sqrt(g^2) = 1
    np.testing.assert_allclose(float(s1.log_trajectory_length), np.log(2.0) + 0.1)
    s2 = chees.trajectory_update(s1, -1e-3, learning_rate=0.1)  # tiny against the running scale: a tiny step
    assert np.log(2.0) + 0.09 < float(s2.log_trajectory_length) < np.log(2.0) + 0.1
    s3 = chees.trajectory_update(s, 1.0, learning_rate=10.0)  # clipped
    np.testing.assert_allclose(float(s3.log_trajectory_length), np.log(2.0) + 0.35)
    s4 = chees.trajectory_update(s, jnp.nan)
    assert float(s4.log_trajectory_length) == pytest.approx(np.log(2.0))
    # the average: weight 1 at the first update, then n^-1/2
    np.testing.assert_allclose(float(s1.log_trajectory_length_avg), float(s1.log_trajectory_length))
    w = 2**-0.5
    expected = w * float(s2.log_trajectory_length) + (1 - w) * float(s1.log_trajectory_length_avg)
    np.testing.assert_allclose(float(s2.log_trajectory_length_avg), expected)
    np.testing.assert_allclose(float(chees.trajectory_final(s2)), np.exp(expected))


def test_trajectory_length_climbs_to_the_chees_optimum_of_an_anisotropic_gaussian():
    """The triple alone, fed with exact-dynamics proposals from N(0, diag sigma^2) (unit mass, 64 chains).

    The jittered criterion is J(T) = sum_i sigma_i^4 (1/2 - sigma_i sin(2T/sigma_i) / (4T)), maximal near
    2.25 sigma_max: T must grow from far below to that optimum, set by the widest direction.
    """
    sigma = jnp.geomspace(0.1, 3.0, 10)
    grid = np.linspace(0.5, 20.0, 4000)
    s = np.asarray(sigma)[:, None]
    j = np.sum(s**4 * (0.5 - s * np.sin(2 * grid / s) / (4 * grid)), axis=0)
    t_star = grid[np.argmax(j)]
    assert 2.0 * 3.0 < t_star < 2.5 * 3.0

    def body(state, xs):
        n, key = xs
        k1, k2 = jax.random.split(key)
        x0 = jax.random.normal(k1, (64, 10)) * sigma
        p0 = jax.random.normal(k2, (64, 10))
        u = chees.halton(n)
        t = jnp.exp(state.log_trajectory_length)
        prop, vel = _exact_flow(x0, p0, sigma, u * t)
        g = chees.criterion_gradient(x0, prop, vel, jnp.ones(64), u)
        return chees.trajectory_update(state, g), t

    n = 600
    state, path = jax.jit(lambda s: jax.lax.scan(body, s, (jnp.arange(n), jax.random.split(jax.random.key(1), n))))(
        chees.trajectory_init(0.05)
    )
    final = float(chees.trajectory_final(state))
    assert float(path[0]) == pytest.approx(0.05)
    assert 0.75 * t_star < final < 1.33 * t_star, (final, t_star)


def _adapt_on_modes(sigma, modes, within: bool, n: int = 600):
    """The triple fed with exact-dynamics proposals of N(mode_c, diag sigma^2) per chain (unit mass)."""
    num_chains, d = modes.shape

    def body(state, xs):
        i, key = xs
        k1, k2 = jax.random.split(key)
        x0 = jax.random.normal(k1, (num_chains, d)) * sigma
        p0 = jax.random.normal(k2, (num_chains, d))
        u = chees.halton(i)
        prop, vel = _exact_flow(x0, p0, sigma, u * jnp.exp(state.log_trajectory_length))
        centre = modes if within else None
        g = chees.criterion_gradient(x0 + modes, prop + modes, vel, jnp.ones(num_chains), u, None, centre)
        return chees.trajectory_update(state, g), None

    keys = jax.random.split(jax.random.key(1), n)
    state, _ = jax.jit(lambda s: jax.lax.scan(body, s, (jnp.arange(n), keys)))(chees.trajectory_init(0.05))
    return float(chees.trajectory_final(state))


def test_chains_in_separate_modes_adapt_the_single_mode_optimum_only_with_their_own_centres():
    """Two groups of chains in modes 200 apart (each mode N(., diag sigma^2)): centred on each chain's own mode
    (``centre="within"``), T reaches the one-mode ChEES optimum of the previous test; the across-chain centre,
    between the modes, stops T well below it."""
    sigma = jnp.geomspace(0.1, 3.0, 10)
    grid = np.linspace(0.5, 20.0, 4000)
    s = np.asarray(sigma)[:, None]
    t_star = grid[np.argmax(np.sum(s**4 * (0.5 - s * np.sin(2 * grid / s) / (4 * grid)), axis=0))]
    modes = jnp.zeros((64, 10)).at[:32, 0].set(-100.0).at[32:, 0].set(100.0).at[:32, 3].set(50.0)
    within = _adapt_on_modes(sigma, modes, within=True)
    across = _adapt_on_modes(sigma, modes, within=False)
    assert 0.75 * t_star < within < 1.33 * t_star, (within, t_star)
    assert across < 0.75 * t_star, (across, t_star)


def test_running_centre_is_the_mean_then_an_exponential_average_and_frozen_outside_adaptation():
    x = np.asarray(jax.random.normal(jax.random.key(2), (120, 2, 3)))
    centre, count = jnp.zeros((2, 3)), jnp.zeros(2, jnp.int32)
    for i, pos in enumerate(x):
        centre, count = chees._centre_update(centre, count, jnp.asarray(pos), jnp.asarray(True))
        if i + 1 == chees.CENTRE_WINDOW:  # the plain mean of the first CENTRE_WINDOW positions
            np.testing.assert_allclose(np.asarray(centre), x[: i + 1].mean(0), rtol=1e-10, atol=1e-12)
    expected = x[: chees.CENTRE_WINDOW].mean(0)
    for pos in x[chees.CENTRE_WINDOW :]:
        expected = expected + (pos - expected) / chees.CENTRE_WINDOW
    np.testing.assert_allclose(np.asarray(centre), expected, rtol=1e-10, atol=1e-12)
    assert np.all(np.asarray(count) == 120)
    frozen = chees._centre_update(centre, count, jnp.ones((2, 3)) * 9.0, jnp.asarray(False))
    np.testing.assert_array_equal(np.asarray(frozen[0]), np.asarray(centre))
    np.testing.assert_array_equal(np.asarray(frozen[1]), np.asarray(count))


# --------------------------------------------------------------------------- the sampler


def _ld(x, _):
    return -0.5 * jnp.sum((x / jnp.array([0.5, 2.0, 1.0], x.dtype)) ** 2)


def _run(init=None, **settings):
    init = jnp.zeros((4, 3)) + 0.5 if init is None else init
    config = RunConfig(num_warmup=60, num_samples=40, chunk_size=20, split_chains=False)
    return sample(jax.random.key(0), make_algorithm("chees", **settings), _ld, init, None, config, progress=False)


def test_all_chains_take_the_same_jittered_number_of_steps_and_results_keep_their_shapes():
    r = _run(init=jnp.zeros((4, 3), jnp.float32) + 0.5)
    steps = np.asarray(r.info.num_integration_steps)
    warm = np.asarray(r.warmup_info.num_integration_steps)
    assert np.all(steps == steps[:1]) and np.all(warm == warm[:1])  # the same count for every chain
    assert len(np.unique(steps[0])) > 1  # ... jittered from one iteration to the next
    # every chain holds the same adapted parameters
    assert isinstance(r.adapted, chees.ChEESAdaptedParameters)
    for leaf in r.adapted:
        assert np.all(np.asarray(leaf) == np.asarray(leaf)[:1])
    # sampling: ceil(halton(n) * T / eps) with the adapted T and eps
    eps, t = float(r.adapted.step_size[0]), float(r.adapted.trajectory_length[0])
    expected = [max(1, int(np.ceil(float(chees.halton(i)) * t / eps))) for i in range(40)]
    np.testing.assert_array_equal(steps[0], expected)
    np.testing.assert_array_equal(np.asarray(r.info.step_size), np.float32(eps))
    assert np.all(np.asarray(r.info.tree_depth) == 0)
    # shapes and dtypes: float32 in, float32 out
    assert r.positions.shape == (4, 40, 3) and r.positions.dtype == jnp.float32
    for name in r.info._fields:
        assert getattr(r.info, name).shape == (4, 40), name
        assert getattr(r.warmup_info, name).shape == (4, 60), name
    assert r.adapted.trajectory_length.shape == (4,) and r.adapted.inverse_mass_matrix.shape == (4, 3)
    assert r.adapted.step_size.dtype == jnp.float32 and r.adapted.trajectory_length.dtype == jnp.float32
    assert np.all(np.asarray(r.adapted.trajectory_length) > 0)
    ld = jax.vmap(jax.vmap(lambda x: _ld(x, None)))(r.positions)
    np.testing.assert_allclose(r.info.logdensity, ld, rtol=1e-5)


def test_input_errors():
    with pytest.raises(ValueError, match="diagonal"):
        _run(dense_mass=True)
    with pytest.raises(ValueError, match="max_integration_steps"):
        _run(max_integration_steps=0)
    with pytest.raises(ValueError, match="centre must be one of chains, within"):
        _run(chees_centre="middle")
    with pytest.raises(ValueError, match="acceptance must be one of harmonic, mean, harmonic-running"):
        _run(chees_acceptance="median")


def _gibbs(key, x, h):
    return jax.random.gamma(key, 2.0 + x.shape[0] / 2) / (1.0 + 0.5 * jnp.sum(x**2))


def _ld_h(x, h):
    return -0.5 * h * jnp.sum(x**2)


@pytest.mark.slow
def test_interrupted_and_resumed_run_equals_uninterrupted_run_with_gibbs(tmp_path):
    def run(store=None):
        return sample(
            jax.random.key(0), make_algorithm("chees"), _ld_h, jnp.zeros((4, 3)) + 0.3, jnp.asarray(1.0),
            RunConfig(num_warmup=30, num_samples=10, chunk_size=10, split_chains=False), gibbs_fn=_gibbs,
            progress=False, store=store,
        )  # fmt: skip

    class StopAt(Checkpoint):
        def commit(self, iteration, state):
            super().commit(iteration, state)
            if iteration == 20:
                raise KeyboardInterrupt

    reference = run()
    assert np.unique(np.asarray(reference.hyper)).size > 20  # the hyperparameter moves
    path = tmp_path / "m"
    StopAt.create(path, {"what": "test"})
    with pytest.raises(KeyboardInterrupt):
        run(StopAt.open(path))
    resumed = run(Checkpoint.open(path))
    np.testing.assert_array_equal(np.asarray(reference.positions), np.asarray(resumed.positions))
    np.testing.assert_array_equal(np.asarray(reference.hyper), np.asarray(resumed.hyper))
    for a, b in zip(reference.adapted, resumed.adapted):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("centre", "acceptance"),
    [("chains", "harmonic"), ("within", "harmonic"), ("within", "mean"), ("within", "harmonic-running")],
)
@pytest.mark.parametrize("target", ["correlated", "ill-scaled"])
def test_moments_of_known_gaussians(target, centre, acceptance):
    """32 chains: means and variances within 4 Monte-Carlo standard errors (from the ESS) of the truth, with
    the criterion centred across the chains or on each chain's running centre, and the step size adapted to
    the harmonic or the arithmetic mean of the chains' acceptance or the harmonic mean of their running
    acceptances."""
    d = 20
    if target == "correlated":
        cov = correlated_cov(d, seed=5)
        mean = np.linspace(-2.0, 2.0, d)
    else:
        cov = np.diag(np.geomspace(0.05, 20.0, d) ** 2)
        mean = np.zeros(d)
    ld = gaussian(mean, cov)
    init = jax.random.normal(jax.random.key(7), (32, d))
    r = sample(
        jax.random.key(11), make_algorithm("chees", chees_centre=centre, chees_acceptance=acceptance),
        lambda x, _: ld(x), init, None,
        RunConfig(num_warmup=400, num_samples=250, split_chains=False), progress=False,
    )  # fmt: skip
    assert int(np.sum(np.asarray(r.info.is_divergent))) == 0
    assert_moments(np.asarray(r.positions), mean, np.diag(cov))
    # the mass matrix found the scales, and the trajectory is longer than one step
    ratio = np.asarray(r.adapted.inverse_mass_matrix[0]) / np.diag(cov)
    assert np.all((ratio > 0.6) & (ratio < 1.6)), ratio
    assert float(np.mean(np.asarray(r.info.num_integration_steps))) > 1.5


_SPLIT_SCRIPT = textwrap.dedent(
    """
    import json
    from sigmabnn.parallel import set_host_device_count
    set_host_device_count(2)
    import jax, jax.numpy as jnp, numpy as np
    from sigmabnn.mcmc.registry import make_algorithm
    from sigmabnn.mcmc.run import RunConfig, sample

    scales = jnp.linspace(0.5, 3.0, 6)
    logdensity = lambda x, h: -0.5 * jnp.sum((x / scales) ** 2)
    x0 = jax.random.normal(jax.random.key(1), (4, 6)) * scales
    runs = {s: sample(jax.random.key(0), make_algorithm("chees"), logdensity, x0, None,
                      RunConfig(num_warmup=60, num_samples=30, split_chains=s), progress=False) for s in (True, False)}
    split, one = runs[True], runs[False]
    steps = np.concatenate([np.asarray(split.warmup_info.num_integration_steps),
                            np.asarray(split.info.num_integration_steps)], axis=1)
    first = lambda r: np.asarray(r.warmup_info.step_size)[:, :10]
    print(json.dumps({
        "devices": len(jax.local_devices()),
        "steps_shared": bool(np.all(steps == steps[:1])),
        "adapted_shared": all(bool(np.all(np.asarray(a) == np.asarray(a)[:1])) for a in split.adapted),
        "first_steps_equal": bool(np.array_equal(np.asarray(split.warmup_info.num_integration_steps)[:, :10],
                                                 np.asarray(one.warmup_info.num_integration_steps)[:, :10])),
        "first_step_size_rel_diff": float(np.max(np.abs(first(split) / first(one) - 1))),
    }))
    """
)


@pytest.mark.slow
def test_chains_split_over_two_devices_share_one_adaptation():
    """Chains on two devices: the across-chain sums run over both (psum), so both devices keep the same step
    size, T and step counts; the first iterations equal those of one device up to rounding (later, HMC's
    sensitivity to its starting point amplifies the rounding of the differently ordered sums)."""
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    out = subprocess.run([sys.executable, "-c", _SPLIT_SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["devices"] == 2
    assert res["steps_shared"] and res["adapted_shared"]
    assert res["first_steps_equal"] and res["first_step_size_rel_diff"] < 1e-10
