"""``sigmabnn diagnose MODEL [DATA]``: convergence diagnostics of a model's MCMC draws, with figures."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from sigmabnn.cli import common
from sigmabnn.errors import InputError
from sigmabnn.names import MCMC_METHODS

HELP = "convergence diagnostics of a model's draws: R-hat, ESS, divergences, E-BFMI, figures"
DESCRIPTION = (
    "Check that a model's MCMC chains converged, in function space: rank-normalized split R-hat and bulk/tail "
    "ESS of the predictions at a set of inputs (rows of DATA, or reference points around the training inputs) "
    "and of the log posterior (recomputed on DATA when it holds the target, else as stored at training), "
    "autocorrelation with a suggested thinning, and the sampler's divergences, tree-depth saturation, E-BFMI "
    "and acceptance. Plain warnings at standard thresholds (R-hat > 1.01, fewer than 100 effective draws per "
    "chain, any divergence, saturated tree depth, E-BFMI < 0.3). With --out, figures (traces, rank plots, "
    "autocorrelation), the summary as JSON and the run as ArviZ InferenceData (netCDF)."
)

SUMMARY_FILE = "diagnostics.json"
FIGURES = ("trace.png", "rank.png", "autocorrelation.png")
NETCDF_FILE = "posterior.nc"
MAX_LAG = 100


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument(
        "data",
        metavar="DATA",
        nargs="?",
        help="table with the model's input columns (predictions are checked at some of its rows); "
        "with the target column also the log posterior of every draw on it",
    )
    p.add_argument(
        "--points",
        type=common.positive_int,
        default=20,
        metavar="N",
        help="number of inputs at which the predictions are checked (default 20)",
    )
    p.add_argument(
        "--out",
        "-o",
        metavar="DIR",
        help=f"write {', '.join(FIGURES)}, {SUMMARY_FILE} and {NETCDF_FILE} into DIR (created or replaced "
        "as a whole, never half-written)",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--strict", action="store_true", help="exit with code 1 when there is any warning")


def _check_out(path: str) -> Path:
    """DIR may be new, empty, or an earlier diagnose output (it is then replaced); anything else is refused."""
    return common.replaceable_directory(
        path, SUMMARY_FILE, "output", "a diagnose output", "output exists and is not a directory"
    )


def _fmt(value: Any, spec: str) -> str:
    try:
        v = float(value)
    except (TypeError, ValueError):
        return "n/a"
    return format(v, spec) if math.isfinite(v) else "n/a"


def summary_rows(summary: dict[str, Any]) -> list[tuple[str, Any]]:
    """The summary as ``(label, text)`` rows in reading order."""
    from sigmabnn.evaluate.diagnostics import worst_point

    rows: list[tuple[str, Any]] = []
    inputs = summary.get("inputs", {})
    where = "rows of the data" if inputs.get("source") == "data" else "reference inputs"
    pred = summary.get("predictions", {})
    label = f"predictions ({inputs.get('num_points')} {where})"
    rows.append((f"{label}: max R-hat", f"{_fmt(pred.get('max_rhat'), '.4f')}{worst_point(pred)}"))
    rows.append(
        (
            f"{label}: min ESS bulk/tail",
            f"{_fmt(pred.get('min_ess_bulk'), '.0f')} / {_fmt(pred.get('min_ess_tail'), '.0f')}",
        )
    )
    lp = summary.get("log_posterior")
    if lp:
        src = summary.get("log_posterior_source", "")
        rows.append((f"log posterior ({src}): R-hat", _fmt(lp.get("max_rhat"), ".4f")))
        rows.append(
            (
                f"log posterior ({src}): ESS bulk/tail",
                f"{_fmt(lp.get('min_ess_bulk'), '.0f')} / {_fmt(lp.get('min_ess_tail'), '.0f')}",
            )
        )
    sampler = summary.get("sampler", {})
    if "num_divergent" in sampler:
        rows.append(("divergences", f"{sampler['num_divergent']} ({100 * sampler['divergent_fraction']:.2f}%)"))
    if "tree_depth_saturation_fraction" in sampler:
        depth = sampler.get("max_tree_depth")
        rows.append(
            (
                "draws at max tree depth" + ("" if depth is None else f" ({depth})"),
                f"{100 * sampler['tree_depth_saturation_fraction']:.2f}%",
            )
        )
    if "ebfmi" in sampler:
        rows.append(("E-BFMI per chain", ", ".join(_fmt(v, ".3f") for v in sampler["ebfmi"])))
    if "mean_acceptance" in sampler:
        rows.append(("acceptance per chain", ", ".join(_fmt(v, ".3f") for v in sampler["mean_acceptance"])))
    if "suggested_thin" in summary:
        rows.append(("suggested thinning", summary["suggested_thin"]))
    return rows


def write_outputs(out: Path, diagnosis: Any, draws: Any, title: str) -> None:
    """Figures, summary JSON and netCDF into ``out``, as one atomic directory."""
    from sigmabnn.evaluate import diagnostics as diag
    from sigmabnn.evaluate import figures
    from sigmabnn.evaluate.inference_data import to_inference_data, to_netcdf
    from sigmabnn.io.atomic import atomic_directory

    summary = diagnosis.summary
    worst = max(0, int(summary["predictions"].get("argmax_rhat", 0)))
    quantities = {}
    if diagnosis.log_posterior is not None:
        quantities["log posterior"] = diagnosis.log_posterior
    quantities[f"f(x_{worst}) (worst R-hat)"] = diagnosis.predictions[:, :, worst]
    max_lag = min(MAX_LAG, diagnosis.predictions.shape[1] - 1)
    rho = {name: diag.autocorrelation(v, max_lag=max_lag) for name, v in quantities.items()}
    with atomic_directory(out) as tmp:
        figures.trace_figure(tmp / FIGURES[0], quantities, title=title)
        figures.rank_figure(tmp / FIGURES[1], quantities, title=title)
        figures.autocorrelation_figure(tmp / FIGURES[2], rho, title=title, suggested_thin=summary.get("suggested_thin"))
        idata = to_inference_data(draws=draws, predictions=diagnosis.predictions, log_posterior=diagnosis.log_posterior)
        to_netcdf(idata, tmp / NETCDF_FILE)
        (tmp / SUMMARY_FILE).write_text(json.dumps(common.to_builtin(summary), indent=2, allow_nan=False) + "\n")


def run(args: argparse.Namespace) -> int:
    data_path = None if args.data is None else common.input_file(args.data, "data file")
    out = None if args.out is None else _check_out(args.out)

    from sigmabnn.evaluate.diagnose import diagnose_model
    from sigmabnn.io.model_file import load_model

    fitted = load_model(args.model)
    if fitted.method not in MCMC_METHODS:
        raise InputError(
            f"diagnose needs MCMC chains; this model was fitted by {fitted.method} (variational), "
            "whose draws are independent by construction"
        )
    table = None
    if data_path is not None:
        from sigmabnn.data.tables import read_table

        table = read_table(data_path)
    diagnosis = diagnose_model(fitted, table, num_points=args.points)
    summary = diagnosis.summary
    d = fitted.draws
    title = f"{fitted.target_name}: {fitted.method}, {d.num_chains} chains x {d.num_draws} draws"
    if out is not None:
        write_outputs(out, diagnosis, d, title)
    if args.json:
        json.dump(common.to_builtin(summary), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(title)
        common.print_table(summary_rows(summary))
        if not diagnosis.warnings:
            print("no warnings: the diagnostics are within their thresholds")
        if out is not None:
            print(f"figures and summary written to {out}")
    sys.stdout.flush()
    for warning in diagnosis.warnings:
        print(f"sigmabnn diagnose: warning: {warning}", file=sys.stderr)
    return 1 if args.strict and diagnosis.warnings else 0
