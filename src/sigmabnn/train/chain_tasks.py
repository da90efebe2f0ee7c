"""The chains of one MCMC fit as tasks on a Dask cluster, giving the draws of the one-process fit.

:func:`fit_mcmc_tasks` is :func:`sigmabnn.train.fit_mcmc` with its chains cut into blocks of
consecutive chains (:class:`~sigmabnn.mcmc.algorithm.ChainBlock`, ``chains_per_task`` each, by
default one block per worker). Every task computes for its chains what the one-process run
computes for them, with the same keys: chain ``c`` of ``C`` uses the keys ``split(key, C)[c]``
of the run's phase keys, whichever task runs it. What runs where:

1. MAP starts (when ``config.map`` is set): one task per block, :func:`sigmabnn.map.pretrain_map`
   with ``starts`` (each start's draws, restarts and minibatch order are those of the whole run);
   the submitting process merges them (:func:`sigmabnn.map.merge_map_infos`). Without MAP the
   submitting process draws the starts (no work to share). A ``hetero_student_t`` likelihood's
   scale-head starts (:func:`sigmabnn.scale_head.scale_head_starts`, a pooled residual scale)
   are one task before that.
2. The starting hyperparameters (pooled over all chains' MAP fits): the submitting process.
3. Warm-up and sampling: NUTS, HMC and MH adapt every chain on its own (Stan's windows), so each
   block is warmed up and sampled in one task. ChEES-HMC adapts its step size, trajectory length
   and mass matrix from all chains together (``shared_adaptation``): its start and warm-up are one
   task for all chains (:func:`sigmabnn.mcmc.run.warm_up`), and only its sampling phase, where
   every chain moves on its own with the adapted parameters, is split into blocks, each resuming
   from its chains' warmed-up state.
4. The submitting process joins the blocks' draws, records and adapted parameters in chain order
   and builds the :class:`~sigmabnn.train.TrainInfo` as the one-process fit does (gradient counts
   included).

Equality: every chain gets the keys, starts and states of the one-process run, so the draws are
those of the one-process fit up to floating-point rounding. XLA evaluates the network for all of
a task's chains at once (``vmap``) and may order the sums of a matrix product differently for a
different number of chains, by an ulp; chains then follow the one-process chains within a
rounding error that the sampler may amplify over long runs (as when the chains are split over
devices, :mod:`sigmabnn.parallel`). Every worker compiles its own functions.

Dask is imported only when tasks are submitted (:mod:`sigmabnn.distributed.tasks`).
"""

from __future__ import annotations

import dataclasses
import math
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.draws import PosteriorDraws
from sigmabnn.errors import InputError
from sigmabnn.map import MAPConfig, MAPInfo, cast_data, merge_map_infos
from sigmabnn.mcmc.algorithm import ChainBlock, blocks_of
from sigmabnn.mcmc.progress import log_phase
from sigmabnn.mcmc.run import MCMCResult, MemoryStore, WarmUp, sample, warm_up
from sigmabnn.model.posterior import BNN, Data, Hyperparameters
from sigmabnn.names import MCMC_METHODS
from sigmabnn.train.mcmc import (
    MCMCConfig,
    TrainInfo,
    chain_starts,
    sampling_setup,
    starting_hyper,
    train_info,
)

Array = jax.Array

__all__ = ["ChainProblem", "ChainTasks", "check_runnable", "fit_mcmc_tasks"]


def check_runnable(method: str, *, checkpoint: bool = False, resume: bool = False) -> None:
    """Raise :class:`~sigmabnn.errors.InputError` (one line) unless a fit of ``method`` can run its chains as tasks."""
    if method not in MCMC_METHODS:
        raise InputError(
            f"only MCMC chains run as Dask tasks (client=, --dask): use method {', '.join(MCMC_METHODS)}, "
            f"not {method!r}, or fit {method!r} in one process"
        )
    if resume:
        raise InputError("resuming a checkpointed run happens in one process: it cannot run as Dask tasks")
    if checkpoint:
        raise InputError(
            "a checkpoint streams one process's draws to disk: it cannot be combined with Dask tasks "
            "(save the finished model instead)"
        )


@dataclasses.dataclass(frozen=True)
class ChainTasks:
    """Where the chains of one fit run: a Dask client and the chains of one task.

    Attributes:
        client: a ``dask.distributed.Client``.
        chains_per_task: chains of one task (>= 1); ``None``: the chains split evenly over the
            workers connected when the fit starts, ``ceil(C / workers)`` each (all in one task while
            none is connected: wait for them first, ``client.wait_for_workers``).
    """

    client: Any
    chains_per_task: int | None = None

    def __post_init__(self) -> None:
        if self.chains_per_task is not None and int(self.chains_per_task) < 1:
            raise InputError(f"chains_per_task must be >= 1, got {self.chains_per_task}")

    def blocks(self, num_chains: int) -> tuple[ChainBlock, ...]:
        """The blocks of ``num_chains`` chains, one per task, in chain order."""
        per = self.chains_per_task
        if per is None:
            workers = max(1, len(self.client.nthreads()))
            per = math.ceil(int(num_chains) / workers)
        return blocks_of(num_chains, min(int(per), int(num_chains)))


