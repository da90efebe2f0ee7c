"""Multi-chain MCMC runner: warm-up, then sampling, optionally with Gibbs updates of hyperparameters.

``sample`` runs ``C`` chains in parallel (``vmap``) with NUTS, HMC, ChEES-HMC or random-walk
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

Every chunk ends in a *commit* to a run store (:class:`RunStore`): the
chunk's kept draws (and warm-up records) are written to preallocated arrays
``[C, S, ...]`` and the chains' complete state (kernel state, hyperparameters,
step size, mass matrix, dual-averaging and Welford accumulators) is recorded
with the number of iterations done. The default store keeps the arrays in
memory and discards commits; :class:`sigmabnn.io.checkpoint.Checkpoint` writes
them to disk, so draws never accumulate in memory and a killed run can be
resumed. Iteration ``t`` of a phase uses ``fold_in(phase_key, t)``, so a run
resumed from a commit continues with exactly the keys, and the states, of an
uninterrupted run: the draws are bit-identical.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.draws import PosteriorDraws
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.mcmc.warmup import (
    STAGE_FROZEN,
    AdaptedParameters,
    ChainState,
    IterationInfo,
    WarmupInfo,
    _check_common,
    _check_positions,
    broadcast_chains,
    finalize_step_size,
    make_chunk_fn,
    make_init_fn,
    make_sampler,
    run_chunks,
)
from sigmabnn.parallel import chain_mesh

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


ArraySpecs = Mapping[str, tuple[tuple[int, ...], np.dtype]]


class RunStore(Protocol):
    """Where :func:`sample` puts its draws and commits its state, chunk by chunk.

    Array names: ``positions`` ``[C, S, d]``, ``hyper.<i>`` (leaves of the hyperparameters)
    ``[C, S, ...]``, ``info.<field>`` ``[C, S]`` and ``warmup.<field>`` ``[C, num_warmup]``
    (:class:`~sigmabnn.mcmc.warmup.IterationInfo` fields). State names: ``state.<i>`` (leaves
    of the :class:`~sigmabnn.mcmc.warmup.ChainState` ``[C, ...]``).
    """

    def allocate(self, specs: ArraySpecs) -> None:
        """Provide arrays of the given ``{name: (shape, dtype)}`` (create, or check existing ones)."""

    def write(self, name: str, start: int, values: np.ndarray) -> None:
        """``array[name][:, start : start + values.shape[1]] = values``."""

    def read(self, name: str) -> np.ndarray:
        """The whole array ``name``."""

    def commit(self, iteration: int, state: dict[str, np.ndarray]) -> None:
        """Record that ``iteration`` iterations are done, every write so far included, and the chains' state."""

    def restore(self) -> tuple[int, dict[str, np.ndarray]] | None:
        """The last commit ``(iteration, state)``, or ``None`` for a fresh run."""


class MemoryStore:
    """The default :class:`RunStore`: arrays in memory, commits discarded (nothing to resume)."""

    def __init__(self) -> None:
        self.arrays: dict[str, np.ndarray] = {}

    def allocate(self, specs: ArraySpecs) -> None:
        self.arrays = {name: np.zeros(shape, dtype) for name, (shape, dtype) in specs.items()}

    def write(self, name: str, start: int, values: np.ndarray) -> None:
        self.arrays[name][:, start : start + values.shape[1]] = values

    def read(self, name: str) -> np.ndarray:
        return self.arrays[name]

    def commit(self, iteration: int, state: dict[str, np.ndarray]) -> None:
        pass

    def restore(self) -> None:
        return None


def _state_arrays(chains: ChainState) -> dict[str, np.ndarray]:
    return {f"state.{i}": np.asarray(leaf) for i, leaf in enumerate(jax.tree_util.tree_leaves(chains))}


