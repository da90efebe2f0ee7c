"""``sigmabnn xsec DIR POINT...``: every process's cross section at SLHA points, printed or written back."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from sigmabnn.cli import common, dask_options
from sigmabnn.cli.predict import DEFAULT_LEVELS, add_level_argument, write_table

HELP = "predict every process's cross section at SLHA spectrum files (or a CSV of points)"
DESCRIPTION = (
    "Read parameter points from SLHA spectrum files (BLOCK MASS, NMIX, UMIX, VMIX), directories of them, or "
    "tables (.csv, .csv.gz, .parquet) with the data set's column names, and predict the cross section of every "
    "process model in DIR (written by 'sigmabnn train-all') with its predictive std and central intervals. "
    "Prints a table per point, writes CSV with -o, or with --write appends SLHA XSECTION blocks to each SLHA file "
    "(atomically; blocks sigmabnn wrote earlier for the same process and energy are replaced). Values are in the "
    "unit of the training data. With --dask, chunks of SLHA files are tasks on a Dask cluster and -o is a directory "
    "written as a Parquet data set (part-<i>.parquet per chunk; complete or not at all)."
)

DEFAULT_SQRT_S = 13000.0


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("models", metavar="DIR", help="surrogate directory from 'sigmabnn train-all' (or one model)")
    p.add_argument("points", metavar="POINT", nargs="+", help="SLHA file, directory of SLHA files, or CSV of points")
    p.add_argument(
        "--process", action="append", metavar="PDG1,PDG2", help="only this process (repeatable; default: all)"
    )
    add_level_argument(p)
    p.add_argument(
        "-o",
        "--out",
        metavar="OUT",
        help="write the predictions as CSV, or Parquet when OUT ends in .parquet ('-' for stdout)",
    )
    p.add_argument(
        "--write",
        action="store_true",
        help="append the predictions to each SLHA file as XSECTION blocks (replacing earlier sigmabnn blocks)",
    )
    p.add_argument(
        "--sqrt-s",
        type=common.positive_float,
        default=DEFAULT_SQRT_S,
        metavar="GEV",
        help=f"collider energy written in the XSECTION header (default {DEFAULT_SQRT_S:g}; the built-in data's "
        "energy is not documented, see its README)",
    )
    p.add_argument(
        "--files-per-task", type=common.positive_int, default=500, metavar="N", help="SLHA files per task with --dask"
    )
    dask_options.add_arguments(p, "chunks of SLHA files")


def _print_points(frame: Any, levels: tuple[float, ...], file: Any) -> None:
    for point, rows in frame.groupby("point", sort=True):
        source = rows["source"].iloc[0] if "source" in rows.columns else f"point {point}"
        print(f"{source}:", file=file)
        header = f"  {'process':<20}{'particles':<14}{'xsec':>12}{'std':>12}"
        header += "".join(f"{f'{lv:.0%} interval':>28}" for lv in levels)
        print(header, file=file)
        for _, r in rows.iterrows():
            line = f"  {r['process']:<20}{r['label']:<14}{r['xsec']:>12.4e}{r['std']:>12.4e}"
            for lv in levels:
                lo, hi = r[f"lower_{lv:g}"], r[f"upper_{lv:g}"]
                line += f"{f'[{lo:.4e}, {hi:.4e}]':>28}"
            print(line, file=file)
    file.flush()


def _run_dask(args: argparse.Namespace, levels: tuple[float, ...]) -> int:
    """``--dask``: chunks of SLHA files as tasks; -o is the output Parquet data set."""
    from sigmabnn.errors import InputError
    from sigmabnn.workflows.xsec_scan import xsec_scan

    if args.out is None or args.out == common.STDOUT:
        raise InputError("with --dask, give -o DIR: the predictions are written as a Parquet data set")
    from sigmabnn.workflows.surrogates import load_surrogates

    load_surrogates(args.models, args.process)  # bad input fails before a cluster starts
    with dask_options.client_for(args) as client:
        result = xsec_scan(
            client,
            args.models,
            args.points,
            args.out,
            processes=args.process,
            levels=levels,
            files_per_task=args.files_per_task,
            write=args.write,
            sqrt_s=args.sqrt_s,
        )
    print(f"predicted {result.rows} (point, process) rows in {result.partitions} tasks: {result.path}")
    return 0


def run(args: argparse.Namespace) -> int:
    from sigmabnn.errors import InputError
    from sigmabnn.physics.slha import TABLE_SUFFIXES

    levels = tuple(dict.fromkeys(args.level or DEFAULT_LEVELS))
    if args.write:
        tables = [p for p in args.points if p.lower().endswith(TABLE_SUFFIXES)]
        if tables:
            raise InputError(f"--write needs SLHA files to write into; {tables[0]} is a table")
    if args.dask is not None:
        return _run_dask(args, levels)
    out = common.output_file(args.out, "output file") if args.out is not None else None

    from sigmabnn.physics.slha import read_points
    from sigmabnn.workflows.surrogates import load_surrogates, predict_xsections, required_inputs
    from sigmabnn.workflows.xsec_scan import write_xsection_blocks

    surrogates = load_surrogates(args.models, args.process)
    points = read_points(args.points, columns=required_inputs(surrogates))
    frame = predict_xsections(surrogates, points, levels)
    if "in_domain" in frame.columns and not frame["in_domain"].fillna(True).all():
        outside = frame.loc[frame["in_domain"] == False, "point"].nunique()  # noqa: E712  (NaN: no domain)
        print(
            f"warning: {outside} of {len(points)} points lie outside the training domain of at least one process "
            "(in_domain false); their error bars are extrapolations, not to be trusted",
            file=sys.stderr,
        )
    if args.write:
        write_xsection_blocks(frame, levels, args.sqrt_s)
        print(f"wrote XSECTION blocks for {len(surrogates)} processes into {frame['source'].nunique()} SLHA files")
    if args.out is not None:
        write_table(frame, out)
    elif not args.write:
        _print_points(frame, levels, sys.stdout)
    return 0
