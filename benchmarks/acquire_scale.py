"""``sigmabnn acquire`` on 10^5 and 10^6 candidates: wall time and peak memory, streamed against whole-table.

Issue 26 asks that 10^6 candidates fit in memory: ``acquire`` streams the candidate file in chunks
(``--chunk-rows``, default 100,000) and keeps only the ``pool_size`` best rows for the batch step
(:mod:`sigmabnn.acquisition.select`). Each cell runs in a fresh process and chooses 250 rows from a
Parquet file of ``n`` candidates (5 uniform inputs and an id column), with

- ``streamed``: the command itself, ``sigmabnn acquire MODEL CANDIDATES --n 250 --criterion C``;
- ``whole``: the peer a user would otherwise write, the whole table read into memory and passed to
  :func:`sigmabnn.acquisition.select` at once (the same scores; for the regression model every
  candidate's draws, ``n x 1,000`` floats and more, are then held at once).

Models (``kind``): ``regression``, 1,000 networks of ``5-20-20-1`` with a log10 target (random
weights: the cost of every criterion but ``bald`` does not depend on their values;
``model_load.make_model``); ``fitted``, the library's default fit (``sigmabnn.fit(table, "y")``) of
600 synthetic rows whose first input covers only [-1, 0.3] of the candidates' [-1, 1] (BALD's cost
does depend on the values: it is computed only for the candidates whose upper bound can reach the
pool, ``scored`` in the cells); and ``classifier``, a 3-class categorical ``5-20-20-3`` BNN sampled
by ChEES (8 chains x 125 draws = 1,000 networks, a short warm-up: its fit is not what is measured)
on 600 synthetic rows. Seconds: the process's wall
time (JAX start-up and compilation included); peak RSS: ``os.wait4``'s ``ru_maxrss``. The load
average (1 min) is recorded at each cell's start and end; cells run one at a time.

Results: ``results/acquire_scale.{json,md}``, written after every cell; a rerun skips recorded cells.

    python benchmarks/acquire_scale.py            # the default grid
    python benchmarks/acquire_scale.py --table-only
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _results import RESULTS_DIR, finish_metadata, markdown_table, run_lines, run_metadata, write  # noqa: E402

OUT = RESULTS_DIR / "acquire_scale.json"
WORK = Path(tempfile.gettempdir()) / "sigmabnn_acquire_scale"
CHOOSE = 250
#: (kind, criterion, how, candidates) in run order: the streamed command at both sizes, the peer where it fits.
#: The regression model's memory at 10^6 is measured with ``variance`` (the epistemic variance of the draws'
#: means), whose scoring holds the same per-chunk draws as every criterion's. ``bald``'s quadrature costs
#: ``32 x 10 x 1,000`` component densities per candidate it is computed for; before it skipped the candidates
#: whose upper bound cannot reach the pool, a run on 10^5 had not finished after 8 minutes and was stopped.
GRID: tuple[tuple[str, str, str, int], ...] = (
    ("regression", "variance", "streamed", 100_000),
    ("regression", "variance", "whole", 100_000),
    ("regression", "variance", "whole", 300_000),
    ("regression", "variance", "streamed", 1_000_000),
    ("regression", "random", "streamed", 1_000_000),
    ("regression", "bald", "streamed", 10_000),
    ("regression", "bald", "streamed", 100_000),
    ("fitted", "bald", "streamed", 10_000),
    ("fitted", "bald", "streamed", 100_000),
    ("fitted", "bald", "streamed", 1_000_000),
    ("fitted", "epig", "streamed", 100_000),
    ("fitted", "epig", "streamed", 1_000_000),
    ("classifier", "bald", "streamed", 100_000),
    ("classifier", "bald", "whole", 100_000),
    ("classifier", "bald", "streamed", 1_000_000),
)


def candidates_file(n: int) -> Path:
    """A Parquet table of ``n`` candidates: ``id`` and inputs ``x0..x4`` ~ U[-1, 1] (seeded, written once)."""
    import pandas as pd

    path = WORK / f"candidates_{n}.parquet"
    if not path.exists():
        rng = np.random.default_rng(n)
        df = pd.DataFrame(rng.uniform(-1, 1, size=(n, 5)), columns=[f"x{i}" for i in range(5)])
        df.insert(0, "id", np.arange(n))
        tmp = path.with_suffix(".tmp")
        df.to_parquet(tmp, index=False)
        tmp.rename(path)
    return path


def model_dir(kind: str) -> Path:
    """The model of ``kind``, saved once under :data:`WORK`."""
    from sigmabnn.io.model_file import save_model

    path = WORK / f"model_{kind}"
    if path.exists():
        return path
    if kind == "regression":
        from model_load import make_model

        fitted = make_model("5-20-20-1", 1000)
    elif kind == "fitted":
        import pandas as pd

        import sigmabnn

        rng = np.random.default_rng(1)
        x = rng.uniform(-1, 1, size=(600, 5))
        x[:, 0] = rng.uniform(-1, 0.3, size=600)
        y = np.sin(2 * x[:, 0]) + x[:, 1] * x[:, 2] + 0.3 * x[:, 3] + 0.1 * rng.normal(size=600)
        df = pd.DataFrame(x, columns=[f"x{i}" for i in range(5)]).assign(y=y)
        fitted, _ = sigmabnn.fit(df, "y", progress=False, seed=0)
    else:
        import pandas as pd

        import sigmabnn

        rng = np.random.default_rng(0)
        x = rng.uniform(-1, 1, size=(600, 5))
        label = np.digitize(x[:, 0] + 0.5 * x[:, 1] + 0.2 * rng.normal(size=600), [-0.4, 0.4])
        df = pd.DataFrame(x, columns=[f"x{i}" for i in range(5)]).assign(label=np.array(["a", "b", "c"])[label])
        fitted, _ = sigmabnn.fit(df, "label", likelihood="categorical", num_warmup=50, num_samples=125,
                                 progress=False, seed=0)  # fmt: skip
    save_model(fitted, path)
    return path


def run_cell(model: Path, cand: Path, criterion: str, how: str, out: Path) -> None:
    """The child: one acquisition of :data:`CHOOSE` rows of the candidates ``cand`` with ``model``, as ``how`` says."""
    if how == "streamed":
        from sigmabnn.cli.main import main

        code = main(["acquire", str(model), str(cand), "--n", str(CHOOSE), "--criterion", criterion, "-o", str(out)])
        if code:
            raise SystemExit(code)
        return
    from sigmabnn.acquisition import select
    from sigmabnn.data.tables import read_table
    from sigmabnn.io.model_file import load_model

    chosen = select(load_model(model), read_table(cand), CHOOSE, criterion=criterion)
    chosen.rows.to_csv(out, index=False)


def measure(kind: str, criterion: str, how: str, n: int) -> dict[str, Any]:
    """Run one cell in a fresh process: its wall time, peak RSS and load average."""
    model, cand = model_dir(kind), candidates_file(n)  # built before the clock starts
    out = WORK / f"chosen_{kind}_{criterion}_{how}_{n}.csv"
    spec = json.dumps([str(model), str(cand), criterion, how, str(out)])
    load0 = os.getloadavg()[0]
    t0 = time.perf_counter()
    log = out.with_suffix(".log")
    with open(log, "w") as stderr:
        proc = subprocess.Popen([sys.executable, __file__, "--cell", spec], stderr=stderr)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    err = log.read_text(errors="replace").strip().splitlines()
    ok = os.waitstatus_to_exitcode(status) == 0
    rows = sum(1 for _ in open(out)) - 1 if ok and out.exists() else None
    note = [line for line in err if " computed for " in line]
    scored = int(note[-1].split(" computed for ")[1].split(" of ")[0].replace(",", "")) if note else n
    return {
        "kind": kind, "criterion": criterion, "how": how, "candidates": n, "status": "ok" if ok else "failed",
        "error": None if ok else (err[-1] if err else "no stderr"), "seconds": round(seconds, 2),
        "peak_rss_mb": round(usage.ru_maxrss / 1024.0, 1), "rows_written": rows,
        "scored": scored if ok else None, "load_average_start": round(load0, 2),
        "load_average_end": round(os.getloadavg()[0], 2),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }  # fmt: skip


def _key(rec: dict[str, Any]) -> tuple[str, str, str, int]:
    return (rec["kind"], rec["criterion"], rec["how"], int(rec["candidates"]))


def whole_table_projection(records: Sequence[dict[str, Any]], kind: str, n: int = 1_000_000) -> float | None:
    """The whole-table peer's peak RSS (MB) at ``n`` candidates, extrapolated linearly from its two sizes."""
    pts = sorted((r["candidates"], r["peak_rss_mb"]) for r in records
                 if r["kind"] == kind and r["how"] == "whole" and r["status"] == "ok")  # fmt: skip
    if len(pts) < 2 or pts[-1][0] == pts[0][0]:
        return None
    (n0, m0), (n1, m1) = pts[0], pts[-1]
    return m0 + (m1 - m0) * (n - n0) / (n1 - n0)


