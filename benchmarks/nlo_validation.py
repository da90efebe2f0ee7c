"""Choose the NLO surrogates' configuration on rows held out of the training split, across process kinds.

Every choice of the configuration ``sigmabnn train-all`` uses (run length, chains, physics
features) is made here, never on the ``test`` split. The ``test`` rows are removed from the
table before anything else; a fixed 15 % of the ``train`` rows (seeded, the same for every
candidate) are held out as *selection* rows; each candidate is trained on the remaining
training rows (its intervals recalibrated on the ``val`` rows, as the configuration does) and
scored on the selection rows: R^2 of log10 sigma, median relative error, the negative log
predictive density of log10 sigma (NLL, a proper score of the whole predictive distribution)
and the coverage of the central 68.3 / 95.4 / 99.7 % intervals.

Processes (:data:`PROCESSES`): two neutralino pairs, a neutralino-chargino pair and a chargino
pair, so the choice is not made on one kind of process. Candidates (:data:`CANDIDATES`):
overrides of :func:`sigmabnn.workflows.nlo.recommended_config`.

Rule (:func:`choose`, fixed before any candidate ran): among the candidates trained on every
process whose training time is within :data:`BUDGET_SECONDS` on every process, the one with the
smallest mean NLL excess over the best candidate of each process.

Each fit's record is a file ``results/nlo_validation/<process>__<candidate>.json`` (written
atomically; a rerun skips the records that exist, so runs resume and several can run at once,
e.g. pinned to different cores); ``--table`` merges them into ``results/nlo_validation.json``
and ``.md``.

Usage: ``python benchmarks/nlo_validation.py [--process P ...] [--candidate C ...]``, then
``python benchmarks/nlo_validation.py --table``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, run_metadata, write, write_json  # noqa: E402
from sigmabnn.data.features import as_derived  # noqa: E402
from sigmabnn.datasets import load_ewino  # noqa: E402
from sigmabnn.evaluate.metrics import evaluate  # noqa: E402
from sigmabnn.evaluate.report import score_splits  # noqa: E402
from sigmabnn.io.model_file import to_jsonable  # noqa: E402
from sigmabnn.physics.amplitude_features import (  # noqa: E402
    coupling_features,
    proxy_features,
    recommended_features,
    resonance_features,
)
from sigmabnn.physics.processes import parse_process  # noqa: E402
from sigmabnn.workflows import nlo  # noqa: E402

RECORDS_DIR = RESULTS_DIR / "nlo_validation"
JSON_PATH = RESULTS_DIR / "nlo_validation.json"
SEED = 0
SELECT_FRACTION = 0.15
BUDGET_SECONDS = 300.0
"""The issue's training budget per process (2 idle cores); here measured on one core, so conservative."""

PROCESSES: dict[str, str] = {
    "1000022,1000022": "neutralino pair",
    "1000023,1000023": "neutralino pair",
    "1000023,1000024": "neutralino-chargino",
    "1000024,-1000037": "chargino pair",
}

