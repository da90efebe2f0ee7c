"""The layout of the hidden units in the training gradient: points-first against points-last.

``sigmabnn.model.mlp.forward`` is the network every sampler's and MAP fit's gradient goes through,
with the chains (or starts) vmapped. This script times the same leapfrog loop over two
formulations of that network, in one process, interleaved:

- ``points_first``: ``h <- act(h @ kernel + bias)`` with ``h`` ``[n, width]`` (written out below,
  the formulation before the change);
- ``points_last``: the library's :func:`~sigmabnn.model.mlp.forward`, ``h <- act(kernel^T h + bias)``
  with ``h`` ``[width, n]``.

Each cell is a jitted ``fori_loop`` of :data:`STEPS` leapfrog steps of the BNN log-posterior's
gradient (prior plus likelihood, no row blocks: every cell is under the blocked sum's threshold),
chains vmapped, for the homoscedastic Gaussian head (``P-20-20-1``) and the heteroscedastic
Student-t head (``P-20-20-2``), on the defaults battery's shapes (``benchmarks/defaults.py``: 100 to
10,000 rows, 1 to 10 inputs) in float32 (the default fit's dtype) and some in float64, 8 chains (the
default) and one. Per cell and layout: the median over :data:`REPEATS` runs of the milliseconds per
step (all chains), and the largest relative difference of the two layouts' gradients at the
starting positions (the order of floating-point sums only). The load average is recorded at start
and end.

``--fit-tables`` adds whole default fits (``sigmabnn.api.fit(path, "y")`` on a table's training rows
from ``benchmarks/defaults.py``, compilation included), each in a fresh process, the points-first
network patched in for ``BNN.apply`` in its cells; the layouts alternate, :data:`FIT_ROUNDS`
rounds, and each fit's phases and leapfrog steps per iteration are recorded beside its seconds (the
two layouts' draws differ in rounding, so their trajectory lengths may differ).

Usage::

    python benchmarks/train_layout.py            # results/train_layout.{json,md}
    python benchmarks/train_layout.py --fit-tables lin2d-120,power-plant
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

STEPS = 200
REPEATS = 5
LAYOUTS = ("points_first", "points_last")
#: ``(inputs, rows, chains, dtype)`` of the cells; each is run with both heads.
CELLS = (
    (1, 100, 8, "float32"),
    (2, 120, 8, "float32"),
    (6, 300, 8, "float32"),
    (2, 1000, 8, "float32"),
    (10, 2000, 8, "float32"),
    (10, 10000, 8, "float32"),
    (10, 2000, 1, "float32"),
    (6, 300, 8, "float64"),
    (10, 2000, 8, "float64"),
)
HEADS = ("gaussian", "hetero_student_t")
FIT_ROUNDS = 2


def points_first(mlp: Any, params: Any, x: Any) -> Any:
    """The network with hidden units ``[n, width]``: ``act(h @ kernel + bias)`` per layer."""
    from sigmabnn.model.mlp import ACTIVATIONS

    h = x
    for layer, act in zip(params, mlp.activations):
        h = ACTIVATIONS[act](h @ layer.kernel + layer.bias)
    return h


#: Where ``--smoke`` writes, unless ``--out`` says otherwise: not the committed results.
SMOKE_DIR = Path(tempfile.gettempdir()) / "sigmabnn_train_layout_smoke"


def cell(inputs: int, rows: int, chains: int, dtype: str, head: str) -> list[dict[str, Any]]:
    """Compile the leapfrog loop of one cell under both layouts and time them interleaved."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from core_gradient import leapfrog_loop
    from sigmabnn.model.likelihoods import Gaussian, HeteroscedasticStudentT
    from sigmabnn.model.mlp import flatten, forward, init_params, parse_architecture
    from sigmabnn.model.posterior import BNN

    jax.config.update("jax_enable_x64", dtype == "float64")
    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.uniform(-1, 1, size=(rows, inputs)), dtype)
    y = jnp.asarray(np.sin(3 * np.asarray(x[:, :1])) + 0.1 * rng.normal(size=(rows, 1)), dtype)
    lik, outputs = (Gaussian(precision=100.0), 1) if head == "gaussian" else (HeteroscedasticStudentT(), 2)
    bnn = BNN(mlp=parse_architecture(f"{inputs}-20-20-{outputs}", "tanh"), likelihood=lik, dtype=dtype)
    hyper = bnn.default_hyperparameters()
    keys = jax.random.split(jax.random.PRNGKey(0), chains)
    positions = jnp.stack([flatten(init_params(k, bnn.mlp, bnn.jdtype)) for k in keys])
    nets = {"points_first": points_first, "points_last": forward}

    def log_posterior(net: Any) -> Any:
        def fn(p: Any) -> Any:
            f = net(bnn.mlp, bnn.unflatten(p), x)
            return bnn.log_prior(p, hyper) + lik.log_prob(f, y, hyper.noise_precision)

        return fn

    grads = {name: jax.grad(log_posterior(net)) for name, net in nets.items()}
    start = {name: np.asarray(jax.jit(jax.vmap(g))(positions), np.float64) for name, g in grads.items()}
    diff = float(np.max(np.abs(start["points_last"] - start["points_first"])) / np.max(np.abs(start["points_first"])))
    out, compiled = [], {}
    for name in LAYOUTS:
        t0 = time.perf_counter()
        compiled[name] = jax.jit(jax.vmap(leapfrog_loop(grads[name], STEPS))).lower(positions).compile()
        out.append({"network": f"{inputs}-20-20-{outputs}", "head": head, "rows": rows, "chains": chains,
                    "dtype": dtype, "layout": name, "compile_seconds": time.perf_counter() - t0,
                    "max_rel_grad_diff": diff})  # fmt: skip
    calls = [lambda name=rec["layout"]: jax.block_until_ready(compiled[name](positions)) for rec in out]
    for rec, seconds in zip(out, _results.time_interleaved(calls, REPEATS), strict=True):  # layouts interleaved
        rec["ms_per_step"] = [1e3 * t / STEPS for t in seconds]
        rec["ms_per_step_median"] = float(statistics.median(rec["ms_per_step"]))
    first = out[0]["ms_per_step_median"]
    return [{**rec, "speedup_vs_points_first": first / rec["ms_per_step_median"]} for rec in out]


