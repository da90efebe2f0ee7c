"""Conjugate Gibbs updates of a BNN's precisions (Neal 1996, hierarchical BNN).

With Gamma hyperpriors (shape ``a``, rate ``b``) on the precisions, the
conditional posterior of every precision given the network parameters
``theta`` and the data is again Gamma, so it is sampled exactly between
weight updates (R. M. Neal, *Bayesian Learning for Neural Networks*,
Springer 1996, sec. 3.2 / 4.1):

- noise precision of the homoscedastic Gaussian likelihood,
  ``lambda | theta, D ~ Gamma(a_noise + N / 2, b_noise + SSE / 2)``, where
  ``N`` is the number of target values (``y.size``) and
  ``SSE = sum (y - f(x; theta))^2``;
- kernel precision of layer ``l``,
  ``lambda_W^l | theta ~ Gamma(a_W + n_l / 2, b_W + ||W^l||^2 / 2)`` with
  ``n_l`` the number of kernel entries of that layer;
- bias precision of layer ``l``, likewise with the bias vector.

Gamma(shape, rate) draws are ``jax.random.gamma(key, shape) / rate``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.posterior import BNN, Data, Hyperparameters
from sigmabnn.model.priors import layer_sizes, squared_norms

Array = jax.Array

__all__ = ["HyperPrior", "GibbsFn", "make_gibbs_fn", "noise_conditional", "prior_conditionals"]

GibbsFn = Callable[[Array, Array, Hyperparameters], Hyperparameters]


class HyperPrior(NamedTuple):
    """Gamma(shape, rate) hyperpriors on the precisions (mean ``shape / rate``).

    A Gamma(a, b) prior on a precision acts like ``2 a`` pseudo-observations
    with mean square ``b / a``. The defaults are weakly informative: one
    pseudo-observation pair (``a = 1``, an exponential prior) centred on the
    default fixed values of :class:`~sigmabnn.model.likelihoods.Gaussian`
    and :class:`~sigmabnn.model.priors.GaussianPrior`.

    Attributes:
        noise_shape: dimensionless shape of the noise-precision prior.
        noise_rate: rate, in (target units)^2; default 0.01, i.e. prior mean
            precision 100 (noise std 0.1 target units, for standardised targets).
        weight_shape: dimensionless shape of every layer's kernel-precision prior.
        weight_rate: rate, in (kernel units)^2; default 1 (prior mean precision 1).
        bias_shape: dimensionless shape of every layer's bias-precision prior.
        bias_rate: rate, in (bias units)^2; default 1.
    """

    noise_shape: float = 1.0
    noise_rate: float = 0.01
    weight_shape: float = 1.0
    weight_rate: float = 1.0
    bias_shape: float = 1.0
    bias_rate: float = 1.0


def _check(hyperprior: HyperPrior) -> None:
    for name, value in hyperprior._asdict().items():
        if not value > 0:
            raise ValueError(f"hyperprior {name} must be positive, got {value}")


def noise_conditional(bnn: BNN, data: Data, hyperprior: HyperPrior, position: Array) -> tuple[Array, Array]:
    """``(shape, rate)`` of the Gamma conditional of the noise precision given ``position`` (scalars)."""
    f = bnn.apply(bnn.unflatten(position), data.x)
    y = data.y if data.y.ndim == 2 else data.y[:, None]
    r = y - f
    sse = jnp.sum(jnp.square(r))
    dtype = position.dtype
    return (
        jnp.asarray(hyperprior.noise_shape + 0.5 * r.size, dtype),
        jnp.asarray(hyperprior.noise_rate, dtype) + 0.5 * sse,
    )


def prior_conditionals(bnn: BNN, hyperprior: HyperPrior, position: Array) -> tuple[Array, Array, Array, Array]:
    """Per-layer Gamma conditionals ``(weight_shape, weight_rate, bias_shape, bias_rate)``, each ``[num_layers]``."""
    w2, b2 = squared_norms(bnn.unflatten(position))
    sizes = layer_sizes(bnn.mlp)
    dtype = position.dtype
    nw = jnp.asarray([s[0] for s in sizes], dtype)
    nb = jnp.asarray([s[1] for s in sizes], dtype)
    return (
        hyperprior.weight_shape + 0.5 * nw,
        hyperprior.weight_rate + 0.5 * w2,
        hyperprior.bias_shape + 0.5 * nb,
        hyperprior.bias_rate + 0.5 * b2,
    )


def _gamma(key: Array, shape: Array, rate: Array) -> Array:
    return jax.random.gamma(key, shape, dtype=shape.dtype) / rate


def make_gibbs_fn(
    bnn: BNN,
    data: Data,
    hyperprior: HyperPrior | None = None,
    learn_noise: bool = True,
    learn_prior: bool = True,
) -> GibbsFn:
    """Build ``gibbs_fn(rng_key, position [d], hyper) -> Hyperparameters``.

    Draws the noise precision (if ``learn_noise``) and the per-layer kernel
    and bias precisions (if ``learn_prior``) from their exact conditionals
    given ``position``; the other fields are returned unchanged. Pure and
    jittable; ``jax.vmap`` it over chains.

    Raises:
        ValueError: ``learn_noise`` with a likelihood other than the
            homoscedastic Gaussian, or a non-positive hyperprior parameter.
    """
    hyperprior = HyperPrior() if hyperprior is None else hyperprior
    _check(hyperprior)
    data = Data(
        jnp.asarray(data.x, bnn.jdtype),
        jnp.asarray(data.y, bnn.jdtype) if learn_noise else data.y,
        data.noise_std,
    )
    if learn_noise and bnn.likelihood.name != "gaussian":
        raise ValueError(f"learning the noise precision needs the 'gaussian' likelihood, not {bnn.likelihood.name!r}")

    def gibbs_fn(rng_key: Array, position: Array, hyper: Hyperparameters) -> Hyperparameters:
        key_noise, key_w, key_b = jax.random.split(rng_key, 3)
        noise, weight, bias = hyper
        if learn_noise:
            noise = _gamma(key_noise, *noise_conditional(bnn, data, hyperprior, position)).astype(noise.dtype)
        if learn_prior:
            ws, wr, bs, br = prior_conditionals(bnn, hyperprior, position)
            weight = _gamma(key_w, ws, wr).astype(weight.dtype)
            bias = _gamma(key_b, bs, br).astype(bias.dtype)
        return Hyperparameters(noise, weight, bias)

    return gibbs_fn
