"""The default fit against NumPyro's BNN over many training sets instead of one (issue 29, goal (d)).

The defaults battery (``defaults.py --phase test``) compares the library's default with NumPyro's BNN
on one training set per table, so a table's verdict ("at least as accurate") mixes the methods'
difference with that one draw's luck: on the validation rows (``defaults_validation.md``) the
default was ahead on smooth6d-300 and steep6d-300, on the test rows behind. Here both are trained on
several training sets per table and scored on the same fresh rows, and the per-seed differences are
averaged:

- the rows are those of ``recalibration_seeds.rows_of``: for a synthetic table, a fresh training set
  of the table's size and 5,000 fresh scoring rows per seed (new random streams: neither the
  battery's training nor its test rows); for a real table, a random 80 / 20 split of its training
  rows (its test rows are never read);
- ``sigmabnn``: ``sigmabnn.api.fit(path, "y")`` with no options, as ``defaults.py`` runs it (the
  library's default when the run is made, its automatic split and recalibration included);
- ``numpyro``: NumPyro's NUTS on the BNN of NumPyro's BNN example (``defaults.run_numpyro``);
- each cell runs in a fresh process (``defaults.run_subprocess``), as in the battery.

Per seed, the LL difference is the mean over the scoring rows of the per-row log predictive density
of the default minus NumPyro's (nats, original units), the RMSE difference the default's RMSE minus
NumPyro's (target units). Per table, the mean of each over the seeds and its standard error (the
seeds' standard deviation / sqrt(seeds)). Verdict, fixed before the runs: the default is *behind*
on a metric when its mean difference is worse than zero by more than 2 standard errors, *ahead*
when better by more than 2, else *within noise*; it is *at least as accurate* over the seeds when
it is behind on neither RMSE nor LL. The speed is not compared here (``defaults_speed.md`` does):
cells run one after another on a shared machine; their seconds and load are in the JSON.

Tables: those on which NumPyro finished within the battery's time cap (``defaults.md``), the
slowest (wine-quality-red, about 380 s per NumPyro fit) last.

Run: ``python benchmarks/numpyro_seeds.py`` (resumable: a cell already recorded is not rerun; about
20 minutes per seed over the first five tables on 2 cores); ``--tables``, ``--seeds`` select a part;
``--table-only`` rewrites the Markdown from the JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import defaults  # noqa: E402
import recalibration_seeds  # noqa: E402
from _results import RESULTS_DIR, finish_metadata, markdown_table, run_lines, run_metadata, write  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT = RESULTS_DIR / "numpyro_seeds.json"
TABLES = ("sin1d-100", "lin2d-120", "smooth6d-300", "steep6d-300", "bostonHousing", "wine-quality-red")
METHODS = ("sigmabnn", defaults.NUMPYRO)
#: The seeds the committed run used (``--seeds`` selects a part).
SEEDS = (0, 1, 2, 3, 4)
PHASE = "seeds"
#: Wall-time cap of one cell (s): NumPyro's slowest table took 383 s in the battery.
TIMEOUT = 1200.0
#: A mean difference this many standard errors from zero is a verdict (module docstring).
Z = 2.0


def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """The child's work: the seed's rows, then fit and score one method."""
    fit_df, score_df, log_target = recalibration_seeds.rows_of(spec["table"], spec["seed"])
    out: dict[str, Any] = {"n_train": len(fit_df), "n_score": len(score_df), "num_features": fit_df.shape[1] - 1}
    if spec["sampler"] == defaults.NUMPYRO:
        out |= defaults.run_numpyro(fit_df, score_df, log_target, smoke=False)
    else:
        out |= defaults.run_fit_cell(spec["sampler"], fit_df, score_df, log_target, smoke=False)
    return out | {"status": "ok"}


def cell_key(rec: dict[str, Any]) -> tuple[str, int, str]:
    return rec["table"], int(rec["seed"]), rec["sampler"]


def seed_differences(
    recs: dict[tuple[str, int, str], dict[str, Any]], table: str, base: str = "sigmabnn", other: str = defaults.NUMPYRO
) -> list[dict[str, Any]]:
    """Per seed with both methods scored: their RMSE, LL and the differences (``base`` - ``other``)."""
    rows = []
    for seed in sorted({k[1] for k in recs if k[0] == table}):
        d, n = recs.get((table, seed, base)), recs.get((table, seed, other))
        if not (defaults._ok(d) and defaults._ok(n)):
            continue
        diff = defaults.paired_ll_difference(d, n)
        rows.append({
            "table": table, "seed": seed, "n_train": d["n_train"], "n_score": d["n_score"],
            "rmse_base": d["rmse"], "rmse_other": n["rmse"], "rmse_difference": d["rmse"] - n["rmse"],
            "ll_base": d["test_ll"], "ll_other": n["test_ll"],
            "ll_difference": diff[0] if diff else d["test_ll"] - n["test_ll"],
            "ll_difference_se": diff[1] if diff else None,
            "cov68_base": d.get("coverage_68"), "cov95_base": d.get("coverage_95"),
            "cov68_other": n.get("coverage_68"), "cov95_other": n.get("coverage_95"),
            "seconds_base": d.get("seconds"), "seconds_other": n.get("seconds"),
            "at_least_as_accurate": d["rmse"] <= n["rmse"] and d["test_ll"] >= n["test_ll"],
        })  # fmt: skip
    return rows


def judge(better: float, se: float) -> str:
    """``"ahead"``, ``"behind"`` or ``"within noise"``: a difference (positive: better) against ``Z`` times its SE."""
    return "ahead" if better > Z * se else "behind" if better < -Z * se else "within noise"


def verdict(values: Sequence[float], higher_is_better: bool) -> tuple[float, float | None, str]:
    """``(mean, standard error, verdict)`` of per-seed differences (module docstring); one seed: no verdict."""
    v = np.asarray(values, np.float64)
    mean = float(v.mean())
    if v.size < 2:
        return mean, None, "one seed"
    se = float(v.std(ddof=1) / math.sqrt(v.size))
    return mean, se, judge(mean if higher_is_better else -mean, se)


def table_differences(table: str, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A table's mean LL and RMSE differences over its paired seeds (``rows`` of :func:`seed_differences`),
    their standard errors and verdicts, and whether the base is *at least as accurate* over the seeds (behind on
    neither; ``None`` with one seed)."""
    ll, ll_se, ll_v = verdict([r["ll_difference"] for r in rows], higher_is_better=True)
    rm, rm_se, rm_v = verdict([r["rmse_difference"] for r in rows], higher_is_better=False)
    verdicts = (ll_v, rm_v)
    return {
        "table": table, "seeds": len(rows), "ll_difference": ll, "ll_se": ll_se, "ll_verdict": ll_v,
        "rmse_difference": rm, "rmse_se": rm_se, "rmse_verdict": rm_v,
        "at_least_as_accurate": None if "one seed" in verdicts else "behind" not in verdicts,
    }  # fmt: skip