SHORT = {"map_steps": 3000, "map_learning_rate": 1e-2, "num_chains": 2, "num_warmup": 100, "num_samples": 50}
CANDIDATES: dict[str, dict[str, Any]] = {
    "short": SHORT,
    "many_short": {**SHORT, "num_chains": 8, "num_samples": 25},
    "previous_features": {**SHORT, "features_kind": "previous"},
    "short_masses": {**SHORT, "features_kind": "masses"},
    "mid": {"map_steps": 6000, "map_learning_rate": 5e-3, "num_chains": 4, "num_warmup": 150, "num_samples": 75},
    "short_wide": {**SHORT, "hidden": (32, 32)},
    "short_df5": {**SHORT, "noise_df": 5.0},
    "many_short_equal_cost": {
        **SHORT,
        "map_steps": 600,
        "map_lbfgs_steps": 200,
        "num_chains": 8,
        "num_warmup": 50,
        "num_samples": 10,
    },
}
"""Overrides of the recommended configuration. ``features_kind``: ``"masses"``, only the ``log|m|``
features; ``"previous"``, the neutralino pairs' proxies as they were before they were re-chosen by
cross-validation inside the training rows (``s_eff = 2 (|m_i| + |m_j|)^2 + 4e4``, contact factor 2;
``benchmarks/nlo_proxy_cv.py``), a check at the network's level of that linear choice (the other
kinds are unchanged, so there the candidate is ``short`` itself and its record is shared).
``many_short_equal_cost`` (added after ``short`` was chosen, and judged by the same rule): eight
chains from eight MAP starts at about the gradient evaluations of ``short``, the equal-cost
comparison of Sommer et al. (2024, arXiv:2402.01484), each start and chain shortened to fit.
``short_wide`` and ``short_df5`` (added with it): the architecture (32-32 instead of 20-20) and the
Student-t head's degrees of freedom (5 instead of 3), which were chosen on chi1^0 chi1^0 partly by
its test split, put to the held-out rule."""


def config_for(process: str, candidate: str) -> nlo.NLOConfig:
    """The :class:`~sigmabnn.workflows.nlo.NLOConfig` of ``candidate`` for ``process``."""
    overrides = dict(CANDIDATES[candidate])
    features = overrides.pop("features_kind", "physics")
    if features == "masses":
        masses = tuple(d for d in recommended_features(process) if as_derived(d).name.startswith("lam_"))
        overrides |= {"derive": masses, "baseline": ()}
    elif features == "previous":
        proc = parse_process(process)
        derive = coupling_features(proc, interference=True) + proxy_features(proc, shat_factor=2.0, shat_offset=4e4)
        overrides["derive"] = tuple(derive + resonance_features(proc, contact=2.0))
    return nlo.recommended_config(process, **overrides)


def selection_table(seed: int = SEED) -> pd.DataFrame:
    """The built-in table without its test rows; ``SELECT_FRACTION`` of the train rows relabelled ``select``.

    The fit reads only ``train`` (and ``val`` for recalibration); the selection rows are labelled
    ``test`` inside the fit's table so the fit ignores them, and nothing else ever sees the real
    test rows.
    """
    df = load_ewino()
    df = df[df["split"] != "test"].reset_index(drop=True)
    train = np.flatnonzero(df["split"].to_numpy() == "train")
    rng = np.random.default_rng(seed)
    chosen = rng.choice(train, size=round(SELECT_FRACTION * train.size), replace=False)
    split = df["split"].to_numpy().copy()
    split[chosen] = "test"
    return df.assign(split=split)


def record_path(process: str, candidate: str) -> Path:
    return RECORDS_DIR / f"{process.replace(',', '_')}__{candidate}.json"


def _timed_fit(process: str, candidate: str, table: pd.DataFrame) -> tuple[Any, Any, pd.DataFrame, dict[str, Any]]:
    """Train ``candidate`` on ``process``'s training rows: its config, result, selection rows and timing.

    The timing: wall seconds, the 1-minute load average (mean of before and after) and the cores
    this process may use.
    """
    config = config_for(process, candidate)
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    result = nlo.train_process(SEED, process, config, data=table, progress=False, score=False)
    timing = {
        "train_seconds": time.perf_counter() - t0,
        "load_average": (load_before + os.getloadavg()[0]) / 2,
        "cpu_affinity": sorted(os.sched_getaffinity(0)),
    }
    rows = table[(table["split"] == "test") & table[config.target].notna() & (table[config.target] > 0)]
    return config, result, rows, timing


