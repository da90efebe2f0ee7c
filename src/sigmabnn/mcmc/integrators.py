"""The leapfrog (velocity Verlet) integrator of Hamiltonian dynamics.

One step of size ``eps`` (Neal 2011, "MCMC using Hamiltonian dynamics", eq. 5.18-5.20;
the LEAPFROG of Algorithm 4 in the thesis draft):

    p_half = p + eps / 2 * grad log pi(q)
    q_new  = q + eps * M^{-1} p_half
    p_new  = p_half + eps / 2 * grad log pi(q_new)

The state carries the log-density and its gradient at ``q``, so each step
costs exactly one gradient evaluation (at ``q_new``). The map is symplectic
and time-reversible: stepping with ``-eps`` from ``(q_new, p_new)`` returns to
``(q, p)`` up to rounding; its energy error is ``O(eps^2)`` over a fixed
integration time. A negative ``step_size`` integrates backwards in time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax

from sigmabnn.mcmc.metrics import Metric

Array = jax.Array


class IntegratorState(NamedTuple):
    """A point in phase space with its cached log-density and gradient.

    Attributes:
        position: ``[d]`` position ``q`` (dtype of the run).
        momentum: ``[d]`` momentum ``p`` (same dtype).
        logdensity: scalar ``log pi(q)`` (unnormalised).
        logdensity_grad: ``[d]`` ``grad log pi(q)``.
    """

    position: Array
    momentum: Array
    logdensity: Array
    logdensity_grad: Array


def velocity_verlet(
    logdensity_fn: Callable[[Array], Array], metric: Metric
) -> Callable[[IntegratorState, Array | float], IntegratorState]:
    """Build one leapfrog step ``step(state, step_size) -> IntegratorState``.

    Args:
        logdensity_fn: ``position [d] -> scalar`` unnormalised log-density.
        metric: the kinetic energy (only ``metric.velocity`` is used).

    Returns:
        ``step(state, step_size)``; ``step_size`` is a scalar (may be
        negative, may be traced) cast to the dtype of ``state.position``.
    """
    value_and_grad = jax.value_and_grad(logdensity_fn)

    def step(state: IntegratorState, step_size: Array | float) -> IntegratorState:
        dtype = state.position.dtype
        eps = jax.numpy.asarray(step_size, dtype)
        half = 0.5 * eps
        momentum = state.momentum + half * state.logdensity_grad
        position = state.position + eps * metric.velocity(momentum)
        logdensity, logdensity_grad = value_and_grad(position)
        momentum = momentum + half * logdensity_grad
        return IntegratorState(position, momentum, logdensity, logdensity_grad)

    return step


leapfrog = velocity_verlet
