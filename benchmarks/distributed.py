"""train-all and prediction scans on a Dask LocalCluster against one process: seconds, speedup, memory per worker.

Jobs (records of ``benchmarks/results/distributed.json``; the Markdown table is generated from it):

- ``train-all``: the recommended surrogates of the first ``processes`` processes of the
  built-in data with a reduced configuration (:data:`REDUCED`), seed 0. ``workers = 0``
  is the serial run (``train_all`` without a client, in this process); ``workers = 2`` a
  ``LocalCluster`` of 2 worker processes with one thread each, each pinned to one core
  (:func:`sigmabnn.distributed.cluster.connect`). ``speedup`` = serial seconds / seconds.
- ``predict``: ``points`` rows resampled from the built-in data, written as a Parquet data
  set of ``files`` files, predicted with the first process's model of the train-all job
  (mean, std, 68 % and 95 % intervals: :func:`sigmabnn.workflows.prediction_scan.predict_scan`),
  with 1 and 2 workers; ``speedup`` against 1 worker; ``points_per_s``.

``seconds`` is the wall time of the job on a running cluster (its start is in
``cluster_start_seconds``); ``peak_rss_mb_per_worker`` is the largest peak resident memory
(``VmHWM``) of a worker process (of this process for the serial run). Each job is recorded
when it finishes and skipped when the script is run again with the same settings, so an
interrupted run resumes. Needs both cores quiet: the goal is a train-all speedup >= 1.7 with
2 workers on 2 cores. ``--smoke`` runs a tiny version (2 processes, 10^4 points) into a
temporary directory; it checks the script, not the speed.

    python benchmarks/distributed.py            # the real run -> benchmarks/results/distributed.{json,md}
    python benchmarks/distributed.py --smoke    # a quick check
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import shutil
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

RESULTS = _results.RESULTS_DIR / "distributed.json"
SMOKE_OUT = Path(tempfile.gettempdir()) / "sigmabnn-bench-smoke" / "distributed.json"
REDUCED: dict[str, Any] = {
    "hidden": (20, 20),
    "map_steps": 2000,
    "map_lbfgs_steps": 100,
    "num_chains": 2,
    "num_warmup": 150,
    "num_samples": 100,
}
"""The reduced train-all configuration (NLOConfig overrides): a fit of about a minute per process."""
SMOKE_CONFIG: dict[str, Any] = {
    "hidden": (3,),
    "map_steps": 30,
    "map_lbfgs_steps": 5,
    "num_chains": 1,
    "num_warmup": 8,
    "num_samples": 4,
    "max_tree_depth": 2,
}
FULL = {"processes": 4, "points": 1_000_000, "files": 8, "config": REDUCED, "workers": 2}
SMOKE = {"processes": 2, "points": 10_000, "files": 2, "config": SMOKE_CONFIG, "workers": 2}
GOAL_SPEEDUP = 1.7


def peak_rss_mb() -> float:
    """This process's peak resident memory in MB (``VmHWM``; 0 where /proc is missing)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def settings_key(settings: dict[str, Any]) -> str:
    return json.dumps(settings, sort_keys=True, default=list)


