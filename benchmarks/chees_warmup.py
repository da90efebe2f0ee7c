"""How the default fit's ChEES warm-up adapts its trajectory length: a trace per table.

For each table (default: the six of ``candidate_seeds.py``; their training rows, no test row is read) a
fresh process runs ``sigmabnn.api.fit(path, "y")`` (the library's default) and records the sampler's
per-iteration warm-up record: the shared number of leapfrog steps, the step size and each chain's log
density, and the same for the sampling iterations, beside the adapted step size and trajectory length.

The record holds the number of leapfrog steps ``ceil(u_n T_n / eps_n)`` of iteration ``n``, not the
trajectory length ``T_n`` itself; with the Halton jitter ``u_n`` known, ``log T_n`` is estimated as
``log(steps_n eps_n / u_n)`` on the iterations with ``u_n >= 0.25`` (the ceiling then changes the estimate
by at most one step in ``steps_n``). Per table:

- ``log T`` at the end of the initial buffer and first slow window (before the first metric update) and at
  the end of warm-up, split into its change at the window ends (``T`` is rescaled with the metric,
  :mod:`sigmabnn.mcmc.chees`) and its change inside the windows (the Adam steps on ``log T``);
- ``slope``: the least-squares slope of ``log T`` per iteration over the last slow window, beside the
  largest a step of Adam on ``log T`` can take when the criterion's gradient keeps its sign
  (``LEARNING_RATE``, the library's 0.025);
- the step size before and after the first metric update (medians over those iterations), the mean
  leapfrog steps per sampling iteration and the adapted ``T / eps``;
- ``log density trend``: each chain's mean log density over its last 25 draws minus its first 25, averaged
  over the chains (nats; its standard error over the chains): whether the chains are still climbing
  towards their typical sets while they are sampled.

Outcome (2026-12-07, ``results/chees_warmup.md``; one fit per table, so a reading, not a rate; the claims are
tied to the JSON by ``tests/test_chees_warmup_benchmark.py``):

- Where the heteroscedastic model is chosen (steep6d-300, energy) the iterations before the first metric update
  (the initial buffer and first slow window, 100 of the 300) run at a step size 40 to 75 times smaller than
  after it, and ``log T`` stays within 0.05 of where it started: from the identity metric the scale head's
  tight weights set the step size, and the chains hardly move. Where the Gaussian is chosen the step size
  changes by at most 4 times at that update, and ``log T`` grows before it.
- Inside the slow windows ``log T`` climbs on every table, and in the last slow window it still climbs at
  0.14 to 0.43 of the most Adam can move it per iteration (steepest on steep6d-300): the warm-up ends before
  the trajectory length has settled.
- On energy most of ``T``'s growth comes from the rescaling at the window ends (+3.4) and little from the
  criterion's steps (+0.65); its adapted trajectory is the shortest of the six (78 steps of the adapted step
  size, 124 to 183 on the others).
- The chains' mean log density shows no trend over the sampling draws beyond 2 standard errors (over the
  chains) on any table (the largest, lin2d-120's, at 1.9): on these fits the chains are not still climbing
  into their typical sets while they are sampled.

Usage::

    python benchmarks/chees_warmup.py                      # results/chees_warmup.{json,md}
    python benchmarks/chees_warmup.py --tables energy      # one table
"""

from __future__ import annotations

import json
import math
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import (  # noqa: E402
    battery_tables,
    finish_metadata,
    json_subprocess,
    markdown_table,
    run_metadata,
    tables_parser,
    write,
)

SCRIPT = Path(__file__).resolve()
TABLES = ("sin1d-100", "lin2d-120", "smooth6d-300", "steep6d-300", "bostonHousing", "energy")
#: The library's Adam learning rate on ``log T`` (``sigmabnn.mcmc.chees.algorithm``): the most ``log T`` moves
#: in one iteration when the criterion's gradient keeps its sign.
LEARNING_RATE = 0.025
#: Iterations whose jitter is below this are left out of the ``log T`` estimates (module docstring).
MIN_JITTER = 0.25
#: Draws at each end of the sampling phase compared by the log density trend.
TREND_DRAWS = 25


