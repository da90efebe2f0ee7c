"""Multi-chain MCMC runner: warm-up, then sampling, optionally with Gibbs updates of hyperparameters.

``sample`` runs ``C`` chains of a :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm` (NUTS,
HMC or random-walk Metropolis-Hastings with Stan's windowed adaptation, or ChEES-HMC; built by
:func:`sigmabnn.mcmc.registry.make_algorithm`) with the settings of a :class:`RunConfig`. Each
iteration is a weight update with the hyperparameters fixed, followed (when ``gibbs_fn`` is
given) by a Gibbs update of the hyperparameters and a re-evaluation of the cached log-density
(and gradient) for the new hyperparameters. Warm-up (Stan's windows: the stage of every
iteration) comes first; its draws are discarded (burn-in). The sampling phase keeps every
``thin``-th draw.

The iterations run inside one jitted chunk function (:mod:`sigmabnn.mcmc.chunks`), compiled
once and reused by every chunk of the warm-up and of the sampling phase; the Python loop over
chunks only updates the progress bar and the store.

Every chunk ends in a *commit* to a run store (:class:`~sigmabnn.mcmc.store.RunStore`): the
chunk's kept draws (and warm-up records) and the chains' complete state (kernel state,
hyperparameters, adaptation state) with the number of iterations done. Iteration ``t`` of a
phase uses ``fold_in(phase_key, t)``, so a run resumed from a commit continues with exactly the
keys, and the states, of an uninterrupted run: the draws are bit-identical.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc.algorithm import (
    STAGE_FROZEN,
    ChainState,
    IterationInfo,
    SampleInfo,
    SamplingAlgorithm,
    WarmupInfo,
    broadcast_chains,
)
from sigmabnn.mcmc.chunks import make_chunk_fn, run_chunks
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.mcmc.store import (
    MemoryStore,
    RunStore,
    read_records,
    restore_chains,
    state_arrays,
    store_specs,
    write_piece,
)
from sigmabnn.parallel import chain_mesh

Array = jax.Array

__all__ = ["MCMCResult", "MemoryStore", "RunConfig", "RunStore", "SampleInfo", "WarmupInfo", "sample"]


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How long and in which pieces :func:`sample` runs; validated when built.

    Attributes:
        num_warmup: warm-up iterations (>= 0), discarded.
        num_samples: kept draws per chain (>= 1).
        thin: keep every ``thin``-th sampling iteration (``num_samples * thin`` iterations run).
        chunk_size: iterations per jitted chunk, i.e. between commits and progress updates (>= 1).
        initial_buffer, final_buffer, first_window: Stan's warm-up windows
            (:func:`~sigmabnn.mcmc.adaptation.window_schedule`).
        split_chains: split the chains across the backend's devices
            (:func:`sigmabnn.parallel.chain_mesh`; on a CPU, one device per core when
            :func:`sigmabnn.parallel.set_host_device_count` ran first). The draws do not depend
            on the split up to floating-point rounding of vectorised code; ``False`` keeps
            every chain on one device.
    """

    num_warmup: int = 500
    num_samples: int = 500
    thin: int = 1
    chunk_size: int = 50
    initial_buffer: int = 75
    final_buffer: int = 50
    first_window: int = 25
    split_chains: bool = True

    def __post_init__(self) -> None:
        for name in ("num_warmup", "num_samples", "thin", "chunk_size", "initial_buffer", "final_buffer"):
            object.__setattr__(self, name, int(getattr(self, name)))
        object.__setattr__(self, "first_window", int(self.first_window))
        object.__setattr__(self, "split_chains", bool(self.split_chains))
        if self.num_warmup < 0:
            raise ValueError(f"num_warmup must be >= 0, got {self.num_warmup}")
        if self.num_samples < 1:
            raise ValueError(f"num_samples must be >= 1, got {self.num_samples}")
        if self.thin < 1:
            raise ValueError(f"thin must be >= 1, got {self.thin}")
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {self.chunk_size}")


