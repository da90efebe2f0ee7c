"""From how many rows the log-likelihood pays to be summed in blocks, inside the samplers' leapfrog loops.

``sigmabnn.model.posterior`` can sum the log-likelihood over blocks of ``LIKELIHOOD_BLOCK_BYTES /
itemsize`` rows (a ``lax.scan``): a gradient's working set is then one block's. Over the training
rows (concrete arrays) each block's value and gradient come from one forward and one backward pass
(a ``jax.custom_vjp``). ``BNN.log_likelihood`` sums in blocks from ``LIKELIHOOD_MIN_BLOCKS`` blocks'
worth of rows on. This script measures where that pays, in the context the samplers run the gradient
in: a jitted ``fori_loop`` of :data:`STEPS` leapfrog steps, :data:`CHAINS` chains vmapped (each with
its own hyperparameters, as the Gibbs steps give them), of a ``10-20-20-1`` tanh BNN on
standard-normal rows, compiled with ``sigmabnn.compiler.jit``. Like the samplers (whose
Hamiltonian needs it), the loop uses the log-density's value as well as its gradient: a loop that
dropped the value let XLA drop its forward pass, and so flattered any variant that computes the
value in a pass of its own. (Timed as standalone gradient calls, the one pass looks far worse than
inside the loops, which reuse its buffers.)

Cells: float32 and float64, rows = :data:`MULTIPLES` x the dtype's block rows. Per cell, interleaved,
:data:`ROUNDS` rounds of :data:`CALLS` calls of: the one pass; the blocks (the library's path); and,
for reference only, the blocks as they are summed when the rows are traced (an argument of the
jitted loop: each block under ``jax.checkpoint``, so its forward pass runs twice). The median of the
rounds' medians, in nanoseconds per row and gradient.

Rule (stated before the run): ``min_blocks`` is the smallest multiple ``m`` of :data:`MULTIPLES`
such that in both dtypes, at ``m`` and every larger multiple, the blocks take at most
:data:`GAIN` of the one pass's time; no such ``m``: never block (``None``). The reference variant
takes no part in it. The load average is recorded at start and end.

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
from _results import RESULTS_DIR, finish_metadata, markdown_table, meta_lines, run_metadata, write  # noqa: E402

ARCH = "10-20-20-1"
CHAINS = 8
STEPS = 20
MULTIPLES = (1.25, 1.5, 2, 3, 4, 6, 11)
DTYPES = ("float32", "float64")
ROUNDS = 3
CALLS = 3
#: The blocks must take at most this fraction of the one pass's time.
GAIN = 0.95
#: The variant recorded for reference: the rows traced, each block's forward pass run twice.
REFERENCE = "blocks, rows traced"


def cell(dtype: str, multiple: float) -> list[dict[str, Any]]:
    """Time the one pass and the blocks for ``dtype`` at ``multiple`` blocks' worth of rows."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from core_gradient import make_bnn
    from sigmabnn import compiler
    from sigmabnn.model import Data
    from sigmabnn.model.mlp import flatten, init_params
    from sigmabnn.model.posterior import blocked_log_likelihood

    bnn = make_bnn(ARCH, dtype)
    block = bnn.row_block()
    rows = int(multiple * block)
    hyper = bnn.default_hyperparameters()
    keys = jax.random.split(jax.random.PRNGKey(0), CHAINS)
    positions = jnp.stack([flatten(init_params(k, bnn.mlp, bnn.jdtype)) for k in keys])
    hypers = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (CHAINS,) + a.shape), hyper)
    rng = np.random.default_rng(0)
    data = Data(jnp.asarray(rng.normal(size=(rows, 10)), dtype), jnp.asarray(rng.normal(size=rows), dtype))

    def loop(b: int, traced: bool = False):
        def log_density(p, h, d):
            return bnn.log_prior(p, h) + blocked_log_likelihood(bnn, p, h, d, b)

        value_and_grad = jax.value_and_grad(log_density)

        def one(p, h, d):
            def body(_, s):
                q, m, g, total = s
                m = m + 0.00005 * g
                q = q + 0.0001 * m
                value, g = value_and_grad(q, h, d)
                return q, m + 0.00005 * g, g, total + value

            value, g = value_and_grad(p, h, d)
            return jax.lax.fori_loop(0, STEPS, body, (p, jnp.zeros_like(p), g, value))

        if traced:
            return compiler.jit(jax.vmap(one, in_axes=(0, 0, None)))
        return compiler.jit(jax.vmap(lambda p, h: one(p, h, data)))

    fns = {"one pass": loop(rows), "blocks": loop(block), REFERENCE: loop(block, traced=True)}
    args = {name: (positions, hypers, data) if name == REFERENCE else (positions, hypers) for name in fns}
    for name, fn in fns.items():
        jax.block_until_ready(fn(*args[name]))
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            calls = []
            for _ in range(CALLS):
                t0 = time.perf_counter()
                jax.block_until_ready(fn(*args[name]))
                calls.append(time.perf_counter() - t0)
            times[name].append(statistics.median(calls))
    return [{"dtype": dtype, "multiple": multiple, "rows": rows, "block": block, "variant": name,
             "ns_per_row_grad": 1e9 * statistics.median(t) / rows / (STEPS + 1), "seconds": t,
             "load_average": list(os.getloadavg())} for name, t in times.items()]  # fmt: skip


