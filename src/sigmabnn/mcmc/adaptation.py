"""Warm-up adaptation building blocks: dual averaging, Welford estimators, Stan's windows.

Each adaptation is an ``(init, update, final)`` triple of pure functions on a
NamedTuple state, usable inside ``jit``/``vmap``/``lax.scan``:

* dual averaging of ``log(step_size)`` towards a target acceptance rate
  (Hoffman & Gelman 2014, "The No-U-Turn Sampler", JMLR 15, Algorithm 5,
  after Nesterov 2009);
* Welford's running mean and variance (diagonal) or covariance (dense) for
  the inverse mass matrix, with Stan's shrinkage towards ``1e-3`` (Stan
  Reference Manual, "HMC algorithm parameters: automatic parameter tuning");
* Stan's windowed warm-up schedule (fast initial buffer, doubling slow
  windows, fast terminal buffer), as plain numpy arrays;
* the "find a reasonable epsilon" heuristic (Hoffman & Gelman 2014,
  Algorithm 4) as a ``lax.while_loop``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array

# ---------------------------------------------------------------------------
# Dual averaging (Hoffman & Gelman 2014, Algorithm 5)
# ---------------------------------------------------------------------------


class DualAveragingState(NamedTuple):
    """State of the dual-averaging step-size adaptation.

    Attributes:
        log_step_size: ``log(eps_m)``, the step size to use at the next iteration (scalar).
        log_step_size_avg: ``log(eps_bar_m)``, the iterate average returned at the end (scalar).
        step: number of updates ``m`` done so far (int32 scalar).
        avg_error: ``H_bar_m``, running average of ``target - acceptance_rate`` (scalar).
        mu: shrinkage point ``log(10 * eps_0)`` (scalar).
    """

    log_step_size: Array
    log_step_size_avg: Array
    step: Array
    avg_error: Array
    mu: Array


def as_float(value: Array | float) -> Array:
    """``value`` as an array of its own floating dtype, or of the default float dtype if it is an integer."""
    x = jnp.asarray(value)
    return x if jnp.issubdtype(x.dtype, jnp.floating) else x.astype(jnp.result_type(float))


def dual_averaging_init(initial_step_size: Array | float) -> DualAveragingState:
    """Start dual averaging at ``initial_step_size`` (positive scalar) with ``mu = log(10 * eps0)``."""
    log_eps0 = jnp.log(as_float(initial_step_size))
    zero = jnp.zeros_like(log_eps0)
    return DualAveragingState(
        log_step_size=log_eps0,
        log_step_size_avg=zero,
        step=jnp.zeros((), jnp.int32),
        avg_error=zero,
        mu=jnp.log(10.0) + log_eps0,
    )


def dual_averaging_update(
    state: DualAveragingState,
    acceptance_rate: Array | float,
    target: Array | float = 0.8,
    *,
    gamma: float = 0.05,
    t0: float = 10.0,
    kappa: float = 0.75,
) -> DualAveragingState:
    """One dual-averaging update with the acceptance rate of the last transition.

    ``H_bar_m = (1 - 1/(m + t0)) H_bar_{m-1} + (target - a_m) / (m + t0)``,
    ``log eps_m = mu - sqrt(m) / gamma * H_bar_m``,
    ``log eps_bar_m = m^-kappa log eps_m + (1 - m^-kappa) log eps_bar_{m-1}``.
    A non-finite acceptance rate counts as 0 (a divergence).
    """
    dtype = state.log_step_size.dtype
    a = jnp.asarray(acceptance_rate, dtype)
    a = jnp.where(jnp.isfinite(a), a, jnp.zeros_like(a))
    m = state.step + 1
    mf = m.astype(dtype)
    w = 1.0 / (mf + t0)
    avg_error = (1.0 - w) * state.avg_error + w * (jnp.asarray(target, dtype) - a)
    log_eps = state.mu - jnp.sqrt(mf) / gamma * avg_error
    eta = mf ** (-kappa)
    log_eps_avg = eta * log_eps + (1.0 - eta) * state.log_step_size_avg
    return DualAveragingState(log_eps, log_eps_avg, m, avg_error, state.mu)


def dual_averaging_final(state: DualAveragingState) -> Array:
    """The adapted step size ``exp(log eps_bar)`` (scalar, same dtype as the state)."""
    return jnp.exp(state.log_step_size_avg)


# ---------------------------------------------------------------------------
# Welford running moments
# ---------------------------------------------------------------------------


class WelfordState(NamedTuple):
    """Running moments of a stream of ``[d]`` vectors (Welford 1962).

    Attributes:
        count: number of vectors seen (int32 scalar).
        mean: running mean ``[d]``.
        m2: sum of squared deviations from the mean, ``[d]`` (diagonal) or ``[d, d]`` (dense).
    """

    count: Array
    mean: Array
    m2: Array


def welford_init(dim: int, dtype=None) -> WelfordState:
    """Empty diagonal estimator for ``[dim]`` vectors (dtype: float64 by default)."""
    dtype = jnp.dtype(dtype) if dtype is not None else jnp.result_type(float)
    return WelfordState(jnp.zeros((), jnp.int32), jnp.zeros((dim,), dtype), jnp.zeros((dim,), dtype))


def welford_update(state: WelfordState, x: Array) -> WelfordState:
    """Add one vector ``x [d]`` to a diagonal estimator."""
    count = state.count + 1
    delta = x - state.mean
    mean = state.mean + delta / count.astype(state.mean.dtype)
    m2 = state.m2 + delta * (x - mean)
    return WelfordState(count, mean, m2)


def _shrink(sample_cov: Array, eye_or_ones: Array, n: Array) -> Array:
    n = n.astype(sample_cov.dtype)
    return (n / (n + 5.0)) * sample_cov + 1e-3 * (5.0 / (n + 5.0)) * eye_or_ones


def welford_final(state: WelfordState, regularize: bool = True) -> Array:
    """Sample variance ``[d]`` (``m2 / (n - 1)``), with Stan's shrinkage when ``regularize``.

    Stan's regularisation: ``(n / (n + 5)) * var + 1e-3 * (5 / (n + 5))``.
    With fewer than two vectors the (unregularised) variance is undefined; the
    result is then ``1`` (regularised: the shrinkage of a zero variance).
    """
    n = state.count
    var = state.m2 / jnp.maximum(n - 1, 1).astype(state.m2.dtype)
    var = jnp.where(n >= 2, var, jnp.ones_like(var) if not regularize else jnp.zeros_like(var))
    if regularize:
        var = _shrink(var, jnp.ones_like(var), n)
    return var


def welford_covariance_init(dim: int, dtype=None) -> WelfordState:
    """Empty dense estimator for ``[dim]`` vectors (``m2`` is ``[dim, dim]``)."""
    dtype = jnp.dtype(dtype) if dtype is not None else jnp.result_type(float)
    return WelfordState(jnp.zeros((), jnp.int32), jnp.zeros((dim,), dtype), jnp.zeros((dim, dim), dtype))


def welford_covariance_update(state: WelfordState, x: Array) -> WelfordState:
    """Add one vector ``x [d]`` to a dense estimator."""
    count = state.count + 1
    delta = x - state.mean
    mean = state.mean + delta / count.astype(state.mean.dtype)
    m2 = state.m2 + jnp.outer(x - mean, delta)
    return WelfordState(count, mean, m2)


def welford_covariance_final(state: WelfordState, regularize: bool = True) -> Array:
    """Sample covariance ``[d, d]``, with Stan's shrinkage towards ``1e-3 * I`` when ``regularize``."""
    n = state.count
    cov = state.m2 / jnp.maximum(n - 1, 1).astype(state.m2.dtype)
    cov = 0.5 * (cov + cov.T)
    eye = jnp.eye(cov.shape[0], dtype=cov.dtype)
    cov = jnp.where(n >= 2, cov, eye if not regularize else jnp.zeros_like(cov))
    if regularize:
        cov = _shrink(cov, eye, n)
    return cov


