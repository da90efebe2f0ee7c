"""The log-likelihood's row blocks: a gradient's cost per row, from 10^3 to 10^5 rows, blocked and not.

``sigmabnn.model.posterior`` sums the log-likelihood over the rows in blocks of
``LIKELIHOOD_BLOCK_BYTES / itemsize`` rows (a ``lax.scan``, each block under ``jax.checkpoint``)
once a table has more rows than one block. This script measures, in one process and one run,
the gradient the samplers take: ``jax.vmap`` over :data:`CHAINS` chains of ``jax.grad`` of the
log-posterior of a ``10-20-20-1`` tanh BNN, compiled with ``sigmabnn.compiler.jit``, on standard
normal rows, for float32 and float64 and :data:`ROWS` rows, with

- ``one pass``: the whole table at once (block = rows), what the library did before the blocks;
- block byte budgets :data:`BUDGETS` (rows per block = budget / itemsize).

Per cell: the compile seconds and the median over :data:`ROUNDS` rounds (variants interleaved
within a round) of the median wall time of a call, and nanoseconds per row.

Rule (stated before the run): the budget with the lowest sum, over the cells (dtype x rows), of
nanoseconds per row. Beside it, for each variant, the cost per row at the most rows over the
cost per row at 10^4 rows (1 = linear in the rows). The load average is recorded at start and end.

Usage::

    python benchmarks/row_blocks.py            # results/row_blocks.{json,md}
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, markdown_table, run_metadata, write  # noqa: E402

ARCH = "10-20-20-1"
CHAINS = 8
ROWS = (1000, 10000, 30000, 100000)
DTYPES = ("float32", "float64")
BUDGETS = (16384, 32768, 65536)
ROUNDS = 3
#: Calls per timing: about this many rows' worth of work, at least 3 calls.
ROW_WORK = 400_000


def variants(itemsize: int, rows: int) -> dict[str, int]:
    """``{variant name: rows per block}``: one pass, then each budget."""
    return {"one pass": rows, **{f"{b // 1024} KiB": b // itemsize for b in BUDGETS}}


def cell(dtype: str, rows: int) -> list[dict[str, Any]]:
    """Compile and time every variant for ``dtype`` and ``rows`` (JSON-able records)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from core_gradient import make_bnn
    from sigmabnn import compiler
    from sigmabnn.model import Data
    from sigmabnn.model.mlp import flatten, init_params
    from sigmabnn.model.posterior import blocked_log_likelihood

    bnn = make_bnn(ARCH, dtype)
    hyper = bnn.default_hyperparameters()
    keys = jax.random.split(jax.random.PRNGKey(0), CHAINS)
    positions = jnp.stack([flatten(init_params(k, bnn.mlp, bnn.jdtype)) for k in keys])
    rng = np.random.default_rng(0)
    data = Data(jnp.asarray(rng.normal(size=(rows, 10)), dtype), jnp.asarray(rng.normal(size=rows), dtype))
    fns = {}
    out = []
    for name, block in variants(bnn.jdtype.itemsize, rows).items():

        def logpost(p, block=block):
            return bnn.log_prior(p, hyper) + blocked_log_likelihood(bnn, p, hyper, data, block)

        fn = compiler.jit(jax.vmap(jax.grad(logpost)))
        t0 = time.perf_counter()
        fn = fn.lower(positions).compile()
        out.append({"dtype": dtype, "rows": rows, "variant": name, "block": min(block, rows),
                    "compile_seconds": time.perf_counter() - t0, "ms": []})  # fmt: skip
        fns[name] = fn
        jax.block_until_ready(fn(positions))
    calls = max(3, ROW_WORK // rows)
    for _ in range(ROUNDS):
        for rec in out:
            fn = fns[rec["variant"]]
            times = []
            for _ in range(calls):
                t0 = time.perf_counter()
                jax.block_until_ready(fn(positions))
                times.append(time.perf_counter() - t0)
            rec["ms"].append(1e3 * statistics.median(times))
    for rec in out:
        rec["ms_median"] = float(statistics.median(rec["ms"]))
        rec["ns_per_row"] = 1e6 * rec["ms_median"] / rows
        rec["load_average"] = list(os.getloadavg())
    return out


def choose(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring: ``{"budget", "variant", "ns_per_row_sum", "growth"}``."""
    names = list(dict.fromkeys(r["variant"] for r in records))
    sums = {v: sum(r["ns_per_row"] for r in records if r["variant"] == v) for v in names}
    budgets = {f"{b // 1024} KiB": b for b in BUDGETS}
    best = min(budgets, key=lambda v: sums[v])
    top = max(r["rows"] for r in records)
    growth = {}
    for v in names:
        for dtype in dict.fromkeys(r["dtype"] for r in records):
            at = {r["rows"]: r["ns_per_row"] for r in records if r["variant"] == v and r["dtype"] == dtype}
            if 10000 in at and top in at:
                growth[f"{v}, {dtype}"] = at[top] / at[10000]
    return {"budget": budgets[best], "variant": best, "ns_per_row_sum": sums, "growth": growth}


COLUMNS = [("dtype", "dtype", ""), ("rows", "rows", "d"), ("variant", "variant", ""), ("block", "rows per block", "d"),
           ("compile_seconds", "compile s", ".2f"), ("ms_median", "ms per gradient", ".2f"),
           ("ns_per_row", "ns per row", ".0f")]  # fmt: skip


def markdown(meta: dict[str, Any], records: list[dict[str, Any]], pick: dict[str, Any]) -> str:
    sums = ", ".join(f"{k}: {v:,.0f}" for k, v in pick["ns_per_row_sum"].items())
    top = max(r["rows"] for r in records)
    growth = "\n".join(f"- {k}: {v:.2f}" for k, v in pick["growth"].items())
    return "".join([
        "# The log-likelihood's row blocks\n\n",
        "Written by `benchmarks/row_blocks.py` (its docstring has the protocol and the rule); do not edit.\n\n",
        f"Run {meta['date']} to {meta['date_end']}, {meta['machine']}, jax {meta['jax']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at the start, {meta['load_average_1_5_15_at_end']} at the end.\n\n",
        f"Gradient of the log-posterior, `{ARCH}` tanh, {CHAINS} chains vmapped; medians over {ROUNDS} rounds.\n\n",
        f"**Chosen: {pick['variant']} per block** ({pick['budget']} bytes). Summed ns per row over the cells: "
        f"{sums}.\n\n",
        f"Cost per row at {top:,} rows over the cost per row at 10,000 rows (1 = linear in the rows):\n\n{growth}\n\n",
        markdown_table(records, COLUMNS),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = p.parse_args(argv)
    meta = run_metadata("benchmarks/row_blocks.py")
    records = [r for dtype in DTYPES for rows in ROWS for r in cell(dtype, rows)]
    pick = choose(records)
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "row_blocks.json", {"meta": meta, "choice": pick, "records": records},
          markdown(meta, records, pick))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
