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

The candidates are scored :data:`BLOCK` at a time, so memory is ``S x BLOCK x K`` floats whatever ``n``;
a greedy step costs ``S x T x n x K`` multiply-adds.

The batch's information about the network cannot exceed the entropy of the network itself: with ``T``
equally weighted networks, ``I(y_B; w) <= log T`` nats. Once the picks' labels would nearly identify the
network (a few picks when ``T`` is an ensemble of 8), the gains left are near zero and the later picks
are set by the Monte-Carlo noise of the estimate; BatchBALD wants many networks (posterior draws).

Shapes: ``p`` ``[T, n, K]`` (float64 preferred: the products of up to ``size`` probabilities); the
result is ``size`` distinct candidate indices ``[size]`` (int32) in the order picked and each pick's
gain ``[size]`` (nats): the estimated ``I(y_i; w | y_B)`` it added to the batch's score, the first pick's
its BALD score.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn import compiler
from sigmabnn.acquisition.classification import predictive_entropy

Array = jax.Array

__all__ = ["BATCHBALD_SAMPLES", "BLOCK", "BatchBaldState", "batchbald_batch", "joint_entropy"]

BATCHBALD_SAMPLES = 1000
"""Default number of sampled label configurations of the picked candidates."""
BLOCK = 256
"""Candidates whose joint entropy is estimated at once."""

_TINY = 1e-300


class BatchBaldState(NamedTuple):
    """The greedy loop's state: per sample, ``log P_{s,t}`` ``[S, T]``; the estimated ``H[y_B]`` of the picks
    (nats); the picks so far ``[size]``, their gains ``[size]`` and a taken mask ``[n]``."""

    log_joint: Array
    entropy: Array
    picks: Array
    gains: Array
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


def _blocked_joint_entropy(log_joint: Array, blocks: Array) -> Array:
    """:func:`joint_entropy` of the candidates in ``blocks`` ``[b, T, BLOCK, K]``, by block: ``[b * BLOCK]``."""
    return jax.lax.map(lambda block: joint_entropy(log_joint, block), blocks).reshape(-1)


@compiler.jit(static_argnames=("size", "num_samples"))
def batchbald_batch(
    rng_key: Array, p: Array, size: int, *, num_samples: int = BATCHBALD_SAMPLES
) -> tuple[Array, Array]:
    """The ``size`` candidates BatchBALD picks from per-network class probabilities ``p`` ``[T, n, K]``:
    ``(indices [size] int32, gains [size])``, distinct indices in the order of the greedy steps and each
    pick's estimated gain in nats (module docstring). ``rng_key`` draws the sampled label configurations;
    ``size <= n``."""
    p = jnp.asarray(p)
    t, n, k = p.shape
    padded = -(-n // BLOCK) * BLOCK
    blocks = jnp.pad(p, ((0, 0), (0, padded - n), (0, 0)), constant_values=1.0 / k)
    blocks = blocks.reshape(t, padded // BLOCK, BLOCK, k).transpose(1, 0, 2, 3)
    conditional = jnp.mean(predictive_entropy(p), axis=0)  # [n]: mean_t H[p_t(y_i)]
    key_nets, key_labels = jax.random.split(rng_key)
    nets = jax.random.randint(key_nets, (num_samples,), 0, t)  # the network each sample is drawn from
    log_p = jnp.log(jnp.maximum(p, _TINY))

    def step(i: int, state: BatchBaldState) -> BatchBaldState:
        joint = _blocked_joint_entropy(state.log_joint, blocks)[:n]  # H[y_B, y_c] for every candidate c
        score = jnp.where(state.taken, -jnp.inf, joint - conditional)  # the picks' own terms are common to all c
        best = jnp.argmax(score)
        labels = jax.random.categorical(jax.random.fold_in(key_labels, i), log_p[nets, best])  # [S]
        log_joint = state.log_joint + log_p[:, best, :][:, labels].T  # + log p_t(y_best = c_s)
        return BatchBaldState(
            log_joint,
            joint[best],
            state.picks.at[i].set(best.astype(jnp.int32)),
            state.gains.at[i].set(score[best] - state.entropy),
            state.taken.at[best].set(True),
        )

    zero = jnp.zeros((), p.dtype)
    start = BatchBaldState(
        jnp.zeros((num_samples, t), p.dtype), zero, jnp.zeros(size, jnp.int32), jnp.zeros(size, p.dtype),
        jnp.zeros(n, bool),
    )  # fmt: skip
    end = jax.lax.fori_loop(0, size, step, start)
    return end.picks, end.gains
