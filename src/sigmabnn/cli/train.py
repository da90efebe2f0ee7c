"""``sigmabnn train DATA --target COL --out MODEL``: fit a BNN to a table and save it.

MCMC runs are checkpointed in MODEL while they run (:mod:`sigmabnn.io.checkpoint`).
Ctrl-C (SIGINT) or SIGTERM leaves a partial model there, holding the draws so
far and the resumable state, and exits with 130 (SIGINT) or 143 (SIGTERM);
``sigmabnn train --resume MODEL`` continues the run to the model an
uninterrupted run would have written.

With ``--dask [ADDRESS]`` the chains of an MCMC fit run as tasks on a Dask cluster
(:mod:`sigmabnn.train.chain_tasks`) and give the model of the one-process run; such a run is
not checkpointed (an interruption leaves nothing), so ``--resume`` does not go with it.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Iterator
from typing import Any

from sigmabnn import interrupts
from sigmabnn.cli import common, dask_options
from sigmabnn.errors import InputError
from sigmabnn.names import (
    CALIBRATION_MAPS,
    CLI_METHODS,
    DEFAULT_METHOD,
    DEFAULT_SPLIT,
    LIKELIHOOD_NAMES,
    MCMC_METHODS,
    MIN_RECALIBRATION_ROWS,
    RECALIBRATION_ROWS,
    VI_METHODS,
)  # fmt: skip

HELP = "fit a BNN to a CSV/Parquet table and save the model file"
DESCRIPTION = (
    "Fit a Bayesian neural network to the columns of a CSV or Parquet table and save it as a model file. "
    "Defaults: a NFEATURES-20-20-1 tanh network sampled by ChEES-HMC in float32, 8 chains from 8 MAP starts, "
    "300 warm-up iterations and 125 draws each, at most 127 leapfrog steps per iteration (on smaller tables "
    "longer trajectories: 255 steps up to 1,024 fitted rows, 511 up to 512, and 600 warm-up iterations up to "
    "256), the noise precision learned from the data, then the intervals recalibrated on the validation rows "
    "when there are at least 20 and their PIT values reject calibrated intervals (Kolmogorov-Smirnov p < 0.05). "
    "An interrupted MCMC run (Ctrl-C, SIGTERM) leaves a partial model holding "
    "the draws so far; 'sigmabnn train --resume MODEL' finishes it, with the result an uninterrupted run would "
    "have given. "
    "With --dask the chains run as tasks on a Dask cluster and give the model of the one-process run."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "data",
        metavar="DATA",
        nargs="?",
        help="training table (.csv, .csv.gz, .parquet); with --resume, default the run's own data file",
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--target", metavar="COL", help="column to predict (this or --process, unless --resume)")
    what.add_argument(
        "--process",
        metavar="PDG1,PDG2",
        help="cross-section table (e.g. the built-in ewino data): predict log10 of nlo_<pdg1>_<pdg2> from the "
        "mass and mixing row of each particle (the thesis's inputs), split by the 'split' column if present",
    )
    p.add_argument(
        "--features",
        type=common.column_list,
        metavar="A,B,C",
        help="input columns (default: every numeric column except the target and the split column)",
    )
    split = p.add_mutually_exclusive_group()
    split.add_argument(
        "--split-column",
        metavar="COL",
        help="column whose values (train/val/test) assign rows to the training, validation and test sets",
    )
    split.add_argument(
        "--split",
        type=common.split_fractions,
        metavar="TRAIN,VAL,TEST",
        help=f"random split of the rows by fractions (default {','.join(f'{f:g}' for f in DEFAULT_SPLIT)}: "
        f"no test part, and an MCMC regression trains on the val part when it has < {MIN_RECALIBRATION_ROWS} rows, "
        "too few to recalibrate on; 0.8,0.1,0.1 keeps one), reproducible with --seed",
    )
    p.add_argument("--seed", type=common.seed, metavar="N", help="random seed (default 0)")
    p.add_argument(
        "--log-target",
        action="store_true",
        help="model log10 of the target (for positive targets spanning orders of magnitude)",
    )
    p.add_argument(
        "--derive",
        action="append",
        default=[],
        type=common.derive_expression,
        metavar="NAME=EXPR",
        help="add a derived input column, e.g. 'msum=m1+m2' (repeatable; stored in the model file; "
        "a name starting with _ is a helper for later expressions, not an input)",
    )
    p.add_argument(
        "--baseline",
        action="append",
        default=[],
        metavar="FEATURE",
        help="input feature of a linear log-space baseline of the target, fitted by least squares on the "
        "training rows; the network models the residual and prediction adds it back (repeatable)",
    )
    _add_network_arguments(p)
    _add_sampler_arguments(p)
    _add_map_arguments(p)
    _add_output_arguments(p)


def _add_network_arguments(p: argparse.ArgumentParser) -> None:
    net = p.add_argument_group("network")
    net.add_argument(
        "--arch",
        type=common.architecture,
        metavar="WIDTHS",
        help="layer widths including input and output, e.g. 5-20-20-1 (default: NFEATURES-20-20-1)",
    )
    net.add_argument("--activation", default=None, metavar="NAME", help="hidden-layer activation (default tanh)")
    net.add_argument(
        "--ard",
        action="store_true",
        help="automatic relevance determination (MCMC methods): a prior precision per input, sampled, so inputs "
        "the data do not need are shrunk",
    )
    net.add_argument(
        "--dtype",
        choices=("float32", "float64"),
        help="arithmetic of the fit (default float32 for the default ChEES with the automatic or Gaussian likelihood, "
        "else float64)",
    )


def _add_sampler_arguments(p: argparse.ArgumentParser) -> None:
    sampler = p.add_argument_group("sampler")
    sampler.add_argument(
        "--method",
        choices=CLI_METHODS,
        help="chees (ChEES-HMC: one adapted trajectory length shared by the chains; the default), nuts, hmc, "
        "mh (MCMC), bbb, flipout (variational) or ensemble (5 MAP networks with a learned "
        "variance; --chains/--warmup ignored by the last three)",
    )
    sampler.add_argument(
        "--chains",
        type=common.positive_int,
        metavar="N",
        help="number of chains (default 8 for chees, 4 for nuts, hmc, mh)",
    )
    sampler.add_argument(
        "--warmup",
        type=common.nonnegative_int,
        metavar="N",
        help="warm-up iterations per chain (default: scaled to the rows for chees, to the parameters for nuts, "
        "hmc, mh)",
    )
    sampler.add_argument(
        "--draws",
        type=common.positive_int,
        metavar="N",
        help="kept draws per chain (default 125 for chees, 250 for nuts, hmc, mh)",
    )
    sampler.add_argument(
        "--fixed-noise",
        type=common.positive_float,
        metavar="PRECISION",
        help="fix the noise precision 1/sigma^2 (standardised target units) instead of learning it",
    )
    sampler.add_argument(
        "--likelihood",
        choices=LIKELIHOOD_NAMES,
        default=None,
        help="noise model: auto (default; MCMC: gaussian, or hetero_student_t when its MAP fits predict the "
        "validation rows better by more than one standard error; else gaussian), gaussian, student_t (heavy tails, "
        "latent per-point precisions Gibbs-sampled), hetero_student_t (heavy tails, a per-point scale output by the "
        "network; MCMC only); categorical: "
        "a classifier of the target's integer or string labels (every method)",
    )
    sampler.add_argument(
        "--df",
        type=common.positive_float,
        metavar="NU",
        help="degrees of freedom of the student_t / hetero_student_t noise (> 2, default 4)",
    )
    sampler.add_argument(
        "--vi-prior",
        choices=("gaussian", "scale_mixture"),
        default=None,
        help="bbb / flipout: the weights' prior, gaussian (default) or Blundell et al.'s scale mixture",
    )


def _add_map_arguments(p: argparse.ArgumentParser) -> None:
    pre = p.add_argument_group("MAP pretraining of the chains' starts (MCMC methods)")
    pre.add_argument(
        "--map-steps",
        type=common.positive_int,
        metavar="N",
        help="Adam steps per start (default 2000; above 20,000 rows, 10+ epochs of minibatches of 1024)",
    )
    pre.add_argument(
        "--map-learning-rate", type=common.positive_float, metavar="LR", help="Adam step size (default 0.01)"
    )
    pre.add_argument(
        "--map-lbfgs-steps",
        type=common.nonnegative_int,
        metavar="N",
        help="L-BFGS iterations polishing each start after Adam (default: min(1000, 2**22 // rows) for chees up "
        "to 20,000 rows with validation rows, else 0: none)",
    )
    pre.add_argument(
        "--map-lbfgs-patience",
        type=common.positive_int,
        metavar="N",
        help="stop a start's L-BFGS polish after N iterations without a lower monitored loss, keeping its best "
        "point (default: 100 where the polish is the default; every iteration runs and the end point is "
        "kept when it is better)",
    )


def _add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        "-o",
        metavar="MODEL",
        help="model to write (a directory holding model.json and arrays.npz; required unless --resume)",
    )
    p.add_argument(
        "--resume",
        metavar="MODEL",
        help="continue the interrupted run whose partial model is MODEL (other options, if given, must match it)",
    )
    r = p.add_mutually_exclusive_group()
    r.add_argument(
        "--recalibrate",
        action="store_true",
        help="quantile-recalibrate the predictive intervals on the validation rows (Kuleshov et al. 2018); "
        f"default without this option: an MCMC regression does so when it has at least {MIN_RECALIBRATION_ROWS} "
        "validation rows and their PIT values reject calibrated intervals (Kolmogorov-Smirnov p < 0.05), other "
        "fits keep their raw intervals",
    )
    r.add_argument(
        "--recalibrate-rows",
        choices=RECALIBRATION_ROWS,
        help="recalibrate (implies --recalibrate) on the validation rows (heldout), the training rows' "
        "leave-one-out PIT (loo; PSIS, MCMC only) or both",
    )
    r.add_argument("--no-recalibrate", action="store_true", help="keep the model's raw predictive intervals")
    p.add_argument(
        "--recalibration-map",
        choices=CALIBRATION_MAPS,
        help="the map fitted to the PIT values: the empirical one (quantile; the default) or one width parameter "
        "(scale)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress bars and no summary")
    g = dask_options.add_arguments(
        p, "the chains of the fit (MCMC methods; the model of a one-process run, not checkpointed)"
    )
    g.add_argument(
        "--chains-per-task",
        type=common.positive_int,
        metavar="N",
        help="chains of one task with --dask (default: the chains split evenly over the workers)",
    )


def _recalibrate_kwarg(args: argparse.Namespace) -> dict[str, Any]:
    """``recalibrate`` for fit when an option names it (absent: fit's default, ``"auto"``)."""
    out: dict[str, Any] = {}
    if getattr(args, "no_recalibrate", False):
        out["recalibrate"] = False
    elif getattr(args, "recalibrate", False) or getattr(args, "recalibrate_rows", None):
        out["recalibrate"] = getattr(args, "recalibrate_rows", None) or True
    if getattr(args, "recalibration_map", None):
        out["recalibration_map"] = args.recalibration_map
    return out


def _intervals_line(fitted: Any) -> str | None:
    """Whether the saved model's intervals are recalibrated (the metrics above are the raw model's), or why not."""
    cal = fitted.calibration
    if cal is not None:
        how = "quantile" if cal.scale is None else "width"
        return f"intervals: {how}-recalibrated on {cal.n} {cal.split} rows (the metrics above are the raw model's)"
    skipped = fitted.diagnostics.get("recalibration_skipped")
    return f"intervals: not recalibrated: {skipped}" if skipped else None


def fit_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """Keyword arguments for :func:`sigmabnn.api.fit` from the parsed options (only those given)."""
    kwargs: dict[str, Any] = {
        "method": args.method or DEFAULT_METHOD,
        "log_target": args.log_target,
        "seed": 0 if args.seed is None else args.seed,
        "progress": not args.quiet,
        "learn_noise": args.fixed_noise is None,
        "derive": tuple(args.derive),
        "baseline": tuple(args.baseline),
        **_recalibrate_kwarg(args),
        **({"ard": True} if getattr(args, "ard", False) else {}),
    }
    optional = {
        "features": args.features,
        "split_column": args.split_column,
        "split": args.split,
        "architecture": args.arch,
        "activation": args.activation,
        "num_chains": args.chains,
        "num_warmup": args.warmup,
        "num_samples": args.draws,
        "noise_precision": args.fixed_noise,
        "likelihood": args.likelihood,
        "noise_df": args.df,
        "dtype": args.dtype,
    }
    kwargs.update({k: v for k, v in optional.items() if v is not None})
    if getattr(args, "vi_prior", None) is not None:
        if kwargs["method"] not in VI_METHODS:
            raise InputError(f"--vi-prior is an option of --method bbb or flipout, not {kwargs['method']}")
        kwargs["prior"] = args.vi_prior
    pre: dict[str, Any] = {}
    if args.map_steps is not None:  # steps, not the large-data default's epochs
        pre.update(num_steps=args.map_steps, num_epochs=None)
    if args.map_learning_rate is not None:
        pre["learning_rate"] = args.map_learning_rate
    if args.map_lbfgs_steps is not None:
        pre["lbfgs_steps"] = args.map_lbfgs_steps
    if args.map_lbfgs_patience is not None:
        pre["lbfgs_patience"] = args.map_lbfgs_patience
    if pre:
        if kwargs["method"] not in MCMC_METHODS:
            raise InputError(f"--map-* options set the MAP starts of MCMC methods, not of --method {kwargs['method']}")
        kwargs["map"] = pre
    return kwargs


def fit_spec(args: argparse.Namespace) -> Any:
    """The validated :class:`~sigmabnn.fitting.spec.FitSpec` of the parsed options."""
    from sigmabnn.fitting.spec import build_spec

    return build_spec(args.target, **{k: v for k, v in fit_kwargs(args).items() if k != "progress"})


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, like Ctrl-C's ``KeyboardInterrupt``."""

    signal_name = "SIGTERM"


def _raise_terminated(signum: int, frame: Any) -> None:
    interrupts.request(_Terminated)
    raise _Terminated()


def _raise_interrupted(signum: int, frame: Any) -> None:
    interrupts.request(KeyboardInterrupt)
    raise KeyboardInterrupt()


@contextlib.contextmanager
def _signals_interrupt() -> Iterator[None]:
    """While training, SIGTERM interrupts like Ctrl-C does (so the run is saved, not lost).

    Both signals also leave a pending request (:mod:`sigmabnn.interrupts`) that the training
    loops raise at their next chunk if the exception itself was swallowed where it landed.
    """
    try:
        previous = signal.signal(signal.SIGTERM, _raise_terminated)
        previous_int = signal.signal(signal.SIGINT, _raise_interrupted)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        interrupts.clear()


def resume_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    """The :func:`sigmabnn.api.fit` arguments given explicitly next to ``--resume`` (they must match the run)."""
    given = {k: v for k, v in fit_kwargs(args).items() if k not in ("progress",)}
    if args.method is None:
        given.pop("method")
    if args.seed is None:
        given.pop("seed")
    if not args.log_target:
        given.pop("log_target")
    if args.fixed_noise is None:
        given.pop("learn_noise")
    if not args.derive:
        given.pop("derive")
    if not args.baseline:
        given.pop("baseline")
    if args.target is not None:
        given["target"] = args.target
    return given


def use_process(args: argparse.Namespace, data: Any) -> None:
    """``--process``: fill in the target, the thesis's features, ``--log-target`` and the split column."""
    from sigmabnn.data.tables import read_table
    from sigmabnn.physics.processes import SPLIT_COLUMN, find_target_column, parse_process, process_features

    columns = list(read_table(data).columns)
    process = parse_process(args.process)
    args.target = find_target_column(columns, process)
    args.features = args.features or process_features(process)
    args.log_target = True
    if args.split is None and args.split_column is None and SPLIT_COLUMN in columns:
        args.split_column = SPLIT_COLUMN


def _check_dask(args: argparse.Namespace) -> None:
    """Bad combinations of ``--dask`` with other options, before any cluster starts."""
    if args.dask is None:
        if args.chains_per_task is not None:
            raise InputError("--chains-per-task needs --dask")
        return
    if args.resume is not None:
        raise InputError("--resume continues a checkpointed run in one process; drop --dask")
    from sigmabnn.train.chain_tasks import check_runnable

    check_runnable(args.method or DEFAULT_METHOD)


def _fit(args: argparse.Namespace, data: Any, out: Any) -> tuple[Any, Any]:
    """The fit of the parsed options: in this process (checkpointed in ``out``), or its chains on a Dask cluster."""
    from sigmabnn import api

    spec = fit_spec(args)
    if args.dask is None:
        return api.run_fit(data, spec, progress=not args.quiet, checkpoint=out)
    from sigmabnn.io.model_file import save_model

    with dask_options.client_for(args) as client:
        fitted, report = api.run_fit(
            data, spec, progress=not args.quiet, client=client, chains_per_task=args.chains_per_task
        )
    save_model(fitted, out)
    return fitted, report


def run(args: argparse.Namespace) -> int:
    _check_dask(args)
    if args.resume is not None:
        if args.out is not None and str(args.out) != str(args.resume):
            raise InputError("--resume continues the model it names; drop --out")
        if args.process is not None:
            raise InputError("--resume continues the run with its own target and features; drop --process")
        data = None if args.data is None else common.input_file(args.data)
        out = args.resume
    else:
        what = args.target if args.process is None else args.process
        missing = [name for name, value in (("DATA", args.data), ("--target or --process", what), ("--out", args.out))
                   if value is None]  # fmt: skip
        if missing:
            raise InputError(f"the following arguments are required: {', '.join(missing)}")
        data = common.input_file(args.data)
        from sigmabnn.io.checkpoint import has_checkpoint

        if has_checkpoint(args.out):
            raise InputError(
                f"{args.out} holds an interrupted training run; continue it with 'sigmabnn train --resume {args.out}' "
                "or remove it first"
            )
        out = common.output_model(args.out)

    from sigmabnn import api
    from sigmabnn.io.checkpoint import TrainingInterrupted

    if args.process is not None:
        use_process(args, data)
    start = time.perf_counter()
    try:
        with _signals_interrupt():
            if args.resume is not None:
                fitted, report = api.resume(out, data, progress=not args.quiet, **resume_kwargs(args))
            else:
                fitted, report = _fit(args, data, out)
    except TrainingInterrupted as stop:
        t = stop.training
        print(
            f"sigmabnn train: interrupted ({stop.cause}) during {t.phase} after {t.draws_done} of "
            f"{t.draws_planned} draws per chain; the partial model {stop.path} holds them; "
            f"continue with: sigmabnn train --resume {stop.path}",
            file=sys.stderr,
        )
        return 143 if stop.cause == "SIGTERM" else 130
    elapsed = time.perf_counter() - start
    if not args.quiet:
        print_summary(fitted, report, out, elapsed, file=sys.stdout)
    return 0


def _join(values: Any) -> str:
    if isinstance(values, list | tuple):
        return ", ".join(common.format_value(v) for v in values)
    return common.format_value(values)


def _rows(fitted: Any, report: Any) -> list[tuple[str, Any]]:
    """The summary's table: rows, network, draws, sampler health, noise std."""
    data, model, sampler = report.data, report.model, report.sampler
    rows: list[tuple[str, Any]] = []
    if data is not None:
        rows.append(("rows", f"{data.train} train, {data.val} val, {data.test} test ({data.split})"))
        if data.dropped:
            by_col = ", ".join(f"{k}: {v}" for k, v in (data.dropped_by_column or {}).items())
            rows.append(("dropped", f"{data.dropped} of {data.rows} rows with missing values ({by_col})"))
    if model is not None:
        rows.append(
            (
                "network",
                f"{model.architecture}, {model.num_params} parameters, {model.likelihood} likelihood, {model.dtype}",
            )
        )
    draws = fitted.draws
    rows.append(
        (
            "draws",
            f"{report.method or fitted.method}: {draws.num_chains} chains x {draws.num_draws} "
            f"= {draws.num_networks} networks",
        )
    )
    for key, label in (
        ("acceptance", "acceptance"),
        ("divergences", "divergences"),
        ("step_size", "step size"),
        ("mean_integration_steps", "leapfrog steps/draw"),
        ("rhat_predictions", "R-hat (predictions)"),
        ("ess_bulk_predictions", "ESS bulk (predictions)"),
        ("final_loss", "final loss"),
    ):
        value = getattr(sampler, key, None)
        if value is not None:
            rows.append((label, _join(value)))
    if report.noise_std is not None:
        unit = "log10 units" if fitted.log_target else "target units"
        rows.append(("noise std", f"{common.format_value(report.noise_std)} ({unit})"))
    relevance = fitted.input_relevance()
    if relevance:
        rows.append(("input relevance", common.relevance_text(relevance)))
    return rows


def print_summary(fitted: Any, report: Any, out: Any, elapsed: float, file: Any = None) -> None:
    """Closing summary: time, data, sampler health, train/validation metrics, where the model is.

    ``report``: the fit's :class:`~sigmabnn.fitting.report.FitReport`.
    """
    from sigmabnn.cli.evaluate import metric_rows

    file = sys.stdout if file is None else file
    timings = report.timings
    phases = [
        f"{label} {common.format_seconds(getattr(timings, key))}"
        for key, label in (
            ("map_seconds", "MAP"),
            ("sample_seconds", "sampling"),
            ("vi_seconds", "VI"),
            ("ensemble_seconds", "ensemble"),
        )
        if timings is not None and getattr(timings, key) is not None
    ]
    print(
        f"\ntrained {fitted.target_name} ~ {', '.join(fitted.feature_names)} in {common.format_seconds(elapsed)}"
        + (f" ({', '.join(phases)})" if phases else ""),
        file=file,
    )
    rows = _rows(fitted, report)
    common.print_table(rows, file=file)

    metrics = report.metrics or {}
    splits = [name for name in ("train", "val") if name in metrics]
    if splits and fitted.is_classifier:
        from sigmabnn.cli.evaluate import CLASS_ROWS

        print("  metrics" + "".join(f"{name:>14}" for name in splits), file=file)
        for key, label in CLASS_ROWS:
            if key in metrics[splits[0]]:
                cells = "".join(f"{common.format_value(metrics[n][key]):>14}" for n in splits)
                print(f"    {label.ljust(34)}{cells}", file=file)
    elif splits:
        space = "log10" if fitted.log_target else "original"
        table = {name: dict(metric_rows(metrics[name].get(space, {}))) for name in splits}
        labels = [label for label, _ in metric_rows(metrics[splits[0]].get(space, {})) if "relative" not in label]
        width = max(len(label) for label in labels) if labels else 0
        print(f"  metrics ({space} space)", file=file)
        print(f"    {''.ljust(width)}" + "".join(f"{name:>26}" for name in splits), file=file)
        for label in labels:
            cells = "".join(f"{common.format_value(table[n].get(label, '')):>26}" for n in splits)
            print(f"    {label.ljust(width)}{cells}", file=file)
    intervals = _intervals_line(fitted)
    if intervals:
        print(f"  {intervals}", file=file)
    print(f"model written to {out}", file=file)
    file.flush()
    from sigmabnn.evaluate.diagnose import report_warnings  # the same sentences as 'sigmabnn diagnose'

    warnings = report_warnings(report)
    if report.data is not None and report.data.dropped:
        n = report.data.dropped
        warnings.append(f"dropped {n} row{'s' if n != 1 else ''} with missing or non-finite values")
    for warning in warnings:
        print(f"sigmabnn train: warning: {warning}", file=sys.stderr)
    from sigmabnn.evaluate.diagnose import mode_mixture_note

    notes = [mode_mixture_note(fitted.report)]  # the stored report: it holds the recalibration
    skipped = report.data.skipped_columns if report.data is not None else ()
    if skipped:
        names = ", ".join(repr(c) for c in skipped)
        notes.append(
            f"left out the non-numeric column{'s' if len(skipped) > 1 else ''} {names} from the inputs "
            "(--features chooses the inputs)"
        )
    for note in notes:
        if note is not None:
            print(f"sigmabnn train: note: {note}", file=sys.stderr)
