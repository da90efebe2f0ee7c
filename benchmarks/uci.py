"""UCI regression benchmark: the literature's splits and protocol, three sigmabnn methods.

The seven data sets of Hernandez-Lobato & Adams (2015) in ``../shared/data/uci``
(or ``$SIGMABNN_SHARED/data/uci``) with their published train/test splits and
the protocol of that folder's README:

- inputs (and, for training, the target) standardised with the *training*
  split's statistics (:func:`sigmabnn.api.fit` fits its transforms on the rows
  labelled ``train`` only; a training std below 1e-8 counts as constant);
- RMSE of the predictive mean and the average test log-likelihood
  ``mean_n log((1/T) sum_t N(y_n; mu_t(x_n), sigma_t^2(x_n)))``, both on the
  original target scale (:func:`sigmabnn.evaluate.metrics.evaluate`: ``rmse``
  and ``-nll``);
- mean over splits +- standard error ``std(ddof=0) / sqrt(n_splits)``.

Methods (each through the public :func:`sigmabnn.api.fit`, so through the same
model, predictive and evaluation code as any user's model):

- ``nuts``: the hierarchical BNN, NUTS on the weights with Gibbs updates of
  the noise precision and of the per-layer prior precisions
  (``learn_prior=True``); chains, warm-up and draws sized by
  :func:`method_options` so that the reduced run fits the time budget,
  changed per data set where validation chose a variant (:data:`NUTS_VARIANT`);
- ``nuts_2x50``: the same with two hidden layers (our recommended
  architecture where it won the validation, :data:`NUTS_2X50`; run only there);
- ``bbb``: Bayes by Backprop (mean-field Gaussian q, learnt noise precision);
- ``ensemble``: a deep ensemble of 5 MAP networks with a learned variance
  (Lakshminarayanan et al. 2017).

Architecture: one hidden layer of 50 tanh units (100 for protein), as in the
literature (``nuts_2x50``: two).

Validation (``--validate``): no setting is tuned on the test rows. Candidate
variants of a method's settings (:data:`VARIANTS`, ``--variants``) are fitted
on 80 % of each split's training rows and scored on the other 20 %
(:func:`validation_data`); ``results/uci_validation.{json,md}`` mark the
candidate with the highest held-out LL per data set (:func:`chosen_variants`),
which :data:`NUTS_VARIANT` and :data:`NUTS_2X50` hold (a test checks them
against the committed file).

Runs can be partial and are merged: every (data set, method, split) *cell* is
a task for a pool of ``--jobs`` worker processes (default 2, one per core;
started fresh, each with XLA and BLAS limited to one thread before JAX is
imported, so the workers do not oversubscribe the cores), scheduled the most
expensive first. Each record is merged into ``results/uci.json`` as it arrives
(a rerun replaces the same key; the file is rewritten atomically after every
cell), so an interrupted run keeps every finished cell; the aggregate table is
recomputed from all records, and ``results/uci.md`` is generated from the JSON
and ``published_results.csv``. A failing cell is reported and the run goes on
(exit status 1). Every run records its command, wall time, the summed CPU
time of its cells, the number of workers and the load averages at start and
end (the machine may be shared), every record its own wall and CPU time.

Budgets: all per-method settings live in :func:`method_options`, sized by the
number of training rows in three classes (up to 2,000 rows: Boston, energy,
wine; up to 12,000: kin8nm, naval, power; protein); ``uci.md`` lists them
(generated from the function). ``--smoke`` replaces them by tiny budgets to
check the pipeline in seconds (its numbers mean nothing).

Usage (from the repository root)::

    python benchmarks/uci.py                       # reduced run: 5 splits (2 for protein), all methods, 2 workers
    python benchmarks/uci.py --full                # the literature's full run: every split (20; protein 5)
    python benchmarks/uci.py --datasets bostonHousing,energy --splits 2 --methods ensemble --jobs 1
    python benchmarks/uci.py --table-only          # regenerate uci.md from uci.json
    python benchmarks/uci.py --merge-from other.json   # add another run's records (e.g. a run in pieces)
    python benchmarks/uci.py --validate --methods nuts --datasets wine-quality-red --variants base,student_t
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime as dt
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DATASETS = (
    "bostonHousing",
    "energy",
    "wine-quality-red",
    "kin8nm",
    "naval-propulsion-plant",
    "power-plant",
    "protein-tertiary-structure",
)
METHODS = ("nuts", "nuts_2x50", "bbb", "ensemble")
#: Splits per data set in the reduced run (the issue's budget: 5 each, 2 for protein).
REDUCED_SPLITS = {name: 5 for name in DATASETS} | {"protein-tertiary-structure": 2}
#: Budget of the reduced run on an idle machine (minutes).
REDUCED_BUDGET_MINUTES = 60.0
#: Worker processes by default: one per core of the 2-core machine.
DEFAULT_JOBS = 2
#: Training rows, features and hidden units per data set (the data README's table), for scaled time estimates.
SIZES = {
    "bostonHousing": (455, 13, 50),
    "energy": (691, 8, 50),
    "wine-quality-red": (1439, 11, 50),
    "kin8nm": (7373, 8, 50),
    "naval-propulsion-plant": (10741, 16, 50),
    "power-plant": (8611, 4, 50),
    "protein-tertiary-structure": (41157, 9, 100),
}
#: Training-set sizes up to which method_options uses its small and medium settings.
SIZE_CLASSES = (2000, 12000)
#: Fraction of the training rows the ensemble holds out to choose its number of steps.
HOLDOUT_FRACTION = 0.1
#: Fraction of each split's training rows ``--validate`` holds out to score candidate settings (test rows unseen).
VALIDATION_FRACTION = 0.2
#: Splits per data set a ``--validate`` run scores by default (each split's own held-out training rows).
VALIDATION_SPLITS = 2
#: Candidate changes to a method's settings that ``--validate`` scores (option overrides; ``base`` is none).
VARIANTS = {
    "base": "the settings of method_options",
    "student_t": "Student-t noise (likelihood='student_t', 4 degrees of freedom) instead of Gaussian",
    "2x50": "two hidden layers of the reference width (e.g. 8-50-50-1) instead of one",
    "map_long": "MAP starts of up to 4,000 full-batch steps (patience 400) instead of the class's budget",
    "map_xlong": "MAP starts of up to 12,000 full-batch steps (patience 1,000): a more precise mean where the "
    "noise is tiny (naval)",
    "map_xxlong": "MAP starts of up to 40,000 full-batch steps (patience 2,000): map_xlong carried further",
    "map_100k": "MAP starts of up to 100,000 full-batch steps (patience 5,000): map_xxlong carried further",
    "map_cos12k": "MAP starts of up to 12,000 full-batch steps with Adam's step size decayed along a cosine from "
    "0.01 to 0.0001 (patience 2,000): settles into the minimum a constant step size circles",
    "map_cos40k": "as map_cos12k over 40,000 steps (patience 4,000)",
    "map_lbfgs1k": "map_long's Adam starts (4,000 steps, patience 400), each then polished by 1,000 L-BFGS "
    "iterations on the full objective (MAPConfig.lbfgs_steps)",
    "map_lbfgs3k": "as map_lbfgs1k with 3,000 L-BFGS iterations",
    "mid_long": "map_long and a longer, deeper sampler: 150 warm-up + 50 draws per chain at tree depth 5 (the "
    "medium class's budget is 100 + 40 at depth 4)",
    "chains4": "4 chains, each from its own MAP start, instead of the class's number (more modes in the average)",
    "chains8": "8 chains, each from its own MAP start (as chains4, twice the modes and the cost)",
    "chains16": "16 chains, each from its own MAP start (as chains8, twice the modes and the cost)",
    "float32": "the network, its gradients and the sampler in float32 instead of float64 (predictions are "
    "still accumulated in float64): about half the cost per gradient on this CPU (benchmarks/results/samplers.md)",
}
#: The NUTS settings chosen per data set by ``--validate`` (results/uci_validation.md: highest held-out LL among
#: the candidates scored there; a data set not listed keeps ``base``): the variant of ``nuts``, the literature's
#: architecture (one hidden layer). A test checks these against the committed validation results.
NUTS_VARIANT: dict[str, str] = {
    "bostonHousing": "map_long+chains8",
    "energy": "student_t",
    "wine-quality-red": "student_t",
    "kin8nm": "mid_long+map_lbfgs1k+chains8+float32",
    "naval-propulsion-plant": "mid_long+map_lbfgs3k+float32",
    "power-plant": "map_long",
}
#: Data sets where a two-hidden-layer candidate scored best on validation, and that candidate: the method
#: ``nuts_2x50`` (our recommended architecture there, reported beside ``nuts``) runs only on these.
NUTS_2X50: dict[str, str] = {"power-plant": "2x50+map_long+student_t"}


def shared_data_dir() -> Path:
    env = os.environ.get("SIGMABNN_SHARED")
    return (Path(env) if env else REPO.parent / "shared") / "data"


# --------------------------------------------------------------------------- data


class UCIData(NamedTuple):
    """One data set: ``x`` ``[n, p]``, ``y`` ``[n]`` float64, the published splits, the reference width."""

    name: str
    x: np.ndarray
    y: np.ndarray
    train_index: list[np.ndarray]
    test_index: list[np.ndarray]
    n_hidden: int


def _ints(path: Path) -> np.ndarray:
    return np.loadtxt(path, ndmin=1).astype(np.int64)


def load_dataset(root: Path, name: str) -> UCIData:
    """Read ``root/name/data/``: ``data.txt``, the feature/target indices, every split, ``n_hidden.txt``."""
    d = Path(root) / name / "data"
    if not d.is_dir():
        raise FileNotFoundError(f"UCI data set {name!r} not found at {d}")
    data = np.loadtxt(d / "data.txt", dtype=np.float64, ndmin=2)
    features = _ints(d / "index_features.txt")
    target = int(_ints(d / "index_target.txt")[0])
    n_splits = int(_ints(d / "n_splits.txt")[0])
    train = [_ints(d / f"index_train_{i}.txt") for i in range(n_splits)]
    test = [_ints(d / f"index_test_{i}.txt") for i in range(n_splits)]
    n_hidden = int(_ints(d / "n_hidden.txt")[0])
    return UCIData(name, data[:, features], data[:, target], train, test, n_hidden)


def split_frame(x: np.ndarray, y: np.ndarray, train_index: np.ndarray, test_index: np.ndarray):
    """A DataFrame of the split's rows: features ``x0..``, target ``y``, ``split`` = ``train``/``test``.

    Only the ``train`` rows are used to fit (transforms included); ``test`` rows are held out.
    """
    import pandas as pd

    train_index, test_index = np.asarray(train_index), np.asarray(test_index)
    if np.intersect1d(train_index, test_index).size:
        raise ValueError("train and test indices overlap")
    rows = np.concatenate([train_index, test_index])
    df = pd.DataFrame(x[rows], columns=[f"x{j}" for j in range(x.shape[1])])
    df["y"] = y[rows]
    df["split"] = ["train"] * train_index.size + ["test"] * test_index.size
    return df


def test_scores(fitted: Any, x_test: np.ndarray, y_test: np.ndarray) -> dict[str, float]:
    """RMSE and average test log-likelihood on the original scale (plus 95 % interval coverage)."""
    from sigmabnn.evaluate.metrics import evaluate

    ev = evaluate(fitted, x_test, y_test, levels=(0.95,))["original"]
    return {
        "rmse": float(ev["rmse"]),
        "test_ll": -float(ev["nll"]),
        "coverage_95": float(ev["coverage_interval"]["0.95"]),
    }


# --------------------------------------------------------------------------- methods


def method_options(
    method: str, n_train: int, num_features: int, n_hidden: int, dataset: str | None = None
) -> dict[str, Any]:
    """Keyword arguments of :func:`sigmabnn.api.fit` for one method, sized to the time budget.

    The single place of every method's settings. The reduced run (5 splits of
    six data sets, 2 of protein, three methods: 96 cells) has to fit 60
    minutes of a 2-core machine, so budgets shrink with the training-set size
    ``n_train`` in three classes (:data:`SIZE_CLASSES`), measured on one split
    each (CPU seconds per split, one XLA thread):

    - NUTS: chains from MAP starts; a gradient costs time proportional to
      ``n``, an iteration at most ``2**depth - 1`` gradients, so chains,
      warm-up, draws and tree depth shrink with ``n``: short chains that start
      at MAP estimates and rely on the Gibbs-learnt noise and prior
      precisions, not converged long runs (small sets: 3 chains of 300 + 100
      at depth 6: 73 s on wine; kin8nm at 3 chains of 200 + 50, depth
      5 took 148 s for LL 1.26, so the medium class keeps 2 chains of
      100 + 40 at depth 4: 65 s on naval).
    - BBB: 4,000 full-batch Adam steps up to 2,000 rows, q started from a
      Glorot draw and the noise precision optimised jointly with q
      (``map=None, noise_estimate="elbo"``; the default MAP start with the
      noise from its residuals is overconfident there: wine LL -2.6 to -3.3,
      95 % coverage 0.63-0.69; a MAP start with the joint noise: LL -1.96,
      coverage 0.75 on split 0), else 2,000 steps of
      minibatches of 512, started at a MAP fit on the same minibatches (a
      full-batch MAP start was nearly all of BBB's time on protein).
    - Validated changes (``--validate``, ``results/uci_validation.md``): NUTS on
      wine with Student-t noise (held-out LL above the Gaussian's on both
      splits scored); Student-t lost on Boston, two layers with 4,000-step MAP
      starts lost on kin8nm (:data:`NUTS_VARIANT`, :data:`NUTS_2X50`). On the
      medium sets the MAP start was the limit: on naval's held-out rows 4,000
      MAP steps (``map_long``) cut the RMSE to about a quarter of the 500-step
      start's and raised the LL by 1.4, more than the longer, deeper sampler
      added on top (``mid_long``, chosen on naval; on power-plant ``map_long``
      scored a little higher). Naval's MAP kept improving with Adam's steps
      (held-out LL 6.78 at 12,000, 7.04 at 40,000, 7.51 at 100,000, the last
      over budget); 3,000 L-BFGS iterations after map_long's 4,000 Adam steps
      (``map_lbfgs3k``, :attr:`sigmabnn.map.MAPConfig.lbfgs_steps`) reached
      7.95 for less time than the 40,000 Adam steps. On kin8nm 4 chains from 4 MAP starts
      (``mid_long+chains4``) scored above ``mid_long``'s 2, and 8 chains
      (``mid_long+chains8``, twice the cost) a little above 4; 1,000 L-BFGS
      iterations on each of 8 float32 starts scored above 16 chains without
      them, for less time (3,000, higher still, is over budget). On Boston the
      same L-BFGS polish lost clearly (a sharper, over-fitted start on 400
      rows). On power-plant
      two hidden layers with 4,000-step MAP starts (``2x50+map_long``) scored
      held-out LL -2.69 against ``map_long``'s -2.73, so ``nuts_2x50`` runs
      there. Energy chose Student-t noise on one split.
    - Ensemble: the early-stopping stage is the cost. Minibatches of 512 and at
      most 1,000 steps on the medium sets (kin8nm at 2,000 steps: 82 s, LL
      1.27); on protein minibatches of 4,096 and at most 600 steps (400 steps:
      119 s, LL -2.97, still improving; measured while every minibatch step
      still drew a permutation of all ``n`` rows, now one per epoch).
    """
    from sigmabnn.map import MAPConfig

    if method == "nuts_2x50":
        base = method_options("nuts", n_train, num_features, n_hidden)
        return apply_variant(base, NUTS_2X50.get(dataset, "2x50") if dataset else "2x50")
    arch = f"{num_features}-{n_hidden}-1"
    common = {"architecture": arch, "activation": "tanh", "progress": False}
    size = sum(n_train > bound for bound in SIZE_CLASSES)  # 0 small, 1 medium, 2 large
    if method == "nuts":
        chains, warmup, samples, depth = ((3, 300, 100, 6), (2, 100, 40, 4), (2, 50, 20, 4))[size]
        map_config = (
            MAPConfig(learning_rate=1e-2, num_steps=2000, patience=200),
            MAPConfig(learning_rate=1e-2, num_steps=500, patience=200),
            MAPConfig(learning_rate=1e-2, num_epochs=20, batch_size=1024, patience=None),
        )[size]
        opts = common | {
            "method": "nuts",
            "num_chains": chains,
            "num_warmup": warmup,
            "num_samples": samples,
            "max_tree_depth": depth,
            "learn_noise": True,
            "learn_prior": True,
            "map": map_config,
        }
        return apply_variant(opts, NUTS_VARIANT.get(dataset, "base")) if dataset else opts
    if method == "bbb":
        return (
            common
            | {
                "method": "bbb",
                "num_steps": 4000 if size == 0 else 2000,
                "batch_size": None if size == 0 else 512,
                "num_mc_samples": 4,
                "learning_rate": 1e-2,
                "final_learning_rate": 1e-3,
                "num_samples": 200,
                "learn_noise": True,
            }
            | (
                # small sets: q starts from a Glorot draw, the noise is optimised jointly with q (a MAP start and
                # its residual noise estimate are overconfident there)
                {"noise_estimate": "elbo", "map": None} if size == 0 else {}
            )
        )
    if method == "ensemble":
        # the step budget is an upper bound: run_split early-stops on held-out rows, then refits
        batch, steps, patience = ((None, 4000, 500), (512, 1000, 200), (4096, 600, 100))[size]
        return common | {
            "method": "ensemble",
            "num_members": 5,
            "learning_rate": 1e-2,
            "batch_size": batch,
            "num_steps": steps,
            "patience": patience,
        }
    raise ValueError(f"unknown method {method!r}; choose from {', '.join(METHODS)}")


def method_runs(method: str, dataset: str) -> bool:
    """Whether the benchmark runs ``method`` on ``dataset`` (``nuts_2x50`` only where validated, :data:`NUTS_2X50`)."""
    return method != "nuts_2x50" or dataset in NUTS_2X50


#: The MAP-start candidates of :data:`VARIANTS`: their :class:`sigmabnn.map.MAPConfig` fields (Adam at 0.01).
MAP_VARIANTS: dict[str, dict[str, Any]] = {
    "map_long": {"num_steps": 4000, "patience": 400},
    "map_xlong": {"num_steps": 12000, "patience": 1000},
    "map_xxlong": {"num_steps": 40000, "patience": 2000},
    "map_100k": {"num_steps": 100000, "patience": 5000},
    "map_cos12k": {"num_steps": 12000, "patience": 2000, "final_learning_rate": 1e-4},
    "map_cos40k": {"num_steps": 40000, "patience": 4000, "final_learning_rate": 1e-4},
    "map_lbfgs1k": {"num_steps": 4000, "patience": 400, "lbfgs_steps": 1000},
    "map_lbfgs3k": {"num_steps": 4000, "patience": 400, "lbfgs_steps": 3000},
}


def apply_variant(opts: dict[str, Any], variant: str) -> dict[str, Any]:
    """``opts`` (of :func:`method_options`) changed as the candidate ``variant`` of :data:`VARIANTS` says.

    ``a+b`` applies the variants ``a`` and ``b`` in turn (e.g. ``2x50+map_long``).
    """
    from sigmabnn.map import MAPConfig

    if "+" in variant:
        for part in variant.split("+"):
            opts = apply_variant(opts, part)
        return opts
    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}; choose from {', '.join(VARIANTS)}")
    if variant not in ("base", "2x50", "float32") and opts["method"] != "nuts":
        raise ValueError(f"variant {variant!r} is a NUTS setting, not one of {opts['method']!r}")
    if variant == "student_t":
        return opts | {"likelihood": "student_t"}
    if variant == "2x50":
        widths = opts["architecture"].split("-")
        return opts | {"architecture": "-".join([widths[0], widths[1], *widths[1:]])}
    if variant in MAP_VARIANTS:
        return opts | {"map": MAPConfig(learning_rate=1e-2, **MAP_VARIANTS[variant])}
    if variant == "mid_long":
        return apply_variant(opts, "map_long") | {"num_warmup": 150, "num_samples": 50, "max_tree_depth": 5}
    if variant in ("chains4", "chains8", "chains16"):
        return opts | {"num_chains": int(variant.removeprefix("chains"))}
    if variant == "float32":
        return opts | {"dtype": "float32"}
    return dict(opts)


def validation_data(data: UCIData, seed: int = 0) -> UCIData:
    """``data`` with every split replaced by its training rows, :data:`VALIDATION_FRACTION` of them held out.

    Split ``i``'s new test rows are a seeded random subset (seed ``seed + i``) of its *training* rows and its
    new training rows the rest: scores on them choose settings without touching the published test rows.
    """
    train, test = [], []
    for i, tr in enumerate(data.train_index):
        labels = holdout_labels(tr.size, VALIDATION_FRACTION, seed + i)
        train.append(tr[labels == "train"])
        test.append(tr[labels == "val"])
    return data._replace(train_index=train, test_index=test)


def holdout_labels(n_train: int, fraction: float, seed: int) -> np.ndarray:
    """``train``/``val`` labels for the training rows: a seeded random ``fraction`` held out (at least one row)."""
    n_val = max(1, int(round(fraction * n_train)))
    labels = np.array(["train"] * n_train, dtype=object)
    labels[np.random.default_rng(seed).permutation(n_train)[:n_val]] = "val"
    return labels


def fit_ensemble_early_stopped(df, features, seed: int, opts: dict[str, Any]):
    """The ensemble's protocol: pick the number of steps on held-out training rows, then refit on all of them.

    A learned-variance network overfits its variance on small data sets when
    trained too long (the training NLL keeps falling while the test NLL
    rises). Stage 1 trains on 90 % of the training rows and early-stops each
    member on the other 10 % (validation NLL, ``patience`` steps); stage 2
    retrains on all training rows for the median best step count, without
    early stopping. Test rows are never seen.
    """
    from sigmabnn.api import fit

    train = df["split"].to_numpy() == "train"
    stage1 = df.copy()
    stage1.loc[train, "split"] = holdout_labels(int(train.sum()), HOLDOUT_FRACTION, seed)
    _, report1 = fit(stage1, "y", features, split_column="split", seed=seed, **opts)
    steps = max(int(np.median(report1.sampler.best_step)), opts.get("eval_every", 50))
    fitted, report = fit(
        df, "y", features, split_column="split", seed=seed, **(opts | {"num_steps": steps, "patience": None})
    )
    sampler = dataclasses.replace(report.sampler, extra={**report.sampler.extra, "early_stopping_steps": steps})
    return fitted, dataclasses.replace(report, sampler=sampler)


def run_split(
    data: UCIData, split: int, method: str, seed: int = 0, opts: dict[str, Any] | None = None
) -> dict[str, Any]:
    """Fit ``method`` on split ``split`` of ``data`` and score it on the test rows: one JSON record.

    ``opts``: the :func:`sigmabnn.api.fit` options (default :func:`method_options`).
    """
    from sigmabnn.api import fit

    tr, te = data.train_index[split], data.test_index[split]
    df = split_frame(data.x, data.y, tr, te)
    features = [c for c in df.columns if c.startswith("x")]
    if opts is None:
        opts = method_options(method, tr.size, data.x.shape[1], data.n_hidden)
    load_start = os.getloadavg()[0]
    t0, c0 = time.perf_counter(), time.process_time()
    if opts["method"] == "ensemble":
        fitted, report = fit_ensemble_early_stopped(df, features, seed + split, opts)
    else:
        fitted, report = fit(df, "y", features, split_column="split", seed=seed + split, **opts)
    t_fit = time.perf_counter() - t0
    scores = test_scores(fitted, data.x[te], data.y[te])
    seconds = time.perf_counter() - t0
    cpu_seconds = time.process_time() - c0
    sampler = report.sampler.to_json()
    keep = (
        "acceptance",
        "divergences",
        "mean_integration_steps",
        "rhat_predictions",
        "ess_bulk_predictions",
        "early_stopping_steps",
    )
    return {
        "dataset": data.name,
        "method": method,
        "split": int(split),
        **scores,
        "seconds": seconds,
        "cpu_seconds": cpu_seconds,
        "fit_seconds": t_fit,
        "n_train": int(tr.size),
        "n_test": int(te.size),
        "architecture": report.model.architecture,
        "networks": report.model.networks,
        "options": {k: (v._asdict() if hasattr(v, "_asdict") else v) for k, v in opts.items() if k != "progress"},
        "sampler": {k: sampler[k] for k in keep if k in sampler},
        "loadavg_1min": [load_start, os.getloadavg()[0]],
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
    }


# --------------------------------------------------------------------------- aggregation


def mean_se(values: Any) -> tuple[float, float]:
    """Mean and standard error ``std(ddof=0) / sqrt(n)`` (the literature's convention)."""
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=0) / math.sqrt(v.size))


