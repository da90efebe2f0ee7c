"""ChEES-HMC: HMC with one jittered trajectory length shared by many chains, adapted across chains.

Hoffman, Radul & Sountsov 2021, "An Adaptive MCMC Scheme for Setting
Trajectory Lengths in Hamiltonian Monte Carlo", AISTATS (PMLR 130:3907-3915).
All ``C`` chains run plain HMC (:func:`sigmabnn.mcmc.hmc.build_proposal_kernel`)
with the same step size ``eps``, the same diagonal inverse mass matrix and, at
iteration ``n``, the same number of leapfrog steps ``ceil(u_n T / eps)``: the
trajectory length ``T`` jittered by ``u_n`` in ``(0, 1)`` (the base-2 Halton
sequence, or uniform draws), so no chain waits for another and every leapfrog
step is one gradient evaluation of every chain. During warm-up:

* ``T`` climbs the ChEES criterion ("change in the estimator of the expected
  square") ``1/4 E[(||q' - E q||^2 - ||q - E q||^2)^2]`` of the move from
  ``q`` to the proposal ``q'``, whose derivative with respect to ``T`` is, per
  chain, ``u_n (||q' - qbar'||^2 - ||q - qbar||^2) (q' - qbar') . dq'/dt``
  (the means replaced by the across-chain means, treated as constants: the
  current positions' plain mean ``qbar`` and the proposals' mean ``qbar'``
  weighted by the acceptance probabilities). The per-chain values are averaged
  with the acceptance probabilities as weights (:func:`criterion_gradient`),
  and ``log T`` takes an Adam step (first moment off, second-moment decay
  0.95, learning rate 0.025, each move of ``log T`` clipped to 0.35), with an
  iterate average ``log Tbar`` (weight ``n^-1/2``) used after warm-up
  (:func:`trajectory_init`, :func:`trajectory_update`, :func:`trajectory_final`);
* ``eps`` follows dual averaging (:mod:`sigmabnn.mcmc.adaptation`) of the
  *harmonic mean* of the chains' acceptance probabilities towards 0.651 (the
  paper's choice: one stuck chain pulls the harmonic mean down, so the step
  size stays small enough for every chain);
* the diagonal inverse mass matrix is the chains' mean *within-chain*
  variance over each of Stan's slow windows (every chain's running moments,
  regularised as in Stan, averaged over the chains:
  :func:`mean_within_chain_variance`; chains that sit in different modes of a
  BNN posterior would inflate a variance pooled across chains, and with it
  shrink the step size, by the distance between the modes). When it changes,
  ``T`` is divided by the geometric mean of the changes of the metric's
  standard deviations (``sqrt(new_i / old_i)``; exact when every scale changes
  alike, and no collapse of ``T`` when only some do, e.g. when ``T`` was still
  capped by the old metric's small step size), and the step size is
  re-initialised.

Centre of the criterion (``centre`` of :func:`algorithm`): ``"chains"`` (the paper's) measures
every chain's move from the across-chain means above. Chains started from separate MAP fits of
a BNN sit in separate modes, where the across-chain mean lies between the modes: the
criterion then scores moves by their projection on the directions between modes, which the
chains do not travel, and ``T`` can settle far below what exploring one mode needs (the
table ``steep6d-300`` of ``benchmarks/results/defaults_validation.md``: candidates
``chees-map-8x125`` against ``chees-within-8x125*``).
``"within"`` measures each chain's move from its own running centre instead: an exponential
moving average of the chain's warm-up positions (weight ``max(1/n, 1/CENTRE_WINDOW)`` for
the chain's ``n``-th adapting iteration), the estimate of ``E q`` within the chain's mode. The
across-chain means are used until a chain has :data:`MIN_CENTRE_DRAWS` positions in its
average. In one mode with mixed chains both centres estimate the same mean.

Starting points: the chains should start near the typical set (MAP starts,
or the end of a short NUTS run). From Stan's uniform starts in ``[-2, 2]``
on the posteriordb ``sblrc-blr`` target, one run's warm-up ended at one
leapfrog step per iteration with the chains not yet in the posterior (the
one-repetition sampler benchmark of commit f35ac93), while three later
repetitions from the same kind of starts adapted long trajectories
(``benchmarks/results/samplers.md``): the collapse depends on the run, and
why ``T`` shrinks while the chains travel is not established.

The criterion is evaluated in the metric's coordinates ``z = q / sqrt(M^-1)``
(where the mass matrix is the identity), so every coordinate counts relative
to its adapted scale. After warm-up, sampling keeps the jitter with the
averaged ``T`` and the final step size.

The adaptation state is one for all chains; every chain of :func:`algorithm` keeps a copy
(identical by construction, beside the chain's own running moments:
:class:`ChEESChainAdaptation`) so the chains' state keeps its leading ``[C]`` axis and can
be split over devices, with the across-chain sums done by ``psum`` over the device axis.
:func:`algorithm` is a :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm` like the
windowed adaptation of NUTS, HMC and MH, so the runner drives it the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn import compiler
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc import hmc
from sigmabnn.mcmc.algorithm import (
    STAGE_FROZEN,
    STAGE_SLOW,
    ChainState,
    Iteration,
    IterationInfo,
    SamplingAlgorithm,
    broadcast_chains,
    conditioned,
)

Array = jax.Array

DEFAULT_TARGET_ACCEPT = 0.651
"""Target of the harmonic-mean acceptance probability (the optimum of Beskos et al. 2013, as in the paper)."""
HALTON_BITS = 31
CENTRES = ("chains", "within")
"""Where the criterion measures squared distances from: the across-chain means, or each chain's own centre."""
CENTRE_WINDOW = 50
"""Effective window (iterations) of a chain's running centre (``centre="within"``)."""
MIN_CENTRE_DRAWS = 10
"""Positions a chain's running centre needs before the criterion uses it (``centre="within"``)."""


