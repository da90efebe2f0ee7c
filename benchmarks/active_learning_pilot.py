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

``--criterion-loops C ...``: the same choice for each criterion's own loop (warm refits help some
criteria and not others: a loop's picks depend on its fits). For each process, criterion and seed of
``--loop-seeds`` (default 100-102, none of the benchmark's), the benchmark's loop of that criterion
(batches of 250 from 500 to 2,000 rows, the process's chosen budget, audit rows) runs warm and cold,
every fit scored on the val rows; per process and criterion the start with the lower mean val error
over the loops' fits is chosen (``choose_criterion_start``). The rule was fixed before these runs.
With ``--starts process`` each criterion runs only at the process's refits (the random loop's
choice); the criteria are then compared there (``compare_criteria``): the library's default
criterion is the one with the lowest mean val error over its loops' fits on the most processes.

Usage: ``python benchmarks/active_learning_pilot.py [--processes ...] [--steps 1500 5000]`` (the
budgets); ``--loops --out L.json`` (warm against cold, with the first of ``--steps``), then
``--merge-loops L.json`` to add those loops to the results; ``--criterion-loops epig --out P.json``
(one worker per process, side by side) then ``--merge-criterion-loops P.json ...``; resumable
(records already in the JSON are kept).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS_DIR, finish_metadata, markdown_table, meta_lines, run_metadata, write  # noqa: E402
from active_learning import AUDIT, PROCESSES, fit_spec, num_steps, split_rows, test_scores  # noqa: E402

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


def run_loop_cells(
    process: str,
    steps: int,
    warm: bool,
    seed: int,
    workdir: Path,
    criterion: str = "random",
) -> list[dict]:
    """The benchmark's loop of ``criterion`` with warm or cold refits, every fit scored on the val rows.

    ``random`` takes the benchmark's random batches (500 rows up to 4,000); a criterion its batches of
    250 rows up to 2,000 (greedy conditioned batches, as ``active_learning.run_one``)."""
    from sigmabnn.workflows.active import LoopConfig, run_loop

    spec = fit_spec(process, seed, steps, (20, 20))
    target = spec.data.target
    pool, val = split_rows(target, "train"), split_rows(target, "val")

    def oracle(rows):
        return rows.merge(pool[["point_id", target]], on="point_id", how="left")

    size, limit = (500, 4000) if criterion == "random" else (250, 2000)
    config = LoopConfig(spec=spec, batch_size=size, max_labelled=limit, criterion=criterion, initial_size=500,
                        seed=seed, warm_start=warm, audit_fraction=AUDIT)  # fmt: skip
    scores = lambda f: {k.replace("test_", "val_"): v for k, v in test_scores(f, val, target).items()}  # noqa: E731
    name = f"{process}_{steps}_{warm}_{seed}" + ("" if criterion == "random" else f"_{criterion}")
    result = run_loop(workdir / name, pool.drop(columns=[target]), oracle, config, evaluate=scores)
    return [{"process": process, "criterion": criterion, "steps": steps, "warm_start": warm, "seed": seed,
             "n_train": h["n_labelled"],
             **{k: h[k] for k in ("val_median_rel_err", "val_r2_log", "coverage_68", "coverage_95")},
             "seconds": h["fit_seconds"] + h.get("choose_seconds", 0.0)} for h in result.history]  # fmt: skip


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


def process_starts(loops: list[dict]) -> dict[str, bool]:
    """Per process, the random loop's refits (:func:`choose_start`) of ``loops``, or where those are not in the
    file being written (a worker's part file) those of the committed results (:data:`RESULTS`)."""
    if loops or not RESULTS.exists():
        return choose_start(loops)
    return {p: bool(w) for p, w in json.loads(RESULTS.read_text()).get("chosen_start", {}).items()}


def choose_criterion_start(loops: list[dict]) -> dict[str, bool]:
    """Per ``"process|criterion"``: warm (``True``) or cold refits for that criterion's loop, by
    :func:`choose_start`'s rule over the seeds run with both starts."""
    out = {}
    for criterion in dict.fromkeys(r["criterion"] for r in loops):
        mine = [r for r in loops if r["criterion"] == criterion]
        both = {(r["process"], r["seed"]) for r in mine if r["warm_start"]} & {
            (r["process"], r["seed"]) for r in mine if not r["warm_start"]
        }
        for process, warm in choose_start([r for r in mine if (r["process"], r["seed"]) in both]).items():
            out[f"{process}|{criterion}"] = warm
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
    criterion_text = criterion_loops_text(data.get("criterion_loops", []), data.get("criterion_loops_meta", []))
    criterion_text += compare_text(data.get("criteria_compared", {}))
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
        + criterion_text
    )


