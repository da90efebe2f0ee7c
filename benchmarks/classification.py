"""Classification on the built-in handwritten digits: test error against training progress, and BALD active learning.

Data: :func:`sigmabnn.datasets.load_digits` (1,797 real 8x8 digits; the fixed split stratified by
class: 1,078 train, 359 val, 360 test rows). Every choice is made on the ``val`` rows; the
``test`` rows are scored for the chosen configurations only.

(a) ``progress``: categorical BNNs ``64-50-10`` tanh through :func:`sigmabnn.api.fit`
(``likelihood="categorical"``), scored on the test rows by
:func:`sigmabnn.evaluate.classification.evaluate_classifier` (error, NLL, ECE over 15 equal-width
bins; with the logit temperature fitted on the val rows, and raw, ``T = 1``):

- ``map`` (a plain MAP network: an ensemble of one), ``bbb`` (Gaussian prior), ``bbb_mixture``
  (Blundell et al.'s scale-mixture prior) and ``flipout``: Adam on minibatches of 128 rows, trained
  for each budget of :data:`EPOCHS` epochs from the start (VI from a Glorot start, no MAP
  pretraining, 100 draws from q). The learning rate is chosen per method from
  :data:`LEARNING_RATES` by the raw val NLL at the largest budget; the curve is that of the chosen rate.
- ``ensemble``: five MAP networks at the largest budget (the chosen ``map`` rate).
- ``nuts``: one NUTS run (MAP starts, 2 chains, tree depth 7), the error after the first ``k``
  draws of each chain.

(b) ``active``: Gal, Islam & Ghahramani (2017)'s protocol scaled to the digits: the pool is the
1,078 train rows; start with 20 labels (2 per class, seeded), then each round acquire the
:data:`ACQUIRE` pool rows of highest score until :data:`MAX_LABELS` labels, retraining from scratch
every round, for the criteria BALD, max entropy, variation ratios and random
(:mod:`sigmabnn.acquisition.classification`) and :data:`SEEDS`. The model: a deep ensemble of
:data:`AL_MEMBERS` MAP networks :data:`AL_ARCH` (``64-20-10``, smaller than (a)'s so that the 12 runs of
29 rounds fit the time of one shared core; the BNN's unit Gaussian prior as the penalty), full
batch Adam, :data:`AL_STEPS` steps at the learning rate chosen for ``map`` in (a); the labelled
rows are padded to :data:`MAX_LABELS` and masked so that one compiled function serves every round.
Records: ``criterion``, ``seed``, ``n_labels``, ``test_error`` (and ``test_nll``).

Resumable: every finished unit is appended to ``results/classification_state.json`` and skipped
on a rerun. ``--smoke`` runs a tiny version into a temporary directory (what the test runs).
Run it on core 1 only: ``taskset -c 1 python benchmarks/classification.py``.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
import time
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import RESULTS_DIR, finish_metadata, markdown_table, run_metadata, write, write_json  # noqa: E402
from sigmabnn.acquisition import classification_scores, select_batch  # noqa: E402
from sigmabnn.api import fit  # noqa: E402
from sigmabnn.datasets import load_digits  # noqa: E402
from sigmabnn.draws import PosteriorDraws  # noqa: E402
from sigmabnn.evaluate.classification import ece, evaluate_classifier, nll  # noqa: E402
from sigmabnn.model.build import build_bnn  # noqa: E402
from sigmabnn.model.likelihoods import Categorical  # noqa: E402
from sigmabnn.model.mlp import flatten, init_params  # noqa: E402

ARCH = "64-50-10"
BATCH = 128
EPOCHS = (1, 3, 10, 40)
LEARNING_RATES = (1e-2, 3e-3)
VI_METHODS = {"bbb": {}, "bbb_mixture": {"prior": "scale_mixture"}, "flipout": {}}
NUTS = {"num_chains": 2, "num_warmup": 200, "num_samples": 100, "max_tree_depth": 7}
NUTS_DRAWS = (1, 2, 5, 10, 20, 50, 100)
CRITERIA = ("bald", "max_entropy", "variation_ratios", "random")
SEEDS = tuple(range(10))
START_PER_CLASS, ACQUIRE, MAX_LABELS = 2, 10, 300
AL_ARCH, AL_MEMBERS, AL_STEPS = "64-20-10", 4, 200
TARGET_ERROR = 0.10

SMOKE = {
    "EPOCHS": (1, 2),
    "LEARNING_RATES": (1e-2,),
    "VI_METHODS": {"bbb": {}},
    "NUTS": {"num_chains": 2, "num_warmup": 10, "num_samples": 4, "max_tree_depth": 3},
    "NUTS_DRAWS": (1, 4),
    "CRITERIA": ("bald", "random"),
    "SEEDS": (0,),
    "MAX_LABELS": 40,
    "AL_MEMBERS": 2,
    "AL_STEPS": 20,
}


def _features(table) -> list[str]:
    return [c for c in table.columns if c.startswith("pixel_")]


def _steps(epochs: int, n_train: int) -> int:
    return int(epochs) * max(1, n_train // BATCH)


def _options(method: str, epochs: int, lr: float, n_train: int) -> tuple[str, dict[str, Any]]:
    if method in ("map", "ensemble"):
        members = 1 if method == "map" else 5
        return "ensemble", {"num_members": members, "num_epochs": int(epochs), "batch_size": BATCH,
                            "patience": None, "learning_rate": lr}  # fmt: skip
    if method in VI_METHODS:
        base = "flipout" if method == "flipout" else "bbb"
        return base, {"num_steps": _steps(epochs, n_train), "batch_size": BATCH, "map": None, "num_draws": 100,
                      "learning_rate": lr, **VI_METHODS[method]}  # fmt: skip
    raise ValueError(method)


def _scores(fitted, table) -> dict[str, Any]:
    """Raw val NLL (for choices), and the test error / NLL / ECE with the fitted temperature and raw."""
    feats = _features(table)
    val, test = table[table.split == "val"], table[table.split == "test"]
    v = evaluate_classifier(fitted, val[feats], val["digit"], calibrated=False)
    t = evaluate_classifier(fitted, test[feats], test["digit"])
    r = evaluate_classifier(fitted, test[feats], test["digit"], calibrated=False)
    return {"val_nll_raw": v["nll"], "val_error_raw": v["error"], "test_error": t["error"], "test_nll": t["nll"],
            "test_ece": t["ece"], "test_brier": t["brier"], "test_error_raw": r["error"], "test_nll_raw": r["nll"],
            "test_ece_raw": r["ece"], "temperature": t["temperature"]}  # fmt: skip


def _fit(table, method: str, options: dict[str, Any], seed: int = 0):
    t0 = time.perf_counter()
    fitted, _ = fit(table, "digit", _features(table), method=method, likelihood="categorical", split_column="split",
                    architecture=ARCH, seed=seed, progress=False, **options)  # fmt: skip
    return fitted, time.perf_counter() - t0


class State:
    """Finished units by key, kept in a JSON file rewritten (atomically) after each one."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data = json.loads(path.read_text()) if path.exists() else {}

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def put(self, key: str, value: Any) -> Any:
        self.data[key] = value
        write_json(self.path, self.data)
        return value


