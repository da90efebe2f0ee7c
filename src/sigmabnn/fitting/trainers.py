"""Training behind one interface: MCMC, variational inference and deep ensembles as :class:`Trainer` s.

Every trainer takes the run's key, the BNN and the prepared data and returns a :class:`Trained`:
the draws (host arrays), the method's typed info, its summary for the report, the settings the
model file records, the adapted sampler parameters and the wall times of its phases.

- :class:`MCMCTrainer`: :func:`sigmabnn.train.fit_mcmc` (MAP starts, warm-up, sampling; a
  checkpoint streams the draws to disk), or with :class:`~sigmabnn.train.chain_tasks.ChainTasks`
  its chains as tasks on a Dask cluster (:func:`sigmabnn.train.chain_tasks.fit_mcmc_tasks`, the
  same draws). A ``hetero_student_t`` likelihood's chains start where
  :func:`sigmabnn.scale_head.scale_head_starts` puts them (key ``fold_in(key, 1)``).
- :class:`VITrainer`: :func:`sigmabnn.vi.fit_vi` (Bayes by Backprop or Flipout).
- :class:`EnsembleTrainer`: :func:`sigmabnn.ensemble.fit_ensemble`.

A ``ValueError`` of the training itself (bad settings found late) becomes an
:class:`~sigmabnn.errors.InputError` with a one-line message.
"""

from __future__ import annotations

import time
from typing import Any, NamedTuple, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.draws import PosteriorDraws
from sigmabnn.ensemble import EnsembleConfig, EnsembleInfo, fit_ensemble
from sigmabnn.errors import InputError
from sigmabnn.evaluate import diagnostics as diag
from sigmabnn.fitting.checkpointing import chunk_size
from sigmabnn.fitting.prepare import PreparedData
from sigmabnn.fitting.report import EnsembleSummary, MCMCSummary, SamplerSummary, VISummary
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.map import MAPConfig
from sigmabnn.model.posterior import BNN
from sigmabnn.names import ENSEMBLE_METHODS, MCMC_METHODS
from sigmabnn.scale_head import scale_head_starts
from sigmabnn.train import MCMCConfig, TrainInfo, default_config, fit_mcmc
from sigmabnn.vi import VIConfig, fit_vi

__all__ = [
    "DIAGNOSTIC_POINTS",
    "EnsembleTrainer",
    "MCMCTrainer",
    "Trained",
    "Trainer",
    "VITrainer",
    "draw_means",
    "trainer_for",
]

#: Training points at which function-space R-hat/ESS are computed.
DIAGNOSTIC_POINTS = 32

_SCALARS = int | float | str | bool | type(None)


class Trained(NamedTuple):
    """What a :class:`Trainer` returns.

    Attributes:
        draws: posterior draws on the host, positions ``[chain, draw, d]``.
        info: the method's own record (:class:`~sigmabnn.train.TrainInfo`,
            :class:`~sigmabnn.vi.bbb.VIInfo` or :class:`~sigmabnn.ensemble.EnsembleInfo`).
        sampler: its summary for the report.
        settings: the method's settings as the model file records them (JSON scalars).
        adapted: adapted sampler parameters, name -> array (empty for VI and ensembles).
        timings: wall times of the method's phases (s), keyed as in :class:`~sigmabnn.fitting.report.Timings`.
    """

    draws: PosteriorDraws
    info: Any
    sampler: SamplerSummary
    settings: dict[str, Any]
    adapted: dict[str, np.ndarray]
    timings: dict[str, float]


class Trainer(Protocol):
    """One way of training the networks: ``config`` and :meth:`train`."""

    config: Any

    def train(
        self, rng_key: jax.Array, bnn: BNN, data: PreparedData, *, progress: bool, checkpoint: Any,
        starts: np.ndarray | None = None, tasks: Any = None,
    ) -> Trained:  # fmt: skip
        """Train ``bnn`` on ``data`` from ``rng_key`` (``checkpoint``: an open run store or ``None``;
        ``starts``: ``[k, d]`` initial positions, one per chain or member, or ``None``; ``tasks``: a
        :class:`~sigmabnn.train.chain_tasks.ChainTasks` running MCMC chains on a Dask cluster, or ``None``)."""
        ...


def _input_error(err: ValueError) -> InputError:
    return err if isinstance(err, InputError) else InputError(" ".join(str(err).split()))


def _no_tasks(tasks: Any, what: str) -> None:
    if tasks is not None:
        raise InputError(f"only MCMC chains run as Dask tasks: {what} is fitted in one process")


