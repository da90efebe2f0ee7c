"""``sigmabnn info MODEL``: what a model file holds (inputs, target, network, sampler, diagnostics)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from sigmabnn.classes import ClassLabels
from sigmabnn.cli import common
from sigmabnn.fitting.report import FitReport
from sigmabnn.names import ENSEMBLE_METHODS, VI_METHODS

HELP = "describe a model file"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", metavar="MODEL", help="model written by 'sigmabnn train' (a directory)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")


def describe(fitted: Any) -> dict[str, Any]:
    """A JSON-ready summary of a :class:`~sigmabnn.fitted.FittedModel`."""
    bnn = fitted.bnn
    draws = fitted.draws
    info: dict[str, Any] = {
        "target": fitted.target_name,
        "features": list(fitted.feature_names),
        "derived": fitted.derived,
        "log_target": bool(getattr(fitted.y_transform, "log10", False)),
        "baseline": None if fitted.y_transform.baseline is None else fitted.y_transform.baseline.to_json(),
        "calibration": None
        if fitted.calibration is None
        else {
            "split": fitted.calibration.split,
            "rows": fitted.calibration.n,
            "map": fitted.calibration.method,
            **({} if fitted.calibration.scale is None else {"scale": fitted.calibration.scale.tolist()}),
        },
        "classes": None if fitted.classes is None else fitted.classes.to_json(),
        "architecture": bnn.mlp.describe(),
        "input_relevance": fitted.input_relevance(),
        "activations": list(bnn.mlp.activations),
        "likelihood": bnn.likelihood.name,
        "dtype": bnn.dtype,
        "method": fitted.method,
        "chains": draws.num_chains,
        "draws_per_chain": draws.num_draws,
        "networks": draws.num_networks,
        "settings": fitted.settings,
        "diagnostics": fitted.diagnostics,
        "data_fingerprint": fitted.data_fingerprint,
        "created": fitted.created,
    }
    return common.to_builtin(info)


def summary_rows(info: dict[str, Any]) -> list[tuple[str, Any]]:
    """The essentials of :func:`describe` as ``(label, value)`` rows (``--json`` has everything)."""
    report = FitReport.from_json(info.get("diagnostics"))
    sampler, data, training = report.sampler, report.data, report.training
    rows: list[tuple[str, Any]] = []
    if training is not None and training.complete is False:
        rows.append(
            (
                "status",
                f"incomplete: interrupted during {training.phase} after {training.draws_done} of "
                f"{training.draws_planned} draws per chain; finish it with 'sigmabnn train --resume MODEL'",
            )
        )
    rows += [
        ("target", info["target"] + ("  (modelled as log10)" if info["log_target"] else "")),
        ("features", info["features"]),
    ]
    if info["derived"]:
        rows.append(("derived", "; ".join(f"{name}={expr}" for name, expr in info["derived"])))
    cal = info.get("calibration")
    if cal:
        how = "quantile-recalibrated" if cal.get("scale") is None else (
            "width-recalibrated (x" + ", x".join(f"{v:.3g}" for v in cal["scale"]) + ")"
        )  # fmt: skip
        rows.append(("intervals", f"{how} on {cal['rows']} {cal['split']} rows (predict --raw-intervals: not)"))
    base = info.get("baseline")
    if base:
        terms = " + ".join(f"{common.format_value(c[0])}*{f}" for f, c in zip(base["features"], base["coef"]))
        rows.append(
            (
                "baseline",
                f"{common.format_value(base['intercept'][0])} + {terms} (log space; the network models the rest)",
            )
        )
    rows += [
        (
            "network",
            f"{info['architecture']} {info['activations'][0]}, {info['likelihood']} likelihood, {info['dtype']}",
        ),
        ("draws", draws_text(info)),
    ]
    if info.get("input_relevance"):
        rows.append(("input relevance", common.relevance_text(info["input_relevance"])))
    for key, label in (
        ("acceptance", "acceptance"),
        ("divergences", "divergences"),
        ("rhat_predictions", "R-hat (predictions)"),
        ("ess_bulk_predictions", "ESS bulk (predictions)"),
    ):
        value = getattr(sampler, key, None)
        if value is not None:
            rows.append((label, list(value) if isinstance(value, tuple) else value))
    if report.noise_std is not None:
        rows.append(("noise std", report.noise_std))
    rows += _class_rows(info, report)
    val = (report.metrics or {}).get("val")
    if val and info.get("classes"):
        rows.append(
            (
                "validation",
                f"accuracy {common.format_value(val.get('accuracy'))}, NLL {common.format_value(val.get('nll'))}, "
                f"ECE {common.format_value(val.get('ece'))} ({val.get('n')} rows)",
            )
        )
    elif val:
        section = val.get("log10" if info["log_target"] else "original", {})
        cov = section.get("coverage_interval", {})
        rows.append(
            (
                "validation",
                f"R^2 {common.format_value(section.get('r2'))}, RMSE {common.format_value(section.get('rmse'))}"
                + "".join(f", coverage {lv} {common.format_value(v)}" for lv, v in cov.items())
                + f" ({val.get('n')} rows)",
            )
        )
    if data is not None:
        rows.append(("trained on", f"{data.train} rows of {data.source or 'a DataFrame'}"))
    rows += [("data fingerprint", info["data_fingerprint"]), ("created", info["created"])]
    return rows


def _class_rows(info: dict[str, Any], report: FitReport) -> list[tuple[str, Any]]:
    """A classifier's labels and temperature (with the rows it was fitted on), else nothing."""
    classes = info.get("classes")
    if not classes:
        return []
    labels = ", ".join(map(str, classes["labels"]))
    rec = report.recalibration
    t = ClassLabels.from_json(classes).temperature_text()
    split = None if rec is None else rec.extra.get("split", "validation")  # "all": every row of the table given
    kind = "" if split in (None, "all") else f" {split}"
    where = f", fitted on {rec.rows}{kind} rows" if rec is not None and rec.rows else ""
    return [("classes", f"{labels} ({len(classes['labels'])})"), ("temperature", f"{t}{where}")]


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sigmabnn.io.model_file import load_model

    path = Path(args.model)
    fitted = load_model(path)
    info = describe(fitted)
    if args.json:
        json.dump(info, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
        return 0
    print(f"{path}  ({common.directory_size(path) / 1024:.1f} KiB)")
    common.print_table(summary_rows(info))
    return 0


def draws_text(info: dict[str, Any]) -> str:
    """How the model's networks were made: chains x draws for MCMC, members of an ensemble, draws from a
    variational distribution."""
    method, networks = info["method"], info["networks"]
    if method in ENSEMBLE_METHODS:
        return f"{method}: {networks} member{'s' if networks != 1 else ''}, each trained from its own initialisation"
    if method in VI_METHODS:
        return f"{method}: {networks} networks drawn from the fitted variational distribution"
    chains = info["chains"]
    return f"{method}: {chains} chain{'s' if chains != 1 else ''} x {info['draws_per_chain']} = {networks} networks"
