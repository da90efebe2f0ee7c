"""XLA's CPU optimisation level for sigmabnn's functions: compile time and run time at levels 1, 2 and 3.

``sigmabnn.compiler`` compiles the library's functions at one XLA backend optimisation level
(``xla_backend_optimization_level``; XLA's own default is 3). This script measures the candidates
side by side, in one script run, levels interleaved:

- ``kernel``: a jitted ``fori_loop`` of leapfrog steps of a BNN's log-posterior gradient, chains
  vmapped, for small and large networks (100 to 8,000 rows, tanh, float32 and float64), compiled at
  each level in one process. Per cell and level: the compile seconds (``lower().compile()``) and
  the median over :data:`REPEATS` runs of the microseconds per leapfrog step (all chains).
- ``fit``: ``sigmabnn.api.fit(path, "y")``, the library's default fit, of tables of
  ``benchmarks/defaults.py`` (their training rows), each in a fresh process with
  ``SIGMABNN_XLA_OPT_LEVEL`` set, the levels in turn, :data:`FIT_REPEATS` rounds. Per fit: wall
  seconds (compilation included) and the report's phase seconds. Draws under two levels agree in
  distribution, not bit for bit, so a fit's time also varies with its trajectory lengths; the
  report's leapfrog steps per chain are recorded beside it.

Rule (stated before the run): the level with the lowest summed median fit time over the fit
tables, provided its kernel time is within 5 % of level 3's or faster on every kernel cell;
otherwise level 3. The load average is recorded at start and end.

Usage::

    python benchmarks/compile_level.py            # results/compile_level.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import (  # noqa: E402
    RESULTS_DIR,
    finish_metadata,
    json_subprocess,
    markdown_table,
    run_metadata,
    time_interleaved,
    write,
)

LEVELS = (1, 2, 3)
#: ``(architecture, rows, chains)`` of the kernel cells.
KERNEL_CELLS = (("1-20-20-1", 100, 8), ("2-20-20-1", 1000, 8), ("10-20-20-1", 2000, 8), ("5-50-50-1", 1000, 8),
                ("5-20-20-1", 8000, 4))  # fmt: skip
DTYPES = ("float32", "float64")
STEPS = 200
REPEATS = 3
FIT_TABLES = ("sin1d-100", "lin2d-120", "energy")
FIT_REPEATS = 2
#: A level other than 3 must run every kernel cell within this factor of level 3's time.
KERNEL_TOLERANCE = 1.05


def kernel_cell(arch: str, rows: int, chains: int, dtype: str) -> list[dict[str, Any]]:
    """Compile and time the leapfrog loop of one cell at every level (JSON-able records)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from core_gradient import leapfrog_loop, make_bnn
    from sigmabnn.model import Data
    from sigmabnn.model.mlp import flatten, init_params

    rng = np.random.default_rng(0)
    inputs = int(arch.split("-")[0])
    x = rng.normal(size=(rows, inputs))
    y = np.sin(3 * x[:, 0]) + 0.1 * rng.normal(size=rows)
    bnn = make_bnn(arch, dtype)  # tanh, N(0, 1) weights, noise precision 100
    data = Data(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
    hyper = bnn.default_hyperparameters()
    keys = jax.random.split(jax.random.PRNGKey(0), chains)
    positions = jnp.stack([flatten(init_params(k, bnn.mlp, bnn.jdtype)) for k in keys])
    value_and_grad = jax.value_and_grad(lambda p: bnn.log_posterior(p, hyper, data))
    leapfrogs = leapfrog_loop(lambda q: value_and_grad(q)[1], STEPS)

    compiled, out = {}, []
    for level in LEVELS:
        options = {"xla_backend_optimization_level": level}
        t0 = time.perf_counter()
        compiled[level] = jax.jit(jax.vmap(leapfrogs), compiler_options=options).lower(positions).compile()
        out.append({"arch": arch, "rows": rows, "chains": chains, "dtype": dtype, "level": level,
                    "compile_seconds": time.perf_counter() - t0})  # fmt: skip
    calls = [lambda level=rec["level"]: jax.block_until_ready(compiled[level](positions)) for rec in out]
    for rec, seconds in zip(out, time_interleaved(calls, REPEATS), strict=True):  # levels interleaved
        rec["us_per_step"] = [1e6 * t / STEPS for t in seconds]
        rec["us_per_step_median"] = float(statistics.median(rec["us_per_step"]))
    return out


def fit_cell(name: str) -> dict[str, Any]:
    """One default fit of table ``name`` in this process (the level comes from the environment)."""
    from defaults import timed_default_fit
    from sigmabnn import compiler

    rows, seconds, j = timed_default_fit(name)
    sampler = j.get("sampler") or {}
    return {"table": name, "rows": rows, "level": compiler.OPTIMIZATION_LEVEL, "seconds": seconds,
            **{k: (j.get("timings") or {}).get(f"{k}_seconds") for k in ("map", "sample", "metrics")},
            "grad_evals_per_chain": sampler.get("num_grad_evals", 0) / max(1, len(sampler.get("acceptance") or [1])),
            "load_average": list(os.getloadavg())}  # fmt: skip


def run_fit(name: str, level: int) -> dict[str, Any]:
    """:func:`fit_cell` in a fresh process at ``level``."""
    env = {**os.environ, "SIGMABNN_XLA_OPT_LEVEL": str(level)}
    return json_subprocess([sys.executable, __file__, "--fit-cell", name], f"{name} at level {level}", env)


def fit_medians(fits: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per table and level: the median fit seconds and phases over the rounds."""
    out = []
    for name in dict.fromkeys(f["table"] for f in fits):
        for level in LEVELS:
            group = [f for f in fits if f["table"] == name and f["level"] == level]
            if group:
                keys = ("seconds", "map", "sample", "grad_evals_per_chain")
                med = {k: float(statistics.median(f[k] for f in group)) for k in keys}
                out.append({"table": name, "level": level, "fits": len(group), **med})
    return out


def vs_level_3(kernel: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The kernel records, each with ``vs_level_3``: its time per step over level 3's in the same cell."""
    base = {(r["arch"], r["rows"], r["dtype"]): r["us_per_step_median"] for r in kernel if r["level"] == 3}
    return [{**r, "vs_level_3": r["us_per_step_median"] / base[(r["arch"], r["rows"], r["dtype"])]} for r in kernel]


def choose(kernel: list[dict[str, Any]], medians: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring: ``{"level", "fit_seconds" per level, "kernel_ok" per level}``."""
    ratios = vs_level_3(kernel)
    kernel_ok = {
        level: all(r["vs_level_3"] <= KERNEL_TOLERANCE for r in ratios if r["level"] == level) for level in LEVELS
    }
    totals = {level: sum(m["seconds"] for m in medians if m["level"] == level) for level in LEVELS}
    eligible = [level for level in LEVELS if kernel_ok[level]]
    level = min(eligible, key=lambda v: totals[v]) if eligible else 3
    return {"level": level, "fit_seconds": totals, "kernel_ok": kernel_ok}


KERNEL_COLUMNS = [("arch", "network", ""), ("rows", "rows", "d"), ("chains", "chains", "d"), ("dtype", "dtype", ""),
                  ("level", "level", "d"), ("compile_seconds", "compile s", ".2f"),
                  ("us_per_step_median", "us per step", ".1f"), ("vs_level_3", "time vs level 3", ".3f")]  # fmt: skip
FIT_COLUMNS = [("table", "table", ""), ("level", "level", "d"), ("fits", "fits", "d"), ("seconds", "fit s", ".1f"),
               ("map", "MAP s", ".1f"), ("sample", "sampling s", ".1f"),
               ("grad_evals_per_chain", "leapfrog steps per chain", ".0f")]  # fmt: skip


def markdown(meta: dict[str, Any], kernel: list[dict[str, Any]], medians: list[dict[str, Any]], pick: dict) -> str:
    rows = vs_level_3(kernel)
    totals = ", ".join(f"level {k}: {v:.1f} s" for k, v in pick["fit_seconds"].items())
    ok = ", ".join(f"level {k}: {'yes' if v else 'no'}" for k, v in pick["kernel_ok"].items())
    return "".join([
        "# XLA optimisation level of sigmabnn's functions\n\n",
        "Written by `benchmarks/compile_level.py` (its docstring has the protocol and the rule); do not edit.\n\n",
        f"Run {meta['date']} to {meta['date_end']}, {meta['machine']}, jax {meta['jax']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at the start, {meta['load_average_1_5_15_at_end']} at the end.\n\n",
        f"**Chosen: level {pick['level']}.** Summed median default-fit seconds: {totals}. Every kernel cell within "
        f"{KERNEL_TOLERANCE:.2f}x of level 3: {ok}.\n\n",
        "## Default fits (fresh process each, compilation included; medians over the rounds)\n\n",
        markdown_table(medians, FIT_COLUMNS),
        f"\n## Leapfrog loops ({STEPS} steps, chains vmapped; median of {REPEATS} runs, levels interleaved)\n\n",
        markdown_table(rows, KERNEL_COLUMNS),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    p.add_argument("--fit-cell", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.fit_cell:
        print(json.dumps(fit_cell(args.fit_cell)))
        return 0
    meta = run_metadata("benchmarks/compile_level.py")
    kernel = [r for cell in KERNEL_CELLS for dtype in DTYPES for r in kernel_cell(*cell, dtype)]
    fits = [run_fit(name, level) for _ in range(FIT_REPEATS) for name in FIT_TABLES for level in LEVELS]
    medians = fit_medians(fits)
    pick = choose(kernel, medians)
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    out = {"meta": meta, "choice": pick, "kernel": kernel, "fits": fits, "fit_medians": medians}
    write(args.out / "compile_level.json", out, markdown(meta, kernel, medians, pick))
    return 0


if __name__ == "__main__":
    sys.exit(main())
