"""A second fit of a table of the same shapes with the persistent cache of compiled code (``sigmabnn.compile_cache``).

Every fit compiles its functions (XLA; ``fit_compiles.md``). With the cache, a later process that fits a
table of the same numbers of rows and columns with the same options loads them instead; the compiled
functions take the rows as arguments, so the table may hold other rows. Measured here, per table, in
``--repeats`` pairs of cells, each cell a fresh process (``defaults.run_subprocess``: the fit timed with
JAX's compilation, the scoring rows scored untimed, as the defaults battery times a fit):

- ``cold``: the default fit (``sigmabnn.api.fit(path, "y")``) of one training set, the cache switched on in
  an empty directory (a new one per pair): what a first run costs, compiling and writing the cache;
- ``warm``: right after it, the default fit of another training set of the same table and size, with the
  directory the cold cell filled: what the next run costs.

The peer, side by side in the same run: NumPyro's BNN as ``defaults.py`` runs it (its own example's model),
cold and warm in the same way with JAX's cache set alike (``compile_cache.jax_settings``), on the smallest
table only (NumPyro takes about a minute there and several on the others). Rows:
``recalibration_seeds.rows_of``, training sets of seeds :data:`SEEDS` (the battery's test rows are never
read). The measurement, fixed before the run: per table and method, the ratio of the medians
``median(cold seconds) / median(warm seconds)``; the per-pair ratios are printed beside it. The number of
cache entries each cell leaves is recorded: a warm fit of other rows of the same shapes that adds entries
compiled something the cold fit did not.

Results: ``results/compile_cache.{json,md}``, written after every cell; a rerun skips recorded cells.

    python benchmarks/compile_cache.py [--repeats 3] [--tables sin1d-100,smooth6d-300,energy]
    python benchmarks/compile_cache.py --table-only
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import defaults  # noqa: E402
from _results import RESULTS_DIR, finish_metadata, markdown_table, run_lines, run_metadata, write  # noqa: E402

SCRIPT = Path(__file__).resolve()
OUT = RESULTS_DIR / "compile_cache.json"
TABLES = ("sin1d-100", "smooth6d-300", "energy")
PEER_TABLES = ("sin1d-100",)
METHODS = ("sigmabnn", defaults.NUMPYRO)
#: Training sets: the cold cell of pair ``r`` fits seed ``SEEDS[0] + r``, the warm cell ``SEEDS[1] + r``.
SEEDS = (60, 80)
STAGES = ("cold", "warm")
TIMEOUT = 600.0


def run_cell(spec: dict[str, Any]) -> dict[str, Any]:
    """The child's work: the cache switched on in ``spec["cache"]``, then one fit, timed, and scored."""
    import jax

    import recalibration_seeds
    from sigmabnn import compile_cache

    for name, value in compile_cache.jax_settings(Path(spec["cache"])).items():
        jax.config.update(name, value)
    fit_df, score_df, log_target = recalibration_seeds.rows_of(spec["table"], spec["seed"])
    if spec["method"] == defaults.NUMPYRO:
        out = defaults.run_numpyro(fit_df, score_df, log_target, smoke=False)
    else:
        out = defaults.run_fit_cell("sigmabnn", fit_df, score_df, log_target, smoke=False)
    entries = sum(1 for p in Path(spec["cache"]).iterdir() if p.name.endswith("-cache"))
    keep = ("seconds", "rmse", "test_ll", "coverage_68", "coverage_95", "likelihood")
    return {k: out[k] for k in keep if k in out} | {"n_train": len(fit_df), "cache_entries": entries, "status": "ok"}


def cells(tables: Sequence[str], repeats: int) -> list[dict[str, Any]]:
    """Every cell in the order it runs: per pair, per table, per method, cold then warm."""
    out = []
    for r in range(repeats):
        for table in tables:
            for method in [m for m in METHODS if m == "sigmabnn" or table in PEER_TABLES]:
                out += [{"table": table, "method": method, "pair": r, "stage": s, "seed": SEEDS[i] + r}
                        for i, s in enumerate(STAGES)]  # fmt: skip
    return out


def _key(rec: dict[str, Any]) -> tuple[str, str, int, str]:
    return rec["table"], rec["method"], int(rec["pair"]), rec["stage"]


