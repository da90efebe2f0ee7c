"""A fit from a table to a saved model, stage by stage: :func:`run_fit`.

1. prepare the data (:func:`sigmabnn.fitting.prepare.prepare_data`);
2. build the BNN (:func:`sigmabnn.model.build.build_bnn`, the likelihood of the spec);
3. train it with the method's :class:`~sigmabnn.fitting.trainers.Trainer` (a checkpointed MCMC
   run streams into its checkpoint, :mod:`sigmabnn.fitting.checkpointing`);
4. score it (:mod:`sigmabnn.fitting.score`) and write the typed report (:class:`FitReport`);
5. fit the training domain (:class:`~sigmabnn.data.domain.Domain`, the out-of-domain test of
   predictions) on the standardised training inputs;
6. recalibrate its intervals if asked (:func:`sigmabnn.recalibration.recalibrate`) and save it
   at the checkpoint's path. A classifier with validation rows instead gets the temperature that
   minimises their NLL, when it beats ``T = 1`` (:func:`sigmabnn.temperature.fit_temperature`),
   before it is scored.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any, NamedTuple

import jax
import numpy as np

from sigmabnn.data.domain import Domain
from sigmabnn.errors import DataError, InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.fitting import checkpointing, sampled_choice, score
from sigmabnn.fitting.noise_choice import choose_noise_model
from sigmabnn.fitting.prepare import PreparedData, prepare_data
from sigmabnn.fitting.report import (
    DataSummary,
    FitReport,
    ModelSummary,
    NoiseChoiceSummary,
    RecalibrationSummary,
    Timings,
)
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.fitting.trainers import MCMCTrainer, Trained, Trainer, trainer_for
from sigmabnn.io.checkpoint import CHECKPOINT_DIR, Checkpoint
from sigmabnn.io.model_file import load_model, save_model, to_jsonable
from sigmabnn.mcmc.progress import log_phase
from sigmabnn.model.build import PRIOR_PRECISION
from sigmabnn.model.mlp import num_params
from sigmabnn.model.posterior import BNN
from sigmabnn.names import AUTO_NOISE_MODELS, MCMC_METHODS, STUDENT_T_LIKELIHOODS
from sigmabnn.recalibration import recalibrate, uniformity_pvalue
from sigmabnn.temperature import fit_temperature

__all__ = ["run_fit"]


def _settings(spec: FitSpec, bnn: BNN) -> dict[str, Any]:
    """The settings every model file records, before the method's own."""
    return {
        "method": spec.method.name,
        "architecture": bnn.mlp.describe(),
        "activation": spec.model.activation,
        "log_target": spec.data.log_target,
        **({"baseline": list(spec.data.baseline)} if spec.data.baseline else {}),
        "seed": spec.seed,
        "dtype": spec.model.dtype,
        "prior_precision": PRIOR_PRECISION,
        "learn_noise": spec.learns_noise,
        **({"noise_df": float(bnn.likelihood.df)} if bnn.likelihood.name in STUDENT_T_LIKELIHOODS else {}),
    }


def _model(spec: FitSpec, bnn: BNN, data: PreparedData, settings: dict[str, Any], **fields: Any) -> FittedModel:
    return FittedModel(
        bnn=bnn, x_transform=data.x_transform, y_transform=data.y_transform, feature_names=data.feature_names,
        target_name=data.table.target_name, derived=data.derived, method=spec.method.name,
        settings=to_jsonable(settings), data_fingerprint=data.table.fingerprint, classes=data.classes, **fields,
    )  # fmt: skip


