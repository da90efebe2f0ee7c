"""Euclidean-Gaussian kinetic energy: momentum sampling, kinetic energy, velocity, U-turn criterion.

With a constant mass matrix ``M`` the Hamiltonian is ``H(q, p) = -log pi(q) + K(p)``
with ``K(p) = p^T M^{-1} p / 2``, so the momentum is ``p ~ N(0, M)`` and the
velocity is ``dq/dt = dK/dp = M^{-1} p``. Samplers are parametrised by the
*inverse* mass matrix (the adapted estimate of the posterior covariance, or its
diagonal), never by ``M`` itself.

The generalized no-U-turn criterion (Betancourt 2017, "A Conceptual
Introduction to Hamiltonian Monte Carlo", arXiv:1701.02434, sec. A.4.2; the
form used by Stan) replaces the position difference of the original NUTS
criterion (Hoffman & Gelman 2014) by the sum ``rho`` of the momenta over the
(sub)trajectory: it keeps extending while ``v_left . rho > 0`` and
``v_right . rho > 0``, with ``v = M^{-1} p`` the velocities at both ends.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl

Array = jax.Array


class Metric(NamedTuple):
    """Functions of the kinetic energy ``K(p) = p^T M^{-1} p / 2``.

    Attributes:
        sample_momentum: ``(rng_key, position [d]) -> momentum [d]``, a draw of
            ``N(0, M)`` in the dtype of ``position``.
        kinetic_energy: ``(momentum [d]) -> scalar`` ``K(p)``.
        velocity: ``(momentum [d]) -> [d]`` ``M^{-1} p``.
        is_turning: ``(momentum_left [d], momentum_right [d], momentum_sum [d]) -> bool``;
            True when the trajectory with these end momenta and summed
            momentum ``rho`` makes a U-turn (``v_left . rho <= 0`` or
            ``v_right . rho <= 0``). Non-finite input counts as turning.
    """

    sample_momentum: Callable[[Array, Array], Array]
    kinetic_energy: Callable[[Array], Array]
    velocity: Callable[[Array], Array]
    is_turning: Callable[[Array, Array, Array], Array]


def turning_from_velocities(velocity_left: Array, velocity_right: Array, momentum_sum: Array) -> Array:
    """The generalized U-turn criterion given the end velocities ``M^{-1} p``.

    Args:
        velocity_left: ``[..., d]`` velocity at one end of the (sub)trajectory.
        velocity_right: ``[..., d]`` velocity at the other end.
        momentum_sum: ``[..., d]`` sum of the momenta over all states of the (sub)trajectory.

    Returns:
        bool ``[...]``: True when turning (either projection ``<= 0``, or NaN).
    """
    keep_left = jnp.sum(velocity_left * momentum_sum, axis=-1) > 0
    keep_right = jnp.sum(velocity_right * momentum_sum, axis=-1) > 0
    return ~(keep_left & keep_right)


def gaussian_euclidean(inverse_mass_matrix: Array) -> Metric:
    """Build the :class:`Metric` of a constant (diagonal or dense) mass matrix.

    Args:
        inverse_mass_matrix: ``[d]`` diagonal of ``M^{-1}`` (positive), or a
            dense symmetric positive-definite ``[d, d]`` ``M^{-1}``. Its dtype
            is cast to the dtype of the momenta/positions passed to the
            returned functions, so one metric works for float32 and float64.

    Returns:
        A :class:`Metric`.

    Raises:
        ValueError: if ``inverse_mass_matrix`` is not 1-d or square 2-d.
    """
    imm = jnp.asarray(inverse_mass_matrix)
    if imm.ndim == 1:
        return _diagonal(imm)
    if imm.ndim == 2 and imm.shape[0] == imm.shape[1]:
        return _dense(imm)
    raise ValueError(f"inverse_mass_matrix must have shape [d] or [d, d], got {tuple(imm.shape)}")


def _diagonal(imm: Array) -> Metric:
    def sample_momentum(rng_key: Array, position: Array) -> Array:
        dtype = position.dtype
        z = jax.random.normal(rng_key, position.shape, dtype)
        return z * jax.lax.rsqrt(imm.astype(dtype))

    def velocity(momentum: Array) -> Array:
        return imm.astype(momentum.dtype) * momentum

    def kinetic_energy(momentum: Array) -> Array:
        return 0.5 * jnp.dot(momentum, velocity(momentum))

    def is_turning(momentum_left: Array, momentum_right: Array, momentum_sum: Array) -> Array:
        return turning_from_velocities(velocity(momentum_left), velocity(momentum_right), momentum_sum)

    return Metric(sample_momentum, kinetic_energy, velocity, is_turning)


def _dense(imm: Array) -> Metric:
    # M^{-1} = L L^T  =>  M = L^{-T} L^{-1}, so p = L^{-T} z has covariance M.
    chol = jnp.linalg.cholesky(imm)

    def sample_momentum(rng_key: Array, position: Array) -> Array:
        dtype = position.dtype
        z = jax.random.normal(rng_key, position.shape, dtype)
        return jsl.solve_triangular(chol.astype(dtype), z, lower=True, trans="T")

    def velocity(momentum: Array) -> Array:
        return jnp.matmul(imm.astype(momentum.dtype), momentum)

    def kinetic_energy(momentum: Array) -> Array:
        return 0.5 * jnp.dot(momentum, velocity(momentum))

    def is_turning(momentum_left: Array, momentum_right: Array, momentum_sum: Array) -> Array:
        return turning_from_velocities(velocity(momentum_left), velocity(momentum_right), momentum_sum)

    return Metric(sample_momentum, kinetic_energy, velocity, is_turning)
