"""Multi-chain MCMC runner: warm-up, then sampling, optionally with Gibbs updates of hyperparameters.

``sample`` runs ``C`` chains in parallel (``vmap``) with NUTS, HMC or random-walk
Metropolis-Hastings. Each iteration is a weight update with the
hyperparameters fixed, followed (when ``gibbs_fn`` is given) by a Gibbs update
of the hyperparameters and a re-evaluation of the cached log-density (and
gradient) for the new hyperparameters. Warm-up (Stan's windowed adaptation,
:mod:`sigmabnn.mcmc.warmup`) comes first; its draws are discarded (burn-in).
The sampling phase keeps every ``thin``-th draw.

The iterations run inside one jitted chunk function (``lax.scan`` over
``chunk_size`` iterations), compiled once and reused by every chunk of the
warm-up and of the sampling phase; the Python loop over chunks only updates
the progress bar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.draws import PosteriorDraws
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.mcmc.warmup import (
    STAGE_FROZEN,
    AdaptedParameters,
    IterationInfo,
    WarmupInfo,
    _check_common,
    _check_positions,
    concat_pieces,
    finalize_step_size,
    make_chunk_fn,
    make_init_fn,
    make_sampler,
    run_chunks,
)

Array = jax.Array

SampleInfo = IterationInfo
"""Sampling record: fields ``[C, S]`` ``acceptance_rate``, ``step_size``, ``num_integration_steps``,
``tree_depth`` (0 for HMC/MH), ``is_divergent``, ``energy``, ``logdensity``."""


class MCMCResult(NamedTuple):
    """Output of :func:`sample`.

    Attributes:
        draws: :class:`~sigmabnn.draws.PosteriorDraws`, positions ``[C, S, d]`` and hyperparameters
            with leading ``[C, S]`` (``None`` when the log-density takes no hyperparameters).
        info: :data:`SampleInfo`, fields ``[C, S]`` for the kept draws.
        adapted: :class:`~sigmabnn.mcmc.warmup.AdaptedParameters` used during sampling.
        warmup_info: :data:`~sigmabnn.mcmc.warmup.WarmupInfo`, fields ``[C, num_warmup]``.
    """

    draws: PosteriorDraws
    info: IterationInfo
    adapted: AdaptedParameters
    warmup_info: IterationInfo


def _broadcast_chains(hyper: Any, num_chains: int) -> Any:
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains,) + jnp.shape(a)), hyper)


def sample(
    rng_key: Array,
    logdensity_fn: Callable[[Array, Any], Array],
    initial_positions: Array,
    initial_hyper: Any = None,
    *,
    kernel: str = "nuts",
    num_warmup: int = 500,
    num_samples: int = 500,
    thin: int = 1,
    target_accept: float | None = None,
    dense_mass: bool = False,
    max_tree_depth: int = 10,
    num_integration_steps: int = 32,
    random_direction: bool = False,
    gibbs_fn: Callable[[Array, Array, Any], Any] | None = None,
    progress: bool = True,
    chunk_size: int = 50,
    initial_step_size: float = 1.0,
    initial_buffer: int = 75,
    final_buffer: int = 50,
    first_window: int = 25,
) -> MCMCResult:
    """Warm up and sample ``C`` chains of ``logdensity_fn(position, hyper)``.

    Args:
        rng_key: PRNG key (split at the top into init / warm-up / sampling keys).
        logdensity_fn: ``(position [d], hyper) -> scalar`` log-density (unnormalised).
        initial_positions: ``[C, d]`` starting points; their floating dtype is the run's dtype.
        initial_hyper: hyperparameters (pytree without chain axis, shared by all chains at the
            start), or ``None`` when ``logdensity_fn`` ignores its second argument.
        kernel: ``"nuts"``, ``"hmc"`` or ``"mh"``.
        num_warmup: warm-up iterations (>= 0), discarded.
        num_samples: kept draws per chain (>= 1).
        thin: keep every ``thin``-th sampling iteration (``num_samples * thin`` iterations run).
        target_accept: dual-averaging target (default: nuts 0.8, hmc 0.8, mh 0.234).
        dense_mass: adapt a dense inverse mass matrix ``[d, d]`` (default: diagonal ``[d]``).
        max_tree_depth: NUTS maximal tree depth.
        num_integration_steps: HMC leapfrog steps per transition.
        random_direction: HMC integrates forwards or backwards in time at random.
        gibbs_fn: ``(rng_key, position [d], hyper) -> hyper``, applied after every weight update
            (warm-up and sampling); ``None`` keeps ``initial_hyper`` fixed.
        progress: progress bar on stderr (only when it is a terminal).
        chunk_size: iterations per jitted chunk (the progress bar's granularity).
        initial_step_size: start of the step-size heuristic.
        initial_buffer, final_buffer, first_window: Stan's warm-up windows
            (:func:`~sigmabnn.mcmc.adaptation.window_schedule`).

    Returns:
        :class:`MCMCResult`.
    """
    positions = _check_positions(initial_positions)
    _check_common(num_warmup=num_warmup, target_accept=target_accept, chunk_size=chunk_size)
    if int(num_samples) < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if int(thin) < 1:
        raise ValueError(f"thin must be >= 1, got {thin}")
    if gibbs_fn is not None and initial_hyper is None:
        raise ValueError("gibbs_fn needs initial_hyper (the hyperparameters it updates)")
    num_warmup, num_samples, thin = int(num_warmup), int(num_samples), int(thin)
    num_chains = int(positions.shape[0])

    sampler = make_sampler(
        kernel,
        max_tree_depth=max_tree_depth,
        num_integration_steps=num_integration_steps,
        random_direction=random_direction,
    )
    hyper = _broadcast_chains(initial_hyper, num_chains)
    key_init, key_warmup, key_sample = jax.random.split(rng_key, 3)
    init_fn = make_init_fn(sampler, logdensity_fn, dense_mass=dense_mass, initial_step_size=initial_step_size)
    chains = init_fn(key_init, positions, hyper)
    chunk_fn = make_chunk_fn(
        sampler, logdensity_fn, gibbs_fn=gibbs_fn, target_accept=target_accept, dense_mass=dense_mass
    )

    num_iterations = num_samples * thin
    chunk = max(1, min(int(chunk_size), max(num_warmup, num_iterations)))
    bar = ProgressBar(num_warmup + num_iterations, "warmup" if num_warmup else "sample", enabled=progress)

    stage, is_end = adapt.window_schedule(num_warmup, initial_buffer, final_buffer, first_window)
    chains, warm_pieces = run_chunks(chunk_fn, key_warmup, chains, stage, is_end, chunk, bar=bar)
    chains = finalize_step_size(chains)

    if num_warmup:
        bar.set_description("sample")
    keep = (np.arange(num_iterations) % thin) == thin - 1
    frozen = np.full(num_iterations, STAGE_FROZEN, np.int32)
    chains, pieces = run_chunks(
        chunk_fn, key_sample, chains, frozen, np.zeros(num_iterations, bool), chunk, keep=keep, bar=bar
    )
    bar.close()

    position_draws, hyper_draws, info = concat_pieces(pieces, None)
    draws = PosteriorDraws(
        positions=jnp.asarray(position_draws, positions.dtype),
        hyper=jax.tree_util.tree_map(jnp.asarray, hyper_draws),
    )
    if warm_pieces:
        warm_info = concat_pieces([p[2] for p in warm_pieces], None)
    else:
        warm_info = jax.tree_util.tree_map(lambda a: np.zeros((num_chains, 0) + a.shape[2:], a.dtype), info)
    ad = chains.adaptation
    return MCMCResult(
        draws=draws,
        info=SampleInfo(*(jnp.asarray(a) for a in info)),
        adapted=AdaptedParameters(ad.step_size, ad.inverse_mass_matrix),
        warmup_info=WarmupInfo(*(jnp.asarray(a) for a in warm_info)),
    )