def _train(
    spec: FitSpec, trainer: Trainer, bnn: BNN, data: PreparedData, progress: bool, checkpoint: Any, resume: bool,
    fit_args: dict[str, Any] | None, settings: dict[str, Any], starts: np.ndarray | None = None, tasks: Any = None,
    on_open: Any = None,
) -> Trained:  # fmt: skip
    """Train, in a checkpoint for an MCMC run with a ``checkpoint`` path; an interruption leaves a partial model.

    ``tasks``: a :class:`~sigmabnn.train.chain_tasks.ChainTasks` (MCMC chains on a Dask cluster), or ``None``;
    ``on_open(checkpoint)``: called once a new checkpoint is created.
    """
    ckpt = None
    try:
        if (
            checkpoint is not None and spec.method.name in MCMC_METHODS
        ):  # created once the arguments are known to be good
            t = data.table
            ckpt = checkpointing.open_checkpoint(checkpoint, resume, fit_args, t.fingerprint, data.source)
            if on_open is not None and not resume:
                on_open(ckpt)
        key = jax.random.key(spec.seed)
        return trainer.train(key, bnn, data, progress=progress, checkpoint=ckpt, starts=starts, tasks=tasks)
    except KeyboardInterrupt as err:
        if ckpt is None:
            raise
        partial = _model(spec, bnn, data, settings, draws=None)
        raise checkpointing.interrupted(ckpt, partial, trainer.config, err) from None
    except ValueError:
        if ckpt is not None and not resume:  # bad settings: leave nothing behind
            checkpointing.discard(ckpt)
        raise


def _report(spec: FitSpec, bnn: BNN, data: PreparedData, trained: Trained, **sections: Any) -> FitReport:
    """The fit's report, in the form its JSON reads back (NaN as ``None``, sequences as tuples)."""
    t = data.table
    report = FitReport(
        data=DataSummary(
            source=data.source, rows=t.n_rows, dropped=t.n_dropped, dropped_by_column=t.dropped_by_column,
            train=t.train.n, val=t.val.n, test=t.test.n, split=t.split_source, features=tuple(t.feature_names),
            skipped_columns=tuple(t.skipped_columns), fingerprint=t.fingerprint,
        ),
        model=ModelSummary(
            architecture=bnn.mlp.describe(), num_params=num_params(bnn.mlp), likelihood=bnn.likelihood.name,
            dtype=spec.model.dtype, networks=int(trained.draws.num_networks),
        ),
        method=spec.method.name,
        sampler=trained.sampler,
        **sections,
    )  # fmt: skip
    return FitReport.from_json(to_jsonable(report.to_json()))


def _check_starts(initial_positions: Any, trainer: Trainer, d: int) -> np.ndarray | None:
    """``initial_positions`` as a ``[k, d]`` float64 array of finite values, ``k`` the chains or members."""
    if initial_positions is None:
        return None
    starts = np.asarray(initial_positions, np.float64)
    k = getattr(trainer.config, "num_chains", getattr(trainer.config, "num_members", None))
    if k is None:
        raise InputError("initial_positions are for MCMC and ensemble fits; VI starts from its prior")
    if starts.shape != (k, d):
        raise InputError(f"initial_positions must have shape ({k}, {d}) (row per chain or member), got {starts.shape}")
    if not np.all(np.isfinite(starts)):
        raise InputError("initial_positions contain non-finite values")
    return starts


#: Most training rows whose leave-one-out PIT a fit's recalibration computes (a seeded subset
#: beyond): 2,000 values resolve the map's levels to 0.0005 and keep the pass over the draws to
#: seconds on 10^4-10^5 rows.
LOO_MAX_ROWS = 2000


