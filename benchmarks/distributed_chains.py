"""The chains of one fit on 2 Dask workers against one process: seconds per phase, speedup, equal draws.

Each case fits a synthetic table (``rows`` rows, ``features`` inputs, a smooth function plus noise,
seed 0) twice with the same seed: ``workers = 0`` in this process (``sigmabnn.fit``), ``workers = 2``
with ``client=`` a ``LocalCluster`` of 2 worker processes of one thread, each pinned to one core
(:func:`sigmabnn.distributed.cluster.connect`; the chains split evenly, one task per worker and
phase). Recorded per fit: the wall time of the fit (``seconds``, the cluster already running; its
start is ``cluster_start_seconds``), the MAP and sampling phases as the report times them
(compilation included: each worker compiles its own functions), the speedup serial / 2 workers,
the 1-minute load average just before and just after the fit (``os.getloadavg``), and for the
2-worker fit the largest absolute difference of its draws from the serial draws (0: bit for bit)
and from the draws of the same one-process fit run with XLA confined to one thread, as each worker
is (:func:`single_thread_draws`, a fresh process after the timed fits): the serial fit's matrix
products use both cores, which rounds some sums differently, and a sampler carries such a
difference along.

Sizes (:data:`SIZES`): ``small`` (a minute or two in all) and ``larger`` (a wider network, ten
times the rows and the default's 8 chains, each trajectory capped at 63 leapfrog steps so that
NUTS too finishes in minutes; a few minutes per fit). Methods: ChEES (the default: only
its MAP starts and sampling are split, its warm-up is one task) and NUTS (MAP starts, warm-up and
sampling split). Records go to ``benchmarks/results/distributed_chains.{json,md}``; a case
already recorded with the same settings is skipped, so an interrupted run resumes. The numbers
are only as good as the machine is quiet: the load averages say how busy it was.

    python benchmarks/distributed_chains.py --sizes small        # what the committed results hold
    python benchmarks/distributed_chains.py --sizes small larger
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

_HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(_HERE))
import _results  # noqa: E402

# The sibling script distributed.py is named like the ``distributed`` package: once ``_results`` is
# imported, the script's directory, which Python puts first on sys.path (and hands on to the worker
# processes), is taken off so that it cannot shadow the package.
sys.path[:] = [p for p in sys.path if Path(p or os.getcwd()).resolve() != _HERE]

RESULTS = _results.RESULTS_DIR / "distributed_chains.json"
SIZES: dict[str, dict[str, Any]] = {
    "small": {"rows": 200, "features": 3, "architecture": "3-16-16-1", "num_chains": 4, "num_warmup": 100,
              "num_samples": 50, "map_steps": 300},
    "larger": {"rows": 2000, "features": 5, "architecture": "5-32-32-1", "num_chains": 8, "num_warmup": 150,
               "num_samples": 75, "map_steps": 1000, "max_tree_depth": 6},
}  # fmt: skip
METHODS = ("chees", "nuts")
WORKERS = 2


def table(size: dict[str, Any]) -> Any:
    """``rows`` rows of ``features`` uniform inputs and ``y = sin(x0) + 0.5 x1 x2 + ... + noise`` (seed 0)."""
    import pandas as pd

    rng = np.random.default_rng(0)
    x = rng.uniform(-2, 2, size=(size["rows"], size["features"]))
    y = np.sin(x[:, 0]) + 0.5 * np.prod(x[:, 1:3], axis=1) + 0.1 * x.sum(axis=1) + 0.05 * rng.normal(size=len(x))
    return pd.DataFrame({**{f"x{i}": x[:, i] for i in range(x.shape[1])}, "y": y})


def fit_kwargs(size: dict[str, Any], method: str) -> dict[str, Any]:
    """``sigmabnn.fit``'s options for one size and method (the tree depth only where the size sets one)."""
    depth = {"max_tree_depth": size["max_tree_depth"]} if "max_tree_depth" in size else {}
    return {
        "method": method, "architecture": size["architecture"], "num_chains": size["num_chains"],
        "num_warmup": size["num_warmup"], "num_samples": size["num_samples"], "map": {"num_steps": size["map_steps"]},
        "progress": False, **depth,
    }  # fmt: skip


