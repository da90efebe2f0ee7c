"""Head-to-head: Bayes by Backprop vs Flipout vs NUTS on the six toy functions and on chi1 chi1 (NLO data).

Does a mean-field surrogate posterior give predictive distributions as good as
exact sampling (the thesis's open question)? For every data set the three
methods are run one after the other in this process (interleaved, same data,
same network) through :func:`sigmabnn.api.fit`, and scored on held-out data
by :func:`sigmabnn.evaluate.metrics.evaluate`:

- ``r2``, ``nll`` (mean negative log predictive density per point, nats),
  ``coverage_1s`` / ``_2s`` / ``_3s`` (fraction of test targets within 1, 2,
  3 predictive stds of the mean; a calibrated Gaussian gives 0.683, 0.954,
  0.997), ``train_seconds`` (wall time of the fit, MAP pretraining included;
  compilation included, on a shared machine).

Toy functions (Maz 2018, :mod:`sigmabnn.workflows.toy`): 50 training points
on [-10, 10], noise std 0.25, ``1-20-20-1`` tanh, the demo's settings
(:class:`~sigmabnn.workflows.toy.ToySettings`: NUTS 2 chains x (200 warm-up
+ 150 draws), tree depth 6, after MAP; VI: 5000 full-batch Adam steps at
0.01, ``M = 10``, from the best of 4 MAP fits, 500 draws from q; the noise
learned by each method). Test data: 500 fresh noisy points with ``x``
uniform on ``10/49 <= |x| <= 10``, the training span without the gap around
the singularity of ``3 log x^2`` and ``10/x`` at 0 (no training point is
closer to 0 than ``10/49``), scored in target units. Also
recorded: ``coverage_true_in`` / ``_out``, the fraction of a 400-point grid
on [-20, 20] inside / outside the training domain where the central 95 %
interval contains the noise-free function.

chi1 chi1 (``p p -> chi_1^0 chi_1^0``): the process's features of
:func:`sigmabnn.workflows.nlo.recommended_config` (5 raw inputs and the
derived coupling / proxy features), ``log10`` target, ``P-20-20-1`` tanh,
trained on a seeded subset of ``--nlo-train-rows`` of the fixed ``train``
rows (reduced so that NUTS fits the time budget of two shared cores; the
``val`` rows serve MAP early stopping), scored on all ``test`` rows in log10
space. NUTS: the reduced recommended setting (2 chains x (150 warm-up + 50
draws), depth 5, 4000 MAP steps); VI: 5000 full-batch steps at 0.01 with
``M = 5`` from the best of 4 MAP fits.

Writes ``results/vi_vs_mcmc.json`` (``records``: one per method and data set)
and ``results/vi_vs_mcmc.md`` generated from it.

    python benchmarks/vi_vs_mcmc.py [--datasets linear,...,chi1chi1] [--methods bbb,flipout,nuts]
                                    [--nlo-train-rows 2000] [--seed 0] [--table-only]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, page, regenerate, run_metadata, write_json
from sigmabnn.api import fit
from sigmabnn.evaluate.metrics import evaluate
from sigmabnn.map import MAPConfig
from sigmabnn.predict import predict
from sigmabnn.workflows.toy import TOY_FUNCTIONS, ToySettings, fit_toy_data, make_toy_data

JSON_PATH = RESULTS_DIR / "vi_vs_mcmc.json"
METHODS = ("bbb", "flipout", "nuts")
NLO = "chi1chi1"
DATASETS = tuple(f.name for f in TOY_FUNCTIONS) + (NLO,)
NUM_TEST_TOY = 500

COLUMNS = (
    ("dataset", "data set", ""),
    ("method", "method", ""),
    ("r2", "R^2", ".4f"),
    ("nll", "NLL", ".3f"),
    ("coverage_1s", "cov 1s", ".3f"),
    ("coverage_2s", "cov 2s", ".3f"),
    ("coverage_3s", "cov 3s", ".3f"),
    ("coverage_true_in", "95 % true in", ".2f"),
    ("coverage_true_out", "95 % true out", ".2f"),
    ("noise_std", "noise std", ".3f"),
    ("train_seconds", "train s", ".1f"),
)


def _scores(ev: dict[str, Any]) -> dict[str, float]:
    cov = ev["coverage_sigma"]
    return {
        "r2": ev["r2"],
        "nll": ev["nll"],
        "coverage_1s": cov["1"]["observed"],
        "coverage_2s": cov["2"]["observed"],
        "coverage_3s": cov["3"]["observed"],
    }


def toy_test_data(rng_key: jax.Array, function, settings: ToySettings) -> tuple[np.ndarray, np.ndarray]:
    """``NUM_TEST_TOY`` noisy test points, ``x`` uniform on the training span without the gap around 0."""
    k_mag, k_sign, k_noise = jax.random.split(rng_key, 3)
    lo, hi = settings.domain
    gap = (hi - lo) / (settings.num_points - 1) / 2  # half the grid step: no test x closer to 0 than the data
    mag = np.asarray(jax.random.uniform(k_mag, (NUM_TEST_TOY,), minval=gap, maxval=hi))
    x = np.where(np.asarray(jax.random.bernoulli(k_sign, 0.5, (NUM_TEST_TOY,))), mag, -mag)
    noise = settings.noise_std * np.asarray(jax.random.normal(k_noise, (NUM_TEST_TOY,)))
    return x, function.fn(x) + noise


def run_toy_case(function, index: int, method: str, seed: int) -> dict[str, Any]:
    settings = ToySettings(method=method)
    key_data, key_test, key_eval = jax.random.split(jax.random.fold_in(jax.random.key(seed), index), 3)
    x, y = make_toy_data(key_data, function, settings)
    fitted, report = fit_toy_data(x, y, settings, seed)
    x_test, y_test = toy_test_data(key_test, function, settings)
    ev = evaluate(fitted, x_test[:, None], y_test)["original"]
    grid = np.linspace(*settings.grid)
    pred = predict(fitted, grid[:, None], levels=(settings.level,), rng_key=key_eval)
    truth = function.fn(grid)
    covered = (pred.lower[settings.level][:, 0] <= truth) & (truth <= pred.upper[settings.level][:, 0])
    inside = (grid >= settings.domain[0]) & (grid <= settings.domain[1])
    return _scores(ev) | {
        "coverage_true_in": float(covered[inside].mean()),
        "coverage_true_out": float(covered[~inside].mean()),
        "noise_std": report.noise_std,
        "train_seconds": report.timings.fit_seconds,
        "num_train": int(x.size),
        "num_test": int(x_test.size),
    }


def nlo_tables(train_rows: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, Any]:
    """(training table: a seeded subset of the train rows plus all val rows, test rows, config)."""
    from sigmabnn.datasets import load_ewino
    from sigmabnn.physics.amplitude_features import recommended_features
    from sigmabnn.workflows.nlo import recommended_config

    # the features these results were measured with (before the resonance integral and the target's baseline)
    config = recommended_config("1000022,1000022", derive=tuple(recommended_features("1000022,1000022", False)))
    df = load_ewino()
    df = df[df[config.target].notna() & (df[config.target] > 0)]
    train = df[df["split"] == "train"]
    keep = np.sort(np.random.default_rng(seed).permutation(len(train))[: min(train_rows, len(train))])
    table = pd.concat([train.iloc[keep], df[df["split"] == "val"]])
    return table, df[df["split"] == "test"], config


def run_nlo_case(tables, method: str, seed: int) -> dict[str, Any]:
    table, test, config = tables
    if method == "nuts":
        options = {
            "num_chains": config.num_chains,
            "num_warmup": config.num_warmup,
            "num_samples": config.num_samples,
            "max_tree_depth": config.max_tree_depth,
            "map": MAPConfig(learning_rate=config.map_learning_rate, num_steps=config.map_steps, patience=None),
        }
    else:
        options = {"num_steps": 5000, "learning_rate": 0.01, "num_mc_samples": 5, "num_samples": 500}
    fitted, report = fit(
        table,
        config.target,
        list(config.features),
        method=method,
        architecture=config.architecture,
        activation=config.activation,
        log_target=True,
        split_column="split",
        seed=seed,
        learn_noise=True,
        progress=False,
        derive=config.derive,
        **options,
    )
    ev = evaluate(fitted, test, test)["log10"]
    return _scores(ev) | {
        "noise_std": report.noise_std,
        "train_seconds": report.timings.fit_seconds,
        "num_train": int(report.data.train),
        "num_test": int(len(test)),
    }


def summary_lines(records: list[dict[str, Any]]) -> str:
    """Per method: data sets where it has the lowest NLL, mean |coverage_2s - 0.954|, mean toy coverage outside."""
    by_set: dict[str, list[dict[str, Any]]] = {}
    for rec in records:
        by_set.setdefault(rec["dataset"], []).append(rec)
    best = {name: min(recs, key=lambda r: r["nll"])["method"] for name, recs in by_set.items()}
    lines = []
    for method in dict.fromkeys(r["method"] for r in records):
        mine = [r for r in records if r["method"] == method]
        wins = sorted(name for name, m in best.items() if m == method)
        cal = float(np.mean([abs(r["coverage_2s"] - 0.9545) for r in mine]))
        out = [r["coverage_true_out"] for r in mine if r.get("coverage_true_out") is not None]
        lines.append(
            f"- {method}: lowest NLL on {len(wins)} of {len(by_set)} data sets ({', '.join(wins) or 'none'}); "
            f"mean |coverage 2s - 0.954| {cal:.3f}"
            + (f"; mean 95 % coverage of the true toy function outside the data {np.mean(out):.2f}" if out else "")
        )
    return "\n".join(lines) + "\n"


def render(data: dict[str, Any]) -> str:
    return page(
        "# BBB vs Flipout vs NUTS\n\n"
        "Generated by `benchmarks/vi_vs_mcmc.py` from `vi_vs_mcmc.json` (settings in the script's docstring). "
        "Toys: 50 training points, 500 noisy test points in the training span, target units; "
        "`95 % true in/out`: fraction of the [-20, 20] grid inside / outside [-10, 10] where the 95 % interval "
        "contains the noise-free function. chi1 chi1: log10 cross section, "
        f"{data['_meta'].get('nlo_train_rows')} training rows, all test rows. NLL in nats per point; "
        "coverage k s: fraction of test targets within k predictive stds (calibrated: 0.683, 0.954, 0.997); "
        "train s: wall time of the fit (MAP and compilation included).",
        data["records"],
        COLUMNS,
        "Summary (computed from the records above):\n\n" + summary_lines(data["records"]),
        data["_meta"],
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--nlo-train-rows", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--table-only", action="store_true", help="regenerate the Markdown table from the JSON")
    args = parser.parse_args(argv)
    if args.table_only:
        print(regenerate(JSON_PATH, render))
        return 0
    datasets = args.datasets.split(",")
    methods = args.methods.split(",")
    unknown = sorted(set(datasets) - set(DATASETS)) + sorted(set(methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown data set or method {unknown[0]!r}")

    meta = run_metadata("benchmarks/vi_vs_mcmc.py") | {"seed": args.seed, "nlo_train_rows": args.nlo_train_rows}
    records: list[dict[str, Any]] = []
    start = time.perf_counter()
    toys = {f.name: (i, f) for i, f in enumerate(TOY_FUNCTIONS)}
    tables = nlo_tables(args.nlo_train_rows, args.seed) if NLO in datasets else None
    for name in datasets:
        for method in methods:
            if name == NLO:
                rec = run_nlo_case(tables, method, args.seed)
            else:
                index, function = toys[name]
                rec = run_toy_case(function, index, method, args.seed)
            records.append({"method": method, "dataset": name} | rec)
            print(json.dumps(records[-1]), flush=True)
            # write as we go, so a run cut short keeps what it measured
            data = {"_meta": finish_metadata(meta) | {"total_seconds": time.perf_counter() - start}, "records": records}
            write_json(JSON_PATH, data)
    print(regenerate(JSON_PATH, render))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
