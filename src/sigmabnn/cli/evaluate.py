"""``sigmabnn evaluate MODEL DATA``: accuracy and calibration of a model on a labelled table."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from sigmabnn.cli import common
from sigmabnn.errors import InputError

HELP = "score a model on a labelled table: R^2, RMSE, NLL, residuals, coverage"
DESCRIPTION = (
    "Score a model on a table that holds its input columns and the target: R^2, RMSE, negative log "
    "predictive density, mean and std of the standardised residuals, and coverage at 1/2/3 sigma and of the "
    "central intervals; for a log target in log10 space and in the original space. For a model that stores its "
    "training domain, the same metrics again for the rows inside and outside it. A classifier: accuracy, "
    "negative log-likelihood, Brier score and expected calibration error (15 equal-width confidence bins), "
    "and the same for the rows inside and outside its training domain."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("data", metavar="DATA", help="table with the input columns and the target column")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")
    p.add_argument(
        "--report",
        metavar="DIR",
        help="write a calibration report (report.md, metrics.json, PNG figures) into DIR, per split of the data",
    )
    p.add_argument(
        "--split-column",
        default="split",
        metavar="COL",
        help="with --report: column of train/val/test labels to score each split apart (default 'split'; "
        "all rows together when the data has no such column)",
    )


SIGMAS_SHOWN = ("1", "2", "3")


def metric_rows(section: dict[str, Any]) -> list[tuple[str, Any]]:
    """One space's metrics as ``(label, value)`` rows, in reading order."""
    rows: list[tuple[str, Any]] = []
    for key, label in (
        ("r2", "R^2"),
        ("rmse", "RMSE"),
        ("nll", "NLL (nats/point)"),
        ("residual_mean", "residual mean (z)"),
        ("residual_std", "residual std (z)"),
    ):
        if key in section:
            rows.append((label, section[key]))
    for k, cov in section.get("coverage_sigma", {}).items():
        if k in SIGMAS_SHOWN:
            rows.append((f"coverage {k} sigma", f"{cov['observed']:.3f} (Gaussian {cov['expected']:.3f})"))
    for level, observed in section.get("coverage_interval", {}).items():
        rows.append((f"coverage {level} interval", f"{observed:.3f} (nominal {float(level):.3f})"))
    for q, value in section.get("relative_error", {}).items():
        rows.append((f"relative error {q}", value))
    return rows


CLASS_ROWS = (
    ("accuracy", "accuracy"),
    ("error", "error"),
    ("nll", "NLL (nats/row)"),
    ("brier", "Brier score"),
    ("ece", "ECE (15 equal-width bins)"),
    ("mean_entropy", "mean entropy (total)"),
    ("mean_mutual_information", "mean mutual information"),
    ("temperature", "temperature"),
)


def print_metrics(metrics: dict[str, Any], file: Any = None) -> None:
    """The metrics of each space (``log10`` and/or ``original``), or a classifier's, as aligned tables."""
    out = sys.stdout if file is None else file
    if "accuracy" in metrics:
        common.print_table([(label, metrics[key]) for key, label in CLASS_ROWS if key in metrics], file=out)
    for space in ("log10", "original"):
        if space in metrics:
            print(f"{space} space:" if space == "log10" else "original space:", file=out)
            common.print_table(metric_rows(metrics[space]), file=out)


def print_domain(metrics: dict[str, Any], file: Any = None) -> None:
    """The rows inside and outside the training domain, and the metrics of each part (if any)."""
    dom = metrics.get("domain")
    if not dom:
        return
    out = sys.stdout if file is None else file
    print(f"training domain: {dom['n_in']} rows inside, {dom['n_out']} outside (threshold {dom['threshold']:.4g})",
          file=out)  # fmt: skip
    for part, label in (("in", "inside"), ("out", "outside")):
        if part in dom and dom["n_in"] and dom["n_out"]:  # one part alone repeats the metrics above
            print(f"rows {label} the training domain ({dom['n_' + part]}):", file=out)
            print_metrics(dom[part], file=out)


REPORT_ROWS = (
    ("r2_log", "R^2 log10"),
    ("r2_xsec", "R^2 target (10^mean)"),
    ("r2", "R^2"),
    ("z_std", "z std"),
)