def fit_cell(name: str, layout: str) -> dict[str, Any]:
    """One default fit of table ``name`` in this process under ``layout``."""
    import sigmabnn.model.posterior as posterior
    from defaults import timed_default_fit

    if layout == "points_first":
        posterior.forward = points_first
    rows, seconds, j = timed_default_fit(name)
    timings = j.get("timings") or {}
    steps = (j.get("sampler") or {}).get("mean_integration_steps")
    return {"table": name, "rows": rows, "layout": layout, "seconds": seconds,
            "sample_seconds": timings.get("sample_seconds"), "mean_integration_steps": steps,
            "load_average": [round(v, 2) for v in os.getloadavg()]}  # fmt: skip


def run_fit(name: str, layout: str) -> dict[str, Any]:
    """:func:`fit_cell` in a fresh process."""
    return _results.json_subprocess([sys.executable, __file__, "--fit-cell", f"{name}:{layout}"], f"{name} ({layout})")


def fit_rounds(tables: list[str]) -> list[dict[str, Any]]:
    """:data:`FIT_ROUNDS` rounds of every table under both layouts, the order alternating per round."""
    fits = []
    for r in range(FIT_ROUNDS):
        for name in tables:
            for layout in LAYOUTS if r % 2 == 0 else LAYOUTS[::-1]:
                fits.append({**run_fit(name, layout), "round": r})
                print(json.dumps(fits[-1]), flush=True)
    return fits


FIT_COLUMNS = [("table", "table", ""), ("rows", "rows", "d"), ("round", "round", "d"), ("layout", "layout", ""),
               ("seconds", "fit s", ".1f"), ("sample_seconds", "sampling s", ".1f"),
               ("mean_integration_steps", "leapfrog steps per iteration", ".1f")]  # fmt: skip


