"""The high-level entry point: a table in, a fitted BNN surrogate and a report out.

:func:`fit` checks its arguments once (:func:`sigmabnn.fitting.spec.build_spec` makes a
:class:`~sigmabnn.fitting.spec.FitSpec`) and runs the stages of :mod:`sigmabnn.fitting`
(:func:`sigmabnn.fitting.run.run_fit`):

1. read the table (:func:`sigmabnn.data.tables.read_table`) unless a
   DataFrame is given; add derived features (:mod:`sigmabnn.data.features`);
2. select, clean and split the rows (:func:`sigmabnn.data.tables.prepare`);
3. fit the transforms on the training rows: inputs standardised, the target
   optionally ``log10``-ed, then standardised;
4. build the BNN: architecture ``"auto"`` is ``P-20-20-1`` for ``P`` inputs,
   ``tanh`` hidden units; Gaussian likelihood in the standardised target space
   (its noise precision learnt by Gibbs updates unless ``learn_noise=False``;
   a per-row known noise std with ``noise_column``), or, for an MCMC fit with the
   default ``likelihood="auto"``, a heteroscedastic Student-t one where its MAP
   fits predict the validation rows better (:mod:`sigmabnn.fitting.noise_choice`); Gaussian prior with
   precision 1.0 on every kernel and bias entry, a unit-scale prior that
   matches standardised inputs and targets; the default ChEES fit with the
   Gaussian noise model and an MCMC classifier instead Gibbs-sample the
   per-layer precisions (Neal's hierarchical prior, Gamma(1, 1) hyperpriors)
   unless ``learn_prior=False`` (``learn_prior="auto"``:
   :data:`sigmabnn.fitting.spec.AUTO_PRIOR_METHODS`, ``CLASSIFIER_LEARNS_PRIOR``);
5. sample: :func:`sigmabnn.train.fit_mcmc` for ``"nuts"``, ``"hmc"``, ``"chees"``, ``"mh"``,
   or :func:`sigmabnn.vi.fit_vi` for ``"bbb"`` and ``"flipout"``; or train a
   deep ensemble, :func:`sigmabnn.ensemble.fit_ensemble` for ``"ensemble"``
   (the likelihood then has a learned variance head: the architecture's last
   width is widened to a mean and a std output per target);
6. bundle everything in a :class:`~sigmabnn.fitted.FittedModel`, with a typed
   report (:class:`~sigmabnn.fitting.report.FitReport`: acceptance, divergences, step sizes,
   function-space R-hat/ESS, timings, metrics on the training and validation rows).

The random key of the run is ``jax.random.key(seed)``; the same ``seed``
also fixes the random row split.

Long runs: ``fit(..., checkpoint=MODEL)`` trains into the model path
``MODEL`` (:mod:`sigmabnn.io.checkpoint`): MAP results are saved, draws are
streamed to disk chunk by chunk with a resumable state, an interruption
(``KeyboardInterrupt``, or ``SIGTERM`` in the CLI) leaves a partial model
there and raises :class:`~sigmabnn.io.checkpoint.TrainingInterrupted`, and
the finished model replaces the checkpoint. :func:`resume` continues an
interrupted run; the finished model equals that of an uninterrupted run.

On a Dask cluster: ``fit(..., client=client)`` runs an MCMC fit's chains as tasks on the
cluster's workers (:mod:`sigmabnn.train.chain_tasks`: which phases are split for which sampler),
with the draws of the one-process fit; the data preparation, scoring and recalibration stay in
the calling process.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from sigmabnn.errors import InputError
from sigmabnn.fitted import FittedModel
from sigmabnn.fitting.checkpointing import recorded_fit_args
from sigmabnn.fitting.report import FitReport
from sigmabnn.fitting.run import run_fit
from sigmabnn.fitting.spec import FitSpec, build_spec, json_value
from sigmabnn.io.checkpoint import Checkpoint
from sigmabnn.names import (
    DEFAULT_METHOD,
    ENSEMBLE_METHODS,
    LIKELIHOOD_NAMES,
    MCMC_METHODS,
    METHODS,
    VI_METHODS,
)
from sigmabnn.recalibration import recalibrate as recalibrate_model

__all__ = [
    "ENSEMBLE_METHODS",
    "LIKELIHOOD_NAMES",
    "MCMC_METHODS",
    "METHODS",
    "VI_METHODS",
    "FitReport",
    "FitSpec",
    "build_spec",
    "fit",
    "recalibrate",
    "resume",
    "run_fit",
]


def fit(
    data: Any,
    target: str,
    features: Sequence[str] | None = None,
    *,
    method: str = DEFAULT_METHOD,
    architecture: str | Sequence[int] = "auto",
    activation: str = "tanh",
    log_target: bool = False,
    split_column: str | None = None,
    split: Sequence[float] | None = None,
    seed: int = 0,
    num_chains: int | None = None,
    num_warmup: int | None = None,
    num_samples: int | None = None,
    learn_noise: bool = True,
    noise_precision: float | None = None,
    noise_column: str | None = None,
    likelihood: str = "auto",
    noise_df: float | None = None,
    dtype: str | None = None,
    progress: bool = True,
    derive: Iterable[Any] = (),
    baseline: Sequence[str] = (),
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
    recalibrate: bool | str = "auto",
    recalibration_map: str | None = None,
    recalibration_gate: float | None = None,
    noise_margin: float | None = None,
    noise_choice_by: str | None = None,
    ard: bool = False,
    initial_positions: Any = None,
    client: Any = None,
    chains_per_task: int | None = None,
    **method_options: Any,
) -> tuple[FittedModel, FitReport]:
    """Fit a BNN surrogate to a table (the steps are in the module docstring).

    Args:
        data: a path (``.csv``, ``.csv.gz``, ``.parquet``) or a DataFrame.
        target: the column to predict.
        features: input columns; default every other numeric column (derived features included).
        method: ``"chees"`` (ChEES-HMC, the default), ``"nuts"``, ``"hmc"``, ``"mh"`` (MCMC), ``"bbb"``,
            ``"flipout"`` (VI) or ``"ensemble"`` (deep ensemble with a learned variance).
            Every MCMC method starts its chains from MAP fits; the default's settings
            (chains, warm-up, draws, trajectory cap) are :func:`sigmabnn.train.default_config`.
        architecture: ``"auto"`` (``P-20-20-1``), ``"5-50-50-1"`` or a sequence of widths.
        activation: hidden-layer activation.
        log_target: model ``log10`` of the (positive) target.
        split_column: column with train/val/test labels; else a random split by ``split``.
        split: train, validation, test fractions of the random split (``None``: 90/10/0, where an MCMC
            regression's val part trains instead if < 20 rows: :func:`sigmabnn.fitting.spec.auto_min_val_rows`).
        seed: seed of the split and of the run (``jax.random.key(seed)``).
        num_chains: MCMC chains (default: the method's, :func:`sigmabnn.train.default_config`; ignored by VI).
        num_warmup: warm-up iterations per chain (default: :func:`sigmabnn.train.default_config`); VI: ignored.
        num_samples: kept draws per chain (MCMC); VI: draws from q in total.
        learn_noise: Gibbs-sample (MCMC) or optimise (VI) the noise precision.
        noise_precision: initial (or, with ``learn_noise=False``, fixed) noise precision in standardised
            target units (default 100, noise std 0.1).
        noise_column: column with a known per-row noise std of the target (original units; for a log target
            converted to log10 units as ``std / (y ln 10)``); uses the known-noise likelihood.
        likelihood: noise model of the standardised target, ``"auto"`` (the default), ``"gaussian"``,
            ``"student_t"`` (heavy tails; :class:`~sigmabnn.model.likelihoods.StudentT`,
            its precision learnt by Gibbs updates with latent per-point weights) or
            ``"hetero_student_t"`` (heavy tails, a per-point scale output by the network,
            :class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`; MCMC only; ``architecture``
            is the mean network's, the scale output is added; its MAP starts: :mod:`sigmabnn.scale_head`).
            ``"auto"``: an MCMC regression with a learnt noise takes ``"hetero_student_t"`` where it predicts the
            validation rows better, else ``"gaussian"`` (:mod:`sigmabnn.fitting.noise_choice`; the report's
            ``noise_choice``); other fits take ``"gaussian"``. ``"categorical"``: a classifier of the target's
            integer or string labels, any method (:class:`~sigmabnn.classes.ClassLabels`: the sorted label set
            stored in the model; one logit per class; a temperature fitted on the validation rows,
            :mod:`sigmabnn.temperature`; no noise, log-target, baseline or recalibration options; ``predict``
            then returns a :class:`~sigmabnn.predict.classes.ClassPrediction`).
        noise_df: degrees of freedom of the Student-t noise (> 2; default 4).
        dtype: ``"float64"``, ``"float32"`` or ``None`` (:func:`~sigmabnn.fitting.spec.auto_dtype`).
        progress: progress bars on stderr.
        derive: derived features, ``"name=expression"`` strings or ``(name, expression)`` pairs.
            Names starting with one ``_`` are helpers for later expressions, not inputs.
        baseline: input features of a linear log-space baseline of the target (:class:`~sigmabnn.data.
            transforms.LinearBaseline`, least squares on the training rows): the network then models
            ``log10 y - b(x)`` (or ``y - b(x)``), and prediction adds ``b(x)`` back. Empty: no baseline.
        checkpoint: a model path to train into (MCMC: MAP results, streamed draws and the
            resumable state are kept there; an interruption leaves a partial model there and
            raises :class:`~sigmabnn.io.checkpoint.TrainingInterrupted`). The finished model is
            saved there. ``None``: nothing is written.
        resume: continue the interrupted run at ``checkpoint`` (the arguments must be those it
            was started with; :func:`resume` reads them for you).
        recalibrate: recalibrate the intervals (:func:`sigmabnn.recalibration.recalibrate`; the report's
            metrics are the raw model's). ``"auto"``: an MCMC regression's, on the validation rows,
            skipped when fewer than 20 have a PIT value (:func:`sigmabnn.fitting.spec.auto_recalibration`);
            ``True`` / ``"heldout"``, ``"loo"`` (at most :data:`sigmabnn.fitting.run.LOO_MAX_ROWS`
            training rows), ``"loo+heldout"``: the rows (``rows`` of that function); ``False``: raw.
        recalibration_map, recalibration_gate: the map (``"quantile"`` or ``"scale"``) and the p-value
            below which a KS test of uniform PIT values keeps it (1: always); ``None``: the automatic
            choice with ``"auto"`` (:mod:`sigmabnn.fitting.spec`), else ``"quantile"`` and 1.
        noise_margin, noise_choice_by: how ``likelihood="auto"`` chooses (:class:`sigmabnn.fitting.spec.ModelSpec`;
            ``None``: the defaults there): the paired SEs by which the scale head's MAP starts must win, and
            ``"starts"`` (one model sampled) or ``"sampled"`` (both sampled, the better on the val rows kept).
        ard: a sampled prior precision per input (:class:`sigmabnn.fitting.spec.ModelSpec`; MCMC methods).
        initial_positions: ``[k, d]`` starting weights in the model's flat layout, one row per
            MCMC chain (where its MAP pretraining starts) or ensemble member, e.g. an earlier
            fit's networks to refit on more rows (:mod:`sigmabnn.active`); ``None``: random starts.
        client: a ``dask.distributed.Client``: the chains of an MCMC fit run as tasks on its workers,
            in blocks of ``chains_per_task`` consecutive chains (default: split evenly over the
            workers), each block with the keys the one-process fit gives its chains, so the draws are
            those of the fit without a client (up to floating-point rounding; what is split for which
            sampler: :mod:`sigmabnn.train.chain_tasks`). MCMC methods only, without ``checkpoint``;
            the data and the returned model stay in this process. ``None``: one process.
        chains_per_task: chains of one task with a ``client`` (>= 1).
        **method_options: further fields of :class:`sigmabnn.train.MCMCConfig`
            (e.g. ``target_accept``, ``max_tree_depth``, ``learn_prior`` (true, false or ``"auto"``); ``map``, the MAP
            pretraining of the chains' starts: a :class:`sigmabnn.map.MAPConfig`, a dict of
            fields replacing those of the default one (scaled to the data by
            :func:`sigmabnn.train.default_config`), e.g. ``map={"num_steps": 16000,
            "lbfgs_steps": 1000}``, or ``None`` for none; ``hyperprior``: the Gibbs-sampled precisions'
            Gamma priors, a :class:`sigmabnn.train.gibbs.HyperPrior` or a dict of its fields) or of
            :class:`sigmabnn.vi.VIConfig` (e.g. ``num_steps``, ``batch_size``) or
            :class:`sigmabnn.ensemble.EnsembleConfig` (``num_members`` and the
            :class:`sigmabnn.map.MAPConfig` fields, e.g. ``num_steps``).

    Returns:
        ``(fitted, report)``: the :class:`~sigmabnn.fitted.FittedModel` and its
        :class:`~sigmabnn.fitting.report.FitReport`, read by attribute (``report.sampler.acceptance``);
        its JSON is stored as ``fitted.diagnostics`` (``fitted.report`` reads it back).
        Sections: ``data`` (rows, dropped rows per column, split sizes, features, fingerprint), ``model``,
        ``method``, ``sampler`` (MCMC: acceptance per chain, divergences, step sizes, E-BFMI, function-space
        R-hat/ESS, warnings; VI: final loss and KL), ``noise_std`` (posterior mean of the learnt noise std in
        log-space target units, i.e. log10 units for a log target; ``hetero_student_t``: its mean over the
        networks and training rows), ``timings`` (seconds) and ``metrics`` (``train``/``val``, from
        :func:`sigmabnn.evaluate.metrics.evaluate` on at most :data:`sigmabnn.fitting.score.METRICS_MAX_ROWS` rows).

    Raises:
        InputError / DataError: bad arguments or data (one-line message).
    """
    if resume and checkpoint is None:
        raise InputError("resume=True needs the checkpoint (model path) to resume")
    spec = build_spec(
        target, features, method=method, architecture=architecture, activation=activation, log_target=log_target,
        split_column=split_column, split=split, seed=seed, num_chains=num_chains, num_warmup=num_warmup,
        num_samples=num_samples, learn_noise=learn_noise, noise_precision=noise_precision, noise_column=noise_column,
        likelihood=likelihood, noise_df=noise_df, dtype=dtype, derive=derive, baseline=baseline,
        recalibrate=recalibrate, recalibration_map=recalibration_map, recalibration_gate=recalibration_gate,
        noise_margin=noise_margin, noise_choice_by=noise_choice_by, ard=ard, **method_options,
    )  # fmt: skip
    return run_fit(
        data, spec, progress=progress, checkpoint=checkpoint, resume=resume, initial_positions=initial_positions,
        client=client, chains_per_task=chains_per_task,
    )  # fmt: skip


def recalibrate(fitted: Any, data: Any, y: Any = None, **options: Any) -> Any:
    """Quantile-recalibrate ``fitted``'s intervals (a classifier: refit its temperature) on held-out
    rows; returns the new model.

    The public entry point of :func:`sigmabnn.recalibration.recalibrate` (arguments and
    errors there): ``data`` a table with the target and a ``split`` column (its ``"val"``
    rows are used) or raw features with targets ``y``.
    """
    return recalibrate_model(fitted, data, y, **options)


def resume(
    path: str | os.PathLike[str], data: Any = None, *, progress: bool = True, **expected: Any
) -> tuple[FittedModel, FitReport]:
    """Continue the interrupted checkpointed run at ``path``; returns what :func:`fit` returns.

    ``data`` defaults to the file the run was started with (its fingerprint must match);
    ``expected`` fit arguments, when given, must equal those of the run. A finished model,
    or a path without a checkpoint, raises :class:`~sigmabnn.errors.InputError`.
    """
    ckpt = Checkpoint.open(path)
    args = recorded_fit_args(ckpt, path)
    options = args.get("method_options") or {}
    unknown = sorted(set(expected) - set(args) - set(options))
    if unknown:
        raise InputError(f"unknown fit argument {unknown[0]!r}")
    if data is None:
        data = ckpt.record.get("source")
        if data is None:
            raise InputError(f"the run at {path} was started from a DataFrame: pass the data to resume it")
        if not os.path.isfile(data):
            raise InputError(f"the training data of the run at {path} are gone ({data}): pass them to resume it")
    for key, value in expected.items():
        recorded = options.get(key) if key in options else args.get(key)
        if json_value(key, value) != recorded:
            raise InputError(f"cannot resume {path}: it was started with {key}={recorded!r}, not {value!r}")
    spec = FitSpec.from_json(args)
    return run_fit(data, spec, progress=progress, checkpoint=path, resume=True)