def progress_part(table, state: State) -> list[dict[str, Any]]:
    n_train = int((table.split == "train").sum())
    records = []
    for method in ("map", *VI_METHODS):
        chosen = None
        for lr in LEARNING_RATES:  # the rate: raw val NLL at the largest budget
            key = f"progress/{method}/lr={lr}/epochs={EPOCHS[-1]}"
            rec = state.get(key)
            if rec is None:
                name, opts = _options(method, EPOCHS[-1], lr, n_train)
                fitted, seconds = _fit(table, name, opts)
                rec = state.put(key, {"method": method, "epochs": EPOCHS[-1], "learning_rate": lr,
                                      "seconds": seconds, **_scores(fitted, table)})  # fmt: skip
            if chosen is None or rec["val_nll_raw"] < chosen["val_nll_raw"]:
                chosen = rec
        lr = chosen["learning_rate"]
        for epochs in EPOCHS:
            key = f"progress/{method}/lr={lr}/epochs={epochs}"
            rec = state.get(key)
            if rec is None:
                name, opts = _options(method, epochs, lr, n_train)
                fitted, seconds = _fit(table, name, opts)
                rec = state.put(key, {"method": method, "epochs": epochs, "learning_rate": lr, "seconds": seconds,
                                      **_scores(fitted, table)})  # fmt: skip
            records.append({**rec, "chosen_learning_rate": True})
    map_lr = next(r["learning_rate"] for r in records if r["method"] == "map")
    key = f"progress/ensemble/lr={map_lr}/epochs={EPOCHS[-1]}"
    rec = state.get(key)
    if rec is None:
        name, opts = _options("ensemble", EPOCHS[-1], map_lr, n_train)
        fitted, seconds = _fit(table, name, opts)
        rec = state.put(key, {"method": "ensemble", "epochs": EPOCHS[-1], "learning_rate": map_lr,
                              "seconds": seconds, **_scores(fitted, table)})  # fmt: skip
    records.append(rec)
    return records + nuts_part(table, state)