def aggregate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per (data set, method): ``rmse``, ``rmse_se``, ``test_ll``, ``test_ll_se``, ``n_splits``, ``seconds``.

    ``seconds`` is the total wall time of the splits run (fit and test scoring);
    ``seconds_per_split`` its median per split; ``cpu_seconds_per_split`` the
    median CPU time of the process per split (all its threads).
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault((r["dataset"], r["method"]), []).append(r)
    out = []
    for (name, method), rs in sorted(groups.items(), key=lambda kv: (_order(kv[0][0]), _method_order(kv[0][1]))):
        rs = sorted(rs, key=lambda r: r["split"])
        rmse, rmse_se = mean_se([r["rmse"] for r in rs])
        ll, ll_se = mean_se([r["test_ll"] for r in rs])
        out.append(
            {
                "dataset": name,
                "method": method,
                "rmse": rmse,
                "rmse_se": rmse_se,
                "test_ll": ll,
                "test_ll_se": ll_se,
                "n_splits": len(rs),
                "splits": [r["split"] for r in rs],
                "seconds": float(sum(r["seconds"] for r in rs)),
                "seconds_per_split": float(np.median([r["seconds"] for r in rs])),
                "cpu_seconds_per_split": float(np.median([r.get("cpu_seconds", r["seconds"]) for r in rs])),
                "coverage_95": float(np.mean([r["coverage_95"] for r in rs])),
            }
        )
    return out