def pooled(tables: Sequence[dict[str, Any]]) -> tuple[float, float | None]:
    """The mean of the tables' mean LL differences and its SE (``sqrt(sum SE^2) / tables``)."""
    means = [t["ll_difference"] for t in tables]
    ses = [t["ll_se"] for t in tables]
    if not means:
        return math.nan, None
    if any(s is None for s in ses):
        return float(np.mean(means)), None
    return float(np.mean(means)), math.sqrt(sum(s * s for s in ses)) / len(ses)


def summarise(records: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(per-seed rows, per-table rows)`` of the records."""
    recs = {cell_key(r): r for r in records}
    seeds, tables = [], []
    for table in [t for t in TABLES if any(k[0] == t for k in recs)]:
        rows = seed_differences(recs, table)
        seeds += rows
        if not rows:
            continue
        tables.append(table_differences(table, rows) | {
            "seeds_at_least_as_accurate": f"{sum(r['at_least_as_accurate'] for r in rows)}/{len(rows)}",
        })  # fmt: skip
    return seeds, tables


#: The columns of :func:`table_differences`' rows.
DIFFERENCE_COLUMNS = (
    ("table", "table", ""),
    ("seeds", "seeds", ""),
    ("ll_difference", "LL difference", "+.4f"),
    ("ll_se", "its SE", ".4f"),
    ("ll_verdict", "LL", ""),
    ("rmse_difference", "RMSE difference", "+.4g"),
    ("rmse_se", "its SE", ".3g"),
    ("rmse_verdict", "RMSE", ""),
)
TABLE_COLUMNS = (
    *DIFFERENCE_COLUMNS,
    ("seeds_at_least_as_accurate", "seeds with both at least NumPyro's", ""),
    ("at_least_as_accurate", "at least as accurate over the seeds", ""),
)


def seed_columns(first: tuple[str, str], second: tuple[str, str]) -> tuple[tuple[str, str, str], ...]:
    """The per-seed table's columns, each method's as ``(key suffix, label)``: ``("base", "default")``."""
    (a, la), (b, lb) = first, second
    return (
        ("table", "table", ""),
        ("seed", "seed", ""),
        ("n_train", "training rows", ""),
        ("n_score", "scoring rows", ""),
        (f"rmse_{a}", f"RMSE {la}", ".4g"),
        (f"rmse_{b}", f"RMSE {lb}", ".4g"),
        (f"ll_{a}", f"LL {la}", ".3f"),
        (f"ll_{b}", f"LL {lb}", ".3f"),
        ("ll_difference", "LL difference", "+.4f"),
        ("ll_difference_se", "paired SE (rows)", ".4f"),
        (f"cov68_{a}", f"cov 68 {la}", ".3f"),
        (f"cov95_{a}", f"cov 95 {la}", ".3f"),
        (f"cov68_{b}", f"cov 68 {lb}", ".3f"),
        (f"cov95_{b}", f"cov 95 {lb}", ".3f"),
    )


SEED_COLUMNS = seed_columns(("base", "default"), ("other", "NumPyro"))


def seed_page(
    title: str,
    intro: str,
    data: dict[str, Any],
    tables: Sequence[dict[str, Any]],
    seeds: Sequence[dict[str, Any]],
    columns: tuple[Sequence[tuple[str, str, str]], Sequence[tuple[str, str, str]]],
    script: str,
    summary: Sequence[str] = (),
) -> str:
    """A seeds benchmark's Markdown page: title, intro, invocations, ``summary`` lines, the per-table and
    per-seed tables (``columns``: theirs), and the cells not scored."""
    failed = [r for r in data["records"] if r.get("status") != "ok"]
    runs = run_lines(data.get("runs", []), script).rstrip("\n")
    lines = [f"# {title}", "", intro, "", "Invocations:", runs, ""]
    lines += [*(line for s in summary for line in (s, "")), "## Per table", "", markdown_table(tables, columns[0])]
    lines += ["", "## Per seed", "", markdown_table(seeds, columns[1])]
    if failed:
        cells = "; ".join(f"{'/'.join(map(str, cell_key(r)))}: {r.get('error')}" for r in failed)
        lines += ["", "Cells not scored: " + cells]
    return "\n".join(lines) + "\n"


def markdown(data: dict[str, Any]) -> str:
    seeds, tables = summarise(data["records"])
    intro = (
        "Generated by `benchmarks/numpyro_seeds.py` from `numpyro_seeds.json`; do not edit. The script's docstring "
        "has the protocol and the verdict rule, fixed before the runs; no battery test row is read. Differences: "
        "the default minus NumPyro (LL: mean per-row log predictive density, nats; RMSE: target units); their SE "
        "over the seeds. A table's seeds may be fewer than the script's where a run was not finished."
    )
    title = "The default against NumPyro's BNN over several training sets"
    return seed_page(title, intro, data, tables, seeds, (TABLE_COLUMNS, SEED_COLUMNS), "numpyro_seeds.py")


def run_seed_cells(
    out: Path,
    data: dict[str, Any],
    tables: Sequence[str],
    seeds: Sequence[int],
    methods: Sequence[str],
    timeout: float,
    script: Path,
    render: Callable[[dict[str, Any]], str],
    argv: list[str] | None,
    new_run: bool = True,
    redo: Callable[[dict[str, Any]], bool] | None = None,
) -> None:
    """Run every (seed, table, method) cell not yet recorded in ``data``, each in a fresh process of
    ``script`` (``--cell``), seed by seed; after each cell, write ``out`` (JSON) and its Markdown page.
    ``new_run`` false: the cells continue the invocation ``data["runs"]`` ends with (a second pass of it).
    ``redo``: a recorded cell for whose record it is true is run again (its new record replaces it, and the
    replaced record is kept in ``data["replaced"]``)."""
    if new_run:
        meta = run_metadata(script.name) | {"command": " ".join(argv if argv is not None else sys.argv[1:])}
        data["runs"].append(meta)
    else:
        meta = data["runs"][-1]
    done = {cell_key(r) for r in data["records"] if r.get("status") == "ok" and not (redo and redo(r))}
    for seed in seeds:
        for table in tables:
            for method in methods:
                if (table, seed, method) in done:
                    continue
                spec = {"table": table, "phase": PHASE, "sampler": method, "seed": seed}
                log = Path(tempfile.gettempdir()) / f"sigmabnn_{script.stem}" / f"{table}_{seed}_{method}.log"
                t0 = time.perf_counter()
                rec = defaults.run_subprocess(spec, timeout, log, script=script)
                print(f"{table} seed {seed} {method}: {rec['status']} in {time.perf_counter() - t0:.0f} s", flush=True)
                if redo:
                    replaced = [r for r in data["records"] if cell_key(r) == cell_key(rec) and r.get("status") == "ok"]
                    data.setdefault("replaced", []).extend(r for r in replaced if redo(r))
                data["records"] = [r for r in data["records"] if cell_key(r) != cell_key(rec)] + [rec]
                data["runs"][-1] = finish_metadata(meta)
                write(out, data, render(data))


def seeds_cli(
    argv: list[str] | None,
    description: str,
    tables: Sequence[str],
    methods: Sequence[str],
    out: Path,
    script: Path,
    render: Callable[[dict[str, Any]], str],
    seeds: Sequence[int] = SEEDS,
    timeout: float = TIMEOUT,
    default_tables: Sequence[str] | None = None,
) -> int:
    """The command line of a seeds benchmark: ``--tables`` (any of ``tables``; default ``default_tables``, else
    all), ``--seeds``, ``--timeout``, ``--out``, ``--table-only`` (rewrite the Markdown from the JSON) and the
    child's hidden ``--cell``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--tables", default=",".join(tables if default_tables is None else default_tables))
    ap.add_argument("--seeds", default=",".join(map(str, seeds)))
    ap.add_argument("--timeout", type=float, default=timeout)
    ap.add_argument("--out", type=Path, default=out)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cell:
        print("\n" + json.dumps(run_cell(json.loads(args.cell)), default=defaults._jsonable), flush=True)
        return 0
    data = defaults.load_results(args.out)
    if args.table_only:
        write(args.out, data, render(data))
        return 0
    chosen = defaults.parse_names(args.tables, tables, tables, "table")
    seed_list = [int(s) for s in args.seeds.split(",")]
    run_seed_cells(args.out, data, chosen, seed_list, methods, args.timeout, script, render, argv)
    return 0


def main(argv: list[str] | None = None) -> int:
    return seeds_cli(argv, __doc__.split("\n")[0], TABLES, METHODS, OUT, SCRIPT, markdown)


if __name__ == "__main__":
    raise SystemExit(main())
