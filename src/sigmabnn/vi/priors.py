"""Priors for variational inference, and the KL(q || prior) term of the ELBO.

Two priors over the flat parameter vector ``w`` ``[d]``:

- :class:`DiagonalGaussianPrior`: ``N(0, diag(1 / precision))``; with the BNN's
  per-layer precisions this is eq. (4.21) of the thesis draft, the same prior
  the samplers use. Its KL against the mean-field q is closed form.
- :class:`ScaleMixturePrior`: Blundell et al. (2015), sec. 3.3:
  ``p(w_j) = pi N(w_j; 0, s1^2) + (1 - pi) N(w_j; 0, s2^2)``, one wide and one
  narrow component (``s1 > s2``, ``s2 << 1``) for every entry. No closed-form
  KL: the ELBO uses the Monte-Carlo estimate ``mean_m [log q(w_m) - log p(w_m)]``
  at the reparameterized draws ``w_m`` (unbiased, and so are its gradients).

Both expose ``log_prob(w) -> scalar`` and ``kl(mu, std, samples) -> scalar``
(``samples`` ``[M, d]`` are draws from q; the closed form ignores them), so the
losses treat them alike. They are NamedTuples (JAX pytrees).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.mlp import flatten
from sigmabnn.model.posterior import BNN, Hyperparameters
from sigmabnn.vi import meanfield

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)

__all__ = [
    "DiagonalGaussianPrior",
    "ScaleMixturePrior",
    "VIPrior",
    "gaussian_kl",
    "gaussian_prior_from_bnn",
    "scale_mixture_logpdf",
]


def gaussian_kl(mu: Array, std: Array, prior_precision: Array) -> Array:
    """Closed-form ``KL(N(mu, std^2) || N(0, 1 / prior_precision))`` summed over entries (scalar, nats).

    ``0.5 * sum [ lambda (std^2 + mu^2) - 1 - log(lambda std^2) ]``.
    """
    lam_var = prior_precision * jnp.square(std)
    return 0.5 * jnp.sum(lam_var + prior_precision * jnp.square(mu) - 1.0 - jnp.log(lam_var))


def scale_mixture_logpdf(w: Array, mixture_weight: float, std1: float, std2: float) -> Array:
    """Elementwise ``log[pi N(w; 0, std1^2) + (1 - pi) N(w; 0, std2^2)]`` (same shape as ``w``).

    Evaluated with ``logaddexp`` so neither component underflows for large ``|w| / std2``.
    """
    w = jnp.asarray(w)
    std1 = jnp.asarray(std1, w.dtype)
    std2 = jnp.asarray(std2, w.dtype)
    pi = jnp.asarray(mixture_weight, w.dtype)
    log1 = jnp.log(pi) - jnp.log(std1) - 0.5 * _LOG_2PI - 0.5 * jnp.square(w / std1)
    log2 = jnp.log1p(-pi) - jnp.log(std2) - 0.5 * _LOG_2PI - 0.5 * jnp.square(w / std2)
    return jnp.logaddexp(log1, log2)


class DiagonalGaussianPrior(NamedTuple):
    """Zero-mean Gaussian prior ``N(0, diag(1 / precision))``.

    Attributes:
        precision: prior precision (1 / variance) per entry, ``[d]``.
    """

    precision: Array

    def log_prob(self, w: Array) -> Array:
        """Normalised ``log p(w)`` summed over the last axis: ``[..., d] -> [...]``."""
        return jnp.sum(0.5 * (jnp.log(self.precision) - _LOG_2PI) - 0.5 * self.precision * jnp.square(w), axis=-1)

    def kl(self, mu: Array, std: Array, samples: Array | None = None) -> Array:
        """Closed-form ``KL(q || p)`` (scalar); ``samples`` are not used."""
        return gaussian_kl(mu, std, self.precision)

    def variance(self) -> Array:
        """Prior variance per entry ``[d]``."""
        return 1.0 / self.precision


class ScaleMixturePrior(NamedTuple):
    """Blundell et al.'s scale-mixture prior, the same for every entry.

    Attributes:
        mixture_weight: ``pi`` in (0, 1), weight of the first component.
        std1: std of the first (wide) component, > 0.
        std2: std of the second (narrow) component, > 0.
    """

    mixture_weight: float
    std1: float
    std2: float

    def log_prob(self, w: Array) -> Array:
        """``log p(w)`` summed over the last axis: ``[..., d] -> [...]``."""
        return jnp.sum(scale_mixture_logpdf(w, self.mixture_weight, self.std1, self.std2), axis=-1)

    def kl(self, mu: Array, std: Array, samples: Array) -> Array:
        """Monte-Carlo ``KL(q || p) ~ mean_m [log q(w_m) - log p(w_m)]`` over draws ``samples`` ``[M, d]``."""
        return jnp.mean(meanfield.log_prob(samples, mu, std) - self.log_prob(samples))

    def variance(self) -> Array:
        """Prior variance of every entry (scalar): ``pi s1^2 + (1 - pi) s2^2``."""
        pi = self.mixture_weight
        return jnp.asarray(pi * self.std1**2 + (1.0 - pi) * self.std2**2)


VIPrior = DiagonalGaussianPrior | ScaleMixturePrior


def gaussian_prior_from_bnn(bnn: BNN, hyper: Hyperparameters | None = None) -> DiagonalGaussianPrior:
    """The BNN's Gaussian prior (per-group kernel / bias precisions) as a flat ``[d]`` precision vector."""
    hyper = bnn.default_hyperparameters() if hyper is None else hyper
    precision = bnn.prior.entry_values(bnn.mlp, hyper.weight_precision, hyper.bias_precision)
    return DiagonalGaussianPrior(flatten(precision).astype(bnn.jdtype))


def validate_scale_mixture(mixture_weight: float, std1: float, std2: float) -> ScaleMixturePrior:
    """A :class:`ScaleMixturePrior`, or a one-line ``ValueError`` for invalid parameters."""
    if not 0.0 < float(mixture_weight) < 1.0:
        raise ValueError(f"scale-mixture weight pi must be in (0, 1), got {mixture_weight}")
    if not (float(std1) > 0.0 and float(std2) > 0.0):
        raise ValueError(f"scale-mixture stds must be positive, got {std1} and {std2}")
    return ScaleMixturePrior(float(mixture_weight), float(std1), float(std2))
