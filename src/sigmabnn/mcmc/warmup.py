"""Windowed warm-up: tune the step size and the inverse mass matrix of each chain.

Stan's scheme (Stan Reference Manual, "HMC algorithm parameters"; Hoffman &
Gelman 2014 for dual averaging): a fast initial buffer (step size only),
slow windows of doubling length in which draws are collected for a diagonal
(or dense) inverse mass matrix, and a fast terminal buffer. At the end of each
slow window the inverse mass matrix is replaced by the regularised Welford
estimate, the step size is re-initialised with the "reasonable epsilon"
heuristic and dual averaging restarts. After warm-up the step size is the
dual-averaging iterate average.

The iteration is one function for warm-up and sampling: a *stage code* per
iteration (fast, slow, frozen) selects what is adapted, so a single jitted
chunk function (``lax.scan`` over a fixed number of iterations, ``vmap`` over
chains inside) serves both phases without recompiling. Chunks are driven by
a Python loop (a schedule), which also updates the progress bar.

Kernels (``"nuts"``, ``"hmc"``, ``"mh"``) are used through their contracts
(:mod:`sigmabnn.mcmc.nuts`, :mod:`sigmabnn.mcmc.hmc`, :mod:`sigmabnn.mcmc.mh`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from sigmabnn import interrupts
from sigmabnn.mcmc import adaptation as adapt
from sigmabnn.mcmc import mh
from sigmabnn.mcmc.progress import ProgressBar
from sigmabnn.parallel import AXIS as CHAIN_AXIS

Array = jax.Array

KERNELS = ("nuts", "hmc", "mh")
DEFAULT_TARGET_ACCEPT = {"nuts": 0.8, "hmc": 0.8, "mh": 0.234}

STAGE_FAST = adapt.STAGE_FAST
STAGE_SLOW = adapt.STAGE_SLOW
STAGE_FROZEN = 2
"""Nothing adapted (sampling)."""


class AdaptedParameters(NamedTuple):
    """Tuned kernel parameters, one set per chain.

    Attributes:
        step_size: ``[C]`` step sizes (position units after mass-matrix scaling).
        inverse_mass_matrix: ``[C, d]`` (diagonal) or ``[C, d, d]`` (dense); an
            estimate of the posterior (co)variance of the position.
    """

    step_size: Array
    inverse_mass_matrix: Array


class TransitionInfo(NamedTuple):
    """Kernel-independent summary of one transition of one chain.

    Attributes:
        acceptance_rate: what dual averaging consumes (scalar in [0, 1]).
        is_divergent: divergent trajectory (always ``False`` for MH).
        energy: Hamiltonian at the new state (MH: ``-logdensity``).
        num_integration_steps: leapfrog steps taken (MH: 0).
        tree_depth: NUTS tree depth (0 for HMC and MH).
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


WarmupInfo = IterationInfo
"""Warm-up record: :class:`IterationInfo` fields with leading ``[C, num_warmup]``."""


class Sampler(NamedTuple):
    """A kernel behind a uniform interface.

    Attributes:
        name: ``"nuts"``, ``"hmc"`` or ``"mh"``.
        init: ``(position [d], logdensity_fn) -> state`` (state has ``.position``, ``.logdensity``).
        step: ``(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> (state, TransitionInfo)``.
        one_step_acceptance: ``(rng_key, state, logdensity_fn, step_size, inverse_mass_matrix) -> scalar``,
            the acceptance probability of one single-step proposal (for the step-size heuristic).
        default_target: default target acceptance rate of dual averaging.
    """

    name: str
    init: Callable
    step: Callable
    one_step_acceptance: Callable
    default_target: float


