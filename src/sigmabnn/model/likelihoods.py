"""Likelihoods p(y | f(x; theta)): swappable pieces of the log-posterior.

Every likelihood is a frozen (hashable) dataclass with

- ``output_dim(target_dim)``: how many network outputs it needs;
- ``log_prob(f, y, noise_precision, noise_std)``: the summed log-likelihood
  (scalar) of targets ``y`` ``[n, t]`` given network outputs ``f``
  ``[n, output_dim]``;
- ``mean(f)``: the predictive mean of y given one network's output ``[n, t]``;
- ``aleatoric_variance(f, noise_precision, noise_std)``: Var(y | f), ``[n, t]``.

Names say what they hold: a *precision* is 1 / variance, a *std* is a
standard deviation. ``noise_precision`` is a scalar array (the likelihood's
lambda of eq. 4.24, fixed or Gibbs-sampled); ``noise_std`` is ``[n]`` or
``[n, t]`` (known per-point noise) or ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)


def _as_column(v: Array, like: Array) -> Array:
    v = jnp.asarray(v, like.dtype)
    return v[:, None] if v.ndim == 1 and like.ndim == 2 else v


@dataclass(frozen=True)
class Gaussian:
    """Homoscedastic Gaussian noise with precision ``lambda`` (eq. 4.24).

    ``log p = n t / 2 log(lambda / 2 pi) - lambda / 2 sum (y - f)^2``.
    The precision itself is passed in (fixed, or sampled by Gibbs updates when
    ``learn_precision`` is set). ``precision`` is its fixed / initial value, in
    units of 1 / (target units)^2.
    """

    precision: float = 100.0
    learn_precision: bool = False
    name: str = "gaussian"

    def output_dim(self, target_dim: int) -> int:
        return target_dim

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        r = y - f
        n = r.size
        return 0.5 * n * (jnp.log(noise_precision) - _LOG_2PI) - 0.5 * noise_precision * jnp.sum(jnp.square(r))

    def mean(self, f: Array) -> Array:
        return f

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        return jnp.broadcast_to(1.0 / noise_precision, f.shape).astype(f.dtype)


@dataclass(frozen=True)
class KnownNoiseGaussian:
    """Gaussian noise with a known standard deviation per point (``noise_std``)."""

    name: str = "known_noise"

    def output_dim(self, target_dim: int) -> int:
        return target_dim

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        s = _as_column(noise_std, f)
        z = (y - f) / s
        return jnp.sum(-0.5 * jnp.square(z) - jnp.log(s) - 0.5 * _LOG_2PI)

    def mean(self, f: Array) -> Array:
        return f

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        if noise_std is None:
            raise ValueError("the known-noise likelihood needs noise_std at prediction time")
        return jnp.broadcast_to(jnp.square(_as_column(noise_std, f)), f.shape)


@dataclass(frozen=True)
class HeteroscedasticGaussian:
    """Mean-and-variance head: the network outputs ``[mean, raw]`` per target.

    The std is ``softplus(raw) + min_std`` (``min_std`` in target units keeps
    the likelihood bounded), so outputs are ``2 t`` wide.
    """

    min_std: float = 1e-3
    name: str = "heteroscedastic"

    def output_dim(self, target_dim: int) -> int:
        return 2 * target_dim

    def _split(self, f: Array) -> tuple[Array, Array]:
        t = f.shape[-1] // 2
        return f[..., :t], jax.nn.softplus(f[..., t:]) + self.min_std

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        mu, s = self._split(f)
        z = (y - mu) / s
        return jnp.sum(-0.5 * jnp.square(z) - jnp.log(s) - 0.5 * _LOG_2PI)

    def mean(self, f: Array) -> Array:
        return self._split(f)[0]

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        return jnp.square(self._split(f)[1])


@dataclass(frozen=True)
class Categorical:
    """Categorical likelihood on logits ``f`` ``[n, K]``; ``y`` holds integer labels ``[n]``."""

    num_classes: int = 2
    name: str = "categorical"

    def output_dim(self, target_dim: int) -> int:
        return self.num_classes

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        labels = jnp.asarray(y).reshape(-1).astype(jnp.int32)
        logp = jax.nn.log_softmax(f, axis=-1)
        return jnp.sum(jnp.take_along_axis(logp, labels[:, None], axis=-1))

    def mean(self, f: Array) -> Array:
        """Class probabilities ``[n, K]``."""
        return jax.nn.softmax(f, axis=-1)

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        p = jax.nn.softmax(f, axis=-1)
        return p * (1.0 - p)


Likelihood = Gaussian | KnownNoiseGaussian | HeteroscedasticGaussian | Categorical

LIKELIHOODS: dict[str, type] = {
    "gaussian": Gaussian,
    "known_noise": KnownNoiseGaussian,
    "heteroscedastic": HeteroscedasticGaussian,
    "categorical": Categorical,
}
