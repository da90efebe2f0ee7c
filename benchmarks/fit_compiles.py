"""Where a small table's default fit spends its time: every XLA compilation, by thread, beside the fit's phases.

For each table (default: the battery's two smallest, ``sin1d-100`` and ``lin2d-120`` of
``benchmarks/defaults.py``, which fit all their rows, and ``smooth6d-300``, which keeps validation rows and so
chooses its noise model first; their training rows) a fresh process runs ``sigmabnn.api.fit(path, "y")``
(the library's default) with JAX's compilation log on (``jax_log_compiles``) and records every
"Finished XLA compilation" message: when it ended (seconds since the fit began), the thread, the
function and the compilation's own seconds (wall time: compilations that overlap share the two cores,
so their seconds include that contention). Beside them: the fit's own phase timings from its report.

The default fit compiles the sampler's functions in a background thread while the MAP fits run in the
calling thread (:func:`sigmabnn.mcmc.run.compile_ahead`); the sampling can start only when both are
done. ``sampler compile starts`` is when the first compilation of that thread began (its end less its
seconds) and ``chunk ready`` when the sampler's ``jit(chunk)`` finished compiling; ``calling thread
compiles`` and ``other threads' compiles`` are the summed seconds per side. With ``likelihood="auto"``
(the default, on tables with validation rows) the sampler's shapes depend on the noise model chosen, so
its compilation starts after the choice's MAP fits instead of beside them.

Beside the fits, ``threads``: whether two XLA compilations in two threads of one process run in
parallel on the two cores. A fresh process compiles pairs of distinct functions (a loop of small
matrix products, a few hundred operations each), one pair after the other in the calling thread and
one pair in two threads at once, alternating the order, :data:`PAIRS` times; the medians of the
pairs' wall times are compared (ratio 1: the compilations do not overlap; 0.5: they fully do).

Usage::

    python benchmarks/fit_compiles.py                       # results/fit_compiles.{json,md}
    python benchmarks/fit_compiles.py --tables sin1d-100    # one table
"""

from __future__ import annotations

import json
import logging
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import battery_tables, finish_metadata, markdown_table, run_metadata, tables_parser, write  # noqa: E402

TABLES = ("sin1d-100", "lin2d-120", "smooth6d-300")
COMPILE = re.compile(r"Finished XLA compilation of (.+) in ([0-9.eE+-]+) sec")
#: Compilations listed one by one in the Markdown (the rest are summed).
TOP = 12
#: Pairs of compilations per way (sequential, two threads) in the ``threads`` measurement.
PAIRS = 4


def parse_compile(message: str) -> tuple[str, float] | None:
    """``(function, seconds)`` of a JAX "Finished XLA compilation" log message, else ``None``."""
    m = COMPILE.search(message)
    return None if m is None else (m.group(1), float(m.group(2)))


def summarize(compiles: list[dict[str, Any]], main_thread: str) -> dict[str, Any]:
    """Totals of a fit's compilations (``function``, ``thread``, ``ended``, ``seconds`` each) per side."""
    mine = [c for c in compiles if c["thread"] == main_thread]
    chunk = [c["ended"] for c in compiles if c["function"] == "jit(chunk)"]
    others = [c["ended"] - c["seconds"] for c in compiles if c["thread"] != main_thread]
    return {
        "num_compilations": len(compiles),
        "calling_thread_seconds": sum(c["seconds"] for c in mine),
        "other_threads_seconds": sum(c["seconds"] for c in compiles if c["thread"] != main_thread),
        "chunk_ready": max(chunk) if chunk else None,
        "sampler_compile_start": min(others) if others else None,
    }


