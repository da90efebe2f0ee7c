"""The mean-field Gaussian variational family q(w | mu, rho).

``q(w | mu, rho) = prod_j N(w_j; mu_j, sigma_j^2)`` with ``sigma = softplus(rho)
= log(1 + exp(rho))`` (Blundell et al. 2015, "Weight Uncertainty in Neural
Networks", sec. 3.2), so ``rho`` is unconstrained and sigma stays positive.
Draws use the reparameterization ``w = mu + sigma * eps``, ``eps ~ N(0, I)``
(Kingma & Welling 2014), which makes Monte-Carlo gradients of expectations
under q unbiased (Blundell et al., Proposition 1).

All vectors are flat ``[d]`` arrays in the same layout as the samplers'
positions (:func:`sigmabnn.model.mlp.flatten`); ``std`` is the standard
deviation sigma (never a variance). Functions taking ``std`` expect the
caller to compute it once with :func:`std_from_rho`.

Initialisation (:func:`init_std`): ``sigma_0 = ratio * min(s_glorot, s_prior)``
per entry with ``ratio = 0.1`` by default, where ``s_glorot =
sqrt(2 / (n_in + n_out))`` is the layer's Glorot scale and ``s_prior`` the
prior std. Why: the initial weight noise then perturbs each pre-activation by
about 10 % of its typical size, so the means still train, while sigma is far
from collapsed. A tiny absolute default (e.g. ``rho = -7``, sigma ~ 1e-3,
whatever the prior) sits where ``d sigma / d rho = sigmoid(rho)`` ~ 1e-3: the
variances then barely move within a normal training budget and the error
bars come out too narrow. A too-wide start (sigma ~ prior std) instead drowns
the likelihood signal and the means learn slowly.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from sigmabnn.model.mlp import Layer, flatten
from sigmabnn.model.posterior import BNN

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)

__all__ = [
    "entropy",
    "init_std",
    "kl_divergence",
    "log_prob",
    "per_layer_vector",
    "reparameterize",
    "rho_from_std",
    "sample",
    "std_from_rho",
]


def std_from_rho(rho: Array) -> Array:
    """``sigma = softplus(rho) = log(1 + exp(rho))``, same shape and dtype as ``rho``."""
    return jax.nn.softplus(rho)


def rho_from_std(std: Array) -> Array:
    """Inverse softplus: ``rho = log(exp(sigma) - 1)``, stable for small and large sigma (> 0)."""
    std = jnp.asarray(std)
    return std + jnp.log(-jnp.expm1(-std))


def reparameterize(mu: Array, std: Array, eps: Array) -> Array:
    """``w = mu + std * eps``; ``eps`` ``[..., d]`` broadcasts against ``mu``, ``std`` ``[d]``."""
    return mu + std * eps


def sample(rng_key: Array, mu: Array, std: Array, num_samples: int) -> Array:
    """``num_samples`` draws from q: ``[num_samples, d]``, dtype of ``mu``."""
    eps = jax.random.normal(rng_key, (num_samples,) + mu.shape, mu.dtype)
    return reparameterize(mu, std, eps)


def log_prob(w: Array, mu: Array, std: Array) -> Array:
    """``log q(w | mu, std)`` summed over the last axis: ``[..., d] -> [...]``."""
    z = (w - mu) / std
    return jnp.sum(-0.5 * jnp.square(z) - jnp.log(std) - 0.5 * _LOG_2PI, axis=-1)


def entropy(std: Array) -> Array:
    """Differential entropy of q in nats (scalar): ``sum_j 0.5 log(2 pi e sigma_j^2)``."""
    return jnp.sum(jnp.log(std) + 0.5 * (_LOG_2PI + 1.0))


def kl_divergence(mu_q: Array, std_q: Array, mu_p: Array, std_p: Array) -> Array:
    """Closed-form ``KL(N(mu_q, std_q^2) || N(mu_p, std_p^2))`` summed over entries (scalar, nats).

    ``0.5 * sum [ (std_q^2 + (mu_q - mu_p)^2) / std_p^2 - 1 - 2 log(std_q / std_p) ]``.
    """
    ratio = jnp.square(std_q / std_p)
    return 0.5 * jnp.sum(ratio + jnp.square((mu_q - mu_p) / std_p) - 1.0 - jnp.log(ratio))


def per_layer_vector(bnn: BNN, kernel_values: Array, bias_values: Array) -> Array:
    """Flat ``[d]`` vector holding ``kernel_values[l]`` on every kernel entry of layer ``l``
    and ``bias_values[l]`` on its bias entries (``[num_layers]`` each), in the positions' layout."""
    dtype = bnn.jdtype
    kernel_values = jnp.asarray(kernel_values, dtype)
    bias_values = jnp.asarray(bias_values, dtype)
    layers = tuple(
        Layer(jnp.full((n_in, n_out), kernel_values[i], dtype), jnp.full((n_out,), bias_values[i], dtype))
        for i, (n_in, n_out) in enumerate(zip(bnn.mlp.widths[:-1], bnn.mlp.widths[1:]))
    )
    return flatten(layers)


def init_std(bnn: BNN, prior_std: Array, ratio: float = 0.1) -> Array:
    """Initial sigmas ``[d]``: ``ratio * min(glorot_std_l, prior_std)`` entrywise (see module docstring).

    Args:
        bnn: the network (architecture and dtype).
        prior_std: prior standard deviation per entry, ``[d]`` (or a scalar).
        ratio: fraction of the reference scale; 1e-2 .. 1e-1 is sensible.
    """
    if not ratio > 0:
        raise ValueError(f"init_std_ratio must be positive, got {ratio}")
    glorot = jnp.asarray(
        [(2.0 / (n_in + n_out)) ** 0.5 for n_in, n_out in zip(bnn.mlp.widths[:-1], bnn.mlp.widths[1:])]
    )
    reference = per_layer_vector(bnn, glorot, glorot)
    return ratio * jnp.minimum(reference, jnp.asarray(prior_std, bnn.jdtype))
