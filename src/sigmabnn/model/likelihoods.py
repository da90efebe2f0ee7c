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
lambda of eq. 4.24, fixed or Gibbs-sampled; for :class:`StudentT` the
precision ``1 / scale^2`` of its Gaussian components at unit latent weight);
``noise_std`` is ``[n]`` or ``[n, t]`` (known per-point noise) or ``None``.

Likelihoods with heavy-tailed noise also have ``df`` (degrees of freedom):
prediction draws their noise from a Student-t and evaluates t densities
(:func:`noise_df`); :class:`StudentT` has one learnt scale, :class:`HeteroscedasticStudentT`
a scale per point from the network.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaln

Array = jax.Array

_LOG_2PI = jnp.log(2.0 * jnp.pi)


def _mean_and_scale(f: Array, minimum: float) -> tuple[Array, Array]:
    """A mean-and-scale head's ``(mean, softplus(raw) + minimum)``, each ``[..., t]``, from ``f`` ``[..., 2 t]``."""
    t = f.shape[-1] // 2
    return f[..., :t], jax.nn.softplus(f[..., t:]) + jnp.asarray(minimum, f.dtype)


def _t_log_normaliser(nu: Array) -> Array:
    """``log Gamma((nu + 1) / 2) - log Gamma(nu / 2) - log(pi nu) / 2``: a unit-scale t density's log constant."""
    return gammaln(0.5 * (nu + 1.0)) - gammaln(0.5 * nu) - 0.5 * jnp.log(jnp.pi * nu)


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
        return _mean_and_scale(f, self.min_std)

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


def _check_df(df: object) -> None:
    if not (isinstance(df, int | float) and math.isfinite(df) and df > 2):
        raise ValueError(f"Student-t degrees of freedom must be a finite number > 2, got {df}")


def _check_positive(value: object, what: str) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
        raise ValueError(f"{what} must be a positive number, got {value}")


@dataclass(frozen=True)
class StudentT:
    """Homoscedastic Student-t noise: ``y = f + e``, ``e ~ t_df(0, s)`` with scale ``s = 1 / sqrt(tau)``.

    ``log p = sum_i [log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(pi df) / 2 + log(tau) / 2
    - (df + 1) / 2 log(1 + tau r_i^2 / df)]`` with residuals ``r = y - f``: the marginal of the
    Gaussian scale mixture ``y_i ~ N(f_i, 1 / (tau w_i))``, ``w_i ~ Gamma(df / 2, rate df / 2)``
    (Andrews and Mallows 1974; Gelman et al., *Bayesian Data Analysis*, 3rd ed., sec. 17.2).
    The scale-mixture form makes ``tau`` conditionally conjugate given the latent weights ``w``,
    so it is Gibbs-sampled like the Gaussian's precision (:mod:`sigmabnn.train.gibbs`); the
    weights are drawn there and never stored. Heavy tails let a fit leave a few hard points
    (near amplitude cancellations, say) outside the bulk instead of bending the whole surface
    towards them, and make predictive intervals narrower in the bulk and wider in the tail than
    one Gaussian width can.

    Attributes:
        df: degrees of freedom ``nu``, fixed, ``> 2`` so that the noise variance
            ``df / (df - 2) / tau`` (and the predictive std) exists; small values are
            heavy tails, ``df -> inf`` is the Gaussian.
        precision: fixed / initial ``tau = 1 / s^2``, in 1 / (target units)^2 (not
            1 / variance: the variance is ``df / (df - 2) / tau``).
        learn_precision: Gibbs-sample ``tau`` (with the latent weights).
    """

    df: float = 4.0
    precision: float = 100.0
    learn_precision: bool = False
    name: str = "student_t"

    def __post_init__(self) -> None:
        _check_df(self.df)
        _check_positive(self.precision, "Student-t precision")

    def output_dim(self, target_dim: int) -> int:
        return target_dim

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        nu = jnp.asarray(self.df, f.dtype)
        tau = jnp.asarray(noise_precision, f.dtype)
        norm = _t_log_normaliser(nu) + 0.5 * jnp.log(tau)
        return f.size * norm - 0.5 * (nu + 1.0) * jnp.sum(jnp.log1p(tau * jnp.square(y - f) / nu))

    def mean(self, f: Array) -> Array:
        return f

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        factor = self.df / (self.df - 2.0)
        return jnp.broadcast_to(factor / noise_precision, f.shape).astype(f.dtype)


