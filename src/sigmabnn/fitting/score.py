"""Score a fitted model on its own rows: the learnt noise std and the metrics of the report.

The metrics (:func:`sigmabnn.evaluate.metrics.evaluate`) are those of the training and validation
rows, at most :data:`METRICS_MAX_ROWS` of each (a subset drawn with the run's seed).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from sigmabnn import compiler
from sigmabnn.draws import PosteriorDraws
from sigmabnn.evaluate.metrics import evaluate
from sigmabnn.fitted import FittedModel
from sigmabnn.fitting.prepare import PreparedData
from sigmabnn.fitting.spec import FitSpec
from sigmabnn.model.posterior import BNN
from sigmabnn.names import ENSEMBLE_METHODS

__all__ = ["METRICS_MAX_ROWS", "metrics", "noise_std", "subset"]

#: Training/validation rows used for the metrics in the report (a seeded subset of larger sets).
METRICS_MAX_ROWS = 5000


def subset(n: int, seed: int) -> np.ndarray:
    """The rows ``[k]`` scored of ``n``: all up to :data:`METRICS_MAX_ROWS`, else a sorted seeded subset."""
    if n <= METRICS_MAX_ROWS:
        return np.arange(n)
    return np.sort(np.random.default_rng(seed).permutation(n)[:METRICS_MAX_ROWS])


def _noise_variance_factor(likelihood: Any) -> float:
    """Noise variance times the noise precision: 1, or ``df / (df - 2)`` for Student-t noise."""
    df = getattr(likelihood, "df", None) if likelihood.name == "student_t" else None
    return 1.0 if df is None else df / (df - 2.0)


def _mean_noise_std(bnn: BNN, draws: PosteriorDraws, z: np.ndarray) -> float:
    """Mean over networks and points ``z`` of a per-point noise std (model units; heteroscedastic heads)."""
    positions = jnp.asarray(np.asarray(draws.positions).reshape(draws.num_networks, -1), bnn.jdtype)

    def one(p, z):
        return jnp.mean(jnp.sqrt(bnn.likelihood.aleatoric_variance(bnn.apply(bnn.unflatten(p), z), 1.0)))

    # the points are an argument, not a constant of the compiled code (sigmabnn.compile_cache)
    every = compiler.jit(lambda ps, z: jax.lax.map(lambda p: one(p, z), ps, batch_size=64))
    return float(np.mean(np.asarray(every(positions, jnp.asarray(z, bnn.jdtype)), np.float64)))


def noise_std(spec: FitSpec, bnn: BNN, draws: PosteriorDraws, data: PreparedData) -> float | None:
    """Posterior mean of the learnt noise std in log-space target units; ``None`` for a known noise, an ensemble
    or a classifier.

    ``hetero_student_t``: the mean over the networks and (at most :data:`METRICS_MAX_ROWS`) training rows.
    """
    if spec.data.noise_column is not None or spec.method.name in ENSEMBLE_METHODS or spec.is_classifier:
        return None
    scale = float(data.y_transform.scale[0])
    if bnn.likelihood.name == "hetero_student_t":
        z = data.train_data.x[subset(data.train.n, spec.seed)]
        return _mean_noise_std(bnn, draws, z) * scale
    noise_prec = np.asarray(draws.hyper.noise_precision, dtype=np.float64)
    return float(np.mean(np.sqrt(_noise_variance_factor(bnn.likelihood) / noise_prec)) * scale)


def metrics(fitted: FittedModel, data: PreparedData, seed: int) -> dict[str, Any]:
    """``train``/``val`` -> :func:`~sigmabnn.evaluate.metrics.evaluate` on (a subset of) those rows."""
    out: dict[str, Any] = {}
    for name, split in (("train", data.train), ("val", data.val)):
        if split.n == 0:
            continue
        rows = subset(split.n, seed)
        y = split.y[rows] if fitted.classes is None else fitted.classes.decode(split.y[rows].astype(np.int64))
        out[name] = evaluate(fitted, split.x[rows], y)
    return out