def compare_criteria(crit_loops: list[dict], starts: dict[str, bool]) -> dict[str, Any]:
    """The criteria compared at each process's refits (``starts``, the random loop's choice), on the seeds
    every criterion ran there: per process each criterion's mean val error over its loops' fits and the
    lowest (``best``); ``default``: the criterion lowest on the most processes (ties: the lower mean,
    over processes, of its error over the lowest)."""
    per: dict[str, dict[str, float]] = {}
    for process, warm in starts.items():
        mine = [r for r in crit_loops if r["process"] == process and r["warm_start"] == warm]
        crits = list(dict.fromkeys(r["criterion"] for r in mine))
        seeds = set.intersection(*({r["seed"] for r in mine if r["criterion"] == c} for c in crits)) if crits else set()
        if len(crits) > 1 and seeds:
            errs = {c: [r["val_median_rel_err"] for r in mine if r["criterion"] == c and r["seed"] in seeds]
                    for c in crits}  # fmt: skip
            per[process] = {c: float(np.mean(e)) for c, e in errs.items()}
    if not per:
        return {}
    crits = sorted(set.intersection(*(set(v) for v in per.values())))
    wins = {c: sum(min(v, key=v.get) == c for v in per.values()) for c in crits}
    excess = {c: float(np.mean([v[c] / min(v.values()) for v in per.values()])) for c in crits}
    default = min(crits, key=lambda c: (-wins[c], excess[c]))
    return {"per_process": per, "best": {p: min(v, key=v.get) for p, v in per.items()}, "wins": wins,
            "excess": excess, "default": default}  # fmt: skip


def compare_text(comparison: dict[str, Any]) -> str:
    """The Markdown of :func:`compare_criteria`."""
    if not comparison:
        return ""
    rows = [{"process": p, **{c: e for c, e in v.items()}, "best": comparison["best"][p]}
            for p, v in comparison["per_process"].items()]  # fmt: skip
    crits = sorted({c for v in comparison["per_process"].values() for c in v})
    cols = [("process", "process", ""), *[(c, f"{c} (mean val err %)", ".3f") for c in crits], ("best", "lowest", "")]
    return (
        "\n## The criteria compared (`--criterion-loops ... --starts process`)\n\n"
        "Each criterion's loop at the process's refits (the random loop's choice above), on the seeds every "
        "criterion ran there; the mean val error over the loops' fits (500 to 2,000 rows). The library's default "
        "criterion is the one lowest on the most processes (ties: the lower mean ratio to the lowest); rule fixed "
        "before these runs.\n\n"
        + markdown_table(rows, cols)
        + f"\nLowest on: {', '.join(f'{c} {w}' for c, w in comparison['wins'].items())} of "
        f"{len(comparison['per_process'])} processes. **Default: `{comparison['default']}`**.\n\n"
    )