@dataclasses.dataclass(frozen=True)
class ChainProblem:
    """What every task of one fit needs (sent to each worker once).

    Attributes:
        rng_key: the fit's key (that of :func:`~sigmabnn.train.fit_mcmc`).
        bnn: the model.
        data: training data as given to the fit (host arrays).
        val_data: validation data for MAP early stopping, or ``None``.
        config: the fit's :class:`~sigmabnn.train.MCMCConfig`.
        chunk_size: iterations per jitted chunk of the runner.
    """

    rng_key: Array
    bnn: BNN
    data: Data
    val_data: Data | None
    config: MCMCConfig
    chunk_size: int


class SampleGroup(NamedTuple):
    """A sampling task: its chains, their starts ``[c, d]`` and, after a shared warm-up, their warmed-up state."""

    block: ChainBlock
    positions: np.ndarray
    warm_state: dict[str, np.ndarray] | None


# ---------------------------------------------------------------------------
# Task bodies (run on the workers)
# ---------------------------------------------------------------------------


def map_task(
    block: ChainBlock, problem: ChainProblem, initial_positions: np.ndarray | None
) -> tuple[np.ndarray, MAPInfo]:
    """The MAP starts ``[c, d]`` of ``block``'s chains, as the whole run computes them, and their record.

    ``initial_positions``: the fit's ``[C, d]`` starts of MAP (only the block's rows are read), or ``None``.
    """
    key_map, _ = jax.random.split(problem.rng_key)
    data = cast_data(problem.bnn, problem.data)
    starts = range(block.start, block.stop)
    positions, info = chain_starts(
        key_map, problem.bnn, data, problem.config, problem.val_data, initial_positions, starts
    )
    return np.asarray(positions), info


def scale_head_task(_: int, problem: ChainProblem, map_config: MAPConfig) -> np.ndarray:
    """The scale-head starts ``[C, d]`` of a ``hetero_student_t`` fit (key ``fold_in(key, 1)``, as the trainer's)."""
    from sigmabnn.scale_head import scale_head_starts

    key = jax.random.fold_in(problem.rng_key, 1)
    starts, _ = scale_head_starts(
        key, problem.bnn, problem.data, map_config, int(problem.config.num_chains), problem.val_data
    )
    return np.asarray(starts)


def warm_up_task(_: int, problem: ChainProblem, positions: np.ndarray, hyper: Hyperparameters) -> WarmUp:
    """Start and warm up all chains together (an algorithm with a shared adaptation)."""
    _, key_sample = jax.random.split(problem.rng_key)
    setup = sampling_setup(problem.bnn, problem.data, problem.config, problem.chunk_size)
    return warm_up(
        key_sample, setup.algorithm, setup.logdensity, jnp.asarray(positions), hyper, setup.run_config,
        gibbs_fn=setup.gibbs_fn, progress=False,
    )  # fmt: skip


def sample_task(group: SampleGroup, problem: ChainProblem, hyper: Hyperparameters) -> MCMCResult:
    """Warm up (unless warmed up already) and sample ``group``'s chains with the whole run's keys; host arrays."""
    _, key_sample = jax.random.split(problem.rng_key)
    setup = sampling_setup(problem.bnn, problem.data, problem.config, problem.chunk_size)
    store = None
    if group.warm_state is not None:
        store = MemoryStore(commit=(setup.run_config.num_warmup, group.warm_state))
    result = sample(
        key_sample, setup.algorithm, setup.logdensity, jnp.asarray(group.positions), hyper, setup.run_config,
        gibbs_fn=setup.gibbs_fn, store=store, progress=False, block=group.block,
    )  # fmt: skip
    return jax.device_get(result)


# ---------------------------------------------------------------------------
# The submitting process
# ---------------------------------------------------------------------------


def _submit(
    client: Any, fn: Callable, items: Sequence[Any], phase: str, token: str, blocks: Sequence[ChainBlock | None],
    **kwargs: Any,
) -> list[Any]:  # fmt: skip
    """``fn(item, **kwargs)`` for every item as one task each; results in the items' order."""
    from sigmabnn.distributed.tasks import map_unordered

    keys = [f"sigmabnn-{phase}-{token}" + ("" if b is None else f"-chains-{b.start}-{b.stop - 1}") for b in blocks]
    out: list[Any] = [None] * len(items)
    for i, result in map_unordered(client, fn, items, keys=keys, **kwargs):
        out[i] = result
    return out


