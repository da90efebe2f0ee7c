"""Calibration report: the thesis's accuracy and calibration checks of a model, as Markdown with PNG figures.

:func:`calibration_report` scores a :class:`~sigmabnn.fitted.FittedModel` on the
rows of a labelled table, per split (the ``train`` / ``val`` / ``test`` labels of a
split column, or all rows as one split ``all``), and writes into a directory

- ``report.md``: a self-contained Markdown report (tables and the figures below,
  linked by relative path);
- ``metrics.json``: every number of the report, per split (:func:`split_metrics`);
- ``residuals.png``: histogram of the standardized residuals against N(0, 1);
- ``coverage.png``: observed coverage at k = 1..5 sigma and of the central
  predictive intervals against the nominal probability;
- ``parity.png``: predicted against true target (log10 for a log target) with
  1-sigma error bars;
- ``relative_error.png``: cumulative distribution of the relative error of the
  predicted target;
- ``predictive.png``: the predictive distribution at a few chosen points of the
  last split with the true value marked.

Definitions (log target; for a plain target "log" reads "original" throughout):

- ``u = log10 y``; the predictive mean ``mu`` and std ``s`` of ``u`` come from
  :func:`sigmabnn.predict.predict` (``log_space``).
- ``r2_log``: R^2 of ``mu`` against ``u``. ``r2_xsec``: R^2 of ``10**mu`` against
  ``y`` (the thesis's "predictions transformed back").
- standardized residuals ``z = (u - mu) / s``; ``z_mean``, ``z_std``.
- ``coverage_sigma[k]``: fraction with ``|z| <= k`` (k = 1..5), expected
  ``erf(k / sqrt 2)`` for a Gaussian predictive.
- ``coverage_interval[level]``: fraction of ``u`` inside the central predictive
  interval at that level (not assuming a Gaussian shape), for the 1, 2 and 3 sigma
  probabilities; counted exactly from each row's PIT ``F(y)`` at the interval's quantile
  levels (the recalibrated levels for a recalibrated model), as
  :func:`sigmabnn.evaluate.metrics.evaluate` counts it. The figures' bands are the
  sampled intervals of :func:`sigmabnn.predict.predict`.
- ``rel_err``: quantiles 50 / 90 / 99 % of ``|10**mu / y - 1|``.
- ``r2_log_concentration``, ``r2_xsec_concentration`` (``r2_concentration`` for a plain
  target): the share of the residual sum of squares in the 1 and 10 largest squared
  residuals and the R^2 of the other rows
  (:func:`sigmabnn.evaluate.metrics.r2_concentration`): whether 1 - R^2 is spread over
  the rows or comes from a handful of them.
- ``recalibration`` (models with a :class:`~sigmabnn.calibration.Calibration` only; the
  interval coverage above is then that of the recalibrated intervals): coverage of the
  exact raw and recalibrated central intervals from each row's exact PIT
  (:func:`recalibration_metrics`) and a PIT histogram; the report gets a "Recalibration" section.

The directory is written atomically (:func:`sigmabnn.io.atomic.atomic_directory`):
it appears complete or not at all; an existing report directory is replaced.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from sigmabnn.evaluate.metrics import (
    SIGMA_LEVELS,
    coverage_sigma,
    interval_coverage,
    pit_coverage,
    r2,
    r2_concentration,
    rmse,
)
from sigmabnn.predict import predict, score
from sigmabnn.predict.sampling import quantile_levels

__all__ = [
    "INTERVAL_LEVELS",
    "REL_ERR_QUANTILES",
    "ReportResult",
    "calibration_report",
    "choose_points",
    "recalibration_metrics",
    "score_splits",
    "split_metrics",
]

INTERVAL_LEVELS: tuple[float, ...] = tuple(math.erf(k / math.sqrt(2.0)) for k in (1, 2, 3))
"""Probabilities of the central 1, 2 and 3 sigma intervals of a Gaussian (0.6827, 0.9545, 0.9973)."""
REL_ERR_QUANTILES: tuple[float, ...] = (0.5, 0.9, 0.99)
SPLIT_ORDER: tuple[str, ...] = ("train", "val", "test")
NUM_CHOSEN_POINTS = 4
FIGURES = ("residuals.png", "coverage.png", "parity.png", "relative_error.png", "predictive.png")


class ReportResult(NamedTuple):
    """What :func:`calibration_report` wrote and measured.

    Attributes:
        directory: the report directory.
        markdown: path of ``report.md``.
        metrics: ``{split: split_metrics(...)}`` (JSON-able; also in ``metrics.json``).
        figures: paths of the PNG figures.
    """

    directory: Path
    markdown: Path
    metrics: dict[str, dict[str, Any]]
    figures: tuple[Path, ...]


class _Scored(NamedTuple):
    u: np.ndarray  # [n] true target in model space (log10 y or y)
    y: np.ndarray  # [n] true target in original units
    mu: np.ndarray  # [n] predictive mean of u
    sd: np.ndarray  # [n] predictive std of u
    lower: dict[float, np.ndarray]
    upper: dict[float, np.ndarray]
    rows: pd.DataFrame  # the scored rows (raw columns)
    pit: np.ndarray  # [n] exact PIT F(y)


def split_metrics(
    u: np.ndarray,
    mu: np.ndarray,
    sd: np.ndarray,
    lower: dict[float, np.ndarray],
    upper: dict[float, np.ndarray],
    *,
    log_target: bool,
    coverage: dict[str, float] | None = None,
) -> dict[str, Any]:
    """The report's numbers for one split (see the module docstring).

    Args:
        u: ``[n]`` true targets in model space (``log10 y`` for a log target).
        mu, sd: ``[n]`` predictive mean and std of ``u``.
        lower, upper: level -> ``[n]`` central predictive interval bounds of ``u``.
        log_target: whether ``u`` is ``log10`` of the target (adds ``r2_xsec`` and
            makes the relative error that of ``10**mu``).
        coverage: the interval coverage already counted (``{"0.6827": observed, ...}``, e.g.
            :func:`exact_coverage`); else it is counted from ``lower`` and ``upper``.

    Returns:
        ``n``, ``r2_log`` (or ``r2``), ``rmse_log`` (or ``rmse``), ``r2_xsec``,
        ``r2_log_concentration`` and ``r2_xsec_concentration`` (or ``r2_concentration``: how much of
        ``1 - R^2`` the largest squared residuals carry, :func:`~sigmabnn.evaluate.metrics.r2_concentration`),
        ``z_mean``, ``z_std``, ``coverage_sigma`` ``{"1": {"observed", "expected"}, ...}``,
        ``coverage_interval`` ``{"0.6827": observed, ...}``, ``rel_err`` ``{"q0.5": ..., ...}``
        (fractions, not percent).
    """
    u, mu, sd = (np.asarray(a, np.float64).reshape(-1) for a in (u, mu, sd))
    z = (u - mu) / sd
    out: dict[str, Any] = {"n": int(u.size)}
    if log_target:
        y, pred = 10.0**u, 10.0**mu
        out["r2_log"] = r2(u, mu)
        out["rmse_log"] = rmse(u, mu)
        out["r2_xsec"] = r2(y, pred)
        out["r2_log_concentration"] = r2_concentration(u, mu)
        out["r2_xsec_concentration"] = r2_concentration(y, pred)
    else:
        y, pred = u, mu
        out["r2"] = r2(u, mu)
        out["rmse"] = rmse(u, mu)
        out["r2_concentration"] = r2_concentration(u, mu)
    out["z_mean"] = float(np.mean(z))
    out["z_std"] = float(np.std(z))
    out["coverage_sigma"] = coverage_sigma(z, SIGMA_LEVELS)
    if coverage is None:
        cov = interval_coverage(u, lower, upper)
        coverage = {f"{lv:.4f}": cov[f"{lv:g}"] for lv in lower}
    out["coverage_interval"] = coverage
    keep = y != 0
    rel = np.abs(pred[keep] / y[keep] - 1.0)
    out["rel_err"] = {f"q{q:g}": float(np.quantile(rel, q)) if rel.size else float("nan") for q in REL_ERR_QUANTILES}
    return out


def _split_rows(table: pd.DataFrame, split_column: str | None) -> list[tuple[str, pd.DataFrame]]:
    if split_column is not None and split_column in table.columns:
        labels = table[split_column].astype(str)
        names = [s for s in SPLIT_ORDER if (labels == s).any()]
        names += sorted(set(labels) - set(SPLIT_ORDER) - {"nan"})
        return [(s, table[labels == s]) for s in names]
    return [("all", table)]


def _usable(fitted: Any, rows: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Rows with a finite (and, for a log target, positive) target; the number dropped."""
    y = pd.to_numeric(rows[fitted.target_name], errors="coerce").to_numpy(np.float64)
    ok = np.isfinite(y) & ((y > 0) if fitted.log_target else True)
    return rows.loc[ok], int((~ok).sum())


