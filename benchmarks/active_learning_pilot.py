"""The active-learning benchmark's fit budget, chosen on the val rows: does random sampling's error fall with points?

The simulation (``benchmarks/active_learning.py``) runs hundreds of fits, so its fit is a reduced
deep ensemble; a budget too small to use more points would make every criterion look alike (more
points would not lower anyone's error). For each process and number of Adam steps this script fits
the benchmark's ensemble (:func:`active_learning.fit_spec`) on the first 500 and 4,000 rows of a
seeded permutation of the pool (the process's ``train`` rows) and scores it on the process's ``val``
rows (never the ``test`` rows): median relative error in percent, R^2 of log10 sigma, 95 % coverage
and the fit's seconds. The chosen budget is the smallest whose val error at 4,000 rows is within 10 %
of the lowest at 4,000 rows over the budgets tried, per process (written in the Markdown).

``--loops``: the loop's refits, warm (from the previous round's networks) or cold (from fresh
initialisations). For each process and start, the random loop of the benchmark (batches of 500
from 500 to 4,000 rows, the first budget of ``--steps``, audit rows as in the benchmark) is scored
on the val rows after every fit; the start with the lower mean val error over the loop's fits is
chosen, per process.

Usage: ``python benchmarks/active_learning_pilot.py [--processes ...] [--steps 1500 5000]`` (the
budgets); ``--loops --out L.json`` (warm against cold, with the first of ``--steps``), then
``--merge-loops L.json`` to add those loops to the results; resumable (records already in the JSON
are kept).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS_DIR, finish_metadata, markdown_table, meta_lines, run_metadata, write  # noqa: E402
from active_learning import AUDIT, PROCESSES, fit_spec, split_rows, test_scores  # noqa: E402

RESULTS = RESULTS_DIR / "active_learning_pilot.json"
SIZES = (500, 4000)
#: The chosen budget's val error at 4,000 rows is within this factor of the best budget's.
TOLERANCE = 1.10


def run_cell(process: str, steps: int, n: int, seed: int) -> dict:
    """One fit on ``n`` pool rows with ``steps`` Adam steps, scored on the val rows."""
    from sigmabnn.fitting.run import run_fit

    spec = fit_spec(process, seed, steps, (20, 20))
    target = spec.data.target
    pool, val = split_rows(target, "train"), split_rows(target, "val")
    rows = pool.iloc[np.random.default_rng(seed).permutation(len(pool))[:n]]
    t0 = time.perf_counter()
    fitted, _ = run_fit(rows, spec, progress=False)
    seconds = time.perf_counter() - t0
    scores = {k.replace("test_", "val_"): v for k, v in test_scores(fitted, val, target).items()}
    return {"process": process, "steps": steps, "n_train": n, "seed": seed, **scores, "seconds": seconds}


def run_loop_cells(process: str, steps: int, warm: bool, seed: int, workdir: Path) -> list[dict]:
    """The benchmark's random loop with warm or cold refits, every fit scored on the val rows."""
    from sigmabnn.workflows.active import LoopConfig, run_loop

    spec = fit_spec(process, seed, steps, (20, 20))
    target = spec.data.target
    pool, val = split_rows(target, "train"), split_rows(target, "val")

    def oracle(rows):
        return rows.merge(pool[["point_id", target]], on="point_id", how="left")

    config = LoopConfig(spec=spec, batch_size=500, max_labelled=4000, criterion="random", initial_size=500,
                        seed=seed, warm_start=warm, audit_fraction=AUDIT)  # fmt: skip
    scores = lambda f: {k.replace("test_", "val_"): v for k, v in test_scores(f, val, target).items()}  # noqa: E731
    result = run_loop(workdir / f"{process}_{steps}_{warm}_{seed}", pool.drop(columns=[target]), oracle, config,
                      evaluate=scores)  # fmt: skip
    return [{"process": process, "steps": steps, "warm_start": warm, "seed": seed, "n_train": h["n_labelled"],
             **{k: h[k] for k in ("val_median_rel_err", "val_r2_log", "coverage_68", "coverage_95")},
             "seconds": h["fit_seconds"]} for h in result.history]  # fmt: skip


def choose_start(loops: list[dict]) -> dict[str, bool]:
    """Per process: warm (``True``) or cold refits, the lower mean val error over the loop's fits."""
    out = {}
    for process in dict.fromkeys(r["process"] for r in loops):
        mine = [r for r in loops if r["process"] == process]
        mean = {w: np.mean([r["val_median_rel_err"] for r in mine if r["warm_start"] == w])
                for w in (True, False) if any(r["warm_start"] == w for r in mine)}  # fmt: skip
        if len(mean) == 2:
            out[process] = bool(mean[True] <= mean[False])
    return out


