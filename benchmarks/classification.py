"""Classification on the built-in handwritten digits: test error against training progress, and BALD active learning.

Data: :func:`sigmabnn.datasets.load_digits` (1,797 real 8x8 digits; the fixed split stratified by
class: 1,078 train, 359 val, 360 test rows). Every choice is made on the ``val`` rows (rules below,
fixed before the runs); the ``test`` rows are scored once, for the chosen configurations.

(a) ``progress``: categorical BNNs ``64-50-10`` tanh through :func:`sigmabnn.api.fit`
(``likelihood="categorical"``; each network is early-stopped at its best val NLL, checked every
50 steps), scored on the test rows (error, NLL, Brier, ECE over 15 equal-width bins):

- ``map`` (a plain MAP network: an ensemble of one), ``bbb`` (Gaussian prior), ``bbb_mixture``
  (Blundell et al.'s scale-mixture prior) and ``flipout``: Adam on minibatches of 128 rows, trained
  for each budget of :data:`EPOCHS` epochs from the start (VI from a Glorot start, no MAP
  pretraining, 100 draws from q). Per method the learning rate and the training length are chosen
  from :data:`LEARNING_RATES` x :data:`BUDGETS` by the lowest raw (``T = 1``) val NLL; the curve
  is that of the chosen rate.
- ``ensemble``: :data:`ENSEMBLE_MEMBERS` x :data:`LEARNING_RATES` x :data:`BUDGETS` MAP networks,
  chosen by the same rule. Its first member is the ``map`` network of the same rate and budget (the
  same key): when both choose the same rate and budget, the two are paired.
- ``nuts``: NUTS (MAP starts, 2 chains, tree depth 7) with the prior's precision fixed at 1 and
  with the per-layer precisions Gibbs-sampled (``learn_prior``, the library's default for a classifier
  since ``classifier_prior.md``), :data:`NUTS_CANDIDATES`; the
  lower raw val NLL is chosen; the error after the first ``k`` draws of each chain of the chosen run.
- ``chees``: the library's default fit for a classifier, ``fit(..., likelihood="categorical")`` with no other
  option (:data:`CHEES`): ChEES-HMC, 8 chains from MAP starts, the per-layer precisions Gibbs-sampled, the
  default's warm-up, draws and trajectory cap for the rows (:func:`sigmabnn.train.default_config`). One
  configuration, no grid: what a user who gives no option gets.

Temperature: :func:`sigmabnn.api.fit` fits ``T`` on all val rows and keeps it when it lowers their
NLL; the final scores use the model as fitted (``test_*``, at that ``T``) and ``T = 1`` (``test_*_raw``).
The library's map (one temperature on the log of the posterior predictive, ``pooled``) was chosen over
dividing every network's logits by ``T``, over ``T = 1`` and over keeping ``T`` only when a 2- or 5-fold
cross-validation inside the val rows favours it, by the lowest mean NLL on fresh scoring rows over 120 fits
on 20 other splits of the train and val rows (``temperature_seeds.py``). Units fitted before the library
stored the pooled map (their state records carry no ``temperature_map``) are fitted again.
The best BNN is the non-``map`` method with the lowest raw val NLL at its chosen configuration.
Noise of the goal's test comparisons (:func:`noise`): the paired standard error of the per-row NLL
(and error) differences between the best BNN and the MAP network on the same test rows; the
bootstrap spread of the best BNN's test ECE over resampled test rows; and the ECE a perfectly
calibrated model with the same confidences would show on 360 rows (correctness drawn as
Bernoulli(confidence)), ECE's floor from finite rows alone.

(b) ``active``: Gal, Islam & Ghahramani (2017)'s protocol scaled to the digits: the pool is the
1,078 train rows; start with 20 labels (2 per class, seeded), then each round acquire
:data:`ACQUIRE` pool rows until :data:`MAX_LABELS` labels, retraining from scratch every round (or,
in a ``warm`` configuration, the criteria other than random from the previous round's members), for
the criteria BALD, max entropy, variation ratios and random
(:mod:`sigmabnn.acquisition.classification`). The model (:class:`ALConfig`): a deep ensemble of MAP
networks (``64-20-10`` tanh unless the configuration says otherwise; a Gaussian prior as the penalty),
full batch Adam at :data:`AL_LR`; the labelled rows are padded to :data:`MAX_LABELS` and masked so that one compiled
function serves every round. The acquired batch is the :data:`ACQUIRE` highest scores (``top``) or
a draw without replacement with probabilities proportional to the score (``power``, Kirsch et al.
2023, :func:`sigmabnn.acquisition.stochastic_batch`), which spreads a batch over several uncertain
regions instead of near-duplicates of one, or for BALD the BatchBALD batch (``batchbald``, Kirsch et
al. 2019, :func:`sigmabnn.acquisition.batchbald_batch`: greedy joint mutual information; the other
criteria then draw ``power`` batches). Random's batch is uniform under every rule.

The model's widths, members, steps and prior precision and the batch rule are chosen by a pilot on the val
rows (:data:`PILOT_SEEDS`, seeds not among the final ones; the val rows are never in the pool): for
each configuration of :data:`AL_GRID`, the labels BALD needs for a mean val error <= 10 % divided
by those random needs (the same model, retrained from scratch every round), lowest wins, ties to BALD's
lower mean val error over the curve. The chosen configuration then runs once for every criterion and
:data:`SEEDS`, scored on the test rows. Records: ``criterion``, ``seed``, ``n_labels``,
``test_error``, ``val_error`` (and NLLs).

Resumable: every finished unit is appended to ``results/classification_state.json`` and skipped
on a rerun. ``--smoke`` runs a tiny version into a temporary directory (what the test runs).
Run it on core 1 only: ``taskset -c 1 python benchmarks/classification.py``. The active-learning
units can be shared by workers, one per core, before that run writes the results:
``taskset -c I python benchmarks/classification.py --shard I/2`` for I = 0, 1 (each computes its
share of the pilot, then, rerun once the pilot is complete, its share of the final runs).
"""

from __future__ import annotations

import argparse
import dataclasses
import fcntl
import functools
import json
import sys
import time
import zlib
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _results import (  # noqa: E402
    RESULTS_DIR,
    SHARD_ERROR,
    finish_metadata,
    markdown_table,
    parse_shard,
    run_metadata,
    source_commit,
    write,
    write_json,
)
from sigmabnn.acquisition import batchbald_batch, classification_scores, select_batch, stochastic_batch  # noqa: E402
from sigmabnn.api import fit  # noqa: E402
from sigmabnn.datasets import load_digits  # noqa: E402
from sigmabnn.draws import PosteriorDraws  # noqa: E402
from sigmabnn.evaluate.classification import ECE_BINS, evaluate_classifier, nll  # noqa: E402
from sigmabnn.model.build import build_bnn  # noqa: E402
from sigmabnn.model.likelihoods import Categorical  # noqa: E402
from sigmabnn.model.mlp import flatten, init_params  # noqa: E402
from sigmabnn.predict.classes import class_probabilities, network_probabilities  # noqa: E402