def _recalibrated(fitted: FittedModel, spec: FitSpec, prepared: PreparedData) -> FittedModel:
    """``fitted`` with its intervals recalibrated as ``spec`` asks. An automatic recalibration that has
    too few rows is skipped, and a map whose PIT values pass the uniformity test at
    ``spec.recalibration_gate`` is not kept; why is stored in the diagnostics (``recalibration_skipped``)."""
    train, val = prepared.train, prepared.val
    if spec.recalibrate_auto and spec.data.min_val_rows and val.n == 0:
        return fitted.with_diagnostics(
            recalibration_skipped=f"no validation rows: fewer than {spec.data.min_val_rows} would have been held "
            "out, too few to recalibrate on, so they trained the model (give split, --split, to hold them out)"
        )
    try:
        new = recalibrate(
            fitted, val.x, val.y, split="val", rows=spec.recalibrate, train=(train.x, train.y),
            loo_max_rows=LOO_MAX_ROWS, map=spec.recalibration_map,
        )  # fmt: skip
    except DataError as err:
        if not spec.recalibrate_auto:
            raise
        return fitted.with_diagnostics(recalibration_skipped=str(err))
    p = uniformity_pvalue(new.calibration.pit)
    if spec.recalibration_gate < 1.0 and p >= spec.recalibration_gate:
        return fitted.with_diagnostics(
            recalibration_skipped=f"the {new.calibration.n} {new.calibration.split} rows' PIT values are consistent "
            f"with calibrated intervals (Kolmogorov-Smirnov p = {p:.2g} >= {spec.recalibration_gate:g})"
        )
    return new.with_diagnostics(recalibration={**new.diagnostics["recalibration"], "uniformity_pvalue": p})


def _temperature(fitted: FittedModel, data: PreparedData) -> tuple[FittedModel, RecalibrationSummary]:
    """The classifier with its temperature fitted on the validation rows (:mod:`sigmabnn.temperature`)."""
    val = data.val
    fitted, fit = fit_temperature(fitted, val.x, val.y.astype(np.int64))
    summary = RecalibrationSummary(
        rows_kind="temperature", rows=int(val.n), heldout_rows=int(val.n),
        extra={"temperature": fit.temperature, "val_nll": fit.nll, "val_nll_at_temperature_1": fit.nll_at_one,
               "temperature_at_lower_bound": fit.at_lower_bound},
    )  # fmt: skip
    return fitted, summary


#: The stream of the seed's key the noise-model choice draws from (the run itself uses the key unfolded).
NOISE_CHOICE_STREAM = 7


def _noise_model(
    spec: FitSpec, prepared: PreparedData, checkpoint: Any, resume: bool, initial_positions: Any, progress: bool
) -> tuple[NoiseChoiceSummary, FitSpec, Any, tuple[FitSpec, np.ndarray] | None]:  # fmt: skip
    """``likelihood="auto"``: ``(summary, spec with the chosen likelihood, the sampler's starts, alternative)``.

    Chosen on the validation rows (:mod:`sigmabnn.fitting.noise_choice`), except where the starts
    are given: a resumed run keeps the likelihood whose width its checkpoint's MAP positions have,
    and ``initial_positions`` (an earlier fit's networks) the one whose width they have. A log (not a
    terminal) gets one line when the choice is made, as the sampler's phases do. ``alternative``: with
    ``noise_choice_by="sampled"`` and a choice made, the other model's spec and MAP starts (sampled too,
    :mod:`sigmabnn.fitting.sampled_choice`); else ``None``.
    """
    given = _given_width(checkpoint, resume, initial_positions)
    if given is not None:
        for name in AUTO_NOISE_MODELS:
            chosen = spec.with_likelihood(name)
            if _num_params(chosen, prepared) == given:
                reason = "the likelihood whose network width the " + (
                    "checkpoint's MAP positions have" if initial_positions is None else "initial positions have"
                )
                return NoiseChoiceSummary(name, {}, reason), chosen, initial_positions, None
        raise InputError(f"likelihood='auto': no noise model has {given} parameters, the width of the given starts")
    gauss = spec.with_likelihood("gaussian")
    trainer = trainer_for(gauss, prepared.train.n, _num_params(gauss, prepared), prepared.val_data is not None)
    key = jax.random.fold_in(jax.random.key(spec.seed), NOISE_CHOICE_STREAM)
    map_config = trainer.config.map if trainer.config.map is not None else trainer.default_map
    t0 = time.perf_counter()
    choice = choose_noise_model(
        key, spec, prepared, map_config, int(trainer.config.num_chains), trainer.config.hyperprior
    )
    seconds = time.perf_counter() - t0
    how = "MAP starts of both fitted and scored on the validation rows" if choice.val_log_density else "no choice"
    sampled = spec.model.noise_choice_by == "sampled" and choice.other_starts is not None
    what = "noise models' starts fitted, both to be sampled; the starts prefer" if sampled else "noise model chosen:"
    log_phase(f"{what} {choice.likelihood} ({how})", seconds, progress)
    margin = spec.model.noise_margin if choice.gain is not None else None
    summary = NoiseChoiceSummary(
        choice.likelihood,
        choice.val_log_density,
        choice.reason,
        seconds,
        choice.gain,
        choice.gain_se,
        margin,
        calibrated_gain=choice.calibrated_gain,
        calibrated_se=choice.calibrated_se,
        scale_factors=choice.scale_factors,
    )
    alternative = None
    if sampled:
        other = next(name for name in AUTO_NOISE_MODELS if name != choice.likelihood)
        alternative = (spec.with_likelihood(other), choice.other_starts)
    return summary, spec.with_likelihood(choice.likelihood), choice.starts, alternative