def _score(fitted: Any, parts: dict[str, pd.DataFrame], rng_key: Any) -> dict[str, _Scored]:
    """Predict all splits in one pass (one compilation), with each row's exact PIT, then slice per split."""
    rows = pd.concat(list(parts.values()))
    scored = score(fitted, rows, rows[[fitted.target_name]], levels=INTERVAL_LEVELS, rng_key=rng_key)
    pred, pit = scored.prediction, scored.pit[:, 0]
    space = pred.log_space if fitted.log_target else pred
    out: dict[str, _Scored] = {}
    start = 0
    for name, part in parts.items():
        sl = slice(start, start + len(part))
        start += len(part)
        y = part[fitted.target_name].to_numpy(np.float64)
        u = np.log10(y) if fitted.log_target else y
        lower = {lv: space.lower[lv][sl, 0] for lv in INTERVAL_LEVELS}
        upper = {lv: space.upper[lv][sl, 0] for lv in INTERVAL_LEVELS}
        out[name] = _Scored(u, y, space.mean[sl, 0], space.std[sl, 0], lower, upper, part, pit[sl])
    return out


def recalibration_metrics(pit: np.ndarray, calibration: Any) -> dict[str, Any]:
    """Raw and recalibrated coverage of the exact central intervals, from the rows' exact PIT values.

    A row is inside the raw central ``c`` interval when its PIT lies in ``[(1 - c) / 2, (1 + c) / 2]``,
    inside the recalibrated one when it lies in ``[R^{-1}((1 - c) / 2), R^{-1}((1 + c) / 2)]``
    (:class:`~sigmabnn.calibration.Calibration`); levels :data:`INTERVAL_LEVELS`. Also a 10-bin
    histogram of the PIT values (uniform for a calibrated model).
    """
    pit = np.asarray(pit, np.float64).reshape(-1)
    lo = np.array([(1.0 - c) / 2.0 for c in INTERVAL_LEVELS])
    hi = 1.0 - lo
    mlo, mhi = calibration.model_levels(lo)[:, 0], calibration.model_levels(hi)[:, 0]
    raw, cal = {}, {}
    for k, c in enumerate(INTERVAL_LEVELS):
        raw[f"{c:.4f}"] = float(np.mean((pit >= lo[k]) & (pit <= hi[k])))
        cal[f"{c:.4f}"] = float(np.mean((pit >= mlo[k]) & (pit <= mhi[k])))
    hist = np.histogram(pit, bins=10, range=(0.0, 1.0))[0]
    return {"raw": raw, "recalibrated": cal, "pit_histogram": hist.tolist()}


