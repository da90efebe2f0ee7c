"""The high-level entry point: a table in, a fitted BNN surrogate and a report out.

:func:`fit` runs the whole product path:

1. read the table (:func:`sigmabnn.data.tables.read_table`) unless a
   DataFrame is given; add derived features (:mod:`sigmabnn.data.features`);
2. select, clean and split the rows (:func:`sigmabnn.data.tables.prepare`);
3. fit the transforms on the training rows: inputs standardised, the target
   optionally ``log10``-ed, then standardised;
4. build the BNN: architecture ``"auto"`` is ``P-20-20-1`` for ``P`` inputs,
   ``tanh`` hidden units; Gaussian likelihood in the standardised target space
   (its noise precision learnt by Gibbs updates unless ``learn_noise=False``;
   a per-row known noise std with ``noise_column``); Gaussian prior with
   precision 1.0 on every kernel and bias entry, a unit-scale prior that
   matches standardised inputs and targets;
5. sample: :func:`sigmabnn.train.fit_mcmc` for ``"nuts"``, ``"hmc"``, ``"chees"``, ``"mh"``,
   or :func:`sigmabnn.vi.fit_vi` for ``"bbb"`` and ``"flipout"``; or train a
   deep ensemble, :func:`sigmabnn.ensemble.fit_ensemble` for ``"ensemble"``
   (the likelihood then has a learned variance head: the architecture's last
   width is widened to a mean and a std output per target);
6. bundle everything in a :class:`~sigmabnn.fitted.FittedModel`, with a
   diagnostics summary (acceptance, divergences, step sizes, function-space
   R-hat/ESS, timings) and metrics on the training and validation rows.

The random key of the run is ``jax.random.key(seed)``; the same ``seed``
also fixes the random row split.

Long runs: ``fit(..., checkpoint=MODEL)`` trains into the model path
``MODEL`` (:mod:`sigmabnn.io.checkpoint`): MAP results are saved, draws are
streamed to disk chunk by chunk with a resumable state, an interruption
(``KeyboardInterrupt``, or ``SIGTERM`` in the CLI) leaves a partial model
there and raises :class:`~sigmabnn.io.checkpoint.TrainingInterrupted`, and
the finished model replaces the checkpoint. :func:`resume` continues an
interrupted run; the finished model equals that of an uninterrupted run.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from sigmabnn.errors import InputError

__all__ = ["ENSEMBLE_METHODS", "MCMC_METHODS", "METHODS", "VI_METHODS", "fit", "recalibrate", "resume"]

MCMC_METHODS = ("nuts", "hmc", "mh", "chees")
VI_METHODS = ("bbb", "flipout")
ENSEMBLE_METHODS = ("ensemble",)
METHODS = MCMC_METHODS + VI_METHODS + ENSEMBLE_METHODS
LIKELIHOOD_NAMES = ("gaussian", "student_t", "hetero_student_t")
"""Noise models :func:`fit` offers (a known per-row noise is chosen by ``noise_column``)."""
DEFAULT_HIDDEN = (20, 20)
#: Training/validation rows used for the metrics in the report (a seeded subset of larger sets).
METRICS_MAX_ROWS = 5000
#: Training points at which function-space R-hat/ESS are computed.
DIAGNOSTIC_POINTS = 32
#: MCMC iterations per jitted chunk: a checkpointed run commits its state after each.
CHUNK_SIZE = 50


def _architecture(spec: Any, features: Sequence[str], output_dim: int, activation: Any):
    from sigmabnn.model.mlp import parse_architecture

    num_features = len(features)
    if spec is None or spec == "auto":
        spec = (num_features, *DEFAULT_HIDDEN, output_dim)
    try:
        mlp = parse_architecture(spec, "tanh" if activation is None else activation)
    except ValueError as err:
        raise InputError(str(err)) from None
    if mlp.widths[0] != num_features:
        raise InputError(
            f"architecture {mlp.describe()} has {mlp.widths[0]} inputs but there are {num_features} features "
            f"({', '.join(features)})"
        )
    if mlp.widths[-1] != output_dim:
        raise InputError(f"architecture {mlp.describe()} must end in {output_dim} output(s)")
    return mlp


def _replace_config(config: Any, options: dict[str, Any], what: str) -> Any:
    unknown = sorted(set(options) - set(config._fields))
    if unknown:
        raise InputError(f"unknown {what} option {unknown[0]!r}; valid: {', '.join(config._fields)}")
    if isinstance(options.get("map"), dict):  # fields replacing the default MAP pretraining's (a checkpoint's JSON)
        options = {**options, "map": _replace_config(config.map, options["map"], "MAP")}
    return config._replace(**options)


def _noise_variance_factor(likelihood: Any) -> float:
    """Noise variance times the noise precision: 1, or ``df / (df - 2)`` for Student-t noise."""
    df = getattr(likelihood, "df", None) if likelihood.name == "student_t" else None
    return 1.0 if df is None else df / (df - 2.0)


def _mean_noise_std(bnn: Any, draws: Any, z: np.ndarray) -> float:
    """Mean over networks and points ``z`` of a per-point noise std (model units; heteroscedastic heads)."""
    import jax
    import jax.numpy as jnp

    positions = np.asarray(draws.positions).reshape(draws.num_networks, -1)
    zz = jnp.asarray(z, bnn.jdtype)
    one = jax.jit(lambda p: jnp.mean(jnp.sqrt(bnn.likelihood.aleatoric_variance(bnn.apply(bnn.unflatten(p), zz), 1.0))))
    return float(np.mean([float(one(jnp.asarray(p, bnn.jdtype))) for p in positions]))


def _subset(n: int, seed: int) -> np.ndarray:
    if n <= METRICS_MAX_ROWS:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).permutation(n)[:METRICS_MAX_ROWS])


def _draw_means(bnn: Any, draws: Any, z: np.ndarray) -> np.ndarray:
    """Model-space network means ``[C, S, k]`` (first target) at standardised points ``z`` ``[k, p]``."""
    import jax
    import jax.numpy as jnp

    c, s = draws.num_chains, draws.num_draws
    positions = np.asarray(draws.positions).reshape(c * s, -1)  # may be memory-mapped: read in batches
    zz = jnp.asarray(z, bnn.jdtype)
    f = jax.jit(jax.vmap(lambda p: bnn.likelihood.mean(bnn.apply(bnn.unflatten(p), zz))[:, 0]))
    batch = max(1, min(c * s, 2**24 // max(1, positions.shape[1])))  # at most 128 MB of float64 at a time
    out = [np.asarray(f(jnp.asarray(positions[i : i + batch], bnn.jdtype))) for i in range(0, c * s, batch)]
    return np.concatenate(out).reshape(c, s, -1)


def _mcmc_summary(bnn, draws, info, config, z_train) -> dict[str, Any]:
    from sigmabnn.evaluate import diagnostics as diag

    idx = np.linspace(0, z_train.shape[0] - 1, min(DIAGNOSTIC_POINTS, z_train.shape[0])).astype(int)
    summary = diag.summarize(
        predictions=_draw_means(bnn, draws, z_train[idx]),
        log_posterior=np.asarray(info.sample_info.logdensity),
        info=info.sample_info,
        max_tree_depth=config.max_tree_depth if config.kernel == "nuts" else None,
    )
    sampler = summary.get("sampler", {})
    out: dict[str, Any] = {
        "acceptance": sampler.get("mean_acceptance"),
        "divergences": sampler.get("num_divergent"),
        "step_size": [float(v) for v in np.asarray(info.adapted.step_size)],
        "mean_integration_steps": float(np.mean(np.asarray(info.sample_info.num_integration_steps))),
        "ebfmi": sampler.get("ebfmi"),
        "rhat_predictions": summary.get("predictions", {}).get("max_rhat"),
        "ess_bulk_predictions": summary.get("predictions", {}).get("min_ess_bulk"),
        "rhat_log_posterior": summary.get("log_posterior", {}).get("max_rhat"),
        "ess_bulk_log_posterior": summary.get("log_posterior", {}).get("min_ess_bulk"),
        "num_grad_evals": int(info.num_grad_evals),
        "learn_noise": bool(info.learn_noise),
    }
    if "tree_depth_saturation_fraction" in sampler:
        out["tree_depth_saturation"] = sampler["tree_depth_saturation_fraction"]
    out["warnings"] = diag.warnings(summary)
    return out


def _read(data: Any):
    import pandas as pd

    from sigmabnn.data.tables import read_table

    if isinstance(data, pd.DataFrame):
        return data, None
    if isinstance(data, str | os.PathLike):
        return read_table(data), os.fspath(data)
    raise InputError(f"data must be a path or a pandas DataFrame, got {type(data).__name__}")


def fit(
    data: Any,
    target: str,
    features: Sequence[str] | None = None,
    *,
    method: str = "nuts",
    architecture: str | Sequence[int] = "auto",
    activation: str = "tanh",
    log_target: bool = False,
    split_column: str | None = None,
    split: Sequence[float] = (0.8, 0.1, 0.1),
    seed: int = 0,
    num_chains: int = 4,
    num_warmup: int | None = None,
    num_samples: int | None = None,
    learn_noise: bool = True,
    noise_precision: float | None = None,
    noise_column: str | None = None,
    likelihood: str = "gaussian",
    noise_df: float | None = None,
    dtype: str = "float64",
    progress: bool = True,
    derive: Iterable[Any] = (),
    baseline: Sequence[str] = (),
    checkpoint: str | os.PathLike[str] | None = None,
    resume: bool = False,
    recalibrate: bool | str = False,
    **method_options: Any,
) -> tuple[Any, dict[str, Any]]:
    """Fit a BNN surrogate to a table (the steps are in the module docstring).

    Args:
        data: a path (``.csv``, ``.csv.gz``, ``.parquet``) or a DataFrame.
        target: the column to predict.
        features: input columns; default every other numeric column (after
            derived features are added, so those are included).
        method: ``"nuts"``, ``"hmc"``, ``"chees"`` (ChEES-HMC), ``"mh"`` (MCMC), ``"bbb"``, ``"flipout"`` (VI)
            or ``"ensemble"`` (deep ensemble with a learned variance).
        architecture: ``"auto"`` (``P-20-20-1``), ``"5-50-50-1"`` or a sequence of widths.
        activation: hidden-layer activation.
        log_target: model ``log10`` of the (positive) target.
        split_column: column with train/val/test labels; else a random split by ``split``.
        split: train, validation, test fractions of the random split.
        seed: seed of the split and of the run (``jax.random.key(seed)``).
        num_chains: MCMC chains (ignored by VI).
        num_warmup: warm-up iterations per chain (default scaled to the problem,
            :func:`sigmabnn.train.default_config`); VI: ignored.
        num_samples: kept draws per chain (MCMC); VI: draws from q in total.
        learn_noise: Gibbs-sample (MCMC) or optimise (VI) the noise precision.
        noise_precision: initial (or, with ``learn_noise=False``, fixed) noise
            precision in standardised target units (default 100, noise std 0.1).
        noise_column: column with a known per-row noise std of the target
            (original units; for a log target converted to log10 units as
            ``std / (y ln 10)``); uses the known-noise likelihood.
        likelihood: noise model of the standardised target, ``"gaussian"``,
            ``"student_t"`` (heavy tails; :class:`~sigmabnn.model.likelihoods.StudentT`,
            its precision learnt by Gibbs updates with latent per-point weights) or
            ``"hetero_student_t"`` (heavy tails with a per-point scale output by the network,
            :class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`; MCMC methods only,
            ``learn_noise`` does not apply; ``architecture`` is that of the mean network, ending
            in one output, to which the scale output is added, as for the ensemble; MAP first
            fits the mean network alone and starts the scale at the residuals' Student-t scale,
            :mod:`sigmabnn.scale_head`).
        noise_df: degrees of freedom of the Student-t noise (> 2; default 4).
        dtype: ``"float64"`` or ``"float32"``.
        progress: progress bars on stderr.
        derive: derived features, ``"name=expression"`` strings or ``(name, expression)`` pairs.
            Names starting with one ``_`` are helpers for later expressions, not inputs.
        baseline: input features of a linear log-space baseline of the target
            (:class:`~sigmabnn.data.transforms.LinearBaseline`, least squares on the training
            rows): the network then models ``log10 y - b(x)`` (or ``y - b(x)``), and prediction
            adds ``b(x)`` back. Empty: no baseline.
        checkpoint: a model path to train into (MCMC: MAP results, streamed draws and the
            resumable state are kept there; an interruption leaves a partial model there and
            raises :class:`~sigmabnn.io.checkpoint.TrainingInterrupted`). The finished model is
            saved there. ``None``: nothing is written.
        resume: continue the interrupted run at ``checkpoint`` (the arguments must be those it
            was started with; :func:`resume` reads them for you).
        recalibrate: quantile-recalibrate the intervals on the validation rows
            (:func:`sigmabnn.recalibration.recalibrate`, Kuleshov et al. 2018); needs validation
            rows. The report's metrics are those of the raw model. ``True`` or ``"heldout"``: on the
            validation rows' PIT; ``"loo"``: on the training rows' leave-one-out PIT (PSIS; MCMC
            methods only); ``"loo+heldout"``: on both (``rows`` of that function).
        **method_options: further fields of :class:`sigmabnn.train.MCMCConfig`
            (e.g. ``target_accept``, ``max_tree_depth``, ``learn_prior``; ``map``, the MAP
            pretraining of the chains' starts: a :class:`sigmabnn.map.MAPConfig`, a dict of
            fields replacing those of the default one (scaled to the data by
            :func:`sigmabnn.train.default_config`), e.g. ``map={"num_steps": 16000,
            "lbfgs_steps": 1000}``, or ``None`` for none) or of
            :class:`sigmabnn.vi.VIConfig` (e.g. ``num_steps``, ``batch_size``) or
            :class:`sigmabnn.ensemble.EnsembleConfig` (``num_members`` and the
            :class:`sigmabnn.map.MAPConfig` fields, e.g. ``num_steps``).

    Returns:
        ``(fitted, report)``: the :class:`~sigmabnn.fitted.FittedModel` and a
        JSON-able report; the report is also stored as ``fitted.diagnostics``.
        Sections: ``data`` (rows, dropped rows per column, split sizes, features,
        fingerprint), ``model``, ``method``, ``sampler`` (MCMC: acceptance per
        chain, divergences, step sizes, E-BFMI, function-space R-hat/ESS,
        warnings; VI: final loss and KL), ``noise_std`` (posterior mean of the
        learnt noise std in log-space target units, i.e. log10 units for a log
        target; ``hetero_student_t``: its mean over the networks and training rows),
        ``timings`` (seconds) and ``metrics`` (``train``/``val``, from
        :func:`sigmabnn.evaluate.metrics.evaluate` on at most
        ``METRICS_MAX_ROWS`` rows each).

    Raises:
        InputError / DataError: bad arguments or data (one-line message).
    """
    import jax

    from sigmabnn.data.tables import prepare
    from sigmabnn.data.transforms import Standardizer, TargetTransform
    from sigmabnn.dtypes import resolve
    from sigmabnn.evaluate.metrics import evaluate
    from sigmabnn.fitted import FittedModel
    from sigmabnn.io.model_file import to_jsonable
    from sigmabnn.model.likelihoods import (
        Gaussian,
        HeteroscedasticGaussian,
        HeteroscedasticStudentT,
        KnownNoiseGaussian,
        StudentT,
    )
    from sigmabnn.model.mlp import num_params
    from sigmabnn.model.posterior import BNN, Data
    from sigmabnn.model.priors import GaussianPrior

    t_start = time.perf_counter()
    if resume and checkpoint is None:
        raise InputError("resume=True needs the checkpoint (model path) to resume")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or not 0 <= int(seed) < 2**63:
        raise InputError(f"seed must be an integer from 0 to 2**63 - 1, got {seed!r}")
    method = str(method).lower()
    if method not in METHODS:
        raise InputError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")
    try:
        dtype = resolve(dtype).name
    except (TypeError, ValueError) as err:
        raise InputError(str(err)) from None
    if noise_precision is not None and not (np.isfinite(noise_precision) and noise_precision > 0):
        raise InputError(f"noise_precision must be a positive number, got {noise_precision}")
    likelihood_name = str(likelihood).lower()
    if likelihood_name not in LIKELIHOOD_NAMES:
        raise InputError(f"unknown likelihood {likelihood!r}; choose from {', '.join(LIKELIHOOD_NAMES)}")
    if likelihood_name == "student_t" and (noise_column is not None or method in ENSEMBLE_METHODS):
        raise InputError("the student_t likelihood has a learnt homoscedastic scale: no --noise-column, no ensemble")
    if noise_df is not None and likelihood_name not in ("student_t", "hetero_student_t"):
        raise InputError("noise_df (degrees of freedom) is an option of the student_t and hetero_student_t likelihoods")
    if likelihood_name == "hetero_student_t":
        if method not in MCMC_METHODS:
            raise InputError(f"the hetero_student_t likelihood needs an MCMC method ({', '.join(MCMC_METHODS)})")
        if noise_column is not None or noise_precision is not None:
            raise InputError("the hetero_student_t likelihood learns a scale per point: no noise column or precision")
        learn_noise = False

    if recalibrate is True:
        recalibrate = "heldout"
    if recalibrate is not False and recalibrate not in ("heldout", "loo", "loo+heldout"):
        raise InputError(f"recalibrate must be True, False, 'heldout', 'loo' or 'loo+heldout'; got {recalibrate!r}")
    if recalibrate and "loo" in recalibrate and method not in MCMC_METHODS:
        raise InputError(
            f"recalibrate={recalibrate!r} (leave-one-out PIT) needs MCMC draws ({', '.join(MCMC_METHODS)})"
        )
    derive = tuple(derive)
    if hasattr(method_options.get("map"), "_asdict"):  # a MAPConfig: every field, as JSON a checkpoint can hold
        method_options = {**method_options, "map": method_options["map"]._asdict()}
    run_args = _run_args(
        target=target, features=None if features is None else list(features), method=method,
        architecture=architecture, activation=activation, log_target=bool(log_target), split_column=split_column,
        split=list(split), seed=int(seed), num_chains=int(num_chains), num_warmup=num_warmup,
        num_samples=num_samples, learn_noise=bool(learn_noise), noise_precision=noise_precision,
        noise_column=noise_column, dtype=dtype, derive=list(derive), method_options=method_options,
        **({"baseline": list(baseline)} if baseline else {}),
        **({"likelihood": likelihood_name, "noise_df": noise_df} if likelihood_name != "gaussian" else {}),
        **({"recalibrate": True if recalibrate == "heldout" else recalibrate} if recalibrate else {}),
    ) if checkpoint is not None else None  # fmt: skip
    df, source = _read(data)
    derived: tuple[tuple[str, str], ...] = ()
    if derive:
        from sigmabnn.data.features import add_derived, is_helper, parse_derived

        parsed = parse_derived(derive, df.columns)
        df = add_derived(df, parsed)
        derived = tuple((f.name, f.expression) for f in parsed)
        helpers = [n for n, _ in derived if is_helper(n) and (features is None or n not in features)]
        df = df.drop(columns=helpers)  # helpers feed later expressions only, never the network
        if features is not None:
            features = list(features) + [n for n, _ in derived if n not in features and n not in helpers]
    prepared = prepare(
        df,
        target,
        features,
        split_column=split_column,
        split_fractions=split,
        seed=seed,
        log_target=log_target,
        noise_column=noise_column,
    )
    train, val = prepared.train, prepared.val
    if recalibrate and recalibrate != "loo" and val.n == 0:
        raise InputError("recalibration needs validation rows; this split has none (give a split with a val part)")
    if recalibrate and noise_column is not None:
        raise InputError("recalibration is not supported with a known per-row noise (noise_column)")
    x_transform = Standardizer.fit(train.x)
    names = list(prepared.feature_names)
    baseline = tuple(str(b) for b in baseline)
    unknown = [b for b in baseline if b not in names]
    if unknown:
        raise InputError(f"baseline feature {unknown[0]!r} is not an input (inputs: {', '.join(names)})")
    try:
        y_transform = TargetTransform.fit(
            train.y, log10=log_target, baseline_x=train.x[:, [names.index(b) for b in baseline]],
            baseline_features=baseline,
        )  # fmt: skip
    except ValueError as err:
        raise InputError(str(err)) from None

    if method in ENSEMBLE_METHODS:
        if noise_column is not None or noise_precision is not None:
            raise InputError("the ensemble learns its noise variance; a fixed or known noise is not supported")
        likelihood = HeteroscedasticGaussian()
        learn_noise = True
    elif noise_column is not None:
        likelihood = KnownNoiseGaussian()
        learn_noise = False
    elif likelihood_name == "hetero_student_t":
        try:
            likelihood = HeteroscedasticStudentT(df=float(4.0 if noise_df is None else noise_df))
        except (TypeError, ValueError) as err:
            raise InputError(str(err)) from None
    elif likelihood_name == "student_t":
        try:
            likelihood = StudentT(
                df=float(4.0 if noise_df is None else noise_df),
                precision=float(noise_precision) if noise_precision is not None else StudentT.precision,
                learn_precision=bool(learn_noise),
            )
        except (TypeError, ValueError) as err:
            raise InputError(str(err)) from None
    else:
        likelihood = Gaussian(
            precision=float(noise_precision) if noise_precision is not None else Gaussian.precision,
            learn_precision=bool(learn_noise),
        )
    if method in ENSEMBLE_METHODS or likelihood.name == "hetero_student_t":
        from sigmabnn.ensemble import with_variance_head  # the architecture is the mean network's

        mlp = with_variance_head(_architecture(architecture, prepared.feature_names, 1, activation), likelihood)
    else:
        mlp = _architecture(architecture, prepared.feature_names, likelihood.output_dim(1), activation)
    bnn = BNN(mlp=mlp, prior=GaussianPrior(1.0, 1.0), likelihood=likelihood, dtype=dtype)
    d = num_params(mlp)

    def model_data(split_: Any) -> Data | None:
        if split_.n == 0:
            return None
        noise = None
        if split_.noise_std is not None:
            log_std = split_.noise_std / (split_.y * np.log(10.0)) if log_target else split_.noise_std
            noise = log_std / y_transform.scale[0]
        return Data(
            x=x_transform.forward(split_.x, dtype=dtype),
            y=y_transform.forward(split_.y, dtype=dtype, offset=y_transform.offset(split_.x, names))[:, None],
            noise_std=None if noise is None else noise.astype(dtype),
        )

    train_data = model_data(train)
    val_data = model_data(val)
    key = jax.random.key(int(seed))

    settings: dict[str, Any] = {
        "method": method,
        "architecture": mlp.describe(),
        "activation": activation,
        "log_target": bool(log_target),
        **({"baseline": list(baseline)} if baseline else {}),
        "seed": int(seed),
        "dtype": dtype,
        "prior_precision": 1.0,
        "learn_noise": bool(learn_noise),
        **({"noise_df": float(likelihood.df)} if likelihood.name in ("student_t", "hetero_student_t") else {}),
    }
    adapted: dict[str, np.ndarray] = {}
    t_fit = time.perf_counter()
    if method in MCMC_METHODS:
        from sigmabnn.train import default_config, fit_mcmc

        config = default_config(train.n, d)._replace(kernel=method, num_chains=int(num_chains), learn_noise=learn_noise)
        if num_warmup is not None:
            config = config._replace(num_warmup=int(num_warmup))
        if num_samples is not None:
            config = config._replace(num_samples=int(num_samples))
        config = _replace_config(config, method_options, "MCMC")
        ckpt = None
        try:
            if checkpoint is not None:  # created once the arguments are known to be good
                ckpt = _open_checkpoint(checkpoint, resume, run_args, prepared.fingerprint, source)
            chunk = int(ckpt.record.get("chunk_size", CHUNK_SIZE)) if ckpt is not None else CHUNK_SIZE
            starts = None
            if likelihood.name == "hetero_student_t" and (ckpt is None or ckpt.load_arrays("map") is None):
                from sigmabnn.scale_head import scale_head_starts

                map_config = config.map if config.map is not None else default_config(train.n, d).map
                starts, _ = scale_head_starts(
                    jax.random.fold_in(key, 1), bnn, train_data, map_config, config.num_chains, val_data
                )
            draws, info = fit_mcmc(
                key, bnn, train_data, config, val_data=val_data, progress=progress, checkpoint=ckpt, chunk_size=chunk,
                initial_positions=starts,
            )  # fmt: skip
        except KeyboardInterrupt as err:
            if ckpt is None:
                raise
            partial = FittedModel(
                bnn=bnn, draws=None, x_transform=x_transform, y_transform=y_transform,
                feature_names=prepared.feature_names, target_name=prepared.target_name, derived=derived,
                method=method, settings=to_jsonable(settings), data_fingerprint=prepared.fingerprint,
            )  # fmt: skip
            raise _interrupted(ckpt, partial, config, err) from None
        except ValueError as err:
            if ckpt is not None and not resume:  # bad settings: leave nothing behind
                import shutil

                shutil.rmtree(ckpt.model_path, ignore_errors=True)
            if isinstance(err, InputError):
                raise
            raise InputError(" ".join(str(err).split())) from None
        draws = jax.device_get(draws)
        adapted = {k: np.asarray(v) for k, v in info.adapted._asdict().items()}
        sampler = _mcmc_summary(bnn, draws, info, config, train_data.x)
        timings = {
            "map_seconds": float(info.map_seconds),
            "sample_seconds": float(info.sample_seconds),
        }
        settings.update(
            {
                k: v
                for k, v in config._asdict().items()
                if k not in ("hyperprior", "map") and isinstance(v, int | float | str | bool | type(None))
            }
        )
        # the MAP pretraining that made the starts, flat: map_num_steps, map_lbfgs_steps, ... (none: map None)
        settings.update({f"map_{k}": v for k, v in (config.map._asdict() if config.map is not None else {}).items()})
        settings["map"] = config.map is not None
    elif method in ENSEMBLE_METHODS:
        from sigmabnn.ensemble import EnsembleConfig, fit_ensemble, training_summary

        try:
            config = EnsembleConfig.from_options(**method_options)
            draws, info = fit_ensemble(key, bnn, train_data, config, val_data=val_data)
        except ValueError as err:
            raise InputError(" ".join(str(err).split())) from None
        draws = jax.device_get(draws)
        sampler = training_summary(info)
        timings = {"ensemble_seconds": float(info.seconds)}
        settings.update(config.flat())
    else:
        from sigmabnn.vi import VIConfig, fit_vi

        config = VIConfig(method=method, learn_noise=bool(learn_noise))
        if num_samples is not None:
            config = config._replace(num_draws=int(num_samples))
        config = _replace_config(config, method_options, "VI")
        try:
            draws, info = fit_vi(key, bnn, train_data, config, progress=progress)
        except ValueError as err:
            if isinstance(err, InputError):
                raise
            raise InputError(" ".join(str(err).split())) from None
        draws = jax.device_get(draws)
        loss = np.asarray(info.loss)
        tail = loss[-max(1, loss.size // 20) :]
        sampler = {
            "final_loss": float(np.mean(tail)),
            "final_kl": float(np.mean(np.asarray(info.kl)[-tail.size :])),
            "num_steps": int(loss.size),
        }
        timings = {"vi_seconds": time.perf_counter() - t_fit}
        settings.update(
            {k: v for k, v in config._asdict().items() if isinstance(v, int | float | str | bool | type(None))}
        )
    timings["fit_seconds"] = time.perf_counter() - t_fit

    noise_prec = np.asarray(draws.hyper.noise_precision, dtype=np.float64)
    fitted = FittedModel(
        bnn=bnn,
        draws=draws,
        x_transform=x_transform,
        y_transform=y_transform,
        feature_names=prepared.feature_names,
        target_name=prepared.target_name,
        derived=derived,
        method=method,
        settings=to_jsonable(settings),
        adapted=adapted,
        diagnostics={},
        data_fingerprint=prepared.fingerprint,
    )

    t_metrics = time.perf_counter()
    metrics: dict[str, Any] = {}
    for name, split_ in (("train", train), ("val", val)):
        if split_.n == 0:
            continue
        rows = _subset(split_.n, seed)
        metrics[name] = evaluate(fitted, split_.x[rows], split_.y[rows])
    timings["metrics_seconds"] = time.perf_counter() - t_metrics
    timings["total_seconds"] = time.perf_counter() - t_start

    report: dict[str, Any] = {
        "data": {
            "source": source,
            "rows": prepared.n_rows,
            "dropped": prepared.n_dropped,
            "dropped_by_column": prepared.dropped_by_column,
            "train": train.n,
            "val": val.n,
            "test": prepared.test.n,
            "split": prepared.split_source,
            "features": list(prepared.feature_names),
            "skipped_columns": list(prepared.skipped_columns),
            "fingerprint": prepared.fingerprint,
        },
        "model": {
            "architecture": mlp.describe(),
            "num_params": d,
            "likelihood": likelihood.name,
            "dtype": dtype,
            "networks": int(draws.num_networks),
        },
        "method": method,
        "sampler": sampler,
        "noise_std": None
        if noise_column is not None or method in ENSEMBLE_METHODS
        else _mean_noise_std(bnn, draws, train_data.x[_subset(train.n, seed)]) * float(y_transform.scale[0])
        if likelihood.name == "hetero_student_t"
        else float(np.mean(np.sqrt(_noise_variance_factor(likelihood) / noise_prec)) * float(y_transform.scale[0])),
        "timings": timings,
        "metrics": metrics,
    }
    report = to_jsonable(report)
    fitted = dataclasses.replace(fitted, diagnostics=report)
    if recalibrate:
        from sigmabnn.recalibration import recalibrate as recalibrate_model

        fitted = recalibrate_model(fitted, val.x, val.y, split="val", rows=recalibrate, train=(train.x, train.y))
    if checkpoint is not None:
        from sigmabnn.io.model_file import save_model

        save_model(fitted, checkpoint)  # replaces the checkpoint
    return fitted, report


def recalibrate(fitted: Any, data: Any, y: Any = None, **options: Any) -> Any:
    """Quantile-recalibrate ``fitted``'s intervals on held-out rows; returns the new model.

    The public entry point of :func:`sigmabnn.recalibration.recalibrate` (arguments and
    errors there): ``data`` a table with the target and a ``split`` column (its ``"val"``
    rows are used) or raw features with targets ``y``.
    """
    from sigmabnn.recalibration import recalibrate as recalibrate_model

    return recalibrate_model(fitted, data, y, **options)


def _run_args(**args: Any) -> dict[str, Any]:
    """The arguments of a checkpointed :func:`fit` as JSON (what :func:`resume` calls it with again)."""
    import json

    if not isinstance(args.get("architecture", ""), str):
        args = {**args, "architecture": [int(w) for w in args["architecture"]]}
    try:
        return json.loads(json.dumps(args, allow_nan=False))
    except (TypeError, ValueError) as err:
        raise InputError(f"a checkpointed fit needs arguments that JSON can hold: {err}") from None


def _open_checkpoint(path: Any, resume: bool, run_args: dict[str, Any], fingerprint: str, source: str | None):
    """A new checkpoint at ``path``, or (``resume``) the existing one after checking it is this run's."""
    from sigmabnn._version import __version__
    from sigmabnn.fitted import now_iso
    from sigmabnn.io.checkpoint import Checkpoint

    if not resume:
        return Checkpoint.create(
            path,
            {
                "fit_args": run_args,
                "data_fingerprint": fingerprint,
                "source": None if source is None else os.path.abspath(source),
                "chunk_size": CHUNK_SIZE,
                "sigmabnn_version": __version__,
                "created": now_iso(),
            },
        )
    ckpt = Checkpoint.open(path)
    recorded = ckpt.record.get("fit_args")
    if not isinstance(recorded, dict):
        raise InputError(f"the checkpoint in {path} does not record its fit arguments")
    for key in sorted(set(recorded) | set(run_args)):
        if recorded.get(key) != run_args.get(key):
            raise InputError(
                f"cannot resume {path}: it was started with {key}={recorded.get(key)!r}, not {run_args.get(key)!r}"
            )
    if ckpt.record.get("data_fingerprint") != fingerprint:
        raise InputError(
            f"cannot resume {path}: the training data differ from those of the interrupted run "
            f"({fingerprint} instead of {ckpt.record.get('data_fingerprint')})"
        )
    return ckpt


def _interrupted(ckpt: Any, partial: Any, config: Any, err: BaseException) -> BaseException:
    """Save the partial model of an interrupted run (its committed draws) and say how far it got."""
    from sigmabnn.io.checkpoint import TrainingInterrupted
    from sigmabnn.io.model_file import save_partial_model
    from sigmabnn.model.mlp import num_params

    num_warmup, num_samples, thin = int(config.num_warmup), int(config.num_samples), int(config.thin)
    total = num_warmup + num_samples * thin
    iteration = ckpt.iteration()
    done = max(iteration - num_warmup, 0) // thin
    bnn = partial.bnn
    layers = len(bnn.mlp.widths) - 1
    draws = ckpt.committed_draws(done, int(config.num_chains), num_params(bnn.mlp), layers, bnn.dtype)
    phase = "sampling" if iteration > num_warmup else "warm-up" if ckpt.has_arrays() else "MAP"
    training = {
        "complete": False,
        "phase": phase,
        "iterations_done": iteration,
        "iterations_planned": total,
        "draws_done": done,
        "draws_planned": num_samples,
    }
    partial = dataclasses.replace(partial, draws=draws, diagnostics={"training": training})
    save_partial_model(partial, ckpt.model_path)
    return TrainingInterrupted(str(ckpt.model_path), training, getattr(err, "signal_name", "SIGINT"))


def resume(
    path: str | os.PathLike[str], data: Any = None, *, progress: bool = True, **expected: Any
) -> tuple[Any, dict[str, Any]]:
    """Continue the interrupted checkpointed run at ``path``; returns what :func:`fit` returns.

    ``data`` defaults to the file the run was started with (its fingerprint must match);
    ``expected`` fit arguments, when given, must equal those of the run. A finished model,
    or a path without a checkpoint, raises :class:`~sigmabnn.errors.InputError`.
    """
    from sigmabnn.io.checkpoint import Checkpoint

    record = Checkpoint.open(path).record
    args = dict(record.get("fit_args") or {})
    unknown = sorted(set(expected) - set(args) - set(args.get("method_options", {})))
    if unknown:
        raise InputError(f"unknown fit argument {unknown[0]!r}")
    options = args.pop("method_options", {})
    if data is None:
        data = record.get("source")
        if data is None:
            raise InputError(f"the run at {path} was started from a DataFrame: pass the data to resume it")
        if not os.path.isfile(data):
            raise InputError(f"the training data of the run at {path} are gone ({data}): pass them to resume it")
    target = args.pop("target")
    args["derive"] = [tuple(d) if isinstance(d, list) else d for d in args.get("derive", [])]
    for key, value in expected.items():
        recorded = options.get(key) if key in options else args.get(key) if key != "target" else target
        if _run_args(**{key: value})[key] != recorded:
            raise InputError(f"cannot resume {path}: it was started with {key}={recorded!r}, not {value!r}")
    return fit(data, target, **args, **options, progress=progress, checkpoint=path, resume=True)