def _given_width(checkpoint: Any, resume: bool, initial_positions: Any) -> int | None:
    """The parameter count of given starts: ``initial_positions``', else a resumed checkpoint's MAP positions'."""
    if initial_positions is not None:
        return int(np.shape(initial_positions)[-1])
    if resume and checkpoint is not None:
        saved = Checkpoint.open(checkpoint).load_arrays("map")
        if saved is not None and "positions" in saved:
            return int(np.shape(saved["positions"])[-1])
    return None


def _num_params(spec: FitSpec, prepared: PreparedData) -> int:
    return num_params(spec.bnn(prepared.feature_names).mlp)


class _Run(NamedTuple):
    """What every model trained by one :func:`run_fit` call shares."""

    prepared: PreparedData
    progress: bool
    checkpoint: Any
    resume: bool
    fit_args: dict[str, Any] | None
    tasks: Any
    t_start: float


#: The subdirectory of a checkpoint holding the first model of a ``noise_choice_by="sampled"`` run.
ALTERNATIVE_DIR = "alternative"


def _saved_alternative(checkpoint: Any) -> FittedModel | None:
    """The first model of an interrupted ``noise_choice_by="sampled"`` run, saved in its checkpoint, or ``None``."""
    path = Path(checkpoint) / CHECKPOINT_DIR / ALTERNATIVE_DIR
    return load_model(path) if (path / "model.json").is_file() else None


def _fit_model(
    run: _Run, spec: FitSpec, noise: NoiseChoiceSummary | None, initial_positions: Any, on_open: Any = None
) -> FittedModel:
    """Build, train and score the model of ``spec`` (stages 2 to 5 of the module docstring), its report as its
    diagnostics; ``on_open(checkpoint)`` is called when a new checkpoint is opened."""
    prepared = run.prepared
    num_classes = prepared.classes.num_classes if prepared.classes is not None else 2
    bnn = spec.bnn(prepared.feature_names, num_classes)
    trainer = trainer_for(spec, prepared.train.n, num_params(bnn.mlp), prepared.val_data is not None)
    if noise is not None and noise.val_log_density:  # the choice's MAP fits are the chains' starts
        trainer = MCMCTrainer(trainer.config, trainer.default_map, starts_fitted=True)
    starts = _check_starts(initial_positions, trainer, num_params(bnn.mlp))
    settings = _settings(spec, bnn)
    t_fit = time.perf_counter()
    trained = _train(spec, trainer, bnn, prepared, run.progress, run.checkpoint, run.resume, run.fit_args, settings,
                     starts, run.tasks, on_open)  # fmt: skip
    timings = {**trained.timings, "fit_seconds": time.perf_counter() - t_fit}
    domain = Domain.fit(prepared.x_transform.forward(prepared.train.x), seed=spec.seed)
    fitted = _model(spec, bnn, prepared, {**settings, **trained.settings}, draws=trained.draws,
                    adapted=trained.adapted, diagnostics={}, domain=domain)  # fmt: skip
    sections = {} if noise is None else {"noise_choice": noise}
    if spec.is_classifier and prepared.val.n > 0:  # temperature on the validation rows, kept if it lowers their NLL
        fitted, sections["recalibration"] = _temperature(fitted, prepared)
    t_metrics = time.perf_counter()
    metrics = score.metrics(fitted, prepared, spec.seed)
    timings["metrics_seconds"] = time.perf_counter() - t_metrics
    timings["total_seconds"] = time.perf_counter() - run.t_start
    noise_std = score.noise_std(spec, bnn, trained.draws, prepared)
    report = _report(spec, bnn, prepared, trained, noise_std=noise_std, timings=Timings(**timings), metrics=metrics,
                     **sections)  # fmt: skip
    return dataclasses.replace(fitted, diagnostics=report.to_json())


