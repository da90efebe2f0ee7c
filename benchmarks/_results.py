"""Helpers of the benchmark scripts: run metadata, atomic JSON writes, Markdown tables generated from JSON."""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


@functools.lru_cache(maxsize=1)
def source_commit() -> str | None:
    """The commit the benchmark scripts run from (short hash; ``-dirty`` when tracked files differ from it), or
    ``None`` outside a git checkout: a record made in a worktree of another commit says which."""
    here = Path(__file__).resolve().parent

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(here), *args], capture_output=True, text=True, check=True).stdout

    try:
        head = git("rev-parse", "--short=12", "HEAD").strip()
        dirty = bool(git("status", "--porcelain", "--untracked-files=no").strip())
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def run_metadata(script: str) -> dict[str, Any]:
    """Machine, library versions, the scripts' commit, date (UTC) and the load average now (call again at the
    end)."""
    import jax

    return {
        "script": script,
        "commit": source_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()} {os.cpu_count()} cores, python {platform.python_version()}",
        "jax": jax.__version__,
        "load_average_1_5_15_at_start": [round(v, 2) for v in os.getloadavg()],
    }


def finish_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with the load average at the end and the end date."""
    return meta | {
        "load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()],
        "date_end": datetime.now(UTC).isoformat(timespec="seconds"),
    }


#: The one-line error of a ``--shard`` that :func:`parse_shard` refuses (``.format(text)``).
SHARD_ERROR = "error: --shard must be I/N with 0 <= I < N, got {!r}"


def parse_shard(text: str) -> tuple[int, int] | None:
    """``(i, n)`` of a worker's ``--shard I/N`` (``0 <= I < N``), or ``None`` for text of another form."""
    parts = text.split("/")
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        return None
    i, n = int(parts[0]), int(parts[1])
    return (i, n) if 0 <= i < n else None