def timed_fit(data: Any, kwargs: dict[str, Any], client: Any = None) -> tuple[Any, dict[str, Any]]:
    """One fit; its model and record (seconds, phases, load averages around it)."""
    from sigmabnn import api

    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    fitted, report = api.fit(data, "y", client=client, **kwargs)
    seconds = time.perf_counter() - t0
    record = {
        "seconds": seconds,
        "map_seconds": report.timings.map_seconds,
        "sample_seconds": report.timings.sample_seconds,
        "load_1min_before": round(load_before, 2),
        "load_1min_after": round(os.getloadavg()[0], 2),
    }
    return fitted, record


def single_thread_draws(size_name: str, method: str) -> np.ndarray:
    """The draws of the one-process fit in a fresh process set up as a local worker is: the worker's
    environment (:func:`sigmabnn.distributed.cluster.worker_environment`, one core) and pinned to one core."""
    from sigmabnn.distributed.cluster import worker_environment

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "draws.npy"
        env = {**os.environ, **worker_environment(1)}
        cmd = [sys.executable, __file__, "--draws-to", str(out), "--sizes", size_name, "--methods", method]
        subprocess.run(cmd, env=env, check=True)
        return np.load(out)


def _write_draws(path: Path, size_name: str, method: str) -> int:
    """``single_thread_draws``' child: pinned to one core before JAX is imported, then the fit."""
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    size = SIZES[size_name]
    fitted, _ = timed_fit(table(size), fit_kwargs(size, method))
    np.save(path, np.asarray(fitted.draws.positions))
    return 0


def run_case(size_name: str, method: str) -> list[dict[str, Any]]:
    """The serial and the 2-worker fit of one size and method; their records."""
    from sigmabnn.distributed.cluster import connect

    size = SIZES[size_name]
    data, kwargs = table(size), fit_kwargs(size, method)
    base = {"size": size_name, "method": method, **{k: size[k] for k in ("rows", "architecture", "num_chains")}}
    serial, rec0 = timed_fit(data, kwargs)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    records = [{"case": f"{size_name}-{method}-serial", **base, "workers": 0, **rec0, "cluster_start_seconds": 0.0,
                "cores_of_the_process": cores}]  # fmt: skip
    print(f"{records[0]['case']}: {rec0['seconds']:.1f} s (load {rec0['load_1min_before']})", flush=True)
    t0 = time.perf_counter()
    with connect(None, WORKERS) as client:
        client.wait_for_workers(WORKERS)
        start = time.perf_counter() - t0
        dist, rec2 = timed_fit(data, kwargs, client)
    a, b = np.asarray(dist.draws.positions), np.asarray(serial.draws.positions)
    records.append({
        "case": f"{size_name}-{method}-{WORKERS}w", **base, "workers": WORKERS, **rec2, "cluster_start_seconds": start,
        "max_abs_diff_draws": float(np.max(np.abs(a - b))), "bitwise_equal": bool(np.array_equal(a, b)),
    })  # fmt: skip
    c = single_thread_draws(size_name, method)
    records[1]["max_abs_diff_draws_single_thread"] = float(np.max(np.abs(a - c)))
    records[1]["bitwise_equal_single_thread"] = bool(np.array_equal(a, c))
    for r in records:
        r["speedup"] = rec0["seconds"] / r["seconds"]
    r = records[1]
    print(
        f"{r['case']}: {r['seconds']:.1f} s, speedup {r['speedup']:.2f} (load {r['load_1min_before']}), "
        f"largest draw difference {r['max_abs_diff_draws']:.1e}",
        flush=True,
    )
    return records


QUIET_LOAD = 2.5
"""A fit was timed on a quiet machine when the 1-minute load average just before and just after it was at
most this (its own work on the 2 cores included)."""