def stale_records(records: list[dict[str, Any]]) -> dict[tuple[str, str], list[int]]:
    """``(data set, method) -> splits`` whose recorded options differ from today's :func:`method_options`.

    A validated change of a data set's settings (:data:`NUTS_VARIANT`) makes its older records stale until they
    are rerun; the table says so instead of presenting them as results of the current settings.
    """
    out: dict[tuple[str, str], list[int]] = {}
    for r in records:
        if r["dataset"] not in SIZES or r["method"] not in METHODS or "options" not in r:
            continue
        _, p, h = SIZES[r["dataset"]]
        opts = method_options(r["method"], r["n_train"], p, h, dataset=r["dataset"])
        now = {k: (v._asdict() if hasattr(v, "_asdict") else v) for k, v in opts.items() if k != "progress"}
        if json.loads(json.dumps(now)) != r["options"]:
            out.setdefault((r["dataset"], r["method"]), []).append(int(r["split"]))
    return out


def _order(name: str) -> int:
    return DATASETS.index(name) if name in DATASETS else len(DATASETS)


def split_label(label: str) -> tuple[str, str]:
    """``(method, variant)`` of a method label, ``method`` or ``method[variant]`` (validation runs; ``base``)."""
    method, _, variant = label.partition("[")
    return method, variant.rstrip("]") or "base"


