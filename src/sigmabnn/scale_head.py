"""Starting points for a mean-and-scale network (:class:`~sigmabnn.model.likelihoods.HeteroscedasticStudentT`).

A mean-and-scale head trained from random weights can explain a badly fitted region by a large
scale instead of fitting it. :func:`scale_head_starts` therefore fits the mean first and starts
the scale where the residuals put it (the recipe of the exploration in ``docs/nlo_research.md``,
section 5):

1. MAP of the mean network alone (the same hidden layers, ``t`` outputs) under the homoscedastic
   Gaussian likelihood at its default precision, one fit per start
   (:func:`sigmabnn.map.pretrain_map`);
2. the maximum-likelihood Student-t scale ``s0`` of the pooled residuals of these fits (the EM
   fixed point of :func:`sigmabnn.train.gibbs.initial_noise_precision`);
3. each start of the wide network copies the mean network's weights, with zero kernel and bias
   ``softplus^-1(s0 - min_scale)`` on the scale outputs, so it begins at the homoscedastic fit.

The caller then runs MAP on the heteroscedastic Student-t log-posterior from these starts
(:func:`sigmabnn.train.fit_mcmc` with ``initial_positions``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sigmabnn.map import MAPConfig, pretrain_map
from sigmabnn.model.build import without_variance_head
from sigmabnn.model.likelihoods import HeteroscedasticStudentT, StudentT
from sigmabnn.model.mlp import Layer, flatten
from sigmabnn.model.posterior import BNN, Data
from sigmabnn.train.gibbs import HyperPrior, initial_noise_precision
from sigmabnn.vi.meanfield import rho_from_std as inverse_softplus

Array = jax.Array

__all__ = ["mean_network", "scale_head_starts", "widen_to_scale_head"]


def scale_head_starts(
    rng_key: Array,
    bnn: BNN,
    data: Data,
    map_config: MAPConfig,
    num_starts: int,
    val_data: Data | None = None,
) -> tuple[Array, Array]:
    """Starts ``[num_starts, d]`` for ``bnn`` (a heteroscedastic Student-t BNN) and the scale ``s0`` they begin at.

    Args:
        rng_key: PRNG key of the mean network's MAP fits.
        bnn: the model; its likelihood must be :class:`HeteroscedasticStudentT` and its last
            layer ``2 t`` wide.
        data, val_data: training (and optional validation) data, standardised, ``y`` ``[n, t]``.
        map_config: MAP settings of step 1 (the module docstring).
        num_starts: number of starts (one per chain).

    Returns:
        ``(positions [num_starts, d], s0)``: positions in the BNN's dtype; ``s0`` the scalar
        starting scale in standardised target units.
    """
    mean_bnn = mean_network(bnn)
    positions, _ = pretrain_map(
        rng_key, mean_bnn, data, mean_bnn.default_hyperparameters(), map_config, val_data, num_starts=num_starts
    )
    return widen_to_scale_head(bnn, positions, data)


def mean_network(bnn: BNN) -> BNN:
    """The mean network of ``bnn`` (a heteroscedastic Student-t BNN): the same hidden layers, ``t`` outputs,
    the homoscedastic Gaussian likelihood at its default precision (step 1 of the module docstring)."""
    lik = bnn.likelihood
    if not isinstance(lik, HeteroscedasticStudentT):
        raise ValueError(f"scale_head_starts needs the hetero_student_t likelihood, got {lik.name!r}")
    return without_variance_head(bnn)


def widen_to_scale_head(bnn: BNN, positions: Array, data: Data) -> tuple[Array, Array]:
    """Steps 2 and 3 of the module docstring: ``(positions [k, d], s0)`` of ``bnn`` from its mean network's
    fitted ``positions`` ``[k, d_mean]`` (:func:`mean_network`) and the training ``data``."""
    mean_bnn = mean_network(bnn)
    lik = bnn.likelihood
    robust = BNN(mlp=mean_bnn.mlp, prior=mean_bnn.prior, likelihood=StudentT(df=lik.df), dtype=bnn.dtype)
    tau = initial_noise_precision(robust, data, HyperPrior(), positions)
    s0 = 1.0 / jnp.sqrt(tau)
    raw0 = inverse_softplus(jnp.maximum(s0 - lik.min_scale, 0.1 * lik.min_scale))

    def widen(position: Array) -> Array:
        layers = mean_bnn.unflatten(position)
        last = layers[-1]
        head = Layer(
            jnp.concatenate([last.kernel, jnp.zeros_like(last.kernel)], axis=1),
            jnp.concatenate([last.bias, jnp.full_like(last.bias, raw0)]),
        )
        return flatten((*layers[:-1], head))

    return jax.vmap(widen)(positions).astype(bnn.jdtype), s0