def summarise(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table and method: the medians of the cold and warm seconds, their ratio and the per-pair ratios."""
    by = {_key(r): r for r in records if r.get("status") == "ok"}
    rows = []
    for table, method in dict.fromkeys((k[0], k[1]) for k in by):
        pairs = sorted({k[2] for k in by if k[:2] == (table, method)})
        both = [p for p in pairs if (table, method, p, "cold") in by and (table, method, p, "warm") in by]
        if not both:
            continue
        cold = [by[(table, method, p, "cold")] for p in both]
        warm = [by[(table, method, p, "warm")] for p in both]
        ratios = [c["seconds"] / w["seconds"] for c, w in zip(cold, warm, strict=True)]
        rows.append({
            "table": table, "method": method, "pairs": len(both), "n_train": cold[0]["n_train"],
            "cold_s": statistics.median(c["seconds"] for c in cold),
            "warm_s": statistics.median(w["seconds"] for w in warm),
            "ratio": statistics.median(c["seconds"] for c in cold) / statistics.median(w["seconds"] for w in warm),
            "pair_ratios": " ".join(f"{x:.2f}" for x in ratios),
            "entries": " / ".join(f"{c['cache_entries']} -> {w['cache_entries']}" for c, w in zip(cold, warm,
                                                                                                   strict=True)),
        })  # fmt: skip
    return rows


SUMMARY_COLS = [
    ("table", "table", ""), ("method", "method", ""), ("n_train", "training rows", ""), ("pairs", "pairs", ""),
    ("cold_s", "cold median s", ".1f"), ("warm_s", "warm median s", ".1f"), ("ratio", "cold / warm", ".2f"),
    ("pair_ratios", "per pair", ""), ("entries", "cache entries after cold -> after warm", ""),
]  # fmt: skip
CELL_COLS = [
    ("table", "table", ""), ("method", "method", ""), ("pair", "pair", ""), ("stage", "stage", ""),
    ("seed", "training set", ""), ("likelihood", "noise model", ""), ("seconds", "seconds", ".1f"),
    ("rmse", "RMSE", ".4g"),
    ("cache_entries", "cache entries", ""), ("load", "load start/end", ""),
]  # fmt: skip


def render(data: dict[str, Any]) -> str:
    rows = summarise(data["records"])
    cell_rows = [r | {"load": f"{r.get('load_average_start', 0):.2f}/{r.get('load_average_end', 0):.2f}"}
                 for r in data["records"]]  # fmt: skip
    return "\n".join([
        "# Fits with the persistent cache of compiled code, cold and warm", "",
        f"Generated by `benchmarks/{SCRIPT.name}` from `{OUT.name}`; do not edit. The script's docstring has the "
        "protocol: per pair, a fit in an empty cache (cold), then a fit of another training set of the same table "
        "and size with the cache it filled (warm), each in a fresh process, compilation included; loads beside every "
        "cell (a shared machine).", "",
        run_lines(data.get("runs", [])), "",
        markdown_table(rows, SUMMARY_COLS), "",
        "## Cells, in the order they ran", "",
        markdown_table(cell_rows, CELL_COLS), "",
    ])  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--table-only", action="store_true")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cell:
        print("\n" + json.dumps(run_cell(json.loads(args.cell)), default=defaults._jsonable), flush=True)
        return 0
    data = defaults.load_results(args.out)
    if not args.table_only:
        for name in [k for k in os.environ if k.startswith("JAX_")]:  # the children set their own cache
            os.environ.pop(name)
        tables = defaults.parse_names(args.tables, TABLES, TABLES, "table")
        meta = run_metadata(SCRIPT.name) | {"command": " ".join(argv if argv is not None else sys.argv[1:])}
        data["runs"].append(meta)
        done = {_key(r) for r in data["records"] if r.get("status") == "ok"}
        caches: dict[tuple[str, str, int], str] = {}
        with tempfile.TemporaryDirectory(prefix="sigmabnn_cache_bench_") as tmp:
            for spec in cells(tables, args.repeats):
                if _key(spec) in done:
                    continue
                cache = caches.setdefault((spec["table"], spec["method"], spec["pair"]),
                                          tempfile.mkdtemp(dir=tmp))  # fmt: skip
                log = Path(tmp) / "logs" / f"{spec['table']}_{spec['method']}_{spec['pair']}_{spec['stage']}.log"
                rec = defaults.run_subprocess(spec | {"cache": cache}, TIMEOUT, log, script=SCRIPT)
                rec |= {k: spec[k] for k in ("method", "pair", "stage")}
                print(f"{spec['table']} {spec['method']} pair {spec['pair']} {spec['stage']}: {rec['status']} "
                      f"{rec.get('seconds', float('nan')):.1f} s", flush=True)  # fmt: skip
                data["records"].append(rec)
                data["runs"][-1] = finish_metadata(meta)
                write(args.out, data, render(data))
    write(args.out, data, render(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
