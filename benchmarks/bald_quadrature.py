"""Accuracy of regression BALD's quadrature (:func:`sigmabnn.acquisition.regression.bald`) against fine integration.

For random equal-weight mixtures of ``T`` components (Gaussian, or Student-t with 3, 5 and 10 degrees of
freedom; seeded), the mutual information ``I(y; theta)`` computed by the trapezoid rule on a fine grid
(800,001 points over the components' range +- 200) is compared with:

- ``bald(..., max_outer=None)`` with the library's nodes (Gauss-Hermite for Gaussian components;
  Student-t quantiles at Gauss-Legendre nodes of probability) at 10 (the default) and 20 nodes;
- the same with the earlier Student-t rule, the quantiles at the probability midpoints ``(k + 1/2) / K``
  with equal weights (swapped in for this comparison only);
- ``bald`` with its default outer mean over 32 of ``T = 100`` components (the control variate's effect).

Records per mixture: ``family``, ``df``, ``components``, ``exact``, and per rule the estimate. The Markdown
gives the absolute and relative errors per rule and family. Run: ``python benchmarks/bald_quadrature.py``
(about a minute; no timing is measured).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parent))
import sigmabnn.acquisition.regression as regression  # noqa: E402
from _results import RESULTS_DIR, finish_metadata, run_metadata, write_json, write_text_atomic  # noqa: E402
from sigmabnn.predict.components import Components  # noqa: E402

FAMILIES = ((None, "gaussian"), (3.0, "student_t"), (5.0, "student_t"), (10.0, "student_t"))
TRIALS = 20
GRID_POINTS = 800_001
GRID_MARGIN = 200.0


def exact_information(mu: np.ndarray, var: np.ndarray, df: float | None) -> float:
    """``I(y; theta)`` in nats of one point's equal-weight mixture, by the trapezoid rule on a fine grid."""
    y = np.linspace(mu.min() - GRID_MARGIN, mu.max() + GRID_MARGIN, GRID_POINTS)
    if df is None:
        p = np.array([stats.norm.pdf(y, m, math.sqrt(v)) for m, v in zip(mu, var)])
    else:
        p = np.array([stats.t.pdf(y, df, m, math.sqrt(v * (df - 2.0) / df)) for m, v in zip(mu, var)])
    mix = p.mean(axis=0)
    return float(np.mean([np.trapezoid(q * np.log(np.maximum(q, 1e-300) / np.maximum(mix, 1e-300)), y) for q in p]))


def midpoint_nodes(df: float | None, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The earlier Student-t rule: the unit-variance quantiles at probabilities ``(k + 1/2) / K``, equal weights."""
    x = stats.t.ppf((np.arange(k) + 0.5) / k, df) * math.sqrt((df - 2.0) / df)
    return x, np.full(k, 1.0 / k)


def estimates(mu: np.ndarray, var: np.ndarray, df: float | None) -> dict[str, float]:
    """The rules' estimates for one point (module docstring)."""
    c = Components(mu[None, :, None], var[None, :, None], df, False)
    out = {f"nodes{k}": float(regression.bald(c, nodes=k, max_outer=None)[0]) for k in (10, 20)}
    if df is not None:
        library = regression.quadrature_nodes
        regression.quadrature_nodes = midpoint_nodes
        try:
            out |= {f"midpoint{k}": float(regression.bald(c, nodes=k, max_outer=None)[0]) for k in (10, 20)}
        finally:
            regression.quadrature_nodes = library
    if len(mu) > regression.MAX_OUTER:
        out["outer32"] = float(regression.bald(c)[0])
    return out


def mixtures(rng: np.random.Generator, df: float | None, t_nets: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Means with a spread of 0.3, 1 or 3 noise units, variances uniform on [0.1, 2]."""
    n = int(rng.integers(2, 8)) if t_nets is None else t_nets
    return rng.normal(0.0, rng.choice([0.3, 1.0, 3.0]), size=n), rng.uniform(0.1, 2.0, size=n)


def run(trials: int) -> list[dict]:
    rng = np.random.default_rng(0)
    records = []
    for df, family in FAMILIES:
        for t_nets in (None, 100):
            for _ in range(trials if t_nets is None else max(1, trials // 4)):
                mu, var = mixtures(rng, df, t_nets)
                exact = exact_information(mu, var, df)
                records.append(
                    {"family": family, "df": df, "components": len(mu), "exact": exact, **estimates(mu, var, df)}
                )
    return records


def summary(records: list[dict]) -> str:
    lines = [
        "| family | df | components | rule | mixtures | mean exact (nats) | max abs error | rms abs error "
        "| max rel error | rms rel error |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["family"], r["df"], "2-7" if r["components"] < 8 else str(r["components"])), []).append(r)
    for (family, df, comps), rs in groups.items():
        exact = np.array([r["exact"] for r in rs])
        for rule in [k for k in rs[0] if k not in ("family", "df", "components", "exact")]:
            err = np.array([r[rule] for r in rs]) - exact
            rel = err / exact
            lines.append(
                f"| {family} | {'-' if df is None else f'{df:g}'} | {comps} | {rule} | {len(rs)} | {exact.mean():.4f} "
                f"| {np.abs(err).max():.4f} | {np.sqrt(np.mean(err**2)):.4f} | {np.abs(rel).max():.3f} "
                f"| {np.sqrt(np.mean(rel**2)):.3f} |"
            )
    return "\n".join(lines)


def markdown(data: dict) -> str:
    meta = data["meta"]
    return (
        "# Regression BALD: quadrature against fine integration\n\n"
        "Generated by `benchmarks/bald_quadrature.py` from `bald_quadrature.json`; do not edit. "
        "The script's docstring has the protocol. Rules: `nodes10` / `nodes20` the library's rule "
        "(`sigmabnn.acquisition.regression.quadrature_nodes`) at 10 (the default) and 20 nodes, every component "
        "in the outer mean; `midpoint10` / `midpoint20` the earlier Student-t rule (quantile midpoints, equal "
        "weights); `outer32` the default estimate, the outer mean over 32 of the 100 components. Errors: "
        "estimate minus the fine integral, in nats; relative: over the fine integral.\n\n"
        f"Run {meta['date']} to {meta['date_end']}, load average {meta['load_average_1_5_15_at_start']} at start "
        "(no timing is measured).\n\n" + summary(data["records"]) + "\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=TRIALS, help="mixtures of 2-7 components per family")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = parser.parse_args(argv)
    meta = run_metadata("benchmarks/bald_quadrature.py")
    data = {"meta": meta, "records": run(args.trials)}
    data["meta"] = finish_metadata(meta)
    write_json(args.out / "bald_quadrature.json", data)
    write_text_atomic(args.out / "bald_quadrature.md", markdown(data))
    print(summary(data["records"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