def make_sampler(
    kernel: str,
    *,
    max_tree_depth: int = 10,
    num_integration_steps: int = 32,
    random_direction: bool = False,
    divergence_threshold: float = 1000.0,
) -> Sampler:
    """Build the :class:`Sampler` for ``kernel`` in ``{"nuts", "hmc", "mh"}``."""
    if kernel not in KERNELS:
        raise ValueError(f"kernel must be one of {', '.join(KERNELS)}, got {kernel!r}")
    if kernel == "mh":
        mh_kernel = mh.build_kernel()

        def mh_step(rng_key, state, logdensity_fn, step_size, imm):
            new, info = mh_kernel(rng_key, state, logdensity_fn, step_size, imm)
            zero = jnp.zeros((), jnp.int32)
            return new, TransitionInfo(info.acceptance_rate, jnp.zeros((), bool), -new.logdensity, zero, zero)

        def mh_one(rng_key, state, logdensity_fn, step_size, imm):
            return mh_kernel(rng_key, state, logdensity_fn, step_size, imm)[1].acceptance_rate

        return Sampler("mh", mh.init, mh_step, mh_one, DEFAULT_TARGET_ACCEPT["mh"])

    from sigmabnn.mcmc import hmc  # the HMC family is imported only when used

    one_step_kernel = hmc.build_kernel(divergence_threshold=divergence_threshold, random_direction=False)

    def hmc_one(rng_key, state, logdensity_fn, step_size, imm):
        return one_step_kernel(rng_key, state, logdensity_fn, step_size, imm, 1)[1].acceptance_rate

    if kernel == "hmc":
        if int(num_integration_steps) < 1:
            raise ValueError(f"num_integration_steps must be >= 1, got {num_integration_steps}")
        hmc_kernel = hmc.build_kernel(divergence_threshold=divergence_threshold, random_direction=random_direction)
        n_steps = int(num_integration_steps)

        def hmc_step(rng_key, state, logdensity_fn, step_size, imm):
            new, info = hmc_kernel(rng_key, state, logdensity_fn, step_size, imm, n_steps)
            return new, TransitionInfo(
                info.acceptance_rate,
                info.is_divergent,
                info.energy,
                jnp.asarray(info.num_integration_steps, jnp.int32),
                jnp.zeros((), jnp.int32),
            )

        return Sampler("hmc", hmc.init, hmc_step, hmc_one, DEFAULT_TARGET_ACCEPT["hmc"])

    from sigmabnn.mcmc import nuts

    if int(max_tree_depth) < 1:
        raise ValueError(f"max_tree_depth must be >= 1, got {max_tree_depth}")
    nuts_kernel = nuts.build_kernel(max_tree_depth=int(max_tree_depth), divergence_threshold=divergence_threshold)

    def nuts_step(rng_key, state, logdensity_fn, step_size, imm):
        new, info = nuts_kernel(rng_key, state, logdensity_fn, step_size, imm)
        return new, TransitionInfo(
            info.acceptance_rate,
            info.is_divergent,
            info.energy,
            jnp.asarray(info.num_integration_steps, jnp.int32),
            jnp.asarray(info.tree_depth, jnp.int32),
        )

    return Sampler("nuts", hmc.init, nuts_step, hmc_one, DEFAULT_TARGET_ACCEPT["nuts"])


