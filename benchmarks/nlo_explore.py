"""Exploration of surrogate configurations for chi1^0 chi1^0 NLO cross sections (built-in Prospino data).

Each experiment group writes its measured numbers into ``benchmarks/results/nlo_explore.json``
(merged by key, written atomically); ``docs/nlo_research.md`` quotes only numbers from there.

Groups (``--group NAME``, repeatable):

- ``proxy``: a cheap diagnostic of the physics proxy: ordinary least squares of log10(sigma)
  on a cubic in log|m| plus log(proxy) for each sign convention / effective s-hat, train R^2 and
  test R^2 (log space). Picks the proxy variant the derived features use.
- ``features``: plain JAX/Optax MAP fits (full-batch Adam, mean squared error in standardised
  log10 space) of 5-20-20-1-like networks on feature sets from the thesis's five inputs to the
  physics-motivated ones; test metrics.
- ``arch``: architecture and schedule on the best feature set.
- ``noise``: noise models compared on the *validation* split: homoscedastic Gaussian (std fitted
  by maximum likelihood on train), Student-t, heteroscedastic Gaussian and Student-t heads;
  coverage of the central 68.3 / 95.4 / 99.7 % predictive intervals (``--quick``: homoscedastic
  and heteroscedastic Student-t only).
- ``nuts``: :func:`sigmabnn.workflows.nlo.train_process` (``api.fit``: MAP starts, NUTS,
  Gibbs-sampled Gaussian noise precision) with the recommended features; test metrics, coverage
  and wall time.
- ``nuts_student``: ``fit_mcmc`` directly with a heteroscedastic Student-t head (``--df``);
  coverage from the t-mixture's CDF. The recorded runs used df = 2 with the exploration's own
  likelihood class; the library's :class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`
  which replaced it needs df > 2 (a finite predictive std), so the default is now 3.
- ``table``: print the Markdown tables of ``docs/nlo_research.md`` from the results file.

Usage: ``python benchmarks/nlo_explore.py --group proxy --group features`` (each group takes
minutes to tens of minutes on two shared cores). The recorded runs::

    --group proxy
    --group features --steps 4000   (then --only proxy_multi_s, added later)
    --group arch --steps 4000          (stopped before its last case, 50-50 x 12000 steps)
    --group noise --steps 4000 --hidden 20-20
    --group noise --quick --steps 12000 --hidden 20-20
    --group nuts --hidden 20-20 --warmup 150 --samples 50 --chains 2 --depth 5 --map-steps 4000 \
        --tag n1n1_20x20_depth5
    --group nuts_student (same settings) --tag n1n1_20x20_depth5_hetero_student
    --group nuts_student (same, --map-steps 12000) --tag n1n1_20x20_depth5_hetero_student_map12k
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax
from scipy import stats

jax.config.update("jax_enable_x64", True)

from sigmabnn.data.features import add_derived  # noqa: E402
from sigmabnn.datasets import THESIS_FEATURES, ewino_table, load_ewino  # noqa: E402
from sigmabnn.model.likelihoods import HeteroscedasticStudentT  # noqa: E402
from sigmabnn.physics import amplitude_features, couplings  # noqa: E402
from sigmabnn.workflows import nlo  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "nlo_explore.json"
PROCESS = "1000022,1000022"
TARGET = "nlo_1000022_1000022"
LEVELS = (0.682689, 0.954500, 0.997300)  # 1/2/3 sigma central probabilities


# ----------------------------------------------------------------------------- data


def load_frames(derived: list[str]) -> dict[str, tuple[np.ndarray, np.ndarray, list[str]]]:
    """Split -> (X raw [n, k], log10 target [n], feature names) with the given derived features."""
    table, _ = ewino_table(PROCESS, log_target=True)
    df = load_ewino()
    df = df[df[TARGET].notna() & (df[TARGET] > 0)].reset_index(drop=True)
    assert len(df) == len(table)
    df = add_derived(df, derived)
    names = list(THESIS_FEATURES) + [d.partition("=")[0] for d in derived]
    out = {}
    for split in ("train", "val", "test"):
        part = df[df["split"] == split]
        out[split] = (part[names].to_numpy(np.float64), np.log10(part[TARGET].to_numpy(np.float64)), names)
    return out


def standardise(frames):
    xtr, ytr, _ = frames["train"]
    xm, xs = xtr.mean(0), xtr.std(0)
    xs = np.where(xs > 0, xs, 1.0)
    ym, ys = ytr.mean(), ytr.std()
    return {k: ((x - xm) / xs, (y - ym) / ys) for k, (x, y, _) in frames.items()}, (ym, ys)


# ----------------------------------------------------------------------------- metrics


def point_metrics(pred_log: np.ndarray, y_log: np.ndarray) -> dict[str, float]:
    r2 = 1 - np.sum((pred_log - y_log) ** 2) / np.sum((y_log - y_log.mean()) ** 2)
    xt, xp = 10.0**y_log, 10.0**pred_log
    r2x = 1 - np.sum((xp - xt) ** 2) / np.sum((xt - xt.mean()) ** 2)
    rel = np.abs(xp / xt - 1)
    return {
        "r2_log": float(r2),
        "r2_xsec": float(r2x),
        "rel_err_median_pct": float(100 * np.median(rel)),
        "rel_err_p90_pct": float(100 * np.quantile(rel, 0.9)),
        "rel_err_p99_pct": float(100 * np.quantile(rel, 0.99)),
        "rmse_log": float(np.sqrt(np.mean((pred_log - y_log) ** 2))),
    }


def coverage_from_cdf(u: np.ndarray) -> dict[str, float]:
    """Coverage of central intervals from PIT values u = F(y) of the predictive distribution."""
    out = {}
    for k, p in zip((1, 2, 3), LEVELS, strict=True):
        lo, hi = 0.5 - p / 2, 0.5 + p / 2
        out[f"cov_{k}sigma_pct"] = float(100 * np.mean((u >= lo) & (u <= hi)))
    return out


# ----------------------------------------------------------------------------- plain JAX MLP


def init_mlp(key, sizes):
    params = []
    for k, (a, b) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:], strict=True), strict=True):
        params.append((jax.random.normal(k, (a, b)) * np.sqrt(1.0 / a), jnp.zeros(b)))
    return params


def mlp(params, x, act=jnp.tanh):
    for w, b in params[:-1]:
        x = act(x @ w + b)
    w, b = params[-1]
    return x @ w + b


def fit_map(x, y, hidden, steps, lr=3e-3, seed=0, wd=1e-6, loss_kind="mse", out_dim=1, init=None, act=jnp.tanh):
    """Full-batch Adam with a cosine schedule. loss_kind: mse | hetero | student."""
    sizes = [x.shape[1]] + list(hidden) + [out_dim]
    params = init_mlp(jax.random.key(seed), sizes) if init is None else init
    extra = {"log_s": jnp.asarray(np.log(0.05)), "log_nu": jnp.asarray(np.log(3.0))}
    state_params = (params, extra)
    x, y = jnp.asarray(x), jnp.asarray(y)

    def loss(sp):
        ps, ex = sp
        f = mlp(ps, x, act)
        reg = wd * sum(jnp.sum(w**2) for w, _ in ps)
        if loss_kind == "mse":
            return jnp.mean((f[:, 0] - y) ** 2) + reg
        if loss_kind == "hetero":
            s = jax.nn.softplus(f[:, 1]) + 1e-4
            return jnp.mean(0.5 * ((y - f[:, 0]) / s) ** 2 + jnp.log(s)) + reg
        if loss_kind == "student":
            s, nu = jnp.exp(ex["log_s"]), jnp.exp(ex["log_nu"])
            z = (y - f[:, 0]) / s
            return -jnp.mean(student_t_logpdf(z, nu) - jnp.log(s)) + reg
        if loss_kind == "hetero_student":
            s, nu = jax.nn.softplus(f[:, 1]) + 1e-4, jnp.exp(ex["log_nu"])
            z = (y - f[:, 0]) / s
            return -jnp.mean(student_t_logpdf(z, nu) - jnp.log(s)) + reg
        raise ValueError(loss_kind)

    sched = optax.cosine_decay_schedule(lr, steps, alpha=0.01)
    opt = optax.adam(sched)
    st = opt.init(state_params)

    @jax.jit
    def run(sp, st):
        def body(c, _):
            sp, st = c
            val, g = jax.value_and_grad(loss)(sp)
            u, st = opt.update(g, st, sp)
            return (optax.apply_updates(sp, u), st), val

        (sp, st), ls = jax.lax.scan(body, (sp, st), None, length=steps)
        return sp, ls

    t = time.perf_counter()
    sp, ls = run(state_params, st)
    ls = np.asarray(ls)
    return sp, float(ls[-1]), time.perf_counter() - t


def student_t_logpdf(z, nu):
    return (
        jax.scipy.special.gammaln((nu + 1) / 2)
        - jax.scipy.special.gammaln(nu / 2)
        - 0.5 * jnp.log(nu * jnp.pi)
        - (nu + 1) / 2 * jnp.log1p(z**2 / nu)
    )


# ----------------------------------------------------------------------------- results file


def save(key: str, value) -> None:
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    data[key] = value
    data.setdefault("_meta", {})
    data["_meta"].update(
        {
            "script": "benchmarks/nlo_explore.py",
            "process": PROCESS,
            "machine": f"{os.cpu_count()} cores, shared with other jobs (timings inflated by contention)",
            "jax": jax.__version__,
        }
    )
    fd, tmp = tempfile.mkstemp(dir=RESULTS.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=1, sort_keys=True)
    os.replace(tmp, RESULTS)
    print(f"[saved {key}]", flush=True)


# ----------------------------------------------------------------------------- groups


def group_proxy() -> None:
    """OLS of log10 sigma on a cubic in log|m| (+ sign of m) plus log of the amplitude proxy."""
    res = {}
    variants = [(sl, sr, k, 0.0, 1.0) for sl in (1, -1) for sr in (1, -1) for k in (1.0, 1.5, 2.0, 3.0)]
    variants += [(1, sr, k, 0.0, 1.0) for sr in (1, -1) for k in (4.0, 6.0, 10.0)]
    variants += [(1, -1, k, s0, 1.0) for k in (1.0, 2.0, 4.0) for s0 in (1e4, 4e4, 1e5)]
    variants += [(sl, -1, 2.0, 4e4, zk) for sl in (1, -1) for zk in (0.25, 0.5, 2.0, 4.0)]
    df = load_ewino()
    df = df[df[TARGET].notna() & (df[TARGET] > 0)].reset_index(drop=True)
    y = np.log10(df[TARGET].to_numpy())
    lm = np.log(np.abs(df["m_1000022"].to_numpy()))
    sgn = np.sign(df["m_1000022"].to_numpy())
    base = np.column_stack([np.ones_like(lm), lm, lm**2, lm**3, sgn])
    tr, te = (df["split"] == "train").to_numpy(), (df["split"] == "test").to_numpy()

    def ols(cols):
        a = np.column_stack([base] + cols)
        coef, *_ = np.linalg.lstsq(a[tr], y[tr], rcond=None)
        p = a @ coef
        return point_metrics(p[te], y[te])["r2_log"], float(np.sqrt(np.mean((p[tr] - y[tr]) ** 2)))

    r2, rmse = ols([])
    res["mass_only"] = {"r2_log_test": r2, "rmse_log_train": rmse}
    done = json.loads(RESULTS.read_text()).get("proxy_ols", {}) if RESULTS.exists() else {}
    res.update(done)
    for sl, sr, k, s0, zk in variants:
        key = f"sl{sl:+d}_sr{sr:+d}_k{k:g}_s0{s0:g}" + (f"_z{zk:g}" if zk != 1.0 else "")
        if key in res:
            continue
        spec = amplitude_features.proxy_features(
            "1000022,1000022", sign_left=sl, sign_right=sr, shat_factor=k, shat_offset=s0, z_scale=zk
        )
        d2 = add_derived(df, spec)
        cols = [d2[spec[-1].partition("=")[0]].to_numpy()]
        r2, rmse = ols(cols)
        res[key] = {"r2_log_test": r2, "rmse_log_train": rmse}
        print(key, r2, rmse, flush=True)
    save("proxy_ols", res)


FEATURE_SETS = {
    "thesis": lambda: [],
    "prior_derived": lambda: [
        "zc=(N1000022_3**2-N1000022_4**2)**2",
        "logzc=log((N1000022_3**2-N1000022_4**2)**2+1e-12)",
        "absm=abs(m_1000022)",
    ],
    "couplings": lambda: amplitude_features.coupling_features("1000022,1000022"),
    "couplings+interf": lambda: amplitude_features.coupling_features("1000022,1000022", interference=True),
    "proxy_only": lambda: ["lam_1000022=log(abs(m_1000022))"] + amplitude_features.proxy_features("1000022,1000022"),
    "proxy": lambda: (
        amplitude_features.coupling_features("1000022,1000022", interference=True)
        + amplitude_features.proxy_features("1000022,1000022")
    ),
    "proxy_multi_s": lambda: (
        amplitude_features.coupling_features("1000022,1000022", interference=True)
        + amplitude_features.proxy_features("1000022,1000022", shat_factor=1.2, shat_offset=0.0, suffix="_lo")
        + amplitude_features.proxy_features("1000022,1000022", shat_factor=4.0, shat_offset=1e5, suffix="_hi")
        + amplitude_features.proxy_features("1000022,1000022")
    ),
}


def ols_baseline(frames):
    """Least-squares baseline of log10 sigma on [1, log|m|, log|m|^2, log|m|^3, sign m, lproxy] (train fit)."""
    names = frames["train"][2]
    im, ip = names.index("m_1000022"), names.index("lproxy")

    def design(x):
        lm = np.log(np.abs(x[:, im]))
        return np.column_stack([np.ones_like(lm), lm, lm**2, lm**3, np.sign(x[:, im]), x[:, ip]])

    coef, *_ = np.linalg.lstsq(design(frames["train"][0]), frames["train"][1], rcond=None)
    return lambda x: design(x) @ coef


def run_map_case(name, derived, hidden, steps, lr=3e-3, seed=0, wd=1e-6, act="tanh", resid=False, worst=0):
    frames = load_frames(derived)
    base = ols_baseline(frames) if resid else (lambda x: np.zeros(len(x)))
    frames_fit = {k: (x, y - base(x), n) for k, (x, y, n) in frames.items()}
    data, (ym, ys) = standardise(frames_fit)
    x, y = data["train"]
    actf = {"tanh": jnp.tanh, "gelu": jax.nn.gelu, "silu": jax.nn.silu}[act]
    sp, train_loss, secs = fit_map(x, y, hidden, steps, lr=lr, seed=seed, wd=wd, act=actf)
    out = {"features": name, "n_inputs": x.shape[1], "hidden": list(hidden), "steps": steps, "lr": lr, "seed": seed}
    out.update({"weight_decay": wd, "activation": act, "train_mse_std": train_loss, "seconds": round(secs, 1)})
    out["target"] = "log10 sigma - OLS(cubic log|m|, sign m, lproxy)" if resid else "log10 sigma"
    for split in ("val", "test"):
        xs_, _ = data[split]
        pred = np.asarray(mlp(sp[0], jnp.asarray(xs_), actf))[:, 0] * ys + ym + base(frames[split][0])
        out[split] = point_metrics(pred, frames[split][1])
        if worst and split == "test":
            rel = np.abs(10 ** (pred - frames[split][1]) - 1)
            idx = np.argsort(-rel)[:worst]
            cols = frames[split][2]
            out["worst_test_points"] = [
                {
                    c: float(frames[split][0][i, cols.index(c)])
                    for c in cols
                    if c in ("m_1000022", "N1000022_1", "N1000022_2", "N1000022_3", "N1000022_4", "zs", "lproxy")
                }
                | {"log10_xsec": float(frames[split][1][i]), "rel_err_pct": float(100 * rel[i])}
                for i in idx
            ]
    t = out["test"]
    print(
        f"{name:18s} {hidden} {steps} lr{lr} s{seed} {act}: r2log {t['r2_log']:.5f} r2x {t['r2_xsec']:.4f} "
        f"med {t['rel_err_median_pct']:.2f}% p90 {t['rel_err_p90_pct']:.1f}% p99 {t['rel_err_p99_pct']:.1f}% "
        f"({secs:.0f}s)",
        flush=True,
    )
    return out, sp, frames, data, (ym, ys)


def group_features(steps: int, only: list[str] | None = None) -> None:
    res = json.loads(RESULTS.read_text()).get("features_map_20x20", {}) if RESULTS.exists() else {}
    for name, fn in FEATURE_SETS.items():
        if only and name not in only:
            continue
        res[name] = run_map_case(name, fn(), (20, 20), steps)[0]
        save("features_map_20x20", res)


def group_arch(steps: int) -> None:
    derived = amplitude_features.recommended_features(PROCESS)
    res = json.loads(RESULTS.read_text()).get("arch_map", {}) if RESULTS.exists() else {}
    cases = [
        ((20, 20), steps, 3e-3, "tanh", True),
        ((50, 50), steps, 3e-3, "tanh", False),
        ((20, 20), steps, 1e-2, "tanh", False),
        ((20, 20), 3 * steps, 3e-3, "tanh", False),
        ((50, 50), 3 * steps, 3e-3, "tanh", True),
    ]
    for hidden, st, lr, act, resid in cases:
        key = f"{'x'.join(map(str, hidden))}_steps{st}_lr{lr:g}_{act}{'_resid' if resid else ''}"
        if key in res:
            continue
        res[key] = run_map_case("recommended", derived, hidden, st, lr=lr, act=act, resid=resid, worst=10)[0]
        save("arch_map", res)


def _gauss_cdf(y, mu, s):
    return stats.norm.cdf((y - mu) / s)


def group_noise(steps: int, hidden: tuple[int, ...], quick: bool = False) -> None:
    """Noise models, coverage on val (and test for the record). Means from the same MSE fit.

    ``quick``: only the homoscedastic and heteroscedastic Student-t models, saved under
    ``noise_models_<steps>steps``.
    """
    key = f"noise_models_{steps}steps" if quick else "noise_models"
    derived = amplitude_features.recommended_features(PROCESS)
    _, sp, frames, data, (ym, ys) = run_map_case("recommended", derived, hidden, steps)
    x, y = data["train"]
    res = {"hidden": list(hidden), "steps": steps}

    def evaluate(kind, fparams, extra):
        out = {}
        for split in ("val", "test"):
            xs_, ysplit = data[split]
            f = np.asarray(mlp(fparams, jnp.asarray(xs_)))
            mu = f[:, 0]
            if kind == "homoscedastic":
                s = np.full_like(mu, extra["s"])
                u = _gauss_cdf(ysplit, mu, s)
            elif kind == "hetero":
                s = np.asarray(jax.nn.softplus(f[:, 1])) + 1e-4
                u = _gauss_cdf(ysplit, mu, s)
            elif kind == "student":
                s, nu = float(np.exp(extra["log_s"])), float(np.exp(extra["log_nu"]))
                u = stats.t.cdf((ysplit - mu) / s, nu)
            elif kind == "hetero_student":
                s, nu = np.asarray(jax.nn.softplus(f[:, 1])) + 1e-4, float(np.exp(extra["log_nu"]))
                u = stats.t.cdf((ysplit - mu) / s, nu)
            m = point_metrics(mu * ys + ym, frames[split][1])
            m.update(coverage_from_cdf(u))
            out[split] = m
        return out

    # homoscedastic: the maximum-likelihood std on train residuals
    mu_tr = np.asarray(mlp(sp[0], jnp.asarray(x)))[:, 0]
    s_hat = float(np.sqrt(np.mean((y - mu_tr) ** 2)))
    res["homoscedastic"] = evaluate("homoscedastic", sp[0], {"s": s_hat}) | {"std_log10": s_hat * ys}
    print("homoscedastic", res["homoscedastic"]["val"], flush=True)
    save(key, res)

    # Student-t with global scale and dof, started from the MSE fit
    if not quick:
        sp_t, _, secs = fit_map(x, y, hidden, steps // 2, lr=1e-3, loss_kind="student", init=sp[0])
        ex = {k: float(v) for k, v in sp_t[1].items()}
        res["student_t"] = evaluate("student", sp_t[0], ex) | {"nu": float(np.exp(ex["log_nu"])), "seconds": secs}
        res["student_t"]["scale_log10"] = float(np.exp(ex["log_s"])) * ys
        print("student_t", res["student_t"]["val"], res["student_t"]["nu"], flush=True)
        save(key, res)

    # heteroscedastic Gaussian and Student-t heads: second output started near the homoscedastic std
    init = [(w, b) for w, b in sp[0]]
    w_last, b_last = init[-1]
    raw0 = float(np.log(np.expm1(s_hat)))
    init[-1] = (
        jnp.concatenate([w_last, jnp.zeros_like(w_last)], axis=1),
        jnp.concatenate([b_last, jnp.asarray([raw0])]),
    )
    kinds = (("heteroscedastic", "hetero"), ("hetero_student_t", "hetero_student"))
    for kind, loss_kind in kinds[1:] if quick else kinds:
        sp_h, _, secs = fit_map(x, y, hidden, steps // 2, lr=1e-3, loss_kind=loss_kind, out_dim=2, init=init)
        ex = {k: float(v) for k, v in sp_h[1].items()}
        ev_kind = "hetero" if loss_kind == "hetero" else "hetero_student"
        res[kind] = evaluate(ev_kind, sp_h[0], ex) | {"seconds": secs}
        if loss_kind == "hetero_student":
            res[kind]["nu"] = float(np.exp(ex["log_nu"]))
        print(kind, res[kind]["val"], flush=True)
        save(key, res)


def group_nuts(
    num_warmup: int, num_samples: int, num_chains: int, hidden: tuple[int, ...], depth: int, map_steps: int, tag: str
) -> None:
    from sigmabnn.workflows.nlo import train_process

    t = time.perf_counter()
    out = train_process(
        0,
        PROCESS,
        hidden=hidden,
        num_warmup=num_warmup,
        num_samples=num_samples,
        num_chains=num_chains,
        max_tree_depth=depth,
        map_steps=map_steps,
        progress=False,
    )
    wall = time.perf_counter() - t
    rec = {
        "architecture": out.config.architecture,
        "map_steps": map_steps,
        "sampler": {k: v for k, v in out.report.sampler.to_json().items() if k != "warnings"},
        "timings": out.report.timings.to_json(),
        "num_chains": num_chains,
        "num_warmup": num_warmup,
        "num_samples": num_samples,
        "max_tree_depth": depth,
    }
    rec.update(out.metrics)
    rec["wall_seconds_total"] = round(wall, 1)
    print(tag, json.dumps(rec, indent=1), flush=True)
    res = json.loads(RESULTS.read_text()).get("nuts", {}) if RESULTS.exists() else {}
    res[tag] = rec
    save("nuts", res)


def group_nuts_student(
    num_warmup: int,
    num_samples: int,
    num_chains: int,
    hidden: tuple[int, ...],
    depth: int,
    map_steps: int,
    tag: str,
    df_t: float = 3.0,
) -> None:
    """NUTS on the BNN with a heteroscedastic Student-t head (``df_t`` > 2), via ``fit_mcmc`` directly."""
    from sigmabnn.map import MAPConfig
    from sigmabnn.model.mlp import parse_architecture
    from sigmabnn.model.posterior import BNN, Data
    from sigmabnn.model.priors import GaussianPrior
    from sigmabnn.train import MCMCConfig, fit_mcmc

    frames = load_frames(amplitude_features.recommended_features(PROCESS))
    data, (ym, ys) = standardise(frames)
    x, y = data["train"]
    lik = HeteroscedasticStudentT(df=df_t)
    mlp_ = parse_architecture((x.shape[1], *hidden, 2), "tanh")
    bnn = BNN(mlp=mlp_, prior=GaussianPrior(1.0, 1.0), likelihood=lik)
    cfg = MCMCConfig(
        num_chains=num_chains,
        num_warmup=num_warmup,
        num_samples=num_samples,
        max_tree_depth=depth,
        learn_noise=False,
        map=MAPConfig(learning_rate=3e-3, num_steps=map_steps, patience=None),
    )
    t = time.perf_counter()
    draws, info = fit_mcmc(jax.random.key(0), bnn, Data(jnp.asarray(x), jnp.asarray(y)[:, None]), cfg, progress=False)
    fit_seconds = time.perf_counter() - t
    pos = np.asarray(draws.positions).reshape(-1, np.asarray(draws.positions).shape[-1])
    rec = {"architecture": mlp_.describe(), "likelihood": f"hetero_student_t(df={df_t})", "map_steps": map_steps}
    rec.update({"num_chains": num_chains, "num_warmup": num_warmup, "num_samples": num_samples})
    rec["max_tree_depth"] = depth
    rec["mean_integration_steps"] = float(np.mean(np.asarray(info.sample_info.num_integration_steps)))
    rec["divergences"] = int(np.sum(np.asarray(info.sample_info.is_divergent)))
    rec["acceptance"] = float(np.mean(np.asarray(info.sample_info.acceptance_rate)))
    for split in ("val", "test"):
        xs_ = jnp.asarray(data[split][0])
        f = np.stack([np.asarray(bnn.apply(bnn.unflatten(jnp.asarray(p)), xs_)) for p in pos])
        mu, s = lik.split(jnp.asarray(f))
        mu, s = np.asarray(mu)[..., 0], np.asarray(s)[..., 0]
        ylog = frames[split][1]
        m = point_metrics(mu.mean(0) * ys + ym, ylog)
        m.update(coverage_from_cdf(nlo.student_t_pit(mu * ys + ym, s * ys, df_t, ylog)))
        rec[split] = m
    rec.update(rec["test"])
    rec["fit_seconds"] = fit_seconds
    rec["z_std"] = None
    print(tag, json.dumps(rec, indent=1), flush=True)
    res = json.loads(RESULTS.read_text()).get("nuts", {}) if RESULTS.exists() else {}
    res[tag] = rec
    save("nuts", res)


def _row(label: str, m: dict, extra: str = "") -> str:
    return (
        f"| {label} | {m['r2_log']:.4f} | {m['r2_xsec']:.3f} | {m['rel_err_median_pct']:.2f} | "
        f"{m['rel_err_p90_pct']:.1f} | {m['rel_err_p99_pct']:.1f} | {extra} |"
    )


def group_table() -> None:
    """Print the Markdown tables of docs/nlo_research.md from the results file."""
    d = json.loads(RESULTS.read_text())
    head = "| case | R2 log | R2 xsec | median % | p90 % | p99 % | notes |\n|---|---|---|---|---|---|---|"
    print("### Features (MAP, 20-20 tanh, test split)\n")
    print(head)
    for name, r in d.get("features_map_20x20", {}).items():
        print(_row(f"{name} ({r['n_inputs']} inputs)", r["test"], f"{r['steps']} steps, {r['seconds']} s"))
    print("\n### Architecture, schedule, target (MAP, recommended features, test split)\n")
    print(head)
    for name, r in d.get("arch_map", {}).items():
        print(_row(name, r["test"], r["target"]))
    for key in [k for k in d if k.startswith("noise_models")]:
        print(f"\n### Noise models ({key}: MAP means; coverage on val, test in brackets)\n")
        print(
            "| model | val median % | cov 1s | cov 2s | cov 3s | test median % | notes |\n|---|---|---|---|---|---|---|"
        )
        for name, r in d[key].items():
            if not isinstance(r, dict) or "val" not in r:
                continue
            v, t = r["val"], r["test"]
            note = f"nu = {r['nu']:.2f}" if "nu" in r else ""
            cov = [f"{v[f'cov_{k}sigma_pct']:.1f} ({t[f'cov_{k}sigma_pct']:.1f})" for k in (1, 2, 3)]
            print(
                f"| {name} | {v['rel_err_median_pct']:.2f} | {' | '.join(cov)} | {t['rel_err_median_pct']:.2f} | "
                f"{note} |"
            )
    print("\n### NUTS (library fit_mcmc, test split)\n")
    print(
        "| run | R2 log | R2 xsec | median % | p90 % | p99 % | cov 1s/2s/3s | z std | fit s |\n"
        "|---|---|---|---|---|---|---|---|---|"
    )
    for name, r in d.get("nuts", {}).items():
        print(
            f"| {name} ({r['architecture']}, {r['num_chains']}x{r['num_samples']} draws, depth {r['max_tree_depth']}) "
            f"| {r['r2_log']:.4f} | {r['r2_xsec']:.3f} | {r['rel_err_median_pct']:.2f} | {r['rel_err_p90_pct']:.1f} | "
            f"{r['rel_err_p99_pct']:.1f} | {r['cov_1sigma_pct']:.1f}/{r['cov_2sigma_pct']:.1f}/"
            f"{r['cov_3sigma_pct']:.1f} | {'-' if r['z_std'] is None else format(r['z_std'], '.2f')} | "
            f"{r['fit_seconds']:.0f} |"
        )
    res = d.get("resonance")
    if res:
        st = res["settings"]
        print(
            f"\n### The Z resonance above threshold (MAP, {st['hidden'][0]}-{st['hidden'][1]} tanh, "
            f"{st['steps']} steps, test split; median [min, max] over seeds)\n"
        )
        print(
            "| case | seeds | R2 log | R2 xsec | median % | p99 % | largest test point, predicted pb (true) |\n"
            "|---|---|---|---|---|---|---|"
        )

        def spread(runs, key, spec):
            v = [r[key] for r in runs]
            return f"{format(float(np.median(v)), spec)} [{format(min(v), spec)}, {format(max(v), spec)}]"

        for name in ("recommended", "+lpint", "residual_lpint"):
            runs = res[name]
            print(
                f"| {name} | {len(runs)} | {spread(runs, 'r2_log', '.4f')} | {spread(runs, 'r2_xsec', '.3f')} | "
                f"{spread(runs, 'rel_err_median_pct', '.2f')} | {spread(runs, 'rel_err_p99_pct', '.1f')} | "
                f"{spread(runs, 'top_point_pred_pb', '.1f')} ({runs[0]['top_point_true_pb']:.1f}) |"
            )
        ols = res["ols_lpint_alone"]
        print(f"\nThe OLS line c0 + c1 lpint alone (train fit): test R2 log {ols['r2_log']:.4f}.")


# ----------------------------------------------------------------------------- the Z resonance above threshold


def threshold_integrals(m: np.ndarray, lum_power: float = 2.0, nodes: int = 240) -> tuple[np.ndarray, ...]:
    """``(I_ZZ, I_Zs, I_ss)`` ``[n]``: parton-luminosity-weighted integrals over s-hat above ``4 m^2``.

    ``I_k = int_{4m^2} ds s^(-p) beta^3 s g_k(s)`` with ``beta^2 = 1 - 4 m^2 / s``, a luminosity
    ``s^(-p)`` (``p = lum_power``, a power-law stand-in for the qqbar luminosity) and
    ``g = 1 / D``, ``(s - m_Z^2) / D``, ``1`` for the Z-Z, Z-squark and squark-squark terms of
    ``|A_q(s)|^2`` (``D = (s - m_Z^2)^2 + m_Z^2 Gamma_Z^2``; ``beta^3``: a P-wave pair of identical
    Majorana fermions). Trapezoid rule in ``log(s - 4 m^2)`` from 1e-3 to 1e8 GeV^2, so the Z peak
    just above threshold (width ``m_Z Gamma_Z`` = 228 GeV^2) is resolved for every mass.
    """
    u = np.logspace(-3.0, 8.0, nodes)[None, :]
    sh = 4.0 * np.square(m)[:, None] + u
    w = sh ** (1.0 - lum_power) * (u / sh) ** 1.5 * u  # ds = u dlog(u)
    d = np.square(sh - couplings.MZ**2) + (couplings.MZ * couplings.GAMMA_Z) ** 2
    dl = np.diff(np.log(u), axis=1)

    def trap(f):
        return np.sum(0.5 * (f[:, 1:] + f[:, :-1]) * dl, axis=1)

    return trap(w / d), trap(w * (sh - couplings.MZ**2) / d), trap(w)


def integrated_proxy(part, lum_power: float = 2.0) -> np.ndarray:
    """``log sum_q w_q int |A_q(s)|^2`` per row of ``part`` (chi1 chi1): the proxy of
    ``amplitude_features.proxy_features``
    with the Z propagator integrated over s-hat above threshold instead of taken at one ``s_eff``."""
    pdg = 1000022
    coupling_specs = [f"zs=N{pdg}_3**2-N{pdg}_4**2"] + [
        f"f_{q}={couplings.squark_coupling(pdg, q)}" for q in couplings.CHIRALITIES
    ]
    c = add_derived(part, coupling_specs)  # the couplings as the library's features define them
    zs = c["zs"].to_numpy()
    i_zz, i_zs, i_ss = threshold_integrals(np.abs(part[f"m_{pdg}"].to_numpy()), lum_power)
    total = np.zeros_like(zs)
    for q, (cz, msq, weight) in couplings.CHIRALITIES.items():
        a = cz / (2.0 * couplings.COS2_THETA_W) * zs * part[msq].to_numpy() ** 2
        b = 2.0 * (1.0 if q.endswith("L") else -1.0) * np.square(c[f"f_{q}"].to_numpy())
        total += weight * (a * a * i_zz + 2.0 * a * b * i_zs + b * b * i_ss)
    return np.log(np.maximum(total, 1e-300))


def group_resonance(steps: int, seeds: int = 3) -> None:
    """The recommended features, plus the integrated proxy as a feature, or as a linear baseline of the target.

    Cases (20-20 tanh MAP, ``fit_map``): ``recommended``; ``+lpint`` (the integrated proxy as one more
    input); ``residual_lpint`` (target ``log10 sigma - (c0 + c1 lpint)``, the OLS line fitted on the
    training split, added back to the prediction). Seeds 0..seeds-1; the largest test cross section
    (58 pb at |m| = 45.6 GeV, 0.06 GeV above the Z threshold) is reported per run.
    """
    frames = load_frames(amplitude_features.recommended_features(PROCESS))
    df = load_ewino()
    df = df[df[TARGET].notna() & (df[TARGET] > 0)].reset_index(drop=True)
    lp = {k: integrated_proxy(df[df["split"] == k]) for k in frames}
    coef, *_ = np.linalg.lstsq(np.column_stack([np.ones_like(lp["train"]), lp["train"]]), frames["train"][1])
    base = {k: coef[0] + coef[1] * v for k, v in lp.items()}
    cases = {
        "recommended": ({k: v for k, v in frames.items()}, None),
        "+lpint": ({k: (np.column_stack([x, lp[k]]), y, n + ["lpint"]) for k, (x, y, n) in frames.items()}, None),
        "residual_lpint": (
            {k: (np.column_stack([x, lp[k]]), y - base[k], n + ["lpint"]) for k, (x, y, n) in frames.items()},
            base,
        ),
    }
    res = {
        "settings": {"hidden": [20, 20], "steps": steps, "lr": 3e-3, "lum_power": 2.0, "ols_c0_c1": coef.tolist()},
        "ols_lpint_alone": point_metrics(base["test"], frames["test"][1]),
    }
    for name, (fr, offset) in cases.items():
        runs = []
        for seed in range(seeds):
            data, (ym, ys) = standardise(fr)
            sp, _, secs = fit_map(*data["train"], (20, 20), steps, lr=3e-3, seed=seed)
            pred = np.asarray(mlp(sp[0], jnp.asarray(data["test"][0])))[:, 0] * ys + ym
            if offset is not None:
                pred = pred + offset["test"]
            y = frames["test"][1]
            j = int(np.argmax(y))
            m = point_metrics(pred, y) | {"seed": seed, "seconds": round(secs, 1)}
            m |= {"top_point_true_pb": float(10 ** y[j]), "top_point_pred_pb": float(10 ** pred[j])}
            runs.append(m)
            print(
                f"{name:15s} seed {seed}: r2log {m['r2_log']:.5f} r2x {m['r2_xsec']:.4f} "
                f"med {m['rel_err_median_pct']:.2f}% "
                f"top point {m['top_point_pred_pb']:.1f} / {m['top_point_true_pb']:.1f} pb",
                flush=True,
            )
        res[name] = runs
    save("resonance", res)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", action="append", required=True)
    ap.add_argument("--steps", type=int, default=20000)
    ap.add_argument("--hidden", default="50-50")
    ap.add_argument("--warmup", type=int, default=300)
    ap.add_argument("--samples", type=int, default=100)
    ap.add_argument("--chains", type=int, default=2)
    ap.add_argument("--map-steps", type=int, default=4000)
    ap.add_argument("--quick", action="store_true", help="noise group: homoscedastic and hetero Student-t only")
    ap.add_argument("--only", action="append", default=None, help="feature sets to run (features group)")
    ap.add_argument("--depth", type=int, default=8)
    ap.add_argument("--tag", default="default")
    ap.add_argument("--df", type=float, default=3.0, help="nuts_student: degrees of freedom (> 2)")
    a = ap.parse_args(argv)
    hidden = tuple(int(h) for h in a.hidden.split("-"))
    for g in a.group:
        if g == "proxy":
            group_proxy()
        elif g == "features":
            group_features(a.steps, a.only)
        elif g == "arch":
            group_arch(a.steps)
        elif g == "noise":
            group_noise(a.steps, hidden, a.quick)
        elif g == "nuts_student":
            group_nuts_student(a.warmup, a.samples, a.chains, hidden, a.depth, a.map_steps, a.tag, a.df)
        elif g == "table":
            group_table()
        elif g == "resonance":
            group_resonance(a.map_steps)
        elif g == "nuts":
            group_nuts(a.warmup, a.samples, a.chains, hidden, a.depth, a.map_steps, a.tag)
        else:
            raise SystemExit(f"unknown group {g!r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