# ---------------------------------------------------------------------------
# Stan's windowed warm-up schedule
# ---------------------------------------------------------------------------

STAGE_FAST = 0
"""Step size adapted, mass matrix fixed (initial and terminal buffers)."""
STAGE_SLOW = 1
"""Step size adapted and draws collected for the mass matrix."""


def window_schedule(
    num_warmup: int, initial_buffer: int = 75, final_buffer: int = 50, first_window: int = 25
) -> tuple[np.ndarray, np.ndarray]:
    """Stan's warm-up schedule as arrays ``(stage [num_warmup] int32, is_window_end [num_warmup] bool)``.

    ``stage`` is :data:`STAGE_FAST` in the initial buffer and the terminal
    buffer and :data:`STAGE_SLOW` inside the slow windows; ``is_window_end``
    marks the last iteration of each slow window (where the mass matrix is
    updated and the step size re-initialised). Windows double in length; a
    window whose successor would not fit before the terminal buffer is
    stretched to reach it. As in Stan, when ``initial_buffer + first_window +
    final_buffer > num_warmup`` the buffers become 15 % and 10 % of
    ``num_warmup`` and the first window the rest; with ``num_warmup < 20`` only
    the step size is adapted (no slow window).

    ``num_warmup=1000`` gives buffers 75 / windows 25, 50, 100, 200, 500 / 50.
    """
    num_warmup = int(num_warmup)
    if num_warmup < 0:
        raise ValueError(f"num_warmup must be >= 0, got {num_warmup}")
    if min(initial_buffer, final_buffer) < 0 or first_window < 1:
        raise ValueError("window_schedule: buffers must be >= 0 and first_window >= 1")
    stage = np.full(num_warmup, STAGE_FAST, dtype=np.int32)
    is_end = np.zeros(num_warmup, dtype=bool)
    if num_warmup < 20:
        return stage, is_end
    if initial_buffer + first_window + final_buffer > num_warmup:
        initial_buffer = int(0.15 * num_warmup)
        final_buffer = int(0.1 * num_warmup)
        first_window = num_warmup - initial_buffer - final_buffer
    last = num_warmup - final_buffer - 1  # index of the last slow iteration
    size = first_window
    end = initial_buffer + first_window - 1
    start = initial_buffer
    while True:
        end = min(end, last)
        stage[start : end + 1] = STAGE_SLOW
        is_end[end] = True
        if end >= last:
            break
        size *= 2
        start = end + 1
        end = end + size
        if end + 2 * size > last:
            end = last
    return stage, is_end