# ---------------------------------------------------------------------------
# Jitter and the shared number of leapfrog steps
# ---------------------------------------------------------------------------


def halton(index: Array | int) -> Array:
    """Element ``index`` (int, >= 0) of the base-2 Halton (van der Corput) sequence, in ``(0, 1)``.

    The radical inverse of ``index + 1``: 1/2, 1/4, 3/4, 1/8, 5/8, ... (float64
    when x64 is enabled). Low-discrepancy jitter: any stretch of iterations
    covers ``(0, 1)`` evenly, which steadies the adaptation of ``T``.
    """
    n = jnp.asarray(index, jnp.int32) + 1
    bits = jnp.arange(HALTON_BITS, dtype=jnp.int32)
    digits = jnp.right_shift(n, bits) & 1
    weights = jnp.exp2(-(bits + 1).astype(jnp.result_type(float)))
    return jnp.sum(digits * weights)


def num_integration_steps(
    jitter: Array | float, trajectory_length: Array, step_size: Array, max_num_steps: int
) -> Array:
    """Leapfrog steps ``clip(ceil(jitter * T / eps), 1, max_num_steps)`` (int32 scalar)."""
    n = jnp.ceil(jnp.asarray(jitter) * trajectory_length / step_size)
    n = jnp.where(jnp.isfinite(n), n, 1.0)
    return jnp.clip(n, 1, max_num_steps).astype(jnp.int32)


# ---------------------------------------------------------------------------
# Across-chain reductions (optionally also over a device axis)
# ---------------------------------------------------------------------------


def _sum_chains(x: Array, axis_name: str | None) -> Array:
    s = jnp.sum(x, axis=0)
    return s if axis_name is None else jax.lax.psum(s, axis_name)


def harmonic_mean(acceptance: Array, axis_name: str | None = None) -> Array:
    """Harmonic mean of the ``[C]`` acceptance probabilities (0 when any is 0 or not finite)."""
    a = jnp.where(jnp.isfinite(acceptance), acceptance, 0.0)
    count = _sum_chains(jnp.ones_like(a), axis_name)
    inv = _sum_chains(1.0 / jnp.maximum(a, jnp.finfo(a.dtype).tiny), axis_name)
    return jnp.where(_sum_chains((a <= 0).astype(a.dtype), axis_name) > 0, jnp.zeros_like(count), count / inv)


def mean_acceptance(acceptance: Array, axis_name: str | None = None) -> Array:
    """Arithmetic mean of the ``[C]`` acceptance probabilities (a non-finite one counts as 0)."""
    a = jnp.where(jnp.isfinite(acceptance), acceptance, 0.0)
    return _sum_chains(a, axis_name) / _sum_chains(jnp.ones_like(a), axis_name)