def log_trajectory(steps: np.ndarray, step_size: np.ndarray) -> np.ndarray:
    """``log T_n`` estimated from one chain's ``steps`` and ``step_size`` ``[n]`` (NaN where ``u_n < MIN_JITTER``)."""
    from sigmabnn.mcmc.chees import halton

    u = np.array([float(halton(i)) for i in range(len(steps))])
    est = np.log(np.maximum(steps, 1) * step_size / u)
    return np.where(u >= MIN_JITTER, est, np.nan)


def _edge(log_t: np.ndarray, lo: int, hi: int, first: bool, k: int = 10) -> float:
    """Median of the first (or last) ``k`` finite estimates of ``log_t[lo:hi]``."""
    seg = log_t[lo:hi]
    seg = seg[np.isfinite(seg)]
    seg = seg[:k] if first else seg[-k:]
    return float(np.median(seg)) if seg.size else math.nan


def _slope(log_t: np.ndarray, lo: int, hi: int) -> float:
    """Least-squares slope of the finite estimates of ``log_t[lo:hi]`` per iteration."""
    idx = np.arange(lo, hi)
    ok = np.isfinite(log_t[lo:hi])
    if ok.sum() < 3:
        return math.nan
    return float(np.polyfit(idx[ok], log_t[lo:hi][ok], 1)[0])


def summarise(steps: np.ndarray, step_size: np.ndarray, ends: list[int], sample_steps: np.ndarray,
              sample_ld: np.ndarray, adapted: tuple[float, float]) -> dict[str, Any]:  # fmt: skip
    """The per-table summary (module docstring) from one chain's warm-up ``steps``/``step_size`` ``[W]``, the
    slow windows' last iterations ``ends``, the sampling steps ``[S]`` and log densities ``[C, S]``, and the
    adapted ``(step size, T)``."""
    log_t = log_trajectory(steps, step_size)
    w = len(steps)
    bounds = [0, *[e + 1 for e in ends], w]
    inside, jumps = 0.0, 0.0
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        inside += _edge(log_t, lo, hi, False) - _edge(log_t, lo, hi, True)
        if i + 1 < len(bounds) - 1:
            jumps += _edge(log_t, hi, bounds[i + 2], True) - _edge(log_t, lo, hi, False)
    first_end = ends[0] + 1 if ends else w
    last_lo = ends[-2] + 1 if len(ends) > 1 else 0
    last_hi = ends[-1] + 1 if ends else w
    trend = sample_ld[:, -TREND_DRAWS:].mean(axis=1) - sample_ld[:, :TREND_DRAWS].mean(axis=1)
    eps, t = adapted
    slope = _slope(log_t, last_lo, last_hi)
    return {
        "window_ends": [int(e) for e in ends],
        "log_t_start": _edge(log_t, 0, first_end, True),
        "log_t_before_first_update": _edge(log_t, 0, first_end, False),
        "log_t_end": _edge(log_t, bounds[-2], w, False),
        "log_t_change_at_window_ends": jumps,
        "log_t_change_inside_windows": inside,
        "last_window": [last_lo, last_hi - 1],
        "slope_last_window": slope,
        "slope_over_cap": slope / LEARNING_RATE,
        "step_size_before_first_update": float(np.median(step_size[:first_end])),
        "step_size_after_first_update": float(np.median(step_size[first_end:])) if first_end < w else math.nan,
        "warmup_mean_steps": float(np.mean(steps)),
        "sampling_mean_steps": float(np.mean(sample_steps)),
        "adapted_step_size": eps,
        "adapted_trajectory_length": t,
        "adapted_steps": t / eps,
        "ld_trend": float(np.mean(trend)),
        "ld_trend_se": float(np.std(trend, ddof=1) / math.sqrt(len(trend))),
    }


