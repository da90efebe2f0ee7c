"""How many gradient evaluations per second 4 chains can reach at all, on 1 device and on all cores.

``samplers.py`` compares gradient evaluations per second of sigmabnn's NUTS (chains split
over one JAX CPU device per core) with NumPyro's (4 chains vectorized on the default device).
Both evaluate the same log-density, so the ratio is bounded by how much faster the *bare*
gradients run split over the devices than vectorized on one, with no sampler around them.
This script measures that bound on the BNN posteriors of ``samplers.py`` (the same
network, prior, likelihood and training rows, float64 and float32):

- ``one_device_us``: one step of 4 chains, vectorized (``vmap``) on one device, inside a
  jitted ``lax.fori_loop`` of ``--steps`` steps (each step a gradient and a position update,
  as a leapfrog step; no Python dispatch per step); microseconds per chain-gradient.
- ``split_us``: the same loop with the chains split over the devices (``shard_map``, as
  :func:`sigmabnn.mcmc.run.sample` runs them), 4 / D chains per device.
- ``ceiling``: ``one_device_us / split_us``, what splitting gains on the gradients themselves.
  Where the gradients dominate a NUTS step (these posteriors: ``nuts_overhead.py`` measured the
  tree logic at a few microseconds per step) it bounds the ratio of two samplers' gradient
  evaluations per second, one on the split chains and one on the same chains on one device.
- ``forward_us``: the log-posterior value alone (a forward pass), the same loop on one device.

Repetitions are interleaved (one-device, split, one-device, ...) and medians are reported;
the machine is shared, so the load average is recorded. The measured samplers' ratio is read
from ``samplers.json`` (``grad_evals_per_s`` of ``sigmabnn`` over ``numpyro``) when it holds
that target. Writes ``benchmarks/results/gradient_ceiling.json`` and ``.md``.

    python benchmarks/gradient_ceiling.py [--reps 7] [--steps 200]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

import _devices  # noqa: F401  (one JAX CPU device per core; before JAX starts its backend)
import _results
from core_gradient import evenly_spaced_rows, load_process, make_bnn
from sigmabnn.model import Data
from sigmabnn.model.mlp import flatten, init_params
from sigmabnn.parallel import AXIS, chain_mesh

REPO = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).resolve().parent / "results"
NUM_CHAINS = 4
#: (architecture, training rows): the reduced setting of ``samplers.py`` and all training rows.
CASES = (("5-20-20-1", 1000), ("5-20-20-1", None), ("5-50-50-50-1", 300), ("5-50-50-50-1", None))


def _loops(arch: str, dtype: str, x: np.ndarray, y: np.ndarray, steps: int):
    """``(positions [4, d], one_device_fn, split_fn or None, value_fn, devices)``: ``steps`` gradient steps of 4
    chains on one device and split over the ``devices`` devices, and ``steps`` log-posterior evaluations alone
    (one device)."""
    bnn = make_bnn(arch, dtype)
    data = Data(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
    hyper = bnn.default_hyperparameters()
    keys = jax.random.split(jax.random.key(0), NUM_CHAINS)
    positions = jnp.stack([flatten(init_params(k, bnn.mlp, bnn.jdtype)) for k in keys])

    def log_posterior(p):
        return bnn.log_posterior(p, hyper, data)

    grad, value = jax.vmap(jax.grad(log_posterior)), jax.vmap(log_posterior)
    eps = jnp.asarray(1e-9, bnn.jdtype)  # tiny steps: the positions stay where the timing is representative

    def loop(pos):
        return jax.lax.fori_loop(0, steps, lambda _, p: p + eps * grad(p), pos)

    def value_loop(pos):  # the log-posterior alone (a forward pass), the same loop
        return jax.lax.fori_loop(0, steps, lambda _, p: p + eps * value(p)[:, None], pos)

    mesh = chain_mesh(NUM_CHAINS)
    split = None
    if mesh is not None:
        split = jax.jit(
            jax.shard_map(loop, mesh=mesh, in_specs=PartitionSpec(AXIS), out_specs=PartitionSpec(AXIS), check_vma=False)
        )
    return positions, jax.jit(loop), split, jax.jit(value_loop), 1 if mesh is None else int(mesh.size)


def measure(arch: str, rows: int | None, dtype: str, x, y, reps: int, steps: int) -> dict:
    xs, ys = evenly_spaced_rows(x, y, rows)
    positions, one, split, value, devices = _loops(arch, dtype, xs, ys, steps)
    fns = {"one_device": one, "forward": value} | ({"split": split} if split is not None else {})
    for fn in fns.values():
        jax.block_until_ready(fn(positions))  # compile
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):  # interleaved
        for k, fn in fns.items():
            t0 = time.perf_counter()
            jax.block_until_ready(fn(positions))
            times[k].append(time.perf_counter() - t0)
    us = {k: 1e6 * statistics.median(v) / (steps * NUM_CHAINS) for k, v in times.items()}
    return {
        "target": f"bnn-{arch}",
        "rows": int(xs.shape[0]),
        "rows_setting": "reduced" if rows is not None else "all",
        "dtype": dtype,
        "devices": devices,
        "one_device_us": us["one_device"],
        "split_us": us.get("split"),
        "forward_us": us["forward"],
        "ceiling": us["one_device"] / us["split"] if "split" in us else None,
    }


def measured_ratios(path: Path) -> dict[str, float]:
    """``sigmabnn`` / ``numpyro`` gradient evaluations per second per target in a ``samplers.json``."""
    if not path.exists():
        return {}
    rates = {(r["target"], r["sampler"]): r["grad_evals_per_s"] for r in json.loads(path.read_text())["summary"]}
    return {
        target: rates[(target, "sigmabnn")] / rates[(target, "numpyro")]
        for target, sampler in rates
        if sampler == "sigmabnn" and (target, "numpyro") in rates
    }


def markdown(out: dict) -> str:
    m = out["machine"]
    lines = [
        "# Gradient evaluations per second: the ceiling of splitting chains over devices "
        "(generated by `benchmarks/gradient_ceiling.py` from `gradient_ceiling.json`)",
        "",
        f"Date {m['date']}, load average at start/end {m['load_average_1_5_15_at_start']} / "
        f"{m['load_average_1_5_15_at_end']} on {m['cpu_count']} cores, {m['jax_devices']} JAX CPU devices; "
        f"jax {m['jax']}. {out['settings']['steps']} gradient steps of {NUM_CHAINS} chains per timed call, "
        f"{out['settings']['reps']} interleaved repetitions, medians.",
        "",
        "Microseconds per chain-gradient (the BNN log-posterior of `samplers.py`, over the rows given). "
        "`ceiling` = one device / split: what splitting the chains over the devices gains on the gradients "
        "themselves, against the same chains vectorized on one device (NumPyro's `chain_method=vectorized`); "
        "where gradients dominate a NUTS step it bounds the ratio of gradient evaluations per second. "
        "`forward`: the log-posterior value alone (one device).",
        "",
        "| target | rows | dtype | one device us | split us | ceiling | forward us | "
        "samplers.json sigmabnn / numpyro |",
        "|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in out["records"]:
        reduced64 = r["rows_setting"] == "reduced" and r["dtype"] == "float64"
        ratio = out["samplers_ratio"].get(r["target"]) if reduced64 else None
        split = r["split_us"] is not None
        cells = [
            r["target"],
            f"{r['rows']:,}",
            r["dtype"],
            f"{r['one_device_us']:.1f}",
            f"{r['split_us']:.1f}" if split else "n/a",
            f"{r['ceiling']:.2f}x" if split else "n/a",
            f"{r['forward_us']:.1f}",
            "" if ratio is None else f"{ratio:.2f}x",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Reading", ""]
    lines += out["reading"]
    return "\n".join(lines) + "\n"


def reading(records: list[dict], ratios: dict[str, float]) -> list[str]:
    """Sentences computed from the records: the ceiling against the 2x goal and the measured ratio."""
    out = []
    for r in records:
        if r["ceiling"] is None or r["dtype"] != "float64" or r["rows_setting"] != "reduced":
            continue
        measured = ratios.get(r["target"])
        text = (
            f"- {r['target']} ({r['rows']:,} rows, float64): splitting the chains over the devices makes bare "
            f"gradients {r['ceiling']:.2f}x faster than vectorized on one device; the goal of 2x NumPyro's "
            f"gradient evaluations per second is {'above' if r['ceiling'] < 2 else 'within'} that ceiling"
        )
        if measured is not None:
            text += (
                f"; `samplers.json` (its own run, with NUTS around the gradients) measured {measured:.2f}x, "
                f"{measured / r['ceiling']:.0%} of this ceiling"
            )
        out.append(text + ".")
        out.append(
            f"  One device: a gradient step takes {r['one_device_us']:.1f} us per chain, the log-posterior alone "
            f"{r['forward_us']:.1f} us ({r['forward_us'] / r['one_device_us']:.0%}), so the backward pass takes "
            f"{(r['one_device_us'] - r['forward_us']) / r['forward_us']:.1f}x the forward one (it repeats each product "
            "twice: for the layer's inputs and for its kernel)."
        )
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7, help="interleaved timed calls per variant")
    parser.add_argument("--steps", type=int, default=200, help="gradient steps per timed call")
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("SIGMABNN_SHARED", REPO.parent / "shared")))
    parser.add_argument("--out", type=Path, default=RESULTS / "gradient_ceiling.json")
    parser.add_argument("--samplers", type=Path, default=RESULTS / "samplers.json")
    parser.add_argument(
        "--render-only", action="store_true", help="recompute the reading and the Markdown from an existing JSON"
    )
    args = parser.parse_args(argv)
    if args.render_only:
        out = json.loads(args.out.read_text())
        out["samplers_ratio"] = measured_ratios(args.samplers)
        out["reading"] = reading(out["records"], out["samplers_ratio"])
        _results.write(args.out, out, markdown(out))
        return 0
    data = args.shared / "data" / "nlo_ewino" / "ewino_nlo.csv.gz"
    if not data.exists():
        print(f"error: NLO data not found at {data} (set --shared or SIGMABNN_SHARED)", file=sys.stderr)
        return 2
    load_start = os.getloadavg()
    x, y = load_process(data)
    records = []
    for arch, rows in CASES:
        for dtype in ("float64", "float32"):
            rec = measure(arch, rows, dtype, x, y, args.reps, args.steps)
            print(json.dumps(rec), flush=True)
            records.append(rec)
    ratios = measured_ratios(args.samplers)
    out = {
        "records": records,
        "samplers_ratio": ratios,
        "reading": reading(records, ratios),
        "settings": {"reps": args.reps, "steps": args.steps, "chains": NUM_CHAINS},
        "machine": _results.machine(load_start) | {"date": _results.run_metadata("gradient_ceiling")["date"]},
    }
    _results.write(args.out, out, markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