def tables_parser(description: str, tables: Sequence[str]) -> argparse.ArgumentParser:
    """The options of a benchmark that fits one table per fresh process: ``--tables`` (default ``tables``),
    ``--out`` (the results directory) and the hidden ``--cell`` a process is started with."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--tables", default=",".join(tables), help="comma-separated tables of benchmarks/defaults.py")
    p.add_argument("--out", type=Path, default=RESULTS_DIR, help="results directory")
    p.add_argument("--cell", help=argparse.SUPPRESS)
    return p


def battery_tables(text: str, script: str) -> list[str] | None:
    """The comma-separated table names of ``text`` (``benchmarks/defaults.py``'s battery and scaling tables);
    ``None`` after a one-line error on stderr naming the first unknown one (``script``: the error's prefix)."""
    import sys

    from defaults import BATTERY, SCALING

    names = text.split(",")
    known = (*BATTERY, *SCALING)
    unknown = [n for n in names if n not in known]
    if unknown:
        print(f"{script}: unknown table {unknown[0]!r}; choose from {', '.join(known)}", file=sys.stderr)
        return None
    return names


def time_interleaved(calls: Sequence[Callable[[], Any]], repeats: int) -> list[list[float]]:
    """Wall seconds of each of ``calls`` over ``repeats`` rounds, the calls in turn within a round (interleaved,
    so a drift of the machine's load falls on all); ``[call][round]``."""
    import time

    seconds: list[list[float]] = [[] for _ in calls]
    for _ in range(repeats):
        for i, call in enumerate(calls):
            t0 = time.perf_counter()
            call()
            seconds[i].append(time.perf_counter() - t0)
    return seconds


def json_subprocess(cmd: Sequence[str], what: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON object a fresh process ``cmd`` prints on its last stdout line; exits with ``what`` and the
    process's last error line when it fails."""
    import subprocess

    out = subprocess.run(list(cmd), capture_output=True, text=True, check=False, env=env)
    if out.returncode != 0:
        last = (out.stderr.strip().splitlines() or [f"exit status {out.returncode}"])[-1]
        raise SystemExit(f"{what}: the fit failed: {last}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (the library's atomic writer)."""
    from sigmabnn.io.atomic import atomic_write_text

    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)


def write_json(path: Path, data: dict[str, Any]) -> None:
    """``data`` as indented JSON at ``path``, written then renamed."""
    write_text_atomic(path, json.dumps(data, indent=1) + "\n")


def run_units(
    workdir: Path, units: Sequence[tuple[str, int, int]], shard: tuple[int, int], fit: Callable[[str, int], Any]
) -> list[dict[str, Any]] | None:
    """Resumable, sharded fits, one JSON per unit in ``workdir``: each ``(name, seed, index)`` of ``units`` whose
    ``seed + index`` is ``I`` mod ``N`` (``shard = (I, N)``) and whose ``{name}-{seed}.json`` is missing is
    fitted by ``fit(name, seed)`` (a record) and written. Unsharded (``N == 1``): every record in ``workdir``;
    sharded: ``None`` (another invocation, unsharded, gathers them). Each record gets the machine's load average
    (1/5/15 min) at the start and end of its fit (``load_average_1_5_15_at_start``/``_at_end``), since shards run
    side by side in processes of their own, and the commit it ran from (:func:`source_commit`)."""
    i, n = shard
    workdir.mkdir(parents=True, exist_ok=True)
    for name, seed, index in units:
        path = workdir / f"{name}-{seed}.json"
        if (seed + index) % n != i or path.exists():
            continue
        t0, load = time.perf_counter(), [round(v, 2) for v in os.getloadavg()]
        record = {**fit(name, seed), "commit": source_commit(), "load_average_1_5_15_at_start": load}
        write_json(path, record | {"load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()]})
        print(f"{name} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
    return None if n > 1 else [json.loads(p.read_text()) for p in sorted(workdir.glob("*.json"))]


def units_load_text(records: Sequence[dict[str, Any]]) -> str:
    """One sentence on the 1-minute load average at the start of the fits of :func:`run_units` (min, median,
    max over the records that carry it), or the count of records fitted before it was kept."""
    loads = [r["load_average_1_5_15_at_start"][0] for r in records if "load_average_1_5_15_at_start" in r]
    missing = len(records) - len(loads)
    text = (
        f"1-minute load average at the start of each fit: min {min(loads):g}, median {statistics.median(loads):g}, "
        f"max {max(loads):g} over {len(loads)} fits"
        if loads
        else "No fit here records its own load average (made before fits kept it)"
    )
    return text + (f" ({missing} fitted before fits recorded it)." if missing and loads else ".")


def machine(load_start: tuple[float, ...], **versions: str) -> dict[str, Any]:
    """Platform, cores, Python/JAX (and the given library) versions, load average at start and now."""
    import jax

    return {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_devices": len(jax.local_devices()),
        **versions,
        "load_average_1_5_15_at_start": [round(v, 2) for v in load_start],
        "load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()],
    }


def write(path: Path, out: dict[str, Any], markdown: str) -> None:
    """``out`` as JSON at ``path`` and ``markdown`` beside it (``.md``), each written then renamed."""
    write_json(path, out)
    write_text_atomic(path.with_suffix(".md"), markdown)
    print(f"wrote {path} and {path.with_suffix('.md')}")


def _cell(value: Any, fmt: str) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value != value:
        return "nan"
    return format(value, fmt) if fmt else str(value)


def markdown_table(records: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str, str]]) -> str:
    """A Markdown table: one row per record; ``columns`` are ``(key, header, format spec)``."""
    lines = [
        "| " + " | ".join(header for _, header, _ in columns) + " |",
        "|" + "|".join("---" if not fmt else "---:" for _, _, fmt in columns) + "|",
    ]
    for rec in records:
        lines.append("| " + " | ".join(_cell(rec.get(key), fmt) for key, _, fmt in columns) + " |")
    return "\n".join(lines) + "\n"


def run_lines(runs: Sequence[dict[str, Any]], script: str = "") -> str:
    """One Markdown bullet per invocation of :func:`run_metadata` / :func:`finish_metadata`: its dates, its
    ``command`` (the arguments, after ``script``) when recorded, and the load average at its start and end."""
    lines = []
    for m in runs:
        text = f"{script} {m.get('command', '')}".strip()
        command = f": `{text}`" if "command" in m else ""
        lines.append(
            f"- {m.get('date')} to {m.get('date_end')}{command}, load average (1/5/15 min) at start "
            f"{m.get('load_average_1_5_15_at_start')}, at end {m.get('load_average_1_5_15_at_end')}\n"
        )
    return "".join(lines)


def meta_lines(meta: dict[str, Any]) -> str:
    """One Markdown paragraph on when and where the numbers were measured."""
    return (
        f"Measured {meta.get('date', '?')} on {meta.get('machine', '?')}, jax {meta.get('jax', '?')}; "
        f"load average (1/5/15 min) {meta.get('load_average_1_5_15_at_start')} at the start and "
        f"{meta.get('load_average_1_5_15_at_end')} at the end (a shared machine: times are inflated).\n"
    )


def page(intro: str, records: Sequence[dict[str, Any]], columns, summary: str, meta: dict[str, Any]) -> str:
    """A results page: the intro paragraph(s), the table, a summary computed from the records, the metadata."""
    return intro + "\n\n" + markdown_table(records, columns) + "\n" + summary + "\n" + meta_lines(meta)


def regenerate(json_path: Path, render: Callable[[dict[str, Any]], str]) -> Path:
    """Rewrite the Markdown file beside ``json_path`` from the JSON (``--table-only``)."""
    data = json.loads(json_path.read_text(encoding="utf-8"))
    md = json_path.with_suffix(".md")
    write_text_atomic(md, render(data))
    return md