def load_records(path: Path, settings: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of an earlier run with the same settings (else none: the run starts over)."""
    if not path.is_file():
        return []
    data = json.loads(path.read_text())
    return data.get("records", []) if data.get("settings_key") == settings_key(settings) else []


def case_name(job: str, workers: int) -> str:
    return f"{job}-{workers}w" if workers else f"{job}-serial"


def train_all_job(settings: dict[str, Any], workers: int, work: Path) -> dict[str, Any]:
    """One train-all run (``workers = 0``: serial) into a fresh directory; its record."""
    from sigmabnn.datasets import load_ewino
    from sigmabnn.physics.processes import processes_in
    from sigmabnn.workflows.surrogates import train_all

    table = load_ewino()
    processes = processes_in(table.columns)[: settings["processes"]]
    out = work / f"train-all-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    kwargs = {"processes": processes, "progress": False, **settings["config"]}
    if workers == 0:
        t0 = time.perf_counter()
        train_all(0, table, out, **kwargs)
        seconds = time.perf_counter() - t0
        return {"seconds": seconds, "peak_rss_mb_per_worker": peak_rss_mb(), "cluster_start_seconds": 0.0}
    return _on_cluster(workers, lambda client: train_all(0, table, out, client=client, **kwargs))


def _one_core_child(settings: dict[str, Any], work: str, queue: Any) -> None:
    os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # before JAX starts its threads
    queue.put(train_all_job(settings, 0, Path(work) / "one-core"))


def train_all_one_core_job(settings: dict[str, Any], workers: int, work: Path) -> dict[str, Any]:
    """The serial run in a fresh process confined to one core (what each worker of the cluster has).

    The serial run of :func:`train_all_job` lets XLA use both cores; this one says how much of the
    cluster's speed-up is the second core and how much the serial run already had.
    """
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    child = ctx.Process(target=_one_core_child, args=(settings, str(work), queue))
    child.start()
    record = queue.get()
    child.join()
    return record | {"cores": 1}


def _on_cluster(workers: int, job: Any) -> dict[str, Any]:
    from sigmabnn.distributed.cluster import connect

    t0 = time.perf_counter()
    with connect(None, workers) as client:
        client.wait_for_workers(workers)
        started = time.perf_counter()
        job(client)
        seconds = time.perf_counter() - started
        peaks = client.run(peak_rss_mb)
    return {
        "seconds": seconds,
        "peak_rss_mb_per_worker": max(peaks.values()),
        "cluster_start_seconds": started - t0,
    }


def points_data_set(settings: dict[str, Any], work: Path) -> Path:
    """``points`` rows resampled (seed 0) from the built-in data, as ``files`` Parquet files."""
    from sigmabnn.datasets import load_ewino

    path = work / f"points-{settings['points']}"
    if path.is_dir():
        return path
    table = load_ewino()
    table = table[[c for c in table.columns if not c.startswith("nlo_") and c != "split"]]
    rows = np.random.default_rng(0).integers(0, len(table), settings["points"])
    tmp = work / "points.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for i, part in enumerate(np.array_split(rows, settings["files"])):
        table.iloc[part].reset_index(drop=True).to_parquet(tmp / f"points-{i:03d}.parquet", index=False)
    tmp.rename(path)
    return path


def predict_job(settings: dict[str, Any], workers: int, work: Path) -> dict[str, Any]:
    """The prediction scan of the points data set with ``workers`` workers; its record."""
    from sigmabnn.cli.predict import output_frame
    from sigmabnn.workflows.prediction_scan import predict_scan

    models = sorted((work / "train-all-0").glob("*.model")) or sorted(work.glob("train-all-*/*.model"))
    if not models:
        raise SystemExit("the predict job needs a model of the train-all job: run that first")
    data = points_data_set(settings, work)
    levels = (0.68, 0.95)
    columns = functools.partial(output_frame, with_inputs=False)
    out = work / f"predictions-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    record = _on_cluster(workers, lambda c: predict_scan(c, models[0], data, out, columns=columns, levels=levels))
    return record | {"points": settings["points"], "points_per_s": settings["points"] / record["seconds"]}


def render(data: dict[str, Any]) -> str:
    records = data["records"]
    columns = [
        ("job", "job", ""),
        ("workers", "workers", ""),
        ("seconds", "seconds", ".1f"),
        ("speedup", "speedup", ".2f"),
        ("points_per_s", "points / s", ",.0f"),
        ("peak_rss_mb_per_worker", "peak MB per worker", ".0f"),
        ("cluster_start_seconds", "cluster start s", ".1f"),
    ]
    train = [r for r in records if r["job"] == "train-all" and r["workers"] > 0 and r.get("speedup")]
    if data.get("smoke"):
        train = []  # a smoke run checks the script: no goal is judged on it
    summary = "".join(
        f"train-all with {r['workers']} workers: speedup {r['speedup']:.2f} against the serial run "
        f"(goal >= {GOAL_SPEEDUP}: {'met' if r['speedup'] >= GOAL_SPEEDUP else 'missed'}).\n"
        for r in train
    )
    one_core = next((r for r in records if r["job"] == "train-all-one-core"), None)
    summary += "".join(
        f"The serial run confined to one core took {one_core['seconds']:.1f} s: the serial run on both cores "
        f"was {one_core['seconds'] / serial['seconds']:.2f}x faster than that, and the {r['workers']}-worker "
        f"cluster {one_core['seconds'] / r['seconds']:.2f}x. The ideal of {r['workers']} one-core workers is "
        f"the one-core time over {r['workers']}, {one_core['seconds'] / r['workers']:.1f} s: "
        f"{serial['seconds'] * r['workers'] / one_core['seconds']:.2f}x the serial run, the ceiling of the "
        "speedup on this machine.\n"
        for r in train
        for serial in [next(x for x in records if x["job"] == "train-all" and x["workers"] == 0)]
        if one_core is not None
    )
    s = data["settings"]
    intro = (
        "# train-all and prediction scans on a Dask LocalCluster\n\n"
        f"train-all of {s['processes']} processes of the built-in data (configuration {s['config']}); "
        f"prediction of {s['points']:,} points from a Parquet data set of {s['files']} files. "
        "Workers 0 = serial (one process, no Dask). Generated by `benchmarks/distributed.py`"
        + (" in smoke mode (not a measurement)." if data.get("smoke") else ".")
    )
    return _results.page(intro, records, columns, summary, data["meta"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="a tiny run into a temporary directory")
    p.add_argument("--out", type=Path, help="results JSON (default results/distributed.json; smoke: a temp dir)")
    p.add_argument("--work", type=Path, help="working directory for models and data (default: beside --out)")
    p.add_argument("--table", action="store_true", help="only rewrite the Markdown page from the results JSON")
    args = p.parse_args(argv)
    if args.table:
        out = args.out or RESULTS
        data = json.loads(out.read_text())
        _results.write(out, data, render(data))
        return 0
    settings = dict(SMOKE if args.smoke else FULL)
    out = args.out or (SMOKE_OUT if args.smoke else RESULTS)
    work = args.work or out.parent / f".{out.stem}-work"
    work.mkdir(parents=True, exist_ok=True)
    records = load_records(out, settings)
    meta = _results.run_metadata("benchmarks/distributed.py")
    jobs = [("train-all", 0, train_all_job), ("train-all", settings["workers"], train_all_job)]
    jobs += [("predict", 1, predict_job), ("predict", settings["workers"], predict_job)]
    jobs += [("train-all-one-core", 0, train_all_one_core_job)]
    for job, workers, run in jobs:
        name = case_name(job, workers)
        if any(r["case"] == name for r in records):
            print(f"{name}: recorded, skipped")
            continue
        record = {"case": name, "job": job, "workers": workers, **run(settings, workers, work)}
        base_workers = 0 if job.startswith("train-all") else 1
        base = next((r for r in records if r["job"] == job and r["workers"] == base_workers), None)
        record["speedup"] = 1.0 if workers == base_workers else (base["seconds"] / record["seconds"] if base else None)
        records.append(record)
        print(f"{name}: {record['seconds']:.1f} s, speedup {record['speedup']}", flush=True)
        data = {"smoke": args.smoke, "settings": settings, "settings_key": settings_key(settings), "records": records}
        data["meta"] = _results.finish_metadata(meta)
        _results.write(out, data, render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
