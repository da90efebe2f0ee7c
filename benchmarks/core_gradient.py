"""Core speed benchmark: one log-posterior gradient, and NUTS draws per second vs NumPyro.

Posterior: the thesis process chi1 chi1 from ``../shared/data/nlo_ewino/ewino_nlo.csv.gz``
(features ``m_1000022, N1000022_1..4``, target ``log10(nlo_1000022_1000022)``,
rows ``split == "train"`` with a finite target; inputs and target
standardised), a tanh BNN with the default fixed hyperparameters (noise
precision 100, prior precision 1 on every kernel and bias entry).

Measured:

- ``grad_ms``: median wall time (ms) of one jitted log-posterior gradient
  over all training points, ``block_until_ready`` after each call, for
  5-20-20-1 and 5-50-50-50-1, float64 and float32.
- ``nuts_draws_per_s`` / ``numpyro_nuts_draws_per_s``: kept draws per second
  of wall time for one chain of NUTS (``--num-warmup`` warm-up iterations,
  ``--num-samples`` draws, 5-20-20-1, float64), warm-up and JIT compilation
  included, from the same MAP start. NumPyro samples the very same JAX
  log-density (through ``potential_fn``), so the comparison is between the
  samplers, not the models. The ``*_excl_compile`` variants subtract a
  compile estimate (wall time of a run with no warm-up and one draw), and
  ``*_grad_evals_per_s`` divide the leapfrog steps of the whole run by that
  compile-free time.

Run from the repository root: ``python benchmarks/core_gradient.py`` (see
``benchmarks/README.md``). Results go to ``benchmarks/results/core_gradient.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd

import sigmabnn
from sigmabnn.map import MAPConfig, pretrain_map
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample
from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, make_logdensity, parse_architecture
from sigmabnn.model.mlp import flatten, init_params

REPO = Path(__file__).resolve().parents[1]
FEATURES = ["m_1000022", "N1000022_1", "N1000022_2", "N1000022_3", "N1000022_4"]
TARGET = "nlo_1000022_1000022"
ARCHITECTURES = ["5-20-20-1", "5-50-50-50-1"]
NUTS_ARCHITECTURE = "5-20-20-1"


def load_process(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Standardised training inputs ``[n, 5]`` and log10 targets ``[n, 1]`` of chi1 chi1."""
    table = pd.read_csv(path, usecols=["split", *FEATURES, TARGET])
    table = table[table["split"] == "train"]
    with np.errstate(divide="ignore", invalid="ignore"):
        target = np.log10(table[TARGET].to_numpy(np.float64))
    keep = np.isfinite(target)
    x = table[FEATURES].to_numpy(np.float64)[keep]
    y = target[keep][:, None]
    x = (x - x.mean(axis=0)) / x.std(axis=0)
    y = (y - y.mean()) / y.std()
    return x, y


def evenly_spaced_rows(x: np.ndarray, y: np.ndarray, rows: int | None) -> tuple[np.ndarray, np.ndarray]:
    """``rows`` evenly spaced rows of ``x``, ``y`` (all of them for ``None`` or ``rows >= n``): the row subset
    of the BNN targets in ``samplers.py`` and ``gradient_ceiling.py``."""
    if rows is None or rows >= x.shape[0]:
        return x, y
    keep = np.linspace(0, x.shape[0] - 1, rows).astype(int)
    return x[keep], y[keep]


def make_bnn(arch: str, dtype: str) -> BNN:
    return BNN(parse_architecture(arch, "tanh"), GaussianPrior(1.0, 1.0), Gaussian(100.0), dtype=dtype)


