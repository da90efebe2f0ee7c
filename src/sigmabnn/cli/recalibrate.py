"""``sigmabnn recalibrate MODEL DATA --out NEW``: quantile-recalibrate a model's intervals on held-out rows."""

from __future__ import annotations

import argparse
import sys

from sigmabnn.cli import common
from sigmabnn.names import CALIBRATION_MAPS

HELP = "recalibrate a model's predictive intervals (a classifier's temperature) on held-out rows"
DESCRIPTION = (
    "Quantile recalibration (Kuleshov, Fenner & Ermon 2018): the exact predictive CDF of the model at the "
    "held-out rows of DATA (the rows labelled --split in --split-column, or every row when DATA has no such "
    "column) gives a monotone map of interval levels, stored in the new model; its predictions then use it "
    "for the intervals (means and stds unchanged). --rows loo fits the map on the leave-one-out PIT of the "
    "model's training rows instead (the rows labelled --train-split; PSIS, MCMC models only), --rows loo+heldout "
    "on both. --map scale fits one width parameter instead of the empirical map (steadier on few rows). A "
    "classifier's recalibration refits the temperature of its logits on the held-out rows instead, kept only when "
    "it lowers their negative log-likelihood."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("data", metavar="DATA", help="table holding the inputs and the target (CSV, TSV or Parquet)")
    p.add_argument("--out", "-o", metavar="NEW", required=True, help="recalibrated model to write (may be MODEL)")
    p.add_argument("--split", default="val", help="label of the held-out rows in the split column (default val)")
    p.add_argument("--split-column", default="split", help="column holding the split labels (default split)")
    p.add_argument(
        "--rows",
        choices=("heldout", "loo", "loo+heldout"),
        default="heldout",
        help="PIT values the map is fitted on: the held-out rows' (default), the training rows' leave-one-out "
        "(PSIS; MCMC models only), or both",
    )
    p.add_argument(
        "--map",
        choices=CALIBRATION_MAPS,
        default="quantile",
        help="the empirical map of the PIT values (quantile, the default) or one width parameter (scale)",
    )
    p.add_argument("--train-split", default="train", help="label of the training rows for --rows loo (default train)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary")


def run(args: argparse.Namespace) -> int:
    data_path = common.input_file(args.data)
    out = common.output_model(args.out)
    from sigmabnn.api import recalibrate
    from sigmabnn.data.tables import read_table
    from sigmabnn.io.model_file import load_model, save_model

    fitted = load_model(args.model)
    new = recalibrate(
        fitted,
        read_table(data_path),
        split=args.split,
        split_column=args.split_column,
        rows=args.rows,
        train_split=args.train_split,
        map=args.map,
    )
    save_model(new, out)  # atomic
    if not args.quiet and new.is_classifier:
        rec = new.report.recalibration.extra
        t = rec["temperature"]
        what = f"temperature T = {t:.3g}" if t != 1.0 else "no temperature lowered their NLL: T = 1 kept"
        if rec.get("temperature_at_lower_bound") and t == 1.0:
            what = "their NLL kept falling to the search's lower bound, which the rows do not determine: T = 1 kept"
        print(
            f"recalibrated on {new.report.recalibration.rows} rows ({rec['split']}): {what} (NLL "
            f"{rec['val_nll_at_temperature_1']:.4g} at T = 1, {rec['val_nll']:.4g} now); model written to {out}",
            file=sys.stdout,
        )
    elif not args.quiet:
        cal = new.calibration
        rec = new.report.recalibration
        loo = (
            f" ({rec.loo_rows} training rows' leave-one-out PIT; {rec.loo_dropped_high_k} dropped for "
            f"Pareto k > {rec.loo_k_threshold:.2f})"
            if rec.loo_rows is not None
            else ""
        )
        how = "" if cal.scale is None else f" (intervals x{', x'.join(f'{v:.3g}' for v in cal.scale)} as wide)"
        print(f"recalibrated on {cal.n} rows ({cal.split}){loo}{how}; model written to {out}", file=sys.stdout)
    return 0