def run_one(process: str, candidate: str, table: pd.DataFrame) -> dict[str, Any]:
    """Train ``candidate`` on ``process``'s training rows and score it on the selection rows."""
    config, result, rows, timing = _timed_fit(process, candidate, table)
    m = score_splits(result.fitted, {"select": rows})["select"]
    nll = evaluate(result.fitted, rows, rows)["log10"]["nll"]
    sampler = result.report.sampler
    return to_jsonable(
        {
            "process": process,
            "kind": PROCESSES.get(process, parse_process(process).label),
            "candidate": candidate,
            "description": config.describe(),
            "n_select": m["n"],
            "r2_log": m["r2_log"],
            "median_rel_err": m["rel_err"]["q0.5"],
            "p99_rel_err": m["rel_err"]["q0.99"],
            "nll_log10": nll,
            "coverage": list(m["coverage_interval"].values()),
            "grad_evals": sampler.num_grad_evals,
            "rhat_predictions": sampler.rhat_predictions,
            **timing,
            "settings": config._asdict(),
        }
    )


def retime(process: str, candidate: str, table: pd.DataFrame) -> dict[str, Any]:
    """Rerun ``candidate``'s fit on ``process`` for its time alone (on the cores this process may use).

    Returns the timing: seconds, load average, cores, gradient evaluations and the selection-row
    NLL (the same fit as the record's, so the NLL shows the rerun reproduced it).
    """
    _, result, rows, timing = _timed_fit(process, candidate, table)
    return to_jsonable(
        {
            **timing,
            "grad_evals": result.report.sampler.num_grad_evals,
            "nll_log10": evaluate(result.fitted, rows, rows)["log10"]["nll"],
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }
    )


QUIET_LOAD = 2.5
"""A timing counts against the budget only when the 1-minute load average during the fit was at most this."""
RULE = (
    f"among the candidates trained on every process and not shown to exceed {BUDGET_SECONDS:.0f} s on any process, "
    "the one with the smallest mean (over processes) excess of selection-row NLL over the process's best candidate. "
    f"A timing shows an excess only when measured at a 1-minute load average of at most {QUIET_LOAD:g}, "
    "on 2 cores (the budget's own condition)."
)
AMENDMENT = (
    "The budget check was amended after the first table: as first written it used every timing, and it chose "
    "`short_masses`, the worst candidate by NLL on every process, only because its fits ran in a quieter hour "
    "(on chi1^0 chi1^0 `short` took 582 s and `previous_features`, the same network, run length and gradient "
    "count, 118 s on the same core). Timings "
    "under load decide nothing until they are rerun on a quiet machine; the gradient evaluations are the "
    "load-free measure of cost beside them. The first runs were pinned to one core each (two fits side by side); "
    "the budget is stated for 2 idle cores, so the budget is checked on reruns of the same fits on both cores of "
    "a quiet machine (`--retime`), each rerun's seconds and load recorded beside the first run's."
)


def _timings(record: dict[str, Any]) -> list[dict[str, Any]]:
    """Every timing of the record's fit: the first run's and the reruns of ``--retime``."""
    first = {k: record[k] for k in ("train_seconds", "load_average", "cpu_affinity")}
    return [first] + list(record.get("retimes", []))


def _shows_excess(timing: dict[str, Any]) -> bool:
    """A timing over the budget, on at least 2 cores (the issue's budget) at a quiet load."""
    quiet = timing["load_average"] <= QUIET_LOAD and len(timing["cpu_affinity"]) >= 2
    return quiet and timing["train_seconds"] > BUDGET_SECONDS


def _over_budget(record: dict[str, Any]) -> bool:
    return any(_shows_excess(t) for t in _timings(record))


def _quiet_seconds(record: dict[str, Any]) -> float | None:
    """The fastest quiet 2-core timing of the record, or ``None``."""
    quiet = [
        t["train_seconds"] for t in _timings(record) if t["load_average"] <= QUIET_LOAD and len(t["cpu_affinity"]) >= 2
    ]
    return min(quiet) if quiet else None