#: The statistics of the chains' acceptance probabilities the step size's dual averaging can target
#: (:func:`algorithm`'s ``acceptance``): Hoffman et al.'s harmonic mean, the arithmetic mean, or the harmonic
#: mean of each chain's running acceptance (:data:`RUNNING_STATISTICS`, :data:`RUNNING_ACCEPTANCE_WEIGHT`).
ACCEPTANCE_STATISTICS: dict[str, Callable[[Array, str | None], Array]] = {
    "harmonic": harmonic_mean,
    "mean": mean_acceptance,
    "harmonic-running": harmonic_mean,
}
#: The statistics taken of each chain's running acceptance instead of the iteration's.
RUNNING_STATISTICS = frozenset({"harmonic-running"})
#: Weight of an iteration in a chain's running acceptance (an exponential average over about 1 / weight =
#: 20 iterations): one iteration at zero acceptance lowers it by 5 %, a chain stuck for 20 iterations
#: takes it to about a third of its value, and the harmonic mean over the chains towards zero with it.
RUNNING_ACCEPTANCE_WEIGHT = 0.05


def running_acceptance(average: Array, acceptance: Array, weight: float = RUNNING_ACCEPTANCE_WEIGHT) -> Array:
    """Each chain's running acceptance ``[C]`` after this iteration's ``acceptance`` ``[C]`` (non-finite: 0)."""
    a = jnp.where(jnp.isfinite(acceptance), acceptance, 0.0).astype(average.dtype)
    return average + weight * (a - average)


def criterion_gradient(
    previous: Array,
    proposed: Array,
    velocity: Array,
    acceptance: Array,
    jitter: Array | float,
    axis_name: str | None = None,
    centre: Array | None = None,
    has_centre: Array | None = None,
) -> Array:
    """Across-chain estimate of the derivative of the ChEES criterion with respect to ``T``.

    Args:
        previous: ``[C, d]`` positions at the start of the trajectories.
        proposed: ``[C, d]`` positions at their end (accepted or not).
        velocity: ``[C, d]`` ``dq/dt`` at the end (``M^-1 p``).
        acceptance: ``[C]`` acceptance probabilities (the weights).
        jitter: ``u_n``, the trajectory lasted ``u_n T`` (so ``dt/dT = u_n``).
        axis_name: device axis the chains are also split along (``psum``), or ``None``.
        centre: optional ``[C, d]`` per-chain centres ``c_c``; where ``has_centre`` ``[C]`` is
            true, chain ``c`` uses ``qbar = qbar' = c_c`` (``centre="within"`` of :func:`algorithm`).

    Returns:
        Scalar ``sum_c a_c g_c / sum_c a_c`` with
        ``g_c = u_n (||q'_c - qbar'||^2 - ||q_c - qbar||^2) (q'_c - qbar') . v_c``,
        ``qbar`` the mean of ``previous`` and ``qbar'`` the ``a``-weighted mean of
        ``proposed`` (or the chain's centre); chains with ``a < 1e-4`` or a non-finite
        ``g_c`` count as ``g_c = 0``. Zero when no chain has weight.
    """
    a = jnp.where(jnp.isfinite(acceptance), acceptance, 0.0)
    total_a = _sum_chains(a, axis_name)
    count = _sum_chains(jnp.ones_like(a), axis_name)
    safe = jnp.where(jnp.isfinite(proposed), proposed, 0.0)
    prev_mean = _sum_chains(previous, axis_name) / count
    prop_mean = _sum_chains(a[:, None] * safe, axis_name) / (total_a + 1e-20)
    centred_prev = previous - prev_mean
    centred_prop = proposed - prop_mean
    if centre is not None:
        own = jnp.ones(previous.shape[:1], bool) if has_centre is None else has_centre
        centred_prev = jnp.where(own[:, None], previous - centre, centred_prev)
        centred_prop = jnp.where(own[:, None], proposed - centre, centred_prop)
    change = jnp.sum(centred_prop**2, axis=-1) - jnp.sum(centred_prev**2, axis=-1)
    g = jnp.asarray(jitter, previous.dtype) * change * jnp.sum(centred_prop * velocity, axis=-1)
    g = jnp.where((a > 1e-4) & jnp.isfinite(g), g, 0.0)
    return _sum_chains(a * g, axis_name) / (total_a + 1e-20)


# ---------------------------------------------------------------------------
# Adam on log T (the trajectory-length estimator, an (init, update, final) triple)
# ---------------------------------------------------------------------------


