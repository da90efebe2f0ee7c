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

A run can also be done in pieces (:class:`~sigmabnn.mcmc.algorithm.ChainBlock`): ``sample(...,
block=b)`` runs chains ``b.start .. b.stop - 1`` of a run of ``b.total`` chains with that run's
keys. An algorithm whose chains adapt together (ChEES-HMC) is warmed up whole by
:func:`warm_up`; its blocks then resume from the warmed-up chains
(``store=MemoryStore(commit=...)``), since sampling iterations are per chain.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.compiler import BoundFunction, as_argument
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc.algorithm import (
    STAGE_FROZEN,
    ChainBlock,
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

__all__ = [
    "ChainBlock", "MCMCResult", "MemoryStore", "RunConfig", "RunStore", "SampleInfo", "WarmUp", "WarmupInfo",
    "compile_ahead", "sample", "warm_up",
]  # fmt: skip


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
        if min(self.initial_buffer, self.final_buffer) < 0 or self.first_window < 1:
            raise ValueError(
                f"initial_buffer and final_buffer must be >= 0 and first_window >= 1, got {self.initial_buffer}, "
                f"{self.final_buffer} and {self.first_window}"
            )
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


class WarmUp(NamedTuple):
    """The chains at the end of warm-up (:func:`warm_up`), where sampling starts.

    Attributes:
        iteration: warm-up iterations done (``RunConfig.num_warmup``).
        state: the chains' state as a commit holds it (``state.<i>`` leaves ``[C, ...]``, NumPy), before
            the algorithm's ``finalize``: ``sample(..., store=MemoryStore(commit=(iteration, state)))``
            (or, for chains ``b``, the state's rows ``b.take(state)`` with ``block=b``) samples from it.
        warmup_info: :data:`~sigmabnn.mcmc.algorithm.WarmupInfo`, fields ``[C, num_warmup]`` (NumPy).
    """

    iteration: int
    state: dict[str, np.ndarray]
    warmup_info: IterationInfo


@functools.lru_cache(maxsize=2)
def _jitted_functions(
    algorithm: SamplingAlgorithm, logdensity_fn: Callable, gibbs_fn: Callable | None, mesh: Any, block: ChainBlock
) -> tuple[Callable, Callable]:
    """The jitted init and chunk functions of a run, kept for the next run with the same functions and mesh.

    A run that is interrupted and resumed in the same process, or repeated, then reuses the compiled
    code. At most two are kept (with the log-density closures, hence their data, alive). ``init_fn``
    takes the run's init key; the chains of ``block`` start with their keys in the whole run.
    """
    init_fn = BoundFunction(
        compiler.jit(lambda key, positions, hyper, ld: algorithm.init(block.keys(key), positions, hyper, ld)),
        as_argument(logdensity_fn),
    )
    return init_fn, make_chunk_fn(algorithm, logdensity_fn, gibbs_fn, mesh, None if block.is_whole else block)


def _run_functions(
    algorithm: SamplingAlgorithm, logdensity_fn: Callable, gibbs_fn: Callable | None, config: RunConfig,
    block: ChainBlock,
) -> tuple[Callable, Callable]:  # fmt: skip
    """The init and chunk functions of a run of ``block``'s chains, split over the devices as ``config`` says:
    the one place :func:`sample` and :func:`compile_ahead` get them, so both compile the same functions."""
    mesh = chain_mesh(block.size) if config.split_chains else None
    return _jitted_functions(algorithm, logdensity_fn, gibbs_fn, mesh, block)


class _Run(NamedTuple):
    """The pieces of one run that :func:`sample` and :func:`warm_up` share."""

    init_fn: Callable
    chunk_fn: Callable
    keys: tuple[Array, Array, Array]  # init, warm-up, sampling
    init_args: tuple
    chunk: int
    chain_shapes: Any
    out_shapes: Any


def _setup(
    rng_key: Array, algorithm: SamplingAlgorithm, logdensity_fn: Callable, initial_positions: Array,
    initial_hyper: Any, config: RunConfig, gibbs_fn: Callable | None, block: ChainBlock | None,
) -> _Run:  # fmt: skip
    positions = _check_positions(initial_positions)
    if gibbs_fn is not None and initial_hyper is None:
        raise ValueError("gibbs_fn needs initial_hyper (the hyperparameters it updates)")
    num_chains = int(positions.shape[0])
    block = ChainBlock.whole(num_chains) if block is None else block
    if block.size != num_chains:
        raise ValueError(f"the block holds {block.size} chains, initial_positions {num_chains}")
    init_fn, chunk_fn = _run_functions(algorithm, logdensity_fn, gibbs_fn, config, block)
    hyper = broadcast_chains(initial_hyper, num_chains)
    key_init, key_warmup, key_sample = jax.random.split(rng_key, 3)
    chunk = _chunk_length(config)
    chain_shapes = init_fn.eval_shape(key_init, positions, hyper)
    out_shapes = chunk_fn.eval_shape(key_sample, chain_shapes, *_schedule(chunk))[1]
    return _Run(init_fn, chunk_fn, (key_init, key_warmup, key_sample), (key_init, positions, hyper), chunk,
                chain_shapes, out_shapes)  # fmt: skip


def compile_ahead(
    rng_key: Array, algorithm: SamplingAlgorithm, logdensity_fn: Callable, positions: jax.ShapeDtypeStruct,
    initial_hyper: Any = None, config: RunConfig = RunConfig(), *, gibbs_fn: Callable | None = None,
) -> Callable[[], None]:  # fmt: skip
    """Compile the init and chunk functions of a :func:`sample` run in a background thread; a ``wait()``.

    ``positions``: the shape and dtype of the run's ``initial_positions`` (``[C, d]``), known before
    the positions themselves (e.g. while MAP fits compute them); the other arguments are those the
    run will be given (``initial_hyper`` with the run's shapes and dtypes; its values do not matter).
    XLA keeps what it compiled, so the run that follows with the same functions, shapes and dtypes
    starts without compiling: the compilation (seconds for a BNN) overlaps the caller's work on the
    other core, except the caller's own compilations, which wait for it (two XLA compilations of one
    process do not overlap: ``benchmarks/results/fit_compiles.md``). The draws are those of a run
    without it (the same executables).

    ``wait()`` blocks until the thread is done; call it before the run (the run would otherwise
    compile the same functions a second time). A failure here is not raised: the run compiles,
    and reports the error, itself.
    """

    def compile_run() -> None:
        try:
            num_chains = int(positions.shape[0])
            block = ChainBlock.whole(num_chains)
            init_fn, chunk_fn = _run_functions(algorithm, logdensity_fn, gibbs_fn, config, block)
            hyper = jax.eval_shape(lambda h: broadcast_chains(h, num_chains), initial_hyper)
            keys = jax.eval_shape(lambda k: jax.random.split(k, 3), rng_key)
            key = jax.ShapeDtypeStruct(keys.shape[1:], keys.dtype)
            init_fn.lower(key, positions, hyper).compile()
            chains = init_fn.eval_shape(key, positions, hyper)
            chunk_fn.lower(key, chains, *_schedule(_chunk_length(config))).compile()
        except Exception:  # noqa: BLE001 - the run itself compiles and raises
            pass

    thread = threading.Thread(target=compile_run, name="sigmabnn-compile", daemon=True)
    thread.start()
    return thread.join


def _chunk_length(config: RunConfig) -> int:
    """Iterations per chunk call: ``chunk_size``, or the whole run when it is shorter."""
    return max(1, min(config.chunk_size, max(config.num_warmup, config.num_samples * config.thin)))


def _schedule(chunk: int) -> tuple[np.ndarray, ...]:
    """Placeholder ``(iteration, stage, is_window_end, active)`` inputs of one chunk call (shapes only)."""
    return np.zeros(chunk, np.int32), np.zeros(chunk, np.int32), np.zeros(chunk, bool), np.zeros(chunk, bool)


def _run_warmup(
    run: _Run, config: RunConfig, chains: ChainState, done: int, store: RunStore, snapshot: Callable, bar: Any
) -> ChainState:
    """The warm-up iterations from ``done`` on, each chunk's records written to ``store`` and committed."""

    def warmup_chunk(stop, chains, piece, first):
        write_piece(store, "warmup", first, piece[2])
        store.commit(stop, snapshot(chains))

    windows = (config.initial_buffer, config.final_buffer, config.first_window)
    stage, is_end = adapt.window_schedule(config.num_warmup, *windows)
    return run_chunks(run.chunk_fn, run.keys[1], chains, stage, is_end, run.chunk, warmup_chunk, bar=bar, start=done)


def warm_up(
    rng_key: Array,
    algorithm: SamplingAlgorithm,
    logdensity_fn: Callable[[Array, Any], Array],
    initial_positions: Array,
    initial_hyper: Any = None,
    config: RunConfig = RunConfig(),
    *,
    gibbs_fn: Callable[[Array, Array, Any], Any] | None = None,
    progress: bool = True,
) -> WarmUp:
    """Start and warm up all ``C`` chains exactly as :func:`sample` does before its sampling phase.

    Arguments as :func:`sample`. The returned :class:`WarmUp` holds the chains where sampling starts:
    ``sample`` with the same arguments and ``store=MemoryStore(commit=(w.iteration, w.state))`` gives
    the draws of the uninterrupted run, and so do its blocks (``block=b``, initial positions ``b.take``
    of these, ``store=MemoryStore(commit=(w.iteration, b.take(w.state)))``) put together.
    """
    run = _setup(rng_key, algorithm, logdensity_fn, initial_positions, initial_hyper, config, gibbs_fn, None)
    store = MemoryStore()
    store.allocate(store_specs(run.out_shapes, config.num_warmup, 0))
    chains = run.init_fn(*run.init_args)
    bar = ProgressBar(config.num_warmup, "warmup", enabled=progress)
    if config.num_warmup:
        chains = _run_warmup(run, config, chains, 0, store, lambda chains: {}, bar)
    bar.close()
    return WarmUp(config.num_warmup, state_arrays(chains), read_records(store, "warmup"))


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
    block: ChainBlock | None = None,
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
        block: the chains of ``initial_positions`` are this :class:`~sigmabnn.mcmc.algorithm.ChainBlock`
            of a run of ``block.total`` chains and use its keys (``None``: the whole run). An algorithm
            whose chains adapt together (``shared_adaptation``) samples a block only from a store
            holding warmed-up chains (:func:`warm_up`).

    Returns:
        :class:`MCMCResult`.
    """
    run = _setup(rng_key, algorithm, logdensity_fn, initial_positions, initial_hyper, config, gibbs_fn, block)
    _, _, key_sample = run.keys
    num_warmup, num_samples, thin = config.num_warmup, config.num_samples, config.thin
    num_iterations = num_samples * thin
    total = num_warmup + num_iterations
    in_memory = store is None
    store = MemoryStore() if store is None else store
    snapshot = (lambda chains: {}) if in_memory else state_arrays  # the memory store keeps no commits
    store.allocate(store_specs(run.out_shapes, num_warmup, num_samples))
    partial = block is not None and not block.is_whole and algorithm.shared_adaptation
    if partial and (store.restore() or (0, None))[0] < num_warmup:
        raise ValueError(
            "the chains of this algorithm adapt together: warm them up whole (warm_up) before sampling a block"
        )
    done, chains = _start(store, run.init_fn, run.init_args, run.chain_shapes, total, snapshot)

    bar = ProgressBar(total, "warmup" if done < num_warmup else "sample", enabled=progress)
    if done:
        bar.update(done)

    def sample_chunk(stop, chains, piece, first):
        if piece is not None:
            store.write("positions", first, np.swapaxes(piece[0], 0, 1))
            write_piece(store, "hyper", first, piece[1])
            write_piece(store, "info", first, piece[2])
        store.commit(num_warmup + stop, snapshot(chains))

    if done < num_warmup:
        chains = _run_warmup(run, config, chains, done, store, snapshot, bar)
    if done <= num_warmup:  # commits up to the end of warm-up hold the state before this step
        chains = algorithm.finalize(chains)
        if num_warmup:
            bar.set_description("sample")
    frozen = np.full(num_iterations, STAGE_FROZEN, np.int32)
    no_end = np.zeros(num_iterations, bool)
    keep = (np.arange(num_iterations) % thin) == thin - 1
    start = max(done - num_warmup, 0)
    chains = run_chunks(
        run.chunk_fn, key_sample, chains, frozen, no_end, run.chunk, sample_chunk, keep=keep, bar=bar, start=start
    )
    bar.close()

    convert = jnp.asarray if in_memory else (lambda a: a)
    hyper_leaves, hyper_def = jax.tree_util.tree_flatten(run.out_shapes[1])
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