def cell(name: str) -> dict[str, Any]:
    """One fit of table ``name`` in this process, with its compilations recorded (JSON-able)."""
    import jax

    from defaults import load_table
    from sigmabnn.api import fit

    compiles: list[dict[str, Any]] = []
    start = [0.0]

    class Recorder(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            parsed = parse_compile(record.getMessage())
            if parsed is not None:
                compiles.append({"function": parsed[0], "seconds": parsed[1], "thread": record.threadName,
                                 "ended": time.perf_counter() - start[0]})  # fmt: skip

    logger = logging.getLogger("jax")
    logger.addHandler(Recorder(level=logging.DEBUG))
    logger.setLevel(logging.DEBUG)
    logger.propagate = False  # the messages are recorded, not printed
    jax.config.update("jax_log_compiles", True)
    table = load_table(name, with_test=False)
    with tempfile.TemporaryDirectory(prefix="sigmabnn_compiles_") as tmp:
        path = Path(tmp) / "table.csv"
        table.train.to_csv(path, index=False)
        start[0] = time.perf_counter()
        _, report = fit(str(path), "y")
        seconds = time.perf_counter() - start[0]
    return {"table": name, "rows": len(table.train), "seconds": seconds, "timings": report.to_json().get("timings"),
            "compiles": compiles, **summarize(compiles, threading.current_thread().name)}  # fmt: skip


def _compile_seconds(offset: float) -> float:
    """Wall time of compiling one function (distinct per ``offset``, so nothing is cached)."""
    import jax
    import jax.numpy as jnp

    def f(x):
        def body(i, x):
            for j in range(40):
                x = jnp.tanh(x @ x.T + offset * j) * 0.5 + jnp.sin(x)
            return x

        return jax.lax.fori_loop(0, 10, body, x)

    t0 = time.perf_counter()
    jax.jit(f).lower(jnp.ones((8, 8))).compile()
    return time.perf_counter() - t0


def threads_cell() -> dict[str, Any]:
    """Pairs of compilations, one after the other and in two threads at once (JSON-able)."""
    _compile_seconds(0.5)  # the first compilation of a process carries one-off costs
    sequential, threaded, offset = [], [], 1.0
    for i in range(2 * PAIRS):
        offset += 2.0
        t0 = time.perf_counter()
        if (i % 2 == 0) == (i // 2 % 2 == 0):  # the ways in the order A B B A A B B A
            _compile_seconds(offset)
            _compile_seconds(offset + 1.0)
            sequential.append(time.perf_counter() - t0)
        else:
            pair = [threading.Thread(target=_compile_seconds, args=(offset + k,)) for k in (0.0, 1.0)]
            for t in pair:
                t.start()
            for t in pair:
                t.join()
            threaded.append(time.perf_counter() - t0)
    return {"sequential_seconds": sequential, "threaded_seconds": threaded, **threads_summary(sequential, threaded)}


def threads_summary(sequential: list[float], threaded: list[float]) -> dict[str, float]:
    """Medians of the pairs' wall times and their ratio (threads / sequential)."""
    seq, thr = float(statistics.median(sequential)), float(statistics.median(threaded))
    return {"sequential_median": seq, "threaded_median": thr, "ratio": thr / seq}


def run_cell(name: str) -> dict[str, Any]:
    """:func:`cell` in a fresh process (so every function compiles as it would for a new user)."""
    out = subprocess.run([sys.executable, __file__, "--cell", name], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise SystemExit(f"{name}: the fit failed: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


COLUMNS = [("table", "table", ""), ("rows", "rows", "d"), ("seconds", "fit s", ".1f"), ("map", "MAP s", ".1f"),
           ("sample", "sampling s", ".1f"), ("metrics", "metrics s", ".1f"),
           ("sampler_compile_start", "sampler compile starts s", ".1f"), ("chunk_ready", "chunk ready s", ".1f"),
           ("num_compilations", "compilations", "d"), ("calling_thread_seconds", "calling thread compiles s", ".1f"),
           ("other_threads_seconds", "other threads' compiles s", ".1f")]  # fmt: skip
TOP_COLUMNS = [("function", "function", ""), ("thread", "thread", ""), ("ended", "ended at s", ".2f"),
               ("seconds", "compile s", ".2f")]  # fmt: skip


def threads_markdown(t: dict[str, Any]) -> str:
    return (
        "\n## Two compilations in two threads\n\n"
        f"Median wall time of a pair of compilations over {len(t['sequential_seconds'])} pairs each way: "
        f"{t['sequential_median']:.2f} s one after the other, {t['threaded_median']:.2f} s in two threads at once "
        f"(ratio {t['ratio']:.2f}; 1 = no overlap, 0.5 = full overlap on the two cores).\n"
    )


def markdown(meta: dict[str, Any], cells: list[dict[str, Any]]) -> str:
    rows = [{**c, **{k: (c["timings"] or {}).get(f"{k}_seconds") for k in ("map", "sample", "metrics")}} for c in cells]
    parts = [
        "# Compilation in a small table's default fit\n\n",
        "Written by `benchmarks/fit_compiles.py` (its docstring has the protocol); do not edit. Seconds are wall "
        "time since the fit began; a compilation's seconds include contention with whatever else ran.\n\n",
        f"Run {meta['date']} to {meta['date_end']}, {meta['machine']}, jax {meta['jax']}; load average (1/5/15 min) "
        f"{meta['load_average_1_5_15_at_start']} at the start, {meta['load_average_1_5_15_at_end']} at the end.\n\n",
        markdown_table(rows, COLUMNS),
        "\n",
    ]
    for c in cells:
        top = sorted(c["compiles"], key=lambda r: -r["seconds"])[:TOP]
        rest = sum(r["seconds"] for r in c["compiles"]) - sum(r["seconds"] for r in top)
        parts += [f"\n## {c['table']}: the {len(top)} longest compilations\n\n", markdown_table(top, TOP_COLUMNS),
                  f"\nThe other {len(c['compiles']) - len(top)} compilations: {rest:.2f} s in all.\n"]  # fmt: skip
    if meta.get("threads"):
        parts.append(threads_markdown(meta["threads"]))
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    args = tables_parser(__doc__.splitlines()[0], TABLES).parse_args(argv)
    if args.cell:
        print(json.dumps(threads_cell() if args.cell == "threads" else cell(args.cell)))
        return 0
    names = battery_tables(args.tables, "fit_compiles")
    if names is None:
        return 2
    meta = run_metadata("benchmarks/fit_compiles.py")
    cells = [run_cell(name) for name in names]
    meta["threads"] = run_cell("threads")
    meta = finish_metadata(meta)
    args.out.mkdir(parents=True, exist_ok=True)
    write(args.out / "fit_compiles.json", {"meta": meta, "cells": cells}, markdown(meta, cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