def choose(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring; returns the chosen candidate and the table behind it."""
    processes = sorted({r["process"] for r in records})
    by = {(r["process"], r["candidate"]): r for r in records}
    complete = [c for c in CANDIDATES if all((p, c) in by for p in processes)]
    best = {p: min(by[p, c]["nll_log10"] for c in complete) for p in processes}
    rows = []
    for c in complete:
        worst_time = max(by[p, c]["train_seconds"] for p in processes)
        over = [p for p in processes if _over_budget(by[p, c])]
        excess = float(np.mean([by[p, c]["nll_log10"] - best[p] for p in processes]))
        grads = float(np.mean([by[p, c]["grad_evals"] for p in processes]))
        quiet = [_quiet_seconds(by[p, c]) for p in processes]
        worst_quiet = max(quiet) if all(q is not None for q in quiet) else None
        rows.append(
            {"candidate": c, "mean_nll_excess": excess, "worst_seconds": worst_time, "over_budget": over,
             "mean_grad_evals": grads, "worst_quiet_seconds": worst_quiet}
        )  # fmt: skip
    eligible = [r for r in rows if not r["over_budget"]]
    chosen = min(eligible or rows, key=lambda r: r["mean_nll_excess"])["candidate"] if rows else None
    return {"chosen": chosen, "within_budget": bool(eligible), "candidates": rows, "processes": processes}


def _seconds(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f}"


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def markdown(out: dict[str, Any]) -> str:
    records, choice = out["records"], out["choice"]
    lines = [
        "# NLO configuration chosen on held-out training rows (generated by `benchmarks/nlo_validation.py`)",
        "",
        f"The test split is removed first; {100 * SELECT_FRACTION:.0f} % of the train rows (seed {SEED}) are "
        "held out as selection rows; each candidate trains on the rest (intervals recalibrated on the val rows) "
        "and is scored on the selection rows. Times are wall seconds pinned to the cores listed, the machine "
        "shared with other jobs (1-minute load average beside each).",
        "",
        "| process | kind | candidate | n | R^2 log | median rel. err. | p99 rel. err. | NLL log10 | cov 68/95/99.7 "
        "| train s | cores | load | grad evals | R-hat (pred.) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in sorted(records, key=lambda r: (r["process"], list(CANDIDATES).index(r["candidate"]))):
        cov = "/".join(f"{100 * v:.1f}" for v in r["coverage"])
        rhat = r["rhat_predictions"]
        same = f" (= {r['same_as']})" if r.get("same_as") else ""
        lines.append(
            f"| {r['process']} | {r['kind']} | {r['candidate']}{same} | {r['n_select']} | {r['r2_log']:.4f} "
            f"| {_pct(r['median_rel_err'])} | {_pct(r['p99_rel_err'])} | {r['nll_log10']:.3f} | {cov} % "
            f"| {r['train_seconds']:.0f} | {len(r['cpu_affinity'])} | {r['load_average']:.1f} | {r['grad_evals']:,} "
            f"| {'-' if rhat is None else f'{rhat:.2f}'} |"
        )
    lines += ["", "Candidates:", ""]
    ran = {r["candidate"] for r in records}
    lines += [f"- `{c}`: {json.dumps(v)}{'' if c in ran else ' (not run)'}" for c, v in CANDIDATES.items()]
    lines += [
        "",
        "## Choice",
        "",
        f"Rule (fixed before any candidate ran, its budget check amended as below): {RULE}",
        "",
    ]
    lines += [AMENDMENT, ""]
    lines += [
        "| candidate | mean NLL excess | mean grad evals | worst train s (first runs; load in the table above) "
        "| worst train s (quiet, 2 cores) | over budget (quiet) |"
    ]
    lines += ["|---|---|---|---|---|---|"]
    lines += [
        f"| {r['candidate']} | {r['mean_nll_excess']:.4f} | {r['mean_grad_evals']:,.0f} | {r['worst_seconds']:.0f} "
        f"| {_seconds(r.get('worst_quiet_seconds'))} "
        f"| {', '.join(r['over_budget']) or '-'} |"
        for r in choice["candidates"]
    ]
    lines += _retime_lines(records)
    budget = "" if choice["within_budget"] else f" (every candidate over {BUDGET_SECONDS:.0f} s on a quiet machine)"
    lines += ["", f"Chosen: `{choice['chosen']}`{budget}.", ""]
    return "\n".join(lines)


def _retime_lines(records: list[dict[str, Any]]) -> list[str]:
    rows = [(r, t) for r in records if not r.get("same_as") for t in r.get("retimes", [])]
    if not rows:
        return []
    lines = ["", "Reruns for time (`--retime`, unpinned):", ""]
    lines += [
        "| process | candidate | train s | cores | load | grad evals | NLL log10 (first run) |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {r['process']} | {r['candidate']} | {t['train_seconds']:.0f} | {len(t['cpu_affinity'])} "
        f"| {t['load_average']:.1f} | {t['grad_evals']:,} | {t['nll_log10']:.3f} ({r['nll_log10']:.3f}) |"
        for r, t in rows
    ]
    return lines


def table() -> None:
    records = [json.loads(p.read_text()) for p in sorted(RECORDS_DIR.glob("*.json"))]
    out = {"benchmark": run_metadata("benchmarks/nlo_validation.py"), "records": records, "choice": choose(records)}
    out["benchmark"] = finish_metadata(out["benchmark"])
    write(JSON_PATH, out, markdown(out))
    print(f"chosen: {out['choice']['chosen']}")


def _retime_all(candidates: list[str], processes: list[str], data: pd.DataFrame) -> None:
    for candidate in candidates:
        for process in processes:
            path = record_path(process, candidate)
            if not path.exists():
                continue
            record = json.loads(path.read_text())
            if record.get("same_as") or _quiet_seconds(record) is not None:
                continue
            timing = retime(process, candidate, data)
            record["retimes"] = list(record.get("retimes", [])) + [timing]
            write_json(path, record)
            print(
                f"{process} {candidate}: {timing['train_seconds']:.0f} s on {len(timing['cpu_affinity'])} cores, "
                f"load {timing['load_average']:.1f}",
                flush=True,
            )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--process", action="append", help=f"process (repeatable; default {', '.join(PROCESSES)})")
    p.add_argument("--candidate", action="append", choices=list(CANDIDATES), help="candidate (repeatable; default all)")
    p.add_argument("--table", action="store_true", help="only merge the records into the JSON and Markdown")
    p.add_argument(
        "--retime",
        action="store_true",
        help="rerun the fits that have records (not shared ones) for their time alone, unless they already "
        "have a quiet 2-core timing; append it to the record",
    )
    args = p.parse_args(argv)
    if args.table:
        table()
        return 0
    data = selection_table()
    if args.retime:
        _retime_all(args.candidate or list(CANDIDATES), args.process or list(PROCESSES), data)
        return 0
    RECORDS_DIR.mkdir(parents=True, exist_ok=True)
    for candidate in args.candidate or list(CANDIDATES):  # candidate-major: a partial run compares on every process
        for process in args.process or list(PROCESSES):
            path = record_path(process, candidate)
            if path.exists():
                print(f"{process} {candidate}: done earlier", flush=True)
                continue
            same = [
                c for c in CANDIDATES if c != candidate and config_for(process, c) == config_for(process, candidate)
            ]
            if same and record_path(process, same[0]).exists():  # an identical configuration ran: share its record
                record = json.loads(record_path(process, same[0]).read_text()) | {"candidate": candidate}
                record["same_as"] = same[0]
            else:
                record = run_one(process, candidate, data)
            write_json(path, record)
            print(
                f"{process} {candidate}: {record['train_seconds']:.0f} s, NLL {record['nll_log10']:.3f}, "
                f"median rel. err. {_pct(record['median_rel_err'])}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
