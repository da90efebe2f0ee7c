"""Time ``sigmabnn demo nlo`` end to end (a fresh process, as a user runs it) and keep its report.

Runs ``sigmabnn demo nlo --out TMP -q`` in a subprocess, measures its wall time, and writes
``benchmarks/results/demo_nlo.json`` (wall time, the fit's phase timings from the saved model,
the report's metrics per split, load averages before and after, date) and a copy of the
calibration report it wrote in ``benchmarks/results/demo_nlo_report/``. The issue's budget for
the demo is 5 minutes on this 2-core machine.

Usage: ``python benchmarks/demo_nlo.py``.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sigmabnn.io.atomic import atomic_write_json
from sigmabnn.io.model_file import load_model

sys.path.insert(0, str(Path(__file__).resolve().parent))
from thesis_nlo import versions  # noqa: E402  (the sibling script)

RESULTS = Path(__file__).resolve().parent / "results"
BUDGET_SECONDS = 300.0
SETTINGS = ("architecture", "num_chains", "num_warmup", "num_samples", "max_tree_depth", "noise_df")


def main() -> int:
    exe = Path(sys.executable).with_name("sigmabnn")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "demo"
        load_before = os.getloadavg()
        t0 = time.perf_counter()
        proc = subprocess.run([str(exe), "demo", "nlo", "--out", str(out), "-q"], capture_output=True, text=True)
        wall = time.perf_counter() - t0
        load_after = os.getloadavg()
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr, file=sys.stderr)
            return 1
        model = load_model(out / "nlo_1000022_1000022.model")
        metrics = json.loads((out / "report" / "metrics.json").read_text())
        record = {
            "command": "sigmabnn demo nlo",
            "wall_seconds": wall,
            "budget_seconds": BUDGET_SECONDS,
            "within_budget": wall <= BUDGET_SECONDS,
            "timings": model.report.timings.to_json(),
            "networks": model.num_networks,
            "likelihood": model.bnn.likelihood.name,
            "settings": {k: model.settings.get(k) for k in SETTINGS},
            "grad_evals": model.report.sampler.num_grad_evals,
            "rhat_predictions": model.report.sampler.rhat_predictions,
            "report": metrics,
            "stdout": proc.stdout,
            "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
            "loadavg_before": list(load_before),
            "loadavg_after": list(load_after),
            "machine": f"{os.cpu_count()} cores (the load averages say how busy)",
            "versions": versions(),
        }
        atomic_write_json(RESULTS / "demo_nlo.json", record)
        target = RESULTS / "demo_nlo_report"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(out / "report", target)
    print(f"demo nlo: {wall:.0f} s (load {load_before[0]:.1f} -> {load_after[0]:.1f}); {RESULTS / 'demo_nlo.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