@dataclass(frozen=True)
class HeteroscedasticStudentT:
    """Student-t noise with a per-point scale: the network outputs ``[mean, raw]`` per target.

    ``y = mu(x) + s(x) e``, ``e ~ t_df``, with ``s = softplus(raw) + min_scale``; for
    ``t`` targets the network has ``2 t`` outputs (the means first, then the raw scales).
    ``log p = sum_i [log Gamma((df + 1) / 2) - log Gamma(df / 2) - log(pi df) / 2 - log s_i
    - (df + 1) / 2 log(1 + (y_i - mu_i)^2 / (df s_i^2))]``. Heavy tails and a scale that follows
    the input together: the residuals of the NLO cross sections are both (``docs/nlo_research.md``).
    The scale is a network output, so nothing is Gibbs-sampled (``noise_precision`` is ignored).

    Units and shapes: ``f`` ``[n, 2 t]`` and ``y`` ``[n, t]`` in the model's (standardised)
    target units; the scale ``s`` is in the same units, and the noise variance is
    ``df / (df - 2) s^2``.

    Attributes:
        df: degrees of freedom ``nu``, fixed, a finite number ``> 2`` (so that the noise variance,
            hence the predictive std, exists).
        min_scale: lower bound of the scale (standardised target units, ``> 0``); keeps the
            likelihood bounded when a network drives ``raw`` to ``-inf``.
    """

    df: float = 4.0
    min_scale: float = 1e-4
    name: str = "hetero_student_t"

    def __post_init__(self) -> None:
        _check_df(self.df)
        _check_positive(self.min_scale, "min_scale")

    def output_dim(self, target_dim: int) -> int:
        return 2 * target_dim

    def split(self, f: Array) -> tuple[Array, Array]:
        """``(mean, scale)``, each ``[..., t]``, from the raw outputs ``[..., 2 t]``."""
        return _mean_and_scale(f, self.min_scale)

    def log_prob(self, f: Array, y: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        mu, s = self.split(f)
        nu = jnp.asarray(self.df, f.dtype)
        norm = _t_log_normaliser(nu)
        z2 = jnp.square((y - mu) / s)
        return mu.size * norm - jnp.sum(jnp.log(s)) - 0.5 * (nu + 1.0) * jnp.sum(jnp.log1p(z2 / nu))

    def mean(self, f: Array) -> Array:
        return self.split(f)[0]

    def scale(self, f: Array) -> Array:
        """The t scale ``s`` ``[..., t]`` (not a std: the std is ``s sqrt(df / (df - 2))``)."""
        return self.split(f)[1]

    def aleatoric_variance(self, f: Array, noise_precision: Array, noise_std: Array | None = None) -> Array:
        return (self.df / (self.df - 2.0)) * jnp.square(self.split(f)[1])


def noise_df(likelihood: object) -> float | None:
    """Degrees of freedom of a likelihood's Student-t noise, or ``None`` for Gaussian noise.

    For both :class:`StudentT` and :class:`HeteroscedasticStudentT`: their per-network predictive
    is a t with these degrees of freedom and variance :meth:`aleatoric_variance` (per point).
    """
    return float(likelihood.df) if isinstance(likelihood, StudentT | HeteroscedasticStudentT) else None


Likelihood = Gaussian | KnownNoiseGaussian | HeteroscedasticGaussian | Categorical | StudentT | HeteroscedasticStudentT

LIKELIHOODS: dict[str, type] = {
    "gaussian": Gaussian,
    "known_noise": KnownNoiseGaussian,
    "heteroscedastic": HeteroscedasticGaussian,
    "categorical": Categorical,
    "student_t": StudentT,
    "hetero_student_t": HeteroscedasticStudentT,
}
