"""The BNN log-posterior: prior + likelihood over data, on a flat parameter vector.

``log p(theta | D, h) = log p(theta | h) + log p(y | f(x; theta), h)``: minus
the potential energy V of eq. (4.24) in the thesis draft (up to -log Z), where
``h`` are the :class:`Hyperparameters` (the prior precisions and the noise
precision). Samplers see a function of a flat ``[num_params]`` vector; the
hyperparameters are passed explicitly, so Gibbs updates can change them
between weight updates without rebuilding anything.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import jax
import jax.numpy as jnp

from sigmabnn.model.likelihoods import Gaussian, Likelihood
from sigmabnn.model.mlp import MLP, Params, forward, make_unflatten
from sigmabnn.model.priors import GaussianPrior

Array = jax.Array


class Data(NamedTuple):
    """Training data as arrays.

    Attributes:
        x: inputs ``[n, input_dim]``, floating dtype of the run.
        y: targets ``[n, target_dim]`` (floating), or ``[n]`` integer labels
            for a categorical likelihood.
        noise_std: known per-point noise std ``[n]`` or ``[n, target_dim]``
            (target units), or ``None``.
    """

    x: Array
    y: Array
    noise_std: Array | None = None


class Hyperparameters(NamedTuple):
    """Precisions that the log-posterior is conditioned on.

    Attributes:
        noise_precision: scalar; 1 / noise variance of a homoscedastic
            Gaussian likelihood (ignored by the other likelihoods).
        weight_precision: ``[num_layers]``; prior precision of kernel entries.
        bias_precision: ``[num_layers]``; prior precision of bias entries.
    """

    noise_precision: Array
    weight_precision: Array
    bias_precision: Array


@dataclass(frozen=True)
class BNN:
    """What a Bayesian MLP is: architecture, prior, likelihood, dtype. No data, no state.

    Attributes:
        mlp: the architecture.
        prior: prior over kernels and biases (default precisions inside).
        likelihood: one of :mod:`sigmabnn.model.likelihoods`.
        dtype: ``"float64"`` or ``"float32"``; see :mod:`sigmabnn.dtypes`.
    """

    mlp: MLP
    prior: GaussianPrior = field(default_factory=GaussianPrior)
    likelihood: Likelihood = field(default_factory=Gaussian)
    dtype: str = "float64"

    @property
    def jdtype(self) -> jnp.dtype:
        return jnp.dtype(self.dtype)

    def default_hyperparameters(self) -> Hyperparameters:
        """Hyperparameters at their fixed / initial values."""
        w, b = self.prior.precisions(self.mlp, self.jdtype)
        noise = getattr(self.likelihood, "precision", 1.0)
        return Hyperparameters(jnp.asarray(noise, self.jdtype), w, b)

    def unflatten(self, position: Array) -> Params:
        """Parameters pytree from a flat ``[num_params]`` vector."""
        return make_unflatten(self.mlp, self.jdtype)(position)

    def apply(self, params: Params, x: Array) -> Array:
        """Raw network output ``[n, output_dim]``."""
        return forward(self.mlp, params, x)

    def log_prior(self, position: Array, hyper: Hyperparameters) -> Array:
        params = self.unflatten(position)
        return self.prior.log_prob(params, hyper.weight_precision, hyper.bias_precision)

    def log_likelihood(self, position: Array, hyper: Hyperparameters, data: Data) -> Array:
        f = self.apply(self.unflatten(position), data.x)
        y = data.y if data.y.ndim == 2 or self.likelihood.name == "categorical" else data.y[:, None]
        return self.likelihood.log_prob(f, y, hyper.noise_precision, data.noise_std)

    def log_posterior(self, position: Array, hyper: Hyperparameters, data: Data) -> Array:
        """Unnormalised log-posterior (scalar) = -V of eq. (4.24)."""
        return self.log_prior(position, hyper) + self.log_likelihood(position, hyper, data)


def make_logdensity(bnn: BNN, data: Data) -> Callable[[Array, Hyperparameters], Array]:
    """``logdensity(position [num_params], hyper) -> scalar`` for the samplers."""

    def logdensity(position: Array, hyper: Hyperparameters) -> Array:
        return bnn.log_posterior(position, hyper, data)

    return logdensity
