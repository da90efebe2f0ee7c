"""Acquisition scores of a classifier (Gal, Islam & Ghahramani 2017, "Deep Bayesian active learning
with image data"): pure functions of every network's class probabilities ``p`` ``[T, n, K]``
(``T`` networks, ``n`` candidates, ``K`` classes; each ``p[t, i]`` sums to 1), in nats.

- ``max_entropy``: ``H[mean_t p_t]``, the predictive entropy (Shannon 1948);
- ``bald``: ``H[mean_t p_t] - mean_t H[p_t]``, the mutual information between the label and the
  network (Houlsby et al. 2011, "Bayesian active learning for classification and preference
  learning"): high where the networks are each confident but disagree;
- ``variation_ratios``: ``1 - max_k mean_t p_tk`` (Freeman 1965), the probability mass off the
  predicted class;
- ``random``: uniform scores (a seeded baseline).

Higher is more informative; :func:`select_batch` takes the ``b`` highest (ties to the lower index).
A batch of the ``b`` highest single-point scores tends to hold near-duplicates (the neighbours of
the most uncertain point all score high); :func:`stochastic_batch` instead draws the batch without
replacement with probabilities proportional to ``score^beta`` (``"power"``) or ``exp(beta score)``
(``"softmax"``), the stochastic batch acquisition of Kirsch et al. (2023), "Stochastic batch
acquisition: a simple baseline for deep active learning" (TMLR).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sigmabnn.names import CLASS_ACQUISITION_CRITERIA

Array = jax.Array

__all__ = [
    "CLASSIFICATION_CRITERIA",
    "bald",
    "classification_scores",
    "max_entropy",
    "predictive_entropy",
    "select_batch",
    "stochastic_batch",
    "variation_ratios",
]

CLASSIFICATION_CRITERIA: tuple[str, ...] = CLASS_ACQUISITION_CRITERIA
"""The criteria :func:`classification_scores` knows."""

STOCHASTIC_MODES: tuple[str, ...] = ("power", "softmax")
"""The distributions :func:`stochastic_batch` draws from."""


def predictive_entropy(p: Array) -> Array:
    """``-sum_k p_k log p_k`` over the last axis (``0 log 0 = 0``)."""
    p = jnp.asarray(p)
    safe = jnp.where(p > 0, p, 1.0)
    return -jnp.sum(jnp.where(p > 0, p * jnp.log(safe), 0.0), axis=-1)


def max_entropy(p: Array) -> Array:
    """``H[mean_t p_t]`` ``[n]`` of per-network probabilities ``[T, n, K]``."""
    return predictive_entropy(jnp.mean(jnp.asarray(p), axis=0))


def bald(p: Array) -> Array:
    """``H[mean_t p_t] - mean_t H[p_t]`` ``[n]`` (clipped at 0 against rounding)."""
    p = jnp.asarray(p)
    return jnp.maximum(max_entropy(p) - jnp.mean(predictive_entropy(p), axis=0), 0.0)


def variation_ratios(p: Array) -> Array:
    """``1 - max_k mean_t p_tk`` ``[n]``."""
    return 1.0 - jnp.max(jnp.mean(jnp.asarray(p), axis=0), axis=-1)


def classification_scores(rng_key: Array, criterion: str, p: Array) -> Array:
    """Scores ``[n]`` of ``criterion`` (one of :data:`CLASSIFICATION_CRITERIA`); ``rng_key`` is used by ``random``."""
    if criterion == "bald":
        return bald(p)
    if criterion == "max_entropy":
        return max_entropy(p)
    if criterion == "variation_ratios":
        return variation_ratios(p)
    if criterion == "random":
        return jax.random.uniform(rng_key, (jnp.asarray(p).shape[1],))
    raise ValueError(f"unknown criterion {criterion!r}; choose from {', '.join(CLASSIFICATION_CRITERIA)}")


def select_batch(scores: Array, size: int) -> Array:
    """Indices ``[size]`` of the ``size`` highest scores, highest first (a stable sort: ties to the lower index)."""
    order = jnp.argsort(-jnp.asarray(scores), stable=True)
    return order[: int(size)]


def stochastic_batch(rng_key: Array, scores: Array, size: int, *, mode: str = "power", beta: float = 1.0) -> Array:
    """Indices ``[size]`` drawn without replacement with probability ``~ score^beta`` or ``~ exp(beta score)``.

    The Gumbel-top-k trick: the ``size`` largest of ``log w_i + g_i`` with ``g_i`` independent
    standard Gumbel noise are a draw without replacement from the weights ``w_i`` (Kool, van Hoof &
    Welling 2019), so the first index has probability ``w_i / sum_j w_j``. ``"power"`` takes
    ``log w = beta log(score)`` (scores ``>= 0``; a zero score is drawn only once every positive one
    is); ``"softmax"`` takes ``log w = beta score``. ``beta -> inf`` tends to :func:`select_batch`.
    """
    if mode not in STOCHASTIC_MODES:
        raise ValueError(f"unknown stochastic batch mode {mode!r}; choose from {', '.join(STOCHASTIC_MODES)}")
    s = jnp.asarray(scores, jnp.float64)
    if mode == "power":
        log_w = jnp.where(s > 0, beta * jnp.log(jnp.where(s > 0, s, 1.0)), -jnp.inf)
    else:
        log_w = beta * s
    keys = log_w + jax.random.gumbel(rng_key, s.shape, jnp.float64)
    # -inf weights (zero scores) stay behind every finite key; among themselves ties go to the lower index
    order = jnp.argsort(-jnp.where(jnp.isfinite(keys), keys, -jnp.finfo(jnp.float64).max), stable=True)
    return order[: int(size)]