def choose(records: list[dict]) -> dict[str, int]:
    """Per process: the smallest budget within :data:`TOLERANCE` of the best val error at the largest size."""
    out = {}
    for process in dict.fromkeys(r["process"] for r in records):
        big = [r for r in records if r["process"] == process and r["n_train"] == max(SIZES)]
        if not big:
            continue
        best = min(r["val_median_rel_err"] for r in big)
        out[process] = min(r["steps"] for r in big if r["val_median_rel_err"] <= TOLERANCE * best)
    return out


def render(data: dict) -> str:
    cols = [("process", "process", ""), ("steps", "Adam steps", ""), ("n_train", "rows", ""),
            ("val_median_rel_err", "val median rel err %", ".2f"), ("val_r2_log", "val R^2 log", ".4f"),
            ("coverage_95", "val cov 95", ".1f"), ("seconds", "fit s", ".1f")]  # fmt: skip
    chosen = choose(data["records"])
    loops = data.get("loops", [])
    loop_cols = [("process", "process", ""), ("steps", "Adam steps", ""), ("warm_start", "warm", ""),
                 ("n_train", "rows", ""), ("val_median_rel_err", "val median rel err %", ".2f"),
                 ("coverage_95", "val cov 95", ".1f"), ("seconds", "fit s", ".1f")]  # fmt: skip
    starts = choose_start(loops)
    loop_text = (
        "\n## Warm or cold refits (`--loops`)\n\n"
        + markdown_table(loops, loop_cols)
        + "\nChosen (lower mean val error over the loop's fits): "
        + ", ".join(f"{p}: {'warm' if w else 'cold'}" for p, w in starts.items())
        + "\n\n"
        if loops
        else ""
    )
    return (
        "# Active learning: the fit budget (`benchmarks/active_learning_pilot.py`)\n\n"
        + (__doc__ or "").split("Usage:")[0].strip()
        + "\n\n"
        + markdown_table(data["records"], cols)
        + "\nChosen (smallest budget within 10 % of the best val error at 4,000 rows): "
        + ", ".join(f"{p}: {s} steps" for p, s in chosen.items())
        + "\n\n"
        + loop_text
        + meta_lines(data["meta"])
        + (
            "\nThe loops (`--loops`, run separately): " + meta_lines(data["loops_meta"])
            if data.get("loops_meta")
            else ""
        )
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", nargs="+", default=list(PROCESSES))
    p.add_argument("--steps", nargs="+", type=int, default=[1500, 5000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--loops", action="store_true", help="warm against cold refits (module docstring)")
    p.add_argument("--merge-loops", type=Path, help="add the loops of this --loops result file to --out")
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "sigmabnn_al_pilot")
    args = p.parse_args(argv)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    records, meta = old.get("records", []), old.get("meta") or run_metadata("benchmarks/active_learning_pilot.py")
    loops, meta_loops = old.get("loops", []), old.get("loops_meta")

    def save(finish: bool = True) -> None:
        data = {"meta": finish_metadata(meta) if finish else meta, "records": records, "chosen": choose(records),
                "loops": loops, "chosen_start": choose_start(loops), "loops_meta": meta_loops}  # fmt: skip
        write(args.out, data, render(data))

    if args.merge_loops:  # the loops of a --loops run written to another file
        part = json.loads(args.merge_loops.read_text())
        loops += [
            r
            for r in part["loops"]
            if (r["process"], r["warm_start"]) not in {(x["process"], x["warm_start"]) for x in loops}
        ]
        meta_loops = part["meta"]
        save(finish=False)  # the budget cells' own end stays
        return 0
    if args.loops:
        done = {(r["process"], r["warm_start"]) for r in loops}
        for process in args.processes:
            for warm in (True, False):
                if (process, warm) not in done:
                    loops += run_loop_cells(process, args.steps[0], warm, args.seed, args.workdir)
                    save()
        return 0
    done = {(r["process"], r["steps"], r["n_train"]) for r in records}
    for process in args.processes:
        for steps in args.steps:
            for n in SIZES:
                if (process, steps, n) in done:
                    continue
                records.append(run_cell(process, steps, n, args.seed))
                print(json.dumps(records[-1]), flush=True)
                save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