def _first_draws(fitted, k: int):
    d = fitted.draws
    sliced = PosteriorDraws(np.asarray(d.positions)[:, :k], jax.tree.map(lambda a: np.asarray(a)[:, :k], d.hyper))
    return dataclasses.replace(fitted, draws=sliced)


def nuts_part(table, state: State) -> list[dict[str, Any]]:
    key = f"progress/nuts/{json.dumps(NUTS, sort_keys=True)}"
    done = state.get(key)
    if done is None:
        fitted, seconds = _fit(table, "nuts", dict(NUTS))
        feats = _features(table)
        test = table[table.split == "test"]
        curve = []
        for k in NUTS_DRAWS:
            m = _first_draws(fitted, k)
            r = evaluate_classifier(m, test[feats], test["digit"], calibrated=False)
            curve.append({"method": "nuts", "draws_per_chain": k, "test_error_raw": r["error"],
                          "test_nll_raw": r["nll"], "test_ece_raw": r["ece"]})  # fmt: skip
        final = {"method": "nuts", "draws_per_chain": NUTS["num_samples"], "seconds": seconds,
                 "settings": NUTS, **_scores(fitted, table)}  # fmt: skip
        done = state.put(key, {"curve": curve, "final": final})
    return done["curve"] + [done["final"]]


# ----------------------------------------------------------------------------------------- active learning


@functools.lru_cache(maxsize=4)
def _al_functions(bnn, n_members: int, n_steps: int, lr: float):
    """Jitted ``train(key, x [L, p], y [L], mask [L]) -> positions [M, d]`` and ``probs(positions, x) -> [M, n, K]``."""
    hyper = bnn.default_hyperparameters()
    opt = optax.adam(lr)

    def loss(position, x, y, mask):
        logp = jax.nn.log_softmax(bnn.apply(bnn.unflatten(position), x), axis=-1)
        ll = jnp.sum(mask * jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0])
        return -(ll + bnn.log_prior(position, hyper))

    def train_one(key, x, y, mask):
        position = flatten(init_params(key, bnn.mlp, bnn.jdtype))

        def step(carry, _):
            pos, st = carry
            g = jax.grad(loss)(pos, x, y, mask)
            updates, st = opt.update(g, st)
            return (optax.apply_updates(pos, updates), st), None

        (position, _), _ = jax.lax.scan(step, (position, opt.init(position)), None, length=n_steps)
        return position

    @jax.jit
    def train(key, x, y, mask):
        return jax.vmap(train_one, in_axes=(0, None, None, None))(jax.random.split(key, n_members), x, y, mask)

    @jax.jit
    def probs(positions, x):
        return jax.vmap(lambda p: jax.nn.softmax(bnn.apply(bnn.unflatten(p), x), axis=-1))(positions)

    return train, probs