def _restore_chains(template: Any, state: Mapping[str, np.ndarray]) -> ChainState:
    leaves, treedef = jax.tree_util.tree_flatten(template)
    if set(state) != {f"state.{i}" for i in range(len(leaves))}:
        raise ValueError("the checkpointed chain state does not match this run (different sampler settings?)")
    restored = []
    for i, spec in enumerate(leaves):
        a = np.asarray(state[f"state.{i}"])
        if a.shape != tuple(spec.shape) or a.dtype != spec.dtype:
            raise ValueError(
                f"the checkpointed chain state does not match this run: state.{i} is {a.dtype}{list(a.shape)}, "
                f"expected {spec.dtype}{list(spec.shape)}"
            )
        restored.append(jnp.asarray(a))
    return jax.tree_util.tree_unflatten(treedef, restored)


def _write_piece(store: RunStore, prefix: str, start: int, tree: Any) -> None:
    """Write a ``[t, C, ...]`` pytree piece as ``[C, t, ...]`` slices of the arrays ``prefix.<i>``."""
    leaves = jax.tree_util.tree_leaves(tree)
    names = tree._fields if isinstance(tree, IterationInfo) else [str(i) for i in range(len(leaves))]
    for name, leaf in zip(names, leaves):
        store.write(f"{prefix}.{name}", start, np.swapaxes(leaf, 0, 1))


def _store_specs(out: Any, num_warmup: int, num_samples: int) -> dict[str, tuple[tuple[int, ...], np.dtype]]:
    """Array specs from the chunk function's output shapes ``(positions, hyper, info)`` ``[T, C, ...]``."""

    def spec(leaf, length):
        return (int(leaf.shape[1]), length) + tuple(int(n) for n in leaf.shape[2:]), np.dtype(leaf.dtype)

    positions, hyper, info = out
    specs = {"positions": spec(positions, num_samples)}
    specs.update({f"hyper.{i}": spec(leaf, num_samples) for i, leaf in enumerate(jax.tree_util.tree_leaves(hyper))})
    specs.update({f"info.{name}": spec(leaf, num_samples) for name, leaf in zip(info._fields, info)})
    specs.update({f"warmup.{name}": spec(leaf, num_warmup) for name, leaf in zip(info._fields, info)})
    return specs


@functools.lru_cache(maxsize=2)
def _jitted_functions(
    kernel, max_tree_depth, num_integration_steps, random_direction, logdensity_fn, gibbs_fn, target_accept,
    dense_mass, initial_step_size, mesh, max_integration_steps=None,
) -> tuple[Callable, Callable]:  # fmt: skip
    """The jitted init and chunk functions of a run, kept for the next run with the same functions and settings.

    A run that is interrupted and resumed in the same process, or repeated, then reuses the compiled
    code. At most two are kept (with the log-density closures, hence their data, alive).
    """
    if kernel == "chees":
        return _chees_functions(
            logdensity_fn, gibbs_fn, target_accept, dense_mass, initial_step_size, num_integration_steps,
            2 ** max_tree_depth - 1 if max_integration_steps is None else max_integration_steps, mesh,
        )  # fmt: skip
    sampler = make_sampler(
        kernel, max_tree_depth=max_tree_depth, num_integration_steps=num_integration_steps,
        random_direction=random_direction,
    )  # fmt: skip
    init_fn = make_init_fn(sampler, logdensity_fn, dense_mass=dense_mass, initial_step_size=initial_step_size)
    chunk_fn = make_chunk_fn(
        sampler, logdensity_fn, gibbs_fn=gibbs_fn, target_accept=target_accept, dense_mass=dense_mass, mesh=mesh
    )
    return init_fn, chunk_fn


def _chees_functions(
    logdensity_fn, gibbs_fn, target_accept, dense_mass, initial_step_size, initial_num_steps, max_num_steps, mesh
) -> tuple[Callable, Callable]:
    """The init and chunk functions of ChEES-HMC (:mod:`sigmabnn.mcmc.chees`): one shared, jittered trajectory."""
    from sigmabnn.mcmc import chees

    if dense_mass:
        raise ValueError("kernel 'chees' adapts a diagonal mass matrix (dense_mass=False)")
    if int(initial_num_steps) < 1 or int(max_num_steps) < 1:
        raise ValueError("kernel 'chees' needs num_integration_steps >= 1 and max_integration_steps >= 1")
    init_fn = chees.make_init_fn(
        logdensity_fn, initial_step_size=initial_step_size, initial_num_steps=initial_num_steps
    )
    chunk_fn = chees.make_chunk_fn(
        logdensity_fn, gibbs_fn=gibbs_fn, target_accept=target_accept, max_num_steps=max_num_steps, mesh=mesh
    )
    return init_fn, chunk_fn