class AdaptationState(NamedTuple):
    """Adaptation state of one chain.

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


class ChainState(NamedTuple):
    """Everything one chain carries from one iteration to the next.

    Attributes:
        kernel_state: the kernel's state (``HMCState`` / ``MHState``), cached for the current ``hyper``.
        hyper: hyperparameters the log-density is conditioned on (pytree, or ``None``).
        adaptation: :class:`AdaptationState`.
    """

    kernel_state: Any
    hyper: Any
    adaptation: AdaptationState


def _welford_fns(dense: bool):
    if dense:
        return adapt.welford_covariance_init, adapt.welford_covariance_update, adapt.welford_covariance_final
    return adapt.welford_init, adapt.welford_update, adapt.welford_final


def _conditioned(logdensity_fn: Callable, hyper: Any) -> Callable[[Array], Array]:
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


def make_init_fn(
    sampler: Sampler, logdensity_fn: Callable, *, dense_mass: bool = False, initial_step_size: float = 1.0
) -> Callable:
    """``init(rng_key, positions [C, d], hyper [C, ...]) -> ChainState [C]`` (jitted).

    The inverse mass matrix starts at the identity; the step size at the
    "reasonable epsilon" heuristic from ``initial_step_size``.
    """
    w_init = _welford_fns(dense_mass)[0]

    def init_one(rng_key, position, hyper):
        ld = _conditioned(logdensity_fn, hyper)
        state = sampler.init(position, ld)
        d = position.shape[0]
        dtype = position.dtype
        imm = jnp.eye(d, dtype=dtype) if dense_mass else jnp.ones((d,), dtype)
        eps0 = jnp.asarray(initial_step_size, dtype)
        eps = adapt.find_reasonable_step_size(lambda e: sampler.one_step_acceptance(rng_key, state, ld, e, imm), eps0)
        ad = AdaptationState(eps, imm, adapt.dual_averaging_init(eps), w_init(d, dtype))
        return ChainState(state, hyper, ad)

    @jax.jit
    def init(rng_key, positions, hyper):
        keys = jax.random.split(rng_key, positions.shape[0])
        return jax.vmap(init_one)(keys, positions, hyper)

    return init


def make_chunk_fn(
    sampler: Sampler,
    logdensity_fn: Callable,
    *,
    gibbs_fn: Callable | None = None,
    target_accept: float | None = None,
    dense_mass: bool = False,
    mesh: Any = None,
) -> Callable:
    """The jitted chunk function shared by warm-up and sampling.

    Returns ``chunk(run_key, chains: ChainState [C], iteration [T] int32, stage [T] int32,
    is_window_end [T] bool, active [T] bool) -> (chains, (positions [T, C, d], hyper [T, C, ...],
    IterationInfo [T, C]))``. Iteration ``t`` uses ``fold_in(run_key, iteration[t])``, so draws do
    not depend on how the run is cut into chunks. Inactive (padding) iterations leave the chains
    unchanged; ``stage`` selects the adaptation (:data:`STAGE_FAST`, :data:`STAGE_SLOW`,
    :data:`STAGE_FROZEN`).

    With a ``mesh`` (:func:`sigmabnn.parallel.chain_mesh`) the chains are split along its axis
    (``shard_map``): each device runs its share of the chains with no synchronisation inside a
    chunk, and chain ``c`` still uses key ``split(fold_in(run_key, t), C)[c]``.
    """
    num_devices = 1 if mesh is None else int(mesh.size)
    target = sampler.default_target if target_accept is None else float(target_accept)
    w_init, w_update, w_final = _welford_fns(dense_mass)

    def transition(rng_key, chain: ChainState, stage):
        """One iteration of one chain: kernel step (hyper fixed), Gibbs update of hyper, adaptation."""
        key_kernel, key_gibbs = jax.random.split(rng_key)
        ad = chain.adaptation
        ld = _conditioned(logdensity_fn, chain.hyper)
        kstate, tinfo = sampler.step(key_kernel, chain.kernel_state, ld, ad.step_size, ad.inverse_mass_matrix)
        hyper = chain.hyper
        if gibbs_fn is not None:
            hyper = gibbs_fn(key_gibbs, kstate.position, hyper)
            kstate = sampler.init(kstate.position, _conditioned(logdensity_fn, hyper))
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
        """End of a slow window: new inverse mass matrix, re-initialised step size, fresh dual averaging."""
        ad = chain.adaptation
        imm = w_final(ad.welford).astype(ad.inverse_mass_matrix.dtype)
        d = chain.kernel_state.position.shape[0]
        ld = _conditioned(logdensity_fn, chain.hyper)
        eps = adapt.find_reasonable_step_size(
            lambda e: sampler.one_step_acceptance(rng_key, chain.kernel_state, ld, e, imm), ad.step_size
        )
        new_ad = AdaptationState(eps, imm, adapt.dual_averaging_init(eps), w_init(d, imm.dtype))
        return chain._replace(adaptation=new_ad)

    def body(carry, xs):
        run_key, chains = carry
        iteration, stage, is_end, active = xs
        step_keys, end_keys = chain_keys(
            jax.random.fold_in(run_key, iteration), chains.kernel_state.position.shape[0], num_devices
        )

        step_all = jax.vmap(transition, in_axes=(0, 0, None))

        def run(chains):
            new, record = step_all(step_keys, chains, stage)
            new = jax.lax.cond(is_end, lambda c: jax.vmap(window_end)(end_keys, c), lambda c: c, new)
            return new, record

        def skip(chains):
            record = jax.eval_shape(lambda c: step_all(step_keys, c, stage), chains)[1]
            return chains, jax.tree_util.tree_map(lambda s: jnp.zeros(s.shape, s.dtype), record)

        chains, record = jax.lax.cond(active, run, skip, chains)
        out = (chains.kernel_state.position, chains.hyper, record)
        return (run_key, chains), out

    return jit_chunk(body, mesh)


def jit_chunk(body: Callable, mesh: Any = None) -> Callable:
    """The jitted chunk function ``chunk(run_key, chains, iteration, stage, is_window_end, active)``.

    ``body((run_key, chains), (iteration, stage, is_end, active)) -> ((run_key, chains), out)`` is one
    iteration of all (local) chains; the chunk scans it over the schedule. With a ``mesh`` the chains
    (leading axis of every leaf) and the outputs' chain axis are split along its axis (``shard_map``).
    """

    def chunk(run_key, chains, iteration, stage, is_window_end, active):
        (_, chains), out = jax.lax.scan(body, (run_key, chains), (iteration, stage, is_window_end, active))
        return chains, out

    if mesh is None:
        return jax.jit(chunk)
    chain_axis, replicated = PartitionSpec(CHAIN_AXIS), PartitionSpec()
    sharded = jax.shard_map(
        chunk,
        mesh=mesh,
        in_specs=(replicated, chain_axis, replicated, replicated, replicated, replicated),
        out_specs=(chain_axis, PartitionSpec(None, CHAIN_AXIS)),
        check_vma=False,
    )
    return jax.jit(sharded)


@jax.jit
def finalize_step_size(chains: ChainState) -> ChainState:
    """After warm-up: step size = dual-averaging iterate average (unchanged if no update was made)."""
    ad = chains.adaptation
    da = ad.dual_averaging
    step = jnp.where(da.step > 0, adapt.dual_averaging_final(da).astype(ad.step_size.dtype), ad.step_size)
    return chains._replace(adaptation=ad._replace(step_size=step))


def run_chunks(
    chunk_fn: Callable,
    run_key: Array,
    chains: ChainState,
    stage: np.ndarray,
    is_window_end: np.ndarray,
    chunk_size: int,
    *,
    keep: np.ndarray | None = None,
    bar: ProgressBar | None = None,
    start: int = 0,
    on_chunk: Callable[[int, ChainState, Any, int], None] | None = None,
) -> tuple[ChainState, list]:
    """Drive ``chunk_fn`` over a schedule of ``len(stage)`` iterations in fixed-size chunks.

    Chunks start at ``start`` (0, or the iteration a resumed run continues from) and are
    ``chunk_size`` long; the last one is padded with inactive iterations, so every call has the
    same shapes and the chunk function is compiled once.

    Without ``on_chunk``, returns the final chains and a list of ``(positions, hyper,
    IterationInfo)`` host-side (numpy) pieces with leading ``[t, C]`` axes, restricted to
    iterations where ``keep`` is true (all when ``keep`` is None). With ``on_chunk``, nothing is
    accumulated (the list is empty): after every chunk ``on_chunk(stop, chains, piece, first)`` is
    called with the number of iterations done, the chains, the kept piece (``None`` when the chunk
    kept nothing) and the index of its first iteration among the kept ones. After each chunk (and
    its ``on_chunk`` commit) an interrupt requested by a signal handler whose exception was lost
    is raised (:func:`sigmabnn.interrupts.raise_if_pending`). The next chunk is already running
    while a chunk's records are fetched and handed over (one chunk ahead; an interrupt discards it).
    """
    total = int(stage.shape[0])
    keep = np.ones(total, bool) if keep is None else np.asarray(keep, bool)
    kept_before = np.concatenate([[0], np.cumsum(keep)])
    pieces = []

    def finish(begin: int, n: int, chunk_chains: ChainState, out: Any) -> None:
        """Host side of a chunk: fetch its kept records, hand them over, update the bar."""
        sel = np.flatnonzero(keep[begin : begin + n])
        piece = jax.tree_util.tree_map(lambda a: np.asarray(a)[sel], out) if sel.size else None
        if piece is None:
            jax.block_until_ready(chunk_chains)
        if on_chunk is not None:
            on_chunk(begin + n, chunk_chains, piece, int(kept_before[begin]))
        elif piece is not None:
            pieces.append(piece)
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
    return chains, pieces


def concat_pieces(pieces: list, template: Any) -> Any:
    """Concatenate ``[t, C, ...]`` pieces along time and move chains first: ``[C, T, ...]``."""
    if not pieces:
        return jax.tree_util.tree_map(lambda s: np.zeros((s.shape[1], 0) + s.shape[2:], s.dtype), template)
    joined = jax.tree_util.tree_map(lambda *a: np.concatenate(a, axis=0), *pieces)
    return jax.tree_util.tree_map(lambda a: np.swapaxes(a, 0, 1), joined)


def window_adaptation(
    rng_key: Array,
    kernel: str,
    logdensity_fn: Callable[[Array], Array],
    initial_positions: Array,
    num_warmup: int,
    *,
    target_accept: float | None = None,
    dense_mass: bool = False,
    max_tree_depth: int = 10,
    num_integration_steps: int = 32,
    random_direction: bool = False,
    initial_step_size: float = 1.0,
    chunk_size: int = 50,
    progress: bool = False,
) -> tuple[Any, AdaptedParameters, WarmupInfo]:
    """Run Stan's windowed warm-up of ``kernel`` on ``logdensity_fn(position [d]) -> scalar``.

    Args:
        rng_key: PRNG key.
        kernel: ``"nuts"``, ``"hmc"`` or ``"mh"``.
        logdensity_fn: log-density of a flat position.
        initial_positions: ``[C, d]`` starting points (floating dtype of the run).
        num_warmup: number of warm-up iterations (>= 0).
        target_accept: dual-averaging target (default: nuts 0.8, hmc 0.8, mh 0.234).
        dense_mass: adapt a dense ``[d, d]`` inverse mass matrix instead of a diagonal.
        max_tree_depth, num_integration_steps, random_direction: kernel settings.
        initial_step_size: start of the step-size heuristic.
        chunk_size: iterations per jitted chunk.
        progress: show a progress bar on stderr (terminals only).

    Returns:
        ``(kernel_states [C], AdaptedParameters, WarmupInfo [C, num_warmup])``.
    """
    positions = _check_positions(initial_positions)
    _check_common(num_warmup=num_warmup, target_accept=target_accept, chunk_size=chunk_size)
    sampler = make_sampler(
        kernel,
        max_tree_depth=max_tree_depth,
        num_integration_steps=num_integration_steps,
        random_direction=random_direction,
    )
    ld2 = lambda x, _hyper: logdensity_fn(x)
    key_init, key_run = jax.random.split(rng_key)
    chains = make_init_fn(sampler, ld2, dense_mass=dense_mass, initial_step_size=initial_step_size)(
        key_init, positions, None
    )
    chunk_fn = make_chunk_fn(sampler, ld2, target_accept=target_accept, dense_mass=dense_mass)
    stage, is_end = adapt.window_schedule(num_warmup)
    bar = ProgressBar(num_warmup, "warmup", enabled=progress)
    chunk = max(1, min(int(chunk_size), max(num_warmup, 1)))
    chains, pieces = run_chunks(chunk_fn, key_run, chains, stage, is_end, chunk, bar=bar)
    bar.close()
    chains = finalize_step_size(chains)
    info = _warmup_info(pieces, chains, chunk_fn, key_run)
    ad = chains.adaptation
    return chains.kernel_state, AdaptedParameters(ad.step_size, ad.inverse_mass_matrix), info


def _warmup_info(pieces, chains, chunk_fn, run_key) -> WarmupInfo:
    if pieces:
        return WarmupInfo(*(jnp.asarray(a) for a in concat_pieces([p[2] for p in pieces], None)))
    template = jax.eval_shape(
        chunk_fn,
        run_key,
        chains,
        np.zeros(1, np.int32),
        np.zeros(1, np.int32),
        np.zeros(1, bool),
        np.zeros(1, bool),
    )[1][2]
    return WarmupInfo(*(jnp.asarray(a) for a in concat_pieces([], template)))


def _check_positions(initial_positions: Array) -> Array:
    positions = jnp.asarray(initial_positions)
    if positions.ndim != 2 or positions.shape[0] < 1 or positions.shape[1] < 1:
        raise ValueError(f"initial_positions must have shape [chains, dim], got {tuple(positions.shape)}")
    if not jnp.issubdtype(positions.dtype, jnp.floating):
        raise ValueError(f"initial_positions must be floating point, got {positions.dtype}")
    if not bool(jnp.all(jnp.isfinite(positions))):
        raise ValueError("initial_positions contain non-finite values")
    return positions


def _check_common(*, num_warmup: int, target_accept: float | None, chunk_size: int) -> None:
    if int(num_warmup) < 0:
        raise ValueError(f"num_warmup must be >= 0, got {num_warmup}")
    if target_accept is not None and not 0.0 < float(target_accept) < 1.0:
        raise ValueError(f"target_accept must be in (0, 1), got {target_accept}")
    if int(chunk_size) < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