def draw_means(bnn: BNN, draws: PosteriorDraws, z: np.ndarray) -> np.ndarray:
    """Model-space network means ``[C, S, k]`` (first target) at standardised points ``z`` ``[k, p]``."""
    c, s = draws.num_chains, draws.num_draws
    positions = np.asarray(draws.positions).reshape(c * s, -1)  # may be memory-mapped: read in batches
    zz = jnp.asarray(z, bnn.jdtype)
    # the points are an argument, not a constant of the compiled code (sigmabnn.compile_cache)
    f = compiler.jit(jax.vmap(lambda p, z: bnn.likelihood.mean(bnn.apply(bnn.unflatten(p), z))[:, 0], (0, None)))
    batch = max(1, min(c * s, 2**24 // max(1, positions.shape[1])))  # at most 128 MB of float64 at a time
    out = [np.asarray(f(jnp.asarray(positions[i : i + batch], bnn.jdtype), zz)) for i in range(0, c * s, batch)]
    return np.concatenate(out).reshape(c, s, -1)


def mcmc_summary(bnn: BNN, draws: PosteriorDraws, info: TrainInfo, config: MCMCConfig, z_train: Any) -> MCMCSummary:
    """The sampler health of an MCMC run: acceptance, divergences, step sizes, E-BFMI, function-space R-hat/ESS."""
    idx = np.linspace(0, z_train.shape[0] - 1, min(DIAGNOSTIC_POINTS, z_train.shape[0])).astype(int)
    summary = diag.summarize(
        predictions=draw_means(bnn, draws, z_train[idx]),
        log_posterior=np.asarray(info.sample_info.logdensity),
        info=info.sample_info,
        max_tree_depth=config.max_tree_depth if config.kernel == "nuts" else None,
    )
    sampler = summary.get("sampler", {})
    predictions, log_posterior = summary.get("predictions", {}), summary.get("log_posterior", {})
    return MCMCSummary(
        acceptance=sampler.get("mean_acceptance"),
        divergences=sampler.get("num_divergent"),
        step_size=tuple(float(v) for v in np.asarray(info.adapted.step_size)),
        mean_integration_steps=float(np.mean(np.asarray(info.sample_info.num_integration_steps))),
        ebfmi=sampler.get("ebfmi"),
        rhat_predictions=predictions.get("max_rhat"),
        ess_bulk_predictions=predictions.get("min_ess_bulk"),
        rhat_log_posterior=log_posterior.get("max_rhat"),
        ess_bulk_log_posterior=log_posterior.get("min_ess_bulk"),
        num_grad_evals=int(info.num_grad_evals),
        learn_noise=bool(info.learn_noise),
        tree_depth_saturation=sampler.get("tree_depth_saturation_fraction"),
        warnings=tuple(diag.warnings(summary)),
    )


class MCMCTrainer:
    """MCMC through :func:`sigmabnn.train.fit_mcmc` (module docstring).

    Args:
        config: the run's :class:`~sigmabnn.train.MCMCConfig`.
        default_map: the MAP pretraining of the problem's default config; a ``hetero_student_t``
            fit without MAP (``config.map`` ``None``) still starts its scale head with it.
        starts_fitted: the ``starts`` given to :meth:`train` are MAP fits already (of ``config.map``: the
            noise-model choice's, :mod:`sigmabnn.fitting.noise_choice`): the chains start from them
            as they are, and the report's settings still name that MAP pretraining.
    """

    def __init__(self, config: MCMCConfig, default_map: MAPConfig | None, starts_fitted: bool = False) -> None:
        self.config = config
        self.default_map = default_map
        self.starts_fitted = starts_fitted

    def train(
        self, rng_key: jax.Array, bnn: BNN, data: PreparedData, *, progress: bool, checkpoint: Any,
        starts: np.ndarray | None = None, tasks: Any = None,
    ) -> Trained:  # fmt: skip
        config = self.config
        try:
            if (
                starts is None
                and bnn.likelihood.name == "hetero_student_t"
                and (checkpoint is None or checkpoint.load_arrays("map") is None)
            ):
                map_config = config.map if config.map is not None else self.default_map
                if tasks is None:
                    starts, _ = scale_head_starts(
                        jax.random.fold_in(rng_key, 1), bnn, data.train_data, map_config, config.num_chains,
                        data.val_data,
                    )  # fmt: skip
                else:
                    from sigmabnn.train.chain_tasks import scale_head_starts_on

                    starts = scale_head_starts_on(tasks, rng_key, bnn, data.train_data, config, map_config,
                                                  data.val_data)  # fmt: skip
            run = config._replace(map=None) if self.starts_fitted and starts is not None else config
            if tasks is None:
                draws, info = fit_mcmc(
                    rng_key, bnn, data.train_data, run, val_data=data.val_data, progress=progress,
                    checkpoint=checkpoint, chunk_size=chunk_size(checkpoint), initial_positions=starts,
                )  # fmt: skip
            else:
                from sigmabnn.train.chain_tasks import fit_mcmc_tasks

                draws, info = fit_mcmc_tasks(
                    tasks, rng_key, bnn, data.train_data, run, val_data=data.val_data, progress=progress,
                    chunk_size=chunk_size(None), initial_positions=starts,
                )  # fmt: skip
        except ValueError as err:
            raise _input_error(err) from None
        draws = jax.device_get(draws)
        settings = {
            k: v for k, v in config._asdict().items() if k not in ("hyperprior", "map") and isinstance(v, _SCALARS)
        }
        # the MAP pretraining that made the starts, flat: map_num_steps, map_lbfgs_steps, ... (none: map None)
        settings.update(config.map.settings() if config.map is not None else {})
        settings["map"] = config.map is not None
        settings.update(config.hyperprior.settings())  # the Gamma hyperpriors, flat: hyperprior_noise_rate, ...
        return Trained(
            draws=draws,
            info=info,
            sampler=mcmc_summary(bnn, draws, info, config, data.train_data.x),
            settings=settings,
            adapted={k: np.asarray(v) for k, v in info.adapted._asdict().items()},
            timings={"map_seconds": float(info.map_seconds), "sample_seconds": float(info.sample_seconds)},
        )


class VITrainer:
    """Variational inference through :func:`sigmabnn.vi.fit_vi`."""

    def __init__(self, config: VIConfig) -> None:
        self.config = config

    def train(
        self, rng_key: jax.Array, bnn: BNN, data: PreparedData, *, progress: bool, checkpoint: Any,
        starts: np.ndarray | None = None, tasks: Any = None,
    ) -> Trained:  # fmt: skip
        _no_tasks(tasks, "VI")
        if starts is not None:
            raise InputError("initial positions are for MCMC and ensemble fits; VI starts from its prior")
        t0 = time.perf_counter()
        try:
            draws, info = fit_vi(rng_key, bnn, data.train_data, self.config, progress=progress)
        except ValueError as err:
            raise _input_error(err) from None
        draws = jax.device_get(draws)
        loss = np.asarray(info.loss)
        tail = loss[-max(1, loss.size // 20) :]
        sampler = VISummary(
            final_loss=float(np.mean(tail)),
            final_kl=float(np.mean(np.asarray(info.kl)[-tail.size :])),
            num_steps=int(loss.size),
        )
        settings = {k: v for k, v in self.config._asdict().items() if isinstance(v, _SCALARS)}
        return Trained(draws, info, sampler, settings, {}, {"vi_seconds": time.perf_counter() - t0})


class EnsembleTrainer:
    """A deep ensemble through :func:`sigmabnn.ensemble.fit_ensemble`."""

    def __init__(self, config: EnsembleConfig) -> None:
        self.config = config

    def train(
        self, rng_key: jax.Array, bnn: BNN, data: PreparedData, *, progress: bool, checkpoint: Any,
        starts: np.ndarray | None = None, tasks: Any = None,
    ) -> Trained:  # fmt: skip
        _no_tasks(tasks, "an ensemble")
        try:
            draws, info = fit_ensemble(
                rng_key, bnn, data.train_data, self.config, val_data=data.val_data, initial_positions=starts
            )
        except ValueError as err:
            raise _input_error(err) from None
        draws = jax.device_get(draws)
        return Trained(
            draws, info, ensemble_summary(info), self.config.flat(), {}, {"ensemble_seconds": float(info.seconds)}
        )


def ensemble_summary(info: EnsembleInfo) -> EnsembleSummary:
    """The members' training: best monitored loss, best step and steps run of each."""
    mi = info.map_info
    return EnsembleSummary(
        num_members=int(mi.best_loss.shape[0]),
        final_loss=tuple(float(v) for v in np.asarray(mi.best_loss)),
        best_step=tuple(int(v) for v in np.asarray(mi.best_step)),
        num_steps_run=tuple(int(v) for v in np.asarray(mi.num_steps_run)),
        num_grad_evals=int(mi.num_grad_evals),
    )


def trainer_for(spec: FitSpec, n_train: int, num_params: int, validation: bool = True) -> Trainer:
    """The trainer of ``spec``'s method, its config scaled to ``n_train`` rows and ``num_params`` weights
    (``validation``: the fit has validation rows)."""
    name = spec.method.name
    if name in MCMC_METHODS:
        default_map = default_config(n_train, num_params).map
        return MCMCTrainer(spec.mcmc_config(n_train, num_params, validation), default_map)
    if name in ENSEMBLE_METHODS:
        return EnsembleTrainer(spec.ensemble_config())
    return VITrainer(spec.vi_config())