def _initial_labels(y: np.ndarray, seed: int) -> list[int]:
    rng = np.random.default_rng(1000 + seed)
    return [int(i) for k in np.unique(y) for i in rng.choice(np.flatnonzero(y == k), START_PER_CLASS, replace=False)]


def active_run(table, criterion: str, seed: int, lr: float) -> list[dict[str, Any]]:
    feats = _features(table)
    pool, test = table[table.split == "train"], table[table.split == "test"]
    mean, std = pool[feats].to_numpy(float).mean(0), pool[feats].to_numpy(float).std(0)
    std = np.where(std < 1e-12, 1.0, std)  # unlabelled pool inputs are known: standardise on them
    xp, xt = (pool[feats].to_numpy(float) - mean) / std, (test[feats].to_numpy(float) - mean) / std
    yp, yt = pool["digit"].to_numpy(), test["digit"].to_numpy()
    bnn = build_bnn(Categorical(10), AL_ARCH, feats, "tanh", "float64")
    train, probs = _al_functions(bnn, AL_MEMBERS, AL_STEPS, lr)
    labelled = _initial_labels(yp, seed)
    key = jax.random.fold_in(jax.random.key(seed), CRITERIA.index(criterion) if criterion in CRITERIA else 99)
    records = []
    while True:
        n = len(labelled)
        x = np.zeros((MAX_LABELS, xp.shape[1]))
        y = np.zeros(MAX_LABELS, np.int32)
        mask = np.zeros(MAX_LABELS)
        x[:n], y[:n], mask[:n] = xp[labelled], yp[labelled], 1.0
        positions = train(jax.random.fold_in(key, n), x, y, mask)
        pt = np.asarray(probs(positions, xt)).mean(axis=0)
        records.append({"criterion": criterion, "seed": seed, "n_labels": n,
                        "test_error": float(np.mean(np.argmax(pt, 1) != yt)), "test_nll": nll(pt, yt),
                        "test_ece": ece(pt, yt)})  # fmt: skip
        if n + ACQUIRE > MAX_LABELS:
            return records
        rest = np.setdiff1d(np.arange(yp.size), labelled)
        p = np.asarray(probs(positions, xp))[:, rest]  # the whole pool: one shape, one compilation
        scores = classification_scores(jax.random.fold_in(key, 10_000 + n), criterion, p)
        labelled += [int(rest[i]) for i in np.asarray(select_batch(scores, ACQUIRE))]


def active_part(table, state: State, lr: float) -> list[dict[str, Any]]:
    records = []
    for seed in SEEDS:
        for criterion in CRITERIA:
            setting = f"lr={lr}/{AL_ARCH}/members={AL_MEMBERS}/steps={AL_STEPS}/max={MAX_LABELS}"
            key = f"active/{criterion}/seed={seed}/{setting}"
            done = state.get(key)
            if done is None:
                t0 = time.perf_counter()
                done = state.put(key, active_run(table, criterion, seed, lr))
                print(f"active {criterion} seed {seed}: {time.perf_counter() - t0:.0f} s", flush=True)
            records += done
    return records


def labels_to_reach(records: list[dict[str, Any]], criterion: str, target: float = TARGET_ERROR) -> int | None:
    """The fewest labels at which the criterion's error, averaged over seeds, is at or below ``target``."""
    by_n: dict[int, list[float]] = {}
    for r in records:
        if r["criterion"] == criterion:
            by_n.setdefault(r["n_labels"], []).append(r["test_error"])
    for n in sorted(by_n):
        if np.mean(by_n[n]) <= target:
            return n
    return None


# ------------------------------------------------------------------------------------------------ output