def ratios(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dtype and multiple: the blocks' time over the one pass's."""
    one = {(r["dtype"], r["multiple"]): r["ns_per_row_grad"] for r in records if r["variant"] == "one pass"}
    return [{"dtype": r["dtype"], "multiple": r["multiple"], "rows": r["rows"],
             "blocks_vs_one_pass": r["ns_per_row_grad"] / one[(r["dtype"], r["multiple"])]}
            for r in records if r["variant"] == "blocks"]  # fmt: skip


def choose(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The rule of the module docstring: ``{"min_blocks"}`` (``None``: never block) and the ratios."""
    rs = ratios(records)
    multiples = sorted({r["multiple"] for r in rs})
    ok = {m: all(r["blocks_vs_one_pass"] <= GAIN for r in rs if r["multiple"] >= m) for m in multiples}
    chosen = next((m for m in multiples if ok[m]), None)
    return {"min_blocks": chosen, "ratios": rs}


COLUMNS = [("dtype", "dtype", ""), ("multiple", "blocks' worth", "g"), ("rows", "rows", "d"),
           ("variant", "variant", ""), ("ns_per_row_grad", "ns per row and gradient", ".0f")]  # fmt: skip
RATIO_COLUMNS = [("dtype", "dtype", ""), ("multiple", "blocks' worth", "g"), ("rows", "rows", "d"),
                 ("blocks_vs_one_pass", "blocks / one pass", ".3f")]  # fmt: skip


def markdown(meta: dict[str, Any], records: list[dict[str, Any]], pick: dict[str, Any]) -> str:
    return "".join([
        "# From how many rows the log-likelihood is summed in blocks\n\n",
        "Written by `benchmarks/row_blocks.py` (its docstring has the protocol and the rule); do not edit.\n\n",
        meta_lines(meta),
        f"\nLeapfrog loops of {STEPS} steps, `{ARCH}` tanh, {CHAINS} chains vmapped; medians over {ROUNDS} rounds "
        f"of {CALLS} calls, the variants interleaved; `{REFERENCE}` is for reference only.\n\n",
        f"**Chosen: blocks from {pick['min_blocks']} blocks' worth of rows on** (the smallest multiple from "
        f"which the blocks take at most {GAIN:g} of the one pass's time in both dtypes).\n\n",
        markdown_table(pick["ratios"], RATIO_COLUMNS),
        "\n",
        markdown_table(records, COLUMNS),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    args = p.parse_args(argv)
    meta = run_metadata("benchmarks/row_blocks.py")
    records = [r for dtype in DTYPES for m in MULTIPLES for r in cell(dtype, m)]
    pick = choose(records)
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "row_blocks.json", {"meta": meta, "choice": pick, "records": records},
          markdown(meta, records, pick))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
