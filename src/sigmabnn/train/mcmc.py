"""BNN-level MCMC training: MAP starts -> warm-up -> sampling (+ Gibbs) -> PosteriorDraws.

:func:`fit_mcmc` is what the thesis does by hand (Adam pretraining, then
HMC/NUTS with the network weights; the thesis draft's Algorithm 4), as one
call:

1. one MAP estimate per chain (:func:`sigmabnn.map.pretrain_map`, each start
   from its own random draw) at the BNN's default hyperparameters;
2. when the noise precision is learnt, its initial value is estimated from
   the MAP residuals (the mean of its Gibbs conditional, pooled over chains;
   for Student-t noise the maximum-likelihood scale, see
   :func:`sigmabnn.train.gibbs.initial_noise_precision`);
3. :func:`sigmabnn.mcmc.run.sample`: warm-up and sampling with the kernel's
   sampling algorithm (:func:`sigmabnn.mcmc.registry.make_algorithm`, the one place
   the kernel's name is read), with conjugate Gibbs updates of the precisions
   (:mod:`sigmabnn.train.gibbs`) after every weight update when any are learnt.

Step 3's compiled functions depend only on shapes known before step 1, so they
are compiled in a background thread while the MAP fits run
(:func:`sigmabnn.mcmc.run.compile_ahead`): the compilation, seconds for a BNN,
overlaps the MAP fits' running, though not their own compilation (two XLA
compilations of one process do not overlap: ``benchmarks/results/fit_compiles.md``).
The draws are the same as without it.

With a ``checkpoint`` (:class:`sigmabnn.io.checkpoint.Checkpoint`, or any
:class:`~sigmabnn.mcmc.store.RunStore` with ``save_arrays``/``load_arrays``)
the MAP starts and the initial hyperparameters are saved once computed, and
the runner streams its draws there and commits after every chunk; calling
:func:`fit_mcmc` again with the same arguments and that checkpoint resumes the
run without repeating MAP, and returns the draws of an uninterrupted run.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.draws import PosteriorDraws
from sigmabnn.map import MAPConfig, MAPInfo, cast_data, draw_starts, pretrain_map
from sigmabnn.mcmc.algorithm import SamplingAlgorithm
from sigmabnn.mcmc.progress import log_phase
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import MCMCResult, RunConfig, compile_ahead, sample
from sigmabnn.model.mlp import num_params as count_params
from sigmabnn.model.posterior import BNN, Data, Hyperparameters, make_logdensity
from sigmabnn.train.gibbs import NOISE_LIKELIHOODS, HyperPrior, initial_noise_precision, make_gibbs_fn

Array = jax.Array

__all__ = [
    "MCMCConfig", "SamplingSetup", "TrainInfo", "algorithm_for", "chain_starts", "default_config", "fit_mcmc",
    "run_config_for", "sampling_setup", "starting_hyper", "train_info",
]  # fmt: skip


class MCMCConfig(NamedTuple):
    """Settings of :func:`fit_mcmc`.

    Attributes:
        kernel: ``"nuts"``, ``"hmc"``, ``"chees"`` or ``"mh"``. ``"chees"`` is ChEES-HMC
            (:func:`sigmabnn.mcmc.chees.algorithm`): all chains share one jittered trajectory length,
            adapted during warm-up; it needs starts near the posterior, which the MAP
            pretraining gives (``map`` not ``None`` or ``initial_positions``).
        num_chains: independent chains, each from its own MAP start.
        num_warmup: warm-up iterations per chain (discarded).
        num_samples: kept draws per chain (networks = ``num_chains * num_samples``).
        thin: keep every ``thin``-th sampling iteration.
        target_accept: dual-averaging target; ``None`` is the kernel's default.
        max_tree_depth: NUTS maximal tree depth (at most ``2**depth - 1`` leapfrog steps); for
            ``"chees"`` the cap ``2**depth - 1`` on the leapfrog steps of one iteration.
        num_integration_steps: HMC leapfrog steps per transition (the thesis's L); for
            ``"chees"`` the initial trajectory length in steps of the initial step size.
        random_direction: HMC integrates forwards or backwards at random (thesis Algorithm 4).
        step_size_jitter: ``"hmc"`` only: each transition's step size is scaled by ``1 + j u``,
            ``u`` uniform in ``(-1, 1)``, so a fixed number of steps does not fix the trajectory
            length (:func:`sigmabnn.mcmc.hmc.sampler`); 0 (the default) is no jitter.
        dense_mass: adapt a dense inverse mass matrix instead of a diagonal one.
        learn_noise: Gibbs-sample the noise precision of a Gaussian or Student-t likelihood;
            ``None`` follows ``bnn.likelihood.learn_precision`` (false for other likelihoods).
        learn_prior: Gibbs-sample the per-layer kernel and bias precisions.
        hyperprior: Gamma hyperpriors of the learnt precisions.
        map: MAP pretraining settings; ``None`` skips pretraining and starts
            the chains from Glorot-normal draws.
        noise_from_map: when learning the noise precision, start it at the
            mean of its conditional given the MAP fits (else the likelihood's value).
        chees_centre: ``"chees"`` only: where its trajectory criterion measures squared
            distances from: ``"chains"`` (the across-chain means, Hoffman et al.'s) or
            ``"within"`` (each chain's running centre; for chains in separate modes:
            :mod:`sigmabnn.mcmc.chees`).
        chees_acceptance: ``"chees"`` only: the statistic of the chains' acceptance probabilities
            its step size's dual averaging targets: ``"harmonic"`` (Hoffman et al.'s harmonic mean),
            ``"mean"`` or ``"harmonic-running"`` (:func:`sigmabnn.mcmc.chees.algorithm`'s ``acceptance``).
        initial_buffer: warm-up iterations before the first slow window (Stan's initial fast buffer, 75;
            :func:`sigmabnn.mcmc.adaptation.window_schedule`, which shrinks it to 15 % of a short warm-up).
    """

    kernel: str = "nuts"
    num_chains: int = 4
    num_warmup: int = 1000
    num_samples: int = 250
    thin: int = 1
    target_accept: float | None = None
    max_tree_depth: int = 10
    num_integration_steps: int = 32
    random_direction: bool = False
    step_size_jitter: float = 0.0
    dense_mass: bool = False
    learn_noise: bool | None = None
    learn_prior: bool = False
    hyperprior: HyperPrior = HyperPrior()
    map: MAPConfig | None = MAPConfig()
    noise_from_map: bool = True
    chees_centre: str = "chains"
    chees_acceptance: str = "harmonic"
    initial_buffer: int = 75


class TrainInfo(NamedTuple):
    """What happened in :func:`fit_mcmc`.

    Attributes:
        sample_info: the runner's per-draw record (fields ``[C, S]``).
        warmup_info: the runner's per-iteration warm-up record (fields ``[C, num_warmup]``).
        adapted: tuned step sizes ``[C]`` and inverse mass matrices ``[C, d]`` / ``[C, d, d]``.
        map_info: :class:`~sigmabnn.map.MAPInfo`, or ``None`` without pretraining.
        initial_hyper: hyperparameters the chains started from (unbatched).
        map_seconds: wall time of MAP pretraining (s, including compilation).
        sample_seconds: wall time of warm-up and sampling (s, including compilation).
        total_seconds: wall time of the whole fit (s).
        num_grad_evals: gradient evaluations of the log-posterior, all chains:
            MAP steps + leapfrog steps (warm-up and sampling) + one per iteration
            after each Gibbs update. With ``thin > 1`` the sampling leapfrog steps
            are estimated from the kept draws times ``thin``.
        learn_noise: whether the noise precision was sampled.
        learn_prior: whether the prior precisions were sampled.
    """

    sample_info: NamedTuple
    warmup_info: NamedTuple
    adapted: NamedTuple
    map_info: MAPInfo | None
    initial_hyper: Hyperparameters
    map_seconds: float
    sample_seconds: float
    total_seconds: float
    num_grad_evals: int
    learn_noise: bool
    learn_prior: bool


#: ChEES-HMC's defaults, the library's default sampler (:data:`sigmabnn.names.DEFAULT_METHOD`): chains,
#: warm-up, kept draws per chain, and the trajectory cap ``2**max_tree_depth - 1`` leapfrog steps. The warm-up
#: and cap are those above 512 fitted rows; :func:`default_config` raises them on smaller tables
#: (:func:`chees_num_warmup`, :func:`chees_max_tree_depth`, which take these as their floors).
#: Chosen on validation rows of a battery of tables (``benchmarks/defaults.py --phase validate``); the first
#: slow window starts after 25 warm-up iterations (``initial_buffer``) instead of Stan's 75, since the chains
#: start at MAP fits (candidate ``initial-buffer-25`` of ``benchmarks/candidate_seeds.py``, over fresh
#: training sets; ``benchmarks/results/chees_warmup.md`` has why).
CHEES_DEFAULTS = {
    "num_chains": 8, "num_warmup": 300, "num_samples": 125, "max_tree_depth": 7, "chees_centre": "within",
    "initial_buffer": 25,
}  # fmt: skip

#: The default ChEES trajectory cap's budget: rows x leapfrog steps per iteration (2**18). A small table
#: affords longer trajectories in the same time, so the cap doubles each time the rows halve below
#: 2048 (:func:`chees_max_tree_depth`).
CHEES_ROW_STEP_BUDGET = 2**18
#: The budget that gives the deepest cap its longer warm-up (:func:`chees_num_warmup`): 600 iterations
#: where that cap fits 2**17 rows x steps (up to 256 rows), 300 above, where a fit's steps cost more.
CHEES_WARMUP_ROW_STEP_BUDGET = 2**17
#: The default ChEES fit's L-BFGS polish of its MAP starts (full batch, up to 20,000 rows): at most
#: ``CHEES_LBFGS_ROW_BUDGET // rows`` iterations (rows x iterations; 1000 up to 4,194 rows, 262 at 16,000),
#: never more than :data:`CHEES_LBFGS_MAX_STEPS`, each start stopped after :data:`CHEES_LBFGS_PATIENCE`
#: iterations without a lower validation loss (:attr:`sigmabnn.map.MAPConfig.lbfgs_patience`); only with
#: validation rows (:func:`default_config`). Chosen on
#: validation rows (``benchmarks/results/defaults_lbfgs.md``, candidate ``default-lbfgs-es-rows``).
CHEES_LBFGS_ROW_BUDGET = 2**22
#: The most L-BFGS iterations of the default ChEES fit's polish.
CHEES_LBFGS_MAX_STEPS = 1000
#: The default ChEES fit's polish stops a start after this many iterations without improvement.
CHEES_LBFGS_PATIENCE = 100
#: The deepest default ChEES cap (511 leapfrog steps), whatever the rows.
CHEES_MAX_DEPTH_CAP = 9
#: The default ChEES warm-up where the cap is the deepest: the longer trajectories start from the same
#: initial length and take more iterations to adapt.
CHEES_DEEP_CAP_WARMUP = 600


def chees_num_warmup(n_data: int, budget: int = CHEES_WARMUP_ROW_STEP_BUDGET) -> int:
    """The default ChEES warm-up iterations for ``n_data`` fitted rows: :data:`CHEES_DEEP_CAP_WARMUP` where
    :func:`chees_max_tree_depth` with ``budget`` (:data:`CHEES_WARMUP_ROW_STEP_BUDGET`) gives the deepest
    cap (up to 256 rows), else ``CHEES_DEFAULTS["num_warmup"]`` (300)."""
    deepest = chees_max_tree_depth(n_data, budget) == CHEES_MAX_DEPTH_CAP
    return CHEES_DEEP_CAP_WARMUP if deepest else int(CHEES_DEFAULTS["num_warmup"])


def chees_max_tree_depth(n_data: int, budget: int = CHEES_ROW_STEP_BUDGET) -> int:
    """The default ChEES trajectory cap for ``n_data`` fitted rows, as a tree depth (``2**depth - 1`` steps).

    The largest depth with ``n_data * 2**depth <= budget`` (:data:`CHEES_ROW_STEP_BUDGET`), between
    ``CHEES_DEFAULTS["max_tree_depth"]`` (7) and :data:`CHEES_MAX_DEPTH_CAP` (9): depth 9 up to 512
    rows, 8 up to 1024, else 7. A leapfrog step's cost grows with the rows, so a small table's fit
    stays within the time of a 2,000-row one while its chains travel further: the cap bounds the
    trajectory length ChEES adapts (``T / eps``), and on the battery's tables of up to 512 rows the
    larger caps gave longer trajectories and lower R-hat of the predictions
    (``benchmarks/results/defaults_validation.json``, ``mean_integration_steps`` and
    ``rhat_predictions`` of ``chees-within-8x125`` against ``chees-within-8x125-rows``); the
    validation rule chose the budget of 2**18 over 2**17 (candidates ``-b18w17`` against ``-rows-w-sauto``).
    """
    n = int(n_data)
    if n < 1:
        raise ValueError(f"n_data must be >= 1, got {n_data}")
    floor = int(CHEES_DEFAULTS["max_tree_depth"])
    return max(floor, min(CHEES_MAX_DEPTH_CAP, int(math.floor(math.log2(budget / n)))))


def default_config(n_data: int, num_params: int, kernel: str = "nuts", validation: bool = True) -> MCMCConfig:
    """A configuration of ``kernel`` scaled to the problem size.

    The rule:

    - ``"chees"`` (the library's default method): :data:`CHEES_DEFAULTS`, 8 chains x 125 draws =
      1000 networks after 300 warm-up iterations, at most 127 leapfrog steps per iteration above
      1024 rows, 255 up to 1024 and 511 up to 512 (:func:`chees_max_tree_depth`); up to 256 rows
      the warm-up is 600 iterations (:func:`chees_num_warmup`); its first slow window starts after 25
      iterations, not Stan's 75: the chains start at MAP fits, and where the heteroscedastic model is
      chosen the iterations before the first metric update hardly move them
      (``benchmarks/results/chees_warmup.md``). The
      chains share one adapted step size and trajectory length, so they adapt together quickly;
      more chains from separate MAP starts cover more of the posterior's modes than a few long
      ones at the same cost (Sommer et al. 2024, arXiv:2402.01484). The trajectory criterion is
      centred on each chain's own running mean (``chees_centre="within"``): chains from
      separate MAP starts sit in separate modes, and centred between them the criterion
      stopped the trajectories short (:mod:`sigmabnn.mcmc.chees`); up to 20,000 rows, with
      ``validation`` rows, its MAP starts are polished by L-BFGS after Adam, ``min(1000, 2**22 //
      n_data)`` iterations early-stopped on the validation loss with patience 100
      (:data:`CHEES_LBFGS_ROW_BUDGET`). Without validation rows (a small table that trains on all its
      rows) the polish has nothing to stop on and is not run (``docs/architecture.md`` says why);
    - the other kernels: 4 chains x 250 draws = 1000 networks (the thesis keeps 1000), no
      thinning; warm-up 500 iterations below 200 parameters, 1000 below 2000, else 1500
      (larger networks need longer slow windows to estimate the mass matrix and settle the
      step size); NUTS at its usual maximal tree depth 10;
    - MAP starts for every kernel: full batch, 2000 Adam steps (learning rate 1e-2, patience 200)
      up to 20,000 points; above that minibatches of 1024 for ``max(10, ceil(2000 * 1024 / n))``
      epochs, i.e. about 2000 steps and at least 10 passes over the data.
    """
    if int(n_data) < 1:
        raise ValueError(f"n_data must be >= 1, got {n_data}")
    if int(num_params) < 1:
        raise ValueError(f"num_params must be >= 1, got {num_params}")
    if n_data <= 20_000:
        map_config = MAPConfig(learning_rate=1e-2, num_steps=2000, patience=200)
    else:
        epochs = max(10, math.ceil(2000 * 1024 / n_data))
        map_config = MAPConfig(learning_rate=1e-2, num_epochs=epochs, batch_size=1024, patience=200)
    if kernel == "chees":
        settings = {
            **CHEES_DEFAULTS, "max_tree_depth": chees_max_tree_depth(n_data), "num_warmup": chees_num_warmup(n_data)
        }  # fmt: skip
        if map_config.batch_size is None and validation:  # L-BFGS needs the full batch
            lbfgs_steps = min(CHEES_LBFGS_MAX_STEPS, CHEES_LBFGS_ROW_BUDGET // int(n_data))
            map_config = map_config._replace(lbfgs_steps=lbfgs_steps, lbfgs_patience=CHEES_LBFGS_PATIENCE)
        return MCMCConfig(kernel="chees", thin=1, map=map_config, **settings)
    num_warmup = 500 if num_params < 200 else 1000 if num_params < 2000 else 1500
    return MCMCConfig(kernel=kernel, num_chains=4, num_warmup=num_warmup, num_samples=250, thin=1, map=map_config)


def algorithm_for(config: MCMCConfig) -> SamplingAlgorithm:
    """The sampling algorithm ``config`` names, with its kernel and adaptation settings."""
    return make_algorithm(
        config.kernel,
        target_accept=config.target_accept,
        dense_mass=config.dense_mass,
        max_tree_depth=config.max_tree_depth,
        num_integration_steps=config.num_integration_steps,
        random_direction=config.random_direction,
        step_size_jitter=config.step_size_jitter,
        chees_centre=config.chees_centre,
        chees_acceptance=config.chees_acceptance,
    )


def run_config_for(config: MCMCConfig, chunk_size: int = 50) -> RunConfig:
    """The runner's settings for ``config`` (Stan's windows with ``config.initial_buffer``, chains split over the
    devices)."""
    return RunConfig(
        num_warmup=config.num_warmup, num_samples=config.num_samples, thin=config.thin, chunk_size=chunk_size,
        initial_buffer=config.initial_buffer,
    )  # fmt: skip


def _resolve_learn_noise(bnn: BNN, learn_noise: bool | None) -> bool:
    if learn_noise is None:
        return bool(getattr(bnn.likelihood, "learn_precision", False)) and bnn.likelihood.name in NOISE_LIKELIHOODS
    return bool(learn_noise)


def _pack_map(positions: Array, hyper: Hyperparameters, info: MAPInfo | None, seconds: float) -> dict:
    out = {"positions": np.asarray(positions), "seconds": np.float64(seconds)}
    out.update({f"hyper.{k}": np.asarray(v) for k, v in hyper._asdict().items()})
    if info is not None:
        out.update({f"info.{k}": np.asarray(v) for k, v in info._asdict().items() if v is not None})
    return out


def _unpack_map(saved: dict, hyper: Hyperparameters) -> tuple[Array, Hyperparameters, MAPInfo | None, float]:
    """The MAP results saved by :func:`_pack_map` (shapes are checked by the runner against the run)."""
    try:
        positions = jnp.asarray(saved["positions"])
        hyper = Hyperparameters(**{k: jnp.asarray(saved[f"hyper.{k}"]) for k in hyper._fields})
        info = None
        if "info.num_grad_evals" in saved:
            fields = {k: saved.get(f"info.{k}") for k in MAPInfo._fields}
            info = MAPInfo(**{**fields, "num_grad_evals": int(fields["num_grad_evals"])})
        return positions, hyper, info, float(saved["seconds"])
    except (KeyError, TypeError, ValueError) as err:
        raise ValueError(f"the checkpoint's MAP results are incomplete ({err})") from None


class SamplingSetup(NamedTuple):
    """What a fit's warm-up and sampling need, built alike by every process that runs a part of them.

    Attributes:
        algorithm: the kernel's :class:`~sigmabnn.mcmc.algorithm.SamplingAlgorithm`.
        run_config: the runner's :class:`~sigmabnn.mcmc.run.RunConfig`.
        logdensity: ``(position [d], hyper) -> scalar`` log-posterior on the training data.
        gibbs_fn: the Gibbs update of the learnt precisions, or ``None``.
        data: the training data cast to the BNN's dtype.
        learn_noise, learn_prior: which precisions are Gibbs-sampled.
    """

    algorithm: SamplingAlgorithm
    run_config: RunConfig
    logdensity: Callable
    gibbs_fn: Callable | None
    data: Data
    learn_noise: bool
    learn_prior: bool


def sampling_setup(bnn: BNN, data: Data, config: MCMCConfig, chunk_size: int = 50) -> SamplingSetup:
    """The :class:`SamplingSetup` of ``config`` for ``bnn`` on ``data`` (raises ``ValueError`` on bad settings)."""
    if int(config.num_chains) < 1:
        raise ValueError(f"num_chains must be >= 1, got {config.num_chains}")
    algorithm = algorithm_for(config)
    run_config = run_config_for(config, chunk_size)
    learn_noise = _resolve_learn_noise(bnn, config.learn_noise)
    learn_prior = bool(config.learn_prior)
    gibbs_fn = (
        make_gibbs_fn(bnn, data, config.hyperprior, learn_noise=learn_noise, learn_prior=learn_prior)
        if learn_noise or learn_prior
        else None
    )
    data = cast_data(bnn, data)
    return SamplingSetup(algorithm, run_config, make_logdensity(bnn, data), gibbs_fn, data, learn_noise, learn_prior)


def chain_starts(
    key_map: Array, bnn: BNN, data: Data, config: MCMCConfig, val_data: Data | None,
    initial_positions: Array | None, starts: Sequence[int] | None = None,
) -> tuple[Array, MAPInfo | None]:  # fmt: skip
    """``(positions [k, d], MAPInfo or None)``: where the chains start (step 1 of the module docstring).

    MAP fits from ``initial_positions`` (or random draws), or without MAP those positions (or
    Glorot draws). ``starts``: indices of the chains to compute (``None``: all), each as in the
    whole run (:func:`sigmabnn.map.pretrain_map`).
    """
    hyper = bnn.default_hyperparameters()
    num_chains = int(config.num_chains)
    if config.map is not None:
        return pretrain_map(key_map, bnn, data, hyper, config.map, val_data, num_chains, initial_positions, starts)
    if initial_positions is not None:
        positions = jnp.asarray(initial_positions, bnn.jdtype)
    else:
        positions = draw_starts(key_map, bnn, hyper, num_chains, "glorot")
    return (positions if starts is None else positions[np.asarray(starts)]), None


def starting_hyper(bnn: BNN, setup: SamplingSetup, config: MCMCConfig, positions: Array) -> Hyperparameters:
    """The hyperparameters all chains start from (step 2 of the module docstring), given every chain's start."""
    hyper = bnn.default_hyperparameters()
    if setup.learn_noise and config.noise_from_map:
        # jitted (the model and hyperprior static): one compilation instead of one per operation; the fused
        # sums may round the last bit differently from the eager ones, which chains then amplify
        noise = compiler.jit(initial_noise_precision, static_argnums=(0, 2))(
            bnn, setup.data, config.hyperprior, positions
        )
        hyper = hyper._replace(noise_precision=noise.astype(bnn.jdtype))
    return hyper


def train_info(
    config: MCMCConfig, setup: SamplingSetup, result: MCMCResult, map_info: MAPInfo | None,
    hyper: Hyperparameters, map_seconds: float, sample_seconds: float,
) -> TrainInfo:  # fmt: skip
    """The :class:`TrainInfo` of a run from its MAP record and its runner's result (``[C, ...]`` records)."""
    num_iterations = int(config.num_warmup) + int(config.num_samples) * int(config.thin)
    grads = int(np.sum(np.asarray(result.warmup_info.num_integration_steps), dtype=np.int64))
    grads += int(config.thin) * int(np.sum(np.asarray(result.info.num_integration_steps), dtype=np.int64))
    if setup.gibbs_fn is not None:
        grads += int(config.num_chains) * num_iterations
    if map_info is not None:
        grads += int(map_info.num_grad_evals)
    return TrainInfo(
        sample_info=result.info,
        warmup_info=result.warmup_info,
        adapted=result.adapted,
        map_info=map_info,
        initial_hyper=hyper,
        map_seconds=map_seconds,
        sample_seconds=sample_seconds,
        total_seconds=map_seconds + sample_seconds,
        num_grad_evals=grads,
        learn_noise=setup.learn_noise,
        learn_prior=setup.learn_prior,
    )


def fit_mcmc(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    config: MCMCConfig | None = None,
    val_data: Data | None = None,
    progress: bool = True,
    checkpoint: Any = None,
    chunk_size: int = 50,
    initial_positions: Array | None = None,
) -> tuple[PosteriorDraws, TrainInfo]:
    """Sample the BNN posterior: MAP starts, warm-up, sampling, Gibbs updates of learnt precisions.

    Args:
        rng_key: PRNG key (split into MAP and sampling keys).
        bnn: the model; its dtype is the run's dtype (data are cast to it).
        data: training data.
        config: :class:`MCMCConfig` (defaults when ``None``; see also :func:`default_config`).
        val_data: optional validation data for MAP early stopping.
        progress: progress bar on stderr.
        checkpoint: where to stream draws and commit the resumable state (see the module
            docstring); ``None`` keeps everything in memory.
        chunk_size: iterations per jitted chunk, i.e. between commits (a resumed run must use
            the value of the run it continues to reproduce it bit for bit).
        initial_positions: optional ``[num_chains, d]`` starts of MAP pretraining, or of the
            chains without it (default random draws), e.g. :func:`sigmabnn.scale_head.scale_head_starts`.

    Returns:
        ``(PosteriorDraws, TrainInfo)``: positions ``[C, S, d]`` and hyperparameters
        with leading ``[C, S]`` (fixed ones repeated).

    Raises:
        ValueError: invalid settings (one-line message).
    """
    config = MCMCConfig() if config is None else config
    setup = sampling_setup(bnn, data, config, chunk_size)
    num_chains = int(config.num_chains)
    key_map, key_sample = jax.random.split(rng_key)

    t_start = time.perf_counter()
    # the sampler compiles on the other core while the MAP fits run (the shapes are known already)
    starts = jax.ShapeDtypeStruct((num_chains, count_params(bnn.mlp)), bnn.jdtype)
    compiled = compile_ahead(
        key_sample, setup.algorithm, setup.logdensity, starts, bnn.default_hyperparameters(), setup.run_config,
        gibbs_fn=setup.gibbs_fn,
    )  # fmt: skip
    saved = checkpoint.load_arrays("map") if checkpoint is not None else None
    if saved is not None:
        positions, hyper, map_info, map_seconds = _unpack_map(saved, bnn.default_hyperparameters())
    else:
        positions, map_info = chain_starts(key_map, bnn, setup.data, config, val_data, initial_positions)
        positions = jax.block_until_ready(positions)
        hyper = starting_hyper(bnn, setup, config, positions)
        map_seconds = time.perf_counter() - t_start
        if map_info is not None:
            steps = int(np.max(np.asarray(map_info.num_steps_run)))
            log_phase(f"map done ({num_chains} starts, up to {steps} steps)", map_seconds, progress)
        if checkpoint is not None:
            checkpoint.save_arrays("map", _pack_map(positions, hyper, map_info, map_seconds))
    t_map = time.perf_counter()
    compiled()

    result = sample(
        key_sample,
        setup.algorithm,
        setup.logdensity,
        positions,
        hyper,
        setup.run_config,
        gibbs_fn=setup.gibbs_fn,
        store=checkpoint,
        progress=progress,
    )
    draws = jax.block_until_ready(PosteriorDraws(positions=result.positions, hyper=result.hyper))
    info = train_info(config, setup, result, map_info, hyper, map_seconds, time.perf_counter() - t_map)
    return draws, info