class TrajectoryState(NamedTuple):
    """State of the trajectory-length adaptation.

    Attributes:
        log_trajectory_length: ``log T`` used at the next iteration (scalar, time units of the metric).
        log_trajectory_length_avg: iterate average ``log Tbar`` (scalar), returned at the end.
        avg_sq_grad: Adam's running mean of the squared gradient (scalar, before bias correction).
        step: number of updates so far (int32 scalar).
    """

    log_trajectory_length: Array
    log_trajectory_length_avg: Array
    avg_sq_grad: Array
    step: Array


def trajectory_init(initial_trajectory_length: Array | float) -> TrajectoryState:
    """Start at ``initial_trajectory_length`` (positive scalar; float dtype kept, default float)."""
    log_t0 = jnp.log(adapt.as_float(initial_trajectory_length))
    return TrajectoryState(log_t0, log_t0, jnp.zeros_like(log_t0), jnp.zeros((), jnp.int32))


def trajectory_update(
    state: TrajectoryState,
    gradient: Array | float,
    *,
    learning_rate: float = 0.025,
    beta2: float = 0.95,
    max_change: float = 0.35,
) -> TrajectoryState:
    """One Adam ascent step on ``log T`` with the criterion gradient ``dChEES/dT`` (scalar).

    ``v_n = beta2 v_{n-1} + (1 - beta2) g^2``, ``log T += clip(lr g / sqrt(v_n / (1 - beta2^n)), +-max_change)``
    (Adam without its first moment); ``log Tbar_n = n^-1/2 log T_n + (1 - n^-1/2) log Tbar_{n-1}``.
    A non-finite gradient counts as 0.
    """
    dtype = state.log_trajectory_length.dtype
    g = jnp.asarray(gradient, dtype)
    g = jnp.where(jnp.isfinite(g), g, 0.0)
    n = state.step + 1
    nf = n.astype(dtype)
    avg_sq = beta2 * state.avg_sq_grad + (1.0 - beta2) * g * g
    corrected = avg_sq / (1.0 - beta2**nf)
    move = jnp.clip(learning_rate * g / jnp.sqrt(corrected + 1e-30), -max_change, max_change)
    log_t = state.log_trajectory_length + move
    w = nf**-0.5
    log_avg = w * log_t + (1.0 - w) * state.log_trajectory_length_avg
    return TrajectoryState(log_t, log_avg, avg_sq, n)


def trajectory_final(state: TrajectoryState) -> Array:
    """The adapted trajectory length ``exp(log Tbar)`` (the current one if no update was made)."""
    return jnp.exp(jnp.where(state.step > 0, state.log_trajectory_length_avg, state.log_trajectory_length))


def _trajectory_rescale(state: TrajectoryState, log_factor: Array) -> TrajectoryState:
    return state._replace(
        log_trajectory_length=state.log_trajectory_length + log_factor,
        log_trajectory_length_avg=state.log_trajectory_length_avg + log_factor,
    )


def _trajectory_cap(state: TrajectoryState, log_max: Array) -> TrajectoryState:
    return state._replace(log_trajectory_length=jnp.minimum(state.log_trajectory_length, log_max))


# ---------------------------------------------------------------------------
# The chains' running moments
# ---------------------------------------------------------------------------


def mean_within_chain_variance(welford: adapt.WelfordState, axis_name: str | None = None) -> Array:
    """Mean over the chains of each chain's regularised variance (``welford`` with leading ``[C]``) -> ``[d]``.

    Every chain's :func:`~sigmabnn.mcmc.adaptation.welford_final` (Stan's
    shrinkage), averaged over all chains (also those on other devices when
    ``axis_name`` is given): the within-chain part ``W`` of the variance, blind to
    the distances between chains.
    """
    var = jax.vmap(adapt.welford_final)(welford)
    return _sum_chains(var, axis_name) / _sum_chains(jnp.ones(var.shape[:1], var.dtype), axis_name)


# ---------------------------------------------------------------------------
# The ChEES adaptation of step size, trajectory length and mass matrix
# ---------------------------------------------------------------------------


class ChEESAdaptationState(NamedTuple):
    """Adaptation state shared by all chains (each chain holds an identical copy).

    Attributes:
        step_size: ``eps`` used at the next iteration (scalar).
        trajectory_length: ``T`` used at the next iteration, before jitter (scalar, time units).
        inverse_mass_matrix: ``[d]`` diagonal of ``M^-1``.
        dual_averaging: :class:`~sigmabnn.mcmc.adaptation.DualAveragingState` of ``log eps``.
        trajectory: :class:`TrajectoryState` of ``log T``.
    """

    step_size: Array
    trajectory_length: Array
    inverse_mass_matrix: Array
    dual_averaging: adapt.DualAveragingState
    trajectory: TrajectoryState


