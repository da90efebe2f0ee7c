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
- Student-t noise (:class:`~sigmabnn.model.likelihoods.StudentT`, ``df = nu``) as a
  Gaussian scale mixture ``y_i ~ N(f_i, 1 / (tau w_i))``, ``w_i ~ Gamma(nu / 2, nu / 2)``:
  the latent weights ``w_i | theta, tau ~ Gamma((nu + 1) / 2, (nu + tau r_i^2) / 2)``, then
  ``tau | theta, w ~ Gamma(a_noise + N / 2, b_noise + sum w_i r_i^2 / 2)``
  (:func:`latent_weight_conditional`, :func:`noise_conditional` with ``weights``);
- kernel precision of group ``g`` (layer ``g``, or a mean-and-scale network's scale head:
  :meth:`~sigmabnn.model.priors.GaussianPrior.groups`),
  ``lambda_W^g | theta ~ Gamma(a_W + n_g / 2, b_W + ||W^g||^2 / 2)`` with
  ``n_g`` the number of kernel entries of that group;
- bias precision of group ``g``, likewise with its bias entries.

Gamma(shape, rate) draws come from :func:`sigmabnn.train.gamma.gamma` (Marsaglia and Tsang, without loops).

Student-t noise is sampled as a *partially collapsed* Gibbs sampler (van Dyk and Park,
JASA 103 (2008) 790): the weight update (NUTS/HMC/MH) targets ``p(theta | tau, D)`` with the
weights ``w`` integrated out (the t likelihood itself), and is followed at once by a draw of
``w`` from its full conditional and of ``tau`` given ``w``. The first two steps together are
an exact draw from ``p(theta, w | tau, D)`` (the old ``w`` is never used), the last leaves
``p(tau | theta, w, D)`` invariant, so the chain targets the joint posterior, while the sampler
sees the smooth marginal likelihood: a weight update conditioned on ``w`` would be pinned
to the points the current ``w`` trusts, and theta and ``w`` would mix slowly (data
augmentation's known failure when the latent variables are informative). ``w`` ``[n, t]`` is
drawn inside every Gibbs update and discarded: nothing per data point is stored in the
chains, the draws or the model file.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.likelihoods import noise_df
from sigmabnn.model.posterior import BNN, Data, Hyperparameters
from sigmabnn.train.gamma import gamma

Array = jax.Array

__all__ = [
    "HyperPrior",
    "GibbsFn",
    "initial_noise_precision",
    "latent_weight_conditional",
    "make_gibbs_fn",
    "noise_conditional",
    "prior_conditionals",
]

NOISE_LIKELIHOODS = ("gaussian", "student_t")
"""Likelihoods whose noise precision has a (conditionally) conjugate Gibbs update."""

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

    @classmethod
    def from_json(cls, fields: Mapping[str, Any], base: HyperPrior | None = None) -> HyperPrior:
        """``base`` (default ``HyperPrior()``) with the ``fields`` given replaced (floats > 0).

        Raises:
            ValueError: a field :class:`HyperPrior` does not have, or a value that is not a positive
                finite number (one line naming it).
        """
        unknown = sorted(set(fields) - set(cls._fields))
        if unknown:
            raise ValueError(f"unknown hyperprior option {unknown[0]!r}; valid: {', '.join(cls._fields)}")
        out = (cls() if base is None else base)._replace(**fields)
        for name, value in out._asdict().items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"hyperprior {name} must be a positive finite number, got {value!r}")
        out = out._replace(**{k: float(v) for k, v in out._asdict().items()})
        _check(out)
        return out

    def settings(self) -> dict[str, float]:
        """The fields as flat ``hyperprior_<field>`` settings (the model file's record of the priors)."""
        return {f"hyperprior_{k}": v for k, v in self._asdict().items()}


def _check(hyperprior: HyperPrior) -> None:
    for name, value in hyperprior._asdict().items():
        if not 0 < value < math.inf:
            raise ValueError(f"hyperprior {name} must be a positive finite number, got {value!r}")


def residuals(bnn: BNN, data: Data, position: Array) -> Array:
    """``y - f(x; theta)`` ``[n, t]`` at ``position`` (target units of the model space)."""
    f = bnn.outputs(position, data.x)
    y = data.y if data.y.ndim == 2 else data.y[:, None]
    return y - f


def noise_conditional(
    bnn: BNN, data: Data, hyperprior: HyperPrior, position: Array, weights: Array | None = None
) -> tuple[Array, Array]:
    """``(shape, rate)`` of the Gamma conditional of the noise precision given ``position`` (scalars).

    ``weights`` ``[n, t]``: the latent weights ``w`` of Student-t noise (the rate then uses
    ``sum w r^2``); ``None`` is the Gaussian (all weights one).
    """
    return _noise_gamma(hyperprior, residuals(bnn, data, position), weights)


def _noise_gamma(hyperprior: HyperPrior, r: Array, weights: Array | None) -> tuple[Array, Array]:
    r2 = jnp.square(r) if weights is None else weights * jnp.square(r)
    return (
        jnp.asarray(hyperprior.noise_shape + 0.5 * r.size, r.dtype),
        jnp.asarray(hyperprior.noise_rate, r.dtype) + 0.5 * jnp.sum(r2),
    )