def exact_coverage(fitted: Any, pit: np.ndarray) -> dict[str, float]:
    """``{"0.6827": observed, ...}``: the coverage of the central intervals at :data:`INTERVAL_LEVELS` (recalibrated
    for a recalibrated model) from the rows' exact PIT ``[n]`` (:func:`sigmabnn.evaluate.metrics.pit_coverage`)."""
    bounds = quantile_levels(fitted, INTERVAL_LEVELS, calibrated=True)[0]
    cov = pit_coverage(np.asarray(pit, np.float64).reshape(-1, 1), bounds[:, :1], INTERVAL_LEVELS)
    return {f"{lv:.4f}": cov[f"{lv:g}"] for lv in INTERVAL_LEVELS}


def _metrics(fitted: Any, s: _Scored) -> dict[str, Any]:
    return split_metrics(
        s.u, s.mu, s.sd, s.lower, s.upper, log_target=fitted.log_target, coverage=exact_coverage(fitted, s.pit)
    )


def score_splits(fitted: Any, parts: dict[str, pd.DataFrame], rng_key: Any = None) -> dict[str, dict[str, Any]]:
    """:func:`split_metrics` of each named table of rows (raw columns and a valid target), predicted in one pass."""
    return {name: _metrics(fitted, s) for name, s in _score(fitted, parts, rng_key).items()}