class MCMCResult(NamedTuple):
    """Output of :func:`sample`.

    Attributes:
        positions: ``[C, S, d]`` kept draws.
        hyper: the hyperparameters at every kept draw, leaves ``[C, S, ...]`` (``None`` when the
            run has none).
        info: :data:`~sigmabnn.mcmc.algorithm.SampleInfo`, fields ``[C, S]`` for the kept draws.
        adapted: the algorithm's tuned parameters (``SamplingAlgorithm.adapted``), fields ``[C, ...]``.
        warmup_info: :data:`~sigmabnn.mcmc.algorithm.WarmupInfo`, fields ``[C, num_warmup]``.
    """

    positions: Array
    hyper: Any
    info: IterationInfo
    adapted: Any
    warmup_info: IterationInfo


@functools.lru_cache(maxsize=2)
def _jitted_functions(
    algorithm: SamplingAlgorithm, logdensity_fn: Callable, gibbs_fn: Callable | None, mesh: Any
) -> tuple[Callable, Callable]:
    """The jitted init and chunk functions of a run, kept for the next run with the same functions and mesh.

    A run that is interrupted and resumed in the same process, or repeated, then reuses the compiled
    code. At most two are kept (with the log-density closures, hence their data, alive).
    """
    init_fn = jax.jit(lambda key, positions, hyper: algorithm.init(key, positions, hyper, logdensity_fn))
    return init_fn, make_chunk_fn(algorithm, logdensity_fn, gibbs_fn, mesh)