class ChEESChainAdaptation(NamedTuple):
    """What one chain carries for the adaptation (``ChainState.adaptation``).

    Attributes:
        shared: this chain's copy of the :class:`ChEESAdaptationState` (identical in every chain).
        welford: the chain's own :class:`~sigmabnn.mcmc.adaptation.WelfordState` of the current slow window.
        centre: ``[d]`` the chain's running centre (``centre="within"``; module docstring).
        centre_count: positions averaged into ``centre`` (int32 scalar).
        acceptance: the chain's running acceptance (:func:`running_acceptance`, scalar), restarted at the
            target with the step size at every window end; the step size targets its harmonic mean over the
            chains with ``acceptance="harmonic-running"``.
    """

    shared: ChEESAdaptationState
    welford: adapt.WelfordState
    centre: Array
    centre_count: Array
    acceptance: Array


class ChEESAdaptedParameters(NamedTuple):
    """Tuned ChEES-HMC parameters, one (identical) copy per chain.

    Attributes:
        step_size: ``[C]`` step sizes.
        inverse_mass_matrix: ``[C, d]`` diagonal inverse mass matrices.
        trajectory_length: ``[C]`` trajectory lengths ``T`` (time units); iteration ``n``
            integrates for ``u_n T``, ``u_n`` in ``(0, 1)``.
    """

    step_size: Array
    inverse_mass_matrix: Array
    trajectory_length: Array


def adaptation_update(
    state: ChEESAdaptationState,
    *,
    previous: Array,
    proposed: Array,
    velocity: Array,
    acceptance: Array,
    jitter: Array,
    target_accept: float,
    max_num_steps: int,
    learning_rate: float = 0.025,
    axis_name: str | None = None,
    centre: Array | None = None,
    has_centre: Array | None = None,
    acceptance_statistic: str = "harmonic",
    running: Array | None = None,
) -> ChEESAdaptationState:
    """One warm-up update from the ``[C, ...]`` results of an iteration of all chains.

    ``previous``/``proposed``/``velocity``: ``[C, d]`` start, end and end velocity of
    the trajectories; ``acceptance`` ``[C]``; ``jitter`` ``u_n``; optional per-chain
    ``centre`` ``[C, d]`` and ``has_centre`` ``[C]`` (:func:`criterion_gradient`). ``T`` is
    capped at ``max_num_steps`` steps of the new ``eps``. The step size's dual averaging targets
    ``target_accept`` with the chains' :data:`ACCEPTANCE_STATISTICS` ``acceptance_statistic``, taken of the
    ``[C]`` running acceptances ``running`` for one of :data:`RUNNING_STATISTICS`.
    """
    scale = jax.lax.rsqrt(state.inverse_mass_matrix)
    own = None if centre is None else centre * scale
    grad = criterion_gradient(
        previous * scale, proposed * scale, velocity * scale, acceptance, jitter, axis_name, own, has_centre
    )
    if acceptance_statistic in RUNNING_STATISTICS and running is None:
        raise ValueError(f"the {acceptance_statistic!r} statistic needs the chains' running acceptance")
    of = running if acceptance_statistic in RUNNING_STATISTICS else acceptance
    statistic = ACCEPTANCE_STATISTICS[acceptance_statistic](of, axis_name)
    da = adapt.dual_averaging_update(state.dual_averaging, statistic, target_accept)
    step_size = jnp.exp(da.log_step_size).astype(state.step_size.dtype)
    traj = trajectory_update(state.trajectory, grad, learning_rate=learning_rate)
    traj = _trajectory_cap(traj, jnp.log(step_size * max_num_steps).astype(traj.log_trajectory_length.dtype))
    trajectory_length = jnp.exp(traj.log_trajectory_length).astype(state.trajectory_length.dtype)
    return ChEESAdaptationState(step_size, trajectory_length, state.inverse_mass_matrix, da, traj)


def adaptation_final(state: ChEESAdaptationState) -> tuple[Array, Array, Array]:
    """``(step_size, trajectory_length, inverse_mass_matrix)`` after warm-up (the iterate averages)."""
    da = state.dual_averaging
    step = jnp.where(da.step > 0, adapt.dual_averaging_final(da).astype(state.step_size.dtype), state.step_size)
    t = trajectory_final(state.trajectory).astype(state.trajectory_length.dtype)
    return step, t, state.inverse_mass_matrix


