"""Stan's windowed warm-up: tune each chain's step size and inverse mass matrix.

Stan's scheme (Stan Reference Manual, "HMC algorithm parameters"; Hoffman &
Gelman 2014 for dual averaging): a fast initial buffer (step size only),
slow windows of doubling length in which draws are collected for a diagonal
(or dense) inverse mass matrix, and a fast terminal buffer. At the end of each
slow window the inverse mass matrix is replaced by the regularised Welford
estimate, the step size is re-initialised with the "reasonable epsilon"
heuristic and dual averaging restarts. After warm-up the step size is the
dual-averaging iterate average.

:func:`window_adaptation` turns a :class:`~sigmabnn.mcmc.algorithm.Sampler` (NUTS, HMC or
MH) into a :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm`: every chain adapts on its own.
The stage of an iteration (fast, slow, frozen) selects what is adapted, so one step function
serves warm-up and sampling.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn import compiler
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc.algorithm import (
    STAGE_FROZEN,
    STAGE_SLOW,
    ChainState,
    Iteration,
    IterationInfo,
    Sampler,
    SamplingAlgorithm,
    conditioned,
)

Array = jax.Array


class AdaptedParameters(NamedTuple):
    """Tuned kernel parameters, one set per chain.

    Attributes:
        step_size: ``[C]`` step sizes (position units after mass-matrix scaling).
        inverse_mass_matrix: ``[C, d]`` (diagonal) or ``[C, d, d]`` (dense); an
            estimate of the posterior (co)variance of the position.
    """

    step_size: Array
    inverse_mass_matrix: Array


class AdaptationState(NamedTuple):
    """Adaptation state of one chain (``ChainState.adaptation``).

    Attributes:
        step_size: step size used at the next transition (scalar).
        inverse_mass_matrix: ``[d]`` or ``[d, d]``.
        dual_averaging: :class:`~sigmabnn.mcmc.adaptation.DualAveragingState`.
        welford: :class:`~sigmabnn.mcmc.adaptation.WelfordState` of the current slow window.
    """

    step_size: Array
    inverse_mass_matrix: Array
    dual_averaging: adapt.DualAveragingState
    welford: adapt.WelfordState


def _welford_fns(dense: bool):
    if dense:
        return adapt.welford_covariance_init, adapt.welford_covariance_update, adapt.welford_covariance_final
    return adapt.welford_init, adapt.welford_update, adapt.welford_final


@functools.cache
def window_adaptation(
    sampler: Sampler,
    *,
    target_accept: float | None = None,
    dense_mass: bool = False,
    initial_step_size: float = 1.0,
) -> SamplingAlgorithm:
    """``sampler`` with Stan's windowed adaptation of each chain's step size and inverse mass matrix.

    Args:
        sampler: the kernel (:func:`sigmabnn.mcmc.nuts.sampler`, :func:`sigmabnn.mcmc.hmc.sampler`,
            :func:`sigmabnn.mcmc.mh.sampler`).
        target_accept: dual-averaging target in ``(0, 1)``; ``None`` is the sampler's default.
        dense_mass: adapt a dense ``[d, d]`` inverse mass matrix instead of a diagonal ``[d]``.
        initial_step_size: start of the "reasonable epsilon" heuristic.

    Returns:
        The :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm` (the same object for the same
        arguments); its ``adapted`` gives :class:`AdaptedParameters`.

    Raises:
        ValueError: ``target_accept`` outside ``(0, 1)``.
    """
    if target_accept is not None and not 0.0 < float(target_accept) < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    target = sampler.default_target if target_accept is None else float(target_accept)
    w_init, w_update, w_final = _welford_fns(dense_mass)

    def init(keys, positions, hyper, logdensity_fn):
        """Identity inverse mass matrix, the heuristic's step size (chain ``c`` with key ``keys[c]``)."""

        def init_one(rng_key, position, hyper):
            ld = conditioned(logdensity_fn, hyper)
            state = sampler.init(position, ld)
            d = position.shape[0]
            dtype = position.dtype
            imm = jnp.eye(d, dtype=dtype) if dense_mass else jnp.ones((d,), dtype)
            eps0 = jnp.asarray(initial_step_size, dtype)
            eps = adapt.find_reasonable_step_size(
                lambda e: sampler.one_step_acceptance(rng_key, state, ld, e, imm), eps0
            )
            ad = AdaptationState(eps, imm, adapt.dual_averaging_init(eps), w_init(d, dtype))
            return ChainState(state, hyper, ad)

        return jax.vmap(init_one)(keys, positions, hyper)

    def step(iteration: Iteration, chains: ChainState, logdensity_fn, gibbs_fn, axis_name):
        """Every chain: kernel step (hyper fixed), Gibbs update of hyper, adaptation; then a window end."""

        def transition(rng_key, chain: ChainState, stage):
            key_kernel, key_gibbs = jax.random.split(rng_key)
            ad = chain.adaptation
            ld = conditioned(logdensity_fn, chain.hyper)
            kstate, tinfo = sampler.step(key_kernel, chain.kernel_state, ld, ad.step_size, ad.inverse_mass_matrix)
            hyper = chain.hyper
            if gibbs_fn is not None:
                hyper = gibbs_fn(key_gibbs, kstate.position, hyper)
                kstate = sampler.init(kstate.position, conditioned(logdensity_fn, hyper))
            adapting = stage != STAGE_FROZEN
            da_new = adapt.dual_averaging_update(ad.dual_averaging, tinfo.acceptance_rate, target)
            da = jax.tree_util.tree_map(lambda n, o: jnp.where(adapting, n, o), da_new, ad.dual_averaging)
            step_size = jnp.where(adapting, jnp.exp(da.log_step_size), ad.step_size)
            w_new = w_update(ad.welford, kstate.position)
            welford = jax.tree_util.tree_map(lambda n, o: jnp.where(stage == STAGE_SLOW, n, o), w_new, ad.welford)
            record = IterationInfo(
                acceptance_rate=tinfo.acceptance_rate,
                step_size=ad.step_size,
                num_integration_steps=tinfo.num_integration_steps,
                tree_depth=tinfo.tree_depth,
                is_divergent=tinfo.is_divergent,
                energy=tinfo.energy,
                logdensity=kstate.logdensity,
            )
            return ChainState(kstate, hyper, AdaptationState(step_size, ad.inverse_mass_matrix, da, welford)), record

        def window_end(rng_key, chain: ChainState):
            """New inverse mass matrix, re-initialised step size, fresh dual averaging."""
            ad = chain.adaptation
            imm = w_final(ad.welford).astype(ad.inverse_mass_matrix.dtype)
            d = chain.kernel_state.position.shape[0]
            ld = conditioned(logdensity_fn, chain.hyper)
            eps = adapt.find_reasonable_step_size(
                lambda e: sampler.one_step_acceptance(rng_key, chain.kernel_state, ld, e, imm), ad.step_size
            )
            new_ad = AdaptationState(eps, imm, adapt.dual_averaging_init(eps), w_init(d, imm.dtype))
            return chain._replace(adaptation=new_ad)

        new, record = jax.vmap(transition, in_axes=(0, 0, None))(iteration.step_keys, chains, iteration.stage)
        new = jax.lax.cond(
            iteration.is_window_end, lambda c: jax.vmap(window_end)(iteration.end_keys, c), lambda c: c, new
        )
        return new, record

    return SamplingAlgorithm(init, step, finalize_step_size, adapted_parameters)


@compiler.jit
def finalize_step_size(chains: ChainState) -> ChainState:
    """After warm-up: step size = dual-averaging iterate average (unchanged if no update was made)."""
    ad = chains.adaptation
    da = ad.dual_averaging
    step = jnp.where(da.step > 0, adapt.dual_averaging_final(da).astype(ad.step_size.dtype), ad.step_size)
    return chains._replace(adaptation=ad._replace(step_size=step))


def adapted_parameters(chains: ChainState) -> AdaptedParameters:
    """The :class:`AdaptedParameters` the chains sample with."""
    ad: Any = chains.adaptation
    return AdaptedParameters(ad.step_size, ad.inverse_mass_matrix)