ARCH = "64-50-10"
BATCH = 128
EPOCHS = (1, 3, 10, 40, 100, 250)
BUDGETS = (40, 100, 250)
LEARNING_RATES = (1e-2, 3e-3)
ENSEMBLE_MEMBERS = (5, 10)
VI_METHODS = {"bbb": {}, "bbb_mixture": {"prior": "scale_mixture"}, "flipout": {}}
NUTS = {"num_chains": 2, "num_warmup": 200, "num_samples": 100, "max_tree_depth": 7}
NUTS_CANDIDATES = ({"learn_prior": False}, {"learn_prior": True})  # added to NUTS
NUTS_DRAWS = (1, 2, 5, 10, 20, 50, 100)
CHEES: dict[str, Any] = {}  # the library's default fit: no options
CRITERIA = ("bald", "max_entropy", "variation_ratios", "random")
SEEDS = tuple(range(10))
PILOT_SEEDS = (100, 101, 102, 103, 104)
START_PER_CLASS, ACQUIRE, MAX_LABELS = 2, 10, 300
AL_ARCH, AL_LR = "64-20-10", 1e-2


class ALConfig(NamedTuple):
    """The active-learning model: ensemble members, full-batch Adam steps, batch rule (``top``, ``power`` or
    ``batchbald``), prior precision of every weight and bias (1 is the BNN's unit Gaussian prior, 0.3 a prior
    1.8x wider), the network's widths, its hidden layers' activation, and whether each round's members
    start from the previous round's (``warm``; the first round, and every round when false, from fresh
    initialisations)."""

    members: int
    steps: int
    rule: str
    precision: float
    arch: str = AL_ARCH
    activation: str = "tanh"
    warm: bool = False


#: Pilot configurations of the active learning model.
AL_GRID = tuple(ALConfig(m, s, a, 1.0) for m in (4, 16) for s in (200, 1000) for a in ("top", "power")) + (
    ALConfig(4, 1000, "power", 0.3),
    ALConfig(8, 1000, "power", 1.0),
    ALConfig(8, 1000, "power", 0.3),
    ALConfig(8, 1000, "power", 0.1),
    ALConfig(8, 1000, "power", 0.03),
    ALConfig(16, 1000, "power", 0.1),
    # wider hidden layers, and ReLU, at the best prior above
    ALConfig(8, 1000, "power", 0.03, "64-50-10"),
    ALConfig(8, 1000, "power", 0.03, "64-100-10"),
    ALConfig(8, 1000, "power", 0.03, "64-200-10"),
    ALConfig(8, 1000, "power", 0.03, "64-50-10", "relu"),
    ALConfig(8, 1000, "power", 0.03, "64-100-10", "relu"),
    ALConfig(16, 1000, "power", 0.03, "64-50-10", "relu"),
    # BatchBALD batches for BALD, at the configuration the grid above chose
    ALConfig(8, 1000, "batchbald", 0.03, "64-50-10"),
    # warm refits (each round's members from the previous round's), at the configuration the grid above chose
    ALConfig(8, 1000, "power", 0.03, "64-50-10", warm=True),
)
TARGET_ERROR = 0.10
BOOTSTRAP = 2000

SMOKE = {
    "EPOCHS": (1, 2),
    "BUDGETS": (2,),
    "LEARNING_RATES": (1e-2,),
    "ENSEMBLE_MEMBERS": (2,),
    "VI_METHODS": {"bbb": {}},
    "NUTS": {"num_chains": 2, "num_warmup": 10, "num_samples": 4, "max_tree_depth": 3},
    "NUTS_DRAWS": (1, 4),
    "CHEES": {"num_chains": 2, "num_warmup": 10, "num_samples": 4, "max_tree_depth": 3},
    "CRITERIA": ("bald", "random"),
    "SEEDS": (0,),
    "PILOT_SEEDS": (100,),
    "MAX_LABELS": 40,
    "AL_GRID": (ALConfig(2, 20, "top", 1.0), ALConfig(2, 20, "power", 0.3)),
    "BOOTSTRAP": 50,
}


def _features(table) -> list[str]:
    return [c for c in table.columns if c.startswith("pixel_")]


