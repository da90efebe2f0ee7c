"""How long loading a saved model takes: 1,000 networks of 5-20-20-1 and 5-50-50-50-1.

Builds a model file of the given size (random draws: load time does not depend
on the values), then times ``load_model`` cold-ish (the file is in the OS page
cache after the first read, as in repeated use) ``--reps`` times in this process
and reports the minimum and median. Writes ``benchmarks/results/model_load.json``.

    python benchmarks/model_load.py [--reps 30]
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

from sigmabnn.data.transforms import Standardizer, TargetTransform
from sigmabnn.draws import PosteriorDraws
from sigmabnn.fitted import FittedModel
from sigmabnn.io.model_file import load_model, save_model
from sigmabnn.model import BNN, Gaussian, Hyperparameters, num_params, parse_architecture

RESULTS = Path(__file__).resolve().parent / "results" / "model_load.json"


def make_model(arch: str, networks: int, seed: int = 0) -> FittedModel:
    rng = np.random.default_rng(seed)
    mlp = parse_architecture(arch)
    d = num_params(mlp)
    chains = 4
    draws = networks // chains
    hyper = Hyperparameters(
        rng.uniform(50, 150, size=(chains, draws)),
        np.ones((chains, draws, mlp.num_layers)),
        np.ones((chains, draws, mlp.num_layers)),
    )
    return FittedModel(
        bnn=BNN(mlp, likelihood=Gaussian(learn_precision=True)),
        draws=PosteriorDraws(rng.normal(size=(chains, draws, d)), hyper),
        x_transform=Standardizer.fit(rng.normal(size=(50, mlp.widths[0]))),
        y_transform=TargetTransform.fit(rng.uniform(1e-3, 10, size=50), log10=True),
        feature_names=tuple(f"x{i}" for i in range(mlp.widths[0])),
        target_name="xsec",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--networks", type=int, default=1000)
    args = parser.parse_args()
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for arch in ("5-20-20-1", "5-50-50-50-1"):
            path = Path(tmp) / arch
            save_model(make_model(arch, args.networks), path)
            size = sum(f.stat().st_size for f in path.iterdir())
            load_model(path)  # first read fills the page cache
            times = []
            for _ in range(args.reps):
                t0 = time.perf_counter()
                fitted = load_model(path)
                times.append(time.perf_counter() - t0)
            assert fitted.draws.num_networks == args.networks
            rec = {
                "arch": arch,
                "networks": args.networks,
                "file_mb": size / 1e6,
                "load_ms_min": 1e3 * min(times),
                "load_ms_median": 1e3 * float(np.median(times)),
                "reps": args.reps,
            }
            records.append(rec)
            print(
                f"{arch:>14}: {rec['file_mb']:.1f} MB, load min {rec['load_ms_min']:.1f} ms, "
                f"median {rec['load_ms_median']:.1f} ms"
            )
    out = {
        "records": records,
        "machine": f"{platform.machine()} {platform.processor() or ''} python {platform.python_version()}".strip(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tmp_out = RESULTS.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(out, indent=2) + "\n")
    tmp_out.replace(RESULTS)


if __name__ == "__main__":
    main()