def cell(name: str) -> dict[str, Any]:
    """One default fit of table ``name`` in this process, its sampler's trace summarised (JSON-able)."""
    import sigmabnn.fitting.trainers as trainers
    from defaults import load_table
    from sigmabnn.api import fit
    from sigmabnn.mcmc.adaptation import window_schedule

    captured: list[Any] = []
    original = trainers.fit_mcmc

    def recording(*args: Any, **kwargs: Any) -> Any:
        out = original(*args, **kwargs)
        captured.append(out)
        return out

    trainers.fit_mcmc = recording  # the benchmark reads the sampler's record, which the fit's report leaves out
    table = load_table(name, with_test=False)
    with tempfile.TemporaryDirectory(prefix="sigmabnn_chees_warmup_") as tmp:
        path = Path(tmp) / "table.csv"
        table.train.to_csv(path, index=False)
        start = time.perf_counter()
        _, report = fit(str(path), "y", progress=False)
        seconds = time.perf_counter() - start
    _, info = captured[-1]
    w, s = info.warmup_info, info.sample_info
    steps, eps = np.asarray(w.num_integration_steps)[0], np.asarray(w.step_size)[0]
    _, is_end = window_schedule(len(steps))
    ad = info.adapted
    adapted = (float(np.asarray(ad.step_size)[0]), float(np.asarray(ad.trajectory_length)[0]))
    rep = report.to_json()
    summary = summarise(steps, eps, [int(i) for i in np.flatnonzero(is_end)], np.asarray(s.num_integration_steps)[0],
                        np.asarray(s.logdensity, np.float64), adapted)  # fmt: skip
    return {
        "table": name, "rows": len(table.train), "fitted_rows": rep["data"]["train"], "seconds": seconds,
        "likelihood": rep["model"]["likelihood"], "num_warmup": len(steps),
        "num_chains": int(np.asarray(w.step_size).shape[0]),
        **summary,
    }  # fmt: skip


COLUMNS = (
    ("table", "table", ""), ("fitted_rows", "fitted rows", ""), ("likelihood", "noise model", ""),
    ("step_size_before_first_update", "eps before first update", ".2e"),
    ("step_size_after_first_update", "eps after", ".2e"),
    ("log_t_before_first_update", "log T before first update", ".2f"),
    ("log_t_change_at_window_ends", "log T change at window ends", "+.2f"),
    ("log_t_change_inside_windows", "log T change inside windows", "+.2f"),
    ("log_t_end", "log T at end", ".2f"),
    ("slope_last_window", "slope in last window (per iteration)", "+.4f"),
    ("slope_over_cap", "slope / Adam cap", "+.2f"),
    ("adapted_steps", "adapted T / eps", ".0f"),
    ("sampling_mean_steps", "sampling mean steps", ".1f"),
    ("ld_trend", "log density trend over sampling (nats)", "+.1f"),
    ("ld_trend_se", "its SE", ".1f"),
    ("seconds", "fit s", ".1f"),
)  # fmt: skip


def markdown(meta: dict[str, Any], cells: list[dict[str, Any]]) -> str:
    lines = [
        "# The default fit's ChEES warm-up: how its trajectory length adapts",
        "",
        "Written by `benchmarks/chees_warmup.py` (its docstring has the protocol); do not edit. One default fit per "
        "table, on its training rows (no test row is read). `log T`: natural log of the trajectory length, "
        "estimated from the recorded leapfrog steps of the iterations whose jitter is at least "
        f"{MIN_JITTER}. Adam cap: {LEARNING_RATE} per iteration, the most `log T` moves in one step.",
        "",
        f"Run {meta['date']} to {meta['date_end']}, {meta['machine']}, jax {meta['jax']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at the start, {meta['load_average_1_5_15_at_end']} at the end.",
        "",
        markdown_table(cells, COLUMNS),
        "",
        "Slow windows (last iteration of each): "
        + "; ".join(f"{c['table']}: {c['window_ends']}" for c in cells)
        + ". Last slow window: "
        + "; ".join(f"{c['table']}: {c['last_window'][0]} to {c['last_window'][1]}" for c in cells)
        + ".",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = tables_parser(__doc__.splitlines()[0], TABLES).parse_args(argv)
    if args.cell:
        print(json.dumps(cell(args.cell)))
        return 0
    names = battery_tables(args.tables, "chees_warmup")
    if names is None:
        return 2
    meta = run_metadata("benchmarks/chees_warmup.py")
    cells = [json_subprocess([sys.executable, str(SCRIPT), "--cell", n], f"chees_warmup {n}") for n in names]
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "chees_warmup.json", {"meta": meta, "cells": cells}, markdown(meta, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