def run_fit(
    data: Any, spec: FitSpec, *, progress: bool = True, checkpoint: Any = None, resume: bool = False,
    initial_positions: Any = None, client: Any = None, chains_per_task: int | None = None,
) -> tuple[FittedModel, FitReport]:  # fmt: skip
    """Fit the BNN of ``spec`` to ``data`` (a path or a DataFrame): the stages of the module docstring.

    ``checkpoint``: a model path to train into and save the finished model at; ``resume``:
    continue the interrupted run there. ``initial_positions``: ``[k, d]`` starting weights, one
    row per MCMC chain (the starts of its MAP pretraining) or ensemble member (e.g. an earlier
    fit's, :func:`sigmabnn.fitted.FittedModel` ``draws``, to refit on more rows); not for VI.
    ``client``: a ``dask.distributed.Client``: an MCMC fit's chains run as tasks on its cluster,
    ``chains_per_task`` chains each (default: split evenly over the workers), with the draws of
    the one-process fit (:mod:`sigmabnn.train.chain_tasks`); not with ``checkpoint``.
    Returns ``(fitted, report)`` (the report is also ``fitted.diagnostics``, as JSON).
    """
    t_start = time.perf_counter()
    if resume and checkpoint is None:
        raise InputError("resume=True needs the checkpoint (model path) to resume")
    tasks = None
    if client is not None:
        from sigmabnn.train.chain_tasks import ChainTasks, check_runnable

        check_runnable(spec.method.name, checkpoint=checkpoint is not None, resume=resume)
        tasks = ChainTasks(client, chains_per_task)
    elif chains_per_task is not None:
        raise InputError("chains_per_task needs a Dask client (client=, --dask)")
    fit_args = spec.to_json() if checkpoint is not None else None
    prepared = prepare_data(data, spec)
    run = _Run(prepared, progress, checkpoint, resume, fit_args, tasks, t_start)
    noise, alternative = None, None
    if spec.model.noise_choice:
        noise, spec, initial_positions, alternative = _noise_model(
            spec, prepared, checkpoint, resume, initial_positions, progress
        )
    other, on_open = None, None
    if alternative is not None:  # noise_choice_by="sampled": the other model first, in memory
        other = _fit_model(run._replace(checkpoint=None, resume=False, fit_args=None), alternative[0], noise,
                           alternative[1])  # fmt: skip

        def on_open(ckpt: Checkpoint) -> None:  # kept in the checkpoint for a resumed run to compare
            save_model(other, ckpt.directory / ALTERNATIVE_DIR)

    fitted = _fit_model(run, spec, noise, initial_positions, on_open)
    if other is None and resume and spec.model.noise_choice_by == "sampled":
        other = _saved_alternative(checkpoint)
    if other is not None:
        fitted = sampled_choice.better(fitted, other, time.perf_counter() - t_start)
        what = f"noise model chosen: {fitted.bnn.likelihood.name} (both sampled, scored on the validation rows)"
        log_phase(what, time.perf_counter() - t_start, progress)
    if spec.recalibrate:
        fitted = _recalibrated(fitted, spec, prepared)
    if checkpoint is not None:
        save_model(fitted, checkpoint)  # replaces the checkpoint
    return fitted, fitted.report  # the stored report: with the recalibration (or why it was skipped)
