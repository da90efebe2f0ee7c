"""Iterations in jitted chunks: one compiled function for warm-up and sampling, driven from Python.

:func:`make_chunk_fn` scans a :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm`'s step over a
fixed number of iterations (``vmap``-ed chains inside the step; with a mesh, the chains split
over devices by ``shard_map``). :func:`run_chunks` drives it over a schedule of stage codes in
fixed-size chunks (the last one padded), so it is compiled once, and hands every chunk's records
to a callback (the runner's store and commit) while the next chunk already runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from sigmabnn import compiler, interrupts
from sigmabnn.compiler import BoundFunction, as_argument
from sigmabnn.mcmc.algorithm import STAGE_FROZEN, ChainBlock, ChainState, Iteration, SamplingAlgorithm, chain_keys
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.parallel import AXIS as CHAIN_AXIS

Array = jax.Array


def make_chunk_fn(
    algorithm: SamplingAlgorithm,
    logdensity_fn: Callable,
    gibbs_fn: Callable | None = None,
    mesh: Any = None,
    block: ChainBlock | None = None,
) -> BoundFunction:
    """The jitted chunk function shared by warm-up and sampling.

    Returns ``chunk(run_key, chains: ChainState [C], iteration [T] int32, stage [T] int32,
    is_window_end [T] bool, active [T] bool) -> (chains, (positions [T, C, d], hyper [T, C, ...],
    IterationInfo [T, C]))``. Iteration ``t`` uses ``fold_in(run_key, iteration[t])``, so draws do
    not depend on how the run is cut into chunks. Inactive (padding) iterations leave the chains
    unchanged and record zeros. ``logdensity_fn`` and ``gibbs_fn`` are arguments of the compiled
    function (:func:`as_argument`, :class:`BoundFunction`): the arrays of a :class:`jax.tree_util.Partial`
    are its inputs.

    With a ``mesh`` (:func:`sigmabnn.parallel.chain_mesh`) the chains (leading axis of every leaf)
    and the outputs' chain axis are split along its axis (``shard_map``): each device runs its
    share of the chains, and chain ``c`` still uses key ``split(fold_in(run_key, t), C)[c]``. With a
    ``block`` (:class:`~sigmabnn.mcmc.algorithm.ChainBlock`) the chains are that block of a run of
    ``block.total`` chains and use that run's keys.
    """
    num_devices = 1 if mesh is None else int(mesh.size)
    axis_name = None if mesh is None else CHAIN_AXIS

    fns = (as_argument(logdensity_fn), as_argument(gibbs_fn))

    def chunk(run_key, chains, iteration, stage, is_window_end, active, fns):
        logdensity, gibbs = fns

        def body(carry, xs):
            run_key, chains = carry
            index, stage, is_end, active = xs
            key = jax.random.fold_in(run_key, index)
            step_keys, end_keys = chain_keys(key, chains.kernel_state.position.shape[0], num_devices, block)
            iteration = Iteration(index, key, step_keys, end_keys, stage, is_end)

            def run(chains):
                return algorithm.step(iteration, chains, logdensity, gibbs, axis_name)

            def skip(chains):
                record = jax.eval_shape(run, chains)[1]
                return chains, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), record)

            chains, record = jax.lax.cond(active, run, skip, chains)
            return (run_key, chains), (chains.kernel_state.position, chains.hyper, record)

        (_, chains), out = jax.lax.scan(body, (run_key, chains), (iteration, stage, is_window_end, active))
        return chains, out

    if mesh is None:
        return BoundFunction(compiler.jit(chunk), fns)
    chain_axis, replicated = PartitionSpec(CHAIN_AXIS), PartitionSpec()
    sharded = jax.shard_map(
        chunk,
        mesh=mesh,
        in_specs=(replicated, chain_axis, replicated, replicated, replicated, replicated, replicated),
        out_specs=(chain_axis, PartitionSpec(None, CHAIN_AXIS)),
        check_vma=False,
    )
    return BoundFunction(compiler.jit(sharded), fns)


def run_chunks(
    chunk_fn: Callable,
    run_key: Array,
    chains: ChainState,
    stage: np.ndarray,
    is_window_end: np.ndarray,
    chunk_size: int,
    on_chunk: Callable[[int, ChainState, Any, int], None],
    *,
    keep: np.ndarray | None = None,
    bar: ProgressBar | None = None,
    start: int = 0,
) -> ChainState:
    """Drive ``chunk_fn`` over a schedule of ``len(stage)`` iterations in fixed-size chunks; the final chains.

    Chunks start at ``start`` (0, or the iteration a resumed run continues from) and are
    ``chunk_size`` long; the last one is padded with inactive iterations, so every call has the
    same shapes and the chunk function is compiled once. After every chunk
    ``on_chunk(stop, chains, piece, first)`` is called with the number of iterations done, the
    chains, the piece ``(positions, hyper, IterationInfo)`` (host-side NumPy, leading ``[t, C]``)
    of the iterations where ``keep`` is true (all when ``keep`` is None; ``None`` when the chunk
    kept nothing) and the index of its first iteration among the kept ones. After each chunk (and
    its ``on_chunk`` commit) an interrupt requested by a signal handler whose exception was lost
    is raised (:func:`sigmabnn.interrupts.raise_if_pending`). The next chunk is already running
    while a chunk's records are fetched and handed over (one chunk ahead; an interrupt discards it).
    """
    total = int(stage.shape[0])
    keep = np.ones(total, bool) if keep is None else np.asarray(keep, bool)
    kept_before = np.concatenate([[0], np.cumsum(keep)])

    def finish(begin: int, n: int, chunk_chains: ChainState, out: Any) -> None:
        """Host side of a chunk: fetch its kept records, hand them over, update the bar."""
        sel = np.flatnonzero(keep[begin : begin + n])
        piece = jax.tree_util.tree_map(lambda a: np.asarray(a)[sel], out) if sel.size else None
        if piece is None:
            jax.block_until_ready(chunk_chains)
        on_chunk(begin + n, chunk_chains, piece, int(kept_before[begin]))
        if bar is not None:
            bar.update(n)
        interrupts.raise_if_pending()  # a signal whose exception was swallowed (sigmabnn.interrupts)

    # Software pipeline: chunk k + 1 is dispatched (JAX runs it asynchronously) before the host
    # fetches and commits chunk k, so the devices never wait for the host's per-chunk work. The
    # chunk function does not donate its inputs, so chunk k's chains stay valid for its commit.
    pending = None
    for begin in range(int(start), total, chunk_size):
        n = min(chunk_size, total - begin)
        pad = chunk_size - n
        iteration = np.arange(begin, begin + chunk_size, dtype=np.int32)
        st = np.concatenate([stage[begin : begin + n], np.full(pad, STAGE_FROZEN, np.int32)]).astype(np.int32)
        end = np.concatenate([is_window_end[begin : begin + n], np.zeros(pad, bool)])
        active = np.concatenate([np.ones(n, bool), np.zeros(pad, bool)])
        chains, out = chunk_fn(run_key, chains, iteration, st, end, active)
        if pending is not None:
            finish(*pending)
        pending = (begin, n, chains, out)
    if pending is not None:
        finish(*pending)
    return chains