def latent_weight_conditional(df: float, noise_precision: Array, r: Array) -> tuple[Array, Array]:
    """``(shape, rate)`` ``[n, t]`` of the Gamma conditionals of Student-t latent weights.

    For ``y_i ~ N(f_i, 1 / (tau w_i))``, ``w_i ~ Gamma(df / 2, rate df / 2)``:
    ``w_i | r_i, tau ~ Gamma((df + 1) / 2, (df + tau r_i^2) / 2)``, residuals ``r`` ``[n, t]``
    in target units, ``tau`` (``noise_precision``) a scalar in 1 / (target units)^2.
    """
    df_ = jnp.asarray(df, r.dtype)
    shape = jnp.broadcast_to(0.5 * (df_ + 1.0), r.shape)
    return shape, 0.5 * (df_ + noise_precision * jnp.square(r))


def initial_noise_precision(
    bnn: BNN, data: Data, hyperprior: HyperPrior, positions: Array, num_iterations: int = 50
) -> Array:
    """A starting noise precision from fitted networks ``positions`` ``[C, d]`` (scalar, their dtype).

    Gaussian: the mean of the Gibbs conditional at the chains' mean SSE. Student-t: the maximum
    likelihood scale of the pooled residuals, by ``num_iterations`` steps of the EM fixed point
    ``tau <- N / sum w r^2`` with ``w = E[w | r, tau] = (df + 1) / (df + tau r^2)`` (Lange, Little
    and Taylor, JASA 84 (1989) 881), started from the Gaussian value; the Gaussian value
    underestimates ``tau`` when a few residuals are large.
    """
    shapes, rates = jax.vmap(lambda p: noise_conditional(bnn, data, hyperprior, p))(positions)
    tau = jnp.mean(shapes) / jnp.mean(rates)
    df = noise_df(bnn.likelihood)
    if df is None:
        return tau
    r2 = jnp.square(jax.vmap(lambda p: residuals(bnn, data, p))(positions))

    def em(_, tau):
        w = (df + 1.0) / (df + tau * r2)
        return r2.size / jnp.sum(w * r2)

    return jax.lax.fori_loop(0, int(num_iterations), em, tau)


def prior_conditionals(bnn: BNN, hyperprior: HyperPrior, position: Array) -> tuple[Array, Array, Array, Array]:
    """Per-group Gamma conditionals ``(weight_shape, weight_rate, bias_shape, bias_rate)``, each ``[num_groups]``
    (the prior's groups: :meth:`~sigmabnn.model.priors.GaussianPrior.groups`)."""
    w2, b2 = bnn.prior.squared_norms(bnn.mlp, bnn.unflatten(position))
    nw, nb = (jnp.asarray(n, position.dtype) for n in bnn.prior.group_sizes(bnn.mlp))
    return (
        hyperprior.weight_shape + 0.5 * nw,
        hyperprior.weight_rate + 0.5 * w2,
        hyperprior.bias_shape + 0.5 * nb,
        hyperprior.bias_rate + 0.5 * b2,
    )


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
    given ``position``; the other fields are returned unchanged. With
    Student-t noise the latent weights are drawn first and the precision given
    them (see the module docstring). Pure and jittable; ``jax.vmap`` it over chains.

    Raises:
        ValueError: ``learn_noise`` with a likelihood other than the
            homoscedastic Gaussian or Student-t, or a non-positive hyperprior parameter.
    """
    hyperprior = HyperPrior() if hyperprior is None else hyperprior
    _check(hyperprior)
    data = Data(
        jnp.asarray(data.x, bnn.jdtype),
        jnp.asarray(data.y, bnn.jdtype) if learn_noise else data.y,
        data.noise_std,
    )
    if learn_noise and bnn.likelihood.name not in NOISE_LIKELIHOODS:
        raise ValueError(
            f"learning the noise precision needs the 'gaussian' or 'student_t' likelihood, not {bnn.likelihood.name!r}"
        )
    # a Partial holding the data: traced as inputs of the sampler's compiled chunk (sigmabnn.mcmc.chunks)
    return jax.tree_util.Partial(_GibbsStep(bnn, hyperprior, bool(learn_noise), bool(learn_prior)), data)


class _GibbsStep(NamedTuple):
    """The Gibbs update of :func:`make_gibbs_fn` as a function of the data first (hashable: no arrays)."""

    bnn: BNN
    hyperprior: HyperPrior
    learn_noise: bool
    learn_prior: bool

    def __call__(self, data: Data, rng_key: Array, position: Array, hyper: Hyperparameters) -> Hyperparameters:
        bnn, hyperprior = self.bnn, self.hyperprior
        df = noise_df(bnn.likelihood)
        key_noise, key_w, key_b = jax.random.split(rng_key, 3)
        noise, weight, bias = hyper
        if self.learn_noise and df is not None:
            key_latent, key_noise = jax.random.split(key_noise)
            r = residuals(bnn, data, position)
            latent = gamma(key_latent, *latent_weight_conditional(df, noise, r))
            noise = gamma(key_noise, *_noise_gamma(hyperprior, r, latent)).astype(noise.dtype)
        elif self.learn_noise:
            noise = gamma(key_noise, *noise_conditional(bnn, data, hyperprior, position)).astype(noise.dtype)
        if self.learn_prior:
            ws, wr, bs, br = prior_conditionals(bnn, hyperprior, position)
            weight = gamma(key_w, ws, wr).astype(weight.dtype)
            bias = gamma(key_b, bs, br).astype(bias.dtype)
        return Hyperparameters(noise, weight, bias)
