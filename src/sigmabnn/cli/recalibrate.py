"""``sigmabnn recalibrate MODEL DATA --out NEW``: quantile-recalibrate a model's intervals on held-out rows."""

from __future__ import annotations

import argparse
import sys

from sigmabnn.cli import common

HELP = "recalibrate a model's predictive intervals on held-out rows"
DESCRIPTION = (
    "Quantile recalibration (Kuleshov, Fenner & Ermon 2018): the exact predictive CDF of the model at the "
    "held-out rows of DATA (the rows labelled --split in --split-column, or every row when DATA has no such "
    "column) gives a monotone map of interval levels, stored in the new model; its predictions then use it "
    "for the intervals (means and stds unchanged)."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("data", metavar="DATA", help="table holding the inputs and the target (CSV, TSV or Parquet)")
    p.add_argument("--out", "-o", metavar="NEW", required=True, help="recalibrated model to write (may be MODEL)")
    p.add_argument("--split", default="val", help="label of the held-out rows in the split column (default val)")
    p.add_argument("--split-column", default="split", help="column holding the split labels (default split)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary")


def run(args: argparse.Namespace) -> int:
    data_path = common.input_file(args.data)
    out = common.output_model(args.out)
    from sigmabnn.api import recalibrate
    from sigmabnn.data.tables import read_table
    from sigmabnn.io.model_file import load_model, save_model

    fitted = load_model(args.model)
    new = recalibrate(fitted, read_table(data_path), split=args.split, split_column=args.split_column)
    save_model(new, out)  # atomic
    if not args.quiet:
        cal = new.calibration
        print(f"recalibrated on {cal.n} rows ({cal.split}); model written to {out}", file=sys.stdout)
    return 0