COLUMNS = [
    ("kind", "model", ""), ("criterion", "criterion", ""), ("how", "how", ""), ("candidates", "candidates", ",d"),
    ("status", "status", ""), ("seconds", "seconds", ".1f"), ("peak_rss_mb", "peak RSS MB", ".0f"),
    ("rows_written", "rows written", "d"), ("scored", "scored", ",d"), ("load", "load start/end", ""),
]  # fmt: skip


def render(data: dict[str, Any]) -> str:
    records = data.get("records", [])
    rows = [{**r, "load": f"{r['load_average_start']}/{r['load_average_end']}"} for r in records]
    lines = []
    for kind in ("regression", "fitted", "classifier"):
        big = [r for r in records if r["kind"] == kind and r["how"] == "streamed"]
        proj = whole_table_projection(records, kind)
        for r in big:
            lines.append(
                f"- {kind}, {r['criterion']}: {r['candidates']:,} candidates streamed in {r['seconds']:.0f} s with a "
                f"peak of {r['peak_rss_mb']:.0f} MB ({r['status']})"
                + (
                    f", the score computed for {r['scored']:,}"
                    if (r.get("scored") or r["candidates"]) < r["candidates"]
                    else ""
                )
            )
        if proj is not None:
            lines.append(f"- {kind}: the whole-table peer's peak RSS, extrapolated linearly to 10^6: {proj:.0f} MB")
    runs = run_lines(data.get("runs", []))
    return (
        "# `sigmabnn acquire` on 10^5 to 10^6 candidates\n\n"
        "Generated by `benchmarks/acquire_scale.py` from `acquire_scale.json`; do not edit.\n\n"
        + "\n\n".join((__doc__ or "").split("\n\n")[1:4])
        + "\n\n## Summary\n\n"
        + "\n".join(lines)
        + "\n\n## Cells\n\n"
        + markdown_table(rows, COLUMNS)
        + "\n## Runs\n\n"
        + runs
    )


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--out", type=Path, default=OUT)
    ap.add_argument("--force", action="store_true", help="rerun cells already recorded")
    ap.add_argument("--rerun", action="append", default=[], metavar="KIND,CRITERION,HOW,N",
                    help="rerun this recorded cell (repeatable)")  # fmt: skip
    ap.add_argument("--table-only", action="store_true", help="regenerate the Markdown from the JSON")
    ap.add_argument("--cell", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.cell:
        model, cand, criterion, how, out = json.loads(args.cell)
        run_cell(Path(model), Path(cand), criterion, how, Path(out))
        return 0
    data = json.loads(args.out.read_text()) if args.out.exists() else {"records": [], "runs": []}
    if not args.table_only:
        WORK.mkdir(parents=True, exist_ok=True)
        rerun = {(k, c, h, int(n)) for k, c, h, n in (spec.split(",") for spec in args.rerun)}
        done = {_key(r) for r in data["records"]} - rerun
        meta = run_metadata("benchmarks/acquire_scale.py")
        data["runs"].append(meta)
        for cell in GRID:
            if cell in done and not args.force:
                continue
            rec = measure(*cell)
            data["records"] = [r for r in data["records"] if _key(r) != cell] + [rec]
            data["runs"][-1] = finish_metadata(meta)
            write(args.out, data, render(data))
            print(f"{cell}: {rec['status']}, {rec['seconds']:.1f} s, {rec['peak_rss_mb']:.0f} MB", flush=True)
    write(args.out, data, render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