def report_summary(metrics: dict[str, dict[str, Any]], file: Any = None) -> None:
    """The headline numbers of a calibration report, one column per split."""
    out = sys.stdout if file is None else file
    splits = list(metrics)
    rows: list[tuple[str, list[str]]] = []
    for key, label in REPORT_ROWS:
        if key in metrics[splits[0]]:
            rows.append((label, [f"{metrics[s][key]:.4f}" for s in splits]))
    # The headline coverage is that of the central predictive intervals (exact quantiles of the
    # predictive, recalibrated when the model carries a calibration); |z| <= k (mean +- k std) is
    # shown beside it, labelled, because a heavy-tailed predictive's std makes it much larger.
    for k, level in zip(SIGMAS_SHOWN, metrics[splits[0]].get("coverage_interval", {}), strict=False):
        rows.append(
            (
                f"coverage {k} sigma (central {100 * float(level):.1f} % interval)",
                [f"{100 * metrics[s]['coverage_interval'][level]:.1f} %" for s in splits],
            )
        )
    for k in SIGMAS_SHOWN:
        rows.append(
            (
                f"fraction |z| <= {k} (mean +- {k} std)",
                [f"{100 * metrics[s]['coverage_sigma'][k]['observed']:.1f} %" for s in splits],
            )
        )
    rows.append(("median rel. error", [f"{100 * metrics[s]['rel_err']['q0.5']:.2f} %" for s in splits]))
    width = max(len(label) for label, _ in rows)
    print("  " + " " * width + "".join(f"{s:>12}" for s in splits), file=out)
    for label, cells in rows:
        print("  " + label.ljust(width) + "".join(f"{c:>12}" for c in cells), file=out)


def warn_training_rows(metrics: dict[str, Any]) -> None:
    """One warning line on stderr when rows of the scored table have the inputs of the model's training rows
    (``metrics["domain"]["n_training_inputs"]``): their scores, coverage above all, are not held-out."""
    dom = metrics.get("domain") or {}
    count = dom.get("n_training_inputs") or 0
    if count:
        n = dom["n_in"] + dom["n_out"]
        some = (
            f"{count} of {n} rows have"
            if dom.get("all_training_inputs_stored")
            else f"at least {count} of {n} rows have"
        )
        print(f"warning: {some} the inputs of the model's training rows: their scores are not held-out "
              "(score rows the model was not trained on)", file=sys.stderr)  # fmt: skip


def _run_report(fitted: Any, table: Any, args: argparse.Namespace, data_path: Any) -> int:
    from sigmabnn.evaluate.report import calibration_report

    result = calibration_report(fitted, table, args.report, split_column=args.split_column, source=f"`{data_path}`")
    if args.json:
        json.dump(common.to_builtin(result.metrics), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        if fitted.is_classifier:
            for split, section in result.metrics.items():
                print(f"{split}:")
                print_metrics(section)
        else:
            report_summary(result.metrics)
        print(f"calibration report written to {result.markdown}")
    return 0


def run(args: argparse.Namespace) -> int:
    model_path = args.model  # a directory; load_model names what is wrong with it
    data_path = common.input_file(args.data, "data file")
    if args.report is not None:
        report_dir = Path(args.report)
        if report_dir.exists() and not report_dir.is_dir():
            raise InputError(f"report path exists and is not a directory: {report_dir}")
        if not report_dir.resolve().parent.is_dir():
            raise InputError(f"directory does not exist: {report_dir.resolve().parent}")

    from sigmabnn.data.tables import read_table
    from sigmabnn.evaluate.metrics import evaluate
    from sigmabnn.io.model_file import load_model

    fitted = load_model(model_path)
    table = read_table(data_path)
    if args.report is not None:
        return _run_report(fitted, table, args, data_path)
    metrics = common.to_builtin(evaluate(fitted, table, table))
    warn_training_rows(metrics)
    if args.json:
        json.dump(metrics, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"{fitted.target_name}: {metrics.get('n', len(table))} rows of {data_path}")
        print_metrics(metrics)
        print_domain(metrics)
    return 0
