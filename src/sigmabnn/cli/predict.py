"""``sigmabnn predict MODEL DATA -o OUT``: predictive mean, std and intervals for every row of a table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from sigmabnn.cli import common, dask_options
from sigmabnn.errors import InputError

HELP = "predict with a model file: mean, std and intervals (or class probabilities) per row, as CSV or Parquet"
DESCRIPTION = (
    "Predict the target for every row of DATA. Writes CSV with columns mean, std (total predictive std), "
    "epistemic_std, aleatoric_std, lower_<level>, upper_<level> (central intervals from predictive quantiles); "
    "for a log target also log10_mean, log10_std, ... in log10 space; then in_domain (true/false: whether the "
    "row lies within the training inputs) and domain_distance (mean distance to the 5 nearest training rows in "
    "standardised inputs; in_domain is domain_distance <= the threshold stored in the model). Rows outside the "
    "domain get error bars that are extrapolations: a warning line counts them. --no-intervals leaves out the "
    "interval columns and draws no noise samples. For a classifier: prob_<class> per class (the posterior "
    "predictive), predicted, entropy (total), expected_entropy (aleatoric) and mutual_information (epistemic, "
    "BALD), in nats. With --dask, DATA may be a Parquet data set (a directory of files) or a large CSV, each "
    "partition is predicted on a worker, and OUT is a directory written as a Parquet data set (part-<i>.parquet "
    "per partition, in input order; complete or not at all)."
)

DEFAULT_LEVELS = (0.68, 0.95)


def add_level_argument(p: argparse.ArgumentParser) -> None:
    """``--level P`` (repeatable): central interval probabilities, default :data:`DEFAULT_LEVELS`."""
    p.add_argument(
        "--level",
        action="append",
        type=common.level,
        metavar="P",
        help="central interval probability (repeatable; default 0.68 and 0.95)",
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("data", metavar="DATA", help="table with the model's input columns (.csv, .parquet)")
    p.add_argument(
        "-o",
        "--out",
        required=True,
        metavar="OUT",
        help="output CSV, or Parquet when OUT ends in .parquet ('-' for stdout)",
    )
    add_level_argument(p)
    p.add_argument(
        "--no-intervals",
        action="store_true",
        help="only mean and std columns (no noise samples are drawn: the fastest predictions)",
    )
    p.add_argument(
        "--raw-intervals",
        action="store_true",
        help="for a recalibrated model, the model's own intervals instead of the recalibrated ones",
    )
    p.add_argument(
        "--with-inputs", action="store_true", help="copy the columns of DATA in front of the prediction columns"
    )
    p.add_argument("--seed", type=common.seed, default=0, metavar="N", help="seed for noise samples")
    p.add_argument(
        "--float32",
        action="store_true",
        help="evaluate the networks in float32 (faster on a CPU; its rounding is far below the predictive std)",
    )
    dask_options.add_arguments(p, "the prediction of every partition of DATA")


def domain_warning(pred: Any) -> str | None:
    """One warning line counting the rows outside the training domain, or ``None`` if there are none."""
    inside = getattr(pred, "in_domain", None)
    if inside is None or inside.all():
        return None
    n_out = int((~inside).sum())
    what = "class probabilities" if hasattr(pred, "probabilities") else "error bars"
    return (
        f"warning: {n_out} of {inside.size} rows lie outside the training domain (in_domain false); "
        f"their {what} are extrapolations, not to be trusted"
    )


#: Output paths with these suffixes are written as Parquet (what the commands read as Parquet too).
PARQUET_SUFFIXES = (".parquet", ".pq")


def write_table(frame: Any, out: Any) -> None:
    """``frame`` to stdout as CSV (``out`` None), or atomically to the path ``out``: Parquet when its suffix is
    one of :data:`PARQUET_SUFFIXES` (full precision), else CSV (10 significant digits)."""
    from sigmabnn.io.atomic import atomic_write, atomic_write_text

    if out is not None and Path(out).suffix.lower() in PARQUET_SUFFIXES:
        atomic_write(out, lambda f: frame.to_parquet(f, index=False))
        return
    text = frame.to_csv(index=False, float_format="%.10g")
    if out is None:
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        atomic_write_text(out, text)


def output_frame(table: Any, pred: Any, with_inputs: bool) -> Any:
    """The output table: the prediction's columns (``pred.to_frame()``), after ``table``'s with ``with_inputs``."""
    import pandas as pd

    frame = pred.to_frame()  # Prediction.columns, or a classifier's prob_<class>, predicted and entropies
    if with_inputs:
        frame = pd.concat([table.reset_index(drop=True), frame], axis=1)
    return frame


def _run_dask(args: argparse.Namespace, levels: tuple[float, ...]) -> int:
    """``--dask``: a prediction scan of DATA's partitions, written as the Parquet data set OUT."""
    import functools

    from sigmabnn.distributed.scan import partitions
    from sigmabnn.io.model_file import load_model
    from sigmabnn.workflows.prediction_scan import predict_scan

    if args.out == common.STDOUT:
        raise InputError("with --dask, -o is the output directory of a Parquet data set, not stdout")
    load_model(args.model)  # bad input fails before a cluster starts
    partitions(args.data)
    columns = functools.partial(output_frame, with_inputs=args.with_inputs)
    with dask_options.client_for(args) as client:
        result = predict_scan(
            client,
            args.model,
            args.data,
            args.out,
            columns=columns,
            levels=levels,
            seed=args.seed,
            calibrated=not args.raw_intervals,
            dtype="float32" if args.float32 else None,
        )
    print(f"predicted {result.rows} rows in {result.partitions} partitions: {result.path}", file=sys.stderr)
    return 0


def run(args: argparse.Namespace) -> int:
    if args.no_intervals and args.level:
        raise InputError("--no-intervals and --level exclude each other")
    levels = () if args.no_intervals else tuple(dict.fromkeys(args.level or DEFAULT_LEVELS))
    if args.dask is not None:
        return _run_dask(args, levels)
    model_path = args.model  # a directory; load_model names what is wrong with it
    data_path = common.input_file(args.data, "data file")
    out = common.output_file(args.out, "output file")

    import jax

    from sigmabnn.data.tables import read_table
    from sigmabnn.io.model_file import load_model
    from sigmabnn.predict import predict

    fitted = load_model(model_path)
    if args.float32:
        fitted = fitted.with_dtype("float32")
    table = read_table(data_path)
    pred = predict(fitted, table, levels=levels, rng_key=jax.random.key(args.seed), calibrated=not args.raw_intervals)
    write_table(output_frame(table, pred, args.with_inputs), out)
    warning = domain_warning(pred)
    if warning:
        print(warning, file=sys.stderr)
    return 0