# ---------------------------------------------------------------------------
# Initial step size (Hoffman & Gelman 2014, Algorithm 4)
# ---------------------------------------------------------------------------


def find_reasonable_step_size(
    acceptance_fn: Callable[[Array], Array],
    initial_step_size: Array | float,
    *,
    threshold: float = 0.5,
    max_iterations: int = 100,
    min_step_size: float = 1e-12,
    max_step_size: float = 1e7,
) -> Array:
    """Double or halve a step size until the one-step acceptance probability crosses ``threshold``.

    Args:
        acceptance_fn: ``step_size -> acceptance probability`` of a single
            transition from a fixed state with fixed randomness (e.g. one
            leapfrog step with one fixed momentum: ``min(1, exp(-dH))``). A
            non-finite value counts as 0.
        initial_step_size: starting step size (positive scalar).
        threshold: the acceptance probability to cross (0.5 in the paper).
        max_iterations: bound on the number of doublings/halvings.
        min_step_size, max_step_size: clip of the result.

    Returns:
        The step size after the last doubling/halving (scalar). Only ``lax``
        control flow: usable inside ``jit`` and ``vmap``.
    """
    eps0 = as_float(initial_step_size)
    dtype = eps0.dtype
    log_threshold = jnp.log(jnp.asarray(threshold, dtype))

    def log_accept(eps):
        a = jnp.asarray(acceptance_fn(eps), dtype)
        a = jnp.where(jnp.isfinite(a), a, jnp.zeros_like(a))
        return jnp.log(jnp.clip(a, 0.0, 1.0))

    # One evaluation of acceptance_fn in the program (it holds a gradient): the loop's first pass
    # (i = -1) evaluates it at eps0 and sets the direction; each later pass doubles or halves.
    def keep_going(carry):
        eps, la, direction, i = carry
        crossing = direction * (la - log_threshold) > 0.0
        in_range = (eps > min_step_size) & (eps < max_step_size)
        return (i < 0) | (crossing & in_range & (i < max_iterations))

    def body(carry):
        eps, _, direction, i = carry
        started = i >= 0
        eps = jnp.where(started, eps * jnp.exp2(direction), eps)
        la = log_accept(eps)
        direction = jnp.where(started, direction, jnp.where(la > log_threshold, 1.0, -1.0).astype(dtype))
        return eps, la, direction, i + 1

    start = (eps0, jnp.zeros((), dtype), jnp.ones((), dtype), jnp.full((), -1, jnp.int32))
    eps, _, _, _ = jax.lax.while_loop(keep_going, body, start)
    return jnp.clip(eps, min_step_size, max_step_size)
