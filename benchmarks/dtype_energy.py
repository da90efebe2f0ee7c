"""float32 vs float64 for HMC on the thesis BNN posterior: energy error and gradient time.

On chi1 chi1 (built-in data, thesis features, log10 target, ``split == train``,
inputs and target standardised), 5-20-20-1 tanh, noise precision 100, prior
precision 1: from a MAP start, integrate leapfrog trajectories of ``L`` steps
with the same momenta in float64 and in float32 and record, per step size,

- ``dH_f64``: median |energy change| of the float64 trajectory (the
  integrator's own error, what the Metropolis step sees);
- ``rounding_f32``: median |dH_f32 - dH_f64|, the error float32 adds;
- ``grad_ms``: median time of one jitted gradient in each dtype.

With a unit mass matrix the posterior is stiff: trajectories at step sizes
above about 1e-3 blow up, which is why the step sizes probed are small.
Writes ``benchmarks/results/dtype_energy.json``.

    python benchmarks/dtype_energy.py [--trajectories 20 --steps 64]
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from datetime import UTC, datetime
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn.datasets import THESIS_FEATURES, ewino_table
from sigmabnn.map import MAPConfig, pretrain_map
from sigmabnn.mcmc.integrators import IntegratorState, velocity_verlet
from sigmabnn.mcmc.metrics import gaussian_euclidean
from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, make_logdensity, parse_architecture

RESULTS = Path(__file__).resolve().parent / "results" / "dtype_energy.json"


def thesis_data() -> Data:
    table, _ = ewino_table(log_target=True)
    table = table[table["split"] == "train"]
    x = table[list(THESIS_FEATURES)].to_numpy(np.float64)
    y = np.log10(table["nlo_1000022_1000022"].to_numpy(np.float64))[:, None]
    x = (x - x.mean(0)) / x.std(0)
    y = (y - y.mean()) / y.std()
    return Data(jnp.asarray(x), jnp.asarray(y))


def trajectory_dh(logdensity, position, momentum, step_size, num_steps):
    metric = gaussian_euclidean(jnp.ones_like(position))
    step = velocity_verlet(logdensity, metric)
    value, grad = jax.value_and_grad(logdensity)(position)
    state = IntegratorState(position, momentum, value, grad)
    h0 = -value + metric.kinetic_energy(momentum)
    state = jax.lax.fori_loop(0, num_steps, lambda _, s: step(s, step_size), state)
    return -state.logdensity + metric.kinetic_energy(state.momentum) - h0


def closed_over(logdensity_fn, hyper):
    return lambda q: logdensity_fn(q, hyper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trajectories", type=int, default=20)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--reps", type=int, default=30)
    args = parser.parse_args()

    data64 = thesis_data()
    mlp = parse_architecture("5-20-20-1")
    bnn64 = BNN(mlp, GaussianPrior(1.0, 1.0), Gaussian(precision=100.0))
    hyper64 = bnn64.default_hyperparameters()
    start, _ = pretrain_map(jax.random.key(0), bnn64, data64, hyper64, MAPConfig(num_steps=2000, learning_rate=1e-2))
    start = start[0]
    momenta = jax.random.normal(jax.random.key(1), (args.trajectories, start.size), jnp.float64)

    results = {"step_sizes": {}, "grad_ms": {}}
    fns = {}
    for name, dt in (("float64", jnp.float64), ("float32", jnp.float32)):
        bnn = BNN(mlp, GaussianPrior(1.0, 1.0), Gaussian(precision=100.0), dtype=name)
        data = Data(data64.x.astype(dt), data64.y.astype(dt))
        hyper = jax.tree_util.tree_map(lambda a, dt=dt: a.astype(dt), bnn.default_hyperparameters())
        logdensity = closed_over(make_logdensity(bnn, data), hyper)
        fns[name] = (logdensity, dt)
        grad = jax.jit(jax.grad(logdensity))
        q = start.astype(dt)
        grad(q).block_until_ready()
        times = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            grad(q).block_until_ready()
            times.append(time.perf_counter() - t0)
        results["grad_ms"][name] = 1e3 * float(np.median(times))

    for eps in (3e-5, 1e-4, 3e-4, 6e-4):
        dh = {}
        for name, (logdensity, dt) in fns.items():
            run = jax.jit(
                jax.vmap(
                    lambda p, f=logdensity, dt=dt, e=eps: trajectory_dh(
                        f, start.astype(dt), p.astype(dt), e, args.steps
                    )
                )
            )
            dh[name] = np.asarray(run(momenta), np.float64)
        results["step_sizes"][str(eps)] = {
            "dH_f64_median_abs": float(np.median(np.abs(dh["float64"]))),
            "rounding_f32_median_abs": float(np.median(np.abs(dh["float32"] - dh["float64"]))),
            "rounding_f32_max_abs": float(np.max(np.abs(dh["float32"] - dh["float64"]))),
        }
        print(f"eps {eps:g}: {results['step_sizes'][str(eps)]}")
    print("grad_ms", results["grad_ms"])
    out = {
        **results,
        "settings": {"arch": "5-20-20-1", "steps": args.steps, "trajectories": args.trajectories, "n": int(start.size)},
        "num_points": int(data64.x.shape[0]),
        "machine": f"{platform.machine()} python {platform.python_version()}",
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    tmp = RESULTS.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(out, indent=2) + "\n")
    tmp.replace(RESULTS)


if __name__ == "__main__":
    main()