# ---------------------------------------------------------------------------
# Multi-chain iteration: init, chunk (warm-up and sampling), finalize
# ---------------------------------------------------------------------------


def _first(tree: Any) -> Any:
    return jax.tree_util.tree_map(lambda a: a[0], tree)


def _pmin(x: Array, axis_name: str | None) -> Array:
    m = jnp.min(x, axis=0)
    return m if axis_name is None else jax.lax.pmin(m, axis_name)


@functools.cache
def algorithm(
    *,
    target_accept: float | None = None,
    initial_step_size: float = 1.0,
    initial_num_steps: int = 32,
    max_num_steps: int = 1023,
    learning_rate: float = 0.025,
    jitter: str = "halton",
    divergence_threshold: float = 1000.0,
    centre: str = "chains",
    acceptance: str = "harmonic",
) -> SamplingAlgorithm:
    """ChEES-HMC as a :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm` (the same object for the same arguments).

    ``init`` starts the inverse mass matrix at the identity, the step size at the smallest over
    the chains of the "reasonable epsilon" heuristic, and ``T`` at ``initial_num_steps`` of that
    step size. ``step`` gives every chain the same number of leapfrog steps at an iteration
    (``tree_depth`` is 0) and, while the stage adapts, updates the shared adaptation from all
    chains (across devices by ``psum`` over ``axis_name``). ``adapted`` gives
    :class:`ChEESAdaptedParameters`.

    Args:
        target_accept: target of the harmonic-mean acceptance in ``(0, 1)`` (default 0.651).
        initial_step_size: start of the step-size heuristic.
        initial_num_steps: initial trajectory length, in steps of the initial step size (>= 1).
        max_num_steps: cap on the leapfrog steps of one iteration (and on ``T / eps``; >= 1).
        learning_rate: Adam's learning rate on ``log T``.
        jitter: ``"halton"`` (``u_n`` = :func:`halton` of the iteration index) or
            ``"uniform"`` (``u_n`` uniform in ``(0, 1)``, shared by the chains).
        divergence_threshold: energy error (nats) that marks a divergent transition.
        centre: where the criterion measures squared distances from (module docstring):
            ``"chains"`` (the across-chain means, the paper's) or ``"within"`` (each chain's
            running centre).
        acceptance: the statistic of the chains' acceptance probabilities whose running value the
            step size's dual averaging brings to ``target_accept`` (:data:`ACCEPTANCE_STATISTICS`):
            ``"harmonic"``, the paper's harmonic mean, which one chain at zero acceptance sets to
            zero, ``"mean"``, their arithmetic mean, which lets the other chains keep a larger
            step size while one chain meets a step it cannot integrate, or ``"harmonic-running"``, the
            harmonic mean of each chain's running acceptance (about its last 20 iterations), which one
            iteration at zero hardly moves but a chain stuck for many still pulls towards zero.

    Raises:
        ValueError: invalid settings (one-line message).
    """
    if jitter not in ("halton", "uniform"):
        raise ValueError(f"jitter must be 'halton' or 'uniform', got {jitter!r}")
    if centre not in CENTRES:
        raise ValueError(f"centre must be one of {', '.join(CENTRES)}, got {centre!r}")
    if acceptance not in ACCEPTANCE_STATISTICS:
        raise ValueError(f"acceptance must be one of {', '.join(ACCEPTANCE_STATISTICS)}, got {acceptance!r}")
    if int(max_num_steps) < 1:
        raise ValueError(f"max_num_steps must be >= 1, got {max_num_steps}")
    if int(initial_num_steps) < 1:
        raise ValueError(f"initial_num_steps must be >= 1, got {initial_num_steps}")
    if target_accept is not None and not 0.0 < float(target_accept) < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    settings = _Settings(
        DEFAULT_TARGET_ACCEPT if target_accept is None else float(target_accept),
        initial_step_size,
        int(initial_num_steps),
        int(max_num_steps),
        learning_rate,
        jitter,
        centre,
        acceptance,
        hmc.build_proposal_kernel(divergence_threshold=divergence_threshold),
        hmc.build_kernel(divergence_threshold=divergence_threshold),
    )
    return SamplingAlgorithm(
        functools.partial(_init, settings),
        functools.partial(_step, settings),
        finalize,
        adapted_parameters,
        shared_adaptation=True,
    )


