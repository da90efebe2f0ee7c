"""NUTS of sigmabnn, NumPyro and BlackJAX on the same posteriors, in one process.

Every sampler gets the same log-density (one JAX function), the same starting
points, the same number of chains (4, vectorized in one program), warm-up
iterations, draws and maximum tree depth (sigmabnn ``max_tree_depth``,
NumPyro ``max_tree_depth``, BlackJAX ``max_num_doublings``), float64, target
acceptance 0.8 and a diagonal mass matrix adapted in each library's own
windowed warm-up.

Targets:

- ``bnn-5-20-20-1`` and ``bnn-5-50-50-50-1``: tanh BNNs on chi1 chi1 from the
  NLO data (``../shared/data/nlo_ewino/ewino_nlo.csv.gz``; the inputs and
  log10 target of the ``train`` rows standardised, noise precision 100, prior
  precision 1, as in ``core_gradient.py``), 4 MAP starts shared by all samplers;
- ``gauss-100``: a 100-dimensional Gaussian with scales ``logspace(-2, 2)``;
- the six posteriordb posteriors of ``tests/targets/posteriordb.py``
  (``../shared/data/posteriordb``), started uniformly in ``[-2, 2]`` (Stan's rule).

Measured per run: gradient evaluations (leapfrog steps of warm-up and
sampling, all chains), wall time including and excluding compilation (the
seconds JAX reports for tracing, lowering and compiling during the run),
bulk ESS (ArviZ, rank-normalised, all chains) of the log posterior and of the
"predictions": for a BNN the network output at 20 inputs, for the other
targets every coordinate; ``min_ess`` is the minimum over all of them.
``min_ess_per_s`` and ``grad_evals_per_s`` use the wall time excluding
compilation; ``min_ess_per_grad`` is independent of the machine's speed.

Levers (sigmabnn variants beside its default NUTS, ``--levers``) include
``sigmabnn+chees``: ChEES-HMC (``make_algorithm("chees")``; all chains share one
jittered trajectory length, so no chain waits for another's tree) with the same
4 chains, starts, warm-up and draws, its leapfrog steps per iteration capped at
``2**max_tree_depth - 1`` like a NUTS tree; and ``sigmabnn+chees16``: the same
with 16 chains (each start used by 4), the many-chain regime ChEES is made
for, its ESS taken over all 16 chains.

Default: a reduced setting that fits a shared 2-core machine (see
``SETTINGS`` and ``--help``); every reduction is written to the JSON and the
Markdown. ``--full`` is the issue's full setting. Runs are interleaved
(repetition, target, sampler) and the median over repetitions is reported.
On the cheap targets (gauss-100 and the posteriordb posteriors but diamonds)
2,000 draws per chain took a fraction of a second of sampling beside several
seconds of compilation, and repeated runs of one sampler gave rates far apart,
so the reduced setting draws 20,000 per chain there and runs them
``--cheap-reps`` (3) times.

    python benchmarks/samplers.py [--full] [--targets bnn-5-20-20-1,gauss-100] [--reps 1]

Targets run in separate processes are combined with ``--merge A.json B.json``;
where files hold the same (target, sampler), the later file's records replace
the earlier ones (so a rerun of some targets updates an existing result).

Writes ``benchmarks/results/samplers.json`` and ``samplers.md`` (the table is
generated from the JSON).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import _devices  # noqa: F401  (before the peers: one JAX CPU device per core, set before JAX starts)
import sigmabnn
from sigmabnn.map import MAPConfig, pretrain_map
from sigmabnn.mcmc.registry import make_algorithm
from sigmabnn.mcmc.run import RunConfig, sample
from sigmabnn.model import BNN, Data, Gaussian, GaussianPrior, parse_architecture

with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)
    import arviz as az

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
from tests.targets.posteriordb import NAMES as POSTERIORDB_NAMES  # noqa: E402

import _results  # noqa: E402
from core_gradient import evenly_spaced_rows, load_process  # noqa: E402  (same data preparation as the gradient benchmark)

Array = jax.Array
RESULTS = REPO / "benchmarks" / "results"
NUM_CHAINS = 4
NUM_TEST_INPUTS = 20
MIN_RELIABLE_ESS = 100  # below it a min ESS (hence an ESS/s ratio) says the chains did not mix, not how fast
POSTERIORDB = POSTERIORDB_NAMES
SAMPLERS = ("sigmabnn", "numpyro", "blackjax")

#: Per-target settings: reduced default, and the issue's full setting.
SETTINGS = {
    "reduced": {
        # BNN targets: 800 draws per chain; NUTS's within-chain ESS (see goals) still stays below 100 at depth 5
        "bnn-5-20-20-1": {"rows": 1000, "num_warmup": 200, "num_samples": 800, "max_tree_depth": 5},
        "bnn-5-50-50-50-1": {"rows": 300, "num_warmup": 200, "num_samples": 800, "max_tree_depth": 5},
        # cheap targets: sampling takes a fraction of a second, so more draws (and --cheap-reps repetitions)
        # keep the rates from being timing noise; diamonds (a slow posterior) keeps 500
        "gauss-100": {"rows": None, "num_warmup": 500, "num_samples": 20000, "max_tree_depth": 10},
        "posteriordb": {"rows": None, "num_warmup": 500, "num_samples": 20000, "max_tree_depth": 10},
        "diamonds-diamonds": {"rows": None, "num_warmup": 500, "num_samples": 500, "max_tree_depth": 10},
    },
    "full": {
        "bnn-5-20-20-1": {"rows": None, "num_warmup": 1000, "num_samples": 1000, "max_tree_depth": 10},
        "bnn-5-50-50-50-1": {"rows": None, "num_warmup": 1000, "num_samples": 1000, "max_tree_depth": 10},
        "gauss-100": {"rows": None, "num_warmup": 1000, "num_samples": 1000, "max_tree_depth": 10},
        "posteriordb": {"rows": None, "num_warmup": 1000, "num_samples": 1000, "max_tree_depth": 10},
        "diamonds-diamonds": {"rows": None, "num_warmup": 1000, "num_samples": 1000, "max_tree_depth": 10},
    },
}


class Problem(NamedTuple):
    name: str
    logdensity: Callable  # z [d] -> scalar
    starts: np.ndarray  # [C, d]
    functional: Callable | None  # z [d] -> [k] (BNN predictions), None: the coordinates
    settings: dict[str, Any]
    logdensity32: Callable | None = None  # the same posterior in float32 (BNN targets), for the float32 lever


class Run(NamedTuple):
    positions: np.ndarray  # [C, S, d]
    logdensity: np.ndarray  # [C, S]
    grad_evals: int
    wall_s: float
    step_size: float
    divergences: int


# --------------------------------------------------------------------------- targets


def bnn_problem(arch: str, settings: dict, data_path: Path, key: Array) -> Problem:
    x, y = load_process(data_path)
    test = x[np.linspace(0, x.shape[0] - 1, NUM_TEST_INPUTS).astype(int)]
    x, y = evenly_spaced_rows(x, y, settings["rows"])

    def posterior(dtype: str):
        bnn = BNN(parse_architecture(arch, "tanh"), GaussianPrior(1.0, 1.0), Gaussian(100.0), dtype=dtype)
        data = Data(jnp.asarray(x, dtype), jnp.asarray(y, dtype))
        hyper = bnn.default_hyperparameters()
        return bnn, data, hyper, lambda z: bnn.log_posterior(z, hyper, data)

    bnn, data, hyper, logdensity = posterior("float64")
    logdensity32 = posterior("float32")[3]
    starts, _ = pretrain_map(key, bnn, data, hyper, MAPConfig(num_steps=1000), num_starts=NUM_CHAINS)
    zt = jnp.asarray(test)

    def functional(z):
        return bnn.apply(bnn.unflatten(z.astype(jnp.float64)), zt)[:, 0]

    settings = {**settings, "n_rows_used": int(x.shape[0])}
    return Problem(f"bnn-{arch}", logdensity, np.asarray(starts, np.float64), functional, settings, logdensity32)


def gauss_problem(settings: dict, key: Array) -> Problem:
    scales = jnp.logspace(-2.0, 2.0, 100)

    def logdensity(z):
        return -0.5 * jnp.sum(jnp.square(z / scales))

    starts = np.asarray(jax.random.normal(key, (NUM_CHAINS, 100)))
    return Problem("gauss-100", logdensity, starts, None, dict(settings))


def posteriordb_problem(name: str, settings: dict, data_dir: Path, key: Array) -> Problem:
    from tests.targets.posteriordb import load_target

    target = load_target(name, data_dir)
    starts = np.asarray(jax.random.uniform(key, (NUM_CHAINS, target.dim), minval=-2.0, maxval=2.0))
    return Problem(name, target.logdensity, starts, None, dict(settings))


# --------------------------------------------------------------------------- samplers


def run_sigmabnn(key, problem: Problem, num_warmup: int, num_samples: int, max_tree_depth: int, **kw) -> Run:
    dtype = kw.get("dtype", "float64")
    logdensity = problem.logdensity32 if dtype == "float32" else problem.logdensity
    starts = np.tile(problem.starts, (kw.get("chains", NUM_CHAINS) // NUM_CHAINS, 1))  # the same starts, repeated
    t0 = time.perf_counter()
    algorithm = make_algorithm(
        kw.get("kernel", "nuts"), max_tree_depth=max_tree_depth, dense_mass=kw.get("dense_mass", False)
    )
    result = sample(
        key,
        algorithm,
        lambda z, _: logdensity(z),
        jnp.asarray(starts, dtype),
        None,
        RunConfig(num_warmup=num_warmup, num_samples=num_samples, split_chains=kw.get("split_chains", True)),
        progress=False,
    )
    jax.block_until_ready(result.positions)
    wall = time.perf_counter() - t0
    steps = int(np.sum(result.warmup_info.num_integration_steps)) + int(np.sum(result.info.num_integration_steps))
    return Run(
        np.asarray(result.positions, np.float64),
        np.asarray(result.info.logdensity, np.float64),
        steps,
        wall,
        float(np.median(np.asarray(result.adapted.step_size))),
        int(np.sum(np.asarray(result.info.is_divergent))),
    )


def run_numpyro(key, problem: Problem, num_warmup: int, num_samples: int, max_tree_depth: int, **kw) -> Run:
    from numpyro.infer import MCMC, NUTS

    kernel = NUTS(potential_fn=lambda z: -problem.logdensity(z), target_accept_prob=0.8, max_tree_depth=max_tree_depth)
    mcmc = MCMC(
        kernel,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=NUM_CHAINS,
        chain_method="vectorized",
        progress_bar=False,
    )
    t0 = time.perf_counter()
    mcmc.warmup(key, init_params=jnp.asarray(problem.starts), extra_fields=("num_steps",), collect_warmup=True)
    warm_steps = int(np.sum(np.asarray(mcmc.get_extra_fields()["num_steps"])))
    mcmc.run(mcmc.post_warmup_state.rng_key, extra_fields=("num_steps", "potential_energy", "diverging"))
    positions = np.asarray(mcmc.get_samples(group_by_chain=True), np.float64)
    wall = time.perf_counter() - t0
    extra = mcmc.get_extra_fields(group_by_chain=True)
    steps = warm_steps + int(np.sum(np.asarray(extra["num_steps"])))
    step_size = float(np.median(np.asarray(mcmc.last_state.adapt_state.step_size)))
    return Run(
        positions,
        -np.asarray(extra["potential_energy"], np.float64),
        steps,
        wall,
        step_size,
        int(np.sum(np.asarray(extra["diverging"]))),
    )


def run_blackjax(key, problem: Problem, num_warmup: int, num_samples: int, max_tree_depth: int, **kw) -> Run:
    import blackjax

    logdensity = problem.logdensity
    warmup = blackjax.window_adaptation(blackjax.nuts, logdensity, max_num_doublings=max_tree_depth)

    def one_chain(key, start):
        key_warm, key_sample = jax.random.split(key)
        (state, params), info = warmup.run(key_warm, start, num_warmup)
        nuts = blackjax.nuts(logdensity, **params)  # params carry max_num_doublings

        def step(st, k):
            st, inf = nuts.step(k, st)
            return st, (st.position, st.logdensity, inf.num_integration_steps, inf.is_divergent)

        _, (pos, ld, steps, div) = jax.lax.scan(step, state, jax.random.split(key_sample, num_samples))
        warm_steps = jnp.sum(info.info.num_integration_steps)
        return pos, ld, warm_steps + jnp.sum(steps), params["step_size"], jnp.sum(div)

    t0 = time.perf_counter()
    out = jax.jit(jax.vmap(one_chain))(jax.random.split(key, NUM_CHAINS), jnp.asarray(problem.starts))
    pos, ld, steps, step_size, div = jax.block_until_ready(out)
    wall = time.perf_counter() - t0
    return Run(
        np.asarray(pos, np.float64),
        np.asarray(ld, np.float64),
        int(np.sum(steps)),
        wall,
        float(np.median(np.asarray(step_size))),
        int(np.sum(div)),
    )


RUNNERS = {
    "sigmabnn": (run_sigmabnn, {}),
    "numpyro": (run_numpyro, {}),
    "blackjax": (run_blackjax, {}),
    # levers: sigmabnn variants measured beside the default
    "sigmabnn+dense": (run_sigmabnn, {"dense_mass": True}),
    "sigmabnn+float32": (run_sigmabnn, {"dtype": "float32"}),
    "sigmabnn+1device": (run_sigmabnn, {"split_chains": False}),
    # ChEES-HMC (one shared jittered trajectory length per iteration; capped at the NUTS tree's 2^depth - 1 steps)
    "sigmabnn+chees": (run_sigmabnn, {"kernel": "chees"}),
    "sigmabnn+chees16": (run_sigmabnn, {"kernel": "chees", "chains": 16}),  # each start repeated 4 times
}


# --------------------------------------------------------------------------- measurement


def min_bulk_ess(values: np.ndarray) -> float:
    """Minimum bulk ESS over the trailing elements of ``values`` ``[C, S, k]`` (constant elements skipped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = az.convert_to_dataset({"v": values})
        ess = np.asarray(az.ess(ds, method="bulk")["v"].values, np.float64).ravel()
    ess = ess[np.isfinite(ess)]
    return float(ess.min()) if ess.size else float("nan")


def min_within_chain_ess(values: np.ndarray) -> float:
    """Minimum over the trailing elements of the *sum over chains* of each chain's own bulk ESS.

    On a multimodal posterior (a BNN whose chains start at different MAP modes and stay there) the
    bulk ESS of all chains together counts the modes (rank normalisation sees chains that never
    overlap) whatever the sampler does; each chain's own ESS measures how fast it mixes in its mode.
    """
    per_chain = []
    for c in range(values.shape[0]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ds = az.convert_to_dataset({"v": values[c : c + 1]})
            per_chain.append(np.asarray(az.ess(ds, method="bulk")["v"].values, np.float64).ravel())
    total = np.sum(per_chain, axis=0)
    total = total[np.isfinite(total)]
    return float(total.min()) if total.size else float("nan")


def measure(problem: Problem, sampler: str, key, timer: CompileTimer) -> dict[str, Any]:
    fn, kw = RUNNERS[sampler]
    s = problem.settings
    with timer:
        run = fn(key, problem, s["num_warmup"], s["num_samples"], s["max_tree_depth"], **kw)
    compile_s = min(timer.seconds, run.wall_s)
    if problem.functional is not None:
        c, n, d = run.positions.shape
        f = jax.jit(jax.vmap(problem.functional))(jnp.asarray(run.positions.reshape(c * n, d)))
        pred = np.asarray(f, np.float64).reshape(c, n, -1)
    else:
        pred = run.positions
    ess_pred = min_bulk_ess(pred)
    ess_lp = min_bulk_ess(run.logdensity[:, :, None])
    min_ess = min(ess_pred, ess_lp)
    min_within = min(min_within_chain_ess(pred), min_within_chain_ess(run.logdensity[:, :, None]))
    compute_s = max(run.wall_s - compile_s, 1e-9)
    return {
        "sampler": sampler,
        "target": problem.name,
        "grad_evals": run.grad_evals,
        "grad_evals_per_s": run.grad_evals / compute_s,
        "min_ess": min_ess,
        "min_ess_predictions": ess_pred,
        "ess_log_posterior": ess_lp,
        "min_ess_per_s": min_ess / compute_s,
        "min_ess_per_s_incl_compile": min_ess / run.wall_s,
        "min_ess_per_grad": min_ess / run.grad_evals,
        "min_within_chain_ess": min_within,
        "min_within_chain_ess_per_s": min_within / compute_s,
        "wall_s": run.wall_s,
        "compile_s": compile_s,
        "step_size": run.step_size,
        "chains": run.positions.shape[0],
        "mean_steps_per_draw": run.grad_evals / (run.positions.shape[0] * (s["num_warmup"] + s["num_samples"])),
        "divergences": run.divergences,
    }


class CompileTimer:
    """Seconds JAX spends tracing, lowering and compiling while active.

    From JAX's monitoring time spans of those three phases; nested spans
    (a jitted function traced inside another) are merged, so no time is
    counted twice.
    """

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self) -> None:
        self.spans: list[tuple[float, float]] = []
        self.active = False
        jax.monitoring.register_event_time_span_listener(self._listen)

    def _listen(self, event: str, start: float, end: float, **_: Any) -> None:
        if self.active and event in self.EVENTS:
            self.spans.append((start, end))

    @property
    def seconds(self) -> float:
        total, cur_start, cur_end = 0.0, None, None
        for start, end in sorted(self.spans):
            if cur_end is None or start > cur_end:
                if cur_end is not None:
                    total += cur_end - cur_start
                cur_start, cur_end = start, end
            else:
                cur_end = max(cur_end, end)
        if cur_end is not None:
            total += cur_end - cur_start
        return total

    def __enter__(self) -> CompileTimer:
        self.spans, self.active = [], True
        return self

    def __exit__(self, *exc: Any) -> None:
        self.active = False


# --------------------------------------------------------------------------- report


def _median_records(records: list[dict]) -> list[dict]:
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        groups.setdefault((r["target"], r["sampler"]), []).append(r)
    out = []
    for (target, sampler), rs in groups.items():
        m = {"sampler": sampler, "target": target, "reps": len(rs)}
        for k in rs[0]:
            if k not in m and isinstance(rs[0][k], int | float):
                m[k] = statistics.median(r[k] for r in rs)
        out.append(m)
    return out


def _ess_goal(label: str, ours: dict, best: dict, need: float, within: bool = False) -> dict:
    """An ESS/s ratio against the better peer as a goal line (ESS of all chains, or ``within`` chains).

    A ratio of two ESS below ``MIN_RELIABLE_ESS`` compares chains that have not mixed (rank-normalised
    ESS and R-hat need at least 100, Vehtari et al. 2021): it is reported but not counted as met.
    """
    rate, ess = ("min_within_chain_ess_per_s", "min_within_chain_ess") if within else ("min_ess_per_s", "min_ess")
    ratio = ours[rate] / best[rate] if best[rate] > 0 else float("inf")
    measured = min(ours[ess], best[ess]) >= MIN_RELIABLE_ESS
    kind = "within-chain ESS" if within else "min ESS"
    return {
        "goal": label + ("" if measured else f"; {kind} < {MIN_RELIABLE_ESS}: not a measurement"),
        "target_ratio": need,
        "ratio": ratio,
        "met": measured and ratio >= need,
    }


def _grad_goal(label: str, ours: dict, numpyro: dict) -> dict:
    g = ours["grad_evals_per_s"] / numpyro["grad_evals_per_s"]
    return {"goal": label, "target_ratio": 2.0, "ratio": g, "met": g >= 2.0}


def goals(summary: list[dict]) -> list[dict]:
    by = {(r["target"], r["sampler"]): r for r in summary}
    out = []
    for target in sorted({r["target"] for r in summary}):
        ours = by.get((target, "sigmabnn"))
        peers = [by[(target, p)] for p in ("numpyro", "blackjax") if (target, p) in by]
        if ours is None or not peers:
            continue
        best = max(peers, key=lambda r: r["min_ess_per_s"])
        need = 2.0 if target.startswith("bnn") else 1.0
        numpyro = by.get((target, "numpyro"))
        out.append(_ess_goal(f"{target}: min ESS/s vs the better peer ({best['sampler']})", ours, best, need))
        if target.startswith("bnn") and numpyro is not None:
            out.append(_grad_goal(f"{target}: gradient evaluations/s vs NumPyro (vectorized, 4 chains)", ours, numpyro))
        chees = by.get((target, "sigmabnn+chees"))
        if chees is not None:  # ChEES-HMC with the same 4 chains, starts, warm-up and draws as the peers' NUTS
            label = f"{target}: min ESS/s of sigmabnn+chees (ChEES-HMC, 4 chains) vs the better peer's NUTS"
            out.append(_ess_goal(f"{label} ({best['sampler']})", chees, best, need))
        lever = by.get((target, "sigmabnn+float32"))
        if lever is not None:  # the float32 lever against the peers in float64 (stated in the goal's name)
            label = f"{target}: min ESS/s of sigmabnn+float32 vs the better peer in float64 ({best['sampler']})"
            out.append(_ess_goal(label, lever, best, need))
            if numpyro is not None:
                label = f"{target}: gradient evaluations/s of sigmabnn+float32 vs NumPyro in float64"
                out.append(_grad_goal(label, lever, numpyro))
        if target.startswith("bnn"):
            out.extend(_within_chain_goals(target, by, need))
    return out


def _within_chain_goals(target: str, by: dict, need: float) -> list[dict]:
    """The BNN goals on the within-chain ESS/s (sum over chains of each chain's own bulk ESS).

    A BNN's chains start at different MAP modes and stay there, so the bulk ESS of all chains
    together counts modes whatever the sampler (weight space is not identifiable); the
    within-chain ESS measures how fast each chain mixes in its mode, the part a sampler controls.
    """
    key = "min_within_chain_ess_per_s"
    peers = [by[(target, p)] for p in ("numpyro", "blackjax") if (target, p) in by and key in by[(target, p)]]
    if not peers:
        return []
    best = max(peers, key=lambda r: r[key])
    out = []
    for sampler, label in (
        ("sigmabnn", "sigmabnn's NUTS"),
        ("sigmabnn+chees", "sigmabnn+chees (ChEES-HMC, 4 chains)"),
        ("sigmabnn+float32", "sigmabnn+float32 (NUTS in float32)"),
    ):
        ours = by.get((target, sampler))
        if ours is not None and key in ours:
            goal = f"{target}: within-chain min ESS/s of {label} vs the better peer's NUTS ({best['sampler']})"
            out.append(_ess_goal(goal, ours, best, need, within=True))
    return out


def _opt(record: dict, key: str, spec: str) -> str:
    """``record[key]`` formatted, or ``n/a`` for records of runs made before the quantity was measured."""
    return format(record[key], spec) if key in record else "n/a"


def markdown(out: dict) -> str:
    m = out["machine"]
    lines = [
        "# NUTS: sigmabnn vs NumPyro vs BlackJAX (generated by `benchmarks/samplers.py` from `samplers.json`)",
        "",
        f"Date {out['date']}; load average at start/end {m['load_average_1_5_15_at_start']} / "
        f"{m['load_average_1_5_15_at_end']} on {m['cpu_count']} cores (shared machine), "
        f"{m.get('jax_devices', 1)} JAX CPU devices (sigmabnn splits its chains over them; the peers use one); "
        f"jax {m['jax']}, numpyro {m['numpyro']}, blackjax {m['blackjax']}, sigmabnn {m['sigmabnn']}.",
        "",
        ("" if out.get("complete", True) else "**Partial run: not every planned target/sampler finished.** ")
        + f"Setting: **{out['mode']}**, {NUM_CHAINS} chains, repetitions per target: see `reps`. "
        "Per target (identical for every sampler):",
        "",
        "| target | rows used | warm-up | draws | max tree depth |",
        "|---|---:|---:|---:|---:|",
    ]
    for target, s in out["settings"].items():
        rows = s.get("n_rows_used", "") if s.get("rows") is not None else (s.get("n_rows_used") or "all")
        lines.append(f"| {target} | {rows} | {s['num_warmup']} | {s['num_samples']} | {s['max_tree_depth']} |")
    lines += [
        "",
        "`min_ess` = minimum bulk ESS over the log posterior and the predictions (BNN: network output at 20 "
        "inputs; other targets: every coordinate). Rates exclude compilation (JAX's own trace/lower/compile "
        "timings, summed during the run); `wall_s` includes it. Medians over repetitions. "
        "`within-chain ESS` = the minimum over the same quantities of the sum of each chain's own bulk ESS: "
        "on a BNN the chains start in different modes and stay there, so the bulk ESS of all chains counts "
        "modes whatever the sampler; the within-chain ESS measures mixing inside each chain's mode.",
        "",
        "| target | sampler | grad evals/s | min ESS/s | min ESS/grad | min ESS | ESS log post. | "
        "within-chain ESS | within-chain ESS/s | wall s | compile s | step size | steps/iter | divergences | reps |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(out["summary"], key=lambda r: (r["target"], r["sampler"])):
        lines.append(
            f"| {r['target']} | {r['sampler']} | {r['grad_evals_per_s']:,.0f} | {r['min_ess_per_s']:.3g} | "
            f"{r['min_ess_per_grad']:.3g} | {r['min_ess']:.0f} | {r['ess_log_posterior']:.0f} | "
            f"{_opt(r, 'min_within_chain_ess', '.0f')} | {_opt(r, 'min_within_chain_ess_per_s', '.3g')} | "
            f"{r['wall_s']:.1f} | "
            f"{r['compile_s']:.1f} | {r['step_size']:.3g} | {r['mean_steps_per_draw']:.1f} | "
            f"{r['divergences']:.0f} | {r['reps']} |"
        )
    lines += ["", "## Goals", "", "| goal | needed | measured ratio | met |", "|---|---:|---:|---|"]
    for g in out["goals"]:
        lines.append(f"| {g['goal']} | {g['target_ratio']:g}x | {g['ratio']:.2f}x | {'yes' if g['met'] else 'no'} |")
    by = {(r["target"], r["sampler"]): r for r in out["summary"]}
    lines += [
        "",
        "## What limits it",
        "",
        "sigmabnn's gradient evaluations per second and min ESS per gradient relative to NumPyro's, per target "
        "(the same log-density: a lower rate is per-step overhead of the sampler, a lower ESS/grad is "
        "adaptation or trajectory length):",
        "",
        "| target | grad evals/s ratio | min ESS/grad ratio | min ESS/s ratio |",
        "|---|---:|---:|---:|",
    ]
    for target in sorted({t for t, _ in by}):
        a, b = by.get((target, "sigmabnn")), by.get((target, "numpyro"))
        if a and b:
            lines.append(
                f"| {target} | {a['grad_evals_per_s'] / b['grad_evals_per_s']:.2f} | "
                f"{a['min_ess_per_grad'] / b['min_ess_per_grad']:.2f} | {a['min_ess_per_s'] / b['min_ess_per_s']:.2f} |"
            )
    lines += ["", "## Levers", ""]
    lines += [f"- {n}" for n in out["levers"]]
    lines += ["", "## Notes", ""]
    lines += [f"- {n}" for n in out["notes"]]
    return "\n".join(lines) + "\n"


def lever_lines(summary: list[dict]) -> list[str]:
    by = {(r["target"], r["sampler"]): r for r in summary}
    out = []
    for (target, sampler), r in sorted(by.items()):
        if "+" not in sampler or (target, "sigmabnn") not in by:
            continue
        base = by[(target, "sigmabnn")]
        chains = r.get("chains", NUM_CHAINS)
        note = f" ({chains:.0f} chains, ESS over all of them; the default runs {NUM_CHAINS})"
        out.append(
            f"{sampler} on {target}: min ESS/s x{r['min_ess_per_s'] / base['min_ess_per_s']:.2f}, "
            f"min ESS/grad x{r['min_ess_per_grad'] / base['min_ess_per_grad']:.2f}, "
            f"grad evals/s x{r['grad_evals_per_s'] / base['grad_evals_per_s']:.2f} relative to sigmabnn's default"
            + (note if chains != NUM_CHAINS else "")
        )
    return out


def merge(paths: list[Path], out_path: Path, repetitions: int = 0, extra_notes: tuple[str, ...] = ()) -> int:
    """Combine result files: records, settings and notes are concatenated; summary, goals and levers recomputed.

    Where several files hold records of the same (target, sampler), only the last file's are kept: a rerun of
    some targets, merged after the earlier result, replaces them. With ``repetitions = k`` the last ``k``
    files are repetitions of one run (same settings, other seeds): their records are all kept, and the
    summary takes the medians over them. ``extra_notes`` are added to the notes (e.g. what changed in the
    code since an older file's records were measured).
    """
    parts = [json.loads(p.read_text()) for p in paths]
    for part in parts:  # records carry the date of the run that measured them (a merged file's keep theirs)
        for r in part["records"]:
            r.setdefault("date", None if "runs" in part["machine"] else part["date"])
    first_rep = len(parts) - repetitions if repetitions > 1 else len(parts)
    group = [min(i, first_rep) for i in range(len(parts))]  # the repetitions share one group
    newest = {(r["target"], r["sampler"]): group[i] for i, part in enumerate(parts) for r in part["records"]}
    kept_records = [
        [r for r in part["records"] if newest[(r["target"], r["sampler"])] == group[i]] for i, part in enumerate(parts)
    ]
    records = [r for rs in kept_records for r in rs]
    summary = _median_records(records)
    # a note is keyed by its text up to the first colon: a later file's note replaces an earlier one's with the
    # same key (an updated setting note), and the earlier merges' "Merged from" notes are restated below
    # a "Records of <targets> were measured ..." note is dropped once a later file replaces those targets' records
    notes: dict[str, str] = {}
    for i, part in enumerate(parts):
        for n in part["notes"]:
            stale = n.startswith("Records of ") and any(
                t in n.split(" were ")[0] and newest.get((t, "sigmabnn"), group[i]) > group[i]
                for t in {r["target"] for r in records}
            )
            if not n.startswith("Merged from") and not stale:
                notes.pop(n.split(":")[0], None)
                notes[n.split(":")[0]] = n
    earlier = list(notes.values())
    out = {
        **parts[-1],  # date and machine of the newest run head the table
        "mode": "; ".join(dict.fromkeys(part["mode"] for part in parts)),
        "complete": all(part.get("complete", True) for part in parts),
        "records": records,
        "summary": summary,
        "goals": goals(summary),
        "levers": lever_lines(summary),
        "settings": {k: v for part in parts for k, v in part["settings"].items()},
        "notes": list(
            dict.fromkeys(
                earlier
                + list(extra_notes)
                + [
                    f"Merged from {len(parts)} result files of this script (one process each, run on the same "
                    "machine; a later file's records replace an earlier one's for the same target and sampler): "
                    + ", ".join(
                        f"{p.name} (records kept for {', '.join(sorted({r['target'] for r in rs})) or 'no target'}; "
                        f"measured {', '.join(sorted({str(r['date']) for r in rs})) or '-'})"
                        for p, rs in zip(paths, kept_records)
                    )
                ]
            )
        ),
        "machine": {**parts[-1]["machine"], "runs": [part["machine"] for part in parts]},
    }
    _results.write(out_path, out, markdown(out))
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the issue's full setting (hours)")
    parser.add_argument("--targets", default=None, help="comma-separated subset of targets (default: all)")
    parser.add_argument("--samplers", default=",".join(SAMPLERS), help=f"from {', '.join(RUNNERS)}")
    parser.add_argument(
        "--levers",
        default=(
            "sigmabnn+float32:bnn-,sigmabnn+dense:eight_schools,sigmabnn+dense:diamonds,"
            "sigmabnn+1device:bnn-,sigmabnn+1device:gauss-100,sigmabnn+chees:bnn-,sigmabnn+chees:gauss-100,"
            "sigmabnn+chees16:bnn-,sigmabnn+chees16:gauss-100"
        ),
        help="sigmabnn variants run beside the default, as sampler:target-prefix pairs",
    )
    parser.add_argument("--reps", type=int, default=1, help="repetitions of the BNN targets (interleaved)")
    parser.add_argument(
        "--cheap-reps",
        type=int,
        default=3,
        help="repetitions of the other targets (interleaved; their sampling takes about a second, so one run is noise)",
    )
    parser.add_argument("--shared", type=Path, default=Path(os.environ.get("SIGMABNN_SHARED", REPO.parent / "shared")))
    parser.add_argument("--out", type=Path, default=RESULTS / "samplers.json")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--num-warmup", type=int, help="override the warm-up length of every target")
    parser.add_argument("--num-samples", type=int, help="override the draws of every target")
    parser.add_argument("--max-tree-depth", type=int, help="override the maximum tree depth of every target")
    parser.add_argument("--rows", type=int, help="override the BNN training-row subset")
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="combine the records of these result files (e.g. targets run in separate processes) into --out",
    )
    parser.add_argument("--note", action="append", default=[], help="with --merge: a note to add (repeatable)")
    parser.add_argument(
        "--merge-repetitions",
        type=int,
        default=0,
        metavar="K",
        help="with --merge: the last K files are repetitions of one run (other --seed); medians over them",
    )
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.out, args.merge_repetitions, tuple(args.note))

    import blackjax
    import numpyro

    numpyro.enable_x64()
    mode = "full" if args.full else "reduced"
    overrides = {
        k: getattr(args, k) for k in ("num_warmup", "num_samples", "max_tree_depth", "rows") if getattr(args, k)
    }
    if overrides:
        mode += " with overrides " + ", ".join(f"{k}={v}" for k, v in overrides.items())
    table = {
        t: {**s, **{k: v for k, v in overrides.items() if k != "rows" or t.startswith("bnn")}}
        for t, s in SETTINGS["full" if args.full else "reduced"].items()
    }
    data_dir = args.shared / "data"
    nlo = data_dir / "nlo_ewino" / "ewino_nlo.csv.gz"
    names = ["gauss-100", "bnn-5-20-20-1", *POSTERIORDB, "bnn-5-50-50-50-1"]
    if args.targets:
        wanted = args.targets.split(",")
        names = [n for n in names if n in wanted]
    load_start = os.getloadavg()
    key = jax.random.key(args.seed)

    def build(i: int, name: str) -> Problem | None:
        """The problem ``name``, built when first needed (MAP starts for a BNN take a while)."""
        k = jax.random.fold_in(key, i)
        if name.startswith("bnn-"):
            if not nlo.is_file():
                print(f"skipping {name}: {nlo} not found", file=sys.stderr)
                return None
            return bnn_problem(name[4:], table[name], nlo, k)
        if name == "gauss-100":
            return gauss_problem(table[name], k)
        if not (data_dir / "posteriordb").is_dir():
            print(f"skipping {name}: {data_dir / 'posteriordb'} not found", file=sys.stderr)
            return None
        return posteriordb_problem(name, table.get(name, table["posteriordb"]), data_dir, k)

    built: dict[str, Problem | None] = {}
    problems: list[Problem] = []  # those built so far, in order
    samplers = args.samplers.split(",")
    levers = [tuple(x.split(":")) for x in args.levers.split(",") if x]

    def plan(problem: Problem) -> list[str]:
        extra = [s for s, prefix in levers if problem.name.startswith(prefix)]
        return samplers + [s for s in extra if s not in samplers]

    def write_results(records: list[dict], complete: bool) -> None:
        summary = _median_records(records)
        out = {
            "mode": mode,
            "records": records,
            "summary": summary,
            "goals": goals(summary),
            "settings": {p.name: p.settings for p in problems},
            "levers": lever_lines(summary),
            "notes": [
                "All samplers evaluate the same jitted JAX log-density, so gradient cost per evaluation is the same "
                "function; differences in gradient evaluations per second come from each library's per-step "
                "overhead (tree building, vectorization over chains) and compilation.",
                "Reduced setting (the default): BNN posteriors on an evenly spaced subset of the training rows "
                "with a capped tree depth, 200 warm-up iterations and 800 draws per chain, --reps repetitions; the "
                "bulk ESS of all chains counts the modes the chains sit in, so the BNN goals are also stated on the "
                "within-chain ESS. An ESS ratio counts as met only when both sides reach an ESS of 100 (below it "
                "the chains have not mixed, Vehtari et al. 2021). The cheap targets draw "
                f"{SETTINGS['reduced']['posteriordb']['num_samples']} per chain and run --cheap-reps times (medians). "
                "Run with --full for the issue's setting.",
                "Under a capped tree depth, trajectories that would be longer are cut identically for every "
                "sampler; ESS per gradient then depends on how well each warm-up adapted the step size and mass "
                "matrix in few iterations.",
            ],
            "machine": _results.machine(
                load_start, numpyro=numpyro.__version__, blackjax=blackjax.__version__, sigmabnn=sigmabnn.__version__
            ),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        out["complete"] = complete
        _results.write(args.out, out, markdown(out))

    timer = CompileTimer()
    records: list[dict] = []
    max_reps = max(args.reps, args.cheap_reps)
    for rep in range(max_reps):
        for p_index, name in enumerate(names):
            reps = args.reps if name.startswith("bnn-") else args.cheap_reps
            if rep >= reps:
                continue
            if name not in built:
                built[name] = build(p_index, name)
                if built[name] is not None:
                    problems.append(built[name])
            problem = built[name]
            if problem is None:
                continue
            order = plan(problem)
            order = order[rep % len(order) :] + order[: rep % len(order)]  # rotate: no fixed first runner
            for sampler in order:
                k = jax.random.fold_in(jax.random.fold_in(key, 1000 + p_index), rep)
                rec = measure(problem, sampler, k, timer)
                rec["rep"] = rep
                records.append(rec)
                print(
                    f"[{rep}] {problem.name:>40s} {sampler:>15s}: {rec['grad_evals_per_s']:9,.0f} grads/s, "
                    f"min ESS {rec['min_ess']:7.1f}, {rec['min_ess_per_s']:8.3g} ESS/s, "
                    f"{rec['min_ess_per_grad']:.3g} ESS/grad, wall {rec['wall_s']:.1f} s",
                    flush=True,
                )
                write_results(records, complete=False)  # a partial result survives a time-out
    write_results(records, complete=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