def criterion_loops_text(loops: list[dict], metas: list[dict]) -> str:
    """The Markdown of ``--criterion-loops``: mean val error over seeds per fit, and the choice."""
    if not loops:
        return ""
    keys = dict.fromkeys((r["process"], r["criterion"], r["warm_start"], r["n_train"]) for r in loops)
    rows = []
    for process, criterion, warm, n in keys:
        mine = [r for r in loops if (r["process"], r["criterion"], r["warm_start"], r["n_train"]) == (process,
                criterion, warm, n)]  # fmt: skip
        rows.append({"process": process, "criterion": criterion, "warm_start": warm, "n_train": n,
                     "seeds": len(mine), "steps": mine[0]["steps"],
                     **{k: float(np.mean([r[k] for r in mine])) for k in ("val_median_rel_err", "coverage_95",
                                                                          "seconds")}})  # fmt: skip
    cols = [("process", "process", ""), ("criterion", "criterion", ""), ("steps", "Adam steps", ""),
            ("warm_start", "warm", ""), ("n_train", "rows", ""), ("seeds", "seeds", ""),
            ("val_median_rel_err", "val median rel err % (mean)", ".2f"), ("coverage_95", "val cov 95", ".1f"),
            ("seconds", "s (mean)", ".1f")]  # fmt: skip
    starts = choose_criterion_start(loops)
    return (
        "\n## Warm or cold refits per criterion (`--criterion-loops`)\n\n"
        "Each criterion's own loop (batches of 250 from 500 to 2,000 rows, the process's chosen Adam budget, "
        "audit rows as in the benchmark), warm and cold, on the seeds below (not the benchmark's seeds), every fit "
        "scored on the val rows; per process and criterion the start with the lower mean val error over the "
        "loops' fits is chosen (the rule of `--loops`, fixed before these runs). The benchmark counts a "
        "criterion's runs towards the goal only with the start chosen here (`active_learning.py`).\n\n"
        + markdown_table(rows, cols)
        + "\nChosen: "
        + ", ".join(f"{k.replace('|', ' ')}: {'warm' if w else 'cold'}" for k, w in starts.items())
        + "\n\n"
        + "".join("Criterion loops: " + meta_lines(m) for m in metas)
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--processes", nargs="+", default=list(PROCESSES))
    p.add_argument("--steps", nargs="+", type=int, default=[1500, 5000])
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument("--loops", action="store_true", help="warm against cold refits (module docstring)")
    p.add_argument("--merge-loops", type=Path, help="add the loops of this --loops result file to --out")
    p.add_argument(
        "--criterion-loops",
        nargs="+",
        metavar="CRITERION",
        help="each criterion's loop, warm against cold (criterion_loops_text)",
    )
    p.add_argument("--loop-seeds", nargs="+", type=int, default=[100, 101, 102], help="seeds of --criterion-loops")
    p.add_argument(
        "--starts",
        choices=("both", "process"),
        default="both",
        help="--criterion-loops: warm and cold, or only the process's refits (the random loop's choice)",
    )
    p.add_argument(
        "--merge-criterion-loops",
        nargs="+",
        type=Path,
        metavar="PART",
        help="add the criterion loops of these --criterion-loops result files to --out",
    )
    p.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "sigmabnn_al_pilot")
    args = p.parse_args(argv)
    old = json.loads(args.out.read_text()) if args.out.exists() else {}
    records, meta = old.get("records", []), old.get("meta") or run_metadata("benchmarks/active_learning_pilot.py")
    loops, meta_loops = old.get("loops", []), old.get("loops_meta")
    crit_loops, crit_metas = old.get("criterion_loops", []), old.get("criterion_loops_meta", [])

    def save(finish: bool = True) -> None:
        data = {"meta": finish_metadata(meta) if finish else meta, "records": records, "chosen": choose(records),
                "loops": loops, "chosen_start": choose_start(loops), "loops_meta": meta_loops,
                "criterion_loops": crit_loops, "chosen_criterion_start": choose_criterion_start(crit_loops),
                "criteria_compared": compare_criteria(crit_loops, choose_start(loops)),
                "criterion_loops_meta": crit_metas}  # fmt: skip
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
    if args.merge_criterion_loops:
        key = lambda r: (r["process"], r["criterion"], r["warm_start"], r["seed"], r["n_train"])  # noqa: E731
        for path in args.merge_criterion_loops:
            part = json.loads(path.read_text())
            seen = {key(r) for r in crit_loops}
            crit_loops += [r for r in part.get("criterion_loops", []) if key(r) not in seen]
            crit_metas += part.get("criterion_loops_meta", [])
        save(finish=False)
        return 0
    if args.criterion_loops:
        crit_metas.append(run_metadata("benchmarks/active_learning_pilot.py --criterion-loops"))
        done = {(r["process"], r["criterion"], r["warm_start"], r["seed"]) for r in crit_loops}
        for process in args.processes:
            for criterion in args.criterion_loops:
                for seed in args.loop_seeds:
                    starts = (True, False) if args.starts == "both" else (process_starts(loops)[process],)
                    for warm in starts:
                        if (process, criterion, warm, seed) not in done:
                            crit_loops += run_loop_cells(process, num_steps(process, None), warm, seed, args.workdir,
                                                         criterion)  # fmt: skip
                            crit_metas[-1] = finish_metadata(crit_metas[-1])
                            save(finish=False)
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
