"""Where NUTS spends its time on a cheap target: the kernel alone, against BlackJAX and NumPyro, and the runner.

On ``gauss-100`` (a 100-d Gaussian with scales ``logspace(-2, 2)``, the target of
``samplers.py``) one gradient costs a few hundred flops, so leapfrog steps per
second measure the sampler's own per-step overhead. Two parts, in one process,
interleaved and repeated, medians reported:

- ``kernel``: one NUTS transition after another under ``lax.scan``, 4 chains
  vectorised (``vmap``) on one JAX CPU device, a fixed step size and diagonal
  inverse mass matrix, maximum tree depth 10, for sigmabnn's kernel
  (``sigmabnn.mcmc.nuts``), BlackJAX's (``blackjax.nuts``) and NumPyro's tree
  builder (``numpyro.infer.hmc_util.build_tree``, with the momentum draw
  around it); and sigmabnn's kernel with the chains split over the JAX CPU
  devices (``shard_map``, as ``sample`` does). Two regimes: ``deep`` (unit
  metric, step 0.015: every transition is a full depth-10 tree of 1023 steps,
  as early in warm-up) and ``adapted`` (metric = the true variances, step
  0.45: trees of a few steps, as when sampling). No compilation is timed.
- ``runner``: ``sigmabnn.mcmc.sample`` (4 chains, 500 warm-up iterations,
  then draws) called again with the same log-density, so its compiled chunk
  function is reused and nothing is compiled. A run with 50 draws and one with
  2000 draws share the key, hence the warm-up and the first 50 draws; their
  difference is the time of draws 51..2000, compared with the kernel alone
  (same devices, step sizes, mass matrices, starting states and iteration
  count) to give the runner's overhead (chunking, adaptation bookkeeping,
  draw streaming). Warm-up and sampling steps per iteration show which phase
  the gradient evaluations of a run go to.

    python benchmarks/nuts_overhead.py [--reps 5]

Writes ``benchmarks/results/nuts_overhead.json`` and ``nuts_overhead.md`` (generated from the JSON).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

import _devices  # noqa: F401  (before JAX starts: one CPU device per core, as samplers.py)
import sigmabnn
from sigmabnn.mcmc import nuts
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample
from sigmabnn.parallel import chain_mesh

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _results  # noqa: E402

jax.config.update("jax_enable_x64", True)

RESULTS = Path(__file__).resolve().parent / "results"
NUM_CHAINS = 4
DIM = 100
MAX_TREE_DEPTH = 10
SCALES = jnp.logspace(-2.0, 2.0, DIM)
REGIMES = {  # name: (inverse mass matrix, step size, iterations per timed call)
    "deep": (jnp.ones(DIM), 0.015, 20),
    "adapted": (SCALES**2, 0.45, 1000),
}
RUNNER_WARMUP, RUNNER_SHORT, RUNNER_LONG = 500, 50, 2000


def logdensity(z):
    return -0.5 * jnp.sum(jnp.square(z / SCALES))


# --------------------------------------------------------------------------- kernels alone


def _scan_chain(step_fn, init_fn, num_iterations):
    """``(key, position, step_size, imm) -> (last position, leapfrog steps)`` of one chain under ``lax.scan``."""

    def one(key, position, step_size, imm):
        def body(state, k):
            state, steps = step_fn(k, state, step_size, imm)
            return state, steps

        state, steps = jax.lax.scan(body, init_fn(position), jax.random.split(key, num_iterations))
        return state[0], jnp.sum(steps)

    return one


def sigmabnn_chain(num_iterations):
    kernel = nuts.build_kernel(MAX_TREE_DEPTH)

    def step(key, state, step_size, imm):
        state, info = kernel(key, state, logdensity, step_size, imm)
        return state, info.num_integration_steps

    return _scan_chain(step, lambda x: nuts.init(x, logdensity), num_iterations)


def blackjax_chain(num_iterations):
    import blackjax

    def step(key, state, step_size, imm):
        state, info = blackjax.nuts.build_kernel()(
            key, state, logdensity, step_size, imm, max_num_doublings=MAX_TREE_DEPTH
        )
        return state, info.num_integration_steps

    return _scan_chain(step, lambda x: blackjax.nuts.init(x, logdensity), num_iterations)


def numpyro_chain(num_iterations):
    from numpyro.infer.hmc_util import IntegratorState, build_tree, euclidean_kinetic_energy, velocity_verlet

    potential = lambda z: -logdensity(z)  # noqa: E731
    _, update = velocity_verlet(potential, euclidean_kinetic_energy)

    def init(x):
        pe, grad = jax.value_and_grad(potential)(x)
        return (x, pe, grad)

    def step(key, state, step_size, imm):
        z, pe, grad = state
        key_momentum, key_tree = jax.random.split(key)
        r = jax.random.normal(key_momentum, z.shape, z.dtype) / jnp.sqrt(imm)
        tree = build_tree(
            update, euclidean_kinetic_energy, IntegratorState(z, r, pe, grad), imm, step_size, key_tree,
            max_tree_depth=MAX_TREE_DEPTH,
        )  # fmt: skip
        return (tree.z_proposal, tree.z_proposal_pe, tree.z_proposal_grad), tree.num_proposals

    return _scan_chain(step, init, num_iterations)


def vectorised(chain):
    return jax.jit(jax.vmap(chain))


def split_over_devices(chain, mesh):
    spec = PartitionSpec(mesh.axis_names[0])
    return jax.jit(
        jax.shard_map(jax.vmap(chain), mesh=mesh, in_specs=(spec,) * 4, out_specs=(spec, spec), check_vma=False)
    )


def timed(fn, *args) -> tuple[float, int]:
    t0 = time.perf_counter()
    _, steps = jax.block_until_ready(fn(*args))
    return time.perf_counter() - t0, int(np.sum(np.asarray(steps)))


def kernel_part(reps: int, starts: jax.Array, mesh) -> list[dict[str, Any]]:
    records = []
    for regime, (imm, eps, n) in REGIMES.items():
        imms = jnp.broadcast_to(imm, (NUM_CHAINS, DIM))
        steps = jnp.full((NUM_CHAINS,), eps)
        fns = {
            "sigmabnn": vectorised(sigmabnn_chain(n)),
            "blackjax": vectorised(blackjax_chain(n)),
            "numpyro": vectorised(numpyro_chain(n)),
        }
        if mesh is not None:
            fns[f"sigmabnn, chains split over {mesh.size} devices"] = split_over_devices(sigmabnn_chain(n), mesh)
        keys = jax.random.split(jax.random.key(0), NUM_CHAINS)
        for fn in fns.values():  # compile
            timed(fn, keys, starts, steps, imms)
        runs: dict[str, list[tuple[float, int]]] = {name: [] for name in fns}
        for rep in range(reps):
            keys = jax.random.split(jax.random.key(1 + rep), NUM_CHAINS)
            names = list(fns)
            for name in names[rep % len(names) :] + names[: rep % len(names)]:
                runs[name].append(timed(fns[name], keys, starts, steps, imms))
        for name, rs in runs.items():
            rate = statistics.median(s / t for t, s in rs)
            records.append(
                {
                    "part": "kernel",
                    "regime": regime,
                    "sampler": name,
                    "iterations": n,
                    "steps_per_iteration": statistics.median(s for _, s in rs) / (NUM_CHAINS * n),
                    "grad_evals_per_s": rate,
                    "us_per_step_per_chain": 1e6 / rate,
                    "seconds": statistics.median(t for t, _ in rs),
                    "reps": len(rs),
                }
            )
    return records


# --------------------------------------------------------------------------- runner


def runner_part(reps: int, starts: jax.Array, mesh) -> list[dict[str, Any]]:
    def ld(z, _):
        return logdensity(z)

    def run(key, num_samples):
        t0 = time.perf_counter()
        config = RunConfig(num_warmup=RUNNER_WARMUP, num_samples=num_samples)
        result = sample(key, make_algorithm("nuts"), ld, starts, None, config, progress=False)
        jax.block_until_ready(result.positions)
        return time.perf_counter() - t0, result

    n_kernel = RUNNER_LONG - RUNNER_SHORT
    chain = sigmabnn_chain(n_kernel)
    alone = split_over_devices(chain, mesh) if mesh is not None else vectorised(chain)
    rows: dict[str, list[float]] = {}
    for rep in range(reps + 1):  # the first repetition compiles and is not kept
        key = jax.random.key(100 + rep)
        order = [RUNNER_SHORT, RUNNER_LONG] if rep % 2 == 0 else [RUNNER_LONG, RUNNER_SHORT]
        out = {n: run(key, n) for n in order}
        (t_short, short), (t_long, long) = out[RUNNER_SHORT], out[RUNNER_LONG]
        if not np.array_equal(np.asarray(short.positions), np.asarray(long.positions)[:, :RUNNER_SHORT]):
            raise RuntimeError("the two runs do not share their first draws: their difference is not draws 51..")
        warm_steps = int(np.sum(np.asarray(long.warmup_info.num_integration_steps)))
        tail_steps = int(np.sum(np.asarray(long.info.num_integration_steps)[:, RUNNER_SHORT:]))
        args = (
            jax.random.split(jax.random.key(200 + rep), NUM_CHAINS),
            jnp.asarray(long.positions[:, RUNNER_SHORT - 1]),
            jnp.asarray(long.adapted.step_size),
            jnp.asarray(long.adapted.inverse_mass_matrix),
        )
        if rep == 0:
            timed(alone, *args)
            continue
        t_alone, alone_steps = timed(alone, *args)
        sampling_s = max(t_long - t_short, 1e-9)
        for k, v in {
            "run_with_50_draws_s": t_short,
            "run_with_2000_draws_s": t_long,
            "warmup_steps_per_iteration": warm_steps / (NUM_CHAINS * RUNNER_WARMUP),
            "sampling_steps_per_iteration": tail_steps / (NUM_CHAINS * n_kernel),
            "share_of_grad_evals_in_warmup": warm_steps / (warm_steps + tail_steps),
            "sampling_grad_evals_per_s_in_sample": tail_steps / sampling_s,
            "sampling_grad_evals_per_s_kernel_alone": alone_steps / t_alone,
            "kernel_alone_steps_per_iteration": alone_steps / (NUM_CHAINS * n_kernel),
            "runner_efficiency": (tail_steps / sampling_s) / (alone_steps / t_alone),
        }.items():
            rows.setdefault(k, []).append(v)
    return [{"part": "runner", **{k: statistics.median(v) for k, v in rows.items()}, "reps": reps}]


# --------------------------------------------------------------------------- report


def markdown(out: dict[str, Any]) -> str:
    m = out["machine"]
    lines = [
        "# NUTS per-step overhead on gauss-100 (generated by `benchmarks/nuts_overhead.py` from `nuts_overhead.json`)",
        "",
        f"Date {out['date']}; load average at start/end {m['load_average_1_5_15_at_start']} / "
        f"{m['load_average_1_5_15_at_end']} on {m['cpu_count']} cores (shared machine), {m['jax_devices']} JAX CPU "
        f"devices; jax {m['jax']}, numpyro {m['numpyro']}, blackjax {m['blackjax']}, sigmabnn {m['sigmabnn']}. "
        f"Medians over {out['reps']} interleaved repetitions; nothing compiled is timed.",
        "",
        "## Kernel alone",
        "",
        f"{NUM_CHAINS} chains vmapped on one device (and sigmabnn's also split over the devices as `sample` "
        "does), `lax.scan` over transitions, fixed step size and metric, maximum tree depth "
        f"{MAX_TREE_DEPTH}. `deep`: unit metric, step 0.015 (full 1023-step trees, as early in warm-up); "
        "`adapted`: true variances as metric, step 0.45 (short trees, as when sampling).",
        "",
        "| regime | sampler | steps/iter | grad evals/s | us per step per chain | vs best peer |",
        "|---|---|---:|---:|---:|---:|",
    ]
    kernel = [r for r in out["records"] if r["part"] == "kernel"]
    for regime in REGIMES:
        rs = [r for r in kernel if r["regime"] == regime]
        best = max(r["grad_evals_per_s"] for r in rs if r["sampler"] in ("blackjax", "numpyro"))
        for r in rs:
            lines.append(
                f"| {regime} | {r['sampler']} | {r['steps_per_iteration']:.1f} | {r['grad_evals_per_s']:,.0f} | "
                f"{r['us_per_step_per_chain']:.2f} | {r['grad_evals_per_s'] / best:.2f}x |"
            )
    (runner,) = [r for r in out["records"] if r["part"] == "runner"]
    lines += [
        "",
        "## The runner (`sigmabnn.mcmc.sample`)",
        "",
        f"{NUM_CHAINS} chains, {RUNNER_WARMUP} warm-up iterations, compiled functions reused. Draws "
        f"{RUNNER_SHORT + 1}..{RUNNER_LONG} take the difference of a {RUNNER_LONG}-draw and a {RUNNER_SHORT}-draw "
        "run with the same key; the kernel alone runs as many transitions from the same states with the same "
        "adapted step sizes and mass matrices on the same devices.",
        "",
        "| quantity | value |",
        "|---|---:|",
        f"| run with {RUNNER_SHORT} draws, s | {runner['run_with_50_draws_s']:.3f} |",
        f"| run with {RUNNER_LONG} draws, s | {runner['run_with_2000_draws_s']:.3f} |",
        f"| leapfrog steps per iteration, warm-up | {runner['warmup_steps_per_iteration']:.1f} |",
        f"| leapfrog steps per iteration, sampling | {runner['sampling_steps_per_iteration']:.1f} |",
        f"| share of a {RUNNER_LONG}-draw run's gradient evaluations spent in warm-up | "
        f"{runner['share_of_grad_evals_in_warmup']:.0%} |",
        f"| sampling grad evals/s inside `sample` | {runner['sampling_grad_evals_per_s_in_sample']:,.0f} |",
        f"| sampling grad evals/s, kernel alone | {runner['sampling_grad_evals_per_s_kernel_alone']:,.0f} |",
        f"| runner efficiency (inside `sample` / kernel alone) | {runner['runner_efficiency']:.2f} |",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions (medians reported)")
    parser.add_argument("--out", type=Path, default=RESULTS / "nuts_overhead.json")
    args = parser.parse_args(argv)

    import blackjax
    import numpyro

    load_start = os.getloadavg()
    starts = jax.random.normal(jax.random.key(3), (NUM_CHAINS, DIM))
    mesh = chain_mesh(NUM_CHAINS)
    records = kernel_part(args.reps, starts * SCALES, mesh) + runner_part(args.reps, starts, mesh)
    out = {
        "records": records,
        "reps": args.reps,
        "machine": _results.machine(
            load_start, numpyro=numpyro.__version__, blackjax=blackjax.__version__, sigmabnn=sigmabnn.__version__
        ),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    _results.write(args.out, out, markdown(out))
    print(markdown(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
