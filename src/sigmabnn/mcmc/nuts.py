"""The No-U-Turn Sampler: multinomial NUTS with the generalized U-turn criterion, built iteratively.

Algorithm (Hoffman & Gelman 2014, JMLR 15:1593, in the modern form of Stan's
``base_nuts``; Betancourt 2017, arXiv:1701.02434, sec. A.3-A.4):

* Draw ``p ~ N(0, M)``; the trajectory is the single point ``z0``.
* Doubling ``j = 0, 1, ..., max_tree_depth - 1``: pick a direction uniformly,
  and integrate a new subtree of ``2^j`` leapfrog steps beyond that end of the
  trajectory. Each state ``z`` has weight ``w = exp(H0 - H(z))``.
* Within a subtree the proposal is drawn with probability proportional to
  ``w`` (uniform multinomial sampling, done progressively leaf by leaf).
  Between the old trajectory and a complete valid subtree it is *biased*
  progressive sampling: the subtree's proposal replaces the current sample
  with probability ``min(1, W_subtree / W_old)``.
* A subtree is invalid, and the transition stops without using it, if a leaf
  diverges (``H - H0 > divergence_threshold`` or non-finite) or if any of its
  balanced sub-subtrees satisfies the generalized U-turn criterion
  (:func:`sigmabnn.mcmc.metrics.turning_from_velocities`), checked on every
  merged pair of halves *and* on each half extended by the first/last state
  of the other half (the additional checks Stan added in 2.23, which catch
  U-turns that the two-ends test misses on near-periodic trajectories).
* After a valid subtree the same three checks are made on the merged
  trajectory; a U-turn there ends the transition (keeping the subtree).

Iterative construction (no recursion inside ``jit``): the recursive
definition checks, after leaf ``n`` of a subtree (0-based), every balanced
node that this leaf completes, i.e. the ``K = trailing_ones(n)`` nodes covering
leaves ``[n + 1 - 2^k, n]`` for ``k = 1..K``. A node at level ``k`` needs,
for its first leaf ``a = n + 1 - 2^k`` and for the first leaf ``c = n + 1 -
2^(k-1)`` of its second half: the momentum, velocity, the momentum sum
before the leaf, and the momentum/velocity of the leaf just before. Leaf
``m`` is recorded in checkpoint row ``popcount(m)``: the first leaves
``a_k`` of the nodes completed at ``n`` sit in rows ``popcount(n) - k``, and no
leaf between ``a_k`` and ``n`` has a popcount as small as ``a_k``'s, so the rows
are still intact when read. This needs ``max_tree_depth`` rows of ``[d]``
arrays (the same idea as the iterative NUTS of Phan, Pradhan & Jankowiak
2019, arXiv:1912.11554, derived here independently).

Per-leaf cost: the first-half check of a node depends only on its leaves
``a`` and ``c``, and ``a = c - lowbit(c)`` is the leaf in the row just below
``c``'s when ``c`` is recorded, so it is evaluated once then and stored as a
flag. The other two checks are split into the dot products fixed at record
time (stored as scalars) and four projections of the current velocity and
momentum sum onto every row, so a leaf costs two ``[2 * depth, d]``
matrix-vector products and one masked row write (no scatter or gather of
``[d]`` rows, which are slow inside a vmapped ``while_loop``). The
projections are taken on the rows before the write (the rows below the
written one are the ones read; the written row's projections are the leaf's
own dot products), and the write is made to depend on them, so XLA updates
the rows in place: otherwise it copies the ``[2, depth, d]`` arrays at every
leaf, which on a cheap target cost as much as the rest of the leaf. The rows
live in one subtree only (each subtree writes a row before reading it), so
they are not carried from one doubling to the next.

Random numbers: ``key_momentum, key_tree = split(rng_key)``; doubling ``j``
uses ``split(fold_in(key_tree, j), 3)`` for (direction, within-subtree
sampling, subtree acceptance); leaf ``n`` of a subtree uses
``uniform(fold_in(key_subtree, n))``. ``tests/mcmc/nuts_reference.py`` is a
plain recursive implementation consuming the same numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.mcmc.algorithm import Sampler, TransitionInfo
from sigmabnn.mcmc.hmc import HMCState, one_step_acceptance
from sigmabnn.mcmc.hmc import init as init
from sigmabnn.mcmc.integrators import IntegratorState, velocity_verlet
from sigmabnn.mcmc.metrics import Metric, gaussian_euclidean, turning_from_velocities

Array = jax.Array

__all__ = ["HMCState", "NUTSInfo", "build_kernel", "init", "sampler"]


class NUTSInfo(NamedTuple):
    """Diagnostics of one NUTS transition.

    Attributes:
        acceptance_rate: scalar, mean over every leapfrog step of the
            transition (including those of a rejected last subtree) of
            ``min(1, exp(H0 - H))``; what dual averaging consumes.
        is_divergent: bool, a leaf had energy error above the threshold or a
            non-finite log-density/gradient.
        energy: scalar Hamiltonian ``-log pi(q) + K(p)`` of the selected state.
        num_integration_steps: int32 number of leapfrog steps (gradient evaluations).
        tree_depth: int32 number of successful doublings (Stan's ``treedepth__``);
            the trajectory has ``2^tree_depth`` states when it ended on a U-turn
            of the merged trajectory or on ``max_tree_depth``.
        num_trajectory_expansions: int32 number of subtrees started,
            ``tree_depth + 1`` when the last one was invalid (divergent or
            internally turning), else ``tree_depth``.
    """

    acceptance_rate: Array
    is_divergent: Array
    energy: Array
    num_integration_steps: Array
    tree_depth: Array
    num_trajectory_expansions: Array


class _Proposal(NamedTuple):
    position: Array
    logdensity: Array
    logdensity_grad: Array
    energy: Array


class _Checkpoints(NamedTuple):
    """Per-row records of leaves (row = popcount of the leaf index within its subtree).

    For leaf ``m`` with velocity ``v``, momentum sum ``S`` of the subtree's leaves before it,
    and the momentum ``p'`` and velocity ``v'`` of the leaf just before it (the previous end
    of the trajectory), row ``popcount(m)`` holds ``(v, v')`` in ``velocities``,
    ``(S, D = S - p')`` in ``sums`` and ``(v . S, v' . D, first_half_turning)`` in
    ``scalars``. The scalars are the parts of the U-turn tests fixed when the leaf is
    recorded, so a later leaf ``n`` needs only the projections ``V ms_n``, ``V' ms_n``,
    ``S v_n`` and ``D v_n`` over all rows at once (two small matrix-vector products).

    Attributes:
        velocities: ``[2, depth, d]``.
        sums: ``[2, depth, d]``.
        scalars: ``[3, depth]``; the third is 1.0 where the first half of the node whose
            second half starts at that leaf, extended by that leaf, is turning.
    """

    velocities: Array
    sums: Array
    scalars: Array


class _Subtree(NamedTuple):
    end: IntegratorState
    end_velocity: Array
    leaf: Array  # int32 index of the next leaf
    momentum_sum: Array
    proposal: _Proposal
    log_sum_weight: Array
    checkpoints: _Checkpoints
    first_momentum: Array  # momentum of leaf 0
    num_steps: Array
    sum_accept_prob: Array
    is_divergent: Array
    is_turning: Array


class _Trajectory(NamedTuple):
    left: IntegratorState
    left_velocity: Array
    right: IntegratorState
    right_velocity: Array
    momentum_sum: Array
    proposal: _Proposal
    log_sum_weight: Array
    depth: Array
    num_expansions: Array
    num_steps: Array
    sum_accept_prob: Array
    is_divergent: Array
    is_turning: Array


def _popcount(n: Array) -> Array:
    return jax.lax.population_count(n)


def _trailing_ones(n: Array) -> Array:
    # n ^ (n + 1) = 2^(t + 1) - 1 where t is the number of trailing one bits of n
    return jax.lax.population_count(n ^ (n + 1)) - 1


class _Transition(NamedTuple):
    """What the tree building of one transition closes over (fixed for the transition)."""

    step: Callable  # leapfrog step (state, signed step size) -> state
    metric: Metric
    eps: Array  # step size (dtype of the position)
    threshold: Array  # divergence threshold (nats)
    energy0: Array  # Hamiltonian of the starting point
    key_tree: Array
    rows: Array  # [depth] row indices 0..max_tree_depth-1
    levels: Array  # node levels k = 1..max_tree_depth-1


def _empty_checkpoints(tr: _Transition, momentum: Array) -> _Checkpoints:
    num_rows = tr.rows.shape[0]
    vector_rows = jnp.zeros((2, num_rows) + momentum.shape, momentum.dtype)
    return _Checkpoints(vector_rows, vector_rows, jnp.zeros((3, num_rows), momentum.dtype))


def _leaf_step(tr: _Transition, sub: _Subtree, signed_eps: Array, key_subtree: Array) -> _Subtree:
    """One leapfrog step, progressive sampling and the U-turn checks it completes."""
    metric, rows, levels = tr.metric, tr.rows, tr.levels
    dtype = sub.momentum_sum.dtype
    n = sub.leaf
    previous_momentum, previous_velocity = sub.end.momentum, sub.end_velocity
    new = tr.step(sub.end, signed_eps)
    v = metric.velocity(new.momentum)
    energy = (0.5 * jnp.dot(new.momentum, v) - new.logdensity).astype(dtype)
    finite = jnp.isfinite(energy) & jnp.all(jnp.isfinite(new.logdensity_grad))
    energy = jnp.where(finite, energy, jnp.inf)
    is_divergent = energy - tr.energy0 > tr.threshold
    log_weight = tr.energy0 - energy
    accept_prob = jnp.exp(jnp.minimum(log_weight, 0.0))

    # progressive uniform (multinomial) sampling within the subtree
    log_sum_weight = jnp.logaddexp(sub.log_sum_weight, log_weight)
    u = jax.random.uniform(jax.random.fold_in(key_subtree, n), (), dtype)
    take = finite & (u < jnp.exp(log_weight - log_sum_weight))
    proposal = jax.tree.map(
        lambda a, b: jnp.where(take, a, b),
        _Proposal(new.position, new.logdensity, new.logdensity_grad, energy),
        sub.proposal,
    )

    # record leaf n in row popcount(n); the U-turn checks read rows below it (unchanged by the
    # write) and, for the second half starting at n, the values written now
    momentum_sum_before = sub.momentum_sum
    momentum_sum = momentum_sum_before + new.momentum
    row = _popcount(n)
    ck = sub.checkpoints
    d_vec = momentum_sum_before - previous_momentum
    at_row = rows == row
    # projections of the current momentum sum and velocity on the rows before the write
    projections_ms = jnp.einsum("krd,d->kr", ck.velocities, momentum_sum)
    projections_v = jnp.einsum("krd,d->kr", ck.sums, v)
    v_ms = jnp.dot(v, momentum_sum)
    v_s = jnp.dot(v, momentum_sum_before)
    row_ms = jnp.stack([v_ms, jnp.dot(previous_velocity, momentum_sum)])
    row_v = jnp.stack([v_s, jnp.dot(d_vec, v)])
    # first half of the node whose second half starts at n (first leaf a = n - lowbit(n), in row - 1),
    # extended by leaf n: v_a . (ms - s_a) = v_a . ms - v_a . s_a and v . (ms - s_a) (unused for n = 0)
    below = jnp.maximum(row - 1, 0)
    first_turning = ~((projections_ms[0, below] - ck.scalars[0, below] > 0) & (v_ms - projections_v[0, below] > 0))
    scalars = jnp.stack([v_s, jnp.dot(previous_velocity, d_vec), first_turning.astype(dtype)])
    # an exact zero computed from the projections: the rows are written after they are read, so XLA
    # updates them in place instead of copying them at every leaf (the where keeps it finite, so 0 * it is 0)
    read = projections_ms[0, 0] + projections_v[0, 0]
    after = 0.0 * jnp.where(jnp.isfinite(read), read, 0.0)
    velocities = jnp.where(
        at_row[None, :, None], (jnp.stack([v, previous_velocity]) + after)[:, None, :], ck.velocities
    )
    sums = jnp.where(at_row[None, :, None], (jnp.stack([momentum_sum_before, d_vec]) + after)[:, None, :], ck.sums)
    ck = _Checkpoints(velocities, sums, jnp.where(at_row[None, :], scalars[:, None], ck.scalars))
    projections_ms = jnp.where(at_row[None, :], row_ms[:, None], projections_ms)
    projections_v = jnp.where(at_row[None, :], row_v[:, None], projections_v)
    first_momentum = jnp.where(n == 0, new.momentum, sub.first_momentum)

    # U-turn checks of the nodes completed by leaf n (levels 1..trailing_ones(n)): node [a, n]
    # with first leaf a in row_a = row - k and the first leaf c of its second half in row_a + 1
    active = levels <= _trailing_ones(n)
    row_a = jnp.maximum(row - levels, 0)
    row_c = row_a + 1
    keep_node = (projections_ms[0, row_a] - ck.scalars[0, row_a] > 0) & (v_ms - projections_v[0, row_a] > 0)
    keep_second = (projections_ms[1, row_c] - ck.scalars[1, row_c] > 0) & (v_ms - projections_v[1, row_c] > 0)
    turn_first = ck.scalars[2, row_c] > 0.5
    is_turning = jnp.any(active & (~keep_node | ~keep_second | turn_first))

    return _Subtree(
        end=new,
        end_velocity=v,
        leaf=n + 1,
        momentum_sum=momentum_sum,
        proposal=proposal,
        log_sum_weight=log_sum_weight,
        checkpoints=ck,
        first_momentum=first_momentum,
        num_steps=sub.num_steps + 1,
        sum_accept_prob=sub.sum_accept_prob + accept_prob,
        is_divergent=is_divergent,
        is_turning=is_turning,
    )


def _expand(tr: _Transition, traj: _Trajectory) -> _Trajectory:
    """Build one subtree of depth ``traj.depth`` in a random direction and merge it."""
    dtype = traj.momentum_sum.dtype
    key_direction, key_subtree, key_accept = jax.random.split(jax.random.fold_in(tr.key_tree, traj.num_expansions), 3)
    forward = jax.random.bernoulli(key_direction)
    pick = lambda a, b: jax.tree.map(lambda x, y: jnp.where(forward, x, y), a, b)  # noqa: E731
    start, start_velocity = pick((traj.right, traj.right_velocity), (traj.left, traj.left_velocity))
    far_velocity = jnp.where(forward, traj.left_velocity, traj.right_velocity)
    signed_eps = jnp.where(forward, tr.eps, -tr.eps)
    num_leaves = jnp.left_shift(jnp.int32(1), traj.depth)

    sub = _Subtree(
        end=start,
        end_velocity=start_velocity,
        leaf=jnp.int32(0),
        momentum_sum=jnp.zeros_like(traj.momentum_sum),
        proposal=traj.proposal,
        log_sum_weight=jnp.asarray(-jnp.inf, dtype),
        checkpoints=_empty_checkpoints(tr, traj.momentum_sum),
        first_momentum=jnp.zeros_like(traj.momentum_sum),
        num_steps=traj.num_steps,
        sum_accept_prob=traj.sum_accept_prob,
        is_divergent=jnp.asarray(False),
        is_turning=jnp.asarray(False),
    )
    sub = jax.lax.while_loop(
        lambda s: (s.leaf < num_leaves) & ~s.is_divergent & ~s.is_turning,
        lambda s: _leaf_step(tr, s, signed_eps, key_subtree),
        sub,
    )
    valid = ~sub.is_divergent & ~sub.is_turning

    # biased progressive sampling between the old trajectory and the new subtree
    u = jax.random.uniform(key_accept, (), dtype)
    take = valid & (u < jnp.exp(sub.log_sum_weight - traj.log_sum_weight))
    proposal = jax.tree.map(lambda a, b: jnp.where(take, a, b), sub.proposal, traj.proposal)
    log_sum_weight = jnp.where(valid, jnp.logaddexp(traj.log_sum_weight, sub.log_sum_weight), traj.log_sum_weight)

    # U-turn checks on the merged trajectory (both ends, and each part extended across the boundary)
    first_momentum, first_velocity = sub.first_momentum, sub.checkpoints.velocities[0, 0]
    momentum_sum = traj.momentum_sum + sub.momentum_sum
    turning = (
        turning_from_velocities(far_velocity, sub.end_velocity, momentum_sum)
        | turning_from_velocities(far_velocity, first_velocity, traj.momentum_sum + first_momentum)
        | turning_from_velocities(start_velocity, sub.end_velocity, sub.momentum_sum + start.momentum)
    )

    left, left_velocity = pick((traj.left, traj.left_velocity), (sub.end, sub.end_velocity))
    right, right_velocity = pick((sub.end, sub.end_velocity), (traj.right, traj.right_velocity))
    return _Trajectory(
        left=left,
        left_velocity=left_velocity,
        right=right,
        right_velocity=right_velocity,
        momentum_sum=momentum_sum,
        proposal=proposal,
        log_sum_weight=log_sum_weight,
        depth=traj.depth + valid.astype(jnp.int32),
        num_expansions=traj.num_expansions + 1,
        num_steps=sub.num_steps,
        sum_accept_prob=sub.sum_accept_prob,
        is_divergent=sub.is_divergent,
        is_turning=sub.is_turning | (valid & turning),
    )


def build_kernel(
    max_tree_depth: int = 10, divergence_threshold: float = 1000.0
) -> Callable[..., tuple[HMCState, NUTSInfo]]:
    """Build the NUTS transition kernel.

    Args:
        max_tree_depth: maximum number of doublings (static int ``>= 1``); a
            transition takes at most ``2^max_tree_depth - 1`` leapfrog steps.
        divergence_threshold: energy error (nats) above which a leaf is divergent.

    Returns:
        ``kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix)
        -> (HMCState, NUTSInfo)`` with ``state`` from :func:`init`,
        ``step_size`` a positive scalar and ``inverse_mass_matrix`` ``[d]`` or
        ``[d, d]``. Jit- and vmap-able; keeps the dtype of ``state.position``.

    Raises:
        ValueError: if ``max_tree_depth < 1``.
    """
    max_tree_depth = int(max_tree_depth)
    if max_tree_depth < 1:
        raise ValueError(f"max_tree_depth must be >= 1, got {max_tree_depth}")
    num_rows = max_tree_depth
    levels = jnp.arange(1, max(num_rows, 2), dtype=jnp.int32)  # node levels k = 1..max_tree_depth-1
    rows = jnp.arange(num_rows, dtype=jnp.int32)

    def kernel(
        rng_key: Array,
        state: HMCState,
        logdensity_fn: Callable[[Array], Array],
        step_size: Array | float,
        inverse_mass_matrix: Array,
    ) -> tuple[HMCState, NUTSInfo]:
        key_momentum, key_tree = jax.random.split(rng_key)
        position = state.position
        dtype = position.dtype
        metric = gaussian_euclidean(inverse_mass_matrix)
        eps = jnp.asarray(step_size, dtype)
        threshold = jnp.asarray(divergence_threshold, dtype)

        momentum = metric.sample_momentum(key_momentum, position)
        velocity = metric.velocity(momentum)
        energy0 = (0.5 * jnp.dot(momentum, velocity) - state.logdensity).astype(dtype)
        z0 = IntegratorState(position, momentum, state.logdensity, state.logdensity_grad)
        step = velocity_verlet(logdensity_fn, metric)
        tr = _Transition(step, metric, eps, threshold, energy0, key_tree, rows, levels)

        traj = _Trajectory(
            left=z0,
            left_velocity=velocity,
            right=z0,
            right_velocity=velocity,
            momentum_sum=momentum,
            proposal=_Proposal(position, state.logdensity, state.logdensity_grad, energy0),
            log_sum_weight=jnp.zeros((), dtype),
            depth=jnp.int32(0),
            num_expansions=jnp.int32(0),
            num_steps=jnp.int32(0),
            sum_accept_prob=jnp.zeros((), dtype),
            is_divergent=jnp.asarray(False),
            is_turning=jnp.asarray(False),
        )
        traj = jax.lax.while_loop(
            lambda t: (t.num_expansions < max_tree_depth) & ~t.is_divergent & ~t.is_turning,
            lambda t: _expand(tr, t),
            traj,
        )

        prop = traj.proposal
        new_state = HMCState(prop.position, prop.logdensity, prop.logdensity_grad)
        info = NUTSInfo(
            acceptance_rate=traj.sum_accept_prob / traj.num_steps.astype(dtype),
            is_divergent=traj.is_divergent,
            energy=prop.energy,
            num_integration_steps=traj.num_steps,
            tree_depth=traj.depth,
            num_trajectory_expansions=traj.num_expansions,
        )
        return new_state, info

    return kernel


@functools.cache
def sampler(max_tree_depth: int = 10, divergence_threshold: float = 1000.0) -> Sampler:
    """NUTS as a :class:`~sigmabnn.mcmc.algorithm.Sampler` (default target 0.8).

    The same settings give the same object (so the runner's compiled functions are reused).

    Raises:
        ValueError: if ``max_tree_depth < 1``.
    """
    nuts_kernel = build_kernel(max_tree_depth=int(max_tree_depth), divergence_threshold=divergence_threshold)

    def step(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix):
        new, info = nuts_kernel(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix)
        return new, TransitionInfo(
            info.acceptance_rate,
            info.is_divergent,
            info.energy,
            jnp.asarray(info.num_integration_steps, jnp.int32),
            jnp.asarray(info.tree_depth, jnp.int32),
        )

    return Sampler(init, step, one_step_acceptance(divergence_threshold), 0.8)
