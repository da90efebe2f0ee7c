"""Priors over network parameters.

:class:`GaussianPrior` is eq. (4.21) of the thesis draft: independent
zero-mean Gaussians on every kernel and bias entry, with a *precision*
(inverse variance) per layer, ``weight_precision[l]`` for the kernel of layer
``l`` and ``bias_precision[l]`` for its bias. The precisions may be fixed or
resampled by Gibbs updates (:mod:`sigmabnn.train.gibbs`); in both cases they
are passed in explicitly as arrays of shape ``[num_layers]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

from sigmabnn.model.mlp import MLP, Layer, Params

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)


def layer_sizes(mlp: MLP) -> tuple[tuple[int, int], ...]:
    """``(kernel_size, bias_size)`` per layer, as counts of scalars."""
    return tuple((n_in * n_out, n_out) for n_in, n_out in zip(mlp.widths[:-1], mlp.widths[1:]))


def squared_norms(params: Params) -> tuple[Array, Array]:
    """Per-layer ``(||W^l||^2, ||b^l||^2)``, each of shape ``[num_layers]``."""
    w = jnp.stack([jnp.sum(jnp.square(layer.kernel)) for layer in params])
    b = jnp.stack([jnp.sum(jnp.square(layer.bias)) for layer in params])
    return w, b


@dataclass(frozen=True)
class GaussianPrior:
    """Zero-mean Gaussian prior with per-layer precisions.

    Attributes:
        weight_precision: default precision ``lambda_W`` of kernel entries
            (1 / variance), used for every layer unless per-layer values are
            given to :meth:`precisions`.
        bias_precision: default precision ``lambda_b`` of bias entries.
    """

    weight_precision: float = 1.0
    bias_precision: float = 1.0

    def precisions(self, mlp: MLP, dtype: jnp.dtype = jnp.float64) -> tuple[Array, Array]:
        """Default ``(weight_precision, bias_precision)`` arrays, shape ``[num_layers]``."""
        n = mlp.num_layers
        return (
            jnp.full((n,), self.weight_precision, dtype),
            jnp.full((n,), self.bias_precision, dtype),
        )

    @staticmethod
    def log_prob(params: Params, weight_precision: Array, bias_precision: Array) -> Array:
        """Normalised log density of ``params`` (scalar).

        ``sum_l [ n_l/2 log(lambda_l / 2 pi) - lambda_l/2 ||theta_l||^2 ]`` over
        kernels and biases; the normalisation matters when the precisions are
        themselves sampled.
        """
        w2, b2 = squared_norms(params)
        nw = jnp.asarray([layer.kernel.size for layer in params], w2.dtype)
        nb = jnp.asarray([layer.bias.size for layer in params], b2.dtype)
        lw = 0.5 * nw * (jnp.log(weight_precision) - _LOG_2PI) - 0.5 * weight_precision * w2
        lb = 0.5 * nb * (jnp.log(bias_precision) - _LOG_2PI) - 0.5 * bias_precision * b2
        return jnp.sum(lw) + jnp.sum(lb)

    @staticmethod
    def sample(key: Array, mlp: MLP, weight_precision: Array, bias_precision: Array, dtype=jnp.float64) -> Params:
        """One draw of the parameters from the prior."""
        keys = jax.random.split(key, 2 * mlp.num_layers)
        layers = []
        for i, (n_in, n_out) in enumerate(zip(mlp.widths[:-1], mlp.widths[1:])):
            w = jax.random.normal(keys[2 * i], (n_in, n_out), dtype) / jnp.sqrt(weight_precision[i])
            b = jax.random.normal(keys[2 * i + 1], (n_out,), dtype) / jnp.sqrt(bias_precision[i])
            layers.append(Layer(w.astype(dtype), b.astype(dtype)))
        return tuple(layers)
