"""XLA's CPU optimisation level for the prediction engine: ``predict``'s time at levels 1, 2 and 3.

``sigmabnn.compiler`` compiles the prediction engine's functions (:func:`sigmabnn.compiler.jit_prediction`)
at their own XLA backend optimisation level. This script measures the candidates side by side, in one
script run: per round, one fresh process per level (``SIGMABNN_XLA_OPT_LEVEL`` set; it sets both
of the library's levels, and only prediction is timed here), the levels in turn, :data:`ROUNDS`
rounds. Each process builds the models of ``benchmarks/model_load.py`` (1,000 networks, 4 chains
x 250 draws, random weights, a log10 target; the float32 models are the float64 ones'
``with_dtype("float32")``) and calls ``predict`` on standard-normal inputs:

- per cell (architecture, dtype, ``intervals`` or ``moments`` as in ``benchmarks/predict.py``,
  batch): ``first_s``, the first call's wall seconds (compilation included), and ``median_s``,
  the median of :data:`CALLS` further calls (fewer for the largest batch).

Rule (stated before the run): the prediction level is the level with the lowest sum, over the
batched cells (batch >= 1,000), of each cell's median over the rounds of ``median_s``. The
single-point latency and the first calls (compilation) are reported beside it, not part of the
rule: a prediction function is compiled once per model and shape and then called for every batch
of a scan. The load average is recorded at start and end and per process.

Usage::

    python benchmarks/predict_level.py            # results/predict_level.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, markdown_table, meta_lines, run_metadata, write  # noqa: E402

LEVELS = (1, 2, 3)
ROUNDS = 3
CALLS = 7
#: ``(architecture, batches)`` of the cells; each with both dtypes and both kinds of call.
CELLS = (("5-20-20-1", (1, 1000, 10000)), ("5-50-50-50-1", (1, 1000)))
DTYPES = ("float64", "float32")
OUTPUTS = {"intervals": {}, "moments": {"levels": ()}}
#: Cells with at least this batch enter the rule.
BATCHED = 1000


def level_cell() -> list[dict[str, Any]]:
    """Every cell at this process's level (from the environment): JSON-able records."""
    import numpy as np

    from model_load import make_model
    from sigmabnn import compiler
    from sigmabnn.predict import predict

    rng = np.random.default_rng(0)
    out = []
    for arch, batches in CELLS:
        base = make_model(arch, 1000)
        for dtype in DTYPES:
            fitted = base if dtype == "float64" else base.with_dtype("float32")
            for batch in batches:
                x = rng.normal(size=(batch, 5))
                for name, kwargs in OUTPUTS.items():
                    t0 = time.perf_counter()
                    predict(fitted, x, **kwargs)
                    first = time.perf_counter() - t0
                    times = []
                    for _ in range(CALLS if batch < 10000 else 3):
                        t0 = time.perf_counter()
                        predict(fitted, x, **kwargs)
                        times.append(time.perf_counter() - t0)
                    out.append({"arch": arch, "dtype": dtype, "outputs": name, "batch": batch,
                                "level": compiler.PREDICTION_LEVEL, "first_s": first,
                                "median_s": float(statistics.median(times)),
                                "load_average": list(os.getloadavg())})  # fmt: skip
    return out


def run_level(level: int) -> list[dict[str, Any]]:
    """:func:`level_cell` in a fresh process at ``level``."""
    env = {**os.environ, "SIGMABNN_XLA_OPT_LEVEL": str(level)}
    out = subprocess.run([sys.executable, __file__, "--cell"], capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise SystemExit(f"level {level}: the run failed: {last}")
    records = json.loads(out.stdout.strip().splitlines()[-1])
    if any(r["level"] != level for r in records):
        raise SystemExit(f"level {level}: the process predicted at another level")
    return records


def cell_medians(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per cell and level: the medians over the rounds of ``median_s`` and ``first_s``."""
    keys = dict.fromkeys((r["arch"], r["dtype"], r["outputs"], r["batch"]) for r in records)
    out = []
    for arch, dtype, outputs, batch in keys:
        for level in LEVELS:
            group = [r for r in records if (r["arch"], r["dtype"], r["outputs"], r["batch"], r["level"])
                     == (arch, dtype, outputs, batch, level)]  # fmt: skip
            if group:
                out.append({"arch": arch, "dtype": dtype, "outputs": outputs, "batch": batch, "level": level,
                            "rounds": len(group), "median_ms": 1e3 * statistics.median(r["median_s"] for r in group),
                            "first_s": statistics.median(r["first_s"] for r in group)})  # fmt: skip
    return with_ratio(out)


def with_ratio(medians: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The medians, each with ``vs_level_1``: its time over level 1's in the same cell (the training level)."""
    base = {(m["arch"], m["dtype"], m["outputs"], m["batch"]): m["median_ms"] for m in medians if m["level"] == 1}
    return [{**m, "vs_level_1": m["median_ms"] / base[(m["arch"], m["dtype"], m["outputs"], m["batch"])]}
            for m in medians]  # fmt: skip


def choose(medians: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring: ``{"level", "batched_ms" per level}``."""
    totals = {level: sum(m["median_ms"] for m in medians if m["level"] == level and m["batch"] >= BATCHED)
              for level in LEVELS}  # fmt: skip
    return {"level": min(LEVELS, key=lambda v: totals[v]), "batched_ms": totals}


COLUMNS = [("arch", "network", ""), ("dtype", "dtype", ""), ("outputs", "outputs", ""), ("batch", "batch", "d"),
           ("level", "level", "d"), ("median_ms", "ms per call", ".2f"), ("vs_level_1", "time vs level 1", ".3f"),
           ("first_s", "first call s", ".2f")]  # fmt: skip


def markdown(meta: dict[str, Any], medians: list[dict[str, Any]], pick: dict[str, Any]) -> str:
    totals = ", ".join(f"level {k}: {v:.0f} ms" for k, v in pick["batched_ms"].items())
    return "".join([
        "# XLA optimisation level of the prediction engine\n\n",
        "Written by `benchmarks/predict_level.py` (its docstring has the protocol and the rule); do not edit.\n\n",
        meta_lines(meta),
        "\n",
        f"**Chosen: level {pick['level']}.** Summed median time per call of the batched cells (batch >= {BATCHED:,}), "
        f"over those cells: {totals}.\n\n",
        f"## Calls (1,000 networks; medians over {ROUNDS} rounds, a fresh process per level and round)\n\n",
        markdown_table(medians, COLUMNS),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    p.add_argument("--cell", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.cell:
        print(json.dumps(level_cell()))
        return 0
    meta = run_metadata("benchmarks/predict_level.py")
    records = [r for _ in range(ROUNDS) for level in LEVELS for r in run_level(level)]
    medians = cell_medians(records)
    pick = choose(medians)
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    out = {"meta": meta, "choice": pick, "records": records, "medians": medians}
    write(args.out / "predict_level.json", out, markdown(meta, medians, pick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
