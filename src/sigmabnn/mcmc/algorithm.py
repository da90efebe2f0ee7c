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

Chain ``c`` of a run of ``C`` chains draws its random numbers from ``split(key, C)[c]`` of
the run's keys, whatever runs it: a device of a mesh, or a task holding a :class:`ChainBlock`
of the chains (:func:`chain_keys`).
"""

from __future__ import annotations

import dataclasses
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
        init: ``(keys [C], positions [C, d], hyper [C, ...], logdensity_fn) -> ChainState [C]``, chain
            ``c`` starting with its own key ``keys[c]``.
        step: ``(iteration: Iteration, chains: ChainState [c], logdensity_fn, gibbs_fn, axis_name)
            -> (ChainState [c], IterationInfo [c])``: one iteration of the device's ``c`` chains
            (kernel step with ``hyper`` fixed, Gibbs update of ``hyper``, adaptation by ``stage``).
            Only ``lax`` control flow; jitted by the runner inside its chunk function.
        finalize: ``ChainState [C] -> ChainState [C]``, once at the end of warm-up.
        adapted: ``ChainState [C] -> NamedTuple`` of the tuned parameters, fields ``[C, ...]``.
        shared_adaptation: the chains adapt together (statistics across the chains in ``init``
            and in warm-up iterations; ChEES-HMC): a block of the chains cannot be started or
            warmed up apart from the others. Sampling iterations (stage frozen) are per chain for
            every algorithm.
    """

    init: Callable
    step: Callable
    finalize: Callable
    adapted: Callable
    shared_adaptation: bool = False


@dataclasses.dataclass(frozen=True)
class ChainBlock:
    """Chains ``start .. start + size - 1`` of a run of ``total`` chains: a piece of the run done apart.

    Its chains use the keys of those chains in the whole run (:meth:`keys`, :func:`chain_keys`), so a
    run cut into blocks draws what the whole run draws (up to the rounding of vectorised code, which
    can differ with the number of chains evaluated together).

    Attributes:
        start: index of the first chain (>= 0).
        size: number of chains (>= 1).
        total: chains of the whole run (>= ``start + size``).
    """

    start: int
    size: int
    total: int

    def __post_init__(self) -> None:
        for name in ("start", "size", "total"):
            object.__setattr__(self, name, int(getattr(self, name)))
        if self.start < 0 or self.size < 1 or self.start + self.size > self.total:
            raise ValueError(f"a block of chains needs 0 <= start < start + size <= total, got {self}")

    @classmethod
    def whole(cls, num_chains: int) -> ChainBlock:
        """All ``num_chains`` chains of a run."""
        return cls(0, num_chains, num_chains)

    @property
    def stop(self) -> int:
        """One past the last chain's index."""
        return self.start + self.size

    @property
    def is_whole(self) -> bool:
        """Whether the block is the whole run."""
        return self.size == self.total

    def keys(self, key: Array) -> Array:
        """``[size]`` keys of the block's chains: ``split(key, total)[start : stop]``."""
        return jax.random.split(key, self.total)[self.start : self.stop]

    def take(self, tree: Any) -> Any:
        """Every leaf's rows ``start : stop`` along its leading (chain) axis."""
        return jax.tree_util.tree_map(lambda a: a[self.start : self.stop], tree)


def blocks_of(num_chains: int, chains_per_block: int) -> tuple[ChainBlock, ...]:
    """``num_chains`` cut into consecutive blocks of ``chains_per_block`` chains (the last one may be smaller)."""
    if int(chains_per_block) < 1:
        raise ValueError(f"chains per block must be >= 1, got {chains_per_block}")
    n, k = int(num_chains), int(chains_per_block)
    return tuple(ChainBlock(s, min(k, n - s), n) for s in range(0, n, k))


def conditioned(logdensity_fn: Callable, hyper: Any) -> Callable[[Array], Array]:
    """``logdensity_fn(position, hyper)`` with ``hyper`` fixed: the kernels' ``logdensity_fn(position)``."""
    return lambda x: logdensity_fn(x, hyper)


def broadcast_chains(tree: Any, num_chains: int) -> Any:
    """Every leaf of ``tree`` repeated along a new leading chain axis ``[num_chains, ...]``."""
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(jnp.asarray(a), (num_chains,) + jnp.shape(a)), tree)


def chain_keys(
    iteration_key: Array, local: int, num_devices: int, block: ChainBlock | None = None
) -> tuple[Array, Array]:
    """``(step_keys, end_keys)``, each ``[local]``: the keys of this device's chains at one iteration.

    Chain ``c`` of all ``C`` chains of the run uses ``split(iteration_key, C)[c]`` whichever device
    runs it (with several devices, inside ``shard_map``, this device's chains are a contiguous
    block of the global index) and whichever :class:`ChainBlock` of the run it belongs to (``block``
    the chains ``local * num_devices`` of this computation are; ``None``: the whole run), folded
    with 0 for its transition and 1 for a window end.
    """
    block = ChainBlock.whole(local * num_devices) if block is None else block
    if block.size != local * num_devices:
        raise ValueError(f"the block holds {block.size} chains, the computation {local * num_devices}")
    keys = jax.random.split(iteration_key, block.total)
    if num_devices > 1:
        offset = block.start + jax.lax.axis_index(CHAIN_AXIS) * local
        keys = jax.lax.dynamic_slice_in_dim(keys, offset, local)
    elif not block.is_whole:
        keys = keys[block.start : block.stop]
    return jax.vmap(lambda k: jax.random.fold_in(k, 0))(keys), jax.vmap(lambda k: jax.random.fold_in(k, 1))(keys)
