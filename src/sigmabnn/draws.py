"""Posterior draws: the sampled networks that every downstream step consumes.

Produced by exact sampling (:mod:`sigmabnn.train`), variational inference
(:mod:`sigmabnn.vi`, draws from q) or ensembles; consumed by prediction,
evaluation, diagnostics and the model file. It holds draws only: never a
point estimate, never sampler state.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.posterior import Hyperparameters

Array = jax.Array


class PosteriorDraws(NamedTuple):
    """Draws of network parameters and hyperparameters.

    Attributes:
        positions: flat parameters ``[chain, draw, num_params]``.
        hyper: :class:`Hyperparameters` whose leaves carry leading
            ``[chain, draw]`` axes (``noise_precision`` ``[chain, draw]``,
            ``weight_precision`` / ``bias_precision`` ``[chain, draw, num_groups]``, the prior's groups).
    """

    positions: Array
    hyper: Hyperparameters

    @property
    def num_chains(self) -> int:
        return int(self.positions.shape[0])

    @property
    def num_draws(self) -> int:
        """Draws per chain."""
        return int(self.positions.shape[1])

    @property
    def num_networks(self) -> int:
        """Total number of sampled networks (chains x draws)."""
        return self.num_chains * self.num_draws

    def flat(self) -> tuple[Array, Hyperparameters]:
        """Positions ``[T, num_params]`` and hyperparameters with leading ``[T]``, T = chains x draws."""
        t = self.num_networks
        return (
            self.positions.reshape(t, -1),
            jax.tree_util.tree_map(lambda a: a.reshape((t,) + a.shape[2:]), self.hyper),
        )


def broadcast_hyper(hyper: Hyperparameters, num_chains: int, num_draws: int) -> Hyperparameters:
    """Repeat fixed hyperparameters along new leading ``[chain, draw]`` axes."""
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (num_chains, num_draws) + jnp.shape(a)), hyper)