def _finalize(kernel: str, chains: ChainState) -> ChainState:
    if kernel == "chees":
        from sigmabnn.mcmc import chees

        return chees.finalize(chains)
    return finalize_step_size(chains)


def _adapted(kernel: str, chains: ChainState) -> Any:
    if kernel == "chees":
        from sigmabnn.mcmc import chees

        return chees.adapted_parameters(chains)
    ad = chains.adaptation
    return AdaptedParameters(ad.step_size, ad.inverse_mass_matrix)


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
    store: RunStore | None = None,
    split_chains: bool = True,
    max_integration_steps: int | None = None,
) -> MCMCResult:
    """Warm up and sample ``C`` chains of ``logdensity_fn(position, hyper)``.

    Args:
        rng_key: PRNG key (split at the top into init / warm-up / sampling keys).
        logdensity_fn: ``(position [d], hyper) -> scalar`` log-density (unnormalised).
        initial_positions: ``[C, d]`` starting points; their floating dtype is the run's dtype.
        initial_hyper: hyperparameters (pytree without chain axis, shared by all chains at the
            start), or ``None`` when ``logdensity_fn`` ignores its second argument.
        kernel: ``"nuts"``, ``"hmc"``, ``"mh"`` or ``"chees"`` (ChEES-HMC, :mod:`sigmabnn.mcmc.chees`:
            all chains share one step size, diagonal mass matrix and jittered trajectory length,
            adapted across chains; ``adapted`` is then a
            :class:`~sigmabnn.mcmc.chees.ChEESAdaptedParameters` with the trajectory length).
        num_warmup: warm-up iterations (>= 0), discarded.
        num_samples: kept draws per chain (>= 1).
        thin: keep every ``thin``-th sampling iteration (``num_samples * thin`` iterations run).
        target_accept: dual-averaging target (default: nuts 0.8, hmc 0.8, mh 0.234; chees 0.651 for
            the harmonic mean of the chains' acceptance probabilities).
        dense_mass: adapt a dense inverse mass matrix ``[d, d]`` (default: diagonal ``[d]``).
        max_tree_depth: NUTS maximal tree depth.
        num_integration_steps: HMC leapfrog steps per transition (chees: the initial trajectory
            length, in steps of the initial step size).
        random_direction: HMC integrates forwards or backwards in time at random.
        gibbs_fn: ``(rng_key, position [d], hyper) -> hyper``, applied after every weight update
            (warm-up and sampling); ``None`` keeps ``initial_hyper`` fixed.
        progress: progress bar on stderr (only when it is a terminal).
        chunk_size: iterations per jitted chunk (the progress bar's granularity).
        initial_step_size: start of the step-size heuristic.
        initial_buffer, final_buffer, first_window: Stan's warm-up windows
            (:func:`~sigmabnn.mcmc.adaptation.window_schedule`).
        store: a :class:`RunStore` receiving the draws and a commit after every chunk;
            ``None`` keeps them in memory. A store holding a commit is *resumed*: the run
            continues from the committed state (same key, settings and ``chunk_size`` as the
            run that made it give the draws of an uninterrupted run, bit for bit). With a
            store the result's draws and records are the store's arrays (NumPy, possibly
            memory-mapped), not JAX arrays.
        split_chains: split the chains across the backend's devices
            (:func:`sigmabnn.parallel.chain_mesh`; on a CPU, one device per core when
            :func:`sigmabnn.parallel.set_host_device_count` ran first). The draws do not depend
            on the split up to floating-point rounding of vectorised code; ``False`` keeps
            every chain on one device.
        max_integration_steps: chees only: cap on the leapfrog steps of one iteration
            (default ``2**max_tree_depth - 1``, the longest NUTS trajectory).

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

    init_fn, chunk_fn = _jitted_functions(
        kernel, int(max_tree_depth), int(num_integration_steps), bool(random_direction), logdensity_fn, gibbs_fn,
        None if target_accept is None else float(target_accept), bool(dense_mass), float(initial_step_size),
        chain_mesh(num_chains) if split_chains else None, max_integration_steps,
    )  # fmt: skip
    hyper = broadcast_chains(initial_hyper, num_chains)
    key_init, key_warmup, key_sample = jax.random.split(rng_key, 3)

    num_iterations = num_samples * thin
    total = num_warmup + num_iterations
    chunk = max(1, min(int(chunk_size), max(num_warmup, num_iterations)))
    chain_shapes = jax.eval_shape(init_fn, key_init, positions, hyper)
    schedule = (np.zeros(chunk, np.int32), np.zeros(chunk, np.int32), np.zeros(chunk, bool), np.zeros(chunk, bool))
    out_shapes = jax.eval_shape(chunk_fn, key_sample, chain_shapes, *schedule)[1]
    in_memory = store is None
    store = MemoryStore() if store is None else store
    snapshot = (lambda chains: {}) if in_memory else _state_arrays  # the memory store keeps no commits
    specs = _store_specs(out_shapes, num_warmup, num_samples)
    store.allocate(specs)
    restored = store.restore()
    if restored is None:
        done = 0
        chains = init_fn(key_init, positions, hyper)
        store.commit(0, snapshot(chains))
    else:
        done, state = restored
        if not 0 <= done <= total:
            raise ValueError(f"the checkpoint is at iteration {done}, outside this run's 0..{total}")
        chains = _restore_chains(chain_shapes, state)

    bar = ProgressBar(total, "warmup" if done < num_warmup else "sample", enabled=progress)
    if done:
        bar.update(done)

    def warmup_chunk(stop, chains, piece, first):
        _write_piece(store, "warmup", first, piece[2])
        store.commit(stop, snapshot(chains))

    def sample_chunk(stop, chains, piece, first):
        if piece is not None:
            store.write("positions", first, np.swapaxes(piece[0], 0, 1))
            _write_piece(store, "hyper", first, piece[1])
            _write_piece(store, "info", first, piece[2])
        store.commit(num_warmup + stop, snapshot(chains))

    if done < num_warmup:
        stage, is_end = adapt.window_schedule(num_warmup, initial_buffer, final_buffer, first_window)
        chains, _ = run_chunks(
            chunk_fn, key_warmup, chains, stage, is_end, chunk, bar=bar, start=done, on_chunk=warmup_chunk
        )
    if done <= num_warmup:  # commits up to the end of warm-up hold the state before this step
        chains = _finalize(kernel, chains)
        if num_warmup:
            bar.set_description("sample")
    keep = (np.arange(num_iterations) % thin) == thin - 1
    frozen = np.full(num_iterations, STAGE_FROZEN, np.int32)
    chains, _ = run_chunks(
        chunk_fn,
        key_sample,
        chains,
        frozen,
        np.zeros(num_iterations, bool),
        chunk,
        keep=keep,
        bar=bar,
        start=max(done - num_warmup, 0),
        on_chunk=sample_chunk,
    )
    bar.close()

    def records(prefix):
        return IterationInfo(*(np.array(store.read(f"{prefix}.{name}")) for name in IterationInfo._fields))

    convert = jnp.asarray if in_memory else (lambda a: a)
    hyper_leaves, hyper_def = jax.tree_util.tree_flatten(out_shapes[1])
    draws = PosteriorDraws(
        positions=convert(store.read("positions")),
        hyper=jax.tree_util.tree_unflatten(
            hyper_def, [convert(store.read(f"hyper.{i}")) for i in range(len(hyper_leaves))]
        ),
    )
    info, warm_info = records("info"), records("warmup")
    return MCMCResult(
        draws=draws,
        info=SampleInfo(*(convert(a) for a in info)),
        adapted=_adapted(kernel, chains),
        warmup_info=WarmupInfo(*(convert(a) for a in warm_info)),
    )
