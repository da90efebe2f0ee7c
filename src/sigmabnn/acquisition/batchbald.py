"""BatchBALD: a batch of classification candidates chosen greedily by their joint mutual information with the
networks (Kirsch, van Amersfoort & Gal 2019, "BatchBALD: efficient and diverse batch acquisition for deep
Bayesian active learning", NeurIPS, Algorithm 1).

The networks ``t = 1..T`` (posterior draws or ensemble members, equally weighted) give class probabilities
``p[t, i, :]`` for candidate ``i``. For a batch ``B`` the score is the mutual information between the batch's
labels and the network,

    I(y_B; w) = H[y_B] - mean_t sum_{i in B} H[p_t(y_i)],

where the labels are independent given the network, so the second term is a sum, and ``y_B``'s joint is the
mixture ``p(y_B) = mean_t prod_{i in B} p_t(y_i)``. The batch grows greedily: each step adds the candidate
that maximises ``I(y_{B + i}; w)``; the first pick is BALD's best. (The score is submodular, so the greedy
batch is within ``1 - 1/e`` of the best batch of its size.) A near-duplicate of a picked candidate adds
little: once the picked label is known, the networks it leaves agree on the duplicate too.

The joint entropy ``H[y_{B + i}]`` has ``K^{|B|+1}`` label configurations; it is estimated from
``num_samples`` configurations of the picked labels drawn from the mixture (a network ``t_s`` uniformly per
sample, then each picked label from ``p[t_s]``):

    H[y_{B + i}] ~ -1/S sum_s sum_y [q_s(y) / P_s] log q_s(y),
    q_s(y) = mean_t P_{s,t} p_t(y_i = y),   P_{s,t} = prod_{j in B} p_t(y_j = c_{s,j}),   P_s = mean_t P_{s,t},

an unbiased importance-weighted average, exact for the first pick. ``P_{s,t}`` is kept as a logarithm
and rescaled per sample before exponentiating, so long batches do not underflow.

Shapes: ``p`` ``[T, n, K]`` (float64 preferred: the products of up to ``size`` probabilities); the
result is ``size`` distinct candidate indices ``[size]`` (int32) in the order picked.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.acquisition.classification import predictive_entropy

Array = jax.Array

__all__ = ["BATCHBALD_SAMPLES", "BatchBaldState", "batchbald_batch", "joint_entropy"]

BATCHBALD_SAMPLES = 1000
"""Default number of sampled label configurations of the picked candidates."""

_TINY = 1e-300


class BatchBaldState(NamedTuple):
    """The greedy loop's state: per sample, ``log P_{s,t}`` ``[S, T]``; the picks so far ``[size]`` and a
    taken mask ``[n]``."""

    log_joint: Array
    picks: Array
    taken: Array


def joint_entropy(log_joint: Array, p: Array) -> Array:
    """Estimated ``H[y_B, y_i]`` ``[n]`` for every candidate ``i``, from the sampled ``log P_{s,t}`` ``[S, T]``
    of the picked labels and the probabilities ``p`` ``[T, n, K]`` (module docstring)."""
    shift = jnp.max(log_joint, axis=1, keepdims=True)  # [S, 1]
    weights = jnp.exp(log_joint - shift)  # [S, T], each row's largest entry 1
    q = jnp.einsum("st,tnk->snk", weights, p) / p.shape[0]  # q_s(y) / exp(shift_s)
    prior = jnp.mean(weights, axis=1)  # P_s / exp(shift_s)
    log_q = jnp.log(jnp.maximum(q, _TINY)) + shift[:, :, None]
    return -jnp.mean(jnp.sum(q / prior[:, None, None] * log_q, axis=-1), axis=0)


@partial(jax.jit, static_argnames=("size", "num_samples"))
def batchbald_batch(rng_key: Array, p: Array, size: int, *, num_samples: int = BATCHBALD_SAMPLES) -> Array:
    """The ``size`` candidates BatchBALD picks from per-network class probabilities ``p`` ``[T, n, K]``:
    distinct indices ``[size]`` (int32), in the order of the greedy steps. ``rng_key`` draws the sampled
    label configurations; ``size <= n``."""
    p = jnp.asarray(p)
    t, n, _ = p.shape
    conditional = jnp.mean(predictive_entropy(p), axis=0)  # [n]: mean_t H[p_t(y_i)]
    key_nets, key_labels = jax.random.split(rng_key)
    nets = jax.random.randint(key_nets, (num_samples,), 0, t)  # the network each sample is drawn from
    log_p = jnp.log(jnp.maximum(p, _TINY))

    def step(k: int, state: BatchBaldState) -> BatchBaldState:
        score = joint_entropy(state.log_joint, p) - conditional  # the picked ones' terms are common to all i
        best = jnp.argmax(jnp.where(state.taken, -jnp.inf, score))
        labels = jax.random.categorical(jax.random.fold_in(key_labels, k), log_p[nets, best])  # [S]
        log_joint = state.log_joint + log_p[:, best, :][:, labels].T  # + log p_t(y_best = c_s)
        return BatchBaldState(log_joint, state.picks.at[k].set(best.astype(jnp.int32)), state.taken.at[best].set(True))

    start = BatchBaldState(jnp.zeros((num_samples, t), p.dtype), jnp.zeros(size, jnp.int32), jnp.zeros(n, bool))
    return jax.lax.fori_loop(0, size, step, start).picks