def _method_order(label: str) -> tuple[int, ...]:
    """Sort key of a method label, ``method`` or ``method[variant]`` (validation runs)."""
    method, variant = split_label(label)
    return (
        METHODS.index(method) if method in METHODS else len(METHODS),
        *[list(VARIANTS).index(v) if v in VARIANTS else len(VARIANTS) for v in variant.split("+")],
    )


def merge(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per-split records of ``old`` and ``new``; a new record replaces an old one with the same key."""
    key = lambda r: (r["dataset"], r["method"], int(r["split"]))
    merged = {key(r): r for r in old}
    merged.update({key(r): r for r in new})
    return [merged[k] for k in sorted(merged, key=lambda k: (_order(k[0]), k[1], k[2]))]


# --------------------------------------------------------------------------- published numbers and the table


def best_published(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """``(dataset, metric) -> {mean, stderr, method, decimals}``: lowest RMSE, highest test LL."""
    best: dict[tuple[str, str], dict[str, Any]] = {}
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            metric = row["metric"]
            value = float(row["mean"])
            k = (row["dataset"], metric)
            text = row["mean"]
            decimals = len(text.split(".")[1]) if "." in text else 0
            cur = best.get(k)
            better = cur is None or (value < cur["mean"] if metric == "rmse" else value > cur["mean"])
            if better:
                best[k] = {"mean": value, "stderr": float(row["stderr"]), "method": row["method"], "decimals": decimals}
    return best


def outcome(ours: float, best: dict[str, Any], metric: str) -> str:
    """``"win"``, ``"tie"`` or ``"lose"``: ``ours`` against the published best, at the published precision.

    Published tables round (naval's RMSE is "0.00"), so our value is rounded to at least the same
    number of decimals (two, the tables' usual precision) before comparing: better after rounding is a
    win, equal after rounding a tie, worse a loss.
    """
    dec = max(int(best["decimals"]), 2)
    mine = round(ours, dec)
    if mine == round(best["mean"], dec):
        return "tie"
    better = mine < best["mean"] if metric == "rmse" else mine > best["mean"]
    return "win" if better else "lose"


def wins(ours: float, best: dict[str, Any], metric: str) -> bool:
    """Whether ``ours`` is at least as good as the published best at the published precision (a win or a tie)."""
    return outcome(ours, best, metric) != "lose"


def strict_win(ours: float, best: dict[str, Any], metric: str) -> bool:
    """Whether ``ours``, unrounded, is strictly better than the published mean as printed."""
    return ours < best["mean"] if metric == "rmse" else ours > best["mean"]


def _fmt(mean: float, se: float) -> str:
    """``mean +- se``: 2 decimals, or two significant digits of a mean below 0.1 (naval's RMSE is ~3e-4)."""
    small = 0 < abs(mean) < 0.1
    digits = min(6, 1 - math.floor(math.log10(abs(mean)))) if small else 2
    return f"{mean:.{digits}f} +- {se:.{digits}f}"


def markdown(doc: dict[str, Any], published: dict[tuple[str, str], dict[str, Any]]) -> str:
    """The results table (generated, never typed): ours beside the best published numbers."""
    rows = doc["results"]
    lines = [
        "# UCI regression benchmark",
        "",
        "Generated by `benchmarks/uci.py` from `results/uci.json` and "
        "`../shared/data/uci/published_results.csv`; do not edit by hand.",
        "Protocol: the published splits; inputs and target standardised on the training split; RMSE and "
        "average test log-likelihood (LL) on the original target scale; mean +- standard error over the splits run.",
        "A cell compares our mean, rounded to the published precision (at least 2 decimals), with the best published "
        "mean (lowest RMSE, highest LL): better is a **win**, equal a *tie*, worse a loss. The goal counts a cell "
        "when it is at least as good (a win or a tie); the strict tally compares our unrounded mean with the "
        "published one and counts only a strictly better mean. Fewer splits than the literature's 20 (5 for "
        "protein) make our standard errors larger and our means noisier.",
        "",
        "| data set | method | splits | RMSE | best published RMSE | | test LL | best published LL | |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    tally: dict[str, dict[str, Any]] = {}
    won: dict[str, dict[str, list[str]]] = {"rmse": {}, "test_ll": {}}
    strict: dict[str, dict[str, list[str]]] = {"rmse": {}, "test_ll": {}}
    datasets_seen: dict[str, set[str]] = {}
    for r in rows:
        name, method = r["dataset"], r["method"]
        cells = [name, method, str(r["n_splits"])]
        t = tally.setdefault(
            method, {"rmse": [], "test_ll": [], "rmse_ties": [], "test_ll_ties": [], "rmse_strict": [],
                     "test_ll_strict": [], "datasets": 0}
        )  # fmt: skip
        t["datasets"] += 1
        datasets_seen.setdefault(method, set()).add(name)
        for metric, se in (("rmse", "rmse_se"), ("test_ll", "test_ll_se")):
            cells.append(_fmt(r[metric], r[se]))
            b = published.get((name, metric))
            if b is None:
                cells += ["n/a", ""]
                continue
            result = outcome(r[metric], b, metric)
            if result != "lose":
                t[metric].append(name)
                won[metric].setdefault(name, []).append(method)
            if result == "tie":
                t[f"{metric}_ties"].append(name)
            if strict_win(r[metric], b, metric):
                t[f"{metric}_strict"].append(name)
                strict[metric].setdefault(name, []).append(method)
            cells.append(f"{b['mean']:.{max(b['decimals'], 2)}f} ({b['method']})")
            cells.append({"win": "**win**", "tie": "*tie*", "lose": "lose"}[result])
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "## Tally against the goal (LL >= best on 5 of 7 data sets, RMSE <= best on 4 of 7)", ""]
    lines += [
        "| method | data sets run | LL at least as good | of which ties | LL strict | RMSE at least as good "
        "| of which ties | RMSE strict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    named = lambda names: f"{len(names)}" + (f" ({', '.join(names)})" if names else "")
    for method in METHODS:
        if method in tally:
            t = tally[method]
            lines.append(
                f"| {method} | {t['datasets']} of 7 | {named(t['test_ll'])} | {named(t['test_ll_ties'])} "
                f"| {named(t['test_ll_strict'])} | {named(t['rmse'])} | {named(t['rmse_ties'])} "
                f"| {named(t['rmse_strict'])} |"
            )
    either = lambda metric, table=won: [
        f"{d}: {' / '.join(ms)}" for d, ms in sorted(table[metric].items(), key=lambda kv: _order(kv[0]))
    ]
    lines += [
        "",
        "Data sets where at least one of our methods is at least as good (which ones after the colon): "
        f"LL {named(either('test_ll'))}; RMSE {named(either('rmse'))}. Strictly better (unrounded): "
        f"LL {named(either('test_ll', strict))}; RMSE {named(either('rmse', strict))}. `nuts_2x50` runs only on "
        "the data sets where the two-layer candidate won the validation (see Settings).",
    ]
    stale = stale_records(doc["records"])
    lines += [
        "",
        "Records run with settings other than today's `method_options` (a validated change not yet rerun; their "
        "rows above show the old settings' results): "
        + ("; ".join(f"{d} {m} splits {', '.join(map(str, s))}" for (d, m), s in stale.items()) if stale else "none")
        + ".",
    ]
    lines += ["", "## Settings", ""]
    lines += settings_lines()
    lines += ["", "## Time", ""]
    lines += timing_lines(doc)
    lines += ["", "## Runs", ""]
    for run in doc.get("runs", []):
        line = (
            f"- {run['date']}: `{run['command']}`; load average (1/5/15 min) at start "
            f"{_loads(run['loadavg_start'])}, at end {_loads(run['loadavg_end'])}; {run['seconds']:.0f} s"
        )
        if "jobs" in run:  # runs with worker processes also record cells, CPU time and the peak load
            line += (
                f" wall ({run['seconds'] / 60:.1f} min) with {run['jobs']} workers; "
                f"{run['cells_done']} of {run['cells_planned']} cells done"
                + (f", {run['cells_failed']} failed" if run["cells_failed"] else "")
                + (", **interrupted**" if run.get("interrupted") else "")
                + f"; CPU time of the cells {run['cpu_seconds'] / 60:.1f} min; "
                f"highest 1-min load average seen {run['loadavg_max_1min']:.1f}"
            )
        if run.get("note"):
            line += f"; {run['note']}"
        lines.append(line)
    return "\n".join(lines) + "\n"


#: Candidates scored on validation but not eligible for the choice because they would take the reduced run
#: past its 60-minute budget (their CPU time per split is in results/uci_validation.md; the reduced run's
#: extrapolation with the current choices is in results/uci.md): ``(data set, method, variant)``.
OVER_BUDGET: frozenset[tuple[str, str, str]] = frozenset(
    {
        ("naval-propulsion-plant", "nuts", "mid_long+map_100k+float32"),
        # about twice the CPU time per split of the chosen map_lbfgs1k+chains8+float32
        ("kin8nm", "nuts", "mid_long+map_lbfgs3k+chains8+float32"),
    }
)


def chosen_variants(doc: dict[str, Any], without: str | None = None) -> dict[tuple[str, str], str]:
    """``(data set, method) -> variant`` with the highest mean held-out LL in a validation results file.

    Only variants scored on the same splits as the data set's other candidates compete (a partial run cannot
    win by having fewer, easier splits), and none of :data:`OVER_BUDGET`. ``without``: leave out candidates
    made with this variant (e.g. ``"2x50"``: the choice within the literature's architecture).
    """
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in doc["results"]:
        method, variant = split_label(r["method"])
        if (r["dataset"], method, variant) in OVER_BUDGET:
            continue
        if without is None or without not in variant.split("+"):
            rows.setdefault((r["dataset"], method), []).append(r | {"variant": variant})
    out = {}
    for key, rs in rows.items():
        most = max(len(r["splits"]) for r in rs)
        out[key] = max((r for r in rs if len(r["splits"]) == most), key=lambda r: r["test_ll"])["variant"]
    return out


def validation_markdown(doc: dict[str, Any]) -> str:
    """The ``--validate`` table: every candidate's held-out RMSE and LL per data set, the choice marked."""
    chosen = chosen_variants(doc)
    lines = [
        "# UCI benchmark: validation of candidate settings",
        "",
        "Generated by `benchmarks/uci.py --validate` from `results/uci_validation.json`; do not edit by hand.",
        f"Each split's *training* rows only: {VALIDATION_FRACTION:.0%} of them (seeded) held out, the method "
        "fitted on the rest and scored on them (RMSE and average log-likelihood on the original scale, mean +- "
        "standard error over splits). The published test rows are never used. The candidate with the highest "
        "mean held-out LL (among those run on the most splits) is *chosen* for that data set and method; a "
        "candidate marked *over budget* would take the reduced run past its 60-minute budget and is not eligible.",
        "",
        "Candidates: " + "; ".join(f"`{k}`: {v}" for k, v in VARIANTS.items()) + ".",
        "",
        "| data set | method[variant] | splits | held-out RMSE | held-out LL | CPU s per split | |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in doc["results"]:
        method, variant = split_label(r["method"])
        mark = "**chosen**" if chosen.get((r["dataset"], method)) == variant else ""
        if (r["dataset"], method, variant) in OVER_BUDGET:
            mark = "over budget"
        lines.append(
            f"| {r['dataset']} | {r['method']} | {r['n_splits']} | {_fmt(r['rmse'], r['rmse_se'])} | "
            f"{_fmt(r['test_ll'], r['test_ll_se'])} | {r['cpu_seconds_per_split']:.0f} | {mark} |"
        )
    lines += ["", "## Runs", ""]
    lines += [
        f"- {run['date']}: `{run['command']}`; load average at start {_loads(run['loadavg_start'])}, at end "
        f"{_loads(run['loadavg_end'])}; {run['seconds']:.0f} s wall with {run['jobs']} workers"
        + (
            f"; stopped after {run['cells_done']} of {run['cells_planned']} cells"
            if run.get("interrupted") and "cells_planned" in run
            else ""
        )
        + (f"; {run['note']}" if run.get("note") else "")
        for run in doc.get("runs", [])
    ]
    return "\n".join(lines) + "\n"


def settings_lines() -> list[str]:
    """The per-method budgets of :func:`method_options` for each training-set size class (generated from the code)."""
    bounds = (0, *SIZE_CLASSES)
    classes = [
        (f"n_train <= {SIZE_CLASSES[0]}", SIZE_CLASSES[0]),
        (f"{SIZE_CLASSES[0]} < n_train <= {SIZE_CLASSES[1]}", SIZE_CLASSES[1]),
        (f"n_train > {SIZE_CLASSES[1]}", SIZE_CLASSES[1] + 1),
    ]
    members = {label: [d for d in DATASETS if sum(SIZES[d][0] > b for b in bounds[1:]) == i] for i, (label, _) in
               enumerate(classes)}  # fmt: skip
    lines = [
        "Budgets per method and training-set size, from `method_options` in `benchmarks/uci.py` (hidden units: "
        "50, 100 for protein; tanh). NUTS starts each chain at its own MAP estimate (`map`); the ensemble's "
        "`num_steps`/`patience` are the early-stopping stage on 10 % held-out training rows, then every member "
        "is refitted on all training rows for the median best step count.",
        "",
        "| method | size class (data sets) | settings |",
        "|---|---|---|",
    ]
    for method in METHODS:
        if method == "nuts_2x50":  # the nuts settings with a validated variant, listed below
            continue
        for label, n in classes:
            opts = method_options(method, n, 8, 50)
            shown = []
            for k, v in opts.items():
                if k in ("architecture", "activation", "progress", "method"):
                    continue
                if hasattr(v, "_asdict"):
                    v = ", ".join(f"{a}={b}" for a, b in v._asdict().items() if a in _MAP_SHOWN and b is not None)
                    v = f"({v})"
                shown.append(f"{k}={v}")
            lines.append(f"| {method} | {label} ({', '.join(members[label])}) | {'; '.join(shown)} |")
    chosen = [f"`nuts` on {d}: `{v}`" for d, v in NUTS_VARIANT.items() if v != "base"]
    chosen += [f"`nuts_2x50` on {d}: `{v}`" for d, v in NUTS_2X50.items()] or [
        "`nuts_2x50` on no data set (no two-layer candidate won its validation)"
    ]
    lines += [
        "",
        "Changes to these settings chosen per data set on held-out *training* rows (`--validate`, "
        "`results/uci_validation.md`; the candidate with the highest held-out LL, test rows unseen): "
        + ("; ".join(chosen) if chosen else "none")
        + ". Every other data set keeps the settings above. Candidates: "
        + "; ".join(f"`{k}`: {v}" for k, v in VARIANTS.items() if k != "base")
        + ".",
    ]
    return lines


_MAP_SHOWN = ("learning_rate", "num_steps", "num_epochs", "batch_size", "patience")


def _loads(v: list[float]) -> str:
    return "/".join(f"{x:.1f}" for x in v)


def _size_class(name: str) -> int:
    return sum(SIZES[name][0] > bound for bound in SIZE_CLASSES)


def _cost(name: str) -> float:
    """Relative cost of one gradient over the training set: ``n * hidden * (features + 3)``."""
    n, p, h = SIZES[name]
    return float(n * h * (p + 3))


def scaled_estimate(cpu: dict[tuple[str, str], float], name: str, method: str) -> tuple[float, str] | None:
    """CPU seconds per split of an unmeasured cell, scaled from the largest measured data set with the same settings.

    ``cpu_ref * cost(name) / cost(ref)`` (:func:`_cost`); ``None`` when no data set of the same size class
    (same method settings) was measured.
    """
    refs = [d for (d, m) in cpu if m == method and d in SIZES and _size_class(d) == _size_class(name)]
    if not refs:
        return None
    ref = max(refs, key=lambda d: SIZES[d][0])
    return cpu[(ref, method)] * _cost(name) / _cost(ref), ref


def timing_lines(doc: dict[str, Any]) -> list[str]:
    """Measured seconds per split and the extrapolated reduced and full runs (labelled as such)."""
    rows = doc["results"]
    wall = {(r["dataset"], r["method"]): r["seconds_per_split"] for r in rows}
    cpu = {(r["dataset"], r["method"]): r.get("cpu_seconds_per_split", r["seconds_per_split"]) for r in rows}
    methods = [m for m in METHODS if any(method_runs(m, d) for d in DATASETS) or any(k[1] == m for k in wall)]
    n_red = REDUCED_SPLITS[DATASETS[0]]
    n_red_protein = REDUCED_SPLITS["protein-tertiary-structure"]
    lines = [
        "Median seconds per split (fit + test scoring, JIT compilation included): wall time as measured on a "
        "machine shared with other jobs (see the load averages under Runs), and the worker's CPU time (Eigen "
        "limited to one thread per worker), our estimate of the wall time on an idle core (contention inflates "
        "CPU time somewhat, so it errs high; a cell with a free second core can also use part of it, CPU time "
        "above wall time). The reduced run "
        f"({n_red} splits, {n_red_protein} for protein) and the full run (every split) below are "
        "**extrapolations**, median per split x splits, in CPU time of one core (a whole run's measured wall "
        "time, with its workers in parallel, is under Runs). A cell not measured is, where possible, a "
        "*scaled estimate* (marked ~): the CPU time of the largest measured data set with the same settings "
        "times the ratio of `n_train x hidden x (features + 3)`; these enter only the second total.",
        "",
        "| data set | " + " | ".join(f"{m} wall / CPU s per split" for m in methods) + " | reduced run CPU s |",
        "|---|" + "---|" * (len(methods) + 1),
    ]
    totals = {"wall_reduced": 0.0, "cpu_reduced": 0.0, "cpu_full": 0.0, "scaled_reduced": 0.0}
    missing = []
    for name in DATASETS:
        cells, reduced = [name], 0.0
        for method in methods:
            key = (name, method)
            if not method_runs(method, name):
                cells.append("-")
                continue
            if key not in wall:
                est = scaled_estimate(cpu, name, method) if name in SIZES else None
                if est is None:
                    cells.append("not run")
                    missing.append(f"{name}/{method}")
                else:
                    cells.append(f"not run, ~{est[0]:.0f} (from {est[1]})")
                    totals["scaled_reduced"] += est[0] * REDUCED_SPLITS[name]
                continue
            cells.append(f"{wall[key]:.0f} / {cpu[key]:.0f}")
            reduced += cpu[key] * REDUCED_SPLITS[name]
            totals["wall_reduced"] += wall[key] * REDUCED_SPLITS[name]
            totals["cpu_full"] += cpu[key] * (5 if name == "protein-tertiary-structure" else 20)
        totals["cpu_reduced"] += reduced
        complete = all((name, m) in wall for m in methods if method_runs(m, name))
        cells.append(f"{reduced:.0f}" if complete else f"{reduced:.0f} (incomplete)" if reduced else "n/a")
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        f"Extrapolated reduced run: {totals['cpu_reduced'] / 60:.1f} min of CPU time (idle-machine estimate; "
        f"budget {REDUCED_BUDGET_MINUTES:.0f} min of wall time; the default {DEFAULT_JOBS} workers, one per core, "
        f"share it: about {totals['cpu_reduced'] / 60 / DEFAULT_JOBS:.1f} min of wall time on an idle machine), "
        f"{totals['wall_reduced'] / 60:.1f} min at the measured wall "
        f"times; extrapolated full run: {totals['cpu_full'] / 60:.1f} min of CPU time. Including the scaled "
        f"estimates (~) of unmeasured cells, the reduced run would take "
        f"{(totals['cpu_reduced'] + totals['scaled_reduced']) / 60:.1f} min of CPU time"
        + (f"; with no estimate at all: {', '.join(missing)}." if missing else "."),
        "",
        measured_run_line(doc),
    ]
    return lines


def measured_run_line(doc: dict[str, Any]) -> str:
    """The latest run that did every cell of the reduced run (with today's methods) end to end: its wall time."""
    planned = sum(REDUCED_SPLITS[d] for d in DATASETS for m in METHODS if method_runs(m, d))
    whole = [
        run
        for run in doc.get("runs", [])
        if run.get("cells_planned") == planned
        and run.get("cells_done") == planned
        and not run.get("cells_failed")
        and not run.get("interrupted")
    ]
    if not whole:
        return (
            f"Measured: no run of the whole reduced run ({planned} cells) is recorded with the current methods; "
            "the budget rests on the extrapolation above."
        )
    run = max(whole, key=lambda r: r["date"])
    minutes = run["seconds"] / 60
    verdict = "within" if minutes <= REDUCED_BUDGET_MINUTES else "over"
    return (
        f"Measured: the whole reduced run ({planned} cells) last ran end to end on {run['date'][:10]}: "
        f"**{minutes:.1f} min of wall time** with {run['jobs']} workers, {verdict} the "
        f"{REDUCED_BUDGET_MINUTES:.0f}-minute budget (load average at its start {_loads(run['loadavg_start'])}; "
        "its command and what else ran are under Runs)."
    )


# --------------------------------------------------------------------------- main


def _machine() -> dict[str, Any]:
    import jax

    import sigmabnn

    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "jax": jax.__version__,
        "sigmabnn": getattr(sigmabnn, "__version__", "dev"),
    }


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", default=",".join(DATASETS), help="comma-separated data set folders")
    p.add_argument("--methods", default=",".join(METHODS), help="comma-separated: nuts,bbb,ensemble")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--splits", type=int, help="first N splits of each data set (default: the reduced run's)")
    g.add_argument("--split-ids", help="comma-separated split numbers, e.g. 0,3")
    g.add_argument("--full", action="store_true", help="every split (the literature's 20; protein 5)")
    p.add_argument("--seed", type=int, default=0, help="base seed; split i uses seed + i")
    p.add_argument("--out", type=Path, help="results file (default results/uci.json, uci_validation.json)")
    p.add_argument(
        "--validate",
        action="store_true",
        help=f"score --variants on {VALIDATION_FRACTION:.0%} of each split's training rows held out (test rows "
        f"unseen; default {VALIDATION_SPLITS} splits); writes results/uci_validation.json",
    )
    p.add_argument("--variants", default="base", help=f"with --validate: comma-separated of {', '.join(VARIANTS)}")
    p.add_argument("--table-only", action="store_true", help="regenerate the Markdown table from the JSON")
    p.add_argument(
        "--merge-from", nargs="+", metavar="JSON", help="merge these results files into --out, regenerate the table"
    )
    p.add_argument(
        "--jobs", type=int, default=DEFAULT_JOBS, help=f"worker processes, one XLA thread each (default {DEFAULT_JOBS})"
    )
    p.add_argument("--smoke", action="store_true", help="tiny budgets: checks the pipeline, results meaningless")
    p.add_argument("--note", help="what else ran on the machine, recorded with the run (e.g. 'other jobs at nice 19')")
    return p.parse_args(argv)


def merge_docs(doc: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with the records and runs of ``other`` (another results file; its records replace same keys)."""
    runs = doc.get("runs", []) + [r for r in other.get("runs", []) if r not in doc.get("runs", [])]
    return doc | {"records": merge(doc.get("records", []), other["records"]), "runs": runs}


def _save(out: Path, doc: dict[str, Any], published: dict | None) -> None:
    """Write the results JSON (and the Markdown table) through the library's atomic writer.

    Imported here, in the parent only: workers import this module before they limit JAX's threads.
    """
    from sigmabnn.io.atomic import atomic_write_text

    doc["results"] = aggregate(doc["records"])
    atomic_write_text(out, json.dumps(doc, indent=1) + "\n")
    if doc.get("kind") == "validation":
        atomic_write_text(out.with_suffix(".md"), validation_markdown(doc))
    elif published is not None:
        atomic_write_text(out.with_suffix(".md"), markdown(doc, published))


def cells_for(args: argparse.Namespace, root: Path, datasets: list[str], methods: list[str]) -> list[tuple]:
    """The run's ``(data set, split, method, options)`` cells, the most expensive first (:func:`cell_cost`)."""
    cells = []
    variants = [v for v in args.variants.split(",") if v] if args.validate else ["base"]
    for v in variants:
        for part in v.split("+"):
            if part not in VARIANTS:
                raise ValueError(f"unknown variant {part!r}; choose from {', '.join(VARIANTS)}")
    for name in datasets:
        data = load_dataset(root, name)
        n_avail = len(data.train_index)
        if args.full:
            splits = list(range(n_avail))
        elif args.split_ids:
            splits = [int(s) for s in args.split_ids.split(",")]
        elif args.validate:
            splits = list(range(min(n_avail, args.splits or VALIDATION_SPLITS)))
        else:
            splits = list(range(min(n_avail, args.splits or REDUCED_SPLITS.get(name, 5))))
        for split in splits:
            if not 0 <= split < n_avail:
                raise ValueError(f"{name} has splits 0..{n_avail - 1}, not {split}")
            n_train, p = data.train_index[split].size, data.x.shape[1]
            for method in methods:
                if not (args.validate or method_runs(method, name)):
                    continue
                # validation scores candidates against the class's base settings, not the already chosen ones
                opts = method_options(method, n_train, p, data.n_hidden, dataset=None if args.validate else name)
                for variant in variants:
                    label, v_opts = method, opts
                    if args.validate:
                        label, v_opts = f"{method}[{variant}]", apply_variant(opts, variant)
                    if args.smoke:
                        v_opts = smoke_options(v_opts)
                    cells.append((name, split, label, v_opts, cell_cost(method, n_train, p, data.n_hidden)))
    cells.sort(key=lambda c: -c[4])
    return [c[:4] for c in cells]


def cell_cost(method: str, n_train: int, num_features: int, n_hidden: int) -> float:
    """A rough relative cost of one cell, only to schedule the largest first: ``n * hidden * (p + 3)`` x a weight."""
    return (
        n_train
        * n_hidden
        * (num_features + 3)
        * {"nuts": 1.0, "nuts_2x50": 3.0, "ensemble": 1.2, "bbb": 0.5}.get(method, 1.0)
    )


def smoke_options(opts: dict[str, Any]) -> dict[str, Any]:
    """Tiny budgets of the same methods (``--smoke``): checks the pipeline in seconds, results meaningless."""
    from sigmabnn.map import MAPConfig

    small = {"num_warmup": 10, "num_samples": 5, "num_chains": 1, "max_tree_depth": 3, "num_steps": 60}
    small |= {"num_mc_samples": 1, "num_members": 2, "patience": 20, "eval_every": 10}
    out = {k: (small[k] if k in small else v) for k, v in opts.items()}
    if out.get("map") is not None:
        out["map"] = MAPConfig(num_steps=20, patience=None, eval_every=10)
    if out["method"] == "bbb":
        out["num_samples"] = 20
    if out["method"] == "ensemble":
        out["eval_every"] = 10
    return out


#: XLA settings of a worker: one thread, so ``--jobs N`` workers share N cores without oversubscription.
WORKER_XLA_FLAGS = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def _init_worker() -> None:
    """Limit XLA (and BLAS) to one thread *before* JAX is imported in this worker process."""
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + WORKER_XLA_FLAGS).strip()
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    import jax

    jax.config.update("jax_enable_x64", True)


_DATA_CACHE: dict[tuple[str, str, bool], UCIData] = {}


def _run_cell(job: tuple[str, str, int, str, dict[str, Any], int, bool]) -> dict[str, Any]:
    """One cell in a worker: the record, or ``{"error": ...}`` (a failing cell must not end the run).

    ``validate``: the split's held-out *training* rows stand in for its test rows (:func:`validation_data`).
    """
    root, name, split, method, opts, seed, validate = job
    try:
        if (root, name, validate) not in _DATA_CACHE:
            data = load_dataset(Path(root), name)
            _DATA_CACHE[(root, name, validate)] = validation_data(data, seed) if validate else data
        return run_split(_DATA_CACHE[(root, name, validate)], split, method, seed=seed, opts=opts)
    except Exception as exc:  # reported by the parent, which keeps going
        return {"error": f"{type(exc).__name__}: {exc}", "dataset": name, "split": split, "method": method}


def main(argv: list[str] | None = None) -> int:
    """Run the cells over ``--jobs`` worker processes, merging and saving each record as it arrives."""
    import multiprocessing as mp
    import signal

    args = parse_args(argv)
    if args.out is None:
        args.out = RESULTS / ("uci_validation.json" if args.validate else "uci.json")
    root = shared_data_dir() / "uci"
    pub_path = root / "published_results.csv"
    published = best_published(pub_path) if pub_path.is_file() else None
    doc: dict[str, Any] = {"records": [], "runs": []}
    if args.out.is_file():
        doc = json.loads(args.out.read_text())
    if args.validate:
        doc["kind"] = "validation"
    if args.merge_from:
        for path in args.merge_from:
            try:
                doc = merge_docs(doc, json.loads(Path(path).read_text()))
            except (OSError, ValueError, KeyError) as exc:
                print(f"uci.py: cannot merge {path}: {exc}", file=sys.stderr)
                return 2
    if args.table_only or args.merge_from:
        _save(args.out, doc, published)
        return 0
    if not root.is_dir():
        print(f"uci.py: UCI data not found at {root} (set SIGMABNN_SHARED)", file=sys.stderr)
        return 2
    datasets = [d for d in args.datasets.split(",") if d]
    methods = [m for m in args.methods.split(",") if m]
    for m in methods:
        if m not in METHODS:
            print(f"uci.py: unknown method {m!r}; choose from {', '.join(METHODS)}", file=sys.stderr)
            return 2
    if args.smoke and args.out == RESULTS / "uci.json":
        print("uci.py: --smoke results are meaningless; give --out elsewhere", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("uci.py: --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        cells = cells_for(args, root, datasets, methods)
    except (OSError, ValueError) as exc:
        print(f"uci.py: {exc}", file=sys.stderr)
        return 2
    run = {
        "date": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "command": "python benchmarks/uci.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "jobs": args.jobs,
        "cells_planned": len(cells),
        "cells_done": 0,
        "cells_failed": 0,
        "cpu_seconds": 0.0,
        "loadavg_start": list(os.getloadavg()),
        "loadavg_end": list(os.getloadavg()),
        "loadavg_max_1min": os.getloadavg()[0],
        "seconds": 0.0,
        "machine": _machine(),
        **({"note": args.note} if args.note else {}),
    }
    doc.setdefault("runs", []).append(run)
    t0 = time.perf_counter()
    jobs = [(str(root), name, split, method, opts, args.seed, args.validate) for name, split, method, opts in cells]
    # spawn, not fork: every worker starts a fresh interpreter and sets its thread limits before importing JAX
    pool = mp.get_context("spawn").Pool(args.jobs, initializer=_init_worker, maxtasksperchild=None)
    previous = signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    status = 0
    try:
        for rec in pool.imap_unordered(_run_cell, jobs, chunksize=1):
            if "error" in rec:
                run["cells_failed"] += 1
                status = 1
                print(f"{rec['dataset']} split {rec['split']} {rec['method']}: FAILED {rec['error']}", flush=True)
            else:
                run["cells_done"] += 1
                run["cpu_seconds"] += rec["cpu_seconds"]
                print(
                    f"{rec['dataset']} split {rec['split']} {rec['method']}: rmse {rec['rmse']:.4f} "
                    f"test_ll {rec['test_ll']:.4f} cover95 {rec['coverage_95']:.3f} {rec['seconds']:.1f} s "
                    f"(cpu {rec['cpu_seconds']:.1f} s) load {rec['loadavg_1min'][1]:.1f}",
                    flush=True,
                )
                doc["records"] = merge(doc.get("records", []), [rec])
            run["seconds"], run["loadavg_end"] = time.perf_counter() - t0, list(os.getloadavg())
            run["loadavg_max_1min"] = max(run["loadavg_max_1min"], run["loadavg_end"][0])
            _save(args.out, doc, published)  # after every cell, so an interrupted run keeps its work
        pool.close()
    except KeyboardInterrupt:
        print("uci.py: interrupted; the finished cells are saved", file=sys.stderr)
        status = 130
    finally:
        pool.terminate()
        pool.join()
        signal.signal(signal.SIGTERM, previous)
    run["seconds"], run["loadavg_end"] = time.perf_counter() - t0, list(os.getloadavg())
    run["interrupted"] = status == 130
    _save(args.out, doc, published)
    return status


if __name__ == "__main__":
    sys.exit(main())