class _Settings(NamedTuple):
    target: float
    initial_step_size: float
    initial_num_steps: int
    max_num_steps: int
    learning_rate: float
    jitter: str
    centre: str
    acceptance: str  # the dual averaging's statistic of the chains' acceptance (ACCEPTANCE_STATISTICS)
    kernel: Callable  # HMC transition that also returns the end of its trajectory
    one_step: Callable  # HMC transition, used with one leapfrog step by the step-size heuristic


def _init(settings: _Settings, keys: Array, positions: Array, hyper: Any, logdensity_fn: Callable) -> ChainState:
    """``ChainState [C]`` with identical copies of the shared adaptation state (chain ``c``: key ``keys[c]``)."""

    def start_one(rng_key, position, hyper):
        ld = conditioned(logdensity_fn, hyper)
        state = hmc.init(position, ld)
        imm = jnp.ones_like(position)
        eps0 = jnp.asarray(settings.initial_step_size, position.dtype)
        eps = adapt.find_reasonable_step_size(
            lambda e: settings.one_step(rng_key, state, ld, e, imm, 1)[1].acceptance_rate, eps0
        )
        return state, eps

    num_chains, d = positions.shape
    dtype = positions.dtype
    states, eps = jax.vmap(start_one)(keys, positions, hyper)
    eps = jnp.min(eps)
    t0 = eps * settings.initial_num_steps
    shared = ChEESAdaptationState(
        eps,
        t0,
        jnp.ones((d,), dtype),
        adapt.dual_averaging_init(eps),
        trajectory_init(t0),
    )
    welford = broadcast_chains(adapt.welford_init(d, dtype), num_chains)
    count = jnp.zeros((num_chains,), jnp.int32)
    running = jnp.full((num_chains,), settings.target, dtype)
    adaptation = ChEESChainAdaptation(broadcast_chains(shared, num_chains), welford, positions, count, running)
    return ChainState(states, hyper, adaptation)


def _window_end(
    settings: _Settings, logdensity_fn, keys, chains: ChainState, welford, shared: ChEESAdaptationState, axis_name
) -> ChEESAdaptationState:
    """New inverse mass matrix from the window's moments; rescaled T; re-initialised step size."""
    imm = mean_within_chain_variance(welford, axis_name).astype(shared.inverse_mass_matrix.dtype)
    log_factor = -0.5 * jnp.mean(jnp.log(imm / shared.inverse_mass_matrix))

    def reasonable(key, kstate, hyper):
        ld = conditioned(logdensity_fn, hyper)
        return adapt.find_reasonable_step_size(
            lambda e: settings.one_step(key, kstate, ld, e, imm, 1)[1].acceptance_rate, shared.step_size
        )

    eps = _pmin(jax.vmap(reasonable)(keys, chains.kernel_state, chains.hyper), axis_name)
    traj = _trajectory_rescale(shared.trajectory, log_factor.astype(shared.trajectory.log_trajectory_length.dtype))
    traj = _trajectory_cap(traj, jnp.log(eps * settings.max_num_steps).astype(traj.log_trajectory_length.dtype))
    return ChEESAdaptationState(
        eps,
        jnp.exp(traj.log_trajectory_length).astype(shared.trajectory_length.dtype),
        imm,
        adapt.dual_averaging_init(eps),
        traj,
    )


