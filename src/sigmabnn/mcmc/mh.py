"""Random-walk Metropolis-Hastings (Metropolis et al. 1953; Hastings 1970).

Proposal ``x' = x + step_size * L z`` with ``z ~ N(0, I)`` and ``L L^T`` the
inverse mass matrix (diagonal ``[d]``: ``L = sqrt(inverse_mass_matrix)``;
dense ``[d, d]``: its Cholesky factor). The proposal is symmetric, so the
acceptance probability is ``min(1, p(x') / p(x))``. A proposal with a
non-finite log-density is rejected (acceptance probability 0).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.mcmc.algorithm import Sampler, TransitionInfo

Array = jax.Array


class MHState(NamedTuple):
    """State of a random-walk Metropolis chain.

    Attributes:
        position: current position ``[d]``.
        logdensity: log-density at ``position`` (scalar).
    """

    position: Array
    logdensity: Array


class MHInfo(NamedTuple):
    """What happened in one Metropolis-Hastings transition.

    Attributes:
        acceptance_rate: ``min(1, p(x') / p(x))`` of the proposal, 0 when non-finite (scalar).
        is_accepted: whether the proposal was accepted (bool scalar).
    """

    acceptance_rate: Array
    is_accepted: Array


def init(position: Array, logdensity_fn: Callable[[Array], Array]) -> MHState:
    """Initial state at ``position [d]``."""
    position = jnp.asarray(position)
    return MHState(position, jnp.asarray(logdensity_fn(position), position.dtype))


def build_kernel() -> Callable[..., tuple[MHState, MHInfo]]:
    """Return ``kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> (MHState, MHInfo)``.

    ``step_size`` is a positive scalar (units of the position scaled by the
    proposal std); ``inverse_mass_matrix`` is ``[d]`` (diagonal proposal
    variances) or ``[d, d]`` (dense proposal covariance), both up to ``step_size**2``.
    """

    def kernel(
        rng_key: Array,
        state: MHState,
        logdensity_fn: Callable[[Array], Array],
        step_size: Array | float,
        inverse_mass_matrix: Array,
    ) -> tuple[MHState, MHInfo]:
        key_proposal, key_accept = jax.random.split(rng_key)
        position = state.position
        dtype = position.dtype
        z = jax.random.normal(key_proposal, position.shape, dtype)
        imm = jnp.asarray(inverse_mass_matrix, dtype)
        if imm.ndim == 2:
            noise = jnp.linalg.cholesky(imm) @ z
        else:
            noise = jnp.sqrt(imm) * z
        proposal = position + jnp.asarray(step_size, dtype) * noise
        logdensity_new = jnp.asarray(logdensity_fn(proposal), dtype)
        log_ratio = logdensity_new - state.logdensity
        finite = jnp.isfinite(logdensity_new) & jnp.all(jnp.isfinite(proposal))
        log_ratio = jnp.where(finite & ~jnp.isnan(log_ratio), log_ratio, -jnp.inf)
        acceptance_rate = jnp.exp(jnp.minimum(log_ratio, 0.0))
        log_u = jnp.log(jax.random.uniform(key_accept, (), dtype))
        is_accepted = finite & (log_u < log_ratio)
        new_position = jnp.where(is_accepted, proposal, position)
        new_logdensity = jnp.where(is_accepted, logdensity_new, state.logdensity)
        return MHState(new_position, new_logdensity), MHInfo(acceptance_rate, is_accepted)

    return kernel


@functools.cache
def sampler() -> Sampler:
    """Random-walk Metropolis-Hastings as a :class:`~sigmabnn.mcmc.algorithm.Sampler` (default target 0.234).

    Its transitions are never divergent, take no leapfrog step and report ``-logdensity`` as energy.
    """
    mh_kernel = build_kernel()

    def step(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
        new, info = mh_kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix)
        zero = jnp.zeros((), jnp.int32)
        return new, TransitionInfo(info.acceptance_rate, jnp.zeros((), bool), -new.logdensity, zero, zero)

    def one_step_acceptance(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
        return mh_kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix)[1].acceptance_rate

    return Sampler(init, step, one_step_acceptance, 0.234)
