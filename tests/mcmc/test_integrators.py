"""Leapfrog integrator and Euclidean metric: reversibility, O(eps^2) energy error, momentum law, U-turn test."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sigmabnn.mcmc.integrators import IntegratorState, leapfrog
from sigmabnn.mcmc.metrics import gaussian_euclidean

_STIFFNESS = jnp.array([1.0, 4.0, 0.25])  # harmonic oscillator: log pi(q) = -sum(k q^2) / 2


def _oscillator(q):
    return -0.5 * jnp.sum(_STIFFNESS * q * q)


def _start(dtype=jnp.float64):
    q = jnp.array([1.0, -0.5, 2.0], dtype)
    p = jnp.array([0.3, 1.0, -0.7], dtype)
    logdensity, grad = jax.value_and_grad(_oscillator)(q)
    return IntegratorState(q, p, logdensity, grad)


def _integrate(state, metric, step_size, num_steps):
    step = leapfrog(_oscillator, metric)

    def body(s, _):
        s = step(s, step_size)
        return s, metric.kinetic_energy(s.momentum) - s.logdensity

    return jax.lax.scan(body, state, None, length=num_steps)


@pytest.mark.parametrize(
    "imm", [jnp.array([1.0, 0.5, 2.0]), jnp.array([[1.0, 0.2, 0.0], [0.2, 0.5, 0.1], [0.0, 0.1, 2.0]])]
)
def test_time_reversibility(imm):
    metric = gaussian_euclidean(imm)
    start = _start()
    forward, _ = jax.jit(_integrate, static_argnums=(1, 3))(start, metric, 0.1, 200)
    assert np.max(np.abs(np.asarray(forward.position - start.position))) > 0.1  # it moved
    flipped = forward._replace(momentum=-forward.momentum)
    back, _ = jax.jit(_integrate, static_argnums=(1, 3))(flipped, metric, 0.1, 200)
    np.testing.assert_allclose(np.asarray(back.position), np.asarray(start.position), rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(-back.momentum), np.asarray(start.momentum), rtol=0, atol=1e-12)
    # a negative step size integrates backwards as well
    back2, _ = _integrate(forward, metric, -0.1, 200)
    np.testing.assert_allclose(np.asarray(back2.position), np.asarray(start.position), rtol=0, atol=1e-12)


def test_energy_error_is_second_order():
    metric = gaussian_euclidean(jnp.ones(3))
    start = _start()
    h0 = float(metric.kinetic_energy(start.momentum) - start.logdensity)
    step_sizes = np.array([0.0125, 0.025, 0.05, 0.1, 0.2])
    errors = []
    for eps in step_sizes:
        _, energies = _integrate(start, metric, float(eps), int(round(10.0 / eps)))  # same total time
        errors.append(np.max(np.abs(np.asarray(energies) - h0)))
    slope = np.polyfit(np.log(step_sizes), np.log(errors), 1)[0]
    assert abs(slope - 2.0) < 0.2, slope


def test_one_gradient_per_step():
    calls = []

    def counted(q):
        jax.debug.callback(lambda: calls.append(1))
        return _oscillator(q)

    state = _start()
    step = leapfrog(counted, gaussian_euclidean(jnp.ones(3)))
    for _ in range(5):
        state = step(state, 0.1)
    jax.effects_barrier()
    assert len(calls) == 5


def test_float32_stays_float32():
    metric = gaussian_euclidean(jnp.ones(3, jnp.float64))
    state, _ = _integrate(_start(jnp.float32), metric, 0.1, 10)
    assert all(x.dtype == jnp.float32 for x in (state.position, state.momentum, state.logdensity_grad))


@pytest.mark.parametrize("dense", [False, True])
def test_momentum_law_kinetic_energy_and_velocity(dense):
    cov = np.array([[2.0, 0.6, 0.0], [0.6, 1.0, -0.3], [0.0, -0.3, 0.5]])  # = M^{-1}
    imm = jnp.asarray(cov) if dense else jnp.asarray(np.diag(cov))
    inv_mass = cov if dense else np.diag(np.diag(cov))
    mass = np.linalg.inv(inv_mass)
    metric = gaussian_euclidean(imm)
    n = 20000
    p = np.asarray(jax.vmap(metric.sample_momentum, (0, None))(jax.random.split(jax.random.key(0), n), jnp.zeros(3)))
    # sample covariance of p ~ N(0, M): standard error of entry (i, j) is sqrt((M_ii M_jj + M_ij^2) / n)
    se = np.sqrt((np.outer(np.diag(mass), np.diag(mass)) + mass**2) / n)
    assert np.all(np.abs(np.cov(p.T) - mass) < 5 * se)
    x = jnp.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(np.asarray(metric.velocity(x)), inv_mass @ np.asarray(x), rtol=1e-12)
    np.testing.assert_allclose(float(metric.kinetic_energy(x)), 0.5 * x @ inv_mass @ x, rtol=1e-12)


def test_generalized_u_turn_criterion():
    metric = gaussian_euclidean(jnp.ones(2))
    rho = jnp.array([1.0, 0.0])
    assert not bool(metric.is_turning(jnp.array([1.0, 0.5]), jnp.array([0.5, -1.0]), rho))
    assert bool(metric.is_turning(jnp.array([1.0, 0.5]), jnp.array([-0.1, 1.0]), rho))  # right end turned back
    assert bool(metric.is_turning(jnp.array([-1.0, 0.0]), jnp.array([1.0, 0.0]), rho))  # left end turned back
    assert bool(metric.is_turning(jnp.array([jnp.nan, 0.0]), jnp.array([1.0, 0.0]), rho))
    # the velocity, not the momentum, is projected: a metric can flip the decision
    stretched = gaussian_euclidean(jnp.array([1.0, 100.0]))
    p_right = jnp.array([0.5, -0.1])
    assert not bool(metric.is_turning(jnp.array([1.0, 0.0]), p_right, jnp.array([1.0, 1.0])))
    assert bool(stretched.is_turning(jnp.array([1.0, 0.0]), p_right, jnp.array([1.0, 1.0])))


def test_bad_inverse_mass_matrix_shape():
    with pytest.raises(ValueError, match="inverse_mass_matrix"):
        gaussian_euclidean(jnp.ones((2, 3)))