def _load_sentence(records: list[dict[str, Any]]) -> str:
    """Whether every timing was taken on a quiet machine (:data:`QUIET_LOAD`), in bold where it was not."""
    loads = [r[k] for r in records for k in ("load_1min_before", "load_1min_after")]
    if max(loads, default=0.0) <= QUIET_LOAD:
        return f"Every fit was timed on a quiet machine (load average at most {QUIET_LOAD} with its own work)."
    return (
        "**Measured on a shared machine under load from other jobs (2 cores): the times are inflated and "
        "noisy, read the speedups with the load columns.**"
    )


def render(data: dict[str, Any]) -> str:
    columns = [
        ("size", "size", ""),
        ("method", "method", ""),
        ("architecture", "network", ""),
        ("rows", "rows", ""),
        ("num_chains", "chains", ""),
        ("workers", "workers", ""),
        ("seconds", "seconds", ".1f"),
        ("map_seconds", "MAP s", ".1f"),
        ("sample_seconds", "warm-up + sampling s", ".1f"),
        ("speedup", "speedup", ".2f"),
        ("load_1min_before", "load before", ".2f"),
        ("load_1min_after", "load after", ".2f"),
        ("cluster_start_seconds", "cluster start s", ".1f"),
        ("max_abs_diff_draws", "max draw diff", ".1e"),
        ("max_abs_diff_draws_single_thread", "against one thread", ".1e"),
    ]
    intro = (
        "# The chains of one fit on 2 Dask workers\n\n"
        "One fit in one process (workers 0, allowed the cores in `cores_of_the_process` of the JSON) against "
        "the same fit with its chains as tasks on a LocalCluster "
        "of 2 single-threaded worker processes (`fit(..., client=)`), same seed. Seconds are the fit's wall "
        "time with the cluster running; the MAP and warm-up + sampling columns are the report's phase times "
        "(compilation included, each worker compiling its own functions). Max draw diff: the largest absolute "
        "difference of the 2-worker fit's draws from the one-process fit's; against one thread: from the same "
        "one-process fit run afterwards in a process set up as a worker is (one core, XLA's multi-threaded Eigen "
        "off). Load average: 1 minute, just "
        "before and after each fit. " + _load_sentence(data["records"]) + " Generated by "
        "`benchmarks/distributed_chains.py` (sizes run: " + ", ".join(data["sizes_run"]) + ")."
    )
    runs = data.get("runs", [data["meta"]])  # one run of the script per line
    page = _results.page(intro, data["records"], columns, "", runs[-1])
    earlier = "".join("Earlier run: " + _results.meta_lines(m) for m in runs[:-1])
    return page + ("\n" + earlier if earlier else "")


def settings_key() -> str:
    return json.dumps({"sizes": SIZES, "methods": METHODS, "workers": WORKERS}, sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", nargs="+", choices=tuple(SIZES), default=list(SIZES), help="sizes to run")
    p.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS), help="samplers to run")
    p.add_argument("--out", type=Path, default=RESULTS, help="results JSON (default results/distributed_chains.json)")
    p.add_argument("--draws-to", type=Path, help=argparse.SUPPRESS)  # single_thread_draws' child: one fit's draws
    args = p.parse_args(argv)
    if args.draws_to is not None:
        return _write_draws(args.draws_to, args.sizes[0], args.methods[0])
    old = json.loads(args.out.read_text()) if args.out.is_file() else {}
    same = old.get("settings_key") == settings_key()
    records = old.get("records", []) if same else []
    earlier = [m for m in old.get("runs", []) if same and any(r.get("run_date") == m.get("date") for r in records)]
    meta = _results.run_metadata("benchmarks/distributed_chains.py")
    for size in args.sizes:
        for method in args.methods:
            if any(r["size"] == size and r["method"] == method for r in records):
                print(f"{size}-{method}: recorded, skipped")
                continue
            records.extend({**r, "run_date": meta["date"]} for r in run_case(size, method))
            sizes_run = sorted({r["size"] for r in records}, key=list(SIZES).index)
            data = {"settings_key": settings_key(), "sizes_run": sizes_run, "records": records}
            data["meta"] = _results.finish_metadata(meta)
            data["runs"] = [*earlier, data["meta"]]
            _results.write(args.out, data, render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