def sample(
    rng_key: Array,
    algorithm: SamplingAlgorithm,
    logdensity_fn: Callable[[Array, Any], Array],
    initial_positions: Array,
    initial_hyper: Any = None,
    config: RunConfig = RunConfig(),
    *,
    gibbs_fn: Callable[[Array, Array, Any], Any] | None = None,
    store: RunStore | None = None,
    progress: bool = True,
) -> MCMCResult:
    """Warm up and sample ``C`` chains of ``logdensity_fn(position, hyper)`` with ``algorithm``.

    Args:
        rng_key: PRNG key (split at the top into init / warm-up / sampling keys).
        algorithm: the sampler and its adaptation (:func:`sigmabnn.mcmc.registry.make_algorithm`).
        logdensity_fn: ``(position [d], hyper) -> scalar`` log-density (unnormalised).
        initial_positions: ``[C, d]`` starting points; their floating dtype is the run's dtype.
        initial_hyper: hyperparameters (pytree without chain axis, shared by all chains at the
            start), or ``None`` when ``logdensity_fn`` ignores its second argument.
        config: :class:`RunConfig`.
        gibbs_fn: ``(rng_key, position [d], hyper) -> hyper``, applied after every weight update
            (warm-up and sampling); ``None`` keeps ``initial_hyper`` fixed.
        store: a :class:`~sigmabnn.mcmc.store.RunStore` receiving the draws and a commit after
            every chunk; ``None`` keeps them in memory. A store holding a commit is *resumed*: the
            run continues from the committed state (same key, algorithm and config as the run that
            made it give the draws of an uninterrupted run, bit for bit). With a store the
            result's draws and records are the store's arrays (NumPy, possibly memory-mapped),
            not JAX arrays.
        progress: progress bar on stderr (only when it is a terminal).

    Returns:
        :class:`MCMCResult`.
    """
    positions = _check_positions(initial_positions)
    if gibbs_fn is not None and initial_hyper is None:
        raise ValueError("gibbs_fn needs initial_hyper (the hyperparameters it updates)")
    num_chains = int(positions.shape[0])
    mesh = chain_mesh(num_chains) if config.split_chains else None
    init_fn, chunk_fn = _jitted_functions(algorithm, logdensity_fn, gibbs_fn, mesh)
    hyper = broadcast_chains(initial_hyper, num_chains)
    key_init, key_warmup, key_sample = jax.random.split(rng_key, 3)

    num_warmup, num_samples, thin = config.num_warmup, config.num_samples, config.thin
    num_iterations = num_samples * thin
    total = num_warmup + num_iterations
    chunk = max(1, min(config.chunk_size, max(num_warmup, num_iterations)))
    chain_shapes = jax.eval_shape(init_fn, key_init, positions, hyper)
    schedule = (np.zeros(chunk, np.int32), np.zeros(chunk, np.int32), np.zeros(chunk, bool), np.zeros(chunk, bool))
    out_shapes = jax.eval_shape(chunk_fn, key_sample, chain_shapes, *schedule)[1]
    in_memory = store is None
    store = MemoryStore() if store is None else store
    snapshot = (lambda chains: {}) if in_memory else state_arrays  # the memory store keeps no commits
    store.allocate(store_specs(out_shapes, num_warmup, num_samples))
    done, chains = _start(store, init_fn, (key_init, positions, hyper), chain_shapes, total, snapshot)

    bar = ProgressBar(total, "warmup" if done < num_warmup else "sample", enabled=progress)
    if done:
        bar.update(done)

    def warmup_chunk(stop, chains, piece, first):
        write_piece(store, "warmup", first, piece[2])
        store.commit(stop, snapshot(chains))

    def sample_chunk(stop, chains, piece, first):
        if piece is not None:
            store.write("positions", first, np.swapaxes(piece[0], 0, 1))
            write_piece(store, "hyper", first, piece[1])
            write_piece(store, "info", first, piece[2])
        store.commit(num_warmup + stop, snapshot(chains))

    if done < num_warmup:
        windows = (config.initial_buffer, config.final_buffer, config.first_window)
        stage, is_end = adapt.window_schedule(num_warmup, *windows)
        chains = run_chunks(chunk_fn, key_warmup, chains, stage, is_end, chunk, warmup_chunk, bar=bar, start=done)
    if done <= num_warmup:  # commits up to the end of warm-up hold the state before this step
        chains = algorithm.finalize(chains)
        if num_warmup:
            bar.set_description("sample")
    frozen = np.full(num_iterations, STAGE_FROZEN, np.int32)
    no_end = np.zeros(num_iterations, bool)
    keep = (np.arange(num_iterations) % thin) == thin - 1
    start = max(done - num_warmup, 0)
    chains = run_chunks(
        chunk_fn, key_sample, chains, frozen, no_end, chunk, sample_chunk, keep=keep, bar=bar, start=start
    )
    bar.close()

    convert = jnp.asarray if in_memory else (lambda a: a)
    hyper_leaves, hyper_def = jax.tree_util.tree_flatten(out_shapes[1])
    hyper_arrays = [convert(store.read(f"hyper.{i}")) for i in range(len(hyper_leaves))]
    return MCMCResult(
        positions=convert(store.read("positions")),
        hyper=jax.tree_util.tree_unflatten(hyper_def, hyper_arrays),
        info=SampleInfo(*(convert(a) for a in read_records(store, "info"))),
        adapted=algorithm.adapted(chains),
        warmup_info=WarmupInfo(*(convert(a) for a in read_records(store, "warmup"))),
    )


def _start(
    store: RunStore, init_fn: Callable, init_args: tuple, chain_shapes: Any, total: int, snapshot: Callable
) -> tuple[int, ChainState]:
    """``(iterations done, chains)``: fresh chains (committed at 0), or those of the store's last commit."""
    restored = store.restore()
    if restored is None:
        chains = init_fn(*init_args)
        store.commit(0, snapshot(chains))
        return 0, chains
    done, state = restored
    if not 0 <= done <= total:
        raise ValueError(f"the checkpoint is at iteration {done}, outside this run's 0..{total}")
    return done, restore_chains(chain_shapes, state)


def _check_positions(initial_positions: Array) -> Array:
    positions = jnp.asarray(initial_positions)
    if positions.ndim != 2 or positions.shape[0] < 1 or positions.shape[1] < 1:
        raise ValueError(f"initial_positions must have shape [chains, dim], got {tuple(positions.shape)}")
    if not jnp.issubdtype(positions.dtype, jnp.floating):
        raise ValueError(f"initial_positions must be floating point, got {positions.dtype}")
    if not bool(jnp.all(jnp.isfinite(positions))):
        raise ValueError("initial_positions contain non-finite values")
    return positions