def _figures(out_dir: Path, progress: list[dict], active: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for method in ("map", *VI_METHODS):
        rs = [r for r in progress if r["method"] == method and "epochs" in r and r.get("chosen_learning_rate")]
        axes[0].plot([r["epochs"] for r in rs], [r["test_error"] for r in rs], "o-", label=method)
    axes[0].set(xscale="log", xlabel="epochs", ylabel="test error", title="digits: error against epochs")
    axes[0].legend(fontsize=8)
    nuts = [r for r in progress if r["method"] == "nuts" and "test_error_raw" in r and "seconds" not in r]
    axes[1].plot([r["draws_per_chain"] for r in nuts], [r["test_error_raw"] for r in nuts], "o-", color="k")
    axes[1].set(xscale="log", xlabel="NUTS draws per chain", ylabel="test error", title="digits: error against draws")
    fig.savefig(out_dir / "classification_progress.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5.5, 3.8), layout="constrained")
    for criterion in CRITERIA:
        ns = sorted({r["n_labels"] for r in active if r["criterion"] == criterion})
        errs = [[r["test_error"] for r in active if r["criterion"] == criterion and r["n_labels"] == n] for n in ns]
        ax.plot(ns, [np.mean(e) for e in errs], label=criterion)
    ax.axhline(TARGET_ERROR, color="gray", ls=":", lw=1)
    ax.set(xlabel="labelled images", ylabel="test error (mean over seeds)", title="active learning on digits")
    ax.legend(fontsize=8)
    fig.savefig(out_dir / "classification_active.png", dpi=110)
    plt.close(fig)


FINAL_KEYS = ("test_error", "test_nll", "test_ece", "test_error_raw", "test_nll_raw", "test_ece_raw", "temperature",
              "learning_rate")  # fmt: skip


def _summary(progress: list[dict], active: list[dict]) -> dict[str, Any]:
    finals = {}
    for r in progress:
        if ("epochs" in r and r["epochs"] == EPOCHS[-1] and "test_error" in r) or (
            "seconds" in r and r["method"] == "nuts"
        ):
            finals[r["method"]] = {k: r.get(k) for k in FINAL_KEYS}
    reach = {c: labels_to_reach(active, c) for c in CRITERIA}
    ratio = None if reach.get("bald") is None or reach.get("random") is None else reach["bald"] / reach["random"]
    bnns = {m: v for m, v in finals.items() if m != "map"}
    best = min(bnns, key=lambda m: bnns[m]["test_error"]) if bnns else None
    return {"final": finals, "best_bnn": best, "labels_to_reach_10pct": reach, "bald_over_random": ratio}


def _goals(summary: dict[str, Any]) -> str:
    """The issue's goals against the measurements, in words."""
    final, best = summary["final"], summary["best_bnn"]
    parts = []
    if best is not None and "map" in final:
        b, m = final[best], final["map"]
        parts.append(
            f"best BNN `{best}` error {b['test_error']:.4f} vs MAP {m['test_error']:.4f} "
            f"({'met' if b['test_error'] <= m['test_error'] else 'missed'}), NLL {b['test_nll']:.4f} vs "
            f"{m['test_nll']:.4f} ({'met' if b['test_nll'] < m['test_nll'] else 'missed'}), ECE {b['test_ece']:.4f} "
            f"({'met' if b['test_ece'] <= 0.03 else 'missed'}: <= 0.03)"
        )
    ratio = summary["bald_over_random"]
    if ratio is not None:
        parts.append(f"BALD needs {ratio:.2f} of random's labels for 10 % error ({'met' if ratio <= 0.6 else 'missed'}"
                     ": <= 0.60)")  # fmt: skip
    return "; ".join(parts) + "."


def _markdown(meta, summary, progress, active) -> str:
    finals = [{"method": m, **v} for m, v in summary["final"].items()]
    cols = [("method", "method", ""), ("learning_rate", "lr (val)", "g"), ("test_error", "test error", ".4f"),
            ("test_nll", "test NLL", ".4f"), ("test_ece", "test ECE", ".4f"), ("temperature", "T (val)", ".3g"),
            ("test_error_raw", "error T=1", ".4f"), ("test_nll_raw", "NLL T=1", ".4f"),
            ("test_ece_raw", "ECE T=1", ".4f")]  # fmt: skip
    curve = [r for r in progress if "epochs" in r and r.get("chosen_learning_rate")]
    reach = summary["labels_to_reach_10pct"]
    lines = [
        "# Classification on the built-in digits", "",
        "Written by `benchmarks/classification.py` (its docstring has the protocol). Choices (learning rates) "
        "were made on the val rows by raw NLL; the temperature was fitted on the val rows; the test rows were "
        "scored for the chosen configurations only. ECE: 15 equal-width confidence bins.", "",
        f"Last invocation: {meta.get('date')} to {meta.get('date_end')}, load average at start "
        f"{meta.get('load_average_1_5_15_at_start')}, at end {meta.get('load_average_1_5_15_at_end')} (a shared "
        "machine: the fit times include compilation and contention). The run is resumable: each record was "
        "computed once, possibly by an earlier invocation, and its `seconds` are its own.", "",
        "Goals: " + _goals(summary), "",
        "## (a) Final test scores per method", "", markdown_table(finals, cols), "",
        f"Best BNN (not `map`) by test error: `{summary['best_bnn']}`.", "",
        "## (a) Test error against epochs (chosen learning rate)", "",
        markdown_table(curve, [("method", "method", ""), ("epochs", "epochs", "d"), ("test_error", "test error", ".4f"),
                               ("test_nll", "test NLL", ".4f"), ("test_ece", "ECE", ".4f"),
                               ("seconds", "fit s", ".0f")]),  # fmt: skip
        "",
        "NUTS, test error (T = 1) after the first k draws of each chain:", "",
        markdown_table([r for r in progress if r["method"] == "nuts" and "seconds" not in r],
                       [("draws_per_chain", "k", "d"), ("test_error_raw", "test error", ".4f"),
                        ("test_nll_raw", "NLL", ".4f")]),  # fmt: skip
        "", "![progress](classification_progress.png)", "",
        "## (b) Active learning", "",
        f"Model: an ensemble of {AL_MEMBERS} MAP networks {AL_ARCH}, {AL_STEPS} full-batch Adam steps at the "
        f"learning rate chosen for `map` in (a) on the val rows; start {START_PER_CLASS} labels per class, "
        f"{ACQUIRE} acquired per round up to {MAX_LABELS}; {len(SEEDS)} seeds; pool: the train rows, error "
        "on the test rows.", "",
        "Labels needed for a mean (over seeds) test error <= 10 %: "
        + ", ".join(f"{c}: {reach[c] if reach[c] is not None else 'not reached'}" for c in CRITERIA)
        + (f"; BALD / random = {summary['bald_over_random']:.2f}." if summary["bald_over_random"] else "."),
        "", "![active](classification_active.png)", "",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="a tiny run into --out (default a temporary directory)")
    p.add_argument("--out", type=Path, default=None, help="results directory (default benchmarks/results)")
    p.add_argument("--parts", default="progress,active", help="which parts: progress, active")
    args = p.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    out = args.out or (Path("/tmp/sigmabnn-classification-smoke") if args.smoke else RESULTS_DIR)
    out.mkdir(parents=True, exist_ok=True)
    meta = run_metadata("benchmarks/classification.py" + (" --smoke" if args.smoke else ""))
    state = State(out / "classification_state.json")
    table = load_digits()
    parts = args.parts.split(",")
    progress = progress_part(table, state) if "progress" in parts else []
    lr = next((r["learning_rate"] for r in progress if r["method"] == "map"), LEARNING_RATES[0])
    active = active_part(table, state, lr) if "active" in parts else []
    meta = finish_metadata(meta)
    summary = _summary(progress, active)
    _figures(out, progress, active)
    result = {"meta": meta, "summary": summary, "progress": progress, "active": active}
    write(out / "classification.json", result, _markdown(meta, summary, progress, active))
    return 0


if __name__ == "__main__":
    sys.exit(main())