def _steps(epochs: int, n_train: int) -> int:
    return int(epochs) * max(1, n_train // BATCH)


def _options(method: str, epochs: int, lr: float, n_train: int, members: int = 1) -> tuple[str, dict[str, Any]]:
    if method in ("map", "ensemble"):
        return "ensemble", {"num_members": int(members), "num_epochs": int(epochs), "batch_size": BATCH,
                            "patience": None, "learning_rate": lr}  # fmt: skip
    if method in VI_METHODS:
        base = "flipout" if method == "flipout" else "bbb"
        return base, {"num_steps": _steps(epochs, n_train), "batch_size": BATCH, "map": None, "num_draws": 100,
                      "learning_rate": lr, **VI_METHODS[method]}  # fmt: skip
    raise ValueError(method)


def _rows(fitted, x, y) -> dict[str, list[float]]:
    """Per test row: NLL of the true class, confidence (top probability), correct (0/1); for the noise estimates."""
    p, _ = class_probabilities(fitted, x, calibrated=True)
    codes = fitted.classes.encode(y)
    idx = np.arange(codes.size)
    return {"nll": np.round(-np.log(np.maximum(p[idx, codes], 1e-300)), 7).tolist(),
            "conf": np.round(p.max(axis=1), 7).tolist(),
            "correct": (p.argmax(axis=1) == codes).astype(int).tolist()}  # fmt: skip


def _scores(fitted, table, rows: bool = False, members: bool = False) -> dict[str, Any]:
    """Raw val NLL (for choices), the temperature's val CV, and the test scores with the chosen ``T`` and raw."""
    feats = _features(table)
    val, test = table[table.split == "val"], table[table.split == "test"]
    v = evaluate_classifier(fitted, val[feats], val["digit"], calibrated=False)
    kept = fitted.classes.temperature != 1.0  # api.fit's rule: T kept when it lowers the val rows' NLL
    t = evaluate_classifier(fitted, test[feats], test["digit"], calibrated=True)
    r = evaluate_classifier(fitted, test[feats], test["digit"], calibrated=False)
    out = {"val_nll_raw": v["nll"], "val_error_raw": v["error"], "val_ece_raw": v["ece"],
           "temperature_kept": bool(kept), "temperature": fitted.classes.temperature,
           "temperature_map": fitted.classes.temperature_map, "test_error": t["error"],
           "test_nll": t["nll"], "test_ece": t["ece"], "test_brier": t["brier"], "test_error_raw": r["error"],
           "test_nll_raw": r["nll"], "test_ece_raw": r["ece"]}  # fmt: skip
    if rows:
        out["rows"] = _rows(fitted, test[feats], test["digit"])
    if members:  # an ensemble: its single networks, raw
        for split, part in (("val", val), ("test", test)):
            p = network_probabilities(fitted, part[feats], calibrated=False)
            codes = fitted.classes.encode(part["digit"])
            out[f"member_{split}_nll_raw"] = [nll(pm, codes) for pm in p]
            if split == "val":
                out.update(_shared_mistakes(p, codes))
    return out


def _shared_mistakes(p: np.ndarray, codes: np.ndarray) -> dict[str, Any]:
    """The share of an ensemble's raw val NLL its misclassified rows carry; how many every member gets wrong."""
    mean = p.mean(axis=0)
    row_nll = -np.log(np.maximum(mean[np.arange(codes.size), codes], 1e-300))
    wrong = mean.argmax(axis=1) != codes
    all_wrong = np.all(p.argmax(axis=2) != codes[None], axis=0)
    share = float(row_nll[wrong].sum() / row_nll.sum())
    return {"val_wrong_rows": int(wrong.sum()), "val_nll_share_of_wrong_rows": share,
            "val_wrong_rows_wrong_in_every_member": int((wrong & all_wrong).sum())}  # fmt: skip


def _fit(table, method: str, options: dict[str, Any], seed: int = 0):
    t0 = time.perf_counter()
    fitted, _ = fit(table, "digit", _features(table), method=method, likelihood="categorical", split_column="split",
                    architecture=ARCH, seed=seed, progress=False, **options)  # fmt: skip
    return fitted, time.perf_counter() - t0


class State:
    """Finished units by key, kept in a JSON file rewritten (atomically) after each one.

    Several worker processes (``--shard i/n``) may share the file: each write merges the units the
    file holds at that moment under an exclusive lock, so no worker loses another's units. A worker
    computes only the active-learning units whose key hashes to its shard (:meth:`mine`).
    """

    def __init__(self, path: Path, shard: tuple[int, int] | None = None) -> None:
        self.path = path
        self.shard = shard
        self.reload()

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def reload(self) -> None:
        self.data = json.loads(self.path.read_text()) if self.path.exists() else {}

    def mine(self, key: str) -> bool:
        return self.shard is None or zlib.crc32(key.encode()) % self.shard[1] == self.shard[0]

    def put(self, key: str, value: Any) -> Any:
        """Keep ``value`` under ``key``; a record (a dict) gets the commit it was computed at (``commit``)."""
        value = {**value, "commit": source_commit()} if isinstance(value, dict) and "commit" not in value else value
        with open(self.path.with_name(self.path.name + ".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            on_disk = json.loads(self.path.read_text()) if self.path.exists() else {}
            self.data = {**on_disk, **self.data, key: value}
            write_json(self.path, self.data)
        return value


def _current(rec: dict[str, Any] | None) -> dict[str, Any] | None:
    """A fit's record, or ``None`` when it was scored before the library stored its temperature's map (then the
    fit is redone: its temperature was applied to every network's logits)."""
    return rec if rec is not None and "temperature_map" in rec else None


def _unit(table, state: State, method: str, lr: float, epochs: int, members: int = 1) -> dict[str, Any]:
    """One fit of ``method`` at a rate and budget (and members), scored; computed once and kept in the state."""
    key = f"progress/{method}/lr={lr}/epochs={epochs}" + (f"/members={members}" if method == "ensemble" else "")
    rec = _current(state.get(key))
    if rec is None:
        n_train = int((table.split == "train").sum())
        name, opts = _options(method, epochs, lr, n_train, members)
        fitted, seconds = _fit(table, name, opts)
        scores = _scores(fitted, table, rows=epochs in BUDGETS, members=members > 1)
        rec = state.put(key, {"method": method, "epochs": epochs, "learning_rate": lr, "members": members,
                              "seconds": seconds, **scores})  # fmt: skip
        print(f"{key}: val NLL {rec['val_nll_raw']:.4f} ({seconds:.0f} s)", flush=True)
    return rec


def progress_part(table, state: State) -> list[dict[str, Any]]:
    """Per method: the choice grid, the chosen configuration (``chosen``) and the curve at its rate (``curve``)."""
    records = []
    for method in ("map", *VI_METHODS, "ensemble"):
        sizes = ENSEMBLE_MEMBERS if method == "ensemble" else (1,)
        grid = [_unit(table, state, method, lr, e, m) for lr in LEARNING_RATES for e in BUDGETS for m in sizes]
        chosen = min(grid, key=lambda r: r["val_nll_raw"])  # the rule: lowest raw val NLL
        records += [{**r, "chosen": r is chosen, "curve": False} for r in grid]
        if method != "ensemble":
            lr = chosen["learning_rate"]
            records += [{**_unit(table, state, method, lr, e), "chosen": False, "curve": True} for e in EPOCHS]
    return records + nuts_part(table, state) + [chees_unit(table, state)]


def _first_draws(fitted, k: int):
    d = fitted.draws
    sliced = PosteriorDraws(np.asarray(d.positions)[:, :k], jax.tree.map(lambda a: np.asarray(a)[:, :k], d.hyper))
    return dataclasses.replace(fitted, draws=sliced)


def _nuts_unit(table, state: State, extra: dict[str, Any]) -> dict[str, Any]:
    """One NUTS run with ``NUTS | extra``: its curve over the first draws and its final scores (computed once)."""
    settings = {**NUTS, **extra}
    key = f"progress/nuts/{json.dumps(settings, sort_keys=True)}"
    done = state.get(key)
    if done is None or _current(done["final"]) is None:
        fitted, seconds = _fit(table, "nuts", dict(settings))
        feats = _features(table)
        test = table[table.split == "test"]
        curve = []
        for k in NUTS_DRAWS:
            m = _first_draws(fitted, k)
            r = evaluate_classifier(m, test[feats], test["digit"], calibrated=False)
            curve.append({"method": "nuts", "draws_per_chain": k, "test_error_raw": r["error"],
                          "test_nll_raw": r["nll"], "test_ece_raw": r["ece"]})  # fmt: skip
        final = {"method": "nuts", "draws_per_chain": settings["num_samples"], "seconds": seconds,
                 "settings": settings, **_scores(fitted, table, rows=True)}  # fmt: skip
        done = state.put(key, {"curve": curve, "final": final})
    return done


def nuts_part(table, state: State) -> list[dict[str, Any]]:
    """Every NUTS candidate's final record (``chosen``: the lowest raw val NLL) and the chosen one's curve."""
    runs = [_nuts_unit(table, state, extra) for extra in NUTS_CANDIDATES]
    best = min(runs, key=lambda run: run["final"]["val_nll_raw"])
    return best["curve"] + [{**run["final"], "chosen": run is best} for run in runs]


def chees_unit(table, state: State) -> dict[str, Any]:
    """The library's default classifier fit (ChEES with :data:`CHEES`), scored; computed once."""
    key = f"progress/chees/{json.dumps(CHEES, sort_keys=True)}"
    rec = _current(state.get(key))
    if rec is None:
        fitted, seconds = _fit(table, "chees", dict(CHEES))
        rec = state.put(key, {"method": "chees", "draws_per_chain": int(fitted.draws.positions.shape[1]),
                              "chains": int(fitted.draws.positions.shape[0]), "seconds": seconds,
                              "settings": dict(CHEES), **_scores(fitted, table, rows=True)})  # fmt: skip
        print(f"{key}: val NLL {rec['val_nll_raw']:.4f} ({seconds:.0f} s)", flush=True)
    return {**rec, "chosen": True}


# ----------------------------------------------------------------------------------------- active learning


@functools.lru_cache(maxsize=4)
def _al_functions(bnn, n_members: int, n_steps: int, lr: float, precision: float = 1.0):
    """Jitted ``init(key) -> positions [M, d]`` (fresh initialisations), ``train(positions [M, d], x [L, p],
    y [L], mask [L]) -> positions [M, d]`` (Adam from those positions) and ``probs(positions, x) -> [M, n, K]``.

    The penalty is the log density of a Gaussian prior of ``precision`` on every weight and bias."""
    hyper = bnn.default_hyperparameters()
    hyper = hyper._replace(weight_precision=hyper.weight_precision * precision,
                           bias_precision=hyper.bias_precision * precision)  # fmt: skip
    opt = optax.adam(lr)

    def loss(position, x, y, mask):
        logp = jax.nn.log_softmax(bnn.apply(bnn.unflatten(position), x), axis=-1)
        ll = jnp.sum(mask * jnp.take_along_axis(logp, y[:, None], axis=-1)[:, 0])
        return -(ll + bnn.log_prior(position, hyper))

    def train_one(position, x, y, mask):
        def step(carry, _):
            pos, st = carry
            g = jax.grad(loss)(pos, x, y, mask)
            updates, st = opt.update(g, st)
            return (optax.apply_updates(pos, updates), st), None

        (position, _), _ = jax.lax.scan(step, (position, opt.init(position)), None, length=n_steps)
        return position

    @jax.jit
    def init(key):
        return jax.vmap(lambda k: flatten(init_params(k, bnn.mlp, bnn.jdtype)))(jax.random.split(key, n_members))

    @jax.jit
    def train(positions, x, y, mask):
        return jax.vmap(train_one, in_axes=(0, None, None, None))(positions, x, y, mask)

    @jax.jit
    def probs(positions, x):
        return jax.vmap(lambda p: jax.nn.softmax(bnn.apply(bnn.unflatten(p), x), axis=-1))(positions)

    return init, train, probs


def _initial_labels(y: np.ndarray, seed: int) -> list[int]:
    rng = np.random.default_rng(1000 + seed)
    return [int(i) for k in np.unique(y) for i in rng.choice(np.flatnonzero(y == k), START_PER_CLASS, replace=False)]


def _acquire(key, criterion: str, rule: str, p: np.ndarray) -> np.ndarray:
    """Indices into the candidates ``p`` ``[M, m, K]`` of the next :data:`ACQUIRE` labels."""
    if rule == "batchbald" and criterion == "bald":
        return np.asarray(batchbald_batch(jax.random.fold_in(key, 2), p, ACQUIRE)[0])
    scores = classification_scores(jax.random.fold_in(key, 0), criterion, p)
    if rule in ("power", "batchbald") and criterion != "random":
        return np.asarray(stochastic_batch(jax.random.fold_in(key, 1), scores, ACQUIRE))
    return np.asarray(select_batch(scores, ACQUIRE))


def active_run(table, criterion: str, seed: int, config: ALConfig, splits: tuple[str, ...]) -> list[dict[str, Any]]:
    """One active-learning curve of the model ``config``; errors on the rows of ``splits``."""
    members, steps, rule, precision, arch, activation, warm = config
    feats = _features(table)
    pool = table[table.split == "train"]
    xpool = pool[feats].to_numpy(float)
    mean, std = xpool.mean(0), xpool.std(0)
    std = np.where(std < 1e-12, 1.0, std)  # unlabelled pool inputs are known: standardise on them
    xp, yp = (xpool - mean) / std, pool["digit"].to_numpy()
    scored = {s: ((table[table.split == s][feats].to_numpy(float) - mean) / std,
                  table[table.split == s]["digit"].to_numpy()) for s in splits}  # fmt: skip
    bnn = build_bnn(Categorical(10), arch, feats, activation, "float64")
    init, train, probs = _al_functions(bnn, members, steps, AL_LR, precision)
    labelled = _initial_labels(yp, seed)
    key = jax.random.fold_in(jax.random.key(seed), CRITERIA.index(criterion) if criterion in CRITERIA else 99)
    records, positions = [], None
    while True:
        n = len(labelled)
        x = np.zeros((MAX_LABELS, xp.shape[1]))
        y = np.zeros(MAX_LABELS, np.int32)
        mask = np.zeros(MAX_LABELS)
        x[:n], y[:n], mask[:n] = xp[labelled], yp[labelled], 1.0
        start = positions if warm and positions is not None else init(jax.random.fold_in(key, n))
        positions = train(start, x, y, mask)
        rec = {"criterion": criterion, "seed": seed, "n_labels": n}
        for s, (xs, ys) in scored.items():
            ps = np.asarray(probs(positions, xs)).mean(axis=0)
            rec.update({f"{s}_error": float(np.mean(np.argmax(ps, 1) != ys)), f"{s}_nll": nll(ps, ys)})
        records.append(rec)
        if n + ACQUIRE > MAX_LABELS:
            return records
        rest = np.setdiff1d(np.arange(yp.size), labelled)
        p = np.asarray(probs(positions, xp))[:, rest]  # the whole pool: one shape, one compilation
        labelled += [int(rest[i]) for i in _acquire(jax.random.fold_in(key, 10_000 + n), criterion, rule, p)]


def _al_key(criterion: str, seed: int, config: ALConfig, splits: tuple[str, ...]) -> str:
    members, steps, rule, precision, arch, activation, warm = config
    prec = "" if precision == 1.0 else f"/precision={precision:g}"  # the unit prior's keys predate the option
    net = arch if activation == "tanh" else f"{arch}/{activation}"  # so do tanh's
    rule += "/warm" if warm else ""  # and cold refits'
    setting = f"lr={AL_LR}/{net}/members={members}/steps={steps}/{rule}{prec}/max={MAX_LABELS}/{'+'.join(splits)}"
    return f"active/{criterion}/seed={seed}/{setting}"


def _random_base(config: ALConfig) -> ALConfig:
    """The configuration random acquisition runs for ``config``'s pilot: its batch is uniform under either rule,
    and its model is refitted from scratch every round (the standard baseline: a warm ``config`` is BALD's
    refits against random acquisition's usual retraining)."""
    return config._replace(rule="top", warm=False)


def _pilot_keys(config: ALConfig) -> list[str]:
    """The state keys of ``config``'s pilot units: BALD with its batch rule, random with :func:`_random_base`."""
    pairs = (("bald", config), ("random", _random_base(config)))
    return [_al_key(c, seed, cfg, ("val",)) for seed in PILOT_SEEDS for c, cfg in pairs]


def _al_unit(table, state: State, criterion: str, seed: int, config: ALConfig, splits: tuple[str, ...]) -> list[dict]:
    key = _al_key(criterion, seed, config, splits)
    done = state.get(key)
    if done is None and not state.mine(key):
        return []  # another worker's unit
    if done is None:
        t0 = time.perf_counter()
        done = state.put(key, active_run(table, criterion, seed, config, splits))
        print(f"{key}: {time.perf_counter() - t0:.0f} s", flush=True)
    return [{**r, **config._asdict()} for r in done]


def _config_of(row: dict[str, Any]) -> ALConfig:
    """The :class:`ALConfig` a pilot or record row was made with."""
    return ALConfig(**{k: row.get(k, ALConfig._field_defaults.get(k)) for k in ALConfig._fields})


def pilot_part(table, state: State) -> tuple[ALConfig, list[dict[str, Any]]]:
    """The active-learning configuration chosen on the val rows (module docstring) and the pilot's rows."""
    rows, ranked = [], []
    for config in AL_GRID:
        bald = [r for seed in PILOT_SEEDS for r in _al_unit(table, state, "bald", seed, config, ("val",))]
        base = _random_base(config)
        rand = [r for seed in PILOT_SEEDS for r in _al_unit(table, state, "random", seed, base, ("val",))]
        nb, nr = labels_to_reach(bald, "bald", key="val_error"), labels_to_reach(rand, "random", key="val_error")
        ratio = float("inf") if nb is None or nr is None else nb / nr
        mean_err = float(np.mean([r["val_error"] for r in bald]))
        rows.append({**config._asdict(), "bald_labels": nb, "random_labels": nr, "ratio": ratio,
                     "bald_mean_val_error": mean_err})  # fmt: skip
        ranked.append((ratio, mean_err, config))
    chosen = min(ranked, key=lambda t: (t[0], t[1]))[2]
    for r in rows:
        r["chosen"] = _config_of(r) == chosen
    return chosen, rows


def _criterion_config(criterion: str, config: ALConfig) -> ALConfig:
    """The configuration ``criterion`` runs under the chosen ``config``: random's model is refitted from
    scratch every round (as in the pilot, :func:`_random_base`), the other criteria's as ``config`` says."""
    return config._replace(warm=False) if criterion == "random" else config


def active_part(table, state: State, config: ALConfig) -> list[dict[str, Any]]:
    return [r for seed in SEEDS for c in CRITERIA
            for r in _al_unit(table, state, c, seed, _criterion_config(c, config), ("val", "test"))]  # fmt: skip


def earlier_finals(state: State, config: ALConfig | None) -> list[dict[str, Any]]:
    """Final runs in the state of configurations other than ``config``: chosen by an earlier, smaller pilot
    grid and scored on the test rows then. Listed so that every test score the state holds is reported."""
    rows = []
    for other in AL_GRID:
        keys = [_al_key(c, seed, _criterion_config(c, other), ("val", "test")) for seed in SEEDS for c in CRITERIA]
        if other == config or not all(state.get(k) is not None for k in keys):
            continue
        records = [r for k in keys for r in state.get(k)]
        reach = {c: labels_to_reach(records, c) for c in CRITERIA}
        ratio = None if reach["bald"] is None or reach["random"] is None else reach["bald"] / reach["random"]
        rows.append({**other._asdict(), **{f"{c}_labels": reach[c] for c in CRITERIA}, "ratio": ratio})  # fmt: skip
    return rows


def labels_to_reach(
    records: list[dict[str, Any]], criterion: str, target: float = TARGET_ERROR, key: str = "test_error"
) -> int | None:
    """The fewest labels at which the criterion's ``key`` error, averaged over seeds, is at or below ``target``."""
    by_n: dict[int, list[float]] = {}
    for r in records:
        if r["criterion"] == criterion:
            by_n.setdefault(r["n_labels"], []).append(r[key])
    for n in sorted(by_n):
        if np.mean(by_n[n]) <= target:
            return n
    return None


# ------------------------------------------------------------------------------------------------ noise


def ratio_bootstrap(active: list[dict[str, Any]], n: int = BOOTSTRAP, seed: int = 0) -> dict[str, Any] | None:
    """The spread of BALD's labels over random's (:func:`labels_to_reach`) over resampled seeds.

    The seeds are resampled with replacement, jointly for both criteria (a seed's start labels are
    shared), ``n`` times. Returns the 5 and 95 % points of the ratio over the resamples where both
    reach the target, and the fraction where both do and the ratio is <= 0.60 (the goal)."""
    seeds = sorted({r["seed"] for r in active})
    by_seed = {s: [r for r in active if r["seed"] == s and r["criterion"] in ("bald", "random")] for s in seeds}
    if len(seeds) < 2:
        return None
    rng = np.random.default_rng(seed)
    ratios = []
    for _ in range(n):
        pick = rng.choice(seeds, len(seeds), replace=True)
        recs = [r for s in pick for r in by_seed[s]]
        nb, nr = labels_to_reach(recs, "bald"), labels_to_reach(recs, "random")
        ratios.append(np.nan if nb is None or nr is None else nb / nr)
    ratios = np.asarray(ratios)
    ok = np.isfinite(ratios)
    return {"resamples": n, "both_reach": float(ok.mean()), "ratio_5_95": np.percentile(ratios[ok], [5, 95]).tolist(),
            "goal_met_fraction": float(np.mean(ok & (np.nan_to_num(ratios, nan=np.inf) <= 0.6)))}  # fmt: skip


def ece_of_rows(conf: np.ndarray, correct: np.ndarray, bins: int = ECE_BINS) -> float:
    """ECE from per-row confidence and correctness, binned as :func:`sigmabnn.evaluate.classification.ece`."""
    index = np.clip(np.ceil(conf * bins).astype(np.int64) - 1, 0, bins - 1)
    gap = np.bincount(index, weights=correct - conf, minlength=bins)
    return float(np.sum(np.abs(gap)) / conf.size)


def noise(best: dict[str, Any], base: dict[str, Any], seed: int = 0) -> dict[str, Any]:
    """The test comparisons' noise: paired SEs of the NLL and error differences, ECE's bootstrap and floor."""
    b, m = best["rows"], base["rows"]
    d_nll = np.asarray(b["nll"]) - np.asarray(m["nll"])
    d_err = (1 - np.asarray(b["correct"])) - (1 - np.asarray(m["correct"]))
    conf, correct = np.asarray(b["conf"]), np.asarray(b["correct"], float)
    n = conf.size
    rng = np.random.default_rng(seed)
    boot = np.array([ece_of_rows(conf[i], correct[i]) for i in rng.integers(0, n, (BOOTSTRAP, n))])
    floor = np.array([ece_of_rows(conf, (rng.random(n) < conf).astype(float)) for _ in range(BOOTSTRAP)])
    return {"n_test": int(n), "nll_diff": float(d_nll.mean()), "nll_diff_se": float(d_nll.std(ddof=1) / np.sqrt(n)),
            "error_diff": float(d_err.mean()), "error_diff_se": float(d_err.std(ddof=1) / np.sqrt(n)),
            "ece": ece_of_rows(conf, correct), "ece_bootstrap_sd": float(boot.std(ddof=1)),
            "ece_bootstrap_5_95": [float(v) for v in np.quantile(boot, [0.05, 0.95])],
            "ece_calibrated_floor_mean": float(floor.mean()),
            "ece_calibrated_floor_95": float(np.quantile(floor, 0.95))}  # fmt: skip


# ------------------------------------------------------------------------------------------------ output


def _figures(out_dir: Path, progress: list[dict], active: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
    for method in ("map", *VI_METHODS):
        rs = [r for r in progress if r["method"] == method and r.get("curve")]
        axes[0].plot([r["epochs"] for r in rs], [r["test_error"] for r in rs], "o-", label=method)
    axes[0].set(xscale="log", xlabel="epochs", ylabel="test error", title="digits: error against epochs")
    axes[0].legend(fontsize=8)
    nuts = [r for r in progress if r["method"] == "nuts" and "seconds" not in r]
    axes[1].plot([r["draws_per_chain"] for r in nuts], [r["test_error_raw"] for r in nuts], "o-", color="k")
    axes[1].set(xscale="log", xlabel="NUTS draws per chain", ylabel="test error", title="digits: error against draws")
    fig.savefig(out_dir / "classification_progress.png", dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained", sharey=True)
    for ax, split in zip(axes, ("test", "val"), strict=True):
        for criterion in CRITERIA:
            ns = sorted({r["n_labels"] for r in active if r["criterion"] == criterion})
            errs = [[r[f"{split}_error"] for r in active if r["criterion"] == criterion and r["n_labels"] == n]
                    for n in ns]  # fmt: skip
            mean = np.array([np.mean(e) for e in errs])
            se = np.array([np.std(e, ddof=1) / np.sqrt(len(e)) if len(e) > 1 else 0.0 for e in errs])
            (line,) = ax.plot(ns, mean, label=criterion)
            ax.fill_between(ns, mean - se, mean + se, color=line.get_color(), alpha=0.2, lw=0)
        ax.axhline(TARGET_ERROR, color="gray", ls=":", lw=1)
        ax.set(xlabel="labelled images", ylabel=f"{split} error (mean over seeds +- 1 s.e.)",
               title=f"active learning: {split}")  # fmt: skip
        ax.legend(fontsize=8)
    fig.savefig(out_dir / "classification_active.png", dpi=110)
    plt.close(fig)


def _summary(progress: list[dict], active: list[dict], pilot: list[dict], earlier: list[dict]) -> dict[str, Any]:
    finals = {r["method"]: r for r in progress if r.get("chosen")}
    bnns = {m: v for m, v in finals.items() if m != "map"}
    best = min(bnns, key=lambda m: bnns[m]["val_nll_raw"]) if bnns else None  # the rule: lowest raw val NLL
    ok = best is not None and "map" in finals and "rows" in finals[best] and "rows" in finals["map"]
    reach = {c: labels_to_reach(active, c) for c in CRITERIA}
    reach_val = {c: labels_to_reach(active, c, key="val_error") for c in CRITERIA}
    ratio = None if reach.get("bald") is None or reach.get("random") is None else reach["bald"] / reach["random"]
    chosen = next((r for r in pilot if r["chosen"]), None)
    return {"final": {m: {k: v for k, v in r.items() if k != "rows"} for m, r in finals.items()}, "best_bnn": best,
            "noise": noise(finals[best], finals["map"]) if ok else None, "labels_to_reach_10pct": reach,
            "labels_to_reach_10pct_val": reach_val, "bald_over_random": ratio, "pilot": pilot,
            "active_config": chosen, "earlier_finals": earlier,
            "ratio_noise": ratio_bootstrap(active) if ratio is not None else None}  # fmt: skip


def _goals(summary: dict[str, Any]) -> str:
    """The issue's goals against the measurements, in words, with the noise of the test comparisons."""
    final, best, nz = summary["final"], summary["best_bnn"], summary["noise"]
    parts = []
    if best is not None and "map" in final:
        b, m = final[best], final["map"]
        parts.append(
            f"best BNN (lowest raw val NLL) `{best}`: test error {b['test_error']:.4f} vs MAP {m['test_error']:.4f} "
            f"({'met' if b['test_error'] <= m['test_error'] else 'missed'}), NLL {b['test_nll']:.4f} vs "
            f"{m['test_nll']:.4f} ({'met' if b['test_nll'] < m['test_nll'] else 'missed'}), ECE {b['test_ece']:.4f} "
            f"({'met' if b['test_ece'] <= 0.03 else 'missed'}: <= 0.03)"
        )
    ratio = summary["bald_over_random"]
    if ratio is not None:
        parts.append(f"BALD needs {ratio:.2f} of random's labels for 10 % test error "
                     f"({'met' if ratio <= 0.6 else 'missed'}: <= 0.60)")  # fmt: skip
    text = "; ".join(parts) + "."
    rn = summary.get("ratio_noise")
    if rn is not None:
        text += (
            f" Over {rn['resamples']} resamples of the {len(SEEDS)} seeds (with replacement, BALD's and random's "
            f"runs of a seed together), the ratio's 5-95 % range is [{rn['ratio_5_95'][0]:.2f}, "
            f"{rn['ratio_5_95'][1]:.2f}] and it is <= 0.60 in {100 * rn['goal_met_fraction']:.0f} % of them."
        )
    if nz is not None:
        text += (
            f"\n\nNoise of these test comparisons ({nz['n_test']} rows): the per-row NLL difference BNN - MAP has "
            f"mean {nz['nll_diff']:+.4f} and paired standard error {nz['nll_diff_se']:.4f} "
            f"(z = {nz['nll_diff'] / nz['nll_diff_se']:+.2f}); the error difference {nz['error_diff']:+.4f} "
            f"+- {nz['error_diff_se']:.4f}. The BNN's ECE {nz['ece']:.4f} has a bootstrap (over test rows, "
            f"{BOOTSTRAP} resamples) standard deviation {nz['ece_bootstrap_sd']:.4f}, 5-95 % range "
            f"[{nz['ece_bootstrap_5_95'][0]:.4f}, {nz['ece_bootstrap_5_95'][1]:.4f}]; a perfectly calibrated model "
            f"with the same confidences would show an ECE of {nz['ece_calibrated_floor_mean']:.4f} on average "
            f"on these rows (95th percentile {nz['ece_calibrated_floor_95']:.4f}) from the finite rows alone."
        )
    return text


def _member_line(summary: dict[str, Any]) -> str:
    e = summary["final"].get("ensemble")
    if not e or "member_test_nll_raw" not in e:
        return ""
    v, t = np.asarray(e["member_val_nll_raw"]), np.asarray(e["member_test_nll_raw"])
    m = summary["final"].get("map", {})
    same = (m.get("learning_rate"), m.get("epochs")) == (e["learning_rate"], e["epochs"])
    return (f"The chosen ensemble's {t.size} single networks (T = 1): val NLL {v.min():.4f} to {v.max():.4f} "
            f"(mean {v.mean():.4f}) against the ensemble's {e['val_nll_raw']:.4f}; test NLL {t.min():.4f} to "
            f"{t.max():.4f} (mean {t.mean():.4f}) against {e['test_nll_raw']:.4f}. An ensemble's first member is "
            "the `map` network of the same rate and budget (the same key); the chosen `map` network "
            + ("is this ensemble's first member." if same else "has another rate or budget.")
            + f" Its {e['val_wrong_rows']} misclassified val rows carry {e['val_nll_share_of_wrong_rows']:.0%} of its "
            f"val NLL, and {e['val_wrong_rows_wrong_in_every_member']} of them are misclassified by every member: "
            "where the members make the same confident mistakes, averaging them cannot lower the NLL.")  # fmt: skip


FINAL_COLS = [("method", "method", ""), ("learning_rate", "lr", "g"), ("epochs", "epochs", "d"),
              ("members", "members", "d"), ("val_nll_raw", "val NLL T=1", ".4f"), ("temperature", "T (val)", ".3g"),
              ("temperature_kept", "T kept", ""), ("test_error", "test error", ".4f"),
              ("test_nll", "test NLL", ".4f"), ("test_ece", "test ECE", ".4f"), ("test_brier", "Brier", ".4f"),
              ("test_error_raw", "error T=1", ".4f"), ("test_nll_raw", "NLL T=1", ".4f"),
              ("test_ece_raw", "ECE T=1", ".4f")]  # fmt: skip
GRID_COLS = [("method", "method", ""), ("learning_rate", "lr", "g"), ("epochs", "epochs", "d"),
             ("members", "members", "d"), ("val_nll_raw", "val NLL T=1", ".4f"), ("val_error_raw", "val error", ".4f"),
             ("temperature", "T (val)", ".3g"),
             ("chosen", "chosen", "")]  # fmt: skip
NUTS_COLS = [("learn_prior", "prior precisions Gibbs-sampled", ""), ("val_nll_raw", "val NLL T=1", ".4f"),
             ("val_error_raw", "val error", ".4f"), ("seconds", "fit s", ".0f"), ("chosen", "chosen", "")]  # fmt: skip
CHEES_COLS = [("chains", "chains", "d"), ("draws_per_chain", "draws per chain", "d"),
              ("val_nll_raw", "val NLL T=1", ".4f"), ("val_error_raw", "val error", ".4f"),
              ("seconds", "fit s", ".0f")]  # fmt: skip
PILOT_COLS = [("arch", "network", ""), ("activation", "activation", ""),
              ("members", "members", "d"), ("steps", "steps", "d"), ("rule", "batch", ""),
              ("precision", "prior precision", "g"), ("refits", "refits", ""),
              ("bald_labels", "BALD labels", "d"), ("random_labels", "random labels", "d"), ("ratio", "ratio", ".2f"),
              ("bald_mean_val_error", "BALD mean val error", ".4f"), ("chosen", "chosen", "")]  # fmt: skip


def _active_lines(summary: dict[str, Any]) -> list[str]:
    cfg, reach = summary["active_config"], summary["labels_to_reach_10pct"]
    reach_val = summary["labels_to_reach_10pct_val"]
    fmt = lambda r: ", ".join(f"{c}: {r[c] if r[c] is not None else 'not reached'}" for c in CRITERIA)  # noqa: E731
    chosen = "none" if cfg is None else (f"{cfg['arch']} {cfg['activation']}, {cfg['members']} members, "
                                        f"{cfg['steps']} steps, `{cfg['rule']}` batches, "
                                        f"prior precision {cfg['precision']:g}")  # fmt: skip
    return [
        "Model: a deep ensemble of MAP networks (a Gaussian prior's log density as the penalty), "
        f"full-batch Adam at {AL_LR}; start {START_PER_CLASS} "
        f"labels per class, {ACQUIRE} acquired per round up to {MAX_LABELS}; pool: the train rows.", "",
        f"Pilot on the val rows ({len(PILOT_SEEDS)} seeds {PILOT_SEEDS[0]}-{PILOT_SEEDS[-1]}; ratio = labels BALD "
        "needs for a mean val error <= 10 % over those random needs; lowest ratio wins, ties to BALD's lower mean "
        "val error; refits: each round's members from fresh initialisations (cold) or from the previous round's "
        "(warm, BALD only: random is retrained from scratch under every configuration):", "",
        markdown_table([{**r, "refits": "warm" if r.get("warm") else "cold"} for r in summary["pilot"]], PILOT_COLS),
        "",
        f"Chosen: {chosen}. Final runs of it, {len(SEEDS)} seeds, every criterion:", "",
        f"Labels needed for a mean test error <= 10 %: {fmt(reach)}"
        + (f"; BALD / random = {summary['bald_over_random']:.2f}." if summary["bald_over_random"] else "."), "",
        f"The same runs on the val rows: {fmt(reach_val)}.", "",
        *_earlier_lines(summary.get("earlier_finals") or []),
        "![active](classification_active.png)", "",
    ]  # fmt: skip


def _earlier_lines(earlier: list[dict[str, Any]]) -> list[str]:
    if not earlier:
        return []
    labels = [(f"{c}_labels", f"{c} labels", "d") for c in CRITERIA]
    cols = PILOT_COLS[:7] + labels + [("ratio", "BALD / random", ".2f")]
    earlier = [{**r, "refits": "warm" if r.get("warm") else "cold"} for r in earlier]
    return [
        "Final runs of configurations an earlier, smaller pilot grid chose (the same seeds, scored on the test "
        "rows when they were made; the grid has grown since, and the pilot above chose again on the val rows):",
        "", markdown_table(earlier, cols), "",
    ]  # fmt: skip


def _markdown(meta, summary, progress, active) -> str:
    finals = [{"method": m, **v} for m, v in summary["final"].items()]
    grid = [r for r in progress if not r.get("curve") and "epochs" in r]
    curve = [r for r in progress if r.get("curve")]
    lines = [
        "# Classification on the built-in digits", "",
        "Written by `benchmarks/classification.py` (its docstring has the protocol). Every choice was made on "
        "the val rows: per method the learning rate, training length (and ensemble size) by the lowest raw "
        "(T = 1) val NLL; the temperature fitted on the val rows, kept when it lowers their NLL (one temperature "
        "on the log of the posterior predictive, the library's map, chosen in `temperature_seeds.md`); the best "
        "BNN by the lowest raw val NLL; the "
        "active-learning model and batch rule by a pilot on the val rows. Every fit's test scores are recorded "
        f"(the curves need them) but no choice reads them. ECE: {ECE_BINS} equal-width confidence bins.", "",
        f"Last invocation: {meta.get('date')} to {meta.get('date_end')}, load average at start "
        f"{meta.get('load_average_1_5_15_at_start')}, at end {meta.get('load_average_1_5_15_at_end')} (a shared "
        "machine: the fit times include compilation and contention). The run is resumable: each record was "
        "computed once, possibly by an earlier invocation, and its `seconds` are its own.", "",
        "Goals: " + _goals(summary), "",
        "## (a) Final test scores per method (chosen configurations)", "", markdown_table(finals, FINAL_COLS), "",
        _member_line(summary), "",
        "## (a) The choice grid (val rows only)", "", markdown_table(grid, GRID_COLS), "",
        "## (a) Test error against epochs (chosen learning rate)", "",
        markdown_table(curve, [("method", "method", ""), ("epochs", "epochs", "d"), ("test_error", "test error", ".4f"),
                               ("test_nll", "test NLL", ".4f"), ("test_ece", "ECE", ".4f"),
                               ("seconds", "fit s", ".0f")]),  # fmt: skip
        "",
        "NUTS candidates (val rows choose):", "",
        markdown_table([{**r, "learn_prior": bool(r["settings"].get("learn_prior"))} for r in progress
                        if r["method"] == "nuts" and "seconds" in r], NUTS_COLS), "",
        "ChEES, the library's default classifier fit (no options; one configuration):", "",
        markdown_table([r for r in progress if r["method"] == "chees"], CHEES_COLS), "",
        "NUTS (the chosen run), test error (T = 1) after the first k draws of each chain:", "",
        markdown_table([r for r in progress if r["method"] == "nuts" and "seconds" not in r],
                       [("draws_per_chain", "k", "d"), ("test_error_raw", "test error", ".4f"),
                        ("test_nll_raw", "NLL", ".4f")]),  # fmt: skip
        "", "![progress](classification_progress.png)", "",
        "## (b) Active learning", "", *_active_lines(summary),
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


def _worker(table, state: State) -> int:
    """A shard's pilot units; then, once every pilot unit is in the state, its final units."""
    pilot_part(table, state)
    state.reload()  # the other workers' units
    if all(state.get(k) is not None for config in AL_GRID for k in _pilot_keys(config)):
        config, _ = pilot_part(table, state)
        active_part(table, state, config)
        return 0
    print("the pilot is not complete (another worker's units): rerun this worker when it is", flush=True)
    return 1


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--smoke", action="store_true", help="a tiny run into --out (default a temporary directory)")
    p.add_argument("--out", type=Path, default=None, help="results directory (default benchmarks/results)")
    p.add_argument("--parts", default="progress,active", help="which parts: progress, active (with its pilot)")
    p.add_argument(
        "--shard",
        default=None,
        help="I/N: a worker computing its share of the active-learning units "
        "(pilot first, then the final runs once the pilot is complete), writing no result files",
    )
    args = p.parse_args(argv)
    if args.smoke:
        globals().update(SMOKE)
    out = args.out or (Path("/tmp/sigmabnn-classification-smoke") if args.smoke else RESULTS_DIR)
    out.mkdir(parents=True, exist_ok=True)
    meta = run_metadata("benchmarks/classification.py" + (" --smoke" if args.smoke else ""))
    shard = None if args.shard is None else parse_shard(args.shard)
    if args.shard is not None and shard is None:
        print(SHARD_ERROR.format(args.shard), file=sys.stderr)
        return 2
    state = State(out / "classification_state.json", shard)
    table = load_digits()
    parts = args.parts.split(",")
    if shard is not None:
        return _worker(table, state)
    progress = progress_part(table, state) if "progress" in parts else []
    config, pilot = pilot_part(table, state) if "active" in parts else (None, [])
    active = active_part(table, state, config) if "active" in parts else []
    meta = finish_metadata(meta)
    summary = _summary(progress, active, pilot, earlier_finals(state, config) if "active" in parts else [])
    _figures(out, progress, active)
    progress = [{k: v for k, v in r.items() if k != "rows"} for r in progress]  # the rows stay in the state file
    result = {"meta": meta, "summary": summary, "progress": progress, "active": active}
    write(out / "classification.json", result, _markdown(meta, summary, progress, active))
    return 0


if __name__ == "__main__":
    sys.exit(main())
