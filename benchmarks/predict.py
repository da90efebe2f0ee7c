"""Prediction speed and memory of a 1,000-network BNN: points per second, latency, load time.

For each architecture (``5-20-20-1``, ``5-50-50-50-1``) and dtype (``float64``,
the default, and ``float32``: the float64 model's ``with_dtype("float32")``, what
``sigmabnn predict --float32`` evaluates), a model of 1,000 networks (4 chains x 250
draws; random weights: speed does not depend on the values) with a log10
target, so every call computes both the log-space and the original-space
summaries. Two kinds of call (``outputs``): ``intervals``, the default
``predict`` with the 68 % and 95 % intervals (2,000 noise samples per point),
and ``moments``, ``predict(..., levels=())``: mean, std and its epistemic and
aleatoric parts, no noise samples (what a parameter scan that needs the
cross section and its uncertainty calls).

- ``load_ms``: median wall time of ``load_model`` (the file in the page cache).
- ``latency_ms``: median wall time of one ``predict`` call for the batch
  (for ``batch = 1``: the single-point latency, Python overhead included).
- ``points_per_s``: ``batch / latency``.
- ``peak_rss_mb``: the process's peak resident memory during the calls of
  that batch (Linux: ``VmHWM`` after resetting it through ``/proc/self/clear_refs``).

Every batch size is compiled once (an untimed call) before timing. The
default setting is reduced to fit a shared machine's budget (largest batch
10^4 for ``5-20-20-1`` and 10^3 for ``5-50-50-50-1``); ``--full`` runs
10^6 for both. Writes ``benchmarks/results/predict.json`` and ``predict.md``
(the table is generated from the JSON).

    python benchmarks/predict.py [--full] [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import jax
import numpy as np

import _results
from model_load import make_model  # the sibling benchmark's model builder (script directory on sys.path)
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.predict import predict
from sigmabnn.predict.device import device_model, network_groups, per_draw
from sigmabnn.predict.engine import PREDICT_THREADS, Request, chunk_function, chunk_points
from sigmabnn.predict.sampling import MIN_NOISE_SAMPLES, host_quantiles

RESULTS = Path(__file__).resolve().parent / "results"
ARCHS = ("5-20-20-1", "5-50-50-50-1")
GOALS = {"points_per_s_5-20-20-1": 30000.0, "latency_ms_1_point": 0.5, "load_ms": 50.0}


def peak_rss_reset() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_mb() -> float | None:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return None


OUTPUTS = {"intervals": {}, "moments": {"levels": ()}}


def time_calls(fitted, x: np.ndarray, reps: int, budget_s: float, **kwargs) -> list[float]:
    predict(fitted, x, **kwargs)  # compile this shape
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < reps and (len(times) < 1 or time.perf_counter() - start < budget_s):
        t0 = time.perf_counter()
        predict(fitted, x, **kwargs)
        times.append(time.perf_counter() - t0)
    return times


def _median_ms_and_cores(fn, reps: int = 9) -> tuple[float, float]:
    """Median wall ms of ``fn()`` and the median ratio of process CPU time to wall time (cores used)."""
    fn()
    walls, ratios = [], []
    for _ in range(reps):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall = time.perf_counter() - t0
        walls.append(wall)
        ratios.append((time.process_time() - c0) / wall)
    return 1e3 * statistics.median(walls), statistics.median(ratios)


def _median_ms(fn, reps: int = 5) -> float:
    """Median wall ms of ``fn()`` over ``reps`` calls after an untimed one."""
    return _median_ms_and_cores(fn, reps)[0]


def breakdown(fitted, rng: np.random.Generator) -> dict:
    """Where one chunk's time goes: network forward pass, the whole device part, host sort, XLA sort.

    The chunk is the one ``predict`` uses for large batches; times are medians
    of 5 calls, in milliseconds per chunk. ``forward_ms`` is the forward pass as
    ``predict`` runs it (groups of ``NETWORK_GROUP`` networks, points-last hidden
    units); ``forward_vmapped_ms`` the same networks at the same points evaluated
    the plain way, ``jax.vmap`` of the network over all ``T`` at once (the layout
    ``predict`` used before), side by side in this process. ``moments_device_part_ms``: the chunk
    without noise, moments accumulated inside the network scan (``predict``'s route);
    ``moments_two_pass_device_part_ms``: the same with every network's values materialised
    first, then reduced. ``second_layer_matmul_ms``: the
    second layer's products of all networks alone, all groups in one batched call, with
    the number of cores it kept busy (CPU time over wall time). ``tanh_per_s``: XLA's tanh alone on
    4 million values of each dtype, and the cores it kept busy (``tanh_cores``):
    the ceiling it puts on the forward pass.
    """
    tanh = jax.jit(jax.numpy.tanh)
    ceiling, ceiling_cores = {}, {}
    for dtype in ("float64", "float32"):
        values = jax.numpy.asarray(rng.normal(size=4_000_000), dtype)
        ms, ceiling_cores[dtype] = _median_ms_and_cores(lambda v=values: jax.block_until_ready(tanh(v)))
        ceiling[dtype] = values.size / (ms / 1e3)
    n_big = 10**5
    t_nets = fitted.num_networks
    s = t_nets * -(-MIN_NOISE_SAMPLES // t_nets)
    c = chunk_points(fitted, n_big, 65536, s)
    model = device_model(fitted)
    z = rng.normal(size=(c, 5)).astype(fitted.bnn.dtype)
    forward = jax.jit(lambda m, z: per_draw(fitted.bnn, m, z, None, t_nets))
    flat = jax.numpy.asarray(np.asarray(fitted.draws.positions).reshape(t_nets, -1), fitted.bnn.jdtype)
    params = jax.jit(jax.vmap(fitted.bnn.unflatten))(flat)
    vmapped = jax.jit(lambda p, z: jax.vmap(lambda q: fitted.bnn.apply(q, z))(p))
    fn = chunk_function(fitted.bnn, t_nets, Request(num_samples=s, log10=True))
    moments_fn = chunk_function(fitted.bnn, t_nets, Request(log10=True))
    two_pass_fn = chunk_function(fitted.bnn, t_nets, Request(log10=True, stream_moments=False))
    args = (model, z, None, jax.random.key(0), 0, None, None)
    draws = np.asarray(fn(*args)["samples"])
    xla_sort = jax.jit(lambda a: jax.numpy.sort(a, axis=-1))
    on_device = jax.numpy.asarray(draws)
    kernel_t = model.params[1].kernel_t  # [k, G, 20 out, 20 in]
    hidden = jax.numpy.asarray(rng.normal(size=kernel_t.shape[:2] + (20, c)), fitted.bnn.jdtype)
    second = jax.jit(lambda h, w: jax.numpy.einsum("kgoi,kgin->kgon", w, h))
    second_ms, second_cores = _median_ms_and_cores(lambda: jax.block_until_ready(second(hidden, kernel_t)))
    return {
        "chunk_points": c,
        "network_group": network_groups(t_nets)[1],
        "predict_threads": PREDICT_THREADS,
        "second_layer_matmul_ms": second_ms,
        "second_layer_matmul_cores": second_cores,
        "noise_samples_per_point": s,
        "forward_ms": _median_ms(lambda: jax.block_until_ready(forward(model, z))),
        "forward_vmapped_ms": _median_ms(lambda: jax.block_until_ready(vmapped(params, z))),
        "moments_device_part_ms": _median_ms(lambda: jax.block_until_ready(moments_fn(*args))),
        "moments_two_pass_device_part_ms": _median_ms(lambda: jax.block_until_ready(two_pass_fn(*args))),
        "device_part_ms": _median_ms(lambda: jax.block_until_ready(fn(*args))),
        "host_sort_and_quantiles_ms": _median_ms(lambda: host_quantiles(draws, (0.025, 0.16, 0.84, 0.975), True)),
        "xla_sort_ms": _median_ms(lambda: jax.block_until_ready(xla_sort(on_device))),
        "tanh_per_s": ceiling,
        "tanh_cores": ceiling_cores,
    }


def goals(records: list[dict]) -> list[dict]:
    """The issue's goals against the measurements, per dtype and kind of call (float64 with
    intervals is the default a user gets)."""
    out = []
    for dtype in ("float64", "float32"):
        for outputs in OUTPUTS:

            def rows(arch: str, batch: int | None = None, dtype: str = dtype, outputs: str = outputs) -> list[dict]:
                return [
                    r
                    for r in records
                    if r["arch"] == arch
                    and r["dtype"] == dtype
                    and r.get("outputs", "intervals") == outputs
                    and batch in (None, r["batch"])
                    and not r.get("memory_run")
                ]

            if not rows("5-20-20-1"):
                continue
            checks = [
                (
                    "batched points/s, 5-20-20-1 (best batch)",
                    "points_per_s_5-20-20-1",
                    max(r["points_per_s"] for r in rows("5-20-20-1")),
                    True,
                ),
                (
                    "single-point latency ms, 5-20-20-1",
                    "latency_ms_1_point",
                    min(r["latency_ms"] for r in rows("5-20-20-1", 1)),
                    False,
                ),
            ]
            if outputs == "intervals":
                checks += [
                    ("load ms, 5-20-20-1", "load_ms", rows("5-20-20-1")[0]["load_ms"], False),
                    ("load ms, 5-50-50-50-1", "load_ms", rows("5-50-50-50-1")[0]["load_ms"], False),
                ]
            for label, key, measured, higher in checks:
                target = GOALS[key]
                met = measured >= target if higher else measured <= target
                goal = f"{label}, {dtype}, {outputs}"
                out.append({"goal": goal, "target": target, "measured": measured, "met": met})
    return out


def markdown(out: dict) -> str:
    lines = [
        "# Prediction speed (generated by `benchmarks/predict.py` from `predict.json`)",
        "",
        f"Date {out['date']}, load average at start/end {out['machine']['load_average_1_5_15_at_start']} / "
        f"{out['machine']['load_average_1_5_15_at_end']} on {out['machine']['cpu_count']} cores "
        "(a shared machine: absolute numbers are lower bounds).",
        f"Setting: {out['settings']['description']}",
        "",
        "`outputs`: `intervals` is the default call (moments and 68/95 % intervals from 2,000 noise "
        "samples per point); `moments` is `predict(..., levels=())` (mean, std, epistemic and aleatoric "
        "std; no noise samples).",
        "",
        "| arch | dtype | outputs | batch | points/s | latency ms | load ms | peak RSS MB |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in out["records"]:
        if r.get("memory_run"):
            continue
        rss = "" if r.get("peak_rss_mb") is None else f"{r['peak_rss_mb']:.0f}"
        lines.append(
            f"| {r['arch']} | {r['dtype']} | {r.get('outputs', 'intervals')} | {r['batch']:,} | "
            f"{r['points_per_s']:,.0f} | {r['latency_ms']:.2f} | "
            f"{r['load_ms']:.1f} | {rss} |"
        )
    mem = [r for r in out["records"] if r.get("memory_run")]
    for r in mem:
        naive_gb = out["settings"]["networks"] * r["batch"] * 8 * 2 / 1e9
        lines += [
            "",
            f"## Memory for 10^6 points (`--memory-run`, {r['date']}, "
            f"load average at start {r['load_average_1_5_15_at_start']})",
            "",
            f"One `predict` call on {r['batch']:,} points (5-20-20-1, float64, "
            f"{out['settings']['networks']:,} networks): "
            f"{r['latency_ms'] / 1e3:.0f} s ({r['points_per_s']:,.0f} points/s); peak resident memory "
            f"{r['peak_rss_mb']:.0f} MB against {r['rss_before_call_mb']:.0f} MB before the call: the call added "
            f"{r['peak_rss_mb'] - r['rss_before_call_mb']:.0f} MB, "
            f"{(r['peak_rss_mb'] - r['rss_before_call_mb']) * 2**20 / r['batch']:.0f} bytes per point, of which "
            f"the input is {r['input_mb']:.0f} MB and the returned mean, std and interval arrays "
            f"{r['result_arrays_mb']:.0f} MB. Holding every network's mean and variance for every point at once "
            f"would take {naive_gb:.0f} GB; `predict` works in fixed-size chunks of points.",
        ]
    lines += ["", "## Goals", "", "| goal | target | measured | met |", "|---|---:|---:|---|"]
    for g in out["goals"]:
        lines.append(f"| {g['goal']} | {g['target']} | {g['measured']:.4g} | {'yes' if g['met'] else 'no'} |")
    b = out.get("breakdown")
    if b:
        lines += [
            "",
            f"## Where the time goes (5-20-20-1, float64, one chunk of {b['chunk_points']} points, "
            f"{b['noise_samples_per_point']} noise samples per point; ms per chunk)",
            "",
            "| network forward pass | device part without noise (forward, moments) | whole device part "
            "(forward, moments, noise samples) | host sort + quantiles | the same sort in XLA |",
            "|---:|---:|---:|---:|---:|",
            f"| {b['forward_ms']:.1f} | {b.get('moments_device_part_ms', float('nan')):.1f} | "
            f"{b['device_part_ms']:.1f} | {b['host_sort_and_quantiles_ms']:.1f} | {b['xla_sort_ms']:.1f} |",
            "",
        ]
        if "forward_vmapped_ms" in b:
            lines.append(
                f"The forward pass as `predict` runs it (the networks in groups of {b['network_group']}, "
                f"hidden units points-last) took {b['forward_ms']:.1f} ms; the same networks vmapped all at "
                f"once, the layout `predict` used before, {b['forward_vmapped_ms']:.1f} ms "
                f"({b['forward_vmapped_ms'] / b['forward_ms']:.2f}x), measured side by side in this process. "
                f"The times above are one chunk in one thread; `predict` runs chunks in "
                f"{b['predict_threads']} threads (`PREDICT_THREADS`, the usable cores)."
            )
        if "moments_two_pass_device_part_ms" in b:
            lines.append(
                f"Without noise the moments are accumulated group by group inside the network scan: "
                f"{b['moments_device_part_ms']:.1f} ms for the chunk, against "
                f"{b['moments_two_pass_device_part_ms']:.1f} ms when every network's mean and variance are "
                f"materialised first and then reduced "
                f"({b['moments_two_pass_device_part_ms'] / b['moments_device_part_ms']:.2f}x), side by side."
            )
        rate = b["chunk_points"] * 1000 * 40 / b["forward_ms"] * 1e3
        lines.append(
            f"The forward pass ran at {rate / 1e6:.1f} million tanh per second (1,000 networks x 40 hidden units "
            "per point): with 40,000 tanh per point, 30,000 points/s needs 1,200 million per second, "
            f"{1.2e9 / rate:.1f}x this rate, before any noise sampling."
        )
        ceiling = b.get("tanh_per_s")
        if ceiling:
            cores = b.get("tanh_cores")
            on = "" if cores is None else f" (on {cores['float64']:.1f} / {cores['float32']:.1f} cores)"
            lines.append(
                f"XLA's tanh alone ran at {ceiling['float64'] / 1e6:,.0f} million per second in float64 and "
                f"{ceiling['float32'] / 1e6:,.0f} million in float32{on}: the tanh of 1,000 5-20-20-1 "
                f"networks alone caps prediction at {ceiling['float64'] / 40000:,.0f} points/s in float64 and "
                f"{ceiling['float32'] / 40000:,.0f} in float32 on this machine, before the 20x20 matrix products "
                "of the second layer (800,000 floating-point operations per point) and any noise sampling."
            )
        if "second_layer_matmul_ms" in b:
            lines.append(
                f"Those products of all groups in one batched call (not inside the scan, as `predict` runs "
                f"them) took {b['second_layer_matmul_ms']:.1f} ms against the chunk's "
                f"{b['forward_ms']:.1f} ms forward pass, on {b['second_layer_matmul_cores']:.1f} cores (CPU time "
                f"over wall time): {b['chunk_points'] * 400_000 / b['second_layer_matmul_ms'] / 1e6:.1f} billion "
                "multiply-adds per second."
            )
    lines += ["", *out.get("notes", [])]
    return "\n".join(lines) + "\n"


MEMORY_BATCH = 10**6


def batches(largest: int) -> list[int]:
    """1, 10, 100, ... up to ``largest``."""
    return [10**k for k in range(int(math.log10(largest)) + 1)]


def memory_run(args: argparse.Namespace) -> int:
    """One call on 10^6 points (no untimed warm-up: chunks have the shape of smaller batches).

    Its record (``"memory_run": true``) replaces an earlier one in the JSON; the rest is kept.
    Peak RSS is reset just before the call, so it is the memory of that call (plus the process).
    """
    out = json.loads(args.out.read_text())
    load_start = os.getloadavg()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model"
        save_model(make_model("5-20-20-1", args.networks).with_dtype("float64"), path)
        fitted = load_model(path)
        predict(fitted, rng.normal(size=(1000, 5)))  # compile the chunk shape on a small batch
        x = rng.normal(size=(MEMORY_BATCH, 5))
        rss_before = peak_rss_mb() if peak_rss_reset() else None
        t0 = time.perf_counter()
        pred = predict(fitted, x)
        lat = time.perf_counter() - t0
        rss = peak_rss_mb()
    result_mb = sum(a.nbytes for a in (pred.mean, pred.std, *pred.lower.values(), *pred.upper.values())) / 2**20
    rec = {
        "arch": "5-20-20-1",
        "dtype": "float64",
        "batch": MEMORY_BATCH,
        "points_per_s": MEMORY_BATCH / lat,
        "latency_ms": 1e3 * lat,
        "latency_ms_min": 1e3 * lat,
        "load_ms": next(r["load_ms"] for r in out["records"] if r["arch"] == "5-20-20-1" and r["dtype"] == "float64"),
        "timed_calls": 1,
        "peak_rss_mb": rss,
        "rss_before_call_mb": rss_before,
        "input_mb": x.nbytes / 2**20,
        "result_arrays_mb": result_mb,
        "memory_run": True,
        "load_average_1_5_15_at_start": [round(v, 2) for v in load_start],
        "load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()],
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    print(f"10^6 points: {rec['points_per_s']:,.0f} points/s, peak RSS {rss} MB (before {rss_before} MB)", flush=True)
    out["records"] = [r for r in out["records"] if not r.get("memory_run")] + [rec]
    _results.write(args.out, out, markdown(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="batches up to 10^6 for both architectures")
    parser.add_argument("--reps", type=int, default=5, help="timed calls per batch (at most; see --budget)")
    parser.add_argument("--budget", type=float, default=3.0, help="seconds of timed calls per batch, after one")
    parser.add_argument("--networks", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=RESULTS / "predict.json")
    parser.add_argument(
        "--render-only", action="store_true", help="recompute the goals and the Markdown from an existing JSON"
    )
    parser.add_argument(
        "--memory-run",
        action="store_true",
        help="only one 10^6-point call (5-20-20-1, float64): its time and peak memory, merged into the JSON",
    )
    args = parser.parse_args(argv)
    if args.memory_run:
        return memory_run(args)
    if args.render_only:
        out = json.loads(args.out.read_text())
        out["goals"] = goals(out["records"])
        _results.write(args.out, out, markdown(out))
        return 0

    load_start = os.getloadavg()
    largest = {"5-20-20-1": 10**6 if args.full else 10**4, "5-50-50-50-1": 10**6 if args.full else 10**3}
    rng = np.random.default_rng(0)
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ARCHS:
            for dtype in ("float64", "float32"):
                path = Path(tmp) / f"{arch}-{dtype}"
                save_model(make_model(arch, args.networks).with_dtype(dtype), path)
                load_model(path)  # page cache
                loads = []
                for _ in range(20):
                    t0 = time.perf_counter()
                    fitted = load_model(path)
                    loads.append(time.perf_counter() - t0)
                load_ms = 1e3 * statistics.median(loads)
                for batch, outputs in ((b, o) for b in batches(largest[arch]) for o in OUTPUTS):
                    x = rng.normal(size=(batch, 5))
                    # small calls are cheap and noisy: more of them (within the budget) for a stable median
                    reps = args.reps if batch > 100 else max(args.reps, 500 if batch == 1 else 50)
                    tracked = peak_rss_reset()
                    times = time_calls(fitted, x, reps, args.budget, **OUTPUTS[outputs])
                    lat = statistics.median(times)
                    rec = {
                        "arch": arch,
                        "dtype": dtype,
                        "outputs": outputs,
                        "batch": batch,
                        "points_per_s": batch / lat,
                        "latency_ms": 1e3 * lat,
                        "latency_ms_min": 1e3 * min(times),
                        "load_ms": load_ms,
                        "timed_calls": len(times),
                        "peak_rss_mb": peak_rss_mb() if tracked else None,
                    }
                    records.append(rec)
                    print(
                        f"{arch:>13} {dtype} {outputs:>9} batch {batch:>8,}: {rec['points_per_s']:>10,.0f} points/s, "
                        f"{rec['latency_ms']:9.2f} ms/call, load {load_ms:.1f} ms, peak RSS {rec['peak_rss_mb']} MB",
                        flush=True,
                    )
                del fitted

    bd = breakdown(make_model("5-20-20-1", args.networks).with_dtype("float64"), rng)
    print(f"breakdown: {bd}", flush=True)

    # A --memory-run record (10^6 points, ten minutes) is kept from the previous results, with its date.
    if args.out.exists():
        records += [r for r in json.loads(args.out.read_text())["records"] if r.get("memory_run")]
    out = {
        "records": records,
        "goals": goals(records),
        "settings": {
            "networks": args.networks,
            "noise_samples_per_point": 2000,
            "levels": [0.68, 0.95],
            "log_target": True,
            "largest_batch": largest,
            "reps": args.reps,
            "budget_s": args.budget,
            "description": (
                "full run: batches 1..10^6"
                if args.full
                else "reduced: batches 1..10^4 (5-20-20-1) and 1..10^3 (5-50-50-50-1); --full for 10^6"
            ),
        },
        "breakdown": bd,
        "notes": [
            "Per point, 1,000 5-20-20-1 networks evaluate 40,000 tanh and the intervals need 2,000 noise "
            "samples (normal draws, a sort) per point and space; the table above splits one chunk's time. "
            "The quantiles are taken on the host because NumPy's sort is faster than XLA's on CPU (last "
            "two columns); the device computes the next chunk meanwhile.",
        ],
        "machine": _results.machine(load_start),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _results.write(args.out, out, markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