def leapfrog_loop(grad: Any, steps: int) -> Any:
    """``p -> q``: ``steps`` leapfrog steps of ``grad`` (the log-posterior's gradient) from ``p`` with zero
    momentum, unit mass and step size 0.001, as one ``fori_loop``: the cell that ``compile_level.py`` and
    ``train_layout.py`` compile and time (vmapped over chains)."""

    def run(p: Any) -> Any:
        def body(_: Any, s: Any) -> Any:
            q, m, g = s
            m = m + 0.0005 * g
            q = q + 0.001 * m
            g = grad(q)
            return q, m + 0.0005 * g, g

        return jax.lax.fori_loop(0, steps, body, (p, jnp.zeros_like(p), grad(p)))[0]

    return run


def time_gradient(x: np.ndarray, y: np.ndarray, arch: str, dtype: str, reps: int) -> float:
    """Median milliseconds of one jitted gradient of the log-posterior."""
    bnn = make_bnn(arch, dtype)
    data = Data(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
    hyper = bnn.default_hyperparameters()
    position = flatten(init_params(jax.random.PRNGKey(0), bnn.mlp, bnn.jdtype))
    grad = jax.jit(jax.grad(lambda p: bnn.log_posterior(p, hyper, data)))
    jax.block_until_ready(grad(position))  # compile
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        jax.block_until_ready(grad(position))
        times.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(times)


def run_sigmabnn(key, logdensity, start, hyper, num_warmup, num_samples):
    t0 = time.perf_counter()
    result = sample(
        key,
        make_algorithm("nuts"),
        logdensity,
        start[None],
        hyper,
        RunConfig(num_warmup=num_warmup, num_samples=num_samples),
        progress=False,
    )
    jax.block_until_ready(result.positions)
    seconds = time.perf_counter() - t0
    steps = int(np.sum(result.warmup_info.num_integration_steps)) + int(np.sum(result.info.num_integration_steps))
    return seconds, result, steps


def run_numpyro(key, logdensity, start, hyper, num_warmup, num_samples):
    from numpyro.infer import MCMC, NUTS

    potential = lambda p: -logdensity(p, hyper)
    mcmc = MCMC(
        NUTS(potential_fn=potential, target_accept_prob=0.8, max_tree_depth=10),
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=1,
        progress_bar=False,
    )
    t0 = time.perf_counter()
    mcmc.run(key, init_params=start, extra_fields=("num_steps", "adapt_state.step_size"))
    jax.block_until_ready(mcmc.get_samples())
    seconds = time.perf_counter() - t0
    return seconds, mcmc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "nlo_ewino" / "ewino_nlo.csv.gz")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "core_gradient.json")
    parser.add_argument("--reps", type=int, default=50, help="gradient timings per configuration (median kept)")
    parser.add_argument("--num-warmup", type=int, default=200)
    parser.add_argument("--num-samples", type=int, default=200)
    parser.add_argument("--map-steps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"error: data file not found: {args.data}", file=sys.stderr)
        return 2
    import numpyro

    numpyro.enable_x64()
    load_start = os.getloadavg()
    x, y = load_process(args.data)
    print(f"chi1 chi1: {x.shape[0]} training points, {x.shape[1]} features")

    grad_ms: dict[str, dict[str, float]] = {}
    for arch in ARCHITECTURES:
        grad_ms[arch] = {}
        for dtype in ("float64", "float32"):
            grad_ms[arch][dtype] = time_gradient(x, y, arch, dtype, args.reps)
            print(f"gradient {arch:>14s} {dtype}: {grad_ms[arch][dtype]:8.3f} ms (median of {args.reps})")

    # NUTS: one chain, the same posterior and MAP start for both libraries
    bnn = make_bnn(NUTS_ARCHITECTURE, "float64")
    data = Data(jnp.asarray(x), jnp.asarray(y))
    hyper = bnn.default_hyperparameters()
    logdensity = make_logdensity(bnn, data)
    key = jax.random.PRNGKey(args.seed)
    key_map, key_ours, key_theirs = jax.random.split(key, 3)
    starts, _ = pretrain_map(key_map, bnn, data, hyper, MAPConfig(num_steps=args.map_steps))
    start = starts[0]

    ours_compile, _, _ = run_sigmabnn(key_ours, logdensity, start, hyper, 0, 1)
    ours_s, ours, ours_steps = run_sigmabnn(key_ours, logdensity, start, hyper, args.num_warmup, args.num_samples)
    theirs_compile, _ = run_numpyro(key_theirs, logdensity, start, hyper, 0, 1)
    theirs_s, theirs = run_numpyro(key_theirs, logdensity, start, hyper, args.num_warmup, args.num_samples)
    extra = theirs.get_extra_fields()
    theirs_sample_steps = int(np.sum(np.asarray(extra["num_steps"])))
    ours_sample_steps = int(np.sum(np.asarray(ours.info.num_integration_steps)))
    n = args.num_samples

    def rate(count, seconds):
        return count / seconds if seconds > 0 else None

    results = {
        "grad_ms": grad_ms,
        "nuts_draws_per_s": n / ours_s,
        "numpyro_nuts_draws_per_s": n / theirs_s,
        "nuts_draws_per_s_excl_compile": rate(n, ours_s - ours_compile),
        "numpyro_nuts_draws_per_s_excl_compile": rate(n, theirs_s - theirs_compile),
        "nuts_seconds": ours_s,
        "numpyro_nuts_seconds": theirs_s,
        "nuts_compile_seconds_estimate": ours_compile,
        "numpyro_nuts_compile_seconds_estimate": theirs_compile,
        "nuts_grad_evals_per_s_excl_compile": rate(ours_steps, ours_s - ours_compile),
        "nuts_sampling_leapfrog_steps": ours_sample_steps,
        "numpyro_nuts_sampling_leapfrog_steps": theirs_sample_steps,
        "nuts_step_size": float(np.asarray(ours.adapted.step_size)[0]),
        "numpyro_nuts_step_size": float(np.asarray(extra["adapt_state.step_size"])[-1]),
        "nuts_mean_tree_depth": float(np.mean(np.asarray(ours.info.tree_depth))),
        "nuts_divergences": int(np.sum(np.asarray(ours.info.is_divergent))),
        "settings": {
            "nuts_architecture": NUTS_ARCHITECTURE,
            "nuts_dtype": "float64",
            "num_chains": 1,
            "num_warmup": args.num_warmup,
            "num_samples": n,
            "map_steps": args.map_steps,
            "grad_reps": args.reps,
            "n_train": int(x.shape[0]),
            "noise_precision": 100.0,
            "prior_precision": 1.0,
            "seed": args.seed,
        },
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "jax_device": str(jax.devices()[0].device_kind),
            "python": platform.python_version(),
            "jax": jax.__version__,
            "numpyro": numpyro.__version__,
            "sigmabnn": sigmabnn.__version__,
            "load_average_1_5_15_at_start": [round(v, 2) for v in load_start],
            "load_average_1_5_15_at_end": [round(v, 2) for v in os.getloadavg()],
        },
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }

    print(
        f"NUTS {NUTS_ARCHITECTURE} float64, 1 chain, {args.num_warmup} warm-up + {n} draws (compilation included):\n"
        f"  sigmabnn: {results['nuts_draws_per_s']:.2f} draws/s ({ours_s:.1f} s; compile ~{ours_compile:.1f} s; "
        f"{ours_sample_steps} sampling leapfrog steps, step size {results['nuts_step_size']:.3g})\n"
        f"  numpyro : {results['numpyro_nuts_draws_per_s']:.2f} draws/s ({theirs_s:.1f} s; compile "
        f"~{theirs_compile:.1f} s; {theirs_sample_steps} sampling leapfrog steps, step size "
        f"{results['numpyro_nuts_step_size']:.3g})\n"
        f"  load average at start / end: {results['machine']['load_average_1_5_15_at_start']} / "
        f"{results['machine']['load_average_1_5_15_at_end']}"
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=args.out.parent, prefix=".core_gradient.", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        json.dump(results, fh, indent=2)
        fh.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, args.out)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