def fit_summary(fits: list[dict[str, Any]]) -> str:
    """Per table: the median fit seconds of each layout and their ratio."""
    lines = []
    for name in dict.fromkeys(f["table"] for f in fits):
        med = {lay: statistics.median(f["seconds"] for f in fits if f["table"] == name and f["layout"] == lay)
               for lay in LAYOUTS}  # fmt: skip
        lines.append(f"- {name}: median fit {med['points_first']:.1f} s points-first, {med['points_last']:.1f} s "
                     f"points-last ({med['points_first'] / med['points_last']:.2f}x)\n")  # fmt: skip
    return "".join(lines)


COLUMNS = [("network", "network", ""), ("head", "head", ""), ("rows", "rows", "d"), ("chains", "chains", "d"),
           ("dtype", "dtype", ""), ("layout", "layout", ""), ("compile_seconds", "compile s", ".2f"),
           ("ms_per_step_median", "ms per step", ".3f"), ("speedup_vs_points_first", "speed-up", ".2f"),
           ("max_rel_grad_diff", "max rel. gradient difference", ".1e")]  # fmt: skip


def markdown(meta: dict[str, Any], records: list[dict[str, Any]], fits: list[dict[str, Any]]) -> str:
    last = [r for r in records if r["layout"] == "points_last"]
    speedups = [r["speedup_vs_points_first"] for r in last]
    slower = [r for r in last if r["speedup_vs_points_first"] < 1.0]
    return "".join([
        "# Hidden-unit layout of the training gradient\n\n",
        "Written by `benchmarks/train_layout.py` (its docstring has the protocol); do not edit.\n\n",
        f"Run {meta['date']} to {meta['date_end']}, {meta['machine']}, jax {meta['jax']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at the start, {meta['load_average_1_5_15_at_end']} at the end.\n\n",
        f"Points-last (the library's `forward`) against points-first, {len(last)} cells: speed-up median "
        f"{statistics.median(speedups):.2f}x, range {min(speedups):.2f}x to {max(speedups):.2f}x; "
        f"{len(slower)} cells slower.\n\n",
        f"## Leapfrog loops ({STEPS} steps, chains vmapped; median of {REPEATS} runs, layouts interleaved)\n\n",
        _results.markdown_table(records, COLUMNS),
        *([f"\n## Default fits (fresh process each, compilation included; {FIT_ROUNDS} rounds, layouts "
           "alternating)\n\n", fit_summary(fits), "\n", _results.markdown_table(fits, FIT_COLUMNS)] if fits else []),
    ])  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, help=f"results directory (default {_results.RESULTS_DIR}; --smoke: {SMOKE_DIR})")
    p.add_argument(
        "--smoke",
        action="store_true",
        help="the first cell (both heads), 5 steps, one run: a check of the script that leaves the results alone",
    )
    p.add_argument("--fit-tables", default="", help="comma-separated defaults tables to fit under both layouts")
    p.add_argument("--fit-cell", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.fit_cell:
        print(json.dumps(fit_cell(*args.fit_cell.split(":"))))
        return 0
    global REPEATS, STEPS
    cells = CELLS
    if args.smoke:
        REPEATS, STEPS, cells = 1, 5, CELLS[:1]
    meta = _results.run_metadata("benchmarks/train_layout.py")
    records = [rec for c in cells for head in HEADS for rec in cell(*c, head)]
    fits = fit_rounds([t for t in args.fit_tables.split(",") if t])
    meta = _results.finish_metadata(meta)
    out = {"meta": meta, "records": records, "fits": fits}
    out_dir = args.out or (SMOKE_DIR if args.smoke else _results.RESULTS_DIR)
    _results.write(out_dir / "train_layout.json", out, markdown(meta, records, fits))
    return 0


if __name__ == "__main__":
    sys.exit(main())
