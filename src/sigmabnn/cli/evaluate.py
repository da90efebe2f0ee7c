"""``sigmabnn evaluate MODEL DATA``: accuracy and calibration of a model on a labelled table."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sigmabnn.cli import common

HELP = "score a model on a labelled table: R^2, RMSE, NLL, residuals, coverage"
DESCRIPTION = (
    "Score a model on a table that holds its input columns and the target: R^2, RMSE, negative log "
    "predictive density, mean and std of the standardised residuals, and coverage at 1/2/3 sigma and of the "
    "central intervals; for a log target in log10 space and in the original space."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("data", metavar="DATA", help="table with the input columns and the target column")
    p.add_argument("--json", action="store_true", help="print the metrics as JSON")


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


def print_metrics(metrics: dict[str, Any], file: Any = None) -> None:
    """The metrics of each space (``log10`` and/or ``original``) as aligned tables."""
    out = sys.stdout if file is None else file
    for space in ("log10", "original"):
        if space in metrics:
            print(f"{space} space:" if space == "log10" else "original space:", file=out)
            common.print_table(metric_rows(metrics[space]), file=out)


def run(args: argparse.Namespace) -> int:
    model_path = args.model  # a directory; load_model names what is wrong with it
    data_path = common.input_file(args.data, "data file")

    from sigmabnn.data.tables import read_table
    from sigmabnn.evaluate.metrics import evaluate
    from sigmabnn.io.model_file import load_model

    fitted = load_model(model_path)
    table = read_table(data_path)
    metrics = common.to_builtin(evaluate(fitted, table, table))
    if args.json:
        json.dump(metrics, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(f"{fitted.target_name}: {metrics.get('n', len(table))} rows of {data_path}")
        print_metrics(metrics)
    return 0