def choose_points(u: np.ndarray, mu: np.ndarray, sd: np.ndarray, num: int = NUM_CHOSEN_POINTS) -> list[int]:
    """Row indices to show predictive distributions at: the smallest, median and largest target, and the worst |z|.

    Distinct indices, at most ``num`` (fewer if there are fewer rows).
    """
    u = np.asarray(u)
    order = np.argsort(u, kind="stable")
    z = np.abs((u - np.asarray(mu)) / np.asarray(sd))
    picks = [int(order[0]), int(order[len(order) // 2]), int(order[-1]), int(np.argmax(z))]
    picks += [int(i) for i in order[:: max(1, len(order) // max(num, 1))]]
    return list(dict.fromkeys(picks))[:num]


# ------------------------------------------------------------------------------------------- figures


def _figure(ncols: int, height: float = 3.2) -> Any:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.6 * ncols + 0.4, height), layout="constrained")
    return fig, [fig.add_subplot(1, ncols, i + 1) for i in range(ncols)]


def _residual_figure(path: Path, scored: dict[str, _Scored], metrics: dict[str, dict[str, Any]]) -> None:
    fig, axes = _figure(len(scored))
    grid = np.linspace(-5, 5, 201)
    for ax, (name, s) in zip(axes, scored.items(), strict=True):
        z = (s.u - s.mu) / s.sd
        ax.hist(np.clip(z, -5, 5), bins=np.linspace(-5, 5, 41), density=True, color="tab:blue", alpha=0.6)
        ax.plot(grid, np.exp(-0.5 * grid**2) / math.sqrt(2 * math.pi), color="k", lw=1.2, label="N(0, 1)")
        ax.set_title(f"{name}: z std {metrics[name]['z_std']:.2f}")
        ax.set_xlabel("standardized residual z (clipped to +-5)")
        ax.legend(loc="upper right", fontsize=8)
    axes[0].set_ylabel("density")
    from sigmabnn.plots import save_figure

    save_figure(fig, path)


def _coverage_figure(path: Path, metrics: dict[str, dict[str, Any]]) -> None:
    fig, (ax,) = _figure(1, height=3.6)
    ax.plot([0.6, 1.0], [0.6, 1.0], color="k", lw=0.8, label="calibrated")
    for name, m in metrics.items():
        (line,) = ax.plot(
            [c["expected"] for c in m["coverage_sigma"].values()],
            [c["observed"] for c in m["coverage_sigma"].values()],
            "o-",
            label=f"{name}: |z| <= k",
        )
        ax.plot(
            [float(level) for level in m["coverage_interval"]],
            list(m["coverage_interval"].values()),
            "s--",
            color=line.get_color(),
            mfc="none",
            label=f"{name}: central interval",
        )
    ax.set_xlabel("nominal probability (k = 1..5 sigma)")
    ax.set_ylabel("observed coverage")
    ax.legend(fontsize=7)
    from sigmabnn.plots import save_figure

    save_figure(fig, path)


def _parity_figure(path: Path, s: _Scored, name: str, label: str) -> None:
    fig, (ax,) = _figure(1, height=3.6)
    ax.errorbar(s.u, s.mu, yerr=s.sd, fmt=".", ms=2, elinewidth=0.5, alpha=0.6, color="tab:blue")
    lo, hi = float(min(s.u.min(), s.mu.min())), float(max(s.u.max(), s.mu.max()))
    ax.plot([lo, hi], [lo, hi], color="k", lw=0.8)
    ax.set_xlabel(f"true {label}")
    ax.set_ylabel(f"predicted {label} (mean +- 1 sd)")
    ax.set_title(f"{name} split")
    from sigmabnn.plots import save_figure

    save_figure(fig, path)


def _relative_error_figure(path: Path, scored: dict[str, _Scored], log_target: bool) -> None:
    fig, (ax,) = _figure(1, height=3.6)
    for name, s in scored.items():
        pred, y = (10.0**s.mu, s.y) if log_target else (s.mu, s.y)
        keep = y != 0
        rel = np.sort(np.abs(pred[keep] / y[keep] - 1.0))
        if rel.size:
            ax.plot(np.maximum(rel, 1e-6), np.arange(1, rel.size + 1) / rel.size, label=name)
    ax.set_xscale("log")
    ax.set_xlabel("relative error |prediction / true - 1|")
    ax.set_ylabel("fraction of points below")
    for q in REL_ERR_QUANTILES:
        ax.axhline(q, color="grey", lw=0.5, ls=":")
    ax.legend(fontsize=8)
    from sigmabnn.plots import save_figure

    save_figure(fig, path)


def _predictive_figure(path: Path, fitted: Any, s: _Scored, picks: list[int], label: str, rng_key: Any) -> list[dict]:
    rows = s.rows.iloc[picks]
    pred = predict(fitted, rows, levels=INTERVAL_LEVELS[:2], rng_key=rng_key, return_samples=True)
    space = pred.log_space if fitted.log_target else pred
    fig, axes = _figure(len(picks))
    shown = []
    for j, (ax, i) in enumerate(zip(axes, picks, strict=True)):
        samples = np.asarray(space.samples[:, j, 0])
        ax.hist(samples, bins=40, density=True, color="tab:blue", alpha=0.6)
        ax.axvline(s.u[i], color="tab:red", lw=1.5, label="true")
        ax.axvline(s.mu[i], color="k", lw=1.0, ls="--", label="mean")
        for lv in INTERVAL_LEVELS[:2]:
            ax.axvspan(space.lower[lv][j, 0], space.upper[lv][j, 0], color="grey", alpha=0.12)
        ax.set_xlabel(label)
        ax.set_title(f"row {rows.index[j]}: z = {(s.u[i] - s.mu[i]) / s.sd[i]:+.2f}", fontsize=9)
        shown.append({"row": int(rows.index[j]), "true": float(s.u[i]), "mean": float(s.mu[i]), "std": float(s.sd[i])})
    axes[0].set_ylabel("predictive density")
    axes[0].legend(fontsize=8)
    from sigmabnn.plots import save_figure

    save_figure(fig, path)
    return shown


# ------------------------------------------------------------------------------------------ markdown


def _pct(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{100 * x:.1f} %"


def _fmt(x: float, digits: int = 4) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.{digits}f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(r) + " |" for r in rows]


def _markdown(
    fitted: Any,
    metrics: dict[str, dict[str, Any]],
    dropped: dict[str, int],
    points: list[dict],
    point_split: str,
    title: str,
    source: str,
) -> str:
    log = fitted.log_target
    splits = list(metrics)
    space = "log10 " + fitted.target_name if log else fitted.target_name
    lines = [f"# {title}", ""]
    lines.append(
        f"Model: `{fitted.target_name}` ~ {', '.join(f'`{n}`' for n in fitted.feature_names)}; "
        f"{fitted.bnn.mlp.describe()}, {fitted.method}, {fitted.num_networks} networks "
        f"({fitted.draws.num_chains} chains x {fitted.draws.num_draws} draws). Data: {source}."
    )
    if fitted.derived:
        names = ", ".join(f"`{n}`" for n, _ in fitted.derived)
        lines += ["", f"Derived inputs (expressions stored in the model, see `sigmabnn info`): {names}."]
    lines += [
        "",
        "Rows scored per split: "
        + ", ".join(
            f"{s} {metrics[s]['n']}" + (f" ({dropped[s]} without a valid target dropped)" if dropped[s] else "")
            for s in splits
        )  # fmt: skip
        + ".",
        "",
        "## Accuracy",
        "",
    ]
    rows = []
    if log:
        rows.append(["R^2 (log10 space)", *(_fmt(metrics[s]["r2_log"], 5) for s in splits)])
        rows.append(["R^2 (cross-section space, 10^mean)", *(_fmt(metrics[s]["r2_xsec"], 5) for s in splits)])
        rows.append(["RMSE (log10)", *(_fmt(metrics[s]["rmse_log"]) for s in splits)])
    else:
        rows.append(["R^2", *(_fmt(metrics[s]["r2"], 5) for s in splits)])
        rows.append(["RMSE", *(_fmt(metrics[s]["rmse"]) for s in splits)])
    for q in REL_ERR_QUANTILES:
        rows.append([f"relative error, {q:.0%} quantile", *(_pct(metrics[s]["rel_err"][f"q{q:g}"]) for s in splits)])
    lines += _table(["metric", *splits], rows)
    lines += _concentration_markdown(metrics, log)
    lines += ["", "![relative error](relative_error.png)", "", "![parity](parity.png)", ""]
    lines += [
        "## Calibration",
        "",
        f"Standardized residuals `z = (true - mean) / std` of {space}; a calibrated Gaussian predictive has "
        "mean 0 and std 1.",
        "",
    ]
    lines += _table(
        ["", *splits],
        [
            ["z mean", *(_fmt(metrics[s]["z_mean"], 3) for s in splits)],
            ["z std", *(_fmt(metrics[s]["z_std"], 3) for s in splits)],
        ],
    )
    lines += ["", "![residuals](residuals.png)", "", "Coverage: fraction with |z| <= k against the Gaussian value.", ""]
    rows = []
    for k in SIGMA_LEVELS:
        cov = [metrics[s]["coverage_sigma"][str(k)] for s in splits]
        rows.append([f"{k} sigma", _pct(cov[0]["expected"]), *(_pct(c["observed"]) for c in cov)])
    lines += _table(["k", "Gaussian", *splits], rows)
    lines += ["", "Coverage of the central predictive intervals (from predictive quantiles):", ""]
    rows = []
    for key in metrics[splits[0]]["coverage_interval"]:
        rows.append([_pct(float(key)), *(_pct(metrics[s]["coverage_interval"][key]) for s in splits)])
    lines += _table(["nominal", *splits], rows)
    lines += ["", "![coverage](coverage.png)", ""]
    lines += _recalibration_markdown(fitted, metrics)
    lines += ["## Predictive distributions", ""]
    lines.append(
        f"At {len(points)} rows of the {point_split} split (the smallest, median and largest target and the "
        "largest |z|, or further rows by target rank): "
        f"the predictive density of {space} (shaded: central 1 and 2 sigma intervals), true value in red."
    )
    lines += [""]
    lines += _table(
        ["row", "true", "mean", "std", "z"],
        [
            [
                str(p["row"]),
                _fmt(p["true"]),
                _fmt(p["mean"]),
                _fmt(p["std"]),
                f"{(p['true'] - p['mean']) / p['std']:+.2f}",
            ]
            for p in points
        ],
    )
    lines += ["", "![predictive distributions](predictive.png)", ""]
    return "\n".join(lines)


def _concentration_markdown(metrics: dict[str, dict[str, Any]], log: bool) -> list[str]:
    """The table of where ``1 - R^2`` comes from (``*_concentration`` of :func:`split_metrics`)."""
    splits = list(metrics)
    spaces = (
        (("r2_log_concentration", "log10"), ("r2_xsec_concentration", "cross section"))
        if log
        else (("r2_concentration", "target"),)
    )
    rows = []
    for key, label in spaces:
        counts = sorted(int(k.removeprefix("share_top")) for k in metrics[splits[0]][key] if k.startswith("share_top"))
        for k in counts:
            cells = [
                f"{_pct(metrics[s][key][f'share_top{k}'])} (R^2 {_fmt(metrics[s][key][f'r2_without_top{k}'], 5)})"
                for s in splits
            ]
            rows.append([f"{label}: the {k} largest" if k > 1 else f"{label}: the largest", *cells])
    lines = [
        "",
        "Where 1 - R^2 comes from: the share of the residual sum of squares in the largest squared residuals, "
        "and in brackets the R^2 of the other rows.",
        "",
    ]
    return lines + _table(["squared residuals", *splits], rows)


def _recalibration_markdown(fitted: Any, metrics: dict[str, dict[str, Any]]) -> list[str]:
    """The report's recalibration section (empty without a calibration)."""
    cal = fitted.calibration
    splits = [s for s in metrics if "recalibration" in metrics[s]]
    if cal is None or not splits:
        return []
    lines = [
        "### Recalibration",
        "",
        f"The model's intervals are quantile-recalibrated (Kuleshov, Fenner & Ermon 2018) on {cal.n} "
        f"`{cal.split}` rows: the interval tables above use the recalibrated intervals; `predict(..., "
        "calibrated=False)` gives the raw ones. Coverage of the exact raw and recalibrated central intervals, "
        f"from each row's exact predictive CDF (the `{cal.split}` rows are the calibration's own, so their "
        "recalibrated coverage is in-sample):",
        "",
    ]
    rec = {s: metrics[s]["recalibration"] for s in splits}
    rows = []
    for key in rec[splits[0]]["raw"]:
        cells = [f"{_pct(rec[s]['raw'][key])} / {_pct(rec[s]['recalibrated'][key])}" for s in splits]
        rows.append([_pct(float(key)), *cells])
    lines += _table(["nominal", *(f"{s} raw / recalibrated" for s in splits)], rows)
    lines += ["", "PIT histograms (10 equal bins on [0, 1]; flat for a calibrated model):", ""]
    lines += _table(["split", "counts"], [[s, ", ".join(str(c) for c in rec[s]["pit_histogram"])] for s in splits])
    return lines + [""]


def calibration_report(
    fitted: Any,
    table: pd.DataFrame,
    directory: str | os.PathLike[str],
    *,
    split_column: str | None = "split",
    rng_key: Any = None,
    title: str | None = None,
    source: str = "the given table",
) -> ReportResult:
    """Score ``fitted`` on ``table`` per split and write the calibration report into ``directory``.

    Args:
        fitted: a regression :class:`~sigmabnn.fitted.FittedModel` (one target); a classifier's
            report is :func:`sigmabnn.evaluate.class_report.classification_report`'s (its result
            then a :class:`~sigmabnn.evaluate.class_report.ClassReport`).
        table: the model's raw input columns, its target column and, optionally, ``split_column``.
        directory: the report directory (created, or replaced as a whole).
        split_column: column with ``train`` / ``val`` / ``test`` labels; if absent in ``table``
            (or ``None``) all rows are one split ``all``.
        rng_key: JAX key for the predictive samples (default the predict default).
        title: heading of the report.
        source: how the data is named in the report.

    Returns:
        :class:`ReportResult`.

    Raises:
        InputError / DataError: a missing column, a non-positive target of a log model, no usable rows.
    """
    from sigmabnn.errors import DataError, InputError
    from sigmabnn.io.atomic import atomic_directory, atomic_write_json
    from sigmabnn.io.model_file import to_jsonable

    if fitted.is_classifier:  # accuracy, NLL, Brier, ECE and a reliability diagram instead
        from sigmabnn.evaluate.class_report import classification_report

        return classification_report(fitted, table, directory, split_column=split_column, title=title, source=source)
    if fitted.target_dim != 1:
        raise InputError("the calibration report needs a model with one target")
    if fitted.target_name not in table.columns:
        raise InputError(f"the data has no target column {fitted.target_name!r}")
    parts: dict[str, pd.DataFrame] = {}
    dropped: dict[str, int] = {}
    for name, rows in _split_rows(table, split_column):
        rows, n_bad = _usable(fitted, rows)
        if len(rows):
            parts[name] = rows
            dropped[name] = n_bad
    if not parts:
        raise DataError("no rows with a valid target to score")
    scored = _score(fitted, parts, rng_key)
    metrics = {name: _metrics(fitted, s) for name, s in scored.items()}
    for name in metrics:
        metrics[name]["dropped"] = dropped[name]
        if fitted.calibration is not None:
            metrics[name]["recalibration"] = recalibration_metrics(scored[name].pit, fitted.calibration)
    last = list(scored)[-1]
    label = f"log10 {fitted.target_name}" if fitted.log_target else fitted.target_name
    picks = choose_points(scored[last].u, scored[last].mu, scored[last].sd)
    target = Path(directory)
    with atomic_directory(target) as tmp:
        _residual_figure(tmp / "residuals.png", scored, metrics)
        _coverage_figure(tmp / "coverage.png", metrics)
        _parity_figure(tmp / "parity.png", scored[last], last, label)
        _relative_error_figure(tmp / "relative_error.png", scored, fitted.log_target)
        points = _predictive_figure(tmp / "predictive.png", fitted, scored[last], picks, label, rng_key)
        heading = title or f"Calibration report: {fitted.target_name}"
        text = _markdown(fitted, metrics, dropped, points, last, heading, source)
        (tmp / "report.md").write_text(text, encoding="utf-8")
        atomic_write_json(tmp / "metrics.json", to_jsonable({"splits": metrics, "points": points}))
    return ReportResult(target, target / "report.md", metrics, tuple(target / f for f in FIGURES))