def _join(pieces: Sequence[Any]) -> Any:
    """Pytrees with a leading chain axis, joined along it (host arrays)."""
    return jax.tree_util.tree_map(lambda *a: np.concatenate([np.asarray(x) for x in a]), *pieces)


def _host(data: Data | None) -> Data | None:
    return None if data is None else Data(*(None if a is None else np.asarray(a) for a in data))


def scale_head_starts_on(
    tasks: ChainTasks, rng_key: Array, bnn: BNN, data: Data, config: MCMCConfig, map_config: MAPConfig,
    val_data: Data | None = None,
) -> np.ndarray:  # fmt: skip
    """:func:`sigmabnn.scale_head.scale_head_starts` of a fit (key ``fold_in(rng_key, 1)``) as one task."""
    problem = ChainProblem(rng_key, bnn, _host(data), _host(val_data), config, 50)
    token = uuid.uuid4().hex[:8]
    return _submit(tasks.client, scale_head_task, [0], "scale-head", token, [None],
                   problem=problem, map_config=map_config)[0]  # fmt: skip


def fit_mcmc_tasks(
    tasks: ChainTasks,
    rng_key: Array,
    bnn: BNN,
    data: Data,
    config: MCMCConfig | None = None,
    val_data: Data | None = None,
    progress: bool = True,
    chunk_size: int = 50,
    initial_positions: Array | None = None,
) -> tuple[PosteriorDraws, TrainInfo]:
    """:func:`sigmabnn.train.fit_mcmc` (no checkpoint) with its chains as tasks on ``tasks.client``.

    Arguments and results as :func:`~sigmabnn.train.fit_mcmc`; what runs where is in the module
    docstring. ``progress``: a line per phase on stderr (off a terminal); the tasks run quietly.
    The wall times of :class:`~sigmabnn.train.TrainInfo` are those of the phases seen from the
    submitting process (tasks, transfers and the workers' compilation included).

    Raises:
        ValueError: invalid settings (here or in a task); whatever a task raised.
    """
    config = MCMCConfig() if config is None else config
    setup = sampling_setup(bnn, data, config, chunk_size)
    num_chains = int(config.num_chains)
    blocks = tasks.blocks(num_chains)
    client, token = tasks.client, uuid.uuid4().hex[:8]
    problem = client.scatter(
        ChainProblem(rng_key, bnn, _host(data), _host(val_data), config, int(chunk_size)), broadcast=True, hash=False
    )
    where = f"{len(blocks)} task{'s' if len(blocks) > 1 else ''}"

    t_start = time.perf_counter()
    if config.map is not None:
        starts = None if initial_positions is None else np.asarray(initial_positions)
        pieces = _submit(client, map_task, blocks, "map", token, blocks, problem=problem, initial_positions=starts)
        positions = jnp.asarray(np.concatenate([p for p, _ in pieces]))
        map_info: MAPInfo | None = merge_map_infos([info for _, info in pieces])
    else:
        key_map, _ = jax.random.split(rng_key)
        positions, map_info = chain_starts(key_map, bnn, setup.data, config, val_data, initial_positions)
    hyper = jax.device_get(starting_hyper(bnn, setup, config, positions))
    map_seconds = time.perf_counter() - t_start
    if map_info is not None:
        steps = int(np.max(map_info.num_steps_run))
        log_phase(f"map done ({num_chains} starts in {where}, up to {steps} steps)", map_seconds, progress)

    t_map = time.perf_counter()
    host_positions = np.asarray(positions)
    warm = None
    if setup.algorithm.shared_adaptation:
        warm = _submit(client, warm_up_task, [0], "warmup", token, [None],
                       problem=problem, positions=host_positions, hyper=hyper)[0]  # fmt: skip
        log_phase("warm-up done (1 task, all chains)", time.perf_counter() - t_map, progress)
    groups = [SampleGroup(b, b.take(host_positions), None if warm is None else b.take(warm.state)) for b in blocks]
    results = _submit(client, sample_task, groups, "chains", token, blocks, problem=problem, hyper=hyper)
    joined = _join(results)
    if warm is not None:
        joined = joined._replace(warmup_info=warm.warmup_info)
    sample_seconds = time.perf_counter() - t_map
    log_phase(f"sampling done ({where})", sample_seconds, progress)
    draws = PosteriorDraws(positions=joined.positions, hyper=joined.hyper)
    return draws, train_info(config, setup, joined, map_info, hyper, map_seconds, sample_seconds)