def _step(
    settings: _Settings, iteration: Iteration, chains: ChainState, logdensity_fn, gibbs_fn, axis_name
) -> tuple[ChainState, IterationInfo]:
    """One iteration of all (local) chains with the shared jittered trajectory, then the shared adaptation."""
    local = chains.kernel_state.position.shape[0]
    shared = _first(chains.adaptation.shared)
    dtype = chains.kernel_state.position.dtype
    if settings.jitter == "halton":
        u = halton(iteration.index).astype(dtype)
    else:
        u = jax.random.uniform(jax.random.fold_in(iteration.key, 2), (), dtype, minval=1e-6)
    n_steps = num_integration_steps(u, shared.trajectory_length, shared.step_size, settings.max_num_steps)

    def one_chain(key, chain: ChainState):
        key_kernel, key_gibbs = jax.random.split(key)
        ld = conditioned(logdensity_fn, chain.hyper)
        kstate, info, proposal = settings.kernel(
            key_kernel, chain.kernel_state, ld, shared.step_size, shared.inverse_mass_matrix, n_steps
        )
        hyper = chain.hyper
        if gibbs_fn is not None:
            hyper = gibbs_fn(key_gibbs, kstate.position, hyper)
            kstate = hmc.init(kstate.position, conditioned(logdensity_fn, hyper))
        velocity = shared.inverse_mass_matrix * proposal.momentum
        return kstate, hyper, info, proposal.position, velocity

    kstate, hyper, info, proposed, velocity = jax.vmap(one_chain)(iteration.step_keys, chains)
    own = chains.adaptation
    within = settings.centre == "within"
    running = running_acceptance(own.acceptance, info.acceptance_rate)
    updated = adaptation_update(
        shared,
        previous=chains.kernel_state.position,
        proposed=proposed,
        velocity=velocity,
        acceptance=info.acceptance_rate,
        jitter=u,
        target_accept=settings.target,
        max_num_steps=settings.max_num_steps,
        learning_rate=settings.learning_rate,
        axis_name=axis_name,
        centre=own.centre if within else None,
        has_centre=own.centre_count >= MIN_CENTRE_DRAWS if within else None,
        acceptance_statistic=settings.acceptance,
        running=running,
    )
    stage = iteration.stage
    new_shared = jax.tree_util.tree_map(lambda n, o: jnp.where(stage != STAGE_FROZEN, n, o), updated, shared)
    w_new = jax.vmap(adapt.welford_update)(chains.adaptation.welford, kstate.position)
    old_welford = chains.adaptation.welford
    welford = jax.tree_util.tree_map(lambda n, o: jnp.where(stage == STAGE_SLOW, n, o), w_new, old_welford)
    centre, centre_count = _centre_update(own.centre, own.centre_count, kstate.position, stage != STAGE_FROZEN)
    new = ChainState(kstate, hyper, chains.adaptation)
    new_shared = jax.lax.cond(
        iteration.is_window_end,
        lambda s: _window_end(settings, logdensity_fn, iteration.end_keys, new, welford, s, axis_name),
        lambda s: s,
        new_shared,
    )
    fresh = broadcast_chains(adapt.welford_init(kstate.position.shape[-1], kstate.position.dtype), local)
    welford = jax.tree_util.tree_map(lambda f, w: jnp.where(iteration.is_window_end, f, w), fresh, welford)
    # the running acceptance moves only while adapting, and restarts with the step size at a window end
    running = jnp.where(stage != STAGE_FROZEN, running, own.acceptance)
    running = jnp.where(iteration.is_window_end, jnp.full_like(running, settings.target), running)
    record = IterationInfo(
        acceptance_rate=info.acceptance_rate,
        step_size=jnp.broadcast_to(shared.step_size, (local,)),
        num_integration_steps=info.num_integration_steps,
        tree_depth=jnp.zeros((local,), jnp.int32),
        is_divergent=info.is_divergent,
        energy=info.energy,
        logdensity=kstate.logdensity,
    )
    adaptation = ChEESChainAdaptation(broadcast_chains(new_shared, local), welford, centre, centre_count, running)
    return ChainState(kstate, hyper, adaptation), record


def _centre_update(centre: Array, count: Array, position: Array, adapting: Array) -> tuple[Array, Array]:
    """Each chain's running centre ``[C, d]`` moved towards its new position while adapting (module docstring)."""
    n = count + 1
    weight = jnp.maximum(1.0 / n.astype(position.dtype), 1.0 / CENTRE_WINDOW)[:, None]
    moved = centre + weight * (position - centre)
    return jnp.where(adapting, moved, centre), jnp.where(adapting, n, count)


@compiler.jit
def finalize(chains: ChainState) -> ChainState:
    """After warm-up: step size and trajectory length = their iterate averages (per-chain copies)."""
    shared = chains.adaptation.shared
    step, t, _ = jax.vmap(adaptation_final)(shared)
    shared = shared._replace(step_size=step, trajectory_length=t)
    return chains._replace(adaptation=chains.adaptation._replace(shared=shared))


def adapted_parameters(chains: ChainState) -> ChEESAdaptedParameters:
    """The :class:`ChEESAdaptedParameters` the chains sample with."""
    ad = chains.adaptation.shared
    return ChEESAdaptedParameters(ad.step_size, ad.inverse_mass_matrix, ad.trajectory_length)
