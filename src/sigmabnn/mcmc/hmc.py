"""Hamiltonian Monte Carlo with a fixed number of leapfrog steps.

One transition (Algorithm 4 of the thesis draft; Neal 2011, "MCMC using
Hamiltonian dynamics", sec. 5.3.2): draw a momentum ``p ~ N(0, M)``, take
``L`` leapfrog steps of size ``eps`` (optionally of size ``-eps`` with
probability 1/2, the direction ``lambda`` of Algorithm 4), and accept the end
point with probability ``min(1, exp(-(H_new - H_old)))``.

A transition whose energy error exceeds ``divergence_threshold``, or whose
end point has a non-finite log-density or gradient, is *divergent*: it is
rejected and flagged, and nothing non-finite enters the returned state.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.mcmc.algorithm import Sampler, TransitionInfo
from sigmabnn.mcmc.integrators import IntegratorState, velocity_verlet
from sigmabnn.mcmc.metrics import gaussian_euclidean

Array = jax.Array


class HMCState(NamedTuple):
    """State of an HMC/NUTS chain (shared with :mod:`sigmabnn.mcmc.nuts`).

    Attributes:
        position: ``[d]`` current position (dtype of the run).
        logdensity: scalar log-density at ``position``.
        logdensity_grad: ``[d]`` gradient of the log-density at ``position``.
    """

    position: Array
    logdensity: Array
    logdensity_grad: Array


class HMCInfo(NamedTuple):
    """Diagnostics of one HMC transition.

    Attributes:
        acceptance_rate: scalar ``min(1, exp(-dH))`` (0 for a non-finite end
            point); what dual averaging consumes.
        is_accepted: bool, whether the proposal was accepted.
        is_divergent: bool, energy error above the threshold or non-finite end point.
        energy: scalar Hamiltonian ``H = -log pi(q) + K(p)`` of the returned state
            (with the momentum it has at the end of the transition).
        num_integration_steps: int32 number of leapfrog steps taken.
    """

    acceptance_rate: Array
    is_accepted: Array
    is_divergent: Array
    energy: Array
    num_integration_steps: Array


def init(position: Array, logdensity_fn: Callable[[Array], Array]) -> HMCState:
    """Evaluate the log-density and its gradient at ``position`` ``[d]``."""
    position = jnp.asarray(position)
    logdensity, logdensity_grad = jax.value_and_grad(logdensity_fn)(position)
    return HMCState(position, logdensity, logdensity_grad)


def build_proposal_kernel(
    divergence_threshold: float = 1000.0, random_direction: bool = False
) -> Callable[..., tuple[HMCState, HMCInfo, IntegratorState]]:
    """Build the HMC transition kernel that also returns the end point of its trajectory.

    Same arguments and transition as :func:`build_kernel`; the kernel returns
    ``(HMCState, HMCInfo, proposal)`` with ``proposal`` the
    :class:`~sigmabnn.mcmc.integrators.IntegratorState` at the end of the
    leapfrog trajectory, accepted or not (what trajectory-length adaptation
    such as ChEES, :mod:`sigmabnn.mcmc.chees`, differentiates).
    """

    def kernel(
        rng_key: Array,
        state: HMCState,
        logdensity_fn: Callable[[Array], Array],
        step_size: Array | float,
        inverse_mass_matrix: Array,
        num_integration_steps: Array | int,
    ) -> tuple[HMCState, HMCInfo, IntegratorState]:
        key_momentum, key_direction, key_accept = jax.random.split(rng_key, 3)
        dtype = state.position.dtype
        metric = gaussian_euclidean(inverse_mass_matrix)
        step = velocity_verlet(logdensity_fn, metric)

        eps = jnp.asarray(step_size, dtype)
        if random_direction:
            eps = jnp.where(jax.random.bernoulli(key_direction), eps, -eps)

        momentum = metric.sample_momentum(key_momentum, state.position)
        start = IntegratorState(state.position, momentum, state.logdensity, state.logdensity_grad)
        energy0 = metric.kinetic_energy(momentum) - state.logdensity

        end = jax.lax.fori_loop(0, num_integration_steps, lambda _, s: step(s, eps), start)

        energy1 = metric.kinetic_energy(end.momentum) - end.logdensity
        finite = jnp.isfinite(energy1) & jnp.all(jnp.isfinite(end.logdensity_grad))
        delta = jnp.where(finite, energy1 - energy0, jnp.inf)
        is_divergent = delta > divergence_threshold
        acceptance_rate = jnp.exp(jnp.minimum(-delta, 0.0)).astype(dtype)
        u = jax.random.uniform(key_accept, (), dtype)
        is_accepted = (u < acceptance_rate) & ~is_divergent

        new_state = jax.tree.map(
            lambda new, old: jnp.where(is_accepted, new, old),
            HMCState(end.position, end.logdensity, end.logdensity_grad),
            state,
        )
        info = HMCInfo(
            acceptance_rate=acceptance_rate,
            is_accepted=is_accepted,
            is_divergent=is_divergent,
            energy=jnp.where(is_accepted, energy1, energy0),
            num_integration_steps=jnp.asarray(num_integration_steps, jnp.int32),
        )
        return new_state, info, end

    return kernel


def build_kernel(
    divergence_threshold: float = 1000.0, random_direction: bool = False
) -> Callable[..., tuple[HMCState, HMCInfo]]:
    """Build the HMC transition kernel.

    Args:
        divergence_threshold: energy error (nats) above which a transition is divergent.
        random_direction: if True, integrate with ``-step_size`` with probability 1/2.

    Returns:
        ``kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix,
        num_integration_steps) -> (HMCState, HMCInfo)``, with ``step_size`` a
        positive scalar, ``inverse_mass_matrix`` ``[d]`` or ``[d, d]`` and
        ``num_integration_steps`` an int (Python or traced) ``>= 1``; a traced
        count may change from one call to the next (one compiled kernel).
    """
    proposal_kernel = build_proposal_kernel(divergence_threshold, random_direction)

    def kernel(
        rng_key: Array,
        state: HMCState,
        logdensity_fn: Callable[[Array], Array],
        step_size: Array | float,
        inverse_mass_matrix: Array,
        num_integration_steps: Array | int,
    ) -> tuple[HMCState, HMCInfo]:
        new_state, info, _ = proposal_kernel(
            rng_key, state, logdensity_fn, step_size, inverse_mass_matrix, num_integration_steps
        )
        return new_state, info

    return kernel


def one_step_acceptance(divergence_threshold: float = 1000.0) -> Callable[..., Array]:
    """``(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> scalar``: the acceptance
    probability of one leapfrog step (the step-size heuristic of HMC and NUTS)."""
    one_step_kernel = build_kernel(divergence_threshold=divergence_threshold, random_direction=False)

    def acceptance(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
        return one_step_kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix, 1)[1].acceptance_rate

    return acceptance


@functools.cache
def sampler(
    num_integration_steps: int = 32,
    random_direction: bool = False,
    divergence_threshold: float = 1000.0,
    step_size_jitter: float = 0.0,
) -> Sampler:
    """HMC with ``num_integration_steps`` leapfrog steps as a :class:`~sigmabnn.mcmc.algorithm.Sampler`.

    ``step_size_jitter`` ``j`` in ``[0, 1)``: each transition integrates with the step size times
    ``1 + j u``, ``u`` uniform in ``(-1, 1)`` (Stan's ``stepsize_jitter``; Neal 2011, "MCMC using
    Hamiltonian dynamics", section 5.4.2.2). With ``j = 0`` and a fixed step count the trajectory
    length is fixed, and on a near-Gaussian target it can come close to a multiple of a half
    period in some direction, where the chain moves back and forth with little net progress and
    its effective sample size is overestimated; a random length breaks that resonance.
    The same settings give the same object (so the runner's compiled functions are reused).

    Raises:
        ValueError: if ``num_integration_steps < 1`` or ``step_size_jitter`` is outside ``[0, 1)``.
    """
    if int(num_integration_steps) < 1:
        raise ValueError(f"num_integration_steps must be >= 1, got {num_integration_steps}")
    if not 0.0 <= float(step_size_jitter) < 1.0:
        raise ValueError(f"step_size_jitter must be in [0, 1), got {step_size_jitter}")
    hmc_kernel = build_kernel(divergence_threshold=divergence_threshold, random_direction=random_direction)
    n_steps = int(num_integration_steps)
    jitter = float(step_size_jitter)

    def step(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
        if jitter > 0.0:
            rng_key, key_jitter = jax.random.split(rng_key)
            u = jax.random.uniform(key_jitter, (), state.position.dtype, minval=-1.0, maxval=1.0)
            step_size = step_size * (1.0 + jitter * u)
        new, info = hmc_kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix, n_steps)
        return new, TransitionInfo(
            info.acceptance_rate,
            info.is_divergent,
            info.energy,
            jnp.asarray(info.num_integration_steps, jnp.int32),
            jnp.zeros((), jnp.int32),
        )

    return Sampler(init, step, one_step_acceptance(divergence_threshold), 0.8)
