"""Quantile recalibration of the chi1^0 chi1^0 surrogate: raw vs recalibrated test coverage.

Trains the NLO surrogate with the demo configuration (:func:`sigmabnn.workflows.nlo.demo_config`,
which recalibrates on the ``val`` rows of the built-in data) and measures on the ``test`` rows
the coverage of the central 1, 2 and 3 sigma predictive intervals of log10 sigma:

- ``raw_sampled`` / ``recalibrated_sampled``: with the intervals :func:`sigmabnn.predict.predict`
  returns (``calibrated=False`` / ``True``; predictive samples at its default sample counts);
- ``raw_exact`` / ``recalibrated_exact``: from the exact PIT of each test row
  (:func:`sigmabnn.predict.predictive_cdf`), inside ``[(1 - c) / 2, (1 + c) / 2]`` or its
  recalibrated image ``[R^{-1}((1 - c) / 2), R^{-1}((1 + c) / 2)]``: the coverage of the exact
  intervals, so the sampled minus exact difference is the sampling error of the intervals;
- the Monte-Carlo std of a coverage on ``n`` rows at nominal ``c``, ``sqrt(c (1 - c) / n)``;
- the wall time of both predictions and the sample count each used; a 10-bin PIT histogram.

Writes ``benchmarks/results/recalibration.json`` and ``recalibration.md`` (generated from the
JSON). Usage: ``python benchmarks/recalibration.py [--seed 0] [--full]`` (``--full``: the
recommended configuration instead of the demo's; about an hour on two quiet cores).

``--loo``: which rows to fit the map on, for the demo or (``--full``) the recommended configuration
(one fit, seed ``--seed``; ``--model PATH`` reuses a saved fit of it, ``--save PATH`` keeps the one
trained). The
test rows' coverage of the exact central intervals (as ``raw_exact`` / ``recalibrated_exact``
above) of the raw model and of the maps fitted on the ``val`` rows' PIT (``heldout``), on the
training rows' PSIS leave-one-out PIT (``loo``; :func:`sigmabnn.recalibration.loo_pit_values`)
and on both (``loo+heldout``), with the Pareto ``k`` of the training rows and the time the
leave-one-out PIT takes. The method is chosen on the ``val`` rows alone, by a rule fixed before
any test coverage was seen (:data:`SELECTION`), and the choice is recorded beside the test
numbers. Writes ``recalibration_loo.json`` and ``recalibration_loo.md``.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS_DIR, finish_metadata, run_metadata, write_json, write_text_atomic  # noqa: E402

RESULTS = RESULTS_DIR / "recalibration.json"
RESULTS_LOO = RESULTS_DIR / "recalibration_loo.json"
SELECTION = (
    "fixed before looking at test: each candidate map's coverage of the exact 1/2/3 sigma intervals on "
    "val rows it was not fitted on (heldout: two-fold cross-validation on val, each half's map judged on "
    "the other half; loo: the map from the training rows' LOO-PIT judged on all val rows); the candidate "
    "with the smaller largest |coverage - nominal| over the three levels is chosen (heldout on a tie); "
    "loo+heldout cannot be judged on val (val is in its map) and is reported only"
)
LEVELS = (0.682689492137, 0.954499736104, 0.997300203937)
NAMES = ("1 sigma", "2 sigma", "3 sigma")


def measure(seed: int, full: bool) -> dict[str, Any]:
    from sigmabnn.datasets import load_ewino
    from sigmabnn.predict import predict, predictive_cdf
    from sigmabnn.predict.sampling import default_num_samples, quantile_levels
    from sigmabnn.workflows import nlo

    meta = run_metadata("benchmarks/recalibration.py")
    config = nlo.recommended_config() if full else nlo.demo_config()
    data = load_ewino()
    result = nlo.train_process(seed, config.process, config, data=data, progress=False, score=False)
    fitted = result.fitted
    cal = fitted.calibration
    rows = data[(data["split"] == "test") & (data[config.target] > 0)]
    y = rows[config.target].to_numpy(np.float64)
    u_log = np.log10(y)
    out: dict[str, Any] = {
        "meta": meta,
        "config": config.describe(),
        "configuration": "recommended" if full else "demo",
        "seed": seed,
        "networks": fitted.num_networks,
        "fit_seconds": result.metrics["fit_seconds"],
        "calibration_split": cal.split,
        "calibration_rows": cal.n,
        "test_rows": len(rows),
    }
    times, preds = {}, {}
    for name, calibrated in (("raw", False), ("recalibrated", True)):
        t0 = time.perf_counter()
        preds[name] = predict(fitted, rows, levels=LEVELS, calibrated=calibrated).log_space
        times[name] = time.perf_counter() - t0
    tails = quantile_levels(fitted, LEVELS, True)[1]
    out["noise_samples"] = {
        "raw": default_num_samples(fitted.num_networks, None),
        "recalibrated": default_num_samples(fitted.num_networks, tails),
    }
    out["smallest_mapped_tail_level"] = tails
    out["predict_seconds"] = times
    pit = predictive_cdf(fitted, rows, y)[:, 0]
    lo = np.array([(1 - c) / 2 for c in LEVELS])
    hi = np.array([(1 + c) / 2 for c in LEVELS])
    mapped_lo, mapped_hi = cal.model_levels(lo)[:, 0], cal.model_levels(hi)[:, 0]
    cov: dict[str, dict[str, float]] = {}
    for k, (name, c) in enumerate(zip(NAMES, LEVELS)):
        row = {"nominal": c, "mc_std": math.sqrt(c * (1 - c) / len(rows))}
        for which in ("raw", "recalibrated"):
            p = preds[which]
            row[f"{which}_sampled"] = float(np.mean((u_log >= p.lower[c][:, 0]) & (u_log <= p.upper[c][:, 0])))
        row["raw_exact"] = float(np.mean((pit >= lo[k]) & (pit <= hi[k])))
        row["recalibrated_exact"] = float(np.mean((pit >= mapped_lo[k]) & (pit <= mapped_hi[k])))
        row["mapped_levels"] = [float(mapped_lo[k]), float(mapped_hi[k])]
        cov[name] = row
    out["coverage_test"] = cov
    out["pit_histogram_test"] = np.histogram(pit, bins=10, range=(0, 1))[0].tolist()
    out["pit_histogram_val"] = np.histogram(cal.pit[:, 0], bins=10, range=(0, 1))[0].tolist()
    out["meta"] = finish_metadata(meta)
    return out


def markdown(res: dict[str, Any]) -> str:
    meta = res["meta"]
    lines = [
        "# Quantile recalibration of the chi1^0 chi1^0 surrogate",
        "",
        "Generated by `benchmarks/recalibration.py` from `recalibration.json`; do not edit.",
        "",
        f"Configuration ({res['configuration']}): {res['config']}; seed {res['seed']}, "
        f"{res['networks']} networks, fit {res['fit_seconds']:.0f} s. Recalibrated on the "
        f"{res['calibration_rows']} `{res['calibration_split']}` rows (Kuleshov, Fenner & Ermon 2018); "
        f"coverage of the central predictive intervals of log10 sigma on the {res['test_rows']} `test` rows.",
        "",
        f"Date {meta['date']} to {meta['date_end']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at start, {meta['load_average_1_5_15_at_end']} at end "
        "(a shared machine).",
        "",
        "| interval | nominal | raw (exact) | recalibrated (exact) | raw (predict) | recalibrated (predict) "
        "| MC std | mapped model levels |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in res["coverage_test"].items():
        lines.append(
            f"| {name} | {100 * r['nominal']:.2f} % | {100 * r['raw_exact']:.2f} % | "
            f"{100 * r['recalibrated_exact']:.2f} % | {100 * r['raw_sampled']:.2f} % | "
            f"{100 * r['recalibrated_sampled']:.2f} % | {100 * r['mc_std']:.2f} pp | "
            f"{r['mapped_levels'][0]:.5f}, {r['mapped_levels'][1]:.5f} |"
        )
    ns, ts = res["noise_samples"], res["predict_seconds"]
    lines += [
        "",
        "- exact: the fraction of test rows whose exact PIT lies inside the interval's levels (the coverage "
        "of the exact quantile intervals); predict: the intervals `predict` returns, from predictive samples.",
        f"- `predict` on the test rows: raw {ts['raw']:.1f} s at {ns['raw']} samples per point, recalibrated "
        f"{ts['recalibrated']:.1f} s at {ns['recalibrated']} (smallest mapped tail level "
        f"{res['smallest_mapped_tail_level']:.2e}).",
        f"- PIT histogram (10 bins on [0, 1]), test: {res['pit_histogram_test']}; val (the calibration rows): "
        f"{res['pit_histogram_val']}.",
        "",
    ]
    return "\n".join(lines)


def _coverage(pit: np.ndarray, cal: Any) -> list[float]:
    """Coverage of the exact central 1/2/3 sigma intervals from PIT values ``[n]`` (``cal``: a map or None)."""
    lo = np.array([(1 - c) / 2 for c in LEVELS])
    hi = np.array([(1 + c) / 2 for c in LEVELS])
    if cal is not None:
        lo, hi = cal.model_levels(lo)[:, 0], cal.model_levels(hi)[:, 0]
    return [float(np.mean((pit >= a) & (pit <= b))) for a, b in zip(lo, hi)]


def _worst(cov: list[float]) -> float:
    return max(abs(c - n) for c, n in zip(cov, LEVELS))


def measure_loo(seed: int, model: str | None, save: str | None, demo: bool = False) -> dict[str, Any]:
    import dataclasses

    from sigmabnn.calibration import Calibration
    from sigmabnn.datasets import load_ewino
    from sigmabnn.io.model_file import load_model, save_model
    from sigmabnn.predict import predictive_cdf
    from sigmabnn.recalibration import loo_pit_values, recalibrate
    from sigmabnn.workflows import nlo

    meta = run_metadata("benchmarks/recalibration.py --loo")
    config = nlo.demo_config() if demo else nlo.recommended_config()
    data = load_ewino()
    if model is None:
        fitted = nlo.train_process(seed, config.process, config, data=data, progress=False, score=False).fitted
        if save:
            save_model(fitted, save)
    else:
        fitted = load_model(model)
    fitted = dataclasses.replace(fitted, calibration=None)
    ok = data[config.target].notna() & (data[config.target] > 0)
    rows = {name: data[(data["split"] == name) & ok] for name in ("train", "val", "test")}
    pit = {name: predictive_cdf(fitted, r, r[config.target])[:, 0] for name, r in rows.items() if name != "train"}
    t0 = time.perf_counter()
    loo = loo_pit_values(fitted, rows["train"], rows["train"][config.target])
    loo_seconds = time.perf_counter() - t0
    k = loo.pareto_k
    # the maps recalibrate(rows=...) fits, from the one leave-one-out pass (tests/test_loo_pit.py checks
    # that recalibrate builds these same maps)
    maps = {
        "heldout": recalibrate(fitted, data, rows="heldout").calibration,
        "loo": Calibration(loo.pit[loo.reliable], "loo-train"),
        "loo+heldout": Calibration(np.concatenate([loo.pit[loo.reliable, 0], pit["val"]]), "loo-train+val"),
    }
    # selection on val alone
    half = np.arange(len(pit["val"])) % 2 == 0
    folds = [(half, ~half), (~half, half)]
    hits = np.zeros(len(LEVELS))
    for fit_rows, judge in folds:
        cov = _coverage(pit["val"][judge], Calibration(pit["val"][fit_rows], "val-half"))
        hits += np.array(cov) * judge.sum()
    val = {
        "raw": _coverage(pit["val"], None),
        "heldout_cv2": (hits / len(pit["val"])).tolist(),
        "heldout_in_sample": _coverage(pit["val"], maps["heldout"]),
        "loo": _coverage(pit["val"], maps["loo"]),
    }
    chosen = "loo" if _worst(val["loo"]) < _worst(val["heldout_cv2"]) else "heldout"
    test = {"raw": _coverage(pit["test"], None)} | {name: _coverage(pit["test"], m) for name, m in maps.items()}
    n_test = len(pit["test"])
    out: dict[str, Any] = {
        "meta": meta,
        "config": config.describe(),
        "configuration": "demo" if demo else "recommended",
        "seed": seed,
        "model": model or "trained in this run",
        "networks": fitted.num_networks,
        "fit_seconds": fitted.report.timings.total_seconds,
        "rows": {name: len(r) for name, r in rows.items()},
        "loo": {
            "seconds": loo_seconds,
            "relative_efficiency": loo.relative_efficiency,
            "k_threshold": loo.k_threshold,
            "rows_above_threshold": int((~loo.reliable).sum()),
            "rows_above_0.7": int(np.sum(~(k <= 0.7))),
            "rows_above_0.5": int(np.sum(~(k <= 0.5))),
            "k_quantiles_50_90_99_max": [float(np.quantile(k, q)) for q in (0.5, 0.9, 0.99, 1.0)],
            "mean_abs_loo_minus_in_sample_pit": float(
                np.mean(
                    np.abs(loo.pit[:, 0] - predictive_cdf(fitted, rows["train"], rows["train"][config.target])[:, 0])
                )
            ),
        },
        "map_rows": {name: m.n for name, m in maps.items()},
        "selection_rule": SELECTION,
        "coverage_val": val,
        "val_worst_abs_error": {name: _worst(v) for name, v in val.items() if name in ("heldout_cv2", "loo")},
        "chosen": chosen,
        "coverage_test": test,
        "mc_std_test": [math.sqrt(c * (1 - c) / n_test) for c in LEVELS],
        "pit_histogram": {
            "loo_train": np.histogram(loo.pit[loo.reliable, 0], bins=10, range=(0, 1))[0].tolist(),
            "val": np.histogram(pit["val"], bins=10, range=(0, 1))[0].tolist(),
            "test": np.histogram(pit["test"], bins=10, range=(0, 1))[0].tolist(),
        },
    }
    out["meta"] = finish_metadata(meta)
    return out


def markdown_loo(res: dict[str, Any]) -> str:
    meta, lo = res["meta"], res["loo"]
    pct = lambda v: f"{100 * v:.1f} %"  # noqa: E731
    lines = [
        "# Recalibration rows of the chi1^0 chi1^0 surrogate: val PIT against leave-one-out PIT of the training rows",
        "",
        "Generated by `benchmarks/recalibration.py --loo` from `recalibration_loo.json`; do not edit.",
        "",
        f"Configuration ({res['configuration']}): {res['config']}; seed {res['seed']}, {res['networks']} networks. "
        f"Rows: {res['rows']['train']} train, {res['rows']['val']} val, {res['rows']['test']} test. "
        f"Coverage of the exact central intervals of log10 sigma (from each row's exact PIT).",
        "",
        f"Date {meta['date']} to {meta['date_end']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at start, {meta['load_average_1_5_15_at_end']} at end "
        "(a shared machine).",
        "",
        "## Leave-one-out PIT of the training rows (PSIS)",
        "",
        f"- {lo['seconds']:.0f} s for {res['rows']['train']} rows x {res['networks']} networks "
        f"(network pass, PSIS, relative efficiency {lo['relative_efficiency']:.2f}).",
        f"- Pareto k: median {lo['k_quantiles_50_90_99_max'][0]:.2f}, 90 % {lo['k_quantiles_50_90_99_max'][1]:.2f}, "
        f"99 % {lo['k_quantiles_50_90_99_max'][2]:.2f}, max {lo['k_quantiles_50_90_99_max'][3]:.2f}; "
        f"{lo['rows_above_threshold']} rows above the threshold {lo['k_threshold']:.2f} (dropped from the map), "
        f"{lo['rows_above_0.7']} above 0.7, {lo['rows_above_0.5']} above 0.5.",
        f"- Mean |LOO-PIT - in-sample PIT| over the training rows: {lo['mean_abs_loo_minus_in_sample_pit']:.4f}.",
        f"- Rows in each map: {', '.join(f'{k} {v}' for k, v in res['map_rows'].items())}.",
        "",
        "## Selection on val (before test)",
        "",
        f"Rule: {res['selection_rule']}.",
        "",
        "| map | val 1 sigma | val 2 sigma | val 3 sigma | |",
        "|---|---|---|---|---|",
    ]
    notes = {
        "raw": "no map",
        "heldout_cv2": "heldout, two-fold CV on val (judged)",
        "heldout_in_sample": "heldout, in-sample (not judged)",
        "loo": "loo (judged)",
    }
    for name, cov in res["coverage_val"].items():
        lines.append(f"| {name} | {' | '.join(pct(c) for c in cov)} | {notes[name]} |")
    worst = res["val_worst_abs_error"]
    lines += [
        "",
        f"Largest |coverage - nominal| on val: heldout {100 * worst['heldout_cv2']:.1f} pp, "
        f"loo {100 * worst['loo']:.1f} pp; chosen: **{res['chosen']}**.",
        "",
        "## Test coverage",
        "",
        "| map | 1 sigma | 2 sigma | 3 sigma |",
        "|---|---|---|---|",
        f"| nominal | {' | '.join(pct(c) for c in LEVELS)} |",
    ]
    for name, cov in res["coverage_test"].items():
        lines.append(f"| {name} | {' | '.join(pct(c) for c in cov)} |")
    lines += [
        f"| MC std | {' | '.join(f'{100 * s:.1f} pp' for s in res['mc_std_test'])} |",
        "",
        f"PIT histograms (10 bins on [0, 1]): LOO train {res['pit_histogram']['loo_train']}; "
        f"val {res['pit_histogram']['val']}; test {res['pit_histogram']['test']}.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--full", action="store_true", help="the recommended configuration (long)")
    ap.add_argument("--table", action="store_true", help="only regenerate the Markdown from the JSON")
    ap.add_argument(
        "--loo", action="store_true", help="compare the rows the map is fitted on (with --full: recommended)"
    )
    ap.add_argument("--model", help="with --loo: a saved fit of the recommended configuration to reuse")
    ap.add_argument("--save", help="with --loo: where to save the fit it trains")
    args = ap.parse_args()
    if args.loo:
        import json

        if not args.table:
            res = measure_loo(args.seed, args.model, args.save, demo=not args.full)
            print(json.dumps({"val": res["coverage_val"], "chosen": res["chosen"]}, indent=1))
            write_json(RESULTS_LOO, res)
        res = json.loads(RESULTS_LOO.read_text())
        write_text_atomic(RESULTS_LOO.with_suffix(".md"), markdown_loo(res))
        return
    if not args.table:
        import json

        res = measure(args.seed, args.full)
        print(json.dumps(res["coverage_test"], indent=1))
        write_json(RESULTS, res)
    import json

    res = json.loads(RESULTS.read_text())
    write_text_atomic(RESULTS.with_suffix(".md"), markdown(res))


if __name__ == "__main__":
    main()
