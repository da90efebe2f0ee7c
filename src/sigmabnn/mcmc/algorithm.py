"""The sampler interface: what every kernel provides and what the runner drives.

Two levels, in the spirit of BlackJAX's ``SamplingAlgorithm(init, step)`` and
``window_adaptation(algorithm, ...)``:

* a :class:`Sampler` is one chain's kernel behind a uniform signature (NUTS, HMC and
  random-walk Metropolis-Hastings: :func:`sigmabnn.mcmc.nuts.sampler`,
  :func:`sigmabnn.mcmc.hmc.sampler`, :func:`sigmabnn.mcmc.mh.sampler`);
* a :class:`SamplingAlgorithm` is what :func:`sigmabnn.mcmc.run.sample` runs: many chains,
  one iteration at a time, with their warm-up adaptation. Stan's windowed adaptation turns
  a :class:`Sampler` into one (:func:`sigmabnn.mcmc.window.window_adaptation`); ChEES-HMC,
  whose chains share their adaptation, is one directly (:func:`sigmabnn.mcmc.chees.algorithm`).

Every chain carries a :class:`ChainState` (kernel state, the parameters ``hyper`` the
log-density is conditioned on, adaptation state), and an iteration of a chain is recorded
as an :class:`IterationInfo`. The iteration is one function for warm-up and sampling: its
*stage* (:data:`STAGE_FAST`, :data:`STAGE_SLOW`, :data:`STAGE_FROZEN`) says what is adapted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.parallel import AXIS as CHAIN_AXIS

Array = jax.Array

STAGE_FAST = adapt.STAGE_FAST
"""Step size adapted (Stan's fast buffers)."""
STAGE_SLOW = adapt.STAGE_SLOW
"""Step size adapted and draws collected for the mass matrix (Stan's slow windows)."""
STAGE_FROZEN = 2
"""Nothing adapted (sampling)."""


class TransitionInfo(NamedTuple):
    """Kernel-independent summary of one transition of one chain.

    Attributes:
        acceptance_rate: what dual averaging consumes (scalar in [0, 1]).
        is_divergent: divergent trajectory (always ``False`` for MH).
        energy: Hamiltonian at the new state (MH: ``-logdensity``).
        num_integration_steps: leapfrog steps taken (int32; MH: 0).
        tree_depth: NUTS tree depth (int32; 0 for HMC and MH).
    """

    acceptance_rate: Array
    is_divergent: Array
    energy: Array
    num_integration_steps: Array
    tree_depth: Array


class IterationInfo(NamedTuple):
    """Per-iteration record of one chain: the transition plus step size and log-density used/reached.

    Attributes:
        acceptance_rate, is_divergent, energy, num_integration_steps, tree_depth: see :class:`TransitionInfo`.
        step_size: step size used for the transition.
        logdensity: log-density of the state after the iteration (after the Gibbs update, if any).
    """

    acceptance_rate: Array
    step_size: Array
    num_integration_steps: Array
    tree_depth: Array
    is_divergent: Array
    energy: Array
    logdensity: Array


SampleInfo = IterationInfo
"""Sampling record: :class:`IterationInfo` fields with leading ``[C, S]``."""
WarmupInfo = IterationInfo
"""Warm-up record: :class:`IterationInfo` fields with leading ``[C, num_warmup]``."""


class ChainState(NamedTuple):
    """Everything one chain carries from one iteration to the next.

    Attributes:
        kernel_state: the kernel's state (``HMCState`` / ``MHState``: ``.position`` ``[d]``,
            ``.logdensity``), cached for the current ``hyper``.
        hyper: the parameters the log-density is conditioned on (pytree, or ``None``).
        adaptation: the algorithm's adaptation state.
    """

    kernel_state: Any
    hyper: Any
    adaptation: Any


class Sampler(NamedTuple):
    """One chain's kernel behind a uniform interface.

    Attributes:
        init: ``(position [d], logdensity_fn) -> state`` (state has ``.position``, ``.logdensity``).
        step: ``(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> (state, TransitionInfo)``.
        one_step_acceptance: ``(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> scalar``,
            the acceptance probability of one single-step proposal (for the step-size heuristic).
        default_target: default target acceptance rate of dual averaging.
    """

    init: Callable
    step: Callable
    one_step_acceptance: Callable
    default_target: float


class Iteration(NamedTuple):
    """One iteration of a phase, as the chains of one device see it inside the runner's scan.

    Attributes:
        index: int32 iteration number within the phase (warm-up or sampling).
        key: the iteration's key ``fold_in(phase_key, index)``.
        step_keys: ``[c]`` keys of this device's chains' transitions.
        end_keys: ``[c]`` keys of their window-end updates.
        stage: int32 :data:`STAGE_FAST`, :data:`STAGE_SLOW` or :data:`STAGE_FROZEN`.
        is_window_end: bool, the iteration ends a slow window.
    """

    index: Array
    key: Array
    step_keys: Array
    end_keys: Array
    stage: Array
    is_window_end: Array


class SamplingAlgorithm(NamedTuple):
    """A multi-chain sampler with its warm-up adaptation: what :func:`sigmabnn.mcmc.run.sample` runs.

    ``logdensity_fn(position [d], hyper) -> scalar``; ``gibbs_fn(rng_key, position [d], hyper) -> hyper``
    or ``None``; ``axis_name`` is the device axis the chains are split along (``None`` on one device):
    an algorithm whose chains share their adaptation reduces over it.

    Attributes:
        init: ``(rng_key, positions [C, d], hyper [C, ...], logdensity_fn) -> ChainState [C]``.
        step: ``(iteration: Iteration, chains: ChainState [c], logdensity_fn, gibbs_fn, axis_name)
            -> (ChainState [c], IterationInfo [c])``: one iteration of the device's ``c`` chains
            (kernel step with ``hyper`` fixed, Gibbs update of ``hyper``, adaptation by ``stage``).
            Only ``lax`` control flow; jitted by the runner inside its chunk function.
        finalize: ``ChainState [C] -> ChainState [C]``, once at the end of warm-up.
        adapted: ``ChainState [C] -> NamedTuple`` of the tuned parameters, fields ``[C, ...]``.
    """

    init: Callable
    step: Callable
    finalize: Callable
    adapted: Callable


def conditioned(logdensity_fn: Callable, hyper: Any) -> Callable[[Array], Array]:
    """``logdensity_fn(position, hyper)`` with ``hyper`` fixed: the kernels' ``logdensity_fn(position)``."""
    return lambda x: logdensity_fn(x, hyper)


def broadcast_chains(tree: Any, num_chains: int) -> Any:
    """Every leaf of ``tree`` repeated along a new leading chain axis ``[num_chains, ...]``."""
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains,) + jnp.shape(a)), tree)


def chain_keys(iteration_key: Array, local: int, num_devices: int) -> tuple[Array, Array]:
    """``(step_keys, end_keys)``, each ``[local]``: the keys of this device's chains at one iteration.

    Chain ``c`` of all ``C = local * num_devices`` chains uses ``split(iteration_key, C)[c]``
    whichever device runs it (with several devices, inside ``shard_map``, this device's chains
    are a contiguous block of the global index), folded with 0 for its transition and 1 for a
    window end.
    """
    keys = jax.random.split(iteration_key, local * num_devices)
    if num_devices > 1:
        keys = jax.lax.dynamic_slice_in_dim(keys, jax.lax.axis_index(CHAIN_AXIS) * local, local)
    return jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
